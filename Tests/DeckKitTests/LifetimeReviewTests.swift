import DeckKit
import DeckTestTiming
import Foundation
import Observation
import Testing

/// Models of the lifetime review: a list linked both ways (to-one only, one entity), a
/// many-to-many pair, and a to-one to a superclass declared by a subclass.
enum Linked {
    final class Node: ModelObject {
        @Attribute var name = ""
        @Relationship(inverse: \Node.previous) var next: Node? = nil
        @Relationship var previous: Node? = nil
        required init() {}
        convenience init(_ name: String) {
            self.init()
            self.name = name
        }
    }

    final class Item: ModelObject {
        @Attribute var name = ""
        @Relationship(inverse: \Label.items) var labels: [Label] = []
        required init() {}
    }

    final class Label: ModelObject {
        @Attribute var name = ""
        @Relationship var items: [Item] = []
        required init() {}
    }

    final class Shelf: ModelObject {
        @Attribute var name = ""
        @Relationship(deleteRule: .noAction, inverse: \Book.shelf) var books: [Book] = []
        required init() {}
    }

    final class Book: ModelObject {
        @Attribute var title = ""
        @Relationship var shelf: Shelf? = nil
        required init() {}
    }

    class Member: ModelObject {
        @Attribute var name = ""
        required init() {}
    }

    final class Mentor: Member {
        @Relationship var mentee: Member? = nil
        required init() {}
    }
}

/// What the review of ModelContext+Lifetimes found: cycles that survive, among others.
@Suite("Model lifetimes: review", .timed)
struct LifetimeReviewTests {
    /// The Spanish deck read in `context`, with its cards loaded (each pointing back to it), and
    /// weak references to the deck and its cards.
    func readSpanish(in context: ModelContext) throws -> (deck: Deck, references: [WeakReference]) {
        let deck = try ModelLifetimeTests.deck("Spanish", in: context)
        #expect(deck.cards.allSatisfy { $0.deck === deck })
        return (deck, ([deck] + deck.cards as [AnyObject]).map(WeakReference.init))
    }

    /// Reads `deck.cards` (the Spanish deck's three) in an observation, and returns the flag its
    /// change sets.
    func observeCards(of deck: Deck) -> ObservedFlag {
        let told = ObservedFlag()
        withObservationTracking {
            #expect(deck.cards.count == 3)
        } onChange: {
            told.set()
        }
        return told
    }

    typealias Card = Flash.Card
    typealias Deck = Flash.Deck

