import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// Three versions of a flash-cards app's models, as an app declares them.
enum CardsV1: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(1, 0, 0) }
    static var models: [any PersistentModel.Type] { [Card.self] }

    final class Card: ModelObject {
        @Attribute var question = ""
        @Attribute var answer = ""
        required init() {}
    }
}

/// Version 2 renames both attributes (the seed's `@Attribute(originalName:)`) and adds one.
enum CardsV2: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(2, 0, 0) }
    static var models: [any PersistentModel.Type] { [Card.self] }

    final class Card: ModelObject {
        @Attribute(originalName: "question") var front = ""
        @Attribute(originalName: "answer") var back = ""
        @Attribute var reviews = 0
        required init() {}
    }
}

/// Version 3 splits `back` ("hello; hi") into the first meaning and the others, in a custom stage.
enum CardsV3: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(3, 0, 0) }
    static var models: [any PersistentModel.Type] { [Card.self] }

    final class Card: ModelObject {
        @Attribute var front = ""
        @Attribute var meaning = ""
        @Attribute var otherMeanings = ""
        @Attribute var reviews = 0
        required init() {}
    }
}

enum CardsPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [CardsV1.self, CardsV2.self, CardsV3.self] }
    static var stages: [MigrationStage] { [v1ToV2, v2ToV3] }

    static var v1ToV2: MigrationStage { .lightweight(fromVersion: CardsV1.self, toVersion: CardsV2.self) }
    static var v2ToV3: MigrationStage {
        .custom(
            fromVersion: CardsV2.self, toVersion: CardsV3.self, willMigrate: nil,
            didMigrate: { context in
                for (id, back) in try context.oldValues(entity: "Card", attribute: "back") {
                    guard case .string(let text) = back else { continue }
                    let parts = text.split(separator: ";", maxSplits: 1).map {
                        $0.trimmingCharacters(in: .whitespaces)
                    }
                    try context.transaction.update(
                        "Card", id: id,
                        [
                            "meaning": .string(parts.first ?? ""),
                            "otherMeanings": .string(parts.count > 1 ? parts[1] : ""),
                        ])
                }
            })
    }
}

/// A document of version 1 with two cards.
func makeCardsVersion1(_ url: URL) throws {
    let container = try ModelContainer(for: CardsV1.schema, configurations: [ModelConfiguration(url: url)])
    let context = ModelContext(container)
    for (question, answer) in [("hola", "hello; hi"), ("gracias", "thank you")] {
        let card = CardsV1.Card()
        card.question = question
        card.answer = answer
        context.insert(card)
    }
    try context.save()
}

/// The schema version the document at `url` stores.
func storedSchemaVersion(_ url: URL) throws -> String {
    let store = try PackageStore.open(at: url, mode: .readOnly)
    defer { try? store.close() }
    return store.schema.version
}

