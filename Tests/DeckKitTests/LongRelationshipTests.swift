import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// A to-many relationship of many models (a deck of hundreds of cards): whether a card is already
/// in the deck is answered from sets once the deck has been asked often enough, with nothing but
/// cards joining in between; the answers must be those of a scan of the deck's cards, whether
/// they are new models or saved records, as cards join, leave and join again.
@Suite("Long to-many relationships", .timed)
struct LongRelationshipTests {
    typealias Card = Flash.Card
    typealias Deck = Flash.Deck

    func container(_ directory: ScratchDirectory) throws -> ModelContainer {
        try ModelContainer(
            for: Deck.self, configurations: ModelConfiguration(url: directory.appending("long.deck")))
    }

    @Test("Cards joining, leaving and joining again a deck of hundreds of new cards are each in it once")
    func newCards() throws {
        let directory = try ScratchDirectory()
        let container = try container(directory)
        let context = ModelContext(container)
        let deck = Deck(title: "long")
        let other = Deck(title: "other")
        context.insert(deck)
        context.insert(other)
        let cards = (0..<300).map { Card(front: "card \($0)") }
        for card in cards { card.deck = deck }
        #expect(deck.cards.count == 300)
        #expect(Set(deck.cards.map(ObjectIdentifier.init)).count == 300)

        // Leaving: to no deck, and to another deck.
        cards[150].deck = nil
        cards[151].deck = other
        #expect(deck.cards.count == 298)
        #expect(!deck.cards.contains { $0 === cards[150] || $0 === cards[151] })
        #expect(other.cards.map(\.front) == ["card 151"])
        // Joining again, once however often it is asked.
        cards[150].deck = deck
        cards[151].deck = deck
        cards[151].deck = deck
        #expect(deck.cards.count == 300)
        #expect(deck.cards.filter { $0 === cards[151] }.count == 1)
        #expect(other.cards.isEmpty)
        // Through the deck's side too.
        deck.cards.removeAll { $0 === cards[7] }
        #expect(cards[7].deck == nil)
        deck.cards.append(cards[7])
        #expect(cards[7].deck === deck)
        for card in cards.prefix(100) { card.deck = deck }
        #expect(deck.cards.count == 300)

        try context.save()
        let reread = ModelContext(container)
        let decks = try reread.fetch(FetchDescriptor<Deck>(sortBy: [SortDescriptor(\.title)]))
        #expect(decks.map(\.title) == ["long", "other"])
        #expect(decks[0].cards.count == 300)
        #expect(Set(decks[0].cards.map(\.front)).count == 300)
        #expect(decks[1].cards.isEmpty)
    }

    @Test("Saved cards of a long deck leave it and join it again once, beside new cards that join it")
    func savedCards() throws {
        let directory = try ScratchDirectory()
        let container = try container(directory)
        do {
            let context = ModelContext(container)
            let deck = Deck(title: "long")
            context.insert(deck)
            for n in 0..<200 { Card(front: "saved \(n)").deck = deck }
            try context.save()
        }
        let context = ModelContext(container)
        let deck = try #require(try context.fetch(FetchDescriptor<Deck>()).first)
        let saved = try context.fetch(FetchDescriptor<Card>(sortBy: [SortDescriptor(\.front)]))
        #expect(deck.cards.count == 200)
        // New cards join: the deck is asked each time whether it holds them already.
        let added = (0..<50).map { Card(front: "new \($0)") }
        for card in added { card.deck = deck }
        #expect(deck.cards.count == 250)
        // A saved card leaves, and joins again (found by its record, not as a model).
        saved[10].deck = nil
        #expect(deck.cards.count == 249)
        #expect(!deck.cards.contains { $0 === saved[10] })
        saved[10].deck = deck
        saved[10].deck = deck
        #expect(deck.cards.filter { $0 === saved[10] }.count == 1)
        for card in added + saved { card.deck = deck }
        #expect(deck.cards.count == 250)

        try context.save()
        let reread = ModelContext(container)
        let cards = try reread.fetch(FetchDescriptor<Card>())
        #expect(cards.count == 250)
        #expect(cards.allSatisfy { $0.deck?.title == "long" })
        #expect(try reread.fetch(FetchDescriptor<Deck>()).first?.cards.count == 250)
    }
}
