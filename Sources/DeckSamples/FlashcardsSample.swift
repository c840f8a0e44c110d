import DeckKit
import Foundation

/// The flash-cards document type used in the docs, tests and benchmarks: cards with front and
/// back text, a creation date and an optional image stored externally, grouped in decks and
/// tagged.
public enum FlashcardsSample {
    /// The content type of flash-cards documents.
    public static let contentType = "org.deck.flashcards"
    /// The package extension the sample registers.
    public static let fileExtension = "flashcards"

    /// The flash-cards schema (also in `samples/flashcards.schema.json`).
    public static let schema = StoreSchema(
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

    static let content:
        [(deck: String, cards: [(front: String, back: String, tags: [String], image: Bool)])] = [
            (
                "Spanish basics",
                [
                    ("hola", "hello", ["greeting"], true),
                    ("adiós", "goodbye", ["greeting"], false),
                    ("gracias", "thank you", ["courtesy"], true),
                    ("por favor", "please", ["courtesy"], false),
                    ("el gato", "the cat", ["animal", "noun"], true),
                    ("el perro", "the dog", ["animal", "noun"], true),
                ]
            ),
            (
                "French basics",
                [
                    ("bonjour", "hello", ["greeting"], true),
                    ("merci", "thank you", ["courtesy"], false),
                    ("le chat", "the cat", ["animal", "noun"], true),
                    ("la pomme", "the apple", ["noun", "food"], false),
                ]
            ),
        ]

    /// Fills an empty flash-cards document with two decks, ten cards, tags and six images
    /// (each about 90 KB, above the 64 KiB threshold, so they are stored as blob files), in one
    /// transaction.
    public static func populate(_ store: PackageStore) throws {
        try store.write { document in try populate(document) }
    }

    /// Fills an empty flash-cards document within `document`, a write transaction.
    public static func populate(_ document: StoreTransaction) throws(DeckError) {
        var tags: [String: Int64] = [:]
        let base = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18, fixed for reproducibility
        var serial = 0
        for (deckIndex, deck) in content.enumerated() {
            let deckID = try document.insert(
                "Deck",
                [
                    "title": .string(deck.deck),
                    "created": .date(base.addingTimeInterval(Double(deckIndex) * 86_400)),
                ])
            for card in deck.cards {
                serial += 1
                var tagIDs: [Int64] = []
                for tag in card.tags {
                    if let id = tags[tag] {
                        tagIDs.append(id)
                    } else {
                        let id = try document.insert("Tag", ["name": .string(tag)])
                        tags[tag] = id
                        tagIDs.append(id)
                    }
                }
                var values: [String: Value] = [
                    "front": .string(card.front), "back": .string(card.back),
                    "creationDate": .date(base.addingTimeInterval(Double(serial) * 3_600)),
                    "deck": .reference(deckID), "tags": .references(tagIDs),
                ]
                if card.image { values["image"] = .data(image(seed: serial)) }
                try document.insert("Card", values)
            }
        }
    }

    /// A deterministic 200×150 colour image in binary PPM (netpbm P6) form: 90,015 bytes.
    public static func image(seed: Int, width: Int = 200, height: Int = 150) -> Data {
        var data = Data("P6\n\(width) \(height)\n255\n".utf8)
        data.reserveCapacity(data.count + width * height * 3)
        let r = UInt8(truncatingIfNeeded: seed &* 67 &+ 40)
        let g = UInt8(truncatingIfNeeded: seed &* 131 &+ 90)
        for y in 0..<height {
            for x in 0..<width {
                let stripe = ((x / 20) + (y / 15) + seed) % 2 == 0
                data.append(stripe ? r : UInt8(truncatingIfNeeded: x))
                data.append(stripe ? g : UInt8(truncatingIfNeeded: y))
                data.append(UInt8(truncatingIfNeeded: (x &+ y) &* seed))
            }
        }
        return data
    }
}