    @Test("A list linked both ways (to-one only cycles of one entity) is freed when its context goes")
    func linkedListFreed() throws {
        let directory = try ScratchDirectory()
        let container = try ModelContainer(
            for: Linked.Node.self, configurations: ModelConfiguration(url: directory.appending("list.deck")))
        do {
            let context = ModelContext(container)
            let nodes = (0..<4).map { Linked.Node("n\($0)") }
            for node in nodes { context.insert(node) }
            for (a, b) in zip(nodes, nodes.dropFirst()) { a.next = b }
            try context.save()
        }
        func walk() throws -> [WeakReference] {
            let context = ModelContext(container)
            let first = try #require(
                try context.fetch(FetchDescriptor<Linked.Node>(predicate: #Predicate { $0.name == "n0" }))
                    .first)
            var nodes: [Linked.Node] = [first]
            while let next = nodes.last?.next {
                #expect(next.previous === nodes.last)
                nodes.append(next)
            }
            #expect(nodes.map(\.name) == ["n0", "n1", "n2", "n3"])
            return (nodes as [AnyObject] + [context]).map(WeakReference.init)
        }
        let references = try walk()
        #expect(references.allSatisfy { $0.isFreed })
    }

    @Test("Many-to-many models that loaded both sides, and mentors pointing at each other, are freed")
    func manyToManyAndSubclassFreed() throws {
        let directory = try ScratchDirectory()
        let container = try ModelContainer(
            for: Linked.Item.self, Linked.Label.self, Linked.Member.self, Linked.Mentor.self,
            configurations: ModelConfiguration(url: directory.appending("m2m.deck")))
        do {
            let context = ModelContext(container)
            let item = Linked.Item()
            item.name = "item"
            let label = Linked.Label()
            label.name = "label"
            context.insert(item)
            item.labels = [label]
            let a = Linked.Mentor()
            a.name = "a"
            let b = Linked.Mentor()
            b.name = "b"
            context.insert(a)
            a.mentee = b
            b.mentee = a
            try context.save()
        }
        func read() throws -> [WeakReference] {
            let context = ModelContext(container)
            let item = try #require(try context.fetch(FetchDescriptor<Linked.Item>()).first)
            let label = try #require(item.labels.first)
            #expect(label.items.first === item)
            let a = try #require(
                try context.fetch(FetchDescriptor<Linked.Mentor>(predicate: #Predicate { $0.name == "a" }))
                    .first)
            let b = try #require(a.mentee as? Linked.Mentor)
            #expect(b.mentee === a)
            return ([item, label, a, b, context] as [AnyObject]).map(WeakReference.init)
        }
        let references = try read()
        #expect(references.allSatisfy { $0.isFreed })
    }

    @Test("A deck and its cards that loaded each other and were deleted by a saved cascade are freed")
    func cascadeDeletedModelsFreed() throws {
        let directory = try ScratchDirectory()
        let container = try ModelLifetimeTests.makeDecks(directory)
        let context = ModelContext(container)
        func deleteSpanish() throws -> [WeakReference] {
            let (deck, references) = try readSpanish(in: context)
            context.delete(deck)
            try context.save()
            // As in the store: the deleted deck holds no cards any more.
            #expect(deck.cards.isEmpty)
            return references
        }
        let references = try deleteSpanish()
        #expect(references.count == 4)
        #expect(references.allSatisfy { $0.isFreed })
        #expect(try context.fetchCount(FetchDescriptor<Card>()) == 1)
    }

    @Test(
        "A deck and its cards that loaded each other, deleted by another context's cascade, are freed on merge"
    )
    func mergeDeletedModelsFreed() throws {
        let directory = try ScratchDirectory()
        let container = try ModelLifetimeTests.makeDecks(directory)
        let context = ModelContext(container)
        func readSpanish() throws -> [WeakReference] {
            try self.readSpanish(in: context).references
        }
        let references = try readSpanish()
        let other = ModelContext(container)
        other.delete(try ModelLifetimeTests.deck("Spanish", in: other))
        try other.save()
        // The merge marks them deleted.
        #expect(try context.fetchCount(FetchDescriptor<Card>()) == 1)
        #expect(references.count == 4)
        #expect(references.allSatisfy { $0.isFreed })
    }

    @Test("A deck deleted and not saved, that loaded its cards both ways, is freed when its context goes")
    func unsavedDeletionFreedWithContext() throws {
        let directory = try ScratchDirectory()
        let container = try ModelLifetimeTests.makeDecks(directory)
        func deleteSpanish() throws -> [WeakReference] {
            let context = ModelContext(container)
            let (deck, references) = try readSpanish(in: context)
            context.delete(deck)
            return references + [WeakReference(context)]
        }
        let references = try deleteSpanish()
        #expect(references.count == 5)
        #expect(references.allSatisfy { $0.isFreed })
        // Nothing was saved.
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Card>()) == 4)
    }

    @Test("An observer of a to-many relationship not read since its fetch hears of a merge that changes it")
    func unloadedRelationshipObservedThroughMerge() throws {
        let directory = try ScratchDirectory()
        let container = try ModelLifetimeTests.makeDecks(directory)
        let context = ModelContext(container)
        let spanish = try ModelLifetimeTests.deck("Spanish", in: context)
        let told = observeCards(of: spanish)
        // Another context adds a card to the deck.
        let other = ModelContext(container)
        let card = Card(front: "buenos días")
        other.insert(card)
        card.deck = try ModelLifetimeTests.deck("Spanish", in: other)
        try other.save()
        try context.processPendingChanges()
        #expect(told.isSet)
        #expect(spanish.cards.count == 4)
    }

    @Test("An observer of a to-many relationship not read since its fetch hears of an inverse change here")
    func unloadedRelationshipObservedThroughInverse() throws {
        let directory = try ScratchDirectory()
        let container = try ModelLifetimeTests.makeDecks(directory)
        let context = ModelContext(container)
        let spanish = try ModelLifetimeTests.deck("Spanish", in: context)
        let merci = try ModelLifetimeTests.card("merci", in: context)
        let told = observeCards(of: spanish)
        merci.deck = spanish
        #expect(told.isSet)
        #expect(spanish.cards.count == 4)
    }

