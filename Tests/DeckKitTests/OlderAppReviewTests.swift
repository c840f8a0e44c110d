import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// An app built before the flash-cards fixture's version 1.0.0 (Tests/Fixtures/v2, format version
/// 2): it knows tags only, as the fixture has them.
enum TagsV09: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(0, 9, 0) }
    static var models: [any PersistentModel.Type] { [Tag.self] }

    final class Tag: ModelObject {
        @Attribute(.unique) var name = ""
        required init() {}
    }
}

/// The same app, with a tag colour the fixture does not have: it cannot read the fixture.
enum ColouredTagsV09: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(0, 9, 0) }
    static var models: [any PersistentModel.Type] { [Tag.self] }

    final class Tag: ModelObject {
        @Attribute(.unique) var name = ""
        @Attribute var color = ""
        required init() {}
    }
}

/// Review of issue 11's older-app policy (spec section 19): each test is a finding, failing
/// until it is fixed.
@Suite("Older apps: review findings", .timed)
struct OlderAppReviewTests {
    /// A copy of the format version 2 flash-cards fixture (schema version 1.0.0, no floor).
    static func version2Fixture(in directory: ScratchDirectory) throws -> URL {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/v2/Flashcards.flashcards")
        let url = directory.appending("Flashcards.flashcards")
        try FileManager.default.copyItem(at: fixture, to: url)
        return url
    }

    /// The format version of the package's store and manifest, read without writing.
    static func formatVersions(_ url: URL) throws -> [Int] {
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        return [store.storeFormatVersion, store.manifest.formatVersion]
    }

    @Test("An older app that may only read a later document does not upgrade its format (section 19)")
    func readOnlyOpenDoesNotUpgrade() throws {
        let directory = try ScratchDirectory()
        let url = try Self.version2Fixture(in: directory)
        #expect(try Self.formatVersions(url) == [2, 2])
        let container = try ModelContainer(
            for: TagsV09.schema, configurations: [ModelConfiguration(url: url)])
        guard case .readOnly = container.access else {
            Issue.record("expected read-only, got \(container.access)")
            return
        }
        // "An application that may not write does not write": the store is still format 2, which
        // the (older) Deck of the app that saved it can still open for writing.
        #expect(try Self.formatVersions(url) == [2, 2])
    }

    @Test("An older app refused a later document does not upgrade its format (section 19)")
    func refusedOpenDoesNotUpgrade() throws {
        let directory = try ScratchDirectory()
        let url = try Self.version2Fixture(in: directory)
        #expect {
            try ModelContainer(for: ColouredTagsV09.schema, configurations: [ModelConfiguration(url: url)])
        } throws: { error in
            guard case .needsNewerApplication(_, "1.0.0", _) = error as? DeckError else { return false }
            return true
        }
        #expect(try Self.formatVersions(url) == [2, 2])
    }

    @Test("An older app opens a later document read-only while another writer has it open")
    func readOnlyWhileLocked() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeLaterDocument(url, version: BreakingAdditiveV3.self, fill: fillVersion3)
        // The version 3 app has the document open for writing.
        let writer = try ModelContainer(
            for: BreakingAdditiveV3.schema, configurations: [ModelConfiguration(url: url)])
        #expect(writer.access == .readWrite)
        // Version 1 may only read it (its floor is 3.0.0), which needs no writer lock.
        do {
            let container = try ModelContainer(
                for: CardsV1.schema, configurations: [ModelConfiguration(url: url)])
            #expect(container.access != .readWrite)
        } catch {
            Issue.record("a read-only access was refused: \(error)")
        }
        withExtendedLifetime(writer) {}
    }

    @Test(
        "An older app's insert never overwrites a card it did not touch (a unique constraint it does not know)"
    )
    func unknownUniqueConstraintDoesNotOverwrite() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeCardsVersion1(url)
        // Version 2 adds a unique constraint on the question, by a non-breaking migration (floor 1.0.0).
        let stored = try PackageStore.open(at: url, mode: .readOnly)
        var later = stored.schema
        try stored.close()
        later.version = "2.0.0"
        later.entities[0].uniqueConstraints = [["question"]]
        _ = try PackageStore.migrate(at: url, to: later)
        // The same rule as the `unique` option gives read-only (section 19.1: "whose unique option
        // differs"); as a constraint entry it gives read-write.
        var asOption = later
        asOption.entities[0].uniqueConstraints = []
        let question = try #require(asOption.entities[0].attributes.firstIndex { $0.name == "question" })
        asOption.entities[0].attributes[question].options = [.unique]
        let application = try #require(CardsV1.schema.storeSchema)
        let optionAccess = DocumentAccess(document: asOption, floor: "1.0.0", application: application)
        let container = try ModelContainer(
            for: CardsV1.schema, configurations: [ModelConfiguration(url: url)])
        #expect(
            (container.access == .readWrite) == (optionAccess == .readWrite),
            "\(container.access) vs \(optionAccess)")
        guard container.access == .readWrite else { return }
        // Version 1 adds a second card "hola": it knows no uniqueness, and the user sees a new card.
        let context = ModelContext(container)
        let card = CardsV1.Card()
        card.question = "hola"
        card.answer = "hi there"
        context.insert(card)
        try context.save()
        let answers = try context.fetch(FetchDescriptor<CardsV1.Card>()).map(\.answer).sorted()
        // The card "hola" that was there keeps its answer.
        #expect(answers.contains("hello; hi"), "\(answers)")
    }

    @Test(
        "An older app deleting its cards without subclasses deletes the cards of subentities it does not know"
    )
    func deleteWithoutSubclassesReachesUnknownSubentities() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeLaterDocument(url, version: AdditiveV3.self, fill: fillVersion3)
        let container = try ModelContainer(
            for: CardsV1.schema, configurations: [ModelConfiguration(url: url)])
        #expect(container.access == .readWrite)
        let context = ModelContext(container)
        // Version 1 has no subclass of Card: the image card is a card to it (section 19).
        #expect(try context.fetchCount(FetchDescriptor<CardsV1.Card>()) == 3)
        try context.delete(model: CardsV1.Card.self, includeSubclasses: false)
        let left = try context.fetch(FetchDescriptor<CardsV1.Card>()).map(\.question)
        #expect(left.isEmpty, "\(left)")
    }
}
