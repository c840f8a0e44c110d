import DeckKit
import DeckSQLite
import DeckStore
import DeckTestTiming
import Foundation
import Observation
import Testing

/// The flash-cards models of the issue's example.
enum Flash {
    final class Card: ModelObject {
        @Attribute var front = ""
        @Attribute var back = ""
        @Attribute var creationDate = Date.now
        @Attribute var reviews = 0
        @Attribute(.externalStorage) var image: Data? = nil
        @Relationship(inverse: \Deck.cards) var deck: Deck? = nil
        @Transient var isSelected = false
        required init() {}

        convenience init(front: String, back: String = "", created: Date = .now) {
            self.init()
            self.front = front
            self.back = back
            self.creationDate = created
        }
    }

    final class Deck: ModelObject {
        @Attribute var title = ""
        @Relationship(deleteRule: .cascade) var cards: [Card] = []
        required init() {}

        convenience init(title: String) {
            self.init()
            self.title = title
        }
    }
}

/// A temporary directory for one test, removed afterwards.
func withModelDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let scratch = try ScratchDirectory()
    defer { withExtendedLifetime(scratch) {} }
    let directory = scratch.url
    return try body(directory)
}

@Suite("Typed models: containers, contexts, saving and fetching", .timed)
struct ModelLayerTests {
    typealias Card = Flash.Card
    typealias Deck = Flash.Deck

