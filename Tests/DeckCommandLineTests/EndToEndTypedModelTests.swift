import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// The flash-cards sample's schema (samples/flashcards.schema.json) written as typed models.
enum Vocabulary {
    final class Deck: ModelObject {
        @DeckKit.Attribute(.unique) var title = ""
        @DeckKit.Attribute var created = Date.now
        @DeckKit.Relationship(deleteRule: .cascade, inverse: \Card.deck) var cards: [Card] = []
        required init() {}
    }

    final class Card: ModelObject {
        @DeckKit.Attribute var front = ""
        @DeckKit.Attribute var back = ""
        @DeckKit.Attribute var creationDate = Date.now
        @DeckKit.Attribute(.externalStorage) var image: Data? = nil
        @DeckKit.Attribute var reviewCount = 0
        @DeckKit.Relationship var deck: Deck? = nil
        @DeckKit.Relationship(inverse: \Tag.cards) var tags: [Tag] = []
        required init() {}
    }

    final class Tag: ModelObject {
        @DeckKit.Attribute(.unique) var name = ""
        @DeckKit.Relationship var cards: [Card] = []
        required init() {}
    }
}

/// Typed and generic access agree: a document `deck new --schema` made opens in the typed API,
/// and what the typed API saved reads back in `deck query` and verifies clean.
@Suite(.timed) struct EndToEndTypedModelTests {
    @Test func aDocumentFromTheCLIOpensInTheTypedAPIAndBack() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Typed.deck")
        let made = try deck("new", path, "--schema", e2eSampleSchemaPath)
        try #require(made.status == 0, "\(made.stderr)")
        do {
            let container = try ModelContainer(
                for: Vocabulary.Deck.self, configurations: ModelConfiguration(url: URL(fileURLWithPath: path))
            )
            let context = ModelContext(container)
            let spanish = Vocabulary.Deck()
            spanish.title = "Spanish"
            let card = Vocabulary.Card()
            card.front = "hola"
            card.back = "hello"
            card.reviewCount = 2
            card.deck = spanish
            let greeting = Vocabulary.Tag()
            greeting.name = "greeting"
            card.tags = [greeting]
            context.insert(spanish)
            try context.save()
        }
        let query = try deck("query", path, "Card", "--json")
        #expect(query.status == 0, "\(query.stderr)")
        let cards = try e2eJSONArray(query.stdout)
        #expect(cards.count == 1)
        #expect(cards.first?["front"] as? String == "hola")
        #expect(cards.first?["reviewCount"] as? Int == 2)
        let verify = try deck("verify", path)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        // And a record the CLI adds is a model to the typed API.
        let inserted = try deck("insert", path, "Card", "front=adiós", "back=goodbye")
        try #require(inserted.status == 0, "\(inserted.stderr)")
        let container = try ModelContainer(
            for: Vocabulary.Deck.self, configurations: ModelConfiguration(url: URL(fileURLWithPath: path)))
        let frontsContext = ModelContext(container)
        let fronts = try frontsContext.fetch(
            FetchDescriptor<Vocabulary.Card>(sortBy: [SortDescriptor(\.front)])
        ).map(\.front)
        #expect(fronts == ["adiós", "hola"])
    }

    @Test func aDocumentTheTypedAPIMadeHasTheInitialValuesAsDefaults() throws {
        final class Note: ModelObject {
            @DeckKit.Attribute var title = "Untitled"
            @DeckKit.Attribute var stars = 3
            @DeckKit.Attribute var created = Date.now
            @DeckKit.Attribute var epoch = Date(timeIntervalSince1970: 0)
            @DeckKit.Attribute var token = UUID()
            @DeckKit.Attribute var body: String? = nil
            required init() {}
        }
        let directory = try TemporaryDirectory()
        let path = directory.appending("Notes.deck")
        let url = URL(fileURLWithPath: path)
        let schema = try #require(Schema([Note.self]).storeSchema)
        let note = try #require(schema.entity(named: "Note"))
        func attribute(_ name: String) -> StoreSchema.Attribute? { note.attributes.first { $0.name == name } }
        #expect(attribute("title")?.defaultValue == .string("Untitled"))
        #expect(attribute("stars")?.defaultValue == .integer(3))
        #expect(attribute("created")?.dynamicDefault == .now)
        #expect(attribute("created")?.defaultValue == nil)
        #expect(attribute("epoch")?.defaultValue == .date(Timestamp(timeIntervalSince1970: 0)))
        // A value every instance gets anew has no default; an optional needs none.
        #expect(attribute("token")?.defaultValue == nil)
        #expect(attribute("token")?.dynamicDefault == nil)
        #expect(attribute("body")?.defaultValue == nil)
        do {
            let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
            try ModelContext(container).save()
        }
        // The CLI fills in what it is not given (every attribute but the UUID).
        let before = Date().timeIntervalSince1970
        let inserted = try deck("insert", path, "Note", "token=E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        try #require(inserted.status == 0, "\(inserted.stderr)")
        let container = try ModelContainer(for: Note.self, configurations: ModelConfiguration(url: url))
        let notesContext = ModelContext(container)
        let notes = try notesContext.fetch(FetchDescriptor<Note>())
        let saved = try #require(notes.first)
        #expect(saved.title == "Untitled")
        #expect(saved.stars == 3)
        #expect(saved.created.timeIntervalSince1970 >= before.rounded(.down))
        #expect(saved.epoch == Date(timeIntervalSince1970: 0))
        // Only the UUID is left for `deck lint` to name.
        let lint = try deck("lint", path)
        #expect(lint.status == 1)
        #expect(lint.stdout.contains("Note.token"), "\(lint.stdout)")
        #expect(
            !lint.stdout.contains("Note.title") && !lint.stdout.contains("Note.created"), "\(lint.stdout)")
    }

    @Test func modelsThatDifferFromTheDocumentAreRefusedNamingTheDifference() throws {
        final class Card: ModelObject {
            @DeckKit.Attribute var front = ""
            @DeckKit.Attribute var back = 0
            required init() {}
        }
        let directory = try TemporaryDirectory()
        let path = directory.appending("Typed.deck")
        let made = try deck("new", path, "--schema", e2eSampleSchemaPath)
        try #require(made.status == 0, "\(made.stderr)")
        #expect {
            try ModelContainer(
                for: Card.self, configurations: ModelConfiguration(url: URL(fileURLWithPath: path)))
        } throws: { error in
            guard case .schemaMismatch(_, let differences) = error as? DeckError else { return false }
            return differences.contains { $0.contains("Card.back") && $0.contains("string") }
                && differences.contains { $0.contains("Card.reviewCount") }
                && differences.contains { $0.hasPrefix("Deck") }
        }
    }
}
