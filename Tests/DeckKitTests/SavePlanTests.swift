import DeckStore
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckKit

/// A context's flush as a plain value: plans built by hand, without models, run on a store by
/// `SaveExecutor`; and the plan `SavePlanner` makes of models.
@Suite("Save plans and their executor", .timed)
struct SavePlanTests {
    /// Decks of cards (a deck with cards cannot be deleted: deny), tags with unique names over
    /// cards (many to many).
    static let schema = StoreSchema(entities: [
        StoreSchema.Entity(
            "Deck", attributes: [StoreSchema.Attribute("title", .string)],
            relationships: [
                StoreSchema.Relationship(
                    "cards", to: "Card", toMany: true, inverse: "deck", deleteRule: .deny)
            ]),
        StoreSchema.Entity(
            "Card", attributes: [StoreSchema.Attribute("front", .string)],
            relationships: [
                StoreSchema.Relationship("deck", to: "Deck", inverse: "cards"),
                StoreSchema.Relationship("tags", to: "Tag", toMany: true, inverse: "cards"),
            ]),
        StoreSchema.Entity(
            "Tag", attributes: [StoreSchema.Attribute("name", .string)],
            relationships: [StoreSchema.Relationship("cards", to: "Card", toMany: true, inverse: "tags")],
            uniqueConstraints: [["name"]]),
    ])

    /// The plan's entities: deck (0), card (1), tag (2, an upsert).
    static let entities = [
        SavePlan.Entity(name: "Deck", root: "Deck", attributes: ["title"], isUpsert: false),
        SavePlan.Entity(name: "Card", root: "Card", attributes: ["front"], isUpsert: false),
        SavePlan.Entity(name: "Tag", root: "Tag", attributes: ["name"], isUpsert: true),
    ]

    /// A new store of ``schema``, given to `body`.
    func withStore(_ body: (PackageStore) throws -> Void) throws {
        let scratch = try ScratchDirectory()
        let store = try PackageStore.create(
            at: scratch.url.appendingPathComponent("plan.deck"), contentType: "org.example.plan",
            schema: Self.schema)
        defer { try? store.close() }
        try body(store)
    }

    /// A plan of ``entities`` that inserts `inserts` (entity and value, no links yet).
    func plan(inserting inserts: [(entity: Int, value: String)]) -> SavePlan {
        var plan = SavePlan()
        plan.entities = Self.entities
        for (entity, value) in inserts {
            plan.inserts.append(
                SavePlan.Insert(entity: entity, globalID: UUID(), values: plan.values.count, links: 0..<0))
            plan.values.append(.string(value))
        }
        return plan
    }

    /// Gives insert `index` of `plan` the links `links`.
    func link(_ plan: inout SavePlan, _ index: Int, _ links: [SavePlan.Link]) {
        plan.inserts[index].links = plan.links.count..<(plan.links.count + links.count)
        plan.links += links
    }

    func toMany(
        _ name: String, _ targets: [PlannedRecord], bounds: SavePlan.Bounds = .none, byTargets: Bool = false,
        reread: Int = 0
    ) -> SavePlan.Link {
        .toMany(
            SavePlan.ToMany(
                name: name, targets: targets, bounds: bounds, isWrittenByTargets: byTargets, rereadKey: reread
            ))
    }

    func run(_ plan: SavePlan, in store: PackageStore, forFetch: Bool = false) throws -> SaveExecutor.Outcome
    {
        try store.write { tx in try SaveExecutor.run(plan, in: tx, forFetch: forFetch) }.value
    }

    @Test("Inserts and the links between them: a deck's cards written once, by the cards' to-ones")
    func insertsAndLinks() throws {
        try withStore { store in
            var plan = plan(inserting: [(0, "Spanish"), (1, "hola"), (1, "adiós")])
            link(&plan, 0, [toMany("cards", [.inserted(1), .inserted(2)], byTargets: true)])
            link(&plan, 1, [.toOne(name: "deck", target: .inserted(0)), toMany("tags", [])])
            link(&plan, 2, [.toOne(name: "deck", target: .inserted(0)), toMany("tags", [])])
            let outcome = try run(plan, in: store)
            #expect(outcome.recordIDs.count == 3)
            #expect(outcome.adopted.isEmpty && outcome.reread.isEmpty)
            let (deck, cards) = (outcome.recordIDs[0], Array(outcome.recordIDs[1...]))
            try store.read { reader throws in
                #expect(Set(try reader.related("Deck", id: deck, "cards")) == Set(cards))
                for card in cards {
                    #expect(try reader.record("Card", id: card)?["deck"] == .reference(deck))
                }
                #expect(try reader.record("Deck", id: deck)?["title"] == .string("Spanish"))
            }
        }
    }

