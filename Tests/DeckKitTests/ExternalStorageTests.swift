import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// `.externalStorage` values written from files and copied out to files, never whole in memory
/// once saved.
@Suite("External storage through files", .timed)
struct ExternalStorageTests {
    typealias Card = Flash.Card

    /// A file of `count` bytes of a pattern that differs per `seed`.
    func makeFile(_ directory: ScratchDirectory, _ name: String, count: Int, seed: UInt8) throws -> URL {
        let url = directory.appending(name)
        try Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) &+ seed }).write(to: url)
        return url
    }

    func makeContainer(_ directory: ScratchDirectory) throws -> ModelContainer {
        try ModelContainer(
            for: Card.self, configurations: ModelConfiguration(url: directory.appending("cards.deck")))
    }

    @Test("A value set from a file is saved as a blob and reads back byte for byte")
    func setFromFileAndSave() throws {
        let directory = try ScratchDirectory()
        let photo = try makeFile(directory, "photo.bin", count: 300_000, seed: 7)
        let container = try makeContainer(directory)
        let context = ModelContext(container)
        let card = Card(front: "gato")
        context.insert(card)
        try context.setExternalStorage(\.image, of: card, contentsOf: photo)
        try context.save()
        #expect(try container.store.info().blobCount == 1)
        #expect(card.image == (try Data(contentsOf: photo)))
        let other = ModelContext(container)
        let copy = try #require(try other.model(for: card.persistentModelID) as? Card)
        let out = directory.appending("out.bin")
        #expect(try other.copyExternalStorage(\.image, of: copy, to: out))
        #expect(try Data(contentsOf: out) == Data(contentsOf: photo))
        #expect(copy.image == (try Data(contentsOf: photo)))
        #expect(try DeckDocument.verify(at: container.store.url).findings.isEmpty)
    }

    @Test("A small file is stored inline, under the attribute's threshold")
    func smallFileIsInline() throws {
        let directory = try ScratchDirectory()
        let small = try makeFile(directory, "small.bin", count: 100, seed: 1)
        let container = try makeContainer(directory)
        let context = ModelContext(container)
        let card = Card(front: "sí")
        context.insert(card)
        try context.setExternalStorage(\.image, of: card, contentsOf: small)
        try context.save()
        #expect(try container.store.info().blobCount == 0)
        #expect(card.image == (try Data(contentsOf: small)))
    }

    @Test("Replacing a saved value from a file is a change; the old blob goes with the save")
    func replaceSavedValue() throws {
        let directory = try ScratchDirectory()
        let first = try makeFile(directory, "first.bin", count: 200_000, seed: 1)
        let second = try makeFile(directory, "second.bin", count: 250_000, seed: 2)
        let container = try makeContainer(directory)
        let context = ModelContext(container)
        let card = Card(front: "perro")
        context.insert(card)
        try context.setExternalStorage(\.image, of: card, contentsOf: first)
        try context.save()
        try context.setExternalStorage(\.image, of: card, contentsOf: second)
        #expect(card.hasChanges && context.hasChanges)
        try context.save()
        #expect(try container.store.info().blobCount == 1)
        let fresh = ModelContext(container)
        let copy = try #require(try fresh.fetch(FetchDescriptor<Card>()).first)
        #expect(copy.image == (try Data(contentsOf: second)))
    }

    @Test("Before the save, reading or copying the value reads the file; assigning replaces it")
    func beforeTheSave() throws {
        let directory = try ScratchDirectory()
        let photo = try makeFile(directory, "photo.bin", count: 70_000, seed: 3)
        let container = try makeContainer(directory)
        let context = ModelContext(container)
        let card = Card(front: "gato")
        context.insert(card)
        try context.setExternalStorage(\.image, of: card, contentsOf: photo)
        let out = directory.appending("out.bin")
        #expect(try context.copyExternalStorage(\.image, of: card, to: out))
        #expect(try Data(contentsOf: out) == Data(contentsOf: photo))
        // Fetching with the change pending writes it in a transaction that is rolled back.
        #expect(try context.fetchCount(FetchDescriptor<Card>()) == 1)
        try context.setExternalStorage(\.image, of: card, contentsOf: photo)
        card.image = Data([1, 2, 3])
        try context.save()
        #expect(try ModelContext(container).fetch(FetchDescriptor<Card>()).first?.image == Data([1, 2, 3]))
        #expect(try container.store.info().blobCount == 0)
    }

    @Test("Rolling back drops a value set from a file")
    func rollback() throws {
        let directory = try ScratchDirectory()
        let photo = try makeFile(directory, "photo.bin", count: 80_000, seed: 4)
        let container = try makeContainer(directory)
        let context = ModelContext(container)
        let card = Card(front: "gato")
        card.image = Data([9])
        context.insert(card)
        try context.save()
        try context.setExternalStorage(\.image, of: card, contentsOf: photo)
        context.rollback()
        #expect(card.image == Data([9]))
        #expect(!context.hasChanges)
    }

    @Test("A nil value copies nothing")
    func nilCopiesNothing() throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        let context = ModelContext(container)
        let card = Card(front: "nada")
        context.insert(card)
        try context.save()
        let out = directory.appending("out.bin")
        #expect(try !context.copyExternalStorage(\.image, of: card, to: out))
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    @Test("Wrong files, key paths and models are refused, changing nothing")
    func refusals() throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory)
        let context = ModelContext(container)
        let card = Card(front: "gato")
        card.image = Data(repeating: 1, count: 70_000)
        let outsider = Card(front: "fuera")
        context.insert(card)
        try context.save()
        let fetchedContext = ModelContext(container)
        let fetched = try #require(try fetchedContext.fetch(FetchDescriptor<Card>()).first)
        func kind(_ body: () throws -> Void) -> String {
            do {
                try body()
                return "no error"
            } catch let error as DeckError {
                switch error {
                case .notFound: return "notFound"
                case .notARegularFile: return "notARegularFile"
                case .invalidQuery: return "invalidQuery"
                case .misuse: return "misuse"
                default: return "\(error)"
                }
            } catch {
                return "\(error)"
            }
        }
        let photo = try makeFile(directory, "photo.bin", count: 10, seed: 0)
        #expect(
            kind {
                try context.setExternalStorage(\.image, of: card, contentsOf: directory.appending("missing"))
            } == "notFound")
        #expect(
            kind { try context.setExternalStorage(\.image, of: card, contentsOf: directory.url) }
                == "notARegularFile")
        #expect(
            kind { try context.setExternalStorage(\.front, of: card, contentsOf: photo) } == "invalidQuery")
        #expect(kind { try context.setExternalStorage(\.image, of: outsider, contentsOf: photo) } == "misuse")
        #expect(kind { try context.copyExternalStorage(\.image, of: outsider, to: photo) } == "misuse")
        // A blob is never copied over a directory.
        #expect(
            kind { try fetchedContext.copyExternalStorage(\.image, of: fetched, to: directory.url) }
                != "no error")
        #expect(!context.hasChanges)
    }

    @Test("A file that goes away before the save fails the save, which keeps the change and the old value")
    func fileGoneBeforeTheSave() throws {
        let directory = try ScratchDirectory()
        let old = try makeFile(directory, "old.bin", count: 100_000, seed: 5)
        let new = try makeFile(directory, "new.bin", count: 120_000, seed: 6)
        let container = try makeContainer(directory)
        let context = ModelContext(container)
        let card = Card(front: "gato")
        context.insert(card)
        try context.setExternalStorage(\.image, of: card, contentsOf: old)
        try context.save()
        try context.setExternalStorage(\.image, of: card, contentsOf: new)
        try FileManager.default.removeItem(at: new)
        // A fetch with the change pending neither copies nor needs the file.
        #expect(try context.fetchCount(FetchDescriptor<Card>(predicate: #Predicate { $0.image != nil })) == 1)
        // Reading the value fails to load it; the save must not write nil in its place.
        _ = card.image
        #expect(context.lastLoadError != nil)
        #expect(throws: DeckError.self) { try context.save() }
        #expect(context.hasChanges)
        let reader = ModelContext(container)
        let stored = try #require(try reader.fetch(FetchDescriptor<Card>()).first)
        #expect(stored.image == (try Data(contentsOf: old)))
        #expect(try container.store.info().blobCount == 1)
        #expect(try DeckDocument.verify(at: container.store.url).findings.isEmpty)
    }
}
