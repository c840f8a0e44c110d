import DeckKit
import DeckTestSupport
import Foundation
import Testing

/// The one scratch-directory helper of every test target (DeckTestSupport's, which depends on
/// nothing of Deck): a directory of its own for one test, removed when the value goes away.
typealias ScratchDirectory = DeckTestSupport.ScratchDirectory

extension ScratchDirectory {
    /// The names in the directory, hidden ones (staging leftovers) included; none when it cannot
    /// be read.
    var names: [String] { (try? names()) ?? [] }
}

/// Decks of cards, with a unique deck title, a required integer, an external image and a
/// relationship that refuses to leave cards without their deck.
let publicSchema = StoreSchema(entities: [
    StoreSchema.Entity(
        "Deck",
        attributes: [StoreSchema.Attribute("title", .string, options: [.unique])],
        relationships: [
            StoreSchema.Relationship("cards", to: "Card", toMany: true, inverse: "deck", deleteRule: .deny)
        ]),
    StoreSchema.Entity(
        "Card",
        attributes: [
            StoreSchema.Attribute("front", .string),
            StoreSchema.Attribute("level", .integer, defaultValue: .integer(0)),
            StoreSchema.Attribute(
                "image", .data, isOptional: true, options: [.externalStorage], externalThreshold: 64),
        ],
        relationships: [StoreSchema.Relationship("deck", to: "Deck", inverse: "cards", deleteRule: .nullify)]),
])

/// Bytes that differ from one `seed` to the next.
func sampleBytes(_ count: Int, seed: UInt8) -> Data {
    Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed })
}

/// Creates `Cards.deck` in `directory` with one deck of three cards (two with external images),
/// committed and closed, and returns its URL.
func makeCardsPackage(in directory: ScratchDirectory, name: String = "Cards.deck") throws -> URL {
    let url = directory.appending(name)
    let store = try PackageStore.create(at: url, contentType: "org.example.cards", schema: publicSchema)
    try store.write { tx in
        let deck = try tx.insert("Deck", ["title": .string("Spanish")])
        for (index, front) in ["hola", "adiós", "gracias"].enumerated() {
            var values: [String: Value] = ["front": .string(front), "deck": .reference(deck)]
            if index < 2 { values["image"] = .data(sampleBytes(4_000 + index, seed: UInt8(index + 1))) }
            _ = try tx.insert("Card", values)
        }
    }
    try store.close()
    return url
}

/// The cards of the package at `url` as (front, image bytes), sorted by front.
func cardContents(_ url: URL) throws -> [String: Data?] {
    let store = try PackageStore.open(at: url, mode: .readOnly)
    defer { try? store.close() }
    return try store.read { reader in
        var contents: [String: Data?] = [:]
        for record in try reader.fetch(RecordQuery("Card")) {
            guard case .string(let front)? = record["front"] else { continue }
            contents[front] = try record["image"].flatMap { try reader.data(of: $0) }
        }
        return contents
    }
}

/// Runs `body`, which must throw a ``DeckError``, and returns it (recording an issue otherwise).
func deckError(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> DeckError? {
    do {
        try body()
        Issue.record("expected a DeckError, nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as DeckError {
        return error
    } catch {
        Issue.record("expected a DeckError, got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