    @Test("An upsert that matches a saved record is reported adopted, with that record's global id")
    func upsertAdopts() throws {
        try withStore { store in
            let (saved, gid) = try store.write { tx in
                let id = try tx.insert("Tag", ["name": .string("verbs")])
                return (id, try #require(try tx.record("Tag", id: id)?.globalID))
            }.value
            let outcome = try run(plan(inserting: [(2, "verbs"), (2, "nouns")]), in: store)
            #expect(outcome.recordIDs[0] == saved)
            #expect(outcome.adopted == [0: gid])
            #expect(outcome.recordIDs[1] != saved)
        }
    }

    @Test("Two inserts that become one record hold the union of their links, and are read again")
    func sharedRecordUnion() throws {
        try withStore { store in
            var plan = plan(inserting: [(1, "hola"), (1, "adiós"), (2, "verbs"), (2, "verbs")])
            link(&plan, 2, [toMany("cards", [.inserted(0)], reread: 0)])
            link(&plan, 3, [toMany("cards", [.inserted(1)], reread: 1)])
            let outcome = try run(plan, in: store)
            #expect(outcome.recordIDs[2] == outcome.recordIDs[3])
            #expect(outcome.adopted.keys.sorted() == [3])
            #expect(outcome.reread.sorted() == [0, 1])
            let linked = try store.read { try $0.related("Tag", id: outcome.recordIDs[2], "cards") }
            #expect(Set(linked) == [outcome.recordIDs[0], outcome.recordIDs[1]])
        }
    }

    @Test(
        "A deletion a deny rule refuses waits for the others; with no progress only a fetch's flush lets it go"
    )
    func denyRetries() throws {
        try withStore { store in
            let (deck, card) = try store.write { tx in
                let deck = try tx.insert("Deck", ["title": .string("Spanish")])
                return (deck, try tx.insert("Card", ["front": .string("hola"), "deck": .reference(deck)]))
            }.value
            var plan = SavePlan()
            plan.deletions = [
                SavePlan.Deletion(entity: "Deck", id: deck, relationshipCount: 1)
            ]
            // The deck alone: refused by the save, done by a fetch's flush (which lets go of the card).
            do {
                _ = try run(plan, in: store)
                Issue.record("the deny rule did not refuse the deletion")
            } catch let error as DeckError {
                guard case .deleteDenied = error else { throw error }
            }
            let tx = try store.beginTransaction()
            _ = try SaveExecutor.run(plan, in: tx, forFetch: true)
            #expect(try tx.record("Deck", id: deck) == nil)
            #expect(try tx.record("Card", id: card)?["deck"] == .null)
            tx.rollback()
            // The deck first, then its card: the deck waits for the card and goes after it.
            plan.deletions.append(SavePlan.Deletion(entity: "Card", id: card, relationshipCount: 2))
            _ = try run(plan, in: store)
            try store.read { reader throws in
                #expect(try reader.record("Deck", id: deck) == nil)
                #expect(try reader.record("Card", id: card) == nil)
            }
        }
    }

    @Test("A saved to-many relationship is merged by link with what another writer saved meanwhile")
    func mergedToMany() throws {
        try withStore { store in
            let (deck, cards) = try store.write { tx in
                let deck = try tx.insert("Deck", ["title": .string("Spanish")])
                var cards: [Int64] = []
                for front in ["a", "b", "c", "d"] {
                    cards.append(try tx.insert("Card", ["front": .string(front)]))
                }
                try tx.update("Deck", id: deck, ["cards": .references([cards[0], cards[1]])])
                return (deck, cards)
            }.value
            // Loaded as {a, b}; this context removed b and added c; another writer added d since.
            try store.write { tx in try tx.update("Card", id: cards[3], ["deck": .reference(deck)]) }
            var plan = SavePlan()
            plan.updates = [
                SavePlan.Update(
                    entity: "Deck", id: deck,
                    values: [
                        (
                            "cards",
                            .merged(
                                SavePlan.MergedToMany(
                                    current: [.saved(cards[0]), .saved(cards[2])],
                                    loaded: [cards[0], cards[1]],
                                    bounds: .none, rereadKey: 7))
                        )
                    ])
            ]
            let outcome = try run(plan, in: store)
            #expect(outcome.reread == [7])
            let linked = try store.read { try $0.related("Deck", id: deck, "cards") }
            #expect(Set(linked) == [cards[0], cards[2], cards[3]])
        }
    }

    @Test("Model-count bounds are checked by a save, not by a fetch's flush")
    func bounds() throws {
        try withStore { store in
            var plan = plan(inserting: [(0, "Empty")])
            link(&plan, 0, [toMany("cards", [], bounds: SavePlan.Bounds(minimum: 1, maximum: nil))])
            do {
                _ = try run(plan, in: store)
                Issue.record("a deck of no card was saved")
            } catch let error as DeckError {
                guard case .invalidValue(let entity, let property, _) = error else { throw error }
                #expect(entity == "Deck" && property == "cards")
            }
            let tx = try store.beginTransaction()
            defer { tx.rollback() }
            let outcome = try SaveExecutor.run(plan, in: tx, forFetch: true)
            #expect(outcome.recordIDs.count == 1)
        }
    }

    @Test("The planner's plan of models: inserts in order, links by place, a to-many left to its targets")
    func plannerOfModels() throws {
        let scratch = try ScratchDirectory()
        let container = try ModelContainer(
            for: Schema([Flash.Card.self, Flash.Deck.self]),
            configurations: [ModelConfiguration(url: scratch.url.appendingPathComponent("models.deck"))])
        let context = ModelContext(container)
        let deck = Flash.Deck(title: "Spanish")
        context.insert(deck)
        for front in ["hola", "adiós"] {
            let card = Flash.Card(front: front)
            card.deck = deck
        }
        let planned = try SavePlanner.plan(context.changes, of: context, forFetch: false)
        let plan = planned.plan
        #expect(plan.entities.map(\.name) == ["Deck", "Card"])
        #expect(plan.inserts.map { plan.entities[$0.entity].name } == ["Deck", "Card", "Card"])
        #expect(plan.values(of: 0).first == .string("Spanish"))
        guard case .toMany(let cards)? = plan.links[plan.inserts[0].links].first else {
            Issue.record("the deck's cards are not planned")
            return
        }
        #expect(cards.targets == [.inserted(1), .inserted(2)])
        #expect(cards.isWrittenByTargets)
        for index in 1...2 {
            guard case .toOne("deck", let target)? = plan.links[plan.inserts[index].links].first else {
                Issue.record("card \(index)'s deck is not planned")
                continue
            }
            #expect(target == .inserted(0))
        }
        #expect(plan.updates.isEmpty && plan.deletions.isEmpty)
        // And it saves.
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Flash.Card>()) == 2)
    }
}
