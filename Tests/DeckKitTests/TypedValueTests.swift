import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// Swift types Deck cannot keep faithfully are refused when the schema is made, and a stored
/// value this app's type does not have is reported as what it is: a mismatch between the app and
/// the document, not damage.
@Suite("Typed values: what a property's type can hold", .timed)
struct TypedValueTests {
    final class Reading: ModelObject {
        @Attribute var label = ""
        @Attribute var level: Int?? = nil
        required init() {}
    }

    enum Priority: String, Codable {
        case low, high
    }

    final class Chore: ModelObject {
        @Attribute var title = ""
        @Attribute var priority = Priority.low
        @Attribute var backup: Priority? = nil
        required init() {}
    }

    @Test(
        "A nested optional (Int??) is refused when the container is made: .some(nil) would read back as nil")
    func nestedOptional() throws {
        #expect(
            Schema(Reading.self).problems.contains {
                $0.hasPrefix("Reading.level: Deck cannot store a nested optional")
            })
        #expect {
            _ = try ModelContainer(
                for: Reading.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        } throws: { error in
            guard case .invalidSchema(let message) = error as? DeckError else { return false }
            return message.contains(
                "Reading.level: Deck cannot store a nested optional (Optional<Optional<Int>>)")
                && message.contains(".some(nil) would read back as nil")
        }
    }

    @Test("A value a later app's enum added is reported as not a case of this app's enum, naming the record")
    func unknownEnumCase() throws {
        let directory = try ScratchDirectory()
        let container = try ModelContainer(
            for: Chore.self, configurations: ModelConfiguration(url: directory.appending("chores.deck")))
        let context = ModelContext(container)
        let chore = Chore()
        chore.title = "taxes"
        context.insert(chore)
        let other = Chore()
        other.title = "dishes"
        context.insert(other)
        try context.save()
        // A later version of the app, with a case this one lacks and the same schema, wrote it.
        let id = try #require(
            try container.store.read { try $0.recordID("Chore", globalID: chore.persistentModelID.id) })
        try container.store.write { try $0.update("Chore", id: id, ["priority": .string("urgent")]) }
        func expectMismatch(_ body: () throws -> Void) {
            #expect {
                try body()
            } throws: { error in
                guard case .invalidValue(let entity, let property, let reason) = error as? DeckError else {
                    return false
                }
                return entity == "Chore" && property == "priority"
                    && reason.hasPrefix(
                        "record #\(id) holds 'urgent', which is not a case of this app's Priority")
                    && reason.contains("the document is not damaged")
                    && !"\(error)".contains("corrupt")
            }
        }
        expectMismatch { _ = try ModelContext(container).fetch(FetchDescriptor<Chore>()) }
        // An optional property of the enum says the same.
        try container.store.write { try $0.update("Chore", id: id, ["priority": .string("low")]) }
        try container.store.write { try $0.update("Chore", id: id, ["backup": .string("someday")]) }
        #expect {
            _ = try ModelContext(container).fetch(FetchDescriptor<Chore>())
        } throws: { error in
            guard case .invalidValue("Chore", "backup", let reason) = error as? DeckError else {
                return false
            }
            return reason.hasPrefix(
                "record #\(id) holds 'someday', which is not a case of this app's Priority")
        }
    }

    @Test("A later app's enum case saved by another writer is reported as a mismatch by the merge too")
    func unknownEnumCaseMerged() throws {
        let directory = try ScratchDirectory()
        let container = try ModelContainer(
            for: Chore.self, configurations: ModelConfiguration(url: directory.appending("chores.deck")))
        let context = ModelContext(container)
        let chore = Chore()
        chore.title = "taxes"
        context.insert(chore)
        try context.save()
        let id = try #require(
            try container.store.read { try $0.recordID("Chore", globalID: chore.persistentModelID.id) })
        try container.store.write { try $0.update("Chore", id: id, ["priority": .string("urgent")]) }
        // The context applies the other writer's save at its next operation.
        _ = try context.fetchCount(FetchDescriptor<Chore>())
        guard case .invalidValue("Chore", "priority", let reason)? = context.lastLoadError else {
            Issue.record("expected invalidValue, got \(String(describing: context.lastLoadError))")
            return
        }
        #expect(reason.hasPrefix("record #\(id) holds 'urgent', which is not a case of this app's Priority"))
        #expect(chore.priority == .low)
    }
}
