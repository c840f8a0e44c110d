import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// Background work with models: an actor with a context of its own, on a queue of its own.
actor CardImporter: ModelActor {
    nonisolated let modelContainer: ModelContainer
    nonisolated let modelExecutor: any ModelExecutor

    init(modelContainer: ModelContainer) {
        self.modelContainer = modelContainer
        modelExecutor = DefaultSerialModelExecutor(modelContext: ModelContext(modelContainer))
    }

    /// Inserts a deck of `count` cards and saves; the deck's id goes back, never the deck.
    func importDeck(_ title: String, count: Int) throws -> PersistentIdentifier {
        let deck = Flash.Deck(title: title)
        modelContext.insert(deck)
        for n in 0..<count {
            let card = Flash.Card(front: "\(title) \(n)")
            card.deck = deck
            modelContext.insert(card)
        }
        try modelContext.save()
        return deck.persistentModelID
    }

    func cardCount(ofDeck id: PersistentIdentifier) -> Int? {
        self[id, as: Flash.Deck.self]?.cards.count
    }

    func isDeck(_ id: PersistentIdentifier) -> Bool { self[id, as: Flash.Deck.self] != nil }
    func isCard(_ id: PersistentIdentifier) -> Bool { self[id, as: Flash.Card.self] != nil }
}

@Suite("Model actors: background contexts on queues of their own", .timed)
struct ModelActorTests {
    func makeContainer(_ directory: ScratchDirectory) throws -> ModelContainer {
        try ModelContainer(
            for: Flash.Card.self, Flash.Deck.self,
            configurations: ModelConfiguration(url: directory.appending("cards.deck")))
    }

    @Test("What an actor saves, the main context fetches through the identifier it hands back")
    @MainActor func actorSavesMainContextReads() async throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        let importer = CardImporter(modelContainer: container)
        let id = try await importer.importDeck("Spanish", count: 20)
        let deck = try #require(try container.mainContext.model(for: id) as? Flash.Deck)
        #expect(deck.title == "Spanish")
        #expect(deck.cards.count == 20)
        #expect(try container.mainContext.fetchCount(FetchDescriptor<Flash.Card>()) == 20)
    }

    @Test("An actor's work runs off the main thread")
    func runsOnItsOwnQueue() async throws {
        let directory = try ScratchDirectory()
        let importer = CardImporter(modelContainer: try makeContainer(directory))
        let onMain = await importer.isMainThread()
        #expect(!onMain)
    }

    @Test("The subscript finds a model of the right type, and nil for another type or a missing record")
    func subscriptLooksUpByIdentifier() async throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        let importer = CardImporter(modelContainer: container)
        let id = try await importer.importDeck("French", count: 3)
        #expect(await importer.cardCount(ofDeck: id) == 3)
        #expect(await importer.isDeck(id))
        #expect(await !importer.isCard(id))
        let missing = PersistentIdentifier(entityName: "Deck", id: UUID())
        #expect(await !importer.isDeck(missing))
    }

    @Test("Actors saving at once each land whole; their writes queue for the one writer")
    func actorsWriteConcurrently() async throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        let ids = try await withThrowingTaskGroup(of: PersistentIdentifier.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    let importer = CardImporter(modelContainer: container)
                    return try await importer.importDeck("deck \(worker)", count: 50)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(ids).count == 4)
        let context = ModelContext(container)
        #expect(try context.fetchCount(FetchDescriptor<Flash.Card>()) == 200)
        for id in ids {
            let deck = try #require(try context.model(for: id) as? Flash.Deck)
            #expect(deck.cards.count == 50)
        }
    }
}

extension CardImporter {
    func isMainThread() -> Bool { Thread.isMainThread }
}