    @Test("Inserted models are saved, and a new container reads them back with their values")
    func saveAndReopen() throws {
        try withModelDirectory { directory in
            let url = directory.appendingPathComponent("cards.deck")
            let created = Date(timeIntervalSince1970: 1_700_000_000)
            let id: PersistentIdentifier
            do {
                let container = try ModelContainer(
                    for: Card.self, configurations: ModelConfiguration(url: url))
                let context = ModelContext(container)
                let card = Card(front: "hola", back: "hello", created: created)
                card.reviews = 3
                card.image = Data([1, 2, 3])
                id = card.persistentModelID
                context.insert(card)
                #expect(context.hasChanges)
                #expect(context.insertedModelsArray.count == 1)
                try context.save()
                #expect(!context.hasChanges)
                #expect(card.persistentModelID == id)
                #expect(card.modelContext === context)
            }
            let container = try ModelContainer(for: Card.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            let cards = try context.fetch(FetchDescriptor<Card>())
            #expect(cards.count == 1)
            let card = try #require(cards.first)
            #expect(card.front == "hola")
            #expect(card.back == "hello")
            #expect(card.creationDate == created)
            #expect(card.reviews == 3)
            #expect(card.image == Data([1, 2, 3]))
            #expect(card.persistentModelID == id)
            #expect(card.isSelected == false)
            // One instance per record.
            #expect(try context.fetch(FetchDescriptor<Card>()).first === card)
            // Deck was reached through Card's relationship: it is in the schema too.
            #expect(container.schema.storeSchema?.entity(named: "Deck") != nil)
        }
    }

    @Test("Both sides of a relationship stay in step in memory and on disk; cascade deletes")
    func relationships() throws {
        try withModelDirectory { directory in
            let url = directory.appendingPathComponent("cards.deck")
            do {
                let container = try ModelContainer(
                    for: Deck.self, configurations: ModelConfiguration(url: url))
                let context = ModelContext(container)
                let spanish = Deck(title: "Spanish")
                context.insert(spanish)
                let hola = Card(front: "hola")
                hola.deck = spanish
                #expect(spanish.cards.map(\.front) == ["hola"])
                // The card joined the context with its deck.
                #expect(hola.modelContext === context)
                let adios = Card(front: "adiós")
                spanish.cards.append(adios)
                #expect(adios.deck === spanish)
                try context.save()
            }
            let container = try ModelContainer(for: Deck.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            let decks = try context.fetch(FetchDescriptor<Deck>())
            let spanish = try #require(decks.first)
            #expect(Set(spanish.cards.map(\.front)) == ["hola", "adiós"])
            let cards = try context.fetch(FetchDescriptor<Card>(sortBy: [SortDescriptor(\.front)]))
            #expect(cards.map(\.front) == ["adiós", "hola"])
            #expect(cards.allSatisfy { $0.deck === spanish })

            // Moving a card to another deck takes it out of the first, before and after saving.
            let french = Deck(title: "French")
            context.insert(french)
            cards[0].deck = french
            #expect(spanish.cards.map(\.front) == ["hola"])
            #expect(french.cards.map(\.front) == ["adiós"])
            try context.save()
            let other = ModelContext(container)
            let reread = try other.fetch(FetchDescriptor<Deck>(sortBy: [SortDescriptor(\.title)]))
            #expect(reread.map(\.title) == ["French", "Spanish"])
            #expect(reread.map { $0.cards.map(\.front) } == [["adiós"], ["hola"]])

            // Cascade: deleting a deck deletes its cards.
            context.delete(spanish)
            #expect(spanish.isDeleted && spanish.hasChanges)
            try context.save()
            #expect(cards[1].isDeleted)
            // A saved deletion is no unsaved change.
            #expect(!spanish.hasChanges && !cards[1].hasChanges && spanish.modelContext == nil)
            #expect(try context.fetchCount(FetchDescriptor<Card>()) == 1)
            #expect(try ModelContext(container).fetch(FetchDescriptor<Card>()).map(\.front) == ["adiós"])
        }
    }

    @Test("Unsaved changes count in fetches; rollback drops them")
    func pendingChangesAndRollback() throws {
        let container = try ModelContainer(
            for: Card.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let saved = Card(front: "uno")
        context.insert(saved)
        try context.save()
        let unsaved = Card(front: "dos")
        context.insert(unsaved)
        saved.front = "one"
        let all = try context.fetch(FetchDescriptor<Card>(sortBy: [SortDescriptor(\.front)]))
        #expect(all.map(\.front) == ["dos", "one"])
        #expect(all[0] === unsaved)
        var without = FetchDescriptor<Card>()
        without.includePendingChanges = false
        // Without pending changes the unsaved card is not fetched; the saved one is the same
        // instance, with its unsaved value.
        #expect(try context.fetch(without).map(\.front) == ["one"])
        #expect(context.changedModelsArray.count == 1)
        context.rollback()
        #expect(!context.hasChanges)
        #expect(saved.front == "uno")
        #expect(unsaved.modelContext == nil)
        #expect(try context.fetchCount(FetchDescriptor<Card>()) == 1)
    }

    @Test("#Predicate and SortDescriptor run in the store, unsaved changes included")
    func predicates() throws {
        let container = try ModelContainer(
            for: Deck.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let spanish = Deck(title: "Spanish")
        let french = Deck(title: "French")
        for (index, front) in ["hola", "adiós", "Hola amigo", "bonjour"].enumerated() {
            let card = Card(front: front, created: Date(timeIntervalSince1970: Double(index) * 100))
            card.reviews = index
            card.deck = front == "bonjour" ? french : spanish
        }
        context.insert(spanish)
        context.insert(french)
        try context.save()
        let recent = try context.fetch(
            FetchDescriptor<Card>(
                predicate: #Predicate { $0.front.contains("hola") || $0.reviews > 2 },
                sortBy: [SortDescriptor(\.creationDate, order: .reverse)]))
        #expect(recent.map(\.front) == ["bonjour", "hola"])
        let folded = try context.fetch(
            FetchDescriptor<Card>(
                predicate: #Predicate { $0.front.localizedStandardContains("HOLA") },
                sortBy: [SortDescriptor(\.front)]))
        #expect(folded.map(\.front) == ["hola", "Hola amigo"])
        let inSpanish = try context.fetch(
            FetchDescriptor<Card>(
                predicate: #Predicate { $0.deck?.title == "Spanish" }, sortBy: [SortDescriptor(\.reviews)]))
        #expect(inSpanish.map(\.front) == ["hola", "adiós", "Hola amigo"])
        // Sorting through a to-one relationship.
        let byDeck = try context.fetch(
            FetchDescriptor<Card>(sortBy: [
                SortDescriptor(\.deck?.title), SortDescriptor(\.reviews, order: .reverse),
            ]))
        #expect(byDeck.map(\.front) == ["bonjour", "Hola amigo", "adiós", "hola"])
        // A captured identifier stands for its record.
        let frenchID = french.persistentModelID
        #expect(
            try context.fetchCount(
                FetchDescriptor<Card>(predicate: #Predicate { $0.deck?.persistentModelID == frenchID }))
                == 1)
        // An unsaved card that matches is fetched; a deleted one is not; limit and offset apply.
        let unsaved = Card(front: "hola otra vez")
        context.insert(unsaved)
        context.delete(recent[1])
        var descriptor = FetchDescriptor<Card>(
            predicate: #Predicate { $0.front.localizedStandardContains("hola") },
            sortBy: [SortDescriptor(\.front)])
        #expect(try context.fetch(descriptor).map(\.front) == ["Hola amigo", "hola otra vez"])
        descriptor.fetchOffset = 1
        descriptor.fetchLimit = 1
        #expect(try context.fetch(descriptor) == [unsaved])
        // A predicate the store cannot run is an error naming the part.
        #expect {
            try context.fetch(FetchDescriptor<Card>(predicate: #Predicate { $0.reviews % 2 == 0 }))
        } throws: { error in
            guard case .invalidQuery(let message) = error as? DeckError else { return false }
            return message.contains("%")
        }
        // delete(model:where:) saves, then deletes in one statement.
        try context.delete(model: Card.self, where: #Predicate { $0.reviews < 2 })
        #expect(!context.hasChanges)
        #expect(
            try ModelContext(container).fetch(FetchDescriptor<Card>(sortBy: [SortDescriptor(\.front)])).map(
                \.front)
                == ["bonjour", "Hola amigo"])
    }

    @Test("Prefetching a relationship of N models takes a constant number of statements")
    func prefetching() throws {
        /// The statements this thread runs while `body` runs.
        func statements(_ body: () throws -> Void) rethrows -> Int {
            try SQLTrace.statements(ofThisThreadDuring: body).1.count
        }
        func run(decks: Int, prefetch: Bool) throws -> Int {
            let container = try ModelContainer(
                for: Deck.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
            let writer = ModelContext(container)
            for number in 0..<decks {
                let deck = Deck(title: "deck \(number)")
                writer.insert(deck)
                for card in 0..<3 { deck.cards.append(Card(front: "card \(number).\(card)")) }
            }
            try writer.save()
            return try statements {
                let context = ModelContext(container)
                var descriptor = FetchDescriptor<Deck>()
                if prefetch { descriptor.relationshipKeyPathsForPrefetching = [\Deck.cards] }
                let fetched = try context.fetch(descriptor)
                #expect(fetched.count == decks)
                #expect(fetched.allSatisfy { $0.cards.count == 3 })
                // The cards' decks are the fetched decks, loaded with them.
                #expect(fetched.allSatisfy { deck in deck.cards.allSatisfy { $0.deck === deck } })
            }
        }
        let few = try run(decks: 5, prefetch: true)
        let many = try run(decks: 50, prefetch: true)
        #expect(few == many)
        #expect(many < 20)
        // Without prefetching each deck loads its cards by itself.
        #expect(try run(decks: 50, prefetch: false) > 50)
    }

    @Test("A persistent identifier reaches the same record from another context")
    func identifiers() throws {
        let container = try ModelContainer(
            for: Card.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let card = Card(front: "hola")
        context.insert(card)
        let id = card.persistentModelID
        try context.save()
        let other = ModelContext(container)
        let found = try #require(try other.model(for: id) as? Card)
        #expect(found !== card)
        #expect(found.front == "hola")
        #expect((other.registeredModel(for: id) as Card?) === found)
        #expect(try other.fetchIdentifiers(FetchDescriptor<Card>()) == [id])
        let data = try JSONEncoder().encode(id)
        #expect(try JSONDecoder().decode(PersistentIdentifier.self, from: data) == id)
        let missing = PersistentIdentifier(entityName: "Card", id: UUID())
        #expect(throws: DeckError.self) { try other.model(for: missing) }
    }

    @Test("Models are observable: a change is seen by withObservationTracking")
    func observation() throws {
        let card = Card(front: "hola")
        let changed = ObservedFlag()
        withObservationTracking {
            _ = card.front
        } onChange: {
            changed.set()
        }
        card.front = "adiós"
        #expect(changed.isSet)
    }

    @Test("A model Deck cannot store is refused, naming the property")
    func problems() throws {
        final class Loose: ModelObject {
            @Attribute var name = ""
            var forgotten = 0
            required init() {}
        }
        #expect(Schema(Loose.self).problems.contains { $0.contains("forgotten") })
        // A relationship whose default makes a model: named, as the discovery instance shows it.
        final class Eager: ModelObject {
            @Attribute var name = ""
            @Relationship var deck: Deck? = Deck(title: "made by default")
            required init() {}
        }
        #expect(
            Schema(Eager.self, Deck.self, Card.self).problems.contains {
                $0.hasPrefix("Eager.deck: default value makes another model")
            })
        #expect {
            try ModelContainer(
                for: Loose.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        } throws: { error in
            guard case .invalidSchema(let message) = error as? DeckError else { return false }
            return message.contains("forgotten")
        }
    }

    @Test("A document with another schema is refused, naming the differences")
    func schemaMismatch() throws {
        try withModelDirectory { directory in
            let url = directory.appendingPathComponent("cards.deck")
            _ = try ModelContainer(for: Card.self, configurations: ModelConfiguration(url: url))
            final class OtherCard: ModelObject {
                override class var entityName: String { "Card" }
                @Attribute var front = ""
                @Attribute var extra = 0
                required init() {}
            }
            #expect {
                try ModelContainer(for: OtherCard.self, configurations: ModelConfiguration(url: url))
            } throws: { error in
                guard case .schemaMismatch(_, let differences) = error as? DeckError else { return false }
                return differences.contains { $0.contains("extra") }
                    && differences.contains { $0.contains("back") }
            }
        }
    }

    @Test("A typed document is an ordinary document to the store API")
    func genericAccess() throws {
        let container = try ModelContainer(
            for: Card.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let deck = Deck(title: "Spanish")
        let card = Card(front: "hola")
        card.deck = deck
        context.insert(card)
        try context.save()
        let records = try container.store.read { try $0.fetch(RecordQuery("Card")) }
        #expect(records.count == 1)
        #expect(records[0]["front"] == .string("hola"))
        #expect(records[0].globalID == card.persistentModelID.id)
        guard case .reference = records[0]["deck"] else {
            Issue.record("the card's deck is not a reference: \(String(describing: records[0]["deck"]))")
            return
        }
        let report = try DeckDocument.verify(at: container.store.url)
        #expect(report.findings.isEmpty)
    }
}

/// A flag set from an observation's change handler.
final class ObservedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
