import DeckKit
import Foundation

/// `deck diff`'s target (issue 25): a full diff of two 100k-row copies at ≥ 0.3× `sqldiff`
/// (Debian's `sqlite3-tools`) on the same stores. The copies are a file copy of one document with
/// 100 records changed in the second: 40 updated (text, number, deck), 30 inserted, 30 deleted.
/// `sqldiff` compares the stores table by table by primary key and prints SQL; Deck matches
/// records by global id and reads to-one targets' global ids, so it does more per row.
func runDiffBenchmarks() throws {
    guard selected("diff") else { return }
    let (first, second) = try editedCopies(rows: rowCount, named: "diff", movedTo: 1)
    var found = 0
    try compare(
        "diff two \(rowCount)-row copies", target: "≥ 0.3×",
        deck: { found = try DocumentDifference(between: first, and: second).records.count },
        baseline: {
            _ = shell("sqldiff '\(first.path)/store.sqlite' '\(second.path)/store.sqlite' > /dev/null")
        })
    // 100 records (a deck move and an edit of one card is one record) and no others.
    precondition(found == 100, "the diff found \(found) records, not 100")
}

/// A document of `rows` cards in decks of 100, and a file copy of it with 100 cards changed: 40
/// updated (text, number, and every fourth moved to deck `target`), 30 deleted, 30 inserted. The
/// packages are `NAME-first.deck` and `NAME-second.deck` in the work directory.
func editedCopies(rows: Int, named name: String, movedTo target: Int64) throws -> (URL, URL) {
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
    let first = URL(fileURLWithPath: fresh("\(name)-first.deck"))
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
    let second = URL(fileURLWithPath: fresh("\(name)-second.deck"))
    try FileManager.default.copyItem(at: first, to: second)
    let copy = try PackageStore.open(at: second)
    try copy.write { t in
        let step = Int64(max(rows / 100, 1))
        for k in 0..<40 {
            let id = Int64(k) * step + 1
            try t.update("Card", id: id, ["front": .string("changed \(k)"), "reviews": .integer(99)])
            if k % 4 == 0 { try t.update("Card", id: id, ["deck": .reference(target)]) }
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
