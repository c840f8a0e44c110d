import DeckKit
import DeckTestTiming
import Foundation
import Observation
import Testing

/// A reference that does not keep its object: whether a model was freed.
final class WeakReference {
    weak var object: AnyObject?
    init(_ object: AnyObject?) { self.object = object }
    var isFreed: Bool { object == nil }
}

/// How long models live: related models hold each other by identity, so models that read each
/// other go as soon as nothing else holds them, while their context lives or after it; a model
/// whose context is gone reads what it loaded, and reading what it had not loaded stops the
/// program with a message naming it.
@Suite("Model lifetimes", .timed)
struct ModelLifetimeTests {
    typealias Card = Flash.Card
    typealias Deck = Flash.Deck

    /// The image of card `front`: 100,000 bytes, a blob file.
    static func image(_ front: String) -> Data {
        let seed = UInt8(truncatingIfNeeded: front.unicodeScalars.reduce(0) { $0 &+ Int($1.value) })
        return Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed })
    }

    /// A document in `directory` (or in memory) with deck Spanish (hola and adiós, each with an
    /// image in a blob file, and gracias) and deck French (merci), and its container.
    static func makeDecks(_ directory: ScratchDirectory?) throws -> ModelContainer {
        let configuration =
            directory.map { ModelConfiguration(url: $0.appending("decks.deck")) }
            ?? ModelConfiguration(isStoredInMemoryOnly: true)
        let container = try ModelContainer(for: Deck.self, configurations: configuration)
        let context = ModelContext(container)
        for (title, fronts) in [("Spanish", ["hola", "adiós", "gracias"]), ("French", ["merci"])] {
            let deck = Deck(title: title)
            context.insert(deck)
            for front in fronts {
                let card = Card(front: front)
                if front != "gracias" && front != "merci" { card.image = image(front) }
                card.deck = deck
            }
        }
        try context.save()
        return container
    }

    /// The deck `title`, fetched in `context`.
    static func deck(_ title: String, in context: ModelContext) throws -> Deck {
        try #require(
            try context.fetch(FetchDescriptor<Deck>(predicate: #Predicate { $0.title == title })).first)
    }

    /// The card `front`, fetched in `context`.
    static func card(_ front: String, in context: ModelContext) throws -> Card {
        try #require(
            try context.fetch(FetchDescriptor<Card>(predicate: #Predicate { $0.front == front })).first)
    }

    @Test("When a context goes away, models that loaded each other (card.deck, deck.cards) are freed")
    func contextGoneFreesRelatedModels() throws {
        let directory = try ScratchDirectory()
        let container = try Self.makeDecks(directory)
        // In a function of its own, so that no strong reference outlives it.
        func readBothSides() throws -> [WeakReference] {
            let context = ModelContext(container)
            let card = try Self.card("hola", in: context)
            let deck = try #require(card.deck)
            #expect(deck.cards.count == 3)
            let french = try Self.deck("French", in: context)
            #expect(french.cards.first?.deck === french)
            let objects: [AnyObject] = [card, deck, french, context] + deck.cards + french.cards
            return objects.map(WeakReference.init)
        }
        let references = try readBothSides()
        #expect(references.count == 8)
        #expect(references.allSatisfy { $0.isFreed })
        // The document is the same for the next context.
        let context = ModelContext(container)
        #expect(try Self.card("hola", in: context).deck?.cards.count == 3)
    }

    @Test(
        "A model still held after its context is gone reads what it loaded: its attributes and the deck it read"
    )
    func heldModelReadsWhatItLoaded() throws {
        let directory = try ScratchDirectory()
        let container = try Self.makeDecks(directory)
        func fetch() throws -> (adios: Card, context: WeakReference) {
            let context = ModelContext(container)
            let adios = try Self.card("adiós", in: context)
            #expect(adios.deck?.cards.count == 3)
            return (adios, WeakReference(context))
        }
        let (adios, context) = try fetch()
        #expect(context.isFreed)
        #expect(adios.modelContext == nil)
        #expect(adios.front == "adiós")
        #expect(adios.deck?.title == "Spanish")
        #expect(adios.deck?.modelContext == nil)
    }

    @Test(
        "While the context lives, a record deleted elsewhere leaves a relationship, and a missing blob file reads as nil"
    )
    func loadFailuresWhileTheContextLives() throws {
        let directory = try ScratchDirectory()
        let container = try Self.makeDecks(directory)
        let context = ModelContext(container)
        let (spanish, hola, adios, merci) = (
            try Self.deck("Spanish", in: context), try Self.card("hola", in: context),
            try Self.card("adiós", in: context), try Self.card("merci", in: context)
        )
        // Another context deletes gracias, and French with merci (a cascade).
        let other = ModelContext(container)
        other.delete(try Self.card("gracias", in: other))
        other.delete(try #require(try Self.card("merci", in: other).deck))
        try other.save()
        #expect(Set(spanish.cards.map(\.front)) == ["hola", "adiós"])
        #expect(merci.deck == nil)
        // hola's blob file goes.
        let blobs = container.store.url.appendingPathComponent("blobs")
        let files =
            FileManager.default.enumerator(at: blobs, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL } ?? []
        let holaFile = try #require(files.first { (try? Data(contentsOf: $0)) == Self.image("hola") })
        try FileManager.default.removeItem(at: holaFile)
        #expect(hola.image == nil)
        #expect(adios.image == Self.image("adiós"))
        #expect(hola.front == "hola")
    }

    /// Reads `property` of the card hola (or, for "cards", of the deck French) after their
    /// context went away, having loaded neither: the program stops.
    static func readAfterTheContextWent(_ property: String) throws {
        // In memory: the container removes the document as it goes, which a program that stops
        // could not do.
        let container = try ModelLifetimeTests.makeDecks(nil)
        var context: ModelContext? = ModelContext(container)
        let card = try #require(try context.map { try ModelLifetimeTests.card("hola", in: $0) })
        let deck = try #require(try context.map { try ModelLifetimeTests.deck("French", in: $0) })
        context = nil
        // What was loaded stays readable.
        #expect(card.front == "hola")
        switch property {
        case "deck": _ = card.deck
        case "cards": _ = deck.cards
        default: _ = card.image
        }
    }

    @Test("After the context is gone, reading a to-one not loaded stops the program, saying why")
    func toOneAfterTheContextWentStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            try ModelLifetimeTests.readAfterTheContextWent("deck")
        }
        let error = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(error.contains("Card.deck was read after its ModelContext went away"))
    }

    @Test("After the context is gone, reading a to-many stops the program, saying why")
    func toManyAfterTheContextWentStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            try ModelLifetimeTests.readAfterTheContextWent("cards")
        }
        let error = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(error.contains("Deck.cards was read after its ModelContext went away"))
    }

    @Test("After the context is gone, reading a blob not loaded stops the program, saying why")
    func blobAfterTheContextWentStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            try ModelLifetimeTests.readAfterTheContextWent("image")
        }
        let error = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(error.contains("Card.image was read after its ModelContext went away"))
    }

    @Test("Inserting a model of another context stops the program, saying how to reach its record")
    func insertingAModelOfAnotherContextStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try ModelLifetimeTests.makeDecks(nil)
            let first = ModelContext(container)
            let second = ModelContext(container)
            let card = try ModelLifetimeTests.card("hola", in: first)
            card.back = "hello"
            // Ignored before: the change stayed with the first context and the second saved nothing.
            second.insert(card)
        }
        let error = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(error.contains("a Card of another context (still held there) was inserted into a context"))
        #expect(error.contains("context.model(for: model.persistentModelID)"))
    }

    @Test("Inserting a saved model of a context that has gone stops the program: its changes cannot be saved")
    func insertingAModelOfAGoneContextStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try ModelLifetimeTests.makeDecks(nil)
            var first: ModelContext? = ModelContext(container)
            let card = try #require(try first.map { try ModelLifetimeTests.card("hola", in: $0) })
            first = nil
            card.back = "edited while its context was gone"
            // Ignored before: the edit was lost without a word.
            ModelContext(container).insert(card)
        }
        let error = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(error.contains("a Card of a context that has gone (its changes since then cannot be saved)"))
    }

    @Test("A model inserted into a context that went away unsaved is taken by the next as a new model")
    func anUnsavedModelOfAGoneContextIsInsertedAgain() throws {
        let container = try ModelLifetimeTests.makeDecks(nil)
        var first: ModelContext? = ModelContext(container)
        let deck = Deck(title: "German")
        let card = Card(front: "danke")
        card.deck = deck
        first?.insert(deck)
        #expect(first?.hasChanges == true)
        first = nil
        let second = ModelContext(container)
        second.insert(deck)
        #expect(second.insertedModelsArray.count == 2)
        try second.save()
        let check = ModelContext(container)
        let saved = try ModelLifetimeTests.card("danke", in: check)
        #expect(saved.deck?.title == "German")
    }

    @Test(
        "A relationship to a model of another document is refused at save, writing nothing to either",
        arguments: [false, true])
    func relationshipsAcrossDocumentsAreRefused(loadingTheDecksCards: Bool) throws {
        let first = try ModelLifetimeTests.makeDecks(nil)
        let second = try ModelLifetimeTests.makeDecks(nil)
        let here = ModelContext(first)
        let there = ModelContext(second)
        let hola = try ModelLifetimeTests.card("hola", in: here)
        let french = try ModelLifetimeTests.deck("French", in: there)
        // Both are saved models, each with a record id of its own document: writing one's id into
        // the other document would name some other record there.
        if loadingTheDecksCards { #expect(french.cards.count == 1) }
        hola.deck = french
        // Unless the deck's cards were loaded, only the card's context has a change to save.
        #expect(there.hasChanges == loadingTheDecksCards)
        for context in [here, there] where context.hasChanges {
            #expect {
                try context.save()
            } throws: { error in
                "\(error)".contains("that is not in this context (relate models of one context")
            }
            context.rollback()
        }
        for container in [first, second] {
            let check = ModelContext(container)
            #expect(try ModelLifetimeTests.card("hola", in: check).deck?.title == "Spanish")
            #expect(try ModelLifetimeTests.deck("French", in: check).cards.map(\.front) == ["merci"])
        }
    }

    /// The enumerations of ``enumerationStaysBounded(_:)``.
    enum Enumeration: CaseIterable, Sendable {
        /// Every card, by record, in batches of ten: a deck's cards are one batch.
        case all
        /// Every card, sorted by front, backwards (keyset paging on a sort key).
        case sorted
        /// The first card of each deck, two at a time: the deck's other cards are never in a batch,
        /// and are reached only through their deck.
        case firstOfEachDeck

        var descriptor: FetchDescriptor<Card> {
            switch self {
            case .all: FetchDescriptor<Card>()
            case .sorted: FetchDescriptor<Card>(sortBy: [SortDescriptor(\.front, order: .reverse)])
            case .firstOfEachDeck: FetchDescriptor<Card>(predicate: #Predicate { $0.reviews == 0 })
            }
        }
    }

    @Test(
        "An enumeration whose block reads both sides keeps only about a batch of models alive",
        arguments: Enumeration.allCases)
    func enumerationStaysBounded(_ enumeration: Enumeration) throws {
        let directory = try ScratchDirectory()
        let container = try ModelContainer(
            for: Deck.self, configurations: ModelConfiguration(url: directory.appending("many.deck")))
        do {
            let context = ModelContext(container)
            // Deck n holds cards n·10 to n·10 + 9, reviewed 0 to 9 times.
            for n in 0..<20 {
                let deck = Deck(title: "deck \(n)")
                context.insert(deck)
                for k in 0..<10 {
                    let card = Card(front: String(format: "card %03d", n * 10 + k))
                    card.reviews = k
                    deck.cards.append(card)
                }
            }
            try context.save()
        }
        let context = ModelContext(container)
        var references: [WeakReference] = []
        var met: [String] = []
        var mostAlive = 0
        try context.enumerate(enumeration.descriptor, batchSize: enumeration == .firstOfEachDeck ? 2 : 10) {
            card in
            met.append(card.front)
            let deck = try #require(card.deck)
            #expect(deck.cards.contains { $0 === card })
            // Through the deck to its cards and back: every model the batch reaches.
            #expect(deck.cards.allSatisfy { $0.deck === deck })
            references += ([deck] + deck.cards as [AnyObject]).map(WeakReference.init)
            mostAlive = max(
                mostAlive, Set(references.compactMap { $0.object.map(ObjectIdentifier.init) }).count)
        }
        switch enumeration {
        case .all: #expect(met == (0..<200).map { String(format: "card %03d", $0) })
        case .sorted: #expect(met == (0..<200).reversed().map { String(format: "card %03d", $0) })
        case .firstOfEachDeck: #expect(met == (0..<20).map { String(format: "card %03d", $0 * 10) })
        }
        // A batch's decks and their cards: 11 models for a batch of ten cards of one deck, 22 for
        // two cards of two decks (cards read through a deck and not kept go at once).
        #expect(mostAlive <= 22)
        #expect(references.allSatisfy { $0.isFreed })
    }

    @Test("While the context lives, related models that nothing else holds are freed; unsaved changes stay")
    func relatedModelsGoWhileTheContextLives() throws {
        let directory = try ScratchDirectory()
        let container = try Self.makeDecks(directory)
        let context = ModelContext(container)
        func readBothSides() throws -> [WeakReference] {
            let card = try Self.card("hola", in: context)
            let deck = try #require(card.deck)
            #expect(deck.cards.count == 3)
            #expect(deck.cards.allSatisfy { $0.deck === deck })
            return ([card, deck] + deck.cards as [AnyObject]).map(WeakReference.init)
        }
        let references = try readBothSides()
        #expect(references.allSatisfy { $0.isFreed })

        // A held model reads the same models while they live; an unsaved change stays, and is saved.
        let adios = try Self.card("adiós", in: context)
        let spanish = try #require(adios.deck)
        let french = try Self.deck("French", in: context)
        #expect(french.cards.count == 1)
        #expect(adios.deck === spanish)
        #expect(spanish.cards.contains { $0 === adios })
        let toldAgain = ObservedFlag()
        withObservationTracking {
            #expect(spanish.cards.count == 3)
        } onChange: {
            toldAgain.set()
        }
        adios.deck = french
        #expect(toldAgain.isSet)
        #expect(adios.deck === french)
        #expect(Set(spanish.cards.map(\.front)) == ["hola", "gracias"])
        #expect(Set(french.cards.map(\.front)) == ["merci", "adiós"])
        try context.save()
        let reader = ModelContext(container)
        #expect(try Self.card("adiós", in: reader).deck?.title == "French")
        #expect(reader.lastLoadError == nil && context.lastLoadError == nil)
    }
}
