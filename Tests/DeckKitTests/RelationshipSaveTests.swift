import DeckKit
import DeckSQLite
import DeckStore
import DeckTestTiming
import Foundation
import Testing

/// The save of relationships between models inserted together: a to-one set in one statement
/// per model, a to-many whose links all come from inserted models' to-ones not written again.
/// What is stored and the change set must be as when each side was written.
@Suite("Saving relationships of models inserted together", .timed)
struct RelationshipSaveTests {
    typealias Card = Flash.Card
    typealias Deck = Flash.Deck

    /// A deck that holds two or three cards.
    final class BoundedDeck: ModelObject {
        @Attribute var title = ""
        @Relationship(minimumModelCount: 2, maximumModelCount: 3) var cards: [BoundedCard] = []
        required init() {}
    }

    final class BoundedCard: ModelObject {
        @Attribute var front = ""
        @Relationship(inverse: \BoundedDeck.cards) var deck: BoundedDeck? = nil
        required init() {}
    }

    /// Sibling entities whose to-one relationships share the column `folder`.
    class Item: ModelObject {
        @Attribute var name = ""
        required init() {}
    }

    final class Note: Item {
        @Relationship(inverse: \Folder.notes) var folder: Folder? = nil
    }

    final class Sketch: Item {
        @Relationship(inverse: \Folder.sketches) var folder: Folder? = nil
    }

    final class Folder: ModelObject {
        @Attribute var title = ""
        @Relationship var notes: [Note] = []
        @Relationship var sketches: [Sketch] = []
        required init() {}
    }

    /// A deck whose title is unique: inserting one with a saved title updates the saved record.
    final class TitledDeck: ModelObject {
        @Attribute(.unique) var title = ""
        @Relationship var cards: [TitledCard] = []
        required init() {}
    }

    final class TitledCard: ModelObject {
        @Attribute var front = ""
        @Relationship(inverse: \TitledDeck.cards) var deck: TitledDeck? = nil
        required init() {}
    }

    /// A container of `types` on a new document in `directory`.
    static func container(_ types: any PersistentModel.Type..., in directory: ScratchDirectory) throws
        -> ModelContainer
    {
        try ModelContainer(
            for: Schema(types), configurations: [ModelConfiguration(url: directory.appending("test.deck"))])
    }

    /// The change sets of the commits made while `body` runs.
    func commits(of container: ModelContainer, during body: () throws -> Void) rethrows -> [ChangeSet] {
        let recorded = Recorded()
        let observation = container.store.observeCommits { recorded.append($0) }
        try body()
        _ = observation
        return recorded.list
    }

    final class Recorded: @unchecked Sendable {
        private let lock = NSLock()
        private var sets: [ChangeSet] = []
        func append(_ set: ChangeSet) { lock.withLock { sets.append(set) } }
        var list: [ChangeSet] { lock.withLock { sets } }
    }

    /// Each deck's card fronts, sorted, and each card's deck title, read by a new context.
    func stored(_ container: ModelContainer) throws -> (decks: [String: [String]], cards: [String: String]) {
        let context = ModelContext(container)
        var decks: [String: [String]] = [:]
        for deck in try context.fetch(FetchDescriptor<Deck>()) {
            decks[deck.title] = deck.cards.map(\.front).sorted()
        }
        var cards: [String: String] = [:]
        for card in try context.fetch(FetchDescriptor<Card>()) { cards[card.front] = card.deck?.title ?? "-" }
        return (decks, cards)
    }