    @Test("Deleting a card of a deck whose loaded cards changed too saves (the deleted card leaves the list)")
    func deleteAndChangeLoadedToMany() throws {
        let directory = try ScratchDirectory()
        let container = try ModelLifetimeTests.makeDecks(directory)
        let context = ModelContext(container)
        let spanish = try ModelLifetimeTests.deck("Spanish", in: context)
        #expect(spanish.cards.count == 3)
        let card = Card(front: "buenos días")
        card.deck = spanish
        let hola = try ModelLifetimeTests.card("hola", in: context)
        context.delete(hola)
        try context.save()
        #expect(Set(spanish.cards.map(\.front)) == ["adiós", "gracias", "buenos días"])
        let reader = ModelContext(container)
        #expect(
            Set(try ModelLifetimeTests.deck("Spanish", in: reader).cards.map(\.front)) == [
                "adiós", "gracias", "buenos días",
            ])
        // A model whose deletion was saved is still refused.
        spanish.cards.append(hola)
        #expect(throws: DeckError.self) { try context.save() }
    }

    /// How a deck's loaded cards go back to not loaded other than by unloading them.
    enum Reread: CaseIterable, Sendable {
        /// A rollback of a change to the deck reads it again.
        case rollback
        /// A merge of another context's new card marks the deck's cards stale.
        case merge
    }

    @Test(
        "A deck whose loaded cards went back to not loaded, and its cards, are freed with the context",
        arguments: Reread.allCases)
    func rereadRelationshipLetsGo(_ reread: Reread) throws {
        let directory = try ScratchDirectory()
        let container = try ModelLifetimeTests.makeDecks(directory)
        func read() throws -> [WeakReference] {
            let context = ModelContext(container)
            let spanish = try ModelLifetimeTests.deck("Spanish", in: context)
            #expect(spanish.cards.allSatisfy { $0.deck === spanish })
            let references = ([spanish, context] + spanish.cards as [AnyObject]).map(WeakReference.init)
            switch reread {
            case .rollback:
                spanish.title = "Español"
                context.rollback()
                #expect(spanish.title == "Spanish")
            case .merge:
                let other = ModelContext(container)
                let card = Card(front: "buenos días")
                other.insert(card)
                card.deck = try ModelLifetimeTests.deck("Spanish", in: other)
                try other.save()
                try context.processPendingChanges()
            }
            return references
        }
        let references = try read()
        #expect(references.count == 5)
        #expect(references.allSatisfy { $0.isFreed })
    }

    @Test(
        "A card taken out of its deck's cards before it read its deck has no deck, before and after the save")
    func removedFromToManyWithPendingToOne() throws {
        let directory = try ScratchDirectory()
        let container = try ModelLifetimeTests.makeDecks(directory)
        let context = ModelContext(container)
        let hola = try ModelLifetimeTests.card("hola", in: context)
        let spanish = try ModelLifetimeTests.deck("Spanish", in: context)
        spanish.cards.removeAll { $0 === hola }
        #expect(hola.deck == nil)
        try context.save()
        #expect(hola.deck == nil)
        #expect(try ModelLifetimeTests.card("hola", in: ModelContext(container)).deck == nil)
    }

    @Test(
        "An enumeration whose block deletes each card, adds another to its deck and saves keeps every change")
    func enumerateDeletingInsertingAndSaving() throws {
        let directory = try ScratchDirectory()
        let container = try ModelLifetimeTests.makeDecks(directory)
        let context = ModelContext(container)
        var met: [String] = []
        try context.enumerate(
            FetchDescriptor<Card>(predicate: #Predicate { !$0.front.contains("new") }), batchSize: 1
        ) { card in
            met.append(card.front)
            let deck = try #require(card.deck)
            #expect(deck.cards.contains { $0 === card })
            let added = Card(front: "new " + card.front)
            added.deck = deck
            context.delete(card)
            if met.count.isMultiple(of: 2) { try context.save() }
        }
        try context.save()
        #expect(Set(met) == ["hola", "adiós", "gracias", "merci"])
        let reader = ModelContext(container)
        #expect(
            Set(try ModelLifetimeTests.deck("Spanish", in: reader).cards.map(\.front))
                == ["new hola", "new adiós", "new gracias"])
        #expect(Set(try ModelLifetimeTests.deck("French", in: reader).cards.map(\.front)) == ["new merci"])
        #expect(reader.lastLoadError == nil && context.lastLoadError == nil)
    }

    @Test(
        "A deck and its cards that loaded each other, deleted by delete(model:where:) with a cascade, are freed"
    )
    func batchDeletedModelsFreed() throws {
        let directory = try ScratchDirectory()
        let container = try ModelLifetimeTests.makeDecks(directory)
        let context = ModelContext(container)
        func deleteSpanish() throws -> [WeakReference] {
            let (deck, references) = try readSpanish(in: context)
            try context.delete(model: Deck.self, where: #Predicate { $0.title == "Spanish" })
            #expect(deck.isDeleted)
            return references
        }
        let references = try deleteSpanish()
        #expect(references.count == 4)
        #expect(references.allSatisfy { $0.isFreed })
        #expect(try context.fetchCount(FetchDescriptor<Card>()) == 1)
    }

    @Test(
        "A model first fetched while a deletion was pending reads its to-one again after the deletion is rolled back"
    )
    func fetchedDuringPendingDeletionThenRolledBack() throws {
        let directory = try ScratchDirectory()
        let container = try ModelContainer(
            for: Linked.Node.self, configurations: ModelConfiguration(url: directory.appending("list.deck")))
        do {
            let context = ModelContext(container)
            let (first, second) = (Linked.Node("n0"), Linked.Node("n1"))
            context.insert(first)
            first.next = second
            try context.save()
        }
        let context = ModelContext(container)
        let second = try #require(
            try context.fetch(FetchDescriptor<Linked.Node>(predicate: #Predicate { $0.name == "n1" })).first)
        context.delete(second)
        // Fetched with the deletion applied (in a transaction rolled back): n0's next is nullified.
        let first = try #require(
            try context.fetch(FetchDescriptor<Linked.Node>(predicate: #Predicate { $0.name == "n0" })).first)
        context.rollback()
        #expect(!second.isDeleted)
        #expect(first.next === second)
    }

    @Test("Deleting a card inserted into a deck's loaded cards, before any save, saves the deck without it")
    func deleteInsertedTargetOfLoadedToMany() throws {
        let directory = try ScratchDirectory()
        let container = try ModelLifetimeTests.makeDecks(directory)
        let context = ModelContext(container)
        let spanish = try ModelLifetimeTests.deck("Spanish", in: context)
        #expect(spanish.cards.count == 3)
        let card = Card(front: "buenos días")
        card.deck = spanish
        context.delete(card)
        #expect(spanish.cards.count == 3)
        try context.save()
        let reader = ModelContext(container)
        #expect(try ModelLifetimeTests.deck("Spanish", in: reader).cards.count == 3)
        #expect(try reader.fetchCount(FetchDescriptor<Card>()) == 4)
    }

    @Test(
        "A to-one to a superclass whose subclass target went away (not held: a cycle of to-ones) loads it again"
    )
    func superclassToOneReloadsSubclass() throws {
        let directory = try ScratchDirectory()
        let container = try ModelContainer(
            for: Linked.Member.self, Linked.Mentor.self,
            configurations: ModelConfiguration(url: directory.appending("mentors.deck")))
        do {
            let context = ModelContext(container)
            let (a, b) = (Linked.Mentor(), Linked.Mentor())
            (a.name, b.name) = ("a", "b")
            context.insert(a)
            a.mentee = b
            b.mentee = a
            try context.save()
        }
        let context = ModelContext(container)
        let a = try #require(
            try context.fetch(FetchDescriptor<Linked.Mentor>(predicate: #Predicate { $0.name == "a" })).first)
        func readB() throws -> WeakReference {
            let b = try #require(a.mentee as? Linked.Mentor)
            #expect(b.mentee === a)
            return WeakReference(b)
        }
        let b = try readB()
        #expect(b.isFreed)
        let again = try #require(a.mentee as? Linked.Mentor)
        #expect(again.name == "b")
        #expect(again.mentee === a)
        #expect(context.lastLoadError == nil)
    }

    @Test(
        "A shelf deleted with no action on its books, that loaded them both ways, is freed with its context")
    func noActionDeletedModelFreed() throws {
        let directory = try ScratchDirectory()
        let container = try ModelContainer(
            for: Linked.Shelf.self,
            configurations: ModelConfiguration(url: directory.appending("shelves.deck")))
        do {
            let context = ModelContext(container)
            let shelf = Linked.Shelf()
            context.insert(shelf)
            for title in ["a", "b"] {
                let book = Linked.Book()
                book.title = title
                book.shelf = shelf
            }
            try context.save()
        }
        func deleteShelf() throws -> [WeakReference] {
            let context = ModelContext(container)
            let shelf = try #require(try context.fetch(FetchDescriptor<Linked.Shelf>()).first)
            #expect(shelf.books.allSatisfy { $0.shelf === shelf })
            let references = ([shelf, context] + shelf.books as [AnyObject]).map(WeakReference.init)
            context.delete(shelf)
            try context.save()
            return references
        }
        let references = try deleteShelf()
        #expect(references.count == 4)
        #expect(references.allSatisfy { $0.isFreed })
    }

    @Test("An observer of a deck's cards hears of a card added after a rollback read the deck again")
    func observedRelationshipAfterRollback() throws {
        let directory = try ScratchDirectory()
        let container = try ModelLifetimeTests.makeDecks(directory)
        let context = ModelContext(container)
        let spanish = try ModelLifetimeTests.deck("Spanish", in: context)
        let merci = try ModelLifetimeTests.card("merci", in: context)
        let told = observeCards(of: spanish)
        spanish.title = "Español"
        context.rollback()
        merci.deck = spanish
        #expect(told.isSet)
        #expect(spanish.cards.count == 4)
    }
}
