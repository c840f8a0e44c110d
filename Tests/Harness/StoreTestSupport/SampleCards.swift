import DeckStore
import Foundation

/// A store-level copy of the flash-cards sample (`samples/flashcards.schema.json`, the
/// `DeckSamples` module), so that the storage tests need nothing above `DeckStore`: the same
/// schema, and the same two decks of ten cards with tags and six external images.
package enum SampleCards {
    package static let contentType = "org.deck.flashcards"

    package static let schema = StoreSchema(
        version: "1.0.0",
        entities: [
            StoreSchema.Entity(
                "Deck",
                attributes: [
                    StoreSchema.Attribute("title", .string, options: [.unique]),
                    StoreSchema.Attribute("created", .date),
                ],
                relationships: [
                    StoreSchema.Relationship(
                        "cards", to: "Card", toMany: true, inverse: "deck", deleteRule: .cascade)
                ]),
            StoreSchema.Entity(
                "Card",
                attributes: [
                    StoreSchema.Attribute("front", .string, options: [.indexed]),
                    StoreSchema.Attribute("back", .string),
                    StoreSchema.Attribute("creationDate", .date, dynamicDefault: .now),
                    StoreSchema.Attribute("image", .data, isOptional: true, options: [.externalStorage]),
                    StoreSchema.Attribute("reviewCount", .integer, defaultValue: .integer(0)),
                ],
                relationships: [
                    StoreSchema.Relationship("deck", to: "Deck", inverse: "cards", deleteRule: .nullify),
                    StoreSchema.Relationship(
                        "tags", to: "Tag", toMany: true, inverse: "cards", deleteRule: .nullify),
                ]),
            StoreSchema.Entity(
                "Tag",
                attributes: [StoreSchema.Attribute("name", .string, options: [.unique])],
                relationships: [
                    StoreSchema.Relationship(
                        "cards", to: "Card", toMany: true, inverse: "tags", deleteRule: .nullify)
                ]),
        ])

    /// Each deck's cards: front, back, tags, and whether it has an image.
    private static let decks: [(title: String, cards: [(String, String, [String], Bool)])] = [
        (
            "Spanish basics",
            [
                ("hola", "hello", ["greeting"], true), ("adiós", "goodbye", ["greeting"], false),
                ("gracias", "thank you", ["courtesy"], true), ("por favor", "please", ["courtesy"], false),
                ("el gato", "the cat", ["animal", "noun"], true),
                ("el perro", "the dog", ["animal", "noun"], true),
            ]
        ),
        (
            "French basics",
            [
                ("bonjour", "hello", ["greeting"], true), ("merci", "thank you", ["courtesy"], false),
                ("le chat", "the cat", ["animal", "noun"], true),
                ("la pomme", "the apple", ["noun", "food"], false),
            ]
        ),
    ]

    /// Fills an empty package of ``schema`` in one write transaction: two decks, ten cards, five
    /// tags and six images of about 90 KB (above the 64 KiB threshold: blob files).
    package static func populate(_ store: PackageStore) throws {
        try store.write { tx in
            var tags: [String: Int64] = [:]
            let base = Date(timeIntervalSince1970: 1_795_000_000)
            var serial = 0
            for (index, deck) in decks.enumerated() {
                let deckID = try tx.insert(
                    "Deck",
                    [
                        "title": .string(deck.title),
                        "created": .date(base.addingTimeInterval(Double(index) * 86_400)),
                    ])
                for (front, back, names, hasImage) in deck.cards {
                    serial += 1
                    var tagIDs: [Int64] = []
                    for name in names {
                        let id = try tags[name] ?? tx.insert("Tag", ["name": .string(name)])
                        tags[name] = id
                        tagIDs.append(id)
                    }
                    var values: [String: Value] = [
                        "front": .string(front), "back": .string(back),
                        "creationDate": .date(base.addingTimeInterval(Double(serial) * 3_600)),
                        "deck": .reference(deckID), "tags": .references(tagIDs),
                    ]
                    if hasImage { values["image"] = .data(image(seed: serial)) }
                    try tx.insert("Card", values)
                }
            }
        }
    }

    /// A 200×150 binary PPM image (90,015 bytes) that differs from one `seed` to the next.
    package static func image(seed: Int) -> Data {
        let (width, height) = (200, 150)
        var data = Data("P6\n\(width) \(height)\n255\n".utf8)
        let red = UInt8(truncatingIfNeeded: seed &* 67 &+ 40)
        let green = UInt8(truncatingIfNeeded: seed &* 131 &+ 90)
        for y in 0..<height {
            for x in 0..<width {
                let stripe = ((x / 20) + (y / 15) + seed) % 2 == 0
                data.append(stripe ? red : UInt8(truncatingIfNeeded: x))
                data.append(stripe ? green : UInt8(truncatingIfNeeded: y))
                data.append(UInt8(truncatingIfNeeded: (x &+ y) &* seed))
            }
        }
        return data
    }
}
