import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// Migrations that move a relationship's links to another kind of storage (spec sections 6.5 and
/// 18.2): to-one ↔ to-many between an own column and a join table, every link kept, and the check
/// that a relationship made to-one has at most one link per record.
@Suite(.timed) struct MigrationLinkStorageTests {
    typealias Executor = MigrationExecutorTests

    /// The flash-cards schema at `version`, with `change` applied to relationship `name` of
    /// `entity`.
    static func schema(
        _ version: String, _ entity: String, _ name: String,
        _ change: (inout StoreSchema.Relationship) -> Void
    ) -> StoreSchema {
        var schema = flashCardsSchema()
        schema.version = version
        if let e = schema.entities.firstIndex(where: { $0.name == entity }),
            let r = schema.entities[e].relationships.firstIndex(where: { $0.name == name })
        {
            change(&schema.entities[e].relationships[r])
        }
        return schema
    }

    /// The records with the to-one `name` of `entity` read as a to-many's list of ids.
    static func asToMany(_ records: [String: [Int64: [String: Value]]], _ entity: String, _ name: String)
        -> [String: [Int64: [String: Value]]]
    {
        var result = records
        for (id, values) in records[entity] ?? [:] {
            if case .reference(let target) = values[name] {
                result[entity]?[id]?[name] = .references([target])
            } else {
                result[entity]?[id]?[name] = .references([])
            }
        }
        return result
    }

