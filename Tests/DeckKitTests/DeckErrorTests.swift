import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// Failures as a library user meets them: each one a `DeckError` case that a `switch` or a
/// `catch` pattern matches, carrying the path, entity, property or record concerned, with the
/// `kind` a caller (the `deck` tool among them) decides by. Public API only; no message text
/// is matched.
@Suite(.timed) struct DeckErrorTests {
    @Test func aMissingPackageIsNotFound() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("Missing.deck")
        let error = deckError { _ = try PackageStore.open(at: url, mode: .readOnly) }
        guard case .notFound(let path)? = error else {
            Issue.record("expected notFound, got \(String(describing: error))")
            return
        }
        #expect(path.hasSuffix("/Missing.deck"))
        #expect(error?.kind == .cannotOpen)
    }

    @Test func aDirectoryWithoutAManifestIsNotAPackage() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("Plain")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        let error = deckError { _ = try PackageStore.open(at: url, mode: .readWrite) }
        guard case .notAPackage(let path, _)? = error else {
            Issue.record("expected notAPackage, got \(String(describing: error))")
            return
        }
        #expect(path.hasSuffix("/Plain"))
        #expect(error?.kind == .cannotOpen)
        // Nothing was written into it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: url.path).isEmpty)
    }

    @Test func creatingOverAnExistingPackageIsRefused() throws {
        let directory = try ScratchDirectory()
        let url = try makeCardsPackage(in: directory)
        let before = try cardContents(url)
        let error = deckError {
            _ = try PackageStore.create(at: url, contentType: "org.example.cards", schema: publicSchema)
        }
        guard case .alreadyExists(let path)? = error else {
            Issue.record("expected alreadyExists, got \(String(describing: error))")
            return
        }
        #expect(path.hasSuffix("/Cards.deck"))
        #expect(error?.kind == .alreadyExists)
        #expect(try cardContents(url) == before)
    }

    @Test func aPackageForANewerReaderIsTooNew() throws {
        let directory = try ScratchDirectory()
        let url = try makeCardsPackage(in: directory)
        let manifestURL = url.appendingPathComponent("manifest.json")
        var manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as? [String: Any])
        manifest["formatVersion"] = 99
        manifest["minimumReaderVersion"] = 99
        try JSONSerialization.data(withJSONObject: manifest).write(to: manifestURL)
        for mode in [PackageStore.Mode.readOnly, .readWrite] {
            let error = deckError { _ = try PackageStore.open(at: url, mode: mode) }
            guard case .tooNew(_, let version, let supported)? = error else {
                Issue.record("\(mode): expected tooNew, got \(String(describing: error))")
                continue
            }
            #expect(version == 99, "\(mode)")
            #expect(supported == PackageStore.formatVersion, "\(mode)")
            #expect(error?.kind == .cannotOpen, "\(mode)")
        }
    }

    @Test func namesTheSchemaDoesNotHaveAreUnknown() throws {
        let directory = try ScratchDirectory()
        let store = try PackageStore.open(at: try makeCardsPackage(in: directory), mode: .readWrite)
        defer { try? store.close(discardingChanges: true) }

        let entity = deckError { _ = try store.write { try $0.insert("Cart", ["front": .string("x")]) } }
        guard case .unknownEntity(let name, let known)? = entity else {
            Issue.record("expected unknownEntity, got \(String(describing: entity))")
            return
        }
        #expect(name == "Cart")
        #expect(Set(known) == ["Card", "Deck"])
        #expect(entity?.kind == .invalidData)

        let property = deckError { _ = try store.write { try $0.insert("Card", ["frnt": .string("x")]) } }
        guard case .unknownProperty(let owner, let propertyName, let properties)? = property else {
            Issue.record("expected unknownProperty, got \(String(describing: property))")
            return
        }
        #expect(owner == "Card" && propertyName == "frnt")
        #expect(properties.contains("front"))
        #expect(property?.kind == .invalidData)

        let query = deckError { _ = try store.read { try $0.fetch(RecordQuery("Nope")) } }
        guard case .unknownEntity("Nope", _)? = query else {
            Issue.record("expected unknownEntity for a query, got \(String(describing: query))")
            return
        }
        // None of it changed anything.
        #expect(try store.read { try $0.count(RecordQuery("Card")) } == 3)
    }

    @Test func aValueOfTheWrongTypeIsInvalid() throws {
        let directory = try ScratchDirectory()
        let store = try PackageStore.open(at: try makeCardsPackage(in: directory), mode: .readWrite)
        defer { try? store.close(discardingChanges: true) }
        let error = deckError {
            _ = try store.write { try $0.insert("Card", ["front": .string("x"), "level": .string("high")]) }
        }
        guard case .invalidValue(let entity, let property, _)? = error else {
            Issue.record("expected invalidValue, got \(String(describing: error))")
            return
        }
        #expect(entity == "Card" && property == "level")
        #expect(error?.kind == .invalidData)
    }

    @Test func recordErrorsNameTheRecord() throws {
        let directory = try ScratchDirectory()
        let store = try PackageStore.open(at: try makeCardsPackage(in: directory), mode: .readWrite)
        defer { try? store.close(discardingChanges: true) }
        let deck = try #require(try store.read { try $0.fetchIDs(RecordQuery("Deck")) }.first)

        let missing = deckError {
            try store.write { try $0.update("Card", id: 9_999, ["front": .string("x")]) }
        }
        guard case .recordNotFound("Card", 9_999)? = missing else {
            Issue.record("expected recordNotFound, got \(String(describing: missing))")
            return
        }

        let duplicate = deckError {
            _ = try store.write { try $0.insert("Deck", ["title": .string("Spanish")]) }
        }
        guard case .uniqueViolation("Deck", let properties)? = duplicate else {
            Issue.record("expected uniqueViolation, got \(String(describing: duplicate))")
            return
        }
        #expect(properties == ["title"])

        let denied = deckError { _ = try store.write { try $0.delete("Deck", id: deck) } }
        guard case .deleteDenied("Deck", deck, "cards", 3)? = denied else {
            Issue.record("expected deleteDenied, got \(String(describing: denied))")
            return
        }
        for error in [missing, duplicate, denied] {
            #expect(error?.kind == .invalidData, "\(String(describing: error))")
        }
        #expect(try store.read { try $0.count(RecordQuery("Deck")) } == 1)
    }

    @Test func aReadOnlyStoreRefusesWritesAndAClosedOneEverything() throws {
        let directory = try ScratchDirectory()
        let url = try makeCardsPackage(in: directory)
        let store = try PackageStore.open(at: url, mode: .readOnly)
        let write = deckError { _ = try store.write { try $0.insert("Deck", ["title": .string("French")]) } }
        guard case .readOnly(let path)? = write else {
            Issue.record("expected readOnly, got \(String(describing: write))")
            return
        }
        #expect(path.hasSuffix("/Cards.deck"))
        try store.close()
        let read = deckError { _ = try store.read { try $0.count(RecordQuery("Card")) } }
        guard case .closed? = read else {
            Issue.record("expected closed, got \(String(describing: read))")
            return
        }
        #expect(read?.kind == .misuse)
    }

    @Test func aDamagedStoreIsInvalidDataNotSomethingElse() throws {
        let directory = try ScratchDirectory()
        let url = try makeCardsPackage(in: directory)
        // Overwrite the store's header: SQLite no longer recognises the file.
        let store = try FileHandle(forWritingTo: url.appendingPathComponent("store.sqlite"))
        try store.write(contentsOf: Data(repeating: 0x5a, count: 100))
        try store.close()
        let error = deckError { _ = try PackageStore.open(at: url, mode: .readOnly) }
        #expect(error?.kind == .invalidData, "\(String(describing: error))")
        switch error {
        case .corrupt(let path, _)?: #expect(path.hasSuffix("Cards.deck") || path.hasSuffix("store.sqlite"))
        case .sqlite(let sqlite)?: #expect(sqlite.code.primary == .notADatabase, "\(sqlite)")
        default: Issue.record("expected corrupt or a SQLite notADatabase, got \(String(describing: error))")
        }
        #expect(!(try DeckDocument.verify(at: url).isValid))
    }
}
