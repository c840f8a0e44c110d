import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// The README's models, the same as the ones `GettingStarted.md` starts from.
enum ReadmeModels {
    // README-EXAMPLE-BEGIN
    final class Card: ModelObject {
        @Attribute var front = ""
        @Attribute var back = ""
        @Attribute var creationDate = Date.now
        @Attribute(.externalStorage) var image: Data? = nil
        @Relationship(inverse: \Deck.cards) var deck: Deck? = nil

        convenience init(front: String, back: String) {
            self.init()
            self.front = front
            self.back = back
        }
    }

    final class Deck: ModelObject {
        @Attribute var title = ""
        @Relationship(deleteRule: .cascade) var cards: [Card] = []

        convenience init(title: String) {
            self.init()
            self.title = title
        }
    }
    // README-EXAMPLE-END
}

extension ReadmeModels {
    // GETTING-STARTED-ACTOR-BEGIN
    actor Importer: ModelActor {
        nonisolated let modelContainer: ModelContainer
        nonisolated let modelExecutor: any ModelExecutor

        init(modelContainer: ModelContainer) {
            self.modelContainer = modelContainer
            modelExecutor = DefaultSerialModelExecutor(modelContext: ModelContext(modelContainer))
        }

        func importCards(_ words: [(String, String)]) throws -> [PersistentIdentifier] {
            let cards = words.map { Card(front: $0.0, back: $0.1) }
            for card in cards { modelContext.insert(card) }
            try modelContext.save()
            return cards.map(\.persistentModelID)
        }
    }
    // GETTING-STARTED-ACTOR-END
}

/// The README's library examples, compiled and run, and the code of `GettingStarted.md`.
/// `readmeExamplesAreInReadme` and `gettingStartedIsInTheArticle` keep the documents' copies
/// identical to the code between the markers (each block without its marker's indentation).
@Suite(.timed) struct ReadmeExampleTests {
    typealias Card = ReadmeModels.Card
    typealias Deck = ReadmeModels.Deck
    typealias Importer = ReadmeModels.Importer

