import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// Version 3 of the flash-cards models as a later app build declares them, only adding to
/// version 1 (``CardsV1``): an optional hint, a review count with a default, an external image, a
/// `Tag` entity linked both ways, and a subentity of `Card` with a caption.
enum AdditiveV3: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(3, 0, 0) }
    static var models: [any PersistentModel.Type] { [Card.self, ImageCard.self, Tag.self] }

    class Card: ModelObject {
        @Attribute var question = ""
        @Attribute var answer = ""
        @Attribute var hint: String? = nil
        @Attribute var reviews = 0
        @Attribute(.externalStorage) var image: Data? = nil
        @Relationship(inverse: \Tag.cards) var tags: [Tag] = []
        required init() {}
    }

    final class ImageCard: Card {
        @Attribute var caption = ""
        required init() {}
    }

    final class Tag: ModelObject {
        @Attribute var name = ""
        @Relationship var cards: [Card] = []
        required init() {}
    }
}

/// The same models as ``AdditiveV3``, in a version that says earlier apps must not change its
/// documents.
enum BreakingAdditiveV3: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(3, 0, 0) }
    static var models: [any PersistentModel.Type] { AdditiveV3.models }
    static var isBreaking: Bool { true }
}

/// Version 3 renaming what version 1 reads, and saying so.
enum RenamingV3: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(3, 0, 0) }
    static var models: [any PersistentModel.Type] { [Card.self] }
    static var isBreaking: Bool { true }

    final class Card: ModelObject {
        @Attribute(originalName: "question") var front = ""
        @Attribute var answer = ""
        required init() {}
    }
}

/// The plan from version 1 to `Target`: one lightweight stage.
enum FromVersion1<Target: VersionedSchema>: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [CardsV1.self, Target.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: CardsV1.self, toVersion: Target.self)] }
}

/// A version 1 document taken to `version` by a later app (plan [v1, version], one lightweight
/// stage), which then writes data of its own when `fill` is given.
func makeLaterDocument<Version: VersionedSchema>(
    _ url: URL, version: Version.Type, fill: ((ModelContext) throws -> Void)? = nil
) throws {
    try makeCardsVersion1(url)
    let container = try ModelContainer(
        for: version.schema, migrationPlan: FromVersion1<Version>.self,
        configurations: [ModelConfiguration(url: url)])
    guard let fill else { return }
    let context = ModelContext(container)
    try fill(context)
    try context.save()
}

/// What the later app writes: a hint on "hola", a tag on it, and an image card with an image.
func fillVersion3(_ context: ModelContext) throws {
    let cards = try context.fetch(FetchDescriptor<AdditiveV3.Card>(sortBy: [SortDescriptor(\.question)]))
    let hola = try #require(cards.first { $0.question == "hola" })
    hola.hint = "a greeting"
    hola.reviews = 7
    let tag = AdditiveV3.Tag()
    tag.name = "greetings"
    context.insert(tag)
    hola.tags = [tag]
    let imageCard = AdditiveV3.ImageCard()
    imageCard.question = "perro"
    imageCard.answer = "dog"
    imageCard.caption = "a dog"
    imageCard.image = sampleBytes(100_000, seed: 9)
    context.insert(imageCard)
}

/// Every record of the document (entity by entity, subentities apart) and every to-many link,
/// as the store reads them.
func documentSnapshot(_ url: URL) throws -> (records: Set<Record>, links: [String: [Int64]]) {
    let store = try PackageStore.open(at: url, mode: .readOnly)
    defer { try? store.close() }
    return try store.read { reader in
        var records: Set<Record> = []
        var links: [String: [Int64]] = [:]
        for entity in store.schema.entities {
            for record in try reader.fetch(RecordQuery(entity.name, includesSubentities: false)) {
                records.insert(record)
                for relationship in store.schema.properties(of: entity.name).relationships
                where relationship.isToMany {
                    links["\(entity.name)#\(record.id).\(relationship.name)"] = try reader.related(
                        entity.name, id: record.id, relationship.name
                    ).sorted()
                }
            }
        }
        return (records, links)
    }
}

