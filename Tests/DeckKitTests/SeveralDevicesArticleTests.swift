import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// The code of `WorkingOnSeveralDevices.md`, compiled and run, and the article checked to hold it.
@Suite("The article on working on several devices", .timed)
struct SeveralDevicesArticleTests {
    @Test func comparingTwoCopiesRuns() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "several-devices-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let laptopURL = directory.appendingPathComponent("Spanish.deck")
        let phoneURL = directory.appendingPathComponent("Spanish (phone).deck")
        let schema = StoreSchema(entities: [
            StoreSchema.Entity("Card", attributes: [StoreSchema.Attribute("front", .string)])
        ])
        let laptop = try PackageStore.create(at: laptopURL, contentType: "org.example.cards", schema: schema)
        let id = try laptop.write { try $0.insert("Card", ["front": .string("hola")]) }.value
        try laptop.close()
        try FileManager.default.copyItem(at: laptopURL, to: phoneURL)
        let phone = try PackageStore.open(at: phoneURL)
        try phone.write { try $0.update("Card", id: id, ["front": .string("¡hola!")]) }
        try phone.close()

        var printed: [String] = []
        func print(_ text: String) { printed.append(text) }
        // SEVERAL-DEVICES-DIFF-BEGIN
        let difference = try DocumentDifference(between: laptopURL, and: phoneURL)
        for record in difference.records {
            switch record.change {
            case .only(.first): print("\(record.entity) \(record.globalID) is on the laptop only")
            case .only(.second): print("\(record.entity) \(record.globalID) is on the phone only")
            case .cells(let cells):
                for cell in cells { print("\(record.entity).\(cell.name): \(cell.first) → \(cell.second)") }
            }
        }
        // SEVERAL-DEVICES-DIFF-END
        #expect(printed == ["Card.front: hola → ¡hola!"])

        let article = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(
                    "Sources/DeckKit/DeckKit.docc/WorkingOnSeveralDevices.md"), encoding: .utf8)
        let block = try #require(ReadmeExampleTests.blocks("SEVERAL-DEVICES-DIFF", in: #filePath).first)
        #expect(
            article.contains("```swift\n" + block + "\n```"), "WorkingOnSeveralDevices.md lacks the example")
    }

    @Test func readingWhatChangedRuns() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "several-devices-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("Spanish.deck")
        let schema = StoreSchema(entities: [
            StoreSchema.Entity(
                "Card",
                attributes: [StoreSchema.Attribute("front", .string), StoreSchema.Attribute("back", .string)])
        ])
        let store = try PackageStore.create(at: url, contentType: "org.example.cards", schema: schema)
        defer { try? store.close() }
        let id = try store.write { try $0.insert("Card", ["front": .string("hola"), "back": .string("")]) }
            .value
        var printed: [String] = []
        func print(_ items: Any...) { printed.append(items.map { "\($0)" }.joined(separator: " ")) }
        func saveAndMerge() throws {
            try store.write { try $0.update("Card", id: id, ["back": .string("hello")]) }
        }
        // SEVERAL-DEVICES-LOG-BEGIN
        var seen = try ChangeLog(of: store).token
        // … later, after saves and merges:
        try saveAndMerge()
        let since = try ChangeLog(of: store, after: seen)
        for transaction in since.transactions {
            for change in transaction.changes where change.kind == .updated {
                print(change.entity, change.globalID, change.cells.map(\.name))
            }
        }
        seen = since.token
        // SEVERAL-DEVICES-LOG-END
        let gid = try store.read { try $0.fetch(RecordQuery("Card")) }.first?.globalID
        #expect(printed == ["Card \(gid!) [\"back\"]"])
        #expect(try ChangeLog(of: store, after: seen).transactions.isEmpty)

        let article = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(
                    "Sources/DeckKit/DeckKit.docc/WorkingOnSeveralDevices.md"), encoding: .utf8)
        let block = try #require(ReadmeExampleTests.blocks("SEVERAL-DEVICES-LOG", in: #filePath).first)
        #expect(
            article.contains("```swift\n" + block + "\n```"), "WorkingOnSeveralDevices.md lacks the example")
    }

    final class Card: ModelObject {
        @Attribute var front = ""
        @Attribute var back = ""
        required init() {}
    }

    @Test @MainActor func readingWhatChangedWithModelTypesRuns() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "several-devices-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let container = try ModelContainer(
            for: Card.self,
            configurations: ModelConfiguration(url: directory.appendingPathComponent("Spanish.deck")))
        let context = container.mainContext
        let card = Card()
        card.front = "hola"
        context.insert(card)
        try context.save()
        var printed: [String] = []
        func print(_ items: Any...) { printed.append(items.map { "\($0)" }.joined(separator: " ")) }
        // SEVERAL-DEVICES-HISTORY-BEGIN
        var token: DefaultHistoryToken? = nil
        // … after saves and merges:
        let transactions = try context.fetchHistory(
            HistoryDescriptor<DefaultHistoryTransaction>(after: token))
        for transaction in transactions {
            for change in transaction.changes {
                if case .update(let update as DefaultHistoryUpdate<Card>) = change {
                    print(update.changedPersistentIdentifier, update.updatedAttributes)
                }
            }
        }
        token = transactions.last?.token ?? token
        // SEVERAL-DEVICES-HISTORY-END
        #expect(printed.isEmpty)
        card.back = "hello"
        try context.save()
        let since = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>(after: token))
        guard case .update(let update as DefaultHistoryUpdate<Card>)? = since.first?.changes.first else {
            Issue.record("no update of a Card: \(since)")
            return
        }
        #expect(
            update.changedPersistentIdentifier == card.persistentModelID
                && update.updatedAttributes == ["back"])
        let article = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(
                    "Sources/DeckKit/DeckKit.docc/WorkingOnSeveralDevices.md"), encoding: .utf8)
        let block = try #require(ReadmeExampleTests.blocks("SEVERAL-DEVICES-HISTORY", in: #filePath).first)
        #expect(
            article.contains("```swift\n" + block + "\n```"), "WorkingOnSeveralDevices.md lacks the example")
    }
}