@Suite("Schema migration plans: versioned models migrated on open", .timed)
struct SchemaMigrationPlanTests {
    @Test(
        "A lightweight stage renames through originalName, keeps every value and fills the new attribute; then 2 → 3"
    )
    func lightweight() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeCardsVersion1(url)
        enum Plan: SchemaMigrationPlan {
            static var schemas: [any VersionedSchema.Type] { [CardsV1.self, CardsV2.self] }
            static var stages: [MigrationStage] { [CardsPlan.v1ToV2] }
        }
        do {
            let container = try ModelContainer(
                for: CardsV2.schema, migrationPlan: Plan.self, configurations: [ModelConfiguration(url: url)])
            let cardsContext = ModelContext(container)
            let cards = try cardsContext.fetch(
                FetchDescriptor<CardsV2.Card>(sortBy: [SortDescriptor(\.front)]))
            #expect(cards.map(\.front) == ["gracias", "hola"])
            #expect(cards.map(\.back) == ["thank you", "hello; hi"])
            #expect(cards.map(\.reviews) == [0, 0])
        }
        #expect(try storedSchemaVersion(url) == "2.0.0")
        // Opening again migrates nothing.
        _ = try ModelContainer(
            for: CardsV2.schema, migrationPlan: Plan.self, configurations: [ModelConfiguration(url: url)])
        #expect(try storedSchemaVersion(url) == "2.0.0")
        #expect(try DeckDocument.verify(at: url).findings.isEmpty)
        // And from version 2 on to 3 alone: the custom stage's split.
        let container = try ModelContainer(
            for: CardsV3.schema, migrationPlan: CardsPlan.self, configurations: [ModelConfiguration(url: url)]
        )
        let cardsContext = ModelContext(container)
        let cards = try cardsContext.fetch(
            FetchDescriptor<CardsV3.Card>(sortBy: [SortDescriptor(\.front)]))
        #expect(cards.map(\.meaning) == ["thank you", "hello"])
        #expect(cards.map(\.otherMeanings) == ["", "hi"])
        #expect(try DeckDocument.verify(at: url).findings.isEmpty)
    }

    @Test("Two stages in one open: lightweight, then a custom stage that splits one attribute into two")
    func throughACustomStage() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeCardsVersion1(url)
        let container = try ModelContainer(
            for: CardsV3.schema, migrationPlan: CardsPlan.self, configurations: [ModelConfiguration(url: url)]
        )
        let cardsContext = ModelContext(container)
        let cards = try cardsContext.fetch(
            FetchDescriptor<CardsV3.Card>(sortBy: [SortDescriptor(\.front)]))
        #expect(cards.map(\.front) == ["gracias", "hola"])
        #expect(cards.map(\.meaning) == ["thank you", "hello"])
        #expect(cards.map(\.otherMeanings) == ["", "hi"])
        #expect(container.store.schema.version == "3.0.0")
    }

    @Test(
        "The models' types find their version in the plan, as in SwiftData: ModelContainer(for: V2.Card.self, migrationPlan:)"
    )
    func typesFindTheirVersion() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeCardsVersion1(url)
        do {
            let container = try ModelContainer(
                for: CardsV2.Card.self, migrationPlan: CardsPlan.self,
                configurations: ModelConfiguration(url: url))
            #expect(container.store.schema.version == "2.0.0")
            let cardsContext = ModelContext(container)
            let cards = try cardsContext.fetch(
                FetchDescriptor<CardsV2.Card>(sortBy: [SortDescriptor(\.front)]))
            #expect(cards.map(\.back) == ["thank you", "hello; hi"])
        }
        #expect(try storedSchemaVersion(url) == "2.0.0")
        let container = try ModelContainer(
            for: CardsV3.Card.self, migrationPlan: CardsPlan.self,
            configurations: ModelConfiguration(url: url))
        let cardsContext = ModelContext(container)
        let cards = try cardsContext.fetch(
            FetchDescriptor<CardsV3.Card>(sortBy: [SortDescriptor(\.front)]))
        #expect(cards.map(\.meaning) == ["thank you", "hello"])
        #expect(container.store.schema.version == "3.0.0")
        // A new document made this way stores the version of its models.
        let fresh = directory.appending("fresh.deck")
        _ = try ModelContainer(
            for: CardsV2.Card.self, migrationPlan: CardsPlan.self,
            configurations: ModelConfiguration(url: fresh))
        #expect(try storedSchemaVersion(fresh) == "2.0.0")
    }

    @Test("A stage that throws leaves the document at the last version it reached")
    func aFailingStage() throws {
        struct Refused: Error, Equatable { var reason = "the data is not ready" }
        enum Plan: SchemaMigrationPlan {
            static var schemas: [any VersionedSchema.Type] { [CardsV1.self, CardsV2.self, CardsV3.self] }
            static var stages: [MigrationStage] {
                [
                    CardsPlan.v1ToV2,
                    .custom(
                        fromVersion: CardsV2.self, toVersion: CardsV3.self, willMigrate: nil,
                        didMigrate: { context in
                            try context.transaction.update("Card", id: 1, ["meaning": .string("changed")])
                            throw Refused()
                        }),
                ]
            }
        }
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeCardsVersion1(url)
        // The stage's own error comes back as it was, with the document and the stage named.
        do {
            _ = try ModelContainer(
                for: CardsV3.schema, migrationPlan: Plan.self, configurations: [ModelConfiguration(url: url)])
            Issue.record("the migration did not fail")
        } catch {
            guard case .migrationStageFailed(let path, let stage, let closure, let underlying) = error else {
                Issue.record("expected migrationStageFailed, got \(error)")
                return
            }
            #expect(path == url.path)
            #expect(stage == "'2.0.0 → 3.0.0'")
            #expect(closure == "didMigrate")
            #expect(underlying as? Refused == Refused())
            #expect(
                error.description.hasSuffix(
                    "the migration stage '2.0.0 → 3.0.0' failed in didMigrate, changing nothing: "
                        + "Refused(reason: \"the data is not ready\")"))
        }
        // The first stage committed; the second changed nothing.
        #expect(try storedSchemaVersion(url) == "2.0.0")
        let container = try ModelContainer(
            for: CardsV2.schema, configurations: [ModelConfiguration(url: url)])
        let backsContext = ModelContext(container)
        let backs = try backsContext.fetch(
            FetchDescriptor<CardsV2.Card>(sortBy: [SortDescriptor(\.front)])
        )
        .map(\.back)
        #expect(backs == ["thank you", "hello; hi"])
    }

    @Test(
        "A plan without the document's version, a missing stage and a newer document are refused, changing nothing"
    )
    func refusals() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeCardsVersion1(url)
        enum WithoutVersion1: SchemaMigrationPlan {
            static var schemas: [any VersionedSchema.Type] { [CardsV2.self, CardsV3.self] }
            static var stages: [MigrationStage] { [CardsPlan.v2ToV3] }
        }
        #expect {
            try ModelContainer(
                for: CardsV3.schema, migrationPlan: WithoutVersion1.self,
                configurations: [ModelConfiguration(url: url)])
        } throws: { error in
            guard case .schemaMismatch(_, let differences) = error as? DeckError else { return false }
            return differences.contains { $0.contains("1.0.0") && $0.contains("2.0.0, 3.0.0") }
        }
        enum WithoutStage: SchemaMigrationPlan {
            static var schemas: [any VersionedSchema.Type] { [CardsV1.self, CardsV2.self, CardsV3.self] }
            static var stages: [MigrationStage] { [CardsPlan.v1ToV2] }
        }
        #expect {
            try ModelContainer(
                for: CardsV3.schema, migrationPlan: WithoutStage.self,
                configurations: [ModelConfiguration(url: url)])
        } throws: { error in
            guard case .misuse(let message) = error as? DeckError else { return false }
            return message.contains("from version 2.0.0 to 3.0.0")
        }
        // The plan is checked whole before any stage runs: nothing changed.
        #expect(try storedSchemaVersion(url) == "1.0.0")
        _ = try ModelContainer(
            for: CardsV2.schema, migrationPlan: WithoutStage.self,
            configurations: [ModelConfiguration(url: url)])
        #expect(try storedSchemaVersion(url) == "2.0.0")
        // A version-1 app with the plan does not take the document back.
        enum OldApp: SchemaMigrationPlan {
            static var schemas: [any VersionedSchema.Type] { [CardsV1.self, CardsV2.self] }
            static var stages: [MigrationStage] { [CardsPlan.v1ToV2] }
        }
        #expect {
            try ModelContainer(
                for: CardsV1.schema, migrationPlan: OldApp.self,
                configurations: [ModelConfiguration(url: url)])
        } throws: { error in
            // Version 2 renamed what version 1 reads: it needs version 2 (spec section 19).
            guard case .needsNewerApplication(_, "2.0.0", let reasons) = error as? DeckError else {
                return false
            }
            return reasons.contains { $0.contains("not in the document") }
        }
        #expect(try storedSchemaVersion(url) == "2.0.0")
    }

    @Test("A container that does not allow saving migrates nothing, and says the document needs a migration")
    func readOnlyMigratesNothing() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeCardsVersion1(url)
        #expect {
            try ModelContainer(
                for: CardsV3.schema, migrationPlan: CardsPlan.self,
                configurations: [ModelConfiguration(url: url, allowsSave: false)])
        } throws: { error in
            guard case .schemaMismatch(_, let differences) = error as? DeckError else { return false }
            return differences.first?.hasPrefix(
                "the document holds schema version 1.0.0, not the models' 3.0.0: it needs a migration; a "
                    + "container that does not allow saving migrates nothing") == true
                && differences.count > 1
        }
        #expect(try storedSchemaVersion(url) == "1.0.0")
        // Without a plan, a container that may save says how to migrate.
        #expect {
            try ModelContainer(for: CardsV3.schema, configurations: [ModelConfiguration(url: url)])
        } throws: { error in
            guard case .schemaMismatch(_, let differences) = error as? DeckError else { return false }
            return differences.first?.contains(
                "it needs a migration; migrate it: give the container a migrationPlan")
                == true
        }
        #expect(try storedSchemaVersion(url) == "1.0.0")
    }

    @Test("A document whose models are not those of the version it names is refused")
    func aVersionThatLies() throws {
        final class Card: ModelObject {
            @Attribute var question = ""
            @Attribute var answer = 0
            required init() {}
        }
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        // Version 1.0.0, but not CardsV1's models.
        _ = try ModelContainer(
            for: Schema([Card.self], version: "1.0.0"), configurations: [ModelConfiguration(url: url)])
        #expect {
            try ModelContainer(
                for: CardsV2.schema, migrationPlan: CardsPlan.self,
                configurations: [ModelConfiguration(url: url)])
        } throws: { error in
            guard case .schemaMismatch(_, let differences) = error as? DeckError else { return false }
            return differences.first?.contains("says version 1.0.0, but its schema is not the plan's version")
                == true
                && differences.contains { $0.contains("answer") } && !"\(error)".contains(":;")
        }
        #expect(try storedSchemaVersion(url) == "1.0.0")
        // Models that are not those of the plan's version they name: the differences are said of
        // that version, not of the document.
        #expect {
            try ModelContainer(
                for: Schema([Card.self], version: "2.0.0"), migrationPlan: CardsPlan.self,
                configurations: [ModelConfiguration(url: url)])
        } throws: { error in
            guard case .misuse(let message) = error as? DeckError else { return false }
            return message.hasPrefix("the container's models are not those of the plan's version 2.0.0: ")
                && message.contains("in the plan's version 2.0.0") && !message.contains("the document")
        }
    }

    @Test("A change no store can infer is refused by a lightweight stage, naming it")
    func notLightweight() throws {
        enum V2: VersionedSchema {
            static var versionIdentifier: Schema.Version { Schema.Version(2, 0, 0) }
            static var models: [any PersistentModel.Type] { [Card.self] }
            final class Card: ModelObject {
                @Attribute var question = ""
                @Attribute var answer = 0
                required init() {}
            }
        }
        enum Plan: SchemaMigrationPlan {
            static var schemas: [any VersionedSchema.Type] { [CardsV1.self, V2.self] }
            static var stages: [MigrationStage] {
                [.lightweight(fromVersion: CardsV1.self, toVersion: V2.self)]
            }
        }
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeCardsVersion1(url)
        #expect {
            try ModelContainer(
                for: V2.schema, migrationPlan: Plan.self, configurations: [ModelConfiguration(url: url)])
        } throws: { error in
            guard case .migrationRefused(_, let entity, let property, _) = error as? DeckError else {
                return false
            }
            return entity == "Card" && property == "answer"
        }
        #expect(try storedSchemaVersion(url) == "1.0.0")
    }
}