/// What a document holds: its records and links, its schema's fingerprint, floor and history
/// length, and the bytes of every file but the store and the lock (SQLite's header counters
/// change when a writer opens and closes the store, which is no change to what it holds).
struct DocumentContent: Equatable {
    var records: Set<Record>
    var links: [String: [Int64]]
    var schema: [String?]
    var files: [String: Data]

    init(_ url: URL) throws {
        (records, links) = try documentSnapshot(url)
        let store = try PackageStore.open(at: url, mode: .readOnly)
        let info = try store.info()
        try store.close()
        schema = [info.schemaFingerprint, info.schemaFloor, "\(info.migrations.count)"]
        files = [:]
        let enumerator = FileManager.default.enumerator(
            at: url, includingPropertiesForKeys: [.isRegularFileKey])
        while let file = enumerator?.nextObject() as? URL {
            let name = String(file.path.dropFirst(url.path.count))
            guard try file.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true,
                name != "/store.sqlite", name != "/lock"
            else { continue }
            files[name] = try Data(contentsOf: file)
        }
    }
}

/// The old-app drill of issue 11 (spec section 19): version 1 app code opens documents a version
/// 3 app wrote.
@Suite("Older apps: a version 1 app opens version 3 documents", .timed)
struct OlderAppTests {
    @Test("An additive version 3 opens read-write, and what version 1 does not know survives its saves")
    func additiveReadWrite() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeLaterDocument(url, version: AdditiveV3.self, fill: fillVersion3)
        let before = try documentSnapshot(url)
        do {
            let container = try ModelContainer(
                for: CardsV1.schema, configurations: [ModelConfiguration(url: url)])
            #expect(container.access == .readWrite)
            let context = ModelContext(container)
            let cards = try context.fetch(FetchDescriptor<CardsV1.Card>(sortBy: [SortDescriptor(\.question)]))
            // The image card is a card to version 1.
            #expect(cards.map(\.question) == ["gracias", "hola", "perro"])
            let hola = try #require(cards.first { $0.question == "hola" })
            hola.answer = "hello, hi"
            let perro = try #require(cards.first { $0.question == "perro" })
            perro.answer = "a dog, a hound"
            let card = CardsV1.Card()
            card.question = "gato"
            card.answer = "cat"
            context.insert(card)
            try context.save()
        }
        let container = try ModelContainer(
            for: AdditiveV3.schema, configurations: [ModelConfiguration(url: url)])
        let context = ModelContext(container)
        let cards = try context.fetch(FetchDescriptor<AdditiveV3.Card>(sortBy: [SortDescriptor(\.question)]))
        #expect(cards.map(\.question) == ["gato", "gracias", "hola", "perro"])
        let hola = try #require(cards.first { $0.question == "hola" })
        #expect(hola.answer == "hello, hi")
        #expect(hola.hint == "a greeting")
        #expect(hola.reviews == 7)
        #expect(hola.tags.map(\.name) == ["greetings"])
        let perro = try #require(cards.first { $0.question == "perro" } as? AdditiveV3.ImageCard)
        #expect(perro.answer == "a dog, a hound")
        #expect(perro.caption == "a dog")
        #expect(perro.image == sampleBytes(100_000, seed: 9))
        // The card version 1 inserted has version 3's defaults for what version 1 lacks.
        let gato = try #require(cards.first { $0.question == "gato" })
        #expect(gato.hint == nil && gato.reviews == 0 && gato.image == nil && gato.tags.isEmpty)
        // Nothing but the two answers and the new card changed, byte for byte.
        let after = try documentSnapshot(url)
        let changedOrNew = after.records.subtracting(before.records)
        #expect(
            Set(changedOrNew.compactMap { $0.values["question"] }) == [
                .string("hola"), .string("perro"), .string("gato"),
            ])
        let gone = before.records.subtracting(after.records)
        #expect(Set(gone.compactMap { $0.values["question"] }) == [.string("hola"), .string("perro")])
        for record in gone {
            let now = try #require(after.records.first { $0.entity == record.entity && $0.id == record.id })
            #expect(now.values.filter { $0.key != "answer" } == record.values.filter { $0.key != "answer" })
            #expect(now.globalID == record.globalID)
        }
        for (key, ids) in before.links { #expect(after.links[key] == ids, "\(key)") }
        #expect(try DeckDocument.verify(at: url).findings.isEmpty)
    }

    @Test("Version 1 deletes in an additive version 3 by version 3's delete rules")
    func additiveDelete() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeLaterDocument(url, version: AdditiveV3.self, fill: fillVersion3)
        do {
            let container = try ModelContainer(
                for: CardsV1.schema, configurations: [ModelConfiguration(url: url)])
            let context = ModelContext(container)
            for card in try context.fetch(FetchDescriptor<CardsV1.Card>())
            where ["hola", "perro"].contains(card.question) {
                context.delete(card)
            }
            try context.save()
            #expect(try context.fetchCount(FetchDescriptor<CardsV1.Card>()) == 1)
        }
        let container = try ModelContainer(
            for: AdditiveV3.schema, configurations: [ModelConfiguration(url: url)])
        let context = ModelContext(container)
        #expect(try context.fetch(FetchDescriptor<AdditiveV3.Card>()).map(\.question) == ["gracias"])
        // The tag stays (nullify), without its card; the image card's blob is no longer referenced.
        let tags = try context.fetch(FetchDescriptor<AdditiveV3.Tag>())
        #expect(tags.map(\.name) == ["greetings"] && tags.allSatisfy(\.cards.isEmpty))
        #expect(try DeckDocument.verify(at: url).findings.isEmpty)
    }

    @Test(
        "A breaking version 3 that version 1 cannot read is refused with the version it needs, changing nothing"
    )
    func breakingRefused() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeLaterDocument(url, version: RenamingV3.self)
        let before = try DocumentContent(url)
        #expect {
            try ModelContainer(for: CardsV1.schema, configurations: [ModelConfiguration(url: url)])
        } throws: { error in
            guard case .needsNewerApplication(_, "3.0.0", let reasons) = error as? DeckError else {
                return false
            }
            return reasons == ["Card.question: not in the document"]
                && "\(error)".contains("this document needs version 3.0.0 of the app")
        }
        // Read-only configurations and migration plans are refused alike.
        #expect(throws: DeckError.self) {
            try ModelContainer(
                for: CardsV1.schema, configurations: [ModelConfiguration(url: url, allowsSave: false)])
        }
        #expect(try DocumentContent(url) == before)
    }

    @Test("A breaking version 3 that version 1 can read opens read-only, and a save changes nothing")
    func breakingReadOnly() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeLaterDocument(url, version: BreakingAdditiveV3.self, fill: fillVersion3)
        let before = try DocumentContent(url)
        let container = try ModelContainer(
            for: CardsV1.schema, configurations: [ModelConfiguration(url: url)])
        guard case .readOnly(let reasons) = container.access else {
            Issue.record("expected read-only, got \(container.access)")
            return
        }
        #expect(reasons.count == 1 && reasons[0].contains("compatibility floor is 3.0.0"), "\(reasons)")
        let context = ModelContext(container)
        let cards = try context.fetch(FetchDescriptor<CardsV1.Card>(sortBy: [SortDescriptor(\.question)]))
        #expect(cards.map(\.answer) == ["thank you", "hello; hi", "dog"])
        cards[0].answer = "thanks"
        context.insert(CardsV1.Card())
        #expect {
            try context.save()
        } throws: { error in
            guard case .readOnly = error as? DeckError else { return false }
            return true
        }
        #expect(try DocumentContent(url) == before)
    }

    @Test("A version 3 document made at version 3 opens read-only in version 1: its floor is 3")
    func createdLaterReadOnly() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        do {
            let container = try ModelContainer(
                for: AdditiveV3.schema, configurations: [ModelConfiguration(url: url)])
            let context = ModelContext(container)
            let card = AdditiveV3.Card()
            card.question = "sí"
            context.insert(card)
            try context.save()
        }
        let container = try ModelContainer(
            for: CardsV1.schema, configurations: [ModelConfiguration(url: url)])
        #expect(container.access != .readWrite)
        #expect(try ModelContext(container).fetch(FetchDescriptor<CardsV1.Card>()).map(\.question) == ["sí"])
    }
}