    func recordID(_ model: some PersistentModel, _ container: ModelContainer) throws -> Int64 {
        let id = model.persistentModelID
        return try #require(
            try container.store.read { try $0.recordID(id.entityName, globalID: id.id) })
    }

    @Test("New decks and new cards, one card moved from one new deck to another before the save")
    func newDecksAndCards() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Card.self, Deck.self, in: directory)
        let context = ModelContext(container)
        let spanish = Deck(title: "Spanish")
        let french = Deck(title: "French")
        context.insert(spanish)
        context.insert(french)
        for front in ["hola", "adiós", "gracias"] {
            let card = Card(front: front)
            card.deck = spanish
        }
        let bonjour = Card(front: "bonjour")
        bonjour.deck = french
        let adios = try #require(spanish.cards.first { $0.front == "adiós" })
        adios.deck = french
        let loose = Card(front: "loose")
        context.insert(loose)
        let changes = try commits(of: container) { try context.save() }
        #expect(changes.count == 1)
        #expect(changes.first?.inserted["Deck"]?.count == 2)
        #expect(changes.first?.inserted["Card"]?.count == 5)
        #expect(changes.first?.updated.isEmpty == true)
        #expect(changes.first?.deleted.isEmpty == true)
        let (decks, cards) = try stored(container)
        #expect(decks == ["Spanish": ["gracias", "hola"], "French": ["adiós", "bonjour"]])
        #expect(
            cards == [
                "hola": "Spanish", "gracias": "Spanish", "adiós": "French", "bonjour": "French", "loose": "-",
            ])
    }

    @Test("A saved deck gets new cards and a saved card; a new deck takes a saved card and a new one")
    func newAndSavedTogether() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Card.self, Deck.self, in: directory)
        do {
            let context = ModelContext(container)
            let spanish = Deck(title: "Spanish")
            let french = Deck(title: "French")
            context.insert(spanish)
            context.insert(french)
            for front in ["hola", "adiós"] { Card(front: front).deck = spanish }
            Card(front: "bonjour").deck = french
            try context.save()
        }
        let context = ModelContext(container)
        let spanish = try deck("Spanish", in: context)
        let french = try deck("French", in: context)
        let bonjour = try card("bonjour", in: context)
        let adios = try card("adiós", in: context)
        let gracias = Card(front: "gracias")
        gracias.deck = spanish
        bonjour.deck = spanish
        let german = Deck(title: "German")
        context.insert(german)
        adios.deck = german
        let hallo = Card(front: "hallo")
        hallo.deck = german
        // Cards whose deck is saved but not loaded here, and a new deck of new cards only.
        let italian = Deck(title: "Italian")
        context.insert(italian)
        Card(front: "ciao").deck = italian
        let changes = try commits(of: container) { try context.save() }
        let ids = (
            spanish: try recordID(spanish, container), french: try recordID(french, container),
            bonjour: try recordID(bonjour, container), adios: try recordID(adios, container)
        )
        #expect(changes.count == 1)
        #expect(changes.first?.inserted["Deck"]?.count == 2)
        #expect(changes.first?.inserted["Card"]?.count == 3)
        #expect(
            changes.first?.updated == ["Deck": [ids.spanish, ids.french], "Card": [ids.bonjour, ids.adios]])
        let (decks, cards) = try stored(container)
        #expect(
            decks == [
                "Spanish": ["bonjour", "gracias", "hola"], "French": [], "German": ["adiós", "hallo"],
                "Italian": ["ciao"],
            ])
        #expect(cards["bonjour"] == "Spanish" && cards["adiós"] == "German" && cards["ciao"] == "Italian")
    }

    @Test("Saving new cards of new decks takes two statements a card: its insert and its link")
    func statementsPerCard() throws {
        // Everything from the container on is traced (only connections opened meanwhile are);
        // what differs between the two runs is the cards' share.
        func statements(cards: Int) throws -> [String] {
            try SQLTrace.statements(ofThisThreadDuring: {
                let container = try ModelContainer(
                    for: Card.self, Deck.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
                let context = ModelContext(container)
                for number in 0..<2 {
                    let deck = Deck(title: "deck \(number)")
                    context.insert(deck)
                    for index in 0..<cards { Card(front: "card \(number).\(index)").deck = deck }
                }
                try context.save()
            }).1.filter { !$0.hasPrefix("--") }  // not the triggers' programs
        }
        let few = try statements(cards: 5)
        let many = try statements(cards: 15)
        // Twenty cards more: an insert and an UPDATE of the card's own column each.
        #expect(many.count - few.count == 40)
        #expect(
            many.filter { $0.hasPrefix("UPDATE") }.count - few.filter { $0.hasPrefix("UPDATE") }.count == 20)
    }

    @Test("Another context that holds a saved deck's cards sees the new cards a save adds to it")
    func otherContextSeesNewCards() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Card.self, Deck.self, in: directory)
        do {
            let context = ModelContext(container)
            let spanish = Deck(title: "Spanish")
            context.insert(spanish)
            Card(front: "hola").deck = spanish
            try context.save()
        }
        let watcher = ModelContext(container)
        let watched = try deck("Spanish", in: watcher)
        #expect(watched.cards.map(\.front) == ["hola"])
        let writer = ModelContext(container)
        let spanish = try deck("Spanish", in: writer)
        Card(front: "gracias").deck = spanish
        try writer.save()
        _ = try watcher.fetchCount(FetchDescriptor<Deck>())
        #expect(watched.cards.map(\.front).sorted() == ["gracias", "hola"])
    }

    @Test(
        "A to-many relationship's bounds hold when only its targets' to-ones write its links",
        arguments: [1, 2, 3, 4])
    func boundsOfLinksWrittenByTargets(count: Int) throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(BoundedDeck.self, BoundedCard.self, in: directory)
        let context = ModelContext(container)
        let deck = BoundedDeck()
        context.insert(deck)
        for index in 0..<count {
            let card = BoundedCard()
            card.front = "\(index)"
            card.deck = deck
        }
        if (2...3).contains(count) {
            try context.save()
            let savedContext = ModelContext(container)
            let saved = try savedContext.fetch(FetchDescriptor<BoundedDeck>())
            #expect(saved.first?.cards.count == count)
        } else {
            #expect(throws: DeckError.self) { try context.save() }
            #expect(try ModelContext(container).fetchCount(FetchDescriptor<BoundedCard>()) == 0)
        }
    }

    @Test(
        "New cards of a new deck that an upsert matches to a saved one: the deck's list is written as before")
    func newCardsOfAnUpsertedDeck() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(TitledDeck.self, TitledCard.self, in: directory)
        func deck(_ title: String, _ fronts: [String]) -> TitledDeck {
            let deck = TitledDeck()
            deck.title = title
            for front in fronts {
                let card = TitledCard()
                card.front = front
                card.deck = deck
            }
            return deck
        }
        do {
            let context = ModelContext(container)
            context.insert(deck("Spanish", ["hola", "adiós"]))
            try context.save()
        }
        let context = ModelContext(container)
        let again = deck("Spanish", ["gracias"])
        context.insert(again)
        let changes = try commits(of: container) { try context.save() }
        #expect(changes.first?.inserted["TitledCard"]?.count == 1)
        #expect(changes.first?.inserted["TitledDeck"] == nil)
        #expect(changes.first?.updated["TitledDeck"] == [try recordID(again, container)])
        #expect(changes.first?.updated["TitledCard"]?.count == 2)
        let reader = ModelContext(container)
        let decks = try reader.fetch(FetchDescriptor<TitledDeck>())
        #expect(decks.map(\.title) == ["Spanish"])
        #expect(decks.first?.cards.map(\.front) == ["gracias"])
        let cards = try reader.fetch(FetchDescriptor<TitledCard>(sortBy: [SortDescriptor(\.front)]))
        #expect(cards.map { $0.deck?.title ?? "-" } == ["-", "Spanish", "-"])
    }

    @Test("Sibling entities sharing a to-one column: each to-many holds its own entity's records")
    func siblingsSharingTheColumn() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Item.self, Note.self, Sketch.self, Folder.self, in: directory)
        func contents(_ context: ModelContext) throws -> [String: [String]] {
            var result: [String: [String]] = [:]
            for folder in try context.fetch(FetchDescriptor<Folder>()) {
                result[folder.title] =
                    folder.notes.map { "note " + $0.name }.sorted()
                    + folder.sketches.map { "sketch " + $0.name }.sorted()
            }
            return result
        }
        let context = ModelContext(container)
        let work = Folder()
        work.title = "work"
        context.insert(work)
        for name in ["a", "b"] {
            let note = Note()
            note.name = name
            note.folder = work
        }
        let sketch = Sketch()
        sketch.name = "c"
        sketch.folder = work
        try context.save()
        #expect(try contents(ModelContext(container)) == ["work": ["note a", "note b", "sketch c"]])

        // A new folder that takes a saved note, with a new sketch; the saved folder keeps the rest.
        let home = Folder()
        home.title = "home"
        context.insert(home)
        let moved = try #require(work.notes.first { $0.name == "a" })
        moved.folder = home
        let drawing = Sketch()
        drawing.name = "d"
        drawing.folder = home
        let changes = try commits(of: container) { try context.save() }
        // The saved folder's notes are written again (the moved note left them): its remaining
        // note is cleared and set again, so it counts as updated too.
        let remaining = try #require(work.notes.first { $0.name == "b" })
        #expect(
            changes.first?.updated["Note"] == [
                try recordID(moved, container), try recordID(remaining, container),
            ])
        #expect(changes.first?.updated["Folder"] == [try recordID(work, container)])
        #expect(
            try contents(ModelContext(container)) == [
                "work": ["note b", "sketch c"], "home": ["note a", "sketch d"],
            ])
    }
}
