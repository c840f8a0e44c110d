import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// An older app's copy of a document merged into a newer app's (the seed's CloudKit scenario of
/// an old app's copy meeting a new app's): migrated first along the container's plan, its edits
/// then count as any copy's.
@Suite("Merging an older app's copy into a container", .timed)
struct MergeAcrossVersionsTests {
    @Test("An older app's copy is migrated along the container's plan, custom stage included, and merged")
    @MainActor func olderAppsCopyFollowsThePlan() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeCardsVersion1(url)
        let oldURL = directory.appending("phone.deck")
        try FileManager.default.copyItem(at: url, to: oldURL)
        let container = try ModelContainer(
            for: CardsV3.schema, migrationPlan: CardsPlan.self, configurations: [ModelConfiguration(url: url)]
        )
        #expect(container.store.schema.version == "3.0.0")
        do {
            // The phone, still on version 1, edits on after the laptop migrated.
            let phone = try ModelContainer(
                for: CardsV1.schema, configurations: [ModelConfiguration(url: oldURL)])
            let context = ModelContext(phone)
            let cards = try context.fetch(FetchDescriptor<CardsV1.Card>())
            cards.first { $0.question == "gracias" }?.answer = "thanks; ta"
            let card = CardsV1.Card()
            card.question = "adiós"
            card.answer = "bye; see you"
            context.insert(card)
            try context.save()
            try phone.store.close()
        }
        let phoneBefore = try Data(contentsOf: oldURL.appendingPathComponent("store.sqlite"))
        let report = try container.merge(from: oldURL)
        #expect(report.insertedRecords == 1)
        #expect(try Data(contentsOf: oldURL.appendingPathComponent("store.sqlite")) == phoneBefore)
        let cards = try container.mainContext.fetch(
            FetchDescriptor<CardsV3.Card>(sortBy: [SortDescriptor(\.front)]))
        #expect(cards.map(\.front) == ["adiós", "gracias", "hola"])
        // The phone's edit, made after the laptop's migration, goes through the custom stage.
        #expect(cards.map(\.meaning) == ["bye", "thanks", "hello"])
        #expect(cards.map(\.otherMeanings) == ["see you", "ta", "hi"])
        #expect(container.store.schema.version == "3.0.0")
        // Merged again: nothing changes.
        #expect(try container.merge(from: oldURL).isEmpty)
        // A copy at a later version than the app's is refused: the app cannot change its
        // document to a schema it does not know.
        let later = directory.appending("later.deck")
        try FileManager.default.copyItem(at: oldURL, to: later)
        _ = try ModelContainer(
            for: CardsV3.schema, migrationPlan: CardsPlan.self,
            configurations: [ModelConfiguration(url: later)])
        let v2URL = directory.appending("v2.deck")
        try makeCardsVersion1(v2URL)
        enum Plan: SchemaMigrationPlan {
            static var schemas: [any VersionedSchema.Type] { [CardsV1.self, CardsV2.self] }
            static var stages: [MigrationStage] { [CardsPlan.v1ToV2] }
        }
        let v2 = try ModelContainer(
            for: CardsV2.schema, migrationPlan: Plan.self, configurations: [ModelConfiguration(url: v2URL)])
        let error = #expect(throws: DeckError.self) { try v2.merge(from: later, differentDocuments: true) }
        guard case .notComparable(_, let reason)? = error else {
            Issue.record("refused with \(String(describing: error))")
            return
        }
        #expect(reason.contains("3.0.0 is later than"), "\(reason)")
        #expect(v2.store.schema.version == "2.0.0")
    }

    @Test("A copy at a version the container's plan does not know is refused, naming the copy")
    @MainActor func versionOutsideThePlanIsRefused() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeCardsVersion1(url)
        let container = try ModelContainer(
            for: CardsV3.schema, migrationPlan: CardsPlan.self, configurations: [ModelConfiguration(url: url)]
        )
        // Version 1's models, under a version the plan does not have.
        var schema = try #require(CardsV1.schema.storeSchema)
        schema.version = "0.9.0"
        let stranger = directory.appending("stranger.deck")
        try PackageStore.create(at: stranger, contentType: "org.deck.test.cards", schema: schema).close()
        let error = #expect(throws: DeckError.self) {
            try container.merge(from: stranger, differentDocuments: true)
        }
        guard case .schemaMismatch(let path, let differences)? = error else {
            Issue.record("refused with \(String(describing: error))")
            return
        }
        #expect(path == stranger.path, "\(differences)")
        #expect(differences.contains { $0.contains("0.9.0") }, "\(differences)")
        #expect(container.store.schema.version == "3.0.0")
    }
}