    static func example(directory: URL) throws -> [String] {
        // README-EXAMPLE-BEGIN
        let url = directory.appendingPathComponent("Cards.deck")
        let container = try ModelContainer(
            for: Card.self, Deck.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let spanish = Deck(title: "Spanish")
        context.insert(spanish)
        let words = [("hola", "hello"), ("adiós", "goodbye"), ("gracias", "thanks"), ("uno", "one")]
        for (front, back) in words {
            spanish.cards.append(Card(front: front, back: back))  // inserted with their deck
        }
        try context.save()

        let cards = try context.fetch(
            FetchDescriptor<Card>(
                predicate: #Predicate { $0.deck?.title == "Spanish" && $0.front.contains("a") },
                sortBy: [SortDescriptor(\.front)]))
        let fronts = cards.map(\.front)  // ["adiós", "gracias", "hola"]
        // README-EXAMPLE-END
        return fronts
    }

    static func storeExample(directory: URL) throws -> [String] {
        // README-STORE-EXAMPLE-BEGIN
        let schema = StoreSchema(entities: [
            StoreSchema.Entity(
                "Note",
                attributes: [
                    StoreSchema.Attribute("title", .string, options: [.unique]),
                    StoreSchema.Attribute("body", .string, defaultValue: .string("")),
                    StoreSchema.Attribute("created", .date),
                    StoreSchema.Attribute("scan", .data, isOptional: true, options: [.externalStorage]),
                ])
        ])
        let url = directory.appendingPathComponent("Notes.deck")
        let notes = try PackageStore.create(at: url, contentType: "org.example.notes", schema: schema)
        let (_, changes) = try notes.write { transaction in
            try transaction.insert("Note", ["title": .string("Groceries"), "created": .date(.now)])
            try transaction.insert(
                "Note",
                [
                    "title": .string("Receipt"), "created": .date(.now),
                    "scan": .data(Data(repeating: 0xAB, count: 200_000)),  // stored as a blob file
                ])
        }
        precondition(changes.inserted["Note"]?.count == 2)

        let titles = try notes.read { reader in
            try reader.fetch(
                RecordQuery(
                    "Note",
                    where: .property("title").beginsWith("re", .asciiCaseInsensitive),
                    sort: [SortKey("title")])
            ).compactMap { $0["title"]?.description }
        }
        try notes.close()

        let report = try DeckDocument.verify(at: url)
        precondition(report.isValid)
        // README-STORE-EXAMPLE-END
        return titles
    }

    /// A temporary directory for one example, removed afterwards.
    static func inDirectory<T>(_ body: (URL) throws -> T) throws -> T {
        let scratch = try ScratchDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let directory = scratch.url
        return try body(directory)
    }

    @Test func readmeExampleRuns() throws {
        #expect(try Self.inDirectory(Self.example) == ["adiós", "gracias", "hola"])
        #expect(try Self.inDirectory(Self.storeExample) == ["Receipt"])
    }

    /// The steps of `GettingStarted.md`, in its order.
    @Test func gettingStartedRuns() throws {
        try Self.inDirectory { directory in
            // GETTING-STARTED-BEGIN
            let url = directory.appendingPathComponent("Spanish.deck")
            let container = try ModelContainer(
                for: Card.self, Deck.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            // GETTING-STARTED-END

            // GETTING-STARTED-BEGIN
            let preview = try ModelContainer(
                for: Card.self, Deck.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
            // GETTING-STARTED-END
            #expect(preview.store.url.path.hasPrefix(FileManager.default.temporaryDirectory.path))

            // GETTING-STARTED-BEGIN
            let spanish = Deck(title: "Spanish")
            context.insert(spanish)
            let hola = Card(front: "hola", back: "hello")
            hola.deck = spanish  // hola joins spanish's context; spanish.cards == [hola]
            spanish.cards.append(Card(front: "adiós", back: "goodbye"))
            spanish.cards.append(Card(front: "gracias", back: "thanks"))
            let id = hola.persistentModelID
            try context.save()
            // hola.persistentModelID == id: the identifier does not change at save.
            // GETTING-STARTED-END
            #expect(hola.persistentModelID == id)
            #expect(hola.modelContext === context)
            #expect(spanish.cards.map(\.front) == ["hola", "adiós", "gracias"])

            // GETTING-STARTED-BEGIN
            var descriptor = FetchDescriptor<Card>(
                predicate: #Predicate { $0.front.localizedStandardContains("ADIOS") || $0.back == "hello" },
                sortBy: [SortDescriptor(\.front)])
            let found = try context.fetch(descriptor)  // adiós, hola
            descriptor.fetchLimit = 1
            let first = try context.fetch(descriptor)  // adiós
            let count = try context.fetchCount(FetchDescriptor<Card>())  // 3
            // GETTING-STARTED-END
            #expect(found.map(\.front) == ["adiós", "hola"])
            #expect(found[1] === hola)
            #expect(first.map(\.front) == ["adiós"])
            #expect(count == 3)

            // GETTING-STARTED-BEGIN
            let newest = try context.fetch(
                FetchDescriptor<Card>(
                    predicate: #Predicate { $0.deck?.title == "Spanish" },
                    sortBy: [SortDescriptor(\.creationDate, order: .reverse), SortDescriptor(\.front)]))
            // GETTING-STARTED-END
            #expect(newest.count == 3)

            // GETTING-STARTED-BEGIN
            let french = Deck(title: "French")
            context.insert(french)
            let merci = Card(front: "merci", back: "thanks")
            context.insert(merci)
            let unsaved = try context.fetch(
                FetchDescriptor<Card>(
                    predicate: #Predicate { $0.back == "thanks" }, sortBy: [SortDescriptor(\.front)]))
            // gracias, merci: the unsaved card is fetched
            merci.deck = french  // french.cards == [merci]
            try context.save()
            // GETTING-STARTED-END
            #expect(unsaved.map(\.front) == ["gracias", "merci"])
            #expect(french.cards.map(\.front) == ["merci"])

            // GETTING-STARTED-BEGIN
            let gracias = spanish.cards.first { $0.front == "gracias" }!
            gracias.deck = french
            // spanish.cards: hola, adiós; french.cards: merci, gracias
            try context.save()
            // GETTING-STARTED-END
            #expect(spanish.cards.map(\.front) == ["hola", "adiós"])
            #expect(french.cards.map(\.front) == ["merci", "gracias"])

            // GETTING-STARTED-BEGIN
            let photo = Data(repeating: 0x5A, count: 300_000)
            hola.image = photo  // 64 KiB or more: a blob file beside the store
            try context.save()
            let reader = ModelContext(container)
            let holaOnly = FetchDescriptor<Card>(predicate: #Predicate { $0.front == "hola" })
            let card = try reader.fetch(holaOnly)[0]
            // card.image is read from its blob file here, when first read
            // GETTING-STARTED-END
            #expect(card.image == photo)
            #expect(reader.lastLoadError == nil)

            // GETTING-STARTED-BEGIN
            let other = ModelContext(container)
            let same = try other.model(for: id) as? Card  // another instance of hola's record
            let encoded = try JSONEncoder().encode(id)  // identifiers are Codable and Sendable
            // GETTING-STARTED-END
            #expect(same !== hola)
            #expect(same?.front == "hola")
            #expect(try JSONDecoder().decode(PersistentIdentifier.self, from: encoded) == id)

            // GETTING-STARTED-BEGIN
            context.delete(french)
            try context.save()
            // french, merci and gracias are deleted: Deck.cards cascades
            let left = try context.fetch(FetchDescriptor<Card>(sortBy: [SortDescriptor(\.front)]))
            // adiós, hola
            // GETTING-STARTED-END
            #expect(french.isDeleted && merci.isDeleted && gracias.isDeleted)
            #expect(left.map(\.front) == ["adiós", "hola"])

            // GETTING-STARTED-BEGIN
            hola.back = "hi"
            context.insert(Card(front: "sí", back: "yes"))
            context.delete(spanish)
            context.rollback()
            // hola.back == "hello" again, the new card is gone, spanish is not deleted
            // GETTING-STARTED-END
            #expect(hola.back == "hello")
            #expect(!spanish.isDeleted)
            #expect(!context.hasChanges)
            #expect(try context.fetchCount(FetchDescriptor<Card>()) == 2)
            #expect(try DeckDocument.verify(at: url).findings.isEmpty)
        }
    }

    // MARK: The documents' copies

    /// The blocks between `begin` and `end` markers in this file, each without the indentation
    /// of its marker.
    static func blocks(_ name: String, in file: String = #filePath) throws -> [String] {
        let source = try String(contentsOf: URL(fileURLWithPath: file), encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]?
        var indentation = 0
        for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.drop { $0 == " " }
            if trimmed == "// \(name)-BEGIN" {
                current = []
                indentation = line.count - trimmed.count
            } else if trimmed == "// \(name)-END" {
                blocks.append(
                    (current ?? []).map { $0.dropFirst(min(indentation, $0.count)) }.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    static func document(_ path: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test func readmeExamplesAreInReadme() throws {
        let readme = try Self.document("README.md")
        let typed = try Self.blocks("README-EXAMPLE")
        #expect(typed.count == 2)
        #expect(
            readme.contains("```swift\nimport DeckKit\n\n" + typed.joined(separator: "\n\n") + "\n```"),
            "README.md's typed example differs from ReadmeExampleTests.swift")
        let store = try Self.blocks("README-STORE-EXAMPLE")
        #expect(store.count == 1)
        #expect(
            readme.contains("```swift\n" + store.joined() + "\n```"),
            "README.md's store example differs from ReadmeExampleTests.swift")
    }

    /// The background-work section of `GettingStarted.md`.
    @MainActor @Test func gettingStartedActorRuns() async throws {
        let container = try ModelContainer(
            for: Card.self, Deck.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        // GETTING-STARTED-ACTOR-USE-BEGIN
        let importer = Importer(modelContainer: container)
        let ids = try await importer.importCards([("gato", "cat"), ("perro", "dog")])
        let gato = try container.mainContext.model(for: ids[0]) as? Card
        // GETTING-STARTED-ACTOR-USE-END
        #expect(gato?.back == "cat")
        #expect(try container.mainContext.fetchCount(FetchDescriptor<Card>()) == 2)
    }

    @Test func gettingStartedIsInTheArticle() throws {
        let article = try Self.document("Sources/DeckKit/DeckKit.docc/GettingStarted.md")
        let models = try Self.blocks("README-EXAMPLE")[0]
        #expect(article.contains("```swift\n" + models + "\n```"), "GettingStarted.md's models differ")
        let steps = try Self.blocks("GETTING-STARTED")
        #expect(steps.count > 10)
        var rest = article[...]
        for step in steps {
            guard let range = rest.range(of: "```swift\n" + step + "\n```") else {
                Issue.record("GettingStarted.md lacks, or has out of order, this block:\n\(step)")
                continue
            }
            rest = rest[range.upperBound...]
        }
        for name in ["GETTING-STARTED-ACTOR", "GETTING-STARTED-ACTOR-USE"] {
            let block = try #require(try Self.blocks(name).first)
            #expect(article.contains("```swift\n" + block + "\n```"), "GettingStarted.md lacks \(name)")
        }
    }
}

/// What `ComingFromSwiftData.md` says differs from SwiftData, checked.
@Suite(.timed) struct ReadmeExampleSwiftDataDifferences {
    typealias Card = ReadmeModels.Card
    typealias Deck = ReadmeModels.Deck

    /// `Predicates.md`: a model cannot be captured (Foundation's macro captures `Codable` and
    /// `Sendable` values only); its `persistentModelID` can, on either side of a relationship. And
    /// `caseInsensitiveCompare` is compared with a captured `.orderedSame`.
    @Test func predicatesCaptureIdentifiersAndComparisonResults() throws {
        let container = try ModelContainer(
            for: Card.self, Deck.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let spanish = Deck(title: "Spanish")
        let french = Deck(title: "French")
        for (deck, front) in [(spanish, "hola"), (spanish, "adiós"), (french, "merci")] {
            let card = Card(front: front, back: "")
            card.deck = deck
            context.insert(card)
        }
        try context.save()
        let id = spanish.persistentModelID
        let cards = try context.fetch(
            FetchDescriptor<Card>(predicate: #Predicate { $0.deck?.persistentModelID == id }))
        #expect(Set(cards.map(\.front)) == ["hola", "adiós"])
        let hola = try #require(cards.first { $0.front == "hola" }).persistentModelID
        let decks = try context.fetch(
            FetchDescriptor<Deck>(
                predicate: #Predicate { $0.cards.contains { $0.persistentModelID == hola } }))
        #expect(decks.map(\.title) == ["Spanish"])
        let same = ComparisonResult.orderedSame
        let sameTitle = try context.fetch(
            FetchDescriptor<Deck>(predicate: #Predicate { $0.title.caseInsensitiveCompare("FRENCH") == same })
        )
        #expect(sameTitle.map(\.title) == ["French"])
    }

    @Test func anotherContextsSaveRefreshesAnInstanceButNotItsUnsavedChanges() throws {
        let container = try ModelContainer(
            for: Card.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let first = ModelContext(container)
        let card = Card(front: "hola", back: "hello")
        first.insert(card)
        try first.save()
        card.front = "¡hola!"
        let second = ModelContext(container)
        let copy = try #require(try second.model(for: card.persistentModelID) as? Card)
        copy.back = "hi"
        copy.front = "olá"
        try second.save()
        // The first context's instance takes the saved values at its next operation, but for
        // the property it changed and has not saved.
        #expect(try first.fetch(FetchDescriptor<Card>()).first === card)
        #expect(card.back == "hi")
        #expect(card.front == "¡hola!")
        // Its save wins.
        try first.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Card>()).first?.front == "¡hola!")
    }

    @MainActor @Test func onlyTheMainContextAutosaves() throws {
        let container = try ModelContainer(
            for: Card.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        #expect(container.mainContext.autosaveEnabled)
        let context = ModelContext(container)
        #expect(!context.autosaveEnabled)
        context.insert(Card(front: "hola", back: "hello"))
        try context.processPendingChanges()
        #expect(context.hasChanges)
        context.autosaveEnabled = true
        try context.processPendingChanges()
        #expect(!context.hasChanges)
    }

    @Test func relatingBeforeAnyContainerIsSaved() throws {
        let deck = Deck(title: "Spanish")
        let card = Card(front: "hola", back: "hello")
        card.deck = deck
        let container = try ModelContainer(
            for: Card.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        context.insert(card)
        #expect(deck.modelContext === context)
        try context.save()
        // Whether `deck.cards` holds the card in memory depends on whether a schema of these types
        // was made before `card.deck = deck` (the inverses are known from then on); the store has it.
        let reader = ModelContext(container)
        let decks = try reader.fetch(FetchDescriptor<Deck>())
        #expect(decks.first?.cards.map(\.front) == ["hola"])
    }

    @Test func aModelReadsItsRelationshipsThroughItsContext() throws {
        let container = try ModelContainer(
            for: Deck.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let deck = Deck(title: "Spanish")
        deck.cards.append(Card(front: "hola", back: "hello"))
        context.insert(deck)
        try context.save()
        // The context that fetched the deck lives while its models are read: its relationships
        // resolve through it, into its models.
        let reader = ModelContext(container)
        let fetched = try reader.fetch(FetchDescriptor<Deck>())
        #expect(fetched.first?.modelContext === reader)
        #expect(fetched.first?.cards.map(\.front) == ["hola"])
        #expect(fetched.first?.cards.first?.modelContext === reader)
    }

    @Test func modelForAMissingIdentifierThrows() throws {
        let container = try ModelContainer(
            for: Card.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let missing = PersistentIdentifier(entityName: "Card", id: UUID())
        #expect {
            try ModelContext(container).model(for: missing)
        } throws: { error in
            guard case .globalIDNotFound(let entity, let globalID) = error as? DeckError else { return false }
            return entity == "Card" && globalID == missing.id
        }
    }
}
