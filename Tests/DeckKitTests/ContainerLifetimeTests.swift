import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// A context keeps its container's document open while the context lives (SwiftData's
/// `let context = try ModelContainer(…).mainContext`), and a container and its contexts that the
/// user drops are freed, closing the document.
@Suite("Container lifetimes", .timed)
@MainActor struct ContainerLifetimeTests {
    typealias Card = Flash.Card
    typealias Deck = Flash.Deck

    static func configuration(_ url: URL, allowsSave: Bool = true) -> ModelConfiguration {
        ModelConfiguration(url: url, allowsSave: allowsSave)
    }

    @Test("try ModelContainer(…).mainContext works across saves and fetches")
    func mainContextOfATemporaryContainer() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        let context = try ModelContainer(for: Card.self, Deck.self, configurations: Self.configuration(url))
            .mainContext
        for front in ["hola", "adiós", "gracias"] {
            context.insert(Card(front: front))
            try context.save()
            let fronts = try context.fetch(FetchDescriptor<Card>(sortBy: [SortDescriptor(\.front)])).map(
                \.front)
            #expect(fronts.contains(front))
        }
        let deck = Deck(title: "Spanish")
        context.insert(deck)
        for card in try context.fetch(FetchDescriptor<Card>()) { card.deck = deck }
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Card>()) == 3)
        // The container it gives is one over the same open document, whose main context it is.
        let container = context.container
        #expect(container.mainContext === context)
        let reader = ModelContext(container)
        #expect(try reader.fetch(FetchDescriptor<Deck>()).first?.cards.count == 3)
    }

    @Test("ModelContext(container) of a temporary container works across saves and fetches")
    func contextOfATemporaryContainer() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        let context = ModelContext(
            try ModelContainer(for: Card.self, Deck.self, configurations: Self.configuration(url)))
        for front in ["hola", "adiós"] {
            context.insert(Card(front: front))
            try context.save()
        }
        #expect(try context.fetch(FetchDescriptor<Card>()).count == 2)
    }

    /// Whether another container opens the document at `url` read-write (its writer lock free).
    func opensReadWrite(_ url: URL) -> Bool {
        guard
            let other = try? ModelContainer(
                for: Card.self, Deck.self, configurations: Self.configuration(url))
        else { return false }
        return other.access == .readWrite
    }

    @Test("A container and its main context that the user drops are freed, and the document closes")
    func mainContextAndContainerAreFreed() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        weak var weakContainer: ModelContainer?
        weak var weakContext: ModelContext?
        do {
            let container = try ModelContainer(
                for: Card.self, Deck.self, configurations: Self.configuration(url))
            let context = container.mainContext
            context.insert(Card(front: "hola"))
            try context.save()
            weakContainer = container
            weakContext = context
            #expect(!opensReadWrite(url))
        }
        #expect(weakContainer == nil)
        #expect(weakContext == nil)
        #expect(opensReadWrite(url))
    }

    @Test("A main context kept alone keeps the document open until it goes, then is freed")
    func keptMainContextKeepsTheDocument() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        weak var weakContainer: ModelContainer?
        weak var weakContext: ModelContext?
        weak var weakAgain: ModelContainer?
        do {
            let context: ModelContext
            do {
                let container = try ModelContainer(
                    for: Card.self, Deck.self, configurations: Self.configuration(url))
                weakContainer = container
                context = container.mainContext
            }
            #expect(weakContainer == nil)
            context.insert(Card(front: "hola"))
            try context.save()
            #expect(!opensReadWrite(url))
            // A container made again for it goes too, and leaves the document open for it.
            weakAgain = context.container
            #expect(weakAgain == nil)
            context.insert(Card(front: "adiós"))
            try context.save()
            weakContext = context
        }
        #expect(weakContext == nil)
        #expect(opensReadWrite(url))
        let saved = try ModelContext(
            try ModelContainer(
                for: Card.self, Deck.self, configurations: Self.configuration(url, allowsSave: false))
        ).fetchCount(FetchDescriptor<Card>())
        #expect(saved == 2)
    }

    @Test("A context of a temporary container is freed with it, and the document closes")
    func contextAndContainerAreFreed() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        weak var weakContainer: ModelContainer?
        weak var weakContext: ModelContext?
        do {
            let context = ModelContext(
                try ModelContainer(for: Card.self, Deck.self, configurations: Self.configuration(url)))
            context.insert(Card(front: "hola"))
            try context.save()
            _ = try context.fetch(FetchDescriptor<Card>())
            weakContainer = context.container
            weakContext = context
        }
        #expect(weakContainer == nil)
        #expect(weakContext == nil)
        #expect(opensReadWrite(url))
    }
}
