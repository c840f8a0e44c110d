import DeckKit
import Foundation

/// `deck merge`'s target (issue 25): merging two copies of a 1M-row document that differ in 100
/// records costs within 3× of merging two 1k-row copies with the same difference (the cost
/// follows the changes, not the size). Each copy pair is a file copy of one document with 100
/// records changed in the second: 40 updated (text, number, deck), 30 inserted, 30 deleted; the
/// first is merged into afresh for every run.
func runMergeBenchmarks() throws {
    guard selected("merge") else { return }
    let large = rowCount * 10
    let small = max(rowCount / 100, 200)
    let (largeFirst, largeSecond) = try mergePair(rows: large, name: "large")
    let (smallFirst, smallSecond) = try mergePair(rows: small, name: "small")
    let largeTarget = URL(fileURLWithPath: fresh("merge-large-target.deck"))
    let smallTarget = URL(fileURLWithPath: fresh("merge-small-target.deck"))
    var changed = (0, 0)
    try compare(
        "merge \(large)-row copies (100 changed)", target: "≥ 0.33× (\(small) rows)",
        setup: {
            for (source, target) in [(largeFirst, largeTarget), (smallFirst, smallTarget)] {
                try? FileManager.default.removeItem(at: target)
                try FileManager.default.copyItem(at: source, to: target)
            }
        },
        deck: {
            let store = try PackageStore.open(at: largeTarget)
            let report = try DocumentMerge.merge(from: largeSecond, into: store)
            try store.close()
            changed.0 = report.insertedRecords + report.deletedRecords + report.changedCells
        },
        baseline: {
            let store = try PackageStore.open(at: smallTarget)
            let report = try DocumentMerge.merge(from: smallSecond, into: store)
            try store.close()
            changed.1 = report.insertedRecords + report.deletedRecords + report.changedCells
        })
    // 30 inserted, 30 deleted, 40 cards with two or three changed values each: 150 both.
    print("  the merges changed \(changed.0) and \(changed.1) records and values (150 expected)")
}

/// A document of `rows` cards in decks of 100 and a file copy of it with 100 cards changed.
private func mergePair(rows: Int, name: String) throws -> (URL, URL) {
    let schema = StoreSchema(entities: [
        StoreSchema.Entity(
            "Deck", attributes: [StoreSchema.Attribute("title", .string)],
            relationships: [StoreSchema.Relationship("cards", to: "Card", toMany: true, inverse: "deck")]),
        StoreSchema.Entity(
            "Card",
            attributes: [
                StoreSchema.Attribute("front", .string), StoreSchema.Attribute("back", .string),
                StoreSchema.Attribute("reviews", .integer), StoreSchema.Attribute("created", .date),
            ],
            relationships: [StoreSchema.Relationship("deck", to: "Deck", inverse: "cards")]),
    ])
    let first = URL(fileURLWithPath: fresh("merge-\(name)-first.deck"))
    let store = try PackageStore.create(at: first, contentType: "org.deck.bench", schema: schema)
    let base = Date(timeIntervalSince1970: 1_800_000_000)
    try store.write { t in
        var deck: Int64 = 0
        for i in 0..<rows {
            if i % 100 == 0 { deck = try t.insert("Deck", ["title": .string("deck \(i / 100)")]) }
            try t.insert(
                "Card",
                [
                    "front": .string("front \(i)"), "back": .string("back of card \(i)"),
                    "reviews": .integer(Int64(i % 7)), "created": .date(base.addingTimeInterval(Double(i))),
                    "deck": .reference(deck),
                ])
        }
    }
    try store.close()
    let second = URL(fileURLWithPath: fresh("merge-\(name)-second.deck"))
    try FileManager.default.copyItem(at: first, to: second)
    let copy = try PackageStore.open(at: second)
    try copy.write { t in
        let step = Int64(max(rows / 100, 1))
        for k in 0..<40 {
            let id = Int64(k) * step + 1
            try t.update("Card", id: id, ["front": .string("changed \(k)"), "reviews": .integer(99)])
            if k % 4 == 0 { try t.update("Card", id: id, ["deck": .reference(2)]) }
        }
        for k in 0..<30 { _ = try t.delete("Card", id: Int64(40 + k) * step + 2) }
        for k in 0..<30 {
            try t.insert(
                "Card",
                [
                    "front": .string("new \(k)"), "back": .string(""), "reviews": .integer(0),
                    "created": .date(base), "deck": .reference(2),
                ])
        }
    }
    try copy.close()
    return (first, second)
}
