import DeckKit
import DeckStore
import DeckTestTiming
import Foundation
import Testing

// Regressions a review found in the typed fetch, the store defaults and the migration plans.

/// A data-only version (same shape as version 1, a custom stage rewrites values).
enum CardsV1_1: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(1, 1, 0) }
    static var models: [any PersistentModel.Type] { CardsV1.models }
}

enum DataOnlyPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [CardsV1.self, CardsV1_1.self] }
    static var stages: [MigrationStage] {
        [
            .custom(
                fromVersion: CardsV1.self, toVersion: CardsV1_1.self,
                willMigrate: { transaction in
                    for id in try transaction.fetchIDs(RecordQuery("Card")) {
                        try transaction.update("Card", id: id, ["answer": .string("rewritten")])
                    }
                }, didMigrate: nil)
        ]
    }
}

enum V1V2Plan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [CardsV1.self, CardsV2.self] }
    static var stages: [MigrationStage] { [CardsPlan.v1ToV2] }
}

@Suite("Regressions: fetches with pending inserts, defaults, migration plans", .timed)
struct RegressionTests {
    final class Owner: ModelObject {
        @Attribute var name = ""
        required init() {}
    }

    final class Item: ModelObject {
        @Attribute var label = ""
        required init() {}
    }

    /// Regression: `temporary` is keyed by row id alone, but row ids are per table, so a
    /// committed record of one entity is taken for an unsaved model of another entity that got
    /// the same id in the fetch's transaction.
    @Test("A fetch with an unsaved model of another entity still returns the saved record")
    func pendingInsertOfAnotherEntity() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("owners.deck")
        let container = try ModelContainer(
            for: Owner.self, Item.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let owner = Owner()
        owner.name = "saved"
        context.insert(owner)
        try context.save()
        // An unsaved Item: in the fetch's transaction it gets row id 1 in its own table.
        context.insert(Item())
        let owners = try context.fetch(FetchDescriptor<Owner>())
        #expect(owners.map(\.name) == ["saved"])
        let identifiers = try context.fetchIdentifiers(FetchDescriptor<Owner>())
        #expect(identifiers.map(\.entityName) == ["Owner"])
        #expect(try context.fetchCount(FetchDescriptor<Owner>()) == 1)
    }

    /// Regression: PlanMigration.migrate returns early when the shapes compare equal, before it
    /// looks at the version: a stage between two versions of one shape never runs.
    @Test("A custom stage between two versions of the same shape runs")
    func dataOnlyStage() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeCardsVersion1(url)
        do {
            let container = try ModelContainer(
                for: CardsV1_1.schema, migrationPlan: DataOnlyPlan.self,
                configurations: [ModelConfiguration(url: url)])
            let cardsContext = ModelContext(container)
            let cards = try cardsContext.fetch(FetchDescriptor<CardsV1.Card>())
            #expect(cards.map(\.answer) == ["rewritten", "rewritten"])
        }
        #expect(try storedSchemaVersion(url) == "1.1.0")
    }

    /// Regression: a document of a later version than the app's (or of a version the plan does not
    /// have) was opened read-write without complaint when its shape equals the app's. It was
    /// created at its version, so its compatibility floor is that version: an earlier app may read
    /// it, not change it (spec section 19).
    @Test("A later document of the same shape opens read-only when its floor is above the app's version")
    func laterVersionSameShape() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        do {
            let container = try ModelContainer(
                for: Schema(CardsV2.models, version: "3.0.0"), configurations: [ModelConfiguration(url: url)])
            let context = ModelContext(container)
            context.insert(CardsV2.Card())
            try context.save()
        }
        let container = try ModelContainer(
            for: CardsV2.schema, migrationPlan: V1V2Plan.self, configurations: [ModelConfiguration(url: url)])
        guard case .readOnly(let reasons) = container.access else {
            Issue.record("expected a read-only container, got \(container.access)")
            return
        }
        #expect(reasons.contains { $0.contains("compatibility floor is 3.0.0") })
        let context = ModelContext(container)
        let cards = try context.fetch(FetchDescriptor<CardsV2.Card>())
        #expect(cards.count == 1)
        cards.first?.front = "changed"
        #expect {
            try context.save()
        } throws: { error in
            guard case .readOnly = error as? DeckError else { return false }
            return true
        }
        #expect(try storedSchemaVersion(url) == "3.0.0")
    }

    final class Stamp: ModelObject {
        /// The time the instance is made, to the second: differs between instances.
        @Attribute var second = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        required init() {}
    }

    /// Regression: two instances made within the same second compare equal, so a value that differs
    /// per instance becomes a fixed default (the time of the schema's first build).
    @Test("A time-dependent initial value is not taken for a fixed default")
    func coarseTimeIsNotAFixedDefault() throws {
        let schema = try #require(Schema([Stamp.self]).storeSchema)
        let attribute = try #require(schema.entity(named: "Stamp")?.attributes.first { $0.name == "second" })
        #expect(attribute.defaultValue == nil, "\(String(describing: attribute.defaultValue))")
    }

    enum PlanWithoutStage: SchemaMigrationPlan {
        static var schemas: [any VersionedSchema.Type] { [CardsV1.self, CardsV2.self, CardsV3.self] }
        static var stages: [MigrationStage] { [CardsPlan.v1ToV2] }
    }

    /// Regression: a plan with a missing stage is found out only after the earlier stages committed:
    /// a misuse error, yet the document has moved on (an app of version 1 can no longer open it).
    @Test("A plan missing a stage changes nothing")
    func missingStageChangesNothing() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeCardsVersion1(url)
        #expect(throws: DeckError.self) {
            _ = try ModelContainer(
                for: CardsV3.schema, migrationPlan: PlanWithoutStage.self,
                configurations: [ModelConfiguration(url: url)])
        }
        #expect(try storedSchemaVersion(url) == "1.0.0")
    }

    enum NotV2 {
        final class Card: ModelObject {
            @Attribute var front = ""
            @Attribute var back = ""
            @Attribute var reviews = 0
            @Attribute var extra = 0
            required init() {}
        }
    }

    /// Regression: the container's own models are compared with the plan's version only after the
    /// migration: the document is migrated to the plan's version 2, then refused.
    @Test("A container whose models are not its plan version's migrates nothing")
    func containerSchemaNotThePlans() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeCardsVersion1(url)
        #expect(throws: DeckError.self) {
            _ = try ModelContainer(
                for: Schema([NotV2.Card.self], version: "2.0.0"), migrationPlan: V1V2Plan.self,
                configurations: [ModelConfiguration(url: url)])
        }
        #expect(try storedSchemaVersion(url) == "1.0.0")
    }
}
