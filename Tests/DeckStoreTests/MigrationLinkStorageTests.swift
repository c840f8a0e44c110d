import Foundation
import Testing

@testable import DeckStore

/// Migrations that move a relationship's links to another kind of storage (spec sections 6.5 and
/// 18.2): to-one ↔ to-many between an own column and a join table, every link kept, and the check
/// that a relationship made to-one has at most one link per record.
@Suite struct MigrationLinkStorageTests {
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
            let tables = try store.read { reader in
                try reader.live().database.rows("SELECT name FROM sqlite_schema WHERE type = 'table'")
                    .compactMap { $0[0].string }
            }
            #expect(!tables.contains("Card.deck") && !tables.contains { $0.hasPrefix("deck_links") })
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
}
