import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// Relationships hold related models by identity (issue 22, item 3): models that read each other
/// never keep each other alive, with no cycle breaker, while their context lives and after it.
@Suite("Relationships by identity", .timed)
struct RelationshipIdentityTests {
    typealias Card = Flash.Card
    typealias Deck = Flash.Deck

    /// A document of 100 decks of 100 cards each.
    static func makeDocument(_ directory: ScratchDirectory) throws -> ModelContainer {
        let container = try ModelContainer(
            for: Deck.self, configurations: ModelConfiguration(url: directory.appending("big.deck")))
        let context = ModelContext(container)
        for n in 0..<100 {
            let deck = Deck(title: "deck \(n)")
            context.insert(deck)
            for k in 0..<100 {
                let card = Card(front: "card \(n * 100 + k)")
                card.deck = deck
            }
        }
        try context.save()
        return container
    }

    /// Fetches every card and deck in `context`, reads both sides of each relationship
    /// (`card.deck`, `deck.cards`), and returns weak references to every model it met.
    static func readBothSides(in context: ModelContext) throws -> [WeakReference] {
        let cards = try context.fetch(FetchDescriptor<Card>())
        let decks = try context.fetch(FetchDescriptor<Deck>())
        #expect(cards.count == 10_000)
        #expect(decks.count == 100)
        var titles = 0
        for card in cards { titles += card.deck?.title.isEmpty == false ? 1 : 0 }
        #expect(titles == 10_000)
        var related: [AnyObject] = []
        for deck in decks {
            let members = deck.cards
            #expect(members.count == 100)
            #expect(members.allSatisfy { $0.deck === deck })
            related += members
        }
        // The cards a deck gave are the fetched instances (one instance per record).
        #expect(Set(related.map(ObjectIdentifier.init)) == Set(cards.map(ObjectIdentifier.init)))
        return (cards as [AnyObject] + decks as [AnyObject]).map(WeakReference.init)
    }

    @Test("10,000 cards and 100 decks that read each other are all freed while their context lives")
    func freedWhileTheContextLives() throws {
        let directory = try ScratchDirectory()
        let container = try Self.makeDocument(directory)
        let context = ModelContext(container)
        let references = try Self.readBothSides(in: context)
        #expect(references.count == 10_100)
        #expect(references.allSatisfy { $0.isFreed })
        // The context goes on: the same records, new instances.
        #expect(try context.fetchCount(FetchDescriptor<Card>()) == 10_000)
        let deck = try #require(
            try context.fetch(FetchDescriptor<Deck>(predicate: #Predicate { $0.title == "deck 7" })).first)
        #expect(deck.cards.count == 100)
        #expect(context.lastLoadError == nil)
    }

    @Test("10,000 cards and 100 decks that read each other are all freed with their context")
    func freedWithTheContext() throws {
        let directory = try ScratchDirectory()
        let container = try Self.makeDocument(directory)
        func read() throws -> (models: [WeakReference], context: WeakReference) {
            let context = ModelContext(container)
            return (try Self.readBothSides(in: context), WeakReference(context))
        }
        let (references, context) = try read()
        #expect(context.isFreed)
        #expect(references.count == 10_100)
        #expect(references.allSatisfy { $0.isFreed })
    }

    @Test("An enumerate batch keeps the lists its block reads only while it runs, and sees changes")
    func enumerateBatchValues() throws {
        let directory = try ScratchDirectory()
        let container = try Self.makeDocument(directory)
        let context = ModelContext(container)
        var references: [WeakReference] = []
        var counts: [Int] = []
        try context.enumerate(FetchDescriptor<Card>(), batchSize: 1000) { card in
            guard let deck = card.deck else { return }
            counts.append(deck.cards.count)
            references.append(WeakReference(card))
            references.append(WeakReference(deck))
            if card.front == "card 0" {
                // A change in the block: the next read of the list sees it.
                let extra = Card(front: "extra")
                extra.deck = deck
                #expect(deck.cards.count == 101)
                #expect(deck.cards.last === extra)
                deck.cards = Array(deck.cards.dropLast())
                #expect(deck.cards.count == 100)
                context.delete(extra)
            }
        }
        #expect(counts.count == 10_000)
        #expect(counts.allSatisfy { $0 == 100 })
        // The change tracker holds the deck changed in the block; the rollback lets it go.
        context.rollback()
        // The batches' lists went with their batches: nothing holds the models any more.
        #expect(references.allSatisfy { $0.isFreed })
    }

    @Test("Unsaved related models are held until the save, then by identity only")
    func unsavedModelsAreHeldUntilTheSave() throws {
        let directory = try ScratchDirectory()
        let container = try ModelContainer(
            for: Deck.self, configurations: ModelConfiguration(url: directory.appending("new.deck")))
        let context = ModelContext(container)
        func insert() -> [WeakReference] {
            let deck = Deck(title: "German")
            let card = Card(front: "danke")
            // Related before either is in a context: the card holds the deck, and inserting one
            // inserts the other.
            card.deck = deck
            context.insert(card)
            #expect(deck.cards.first === card)
            return [WeakReference(deck), WeakReference(card)]
        }
        let references = insert()
        // Inserted and not saved: the context keeps them.
        #expect(references.allSatisfy { !$0.isFreed })
        try context.save()
        #expect(references.allSatisfy { $0.isFreed })
        let card = try #require(try context.fetch(FetchDescriptor<Card>()).first)
        #expect(card.deck?.title == "German")
        #expect(card.deck?.cards.first === card)
    }
}
