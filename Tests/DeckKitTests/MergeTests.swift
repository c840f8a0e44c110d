import DeckKit
import DeckTestTiming
import Foundation
import Observation
import Testing

/// A model actor that runs whatever it is given on its own context.
actor MergeWorker: ModelActor {
    nonisolated let modelContainer: ModelContainer
    nonisolated let modelExecutor: any ModelExecutor

    init(modelContainer: ModelContainer) {
        self.modelContainer = modelContainer
        modelExecutor = DefaultSerialModelExecutor(modelContext: ModelContext(modelContainer))
    }

    func perform<T: Sendable>(_ body: @Sendable (ModelContext) throws -> T) throws -> T {
        try body(modelContext)
    }

    /// Models the actor keeps between calls.
    private var kept: [Flash.Card] = []

    func keep(_ front: String) throws {
        kept.append(try card(front, in: modelContext))
    }

    /// The kept cards' backs, read after a lookup by identifier (an operation of the context).
    func keptBacks() throws -> [String] {
        for card in kept { _ = self[card.persistentModelID, as: Flash.Card.self] }
        return kept.map(\.back)
    }
}

/// The card of `context` whose front is `front`.
func card(_ front: String, in context: ModelContext) throws -> Flash.Card {
    let found = try context.fetch(FetchDescriptor<Flash.Card>(predicate: #Predicate { $0.front == front }))
    return try #require(found.first, "no card \(front)")
}

/// The deck of `context` whose title is `title`.
func deck(_ title: String, in context: ModelContext) throws -> Flash.Deck {
    let found = try context.fetch(FetchDescriptor<Flash.Deck>(predicate: #Predicate { $0.title == title }))
    return try #require(found.first, "no deck \(title)")
}

/// A context's models follow what other contexts save: values, relationships, deletions.
@Suite("Merging other contexts' saves into the models a context holds", .timed)
struct MergeTests {
    func makeContainer(_ directory: ScratchDirectory, allowsSave: Bool = true) throws -> ModelContainer {
        try ModelContainer(
            for: Flash.Card.self, Flash.Deck.self,
            configurations: ModelConfiguration(url: directory.appending("cards.deck"), allowsSave: allowsSave)
        )
    }

    /// Spanish (hola, adiós, gracias) and French (no cards), saved by a context of their own.
    func addDecks(_ container: ModelContainer) throws {
        let context = ModelContext(container)
        let spanish = Flash.Deck(title: "Spanish")
        context.insert(spanish)
        context.insert(Flash.Deck(title: "French"))
        for front in ["hola", "adiós", "gracias"] {
            let card = Flash.Card(front: front)
            card.deck = spanish
        }
        try context.save()
    }

    /// Waits on the main actor, which the main context's merge needs, until `condition` holds, or
    /// ten minutes (a limit that only ends a test whose merge never comes; see AutosaveTests).
    @MainActor func waitUntil(_ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(600)
        while try !condition(), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test("A copy merged into the document reaches the models the main context holds, as a save does")
    @MainActor func mergedCopyReachesHeldModels() async throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        try addDecks(container)
        let main = container.mainContext
        let spanish = try deck("Spanish", in: main)
        let hola = try card("hola", in: main)
        let gracias = try card("gracias", in: main)
        // A copy of the document, edited elsewhere (the container has it open: the copy is taken
        // from its committed store with the package at rest in between).
        let copyURL = directory.appending("copy.deck")
        let archive = directory.appending("copy.zip")
        try await DeckDocument.export(at: directory.appending("cards.deck"), to: archive)
        _ = try await DeckDocument.importArchive(at: archive, to: copyURL)
        // The copy both are made from: given as the ancestor, it changes nothing in the result
        // (the copies are versioned since they parted).
        let ancestorURL = directory.appending("ancestor.deck")
        _ = try await DeckDocument.importArchive(at: archive, to: ancestorURL)
        let copy = try ModelContainer(
            for: Flash.Card.self, Flash.Deck.self, configurations: ModelConfiguration(url: copyURL))
        let other = ModelContext(copy)
        let otherHola = try card("hola", in: other)
        otherHola.back = "hello"
        other.delete(try card("gracias", in: other))
        let new = Flash.Card(front: "buenos días")
        new.deck = try deck("Spanish", in: other)
        try other.save()
        try copy.store.close()

        let report = try container.merge(from: copyURL, ancestor: ancestorURL)
        #expect(report.insertedRecords == 1 && report.deletedRecords == 1 && report.changedCells >= 1)
        #expect(report.conflicts.isEmpty && report.originDifferences == 0)
        try await waitUntil { hola.back == "hello" && gracias.isDeleted }
        #expect(hola.back == "hello")
        #expect(gracias.isDeleted)
        let fetched = try main.fetch(FetchDescriptor<Flash.Card>(sortBy: [SortDescriptor(\.front)]))
        #expect(fetched.map(\.front) == ["adiós", "buenos días", "hola"])
        #expect(Set(spanish.cards.map(\.front)) == ["hola", "adiós", "buenos días"])
    }

    @Test(
        "An actor's save reaches the models the main context holds: values, both sides, deletions, new records"
    )
    @MainActor func actorSaveReachesHeldModels() async throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        try addDecks(container)
        let main = container.mainContext
        let spanish = try deck("Spanish", in: main)
        let french = try deck("French", in: main)
        let hola = try card("hola", in: main)
        let adios = try card("adiós", in: main)
        let gracias = try card("gracias", in: main)
        // Loaded, both sides.
        #expect(Set(spanish.cards.map(\.front)) == ["hola", "adiós", "gracias"])
        #expect(french.cards.isEmpty)
        #expect(adios.deck === spanish)

        let worker = MergeWorker(modelContainer: container)
        try await worker.perform { context in
            try card("hola", in: context).back = "hello"
            try card("adiós", in: context).deck = try deck("French", in: context)
            context.delete(try card("gracias", in: context))
            let new = Flash.Card(front: "buenos días")
            new.deck = try deck("Spanish", in: context)
            try context.save()
        }

        // A fetch returns the held instance, with the saved values.
        let fetched = try main.fetch(FetchDescriptor<Flash.Card>(sortBy: [SortDescriptor(\.front)]))
        #expect(fetched.map(\.front) == ["adiós", "buenos días", "hola"])
        #expect(fetched.last === hola)
        #expect(hola.back == "hello")
        // The moved card, from both sides.
        #expect(adios.deck === french)
        #expect(french.cards.map(\.front) == ["adiós"])
        #expect(french.cards.first === adios)
        // The deleted card is deleted here and out of its deck; the new one is in it.
        #expect(gracias.isDeleted)
        #expect(gracias.modelContext == nil)
        #expect(Set(spanish.cards.map(\.front)) == ["hola", "buenos días"])
        #expect(spanish.cards.contains { $0 === hola })
        #expect(fetched.contains { $0 === spanish.cards.first { $0.front == "buenos días" } })
        #expect(!main.hasChanges)
    }

    @Test("The main context applies another context's save on the main actor by itself")
    @MainActor func mainContextMergesWithoutBeingAsked() async throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        try addDecks(container)
        let hola = try card("hola", in: container.mainContext)
        let spanish = try deck("Spanish", in: container.mainContext)
        #expect(spanish.cards.count == 3)
        let worker = MergeWorker(modelContainer: container)
        try await worker.perform { context in
            try card("hola", in: context).back = "hello"
            let si = Flash.Card(front: "sí")
            context.insert(si)
            si.deck = try deck("Spanish", in: context)
            try context.save()
        }
        // No call on the main context: only reads of its models, while the main actor is free.
        try await waitUntil { hola.back == "hello" && spanish.cards.count == 4 }
        #expect(hola.back == "hello")
        #expect(spanish.cards.count == 4)
    }

    @Test("Observers of a held model hear of another context's save of what they read, and only that")
    @MainActor func observersHearOfMergedChanges() async throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        try addDecks(container)
        let main = container.mainContext
        let hola = try card("hola", in: main)
        let spanish = try deck("Spanish", in: main)
        let french = try deck("French", in: main)
        let worker = MergeWorker(modelContainer: container)

        let back = ObservedFlag()
        withObservationTracking {
            _ = hola.back
        } onChange: {
            back.set()
        }
        // Another property of the same card changes: no one who read only `back` hears of it.
        try await worker.perform { context in
            try card("hola", in: context).front = "¡hola!"
            try context.save()
        }
        _ = try main.fetchCount(FetchDescriptor<Flash.Card>())
        #expect(hola.front == "¡hola!")
        #expect(!back.isSet)
        try await worker.perform { context in
            try card("¡hola!", in: context).back = "hello"
            try context.save()
        }
        _ = try main.fetchCount(FetchDescriptor<Flash.Card>())
        #expect(back.isSet)
        #expect(hola.back == "hello")

        // Relationships: the card's deck, and the cards of both decks.
        let deckOfCard = ObservedFlag()
        let frenchCards = ObservedFlag()
        let spanishCards = ObservedFlag()
        let title = ObservedFlag()
        withObservationTracking {
            _ = hola.deck
        } onChange: {
            deckOfCard.set()
        }
        withObservationTracking {
            _ = french.cards
        } onChange: {
            frenchCards.set()
        }
        withObservationTracking {
            _ = spanish.cards
        } onChange: {
            spanishCards.set()
        }
        withObservationTracking {
            _ = spanish.title
        } onChange: {
            title.set()
        }
        try await worker.perform { context in
            try card("¡hola!", in: context).deck = try deck("French", in: context)
            try context.save()
        }
        _ = try main.fetchCount(FetchDescriptor<Flash.Card>())
        #expect(deckOfCard.isSet && frenchCards.isSet && spanishCards.isSet)
        #expect(!title.isSet)
        #expect(hola.deck === french)
        #expect(french.cards.map(\.front) == ["¡hola!"])
        #expect(spanish.cards.count == 2)
    }

    @Test("A local unsaved change survives another context's save of the same property, and wins at its save")
    func localChangeWins() throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        try addDecks(container)
        // Two plain contexts on one thread.
        let first = ModelContext(container)
        let second = ModelContext(container)
        let mine = try card("hola", in: first)
        mine.back = "mine"
        let theirs = try card("hola", in: second)
        theirs.back = "theirs"
        theirs.reviews = 5
        try second.save()

        #expect(
            try first.fetch(FetchDescriptor<Flash.Card>(predicate: #Predicate { $0.front == "hola" })) == [
                mine
            ])
        #expect(mine.back == "mine")
        #expect(mine.reviews == 5)
        #expect(first.hasChanges)
        try first.save()
        let saved = try card("hola", in: ModelContext(container))
        #expect(saved.back == "mine")
        #expect(saved.reviews == 5)
        // The second context now hears of the first's save.
        _ = try second.fetchCount(FetchDescriptor<Flash.Card>())
        #expect(theirs.back == "mine")
    }

    @Test("Links another context added to a to-many relationship survive this context's save of it")
    func toManyChangesMergeByLink() throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        try addDecks(container)
        let first = ModelContext(container)
        let second = ModelContext(container)
        // The first context loads Spanish's cards, then relates a new card (which changes
        // Spanish's cards as the inverse) and takes adiós out, without saving yet.
        let spanish = try deck("Spanish", in: first)
        #expect(Set(spanish.cards.map(\.front)) == ["hola", "adiós", "gracias"])
        let mine = Flash.Card(front: "buenos días")
        mine.deck = spanish
        spanish.cards.removeAll { $0.front == "adiós" }
        // Meanwhile the second context moves gracias to French and adds a card of its own.
        let theirs = Flash.Card(front: "por favor")
        theirs.deck = try deck("Spanish", in: second)
        try card("gracias", in: second).deck = try deck("French", in: second)
        try second.save()
        // The first context's save adds its card and removes adiós: it keeps the other context's
        // links, rather than writing back the list it loaded.
        try first.save()
        let check = ModelContext(container)
        #expect(
            Set(try deck("Spanish", in: check).cards.map(\.front)) == ["hola", "buenos días", "por favor"])
        #expect(Set(try deck("French", in: check).cards.map(\.front)) == ["gracias"])
        #expect(try card("adiós", in: check).deck == nil)
    }

    @Test("A model another context deleted is deleted here, its unsaved changes with it")
    func deletedElsewhere() throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        try addDecks(container)
        let first = ModelContext(container)
        let second = ModelContext(container)
        let hola = try card("hola", in: first)
        let spanish = try deck("Spanish", in: first)
        #expect(spanish.cards.count == 3)
        hola.back = "unsaved"
        second.delete(try card("hola", in: second))
        try second.save()

        try first.save()
        #expect(hola.isDeleted)
        #expect(!first.hasChanges)
        #expect(first.registeredModel(for: hola.persistentModelID) as Flash.Card? == nil)
        #expect(!spanish.cards.contains { $0 === hola })
        #expect(try first.fetchCount(FetchDescriptor<Flash.Card>()) == 2)
        // A cascade elsewhere deletes the deck's cards here too.
        let adios = try card("adiós", in: first)
        second.delete(try deck("Spanish", in: second))
        try second.save()
        _ = try first.fetchCount(FetchDescriptor<Flash.Deck>())
        #expect(spanish.isDeleted && adios.isDeleted)
    }

    @Test("A delete by predicate in another context deletes the models held here")
    func deletedByPredicateElsewhere() throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        try addDecks(container)
        let first = ModelContext(container)
        let gracias = try card("gracias", in: first)
        let spanish = try deck("Spanish", in: first)
        #expect(spanish.cards.count == 3)
        try ModelContext(container).delete(
            model: Flash.Card.self, where: #Predicate { $0.front == "gracias" })
        #expect(try first.fetchCount(FetchDescriptor<Flash.Card>()) == 2)
        #expect(gracias.isDeleted)
        #expect(Set(spanish.cards.map(\.front)) == ["hola", "adiós"])
    }

    @Test("An actor's context sees the main context's save in the models it keeps")
    @MainActor func actorSeesMainContextSave() async throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        try addDecks(container)
        let worker = MergeWorker(modelContainer: container)
        try await worker.keep("hola")
        try await worker.keep("adiós")
        #expect(try await worker.keptBacks() == ["", ""])
        try card("adiós", in: container.mainContext).back = "goodbye"
        try container.mainContext.save()
        #expect(try await worker.keptBacks() == ["", "goodbye"])
    }

    @Test("A new record joins the loaded relationships of the model it relates to, in an unsaved one too")
    func insertedElsewhereJoinsLoadedRelationships() throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        try addDecks(container)
        let first = ModelContext(container)
        let second = ModelContext(container)
        let spanish = try deck("Spanish", in: first)
        let french = try deck("French", in: first)
        #expect(spanish.cards.count == 3 && french.cards.isEmpty)
        let merci = Flash.Card(front: "merci")
        second.insert(merci)
        merci.deck = try deck("French", in: second)
        try second.save()
        #expect(try first.model(for: merci.persistentModelID) is Flash.Card)
        #expect(french.cards.map(\.front) == ["merci"])
        #expect(spanish.cards.count == 3)
        #expect(french.cards.first?.deck === french)
    }

    @Test("An external value another context saves is read again")
    func externalValues() throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        try addDecks(container)
        let first = ModelContext(container)
        let second = ModelContext(container)
        let hola = try card("hola", in: first)
        let adios = try card("adiós", in: first)
        let big = sampleBytes(100_000, seed: 1)
        let other = sampleBytes(100_000, seed: 2)
        try card("hola", in: second).image = big
        try card("adiós", in: second).image = big
        try second.save()
        _ = try first.fetchCount(FetchDescriptor<Flash.Card>())
        // Read after the merge (not loaded before) and loaded before it.
        #expect(hola.image == big)
        let image = ObservedFlag()
        withObservationTracking {
            _ = adios.image
        } onChange: {
            image.set()
        }
        #expect(adios.image == big)
        try card("adiós", in: second).image = other
        try second.save()
        _ = try first.fetchCount(FetchDescriptor<Flash.Card>())
        #expect(image.isSet)
        #expect(adios.image == other)
        // A change of another property leaves the value as it is.
        try card("adiós", in: second).back = "goodbye"
        try second.save()
        _ = try first.fetchCount(FetchDescriptor<Flash.Card>())
        #expect(adios.back == "goodbye" && adios.image == other)
        try card("adiós", in: second).image = nil
        try second.save()
        _ = try first.fetchCount(FetchDescriptor<Flash.Card>())
        #expect(adios.image == nil)
    }

    @Test("A context that goes away is not kept by the store and hears nothing more")
    func contextThatGoesAway() throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        try addDecks(container)
        weak var gone: ModelContext?
        weak var goneCard: Flash.Card?
        do {
            let context = ModelContext(container)
            let held = try card("hola", in: context)
            gone = context
            goneCard = held
        }
        #expect(gone == nil)
        #expect(goneCard == nil)
        let writer = ModelContext(container)
        for n in 0..<20 {
            try card("hola", in: writer).reviews = n
            try writer.save()
        }
        #expect(try card("hola", in: ModelContext(container)).reviews == 19)
    }

    @Test(
        "A burst of saves is applied at once, however many there are",
        arguments: [5, 80])
    func burstOfSaves(saves: Int) throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        try addDecks(container)
        let setup = ModelContext(container)
        let spanish = try deck("Spanish", in: setup)
        for n in 0..<200 { Flash.Card(front: "card \(n)").deck = spanish }
        try setup.save()

        let reader = ModelContext(container)
        let held = try reader.fetch(FetchDescriptor<Flash.Card>())
        let heldDeck = try deck("Spanish", in: reader)
        #expect(heldDeck.cards.count == 203)
        let observed = try #require(held.last)
        let flag = ObservedFlag()
        withObservationTracking {
            _ = observed.reviews
        } onChange: {
            flag.set()
        }
        // Record-API writes reach contexts as saves do; 80 saves of 200 records pass the point
        // where a context stops listing them and reads every model again.
        let writer = ModelContext(container)
        for n in 1...saves {
            try container.store.write { tx in
                _ = try tx.update(RecordQuery("Card"), ["reviews": .integer(Int64(n))])
            }
        }
        let hola = try card("hola", in: writer)
        writer.delete(hola)
        try writer.save()
        _ = try reader.fetchCount(FetchDescriptor<Flash.Card>())
        #expect(held.allSatisfy { $0.reviews == saves || $0.isDeleted })
        #expect(held.filter(\.isDeleted).map(\.front) == ["hola"])
        #expect(heldDeck.cards.count == 202)
        #expect(flag.isSet)
    }

    /// A document holding ``addDecks(_:)``'s decks, and a context of a read-only container of it.
    func readOnlyDecks() throws -> (ScratchDirectory, ModelContext) {
        let directory = try ScratchDirectory()
        do {
            let container = try makeContainer(directory)
            try addDecks(container)
        }
        return (directory, ModelContext(try makeContainer(directory, allowsSave: false)))
    }

    @Test("A read-only container sees another process's commits in the models it holds")
    func anotherProcessWrites() throws {
        let (directory, context) = try readOnlyDecks()
        let hola = try card("hola", in: context)
        let spanish = try deck("Spanish", in: context)
        #expect(spanish.cards.count == 3)
        // A writer of its own (the read-only container holds no lock), as another process is.
        let store = try PackageStore.open(at: directory.appending("cards.deck"))
        try store.write { tx in
            let ids = try tx.fetchIDs(
                RecordQuery("Card", where: .property("front").equals(.value(.string("hola")))))
            for id in ids { try tx.update("Card", id: id, ["back": .string("hello")]) }
            let deck = try tx.fetchIDs(
                RecordQuery("Deck", where: .property("title").equals(.value(.string("Spanish")))))
            _ = try tx.insert("Card", ["front": .string("sí"), "deck": .reference(deck[0])])
        }
        try store.close()
        #expect(
            try context.fetch(FetchDescriptor<Flash.Card>(predicate: #Predicate { $0.front == "hola" })) == [
                hola
            ])
        #expect(hola.back == "hello")
        #expect(spanish.cards.count == 4)
    }

    @Test(
        "A read-only container's fetch with unsaved changes says why it cannot include them, and how to fetch"
    )
    func readOnlyFetchWithChanges() throws {
        let (_, context) = try readOnlyDecks()
        let hola = try card("hola", in: context)
        hola.back = "changed in memory"
        #expect {
            try context.fetch(FetchDescriptor<Flash.Card>())
        } throws: { error in
            guard case .misuse(let message) = error as? DeckError else { return false }
            return message.contains("is open read-only (allowsSave is false, or the container's access")
                && message.contains("includePendingChanges = false")
        }
        var descriptor = FetchDescriptor<Flash.Card>(predicate: #Predicate { $0.front == "hola" })
        descriptor.includePendingChanges = false
        #expect(try context.fetch(descriptor) == [hola])
        #expect(hola.back == "changed in memory")
        context.rollback()
        #expect(try context.fetchCount(FetchDescriptor<Flash.Card>()) == 3)
        #expect(hola.back == "")
    }

    @Test("Copies that each add a model with the same unique value merge into one record, as the models see")
    @MainActor func copiesThatAddTheSameUniqueValueMergeIntoOneRecord() async throws {
        typealias Note = SaveGraphTests.Note
        typealias Tag = SaveGraphTests.Tag
        let directory = try ScratchDirectory()
        let url = directory.appending("notes.deck")
        let container = try ModelContainer(
            for: Note.self, Tag.self, SaveGraphTests.Pin.self, configurations: ModelConfiguration(url: url))
        let main = container.mainContext
        let shopping = Note("shopping")
        let chores = Note("chores")
        main.insert(shopping)
        main.insert(chores)
        try main.save()
        let archive = directory.appending("copy.zip")
        try await DeckDocument.export(at: url, to: archive)
        let copyURL = directory.appending("copy.deck")
        _ = try await DeckDocument.importArchive(at: archive, to: copyURL)

        // Here: a tag "home" on the shopping note. Its identifier, made in memory, is replaced at
        // the save by the one the store makes from the name (spec 6.10).
        let home = Tag("home")
        main.insert(home)
        shopping.tags.append(home)
        let unsaved = home.persistentModelID
        try main.save()
        #expect(home.persistentModelID != unsaved)
        #expect(try main.model(for: home.persistentModelID) === home)
        // There: another tag "home", on the chores note.
        let copy = try ModelContainer(
            for: Note.self, Tag.self, SaveGraphTests.Pin.self,
            configurations: ModelConfiguration(url: copyURL))
        let other = ModelContext(copy)
        let otherChores = try #require(
            try other.fetch(FetchDescriptor<Note>(predicate: #Predicate { $0.title == "chores" })).first)
        let otherHome = Tag("home")
        other.insert(otherHome)
        otherChores.tags.append(otherHome)
        try other.save()
        #expect(otherHome.persistentModelID == home.persistentModelID)
        try copy.store.close()

        let report = try container.merge(from: copyURL)
        #expect(report.insertedRecords == 0 && report.conflicts.isEmpty)
        let tags = try main.fetch(FetchDescriptor<Tag>())
        #expect(tags.count == 1 && tags.first === home)
        try await waitUntil { Set(home.notes.map(\.title)) == ["shopping", "chores"] }
        #expect(Set(home.notes.map(\.title)) == ["shopping", "chores"])
        #expect(chores.tags.map(\.name) == ["home"])
    }

    final class Label: ModelObject {
        @Attribute(.unique) var code: String? = nil
        required init() {}
    }

    @Test(
        "A model whose unique values are null keeps the identifier it was made with; one with them gets the store's"
    )
    @MainActor func onlyAModelWithItsUniqueValuesTakesTheStoresIdentifier() throws {
        let directory = try ScratchDirectory()
        let container = try ModelContainer(
            for: Label.self, configurations: ModelConfiguration(url: directory.appending("labels.deck")))
        let context = container.mainContext
        let blank = Label()
        let coded = Label()
        coded.code = "A1"
        context.insert(blank)
        context.insert(coded)
        let (blankID, codedID) = (blank.persistentModelID, coded.persistentModelID)
        try context.save()
        #expect(blank.persistentModelID == blankID)
        #expect(coded.persistentModelID != codedID)
        #expect(try context.model(for: coded.persistentModelID) === coded)
    }
}
