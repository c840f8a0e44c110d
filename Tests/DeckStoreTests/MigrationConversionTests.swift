import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// Steps that are not lightweight but a custom stage can carry out (spec section 18.3): a type
/// change, whose column starts from the default and which the stage converts from the old values,
/// and an attribute made required without a default, whose nulls the stage fills first; the rest
/// is refused even with a stage, saying what to do instead.
@Suite(.timed) struct MigrationConversionTests {
    typealias Executor = MigrationExecutorTests

    /// The flash-cards schema at version 2 with `Card.back` changed by `change`.
    static func schema(_ change: (inout StoreSchema.Attribute) -> Void) -> StoreSchema {
        var schema = flashCardsSchema()
        schema.version = "2.0.0"
        let card = schema.entities.firstIndex { $0.name == "Card" } ?? 0
        let back = schema.entities[card].attributes.firstIndex { $0.name == "back" } ?? 0
        change(&schema.entities[card].attributes[back])
        return schema
    }

    @Test func aCustomStageConvertsAnAttributeOfAnotherType() throws {
        try withTestDirectory { dir in
            let url = try Executor.makePackage(in: dir)
            let before = try Executor.records(url)
            let lengths = Self.schema {
                $0.type = .integer
                $0.defaultValue = .integer(-1)
            }
            // Without a stage: refused, saying a stage is needed.
            try Executor.expectRefused(
                url, to: lengths, entity: "Card", property: "back", mentioning: ["needs a custom stage"])
            let stage = StoreMigrationStage(
                name: "back-length",
                didMigrate: { context in
                    // The new column starts from the default.
                    for record in try context.transaction.fetch(RecordQuery("Card")) {
                        #expect(record.values["back"] == .integer(-1))
                    }
                    for (id, back) in try context.oldValues(entity: "Card", attribute: "back") {
                        guard case .string(let text) = back else { continue }
                        try context.transaction.update("Card", id: id, ["back": .integer(Int64(text.count))])
                    }
                })
            let report = try PackageStore.migrate(at: url, to: lengths, stage: stage)
            #expect(report.rebuiltTables.contains("Card") && report.stage == "back-length")
            var expected = before
            for (id, values) in before["Card"] ?? [:] {
                if case .string(let text) = values["back"] {
                    expected["Card"]?[id]?["back"] = .integer(Int64(text.count))
                }
            }
            #expect(try Executor.records(url) == expected)
            try Executor.expectValid(url)
        }
    }

    @Test func aTypeChangeWithoutADefaultNeedsOneEvenWithAStage() throws {
        try withTestDirectory { dir in
            let url = try Executor.makePackage(in: dir)
            let noDefault = Self.schema {
                $0.type = .integer
                $0.defaultValue = nil
            }
            try Executor.expectRefused(
                url, to: noDefault, stage: StoreMigrationStage(name: "convert"), entity: "Card",
                property: "back", mentioning: ["give the attribute a default"])
        }
    }

    @Test func aStageFillsTheNullsOfAnAttributeMadeRequiredWithoutADefault() throws {
        try withTestDirectory { dir in
            let url = try Executor.makePackage(in: dir)
            var optional = flashCardsSchema()
            optional.version = "1.5.0"
            optional.entities[1].attributes[1].isOptional = true
            optional.entities[1].attributes[1].defaultValue = nil
            _ = try PackageStore.migrate(at: url, to: optional)
            let store = try PackageStore.open(at: url)
            try store.write { tx in try tx.update("Card", id: 3, ["back": .null]) }
            try store.close()
            var required = optional
            required.version = "2.0.0"
            required.entities[1].attributes[1].isOptional = false
            let result = Result { () throws(DeckError) in
                try PackageStore.migrate(at: url, to: required, stage: StoreMigrationStage(name: "nothing"))
            }
            // A stage that leaves the null: the data check names the record.
            guard case .failure(.migrationRefused(_, "Card", "back", let reason)) = result else {
                Issue.record("not refused: \(result)")
                return
            }
            #expect(reason.contains("record #3"))
            let fill = StoreMigrationStage(
                name: "fill-back",
                willMigrate: { tx in
                    for record in try tx.fetch(RecordQuery("Card")) where record.values["back"] == .null {
                        try tx.update("Card", id: record.id, ["back": .string("?")])
                    }
                })
            _ = try PackageStore.migrate(at: url, to: required, stage: fill)
            #expect(try Executor.records(url)["Card"]?[3]?["back"] == .string("?"))
            try Executor.expectValid(url)
        }
    }

    @Test func aNewDestinationIsRefusedEvenWithAStageSayingWhatToDo() throws {
        try withTestDirectory { dir in
            let url = try Executor.makePackage(in: dir)
            var moved = flashCardsSchema()
            moved.version = "2.0.0"
            moved.entities[1].relationships[1] = StoreSchema.Relationship("tags", to: "Deck", toMany: true)
            moved.entities[2].relationships = []
            try Executor.expectRefused(
                url, to: moved, plan: MigrationPlan(removals: ["Tag.cards"]),
                stage: StoreMigrationStage(name: "relink"), entity: "Card", property: "tags",
                mentioning: ["not even with a custom stage", "add a new property"])
        }
    }
}