    @Test func aOneToManyPairMadeManyToManyMovesTheLinksIntoAJoinTableAndBack() throws {
        try withTestDirectory { dir in
            let url = try Executor.makePackage(in: dir)
            let before = try Executor.records(url)
            let manyToMany = Self.schema("2.0.0", "Card", "deck") { $0.isToMany = true }
            let report = try PackageStore.migrate(at: url, to: manyToMany)
            #expect(report.steps.map(\.kind) == [.makeToMany])
            #expect(try Executor.records(url) == Self.asToMany(before, "Card", "deck"))
            try Executor.expectValid(url)
            // And back: each card has one deck, so the column is filled from the join table.
            _ = try PackageStore.migrate(at: url, to: Self.schema("3.0.0", "Card", "deck") { _ in })
            #expect(try Executor.records(url) == before)
            try Executor.expectValid(url)
            let store = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? store.close() }
            let tables = try store.read { reader throws in
                try reader.live().database.rows("SELECT name FROM sqlite_schema WHERE type = 'table'")
                    .compactMap { $0[0].string }
            }
            #expect(!tables.contains("Card.deck") && !tables.contains { $0.hasPrefix("deck_links_") })
        }
    }

    @Test func aToManyMadeToOneMovesEachLinkIntoTheColumnOnceEveryRecordHasOne() throws {
        try withTestDirectory { dir in
            let url = try Executor.makePackage(in: dir)
            let toOne = Self.schema("2.0.0", "Card", "tags") { $0.isToMany = false }
            // "comer" (#2) has two tags: refused, naming it, the document as it was.
            try Executor.expectRefused(
                url, to: toOne, entity: "Card", property: "tags", mentioning: ["record #2", "2 links"])
            #expect(throws: DeckError.self) { try PackageStore.migrate(at: url, to: toOne, dryRun: true) }
            let store = try PackageStore.open(at: url)
            try store.write { tx in
                let nouns = try tx.fetch(RecordQuery("Tag")).filter { $0.values["name"] == .string("nouns") }
                try tx.update("Card", id: 2, ["tags": .references(nouns.map(\.id))])
            }
            try store.close()
            let before = try Executor.records(url)
            _ = try PackageStore.migrate(at: url, to: toOne)
            var expected = before
            for (id, values) in before["Card"] ?? [:] {
                if case .references(let ids) = values["tags"] {
                    expected["Card"]?[id]?["tags"] = ids.first.map(Value.reference) ?? .null
                }
            }
            #expect(try Executor.records(url) == expected)
            try Executor.expectValid(url)
        }
    }

    /// Regression: a to-many made to-one whose links stay where they are (the inverse's column)
    /// was not checked, so a deck with two cards became a one-to-one with two cards.
    @Test func aToManyMadeToOneInPlaceIsCheckedToo() throws {
        try withTestDirectory { dir in
            let url = try Executor.makePackage(in: dir)
            let oneToOne = Self.schema("2.0.0", "Deck", "cards") { $0.isToMany = false }
            try Executor.expectRefused(
                url, to: oneToOne, entity: "Deck", property: "cards", mentioning: ["record #1", "2 links"])
        }
    }

    /// Decks with one-sided to-many `cards` (a join table), two decks and three cards, card #3
    /// in both decks when `shared`.
    static func oneSidedPackage(in dir: URL, shared: Bool) throws -> (URL, StoreSchema) {
        var schema = flashCardsSchema()
        schema.entities[0].relationships[0] = StoreSchema.Relationship("cards", to: "Card", toMany: true)
        schema.entities[1].relationships.removeFirst()
        let url = dir.appendingPathComponent("one-sided.deck")
        let store = try PackageStore.create(at: url, contentType: flashCardsType, schema: schema)
        try store.write { tx in
            let cards = try ["uno", "dos", "tres"].map { try tx.insert("Card", ["front": .string($0)]) }
            try tx.insert("Deck", ["title": .string("A"), "cards": .references([cards[0], cards[2]])])
            try tx.insert(
                "Deck",
                ["title": .string("B"), "cards": .references(shared ? [cards[1], cards[2]] : [cards[1]])])
        }
        try store.close()
        return (url, schema)
    }

    @Test func aNewToOneInverseTakesTheLinksOfTheOneSidedToMany() throws {
        try withTestDirectory { dir in
            let (url, schema) = try Self.oneSidedPackage(in: dir, shared: false)
            var paired = schema
            paired.version = "2.0.0"
            paired.entities[0].relationships[0].inverse = "deck"
            paired.entities[1].relationships.insert(
                StoreSchema.Relationship("deck", to: "Deck", inverse: "cards"), at: 0)
            let before = try Executor.records(url)
            _ = try PackageStore.migrate(at: url, to: paired)
            let after = try Executor.records(url)
            #expect(after["Deck"]?.mapValues { $0["cards"] } == before["Deck"]?.mapValues { $0["cards"] })
            #expect(
                after["Card"]?.mapValues { $0["deck"] } == [
                    1: .reference(1), 2: .reference(2), 3: .reference(1),
                ])
            try Executor.expectValid(url)
        }
    }

    @Test func aNewToOneInverseOfLinksSharedByTwoRecordsIsRefused() throws {
        try withTestDirectory { dir in
            let (url, schema) = try Self.oneSidedPackage(in: dir, shared: true)
            var paired = schema
            paired.version = "2.0.0"
            paired.entities[0].relationships[0].inverse = "deck"
            paired.entities[1].relationships.insert(
                StoreSchema.Relationship("deck", to: "Deck", inverse: "cards"), at: 0)
            let before = try Executor.records(url)
            #expect {
                try PackageStore.migrate(at: url, to: paired)
            } throws: { error in
                guard case .migrationRefused(_, "Card", "deck", let reason) = error as? DeckError else {
                    return false
                }
                return reason.contains("record #3 has 2")
            }
            #expect(try Executor.records(url) == before)
        }
    }

    @Test func pairingTwoRelationshipsThatHadTheirOwnLinksNeedsACustomStage() throws {
        try withTestDirectory { dir in
            var apart = flashCardsSchema()
            apart.entities[1].relationships[1].inverse = nil
            apart.entities[2].relationships[0].inverse = nil
            let url = try Executor.makePackage(in: dir, schema: apart)
            var paired = flashCardsSchema()
            paired.version = "2.0.0"
            let diff = SchemaDiff(from: apart, to: paired)
            let step = try #require(diff.steps.first { $0.kind == .changeInverse && !$0.isLightweight })
            #expect(step.reason?.contains("each had links of its own") == true, "\(diff.steps)")
            #expect(throws: DeckError.self) { try PackageStore.migrate(at: url, to: paired) }
        }
    }

    @Test func unpairingKeepsTheLinksOnBothSides() throws {
        try withTestDirectory { dir in
            let url = try Executor.makePackage(in: dir)
            let before = try Executor.records(url)
            var apart = flashCardsSchema()
            apart.version = "2.0.0"
            apart.entities[0].relationships[0].inverse = nil
            apart.entities[1].relationships[0].inverse = nil
            let diff = SchemaDiff(from: flashCardsSchema(), to: apart)
            #expect(diff.isLightweight, "\(diff.steps)")
            _ = try PackageStore.migrate(at: url, to: apart)
            #expect(try Executor.records(url) == before)
            try Executor.expectValid(url)
        }
    }
}
