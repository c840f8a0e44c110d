import DeckKit
import DeckSamples
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `deck open` (summary) and `deck inspect` (everything), on good packages and on everything that
/// is not one.
@Suite("End to end: deck open and deck inspect", .timed)
struct EndToEndOpenInspectTests {
    @Test func openTextSummary() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("open", path)
        e2eExpectSuccess(result)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == path)
        #expect(lines.contains("  type:     org.deck.flashcards"))
        #expect(lines.contains("  format:   \(PackageStore.formatVersion)   schema: 1.0.0"))
        #expect(lines.contains { $0.hasPrefix("  floor:    1.0.0   fingerprint: ") && $0.count == 97 })
        #expect(lines.contains("  writer:   none"))
        #expect(lines.contains { $0.hasPrefix("  blobs:    6 (") })
        #expect(lines.contains { $0.hasPrefix("  modified: ") })
        #expect(lines.contains("entities:"))
        #expect(lines.contains("  Deck  2"))
        #expect(lines.contains("  Card  10"))
        #expect(lines.contains("  Tag   5"))
        // The summary has no schema section.
        #expect(!result.stdout.contains("schema:\n"))
    }

    @Test func openJSON() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("open", path, "--json")
        e2eExpectSuccess(result)
        let info = try e2eJSONObject(result.stdout)
        #expect(info["path"] as? String == path)
        #expect(info["contentType"] as? String == "org.deck.flashcards")
        #expect(info["formatVersion"] as? Int == PackageStore.formatVersion)
        #expect(info["schemaVersion"] as? String == "1.0.0")
        #expect(info["lockHolder"] is NSNull)
        #expect(info["created"] is String)
        #expect(info["modified"] is String)
        // The version bookkeeping (format 5): the sample was made in one session.
        let versions = try #require(info["versions"] as? [String: Any])
        #expect(versions["writers"] as? Int == 1 && versions["tombstones"] as? Int == 0)
        #expect((versions["clock"] as? Int ?? 0) > 0 && versions["changedCells"] as? Int == 0)
        e2eExpectSuccess(try deck("delete", path, "Card", "-w", "front == 'hola'"))
        e2eExpectSuccess(try deck("update", path, "Card", "back=hi", "-w", "front == 'adiós'"))
        let after = try #require(
            try e2eJSONObject(try deck("open", path, "--json").stdout)["versions"] as? [String: Any])
        #expect(
            after["writers"] as? Int == 3 && after["tombstones"] as? Int == 1
                && after["changedCells"] as? Int == 1)
        #expect((after["clock"] as? Int ?? 0) > (versions["clock"] as? Int ?? 0))
        let text = try deck("open", path)
        #expect(text.stdout.contains("  versions: clock "), "\(text.stdout)")
        #expect(
            text.stdout.contains("3 write session(s), 1 tombstone(s), 1 changed cell(s)\n"), "\(text.stdout)")
        let entities = try #require(info["entities"] as? [[String: Any]])
        let counts = Dictionary(
            uniqueKeysWithValues: entities.map { ($0["name"] as? String ?? "?", $0["records"] as? Int ?? -1) }
        )
        #expect(counts == ["Deck": 2, "Card": 10, "Tag": 5])
        #expect(entities.allSatisfy { $0["superentity"] is NSNull })
        let blobs = try #require(info["blobs"] as? [String: Any])
        #expect(blobs["count"] as? Int == 6)
        #expect(blobs["bytes"] as? Int == 6 * 90_015)
        #expect(blobs["referencedBytes"] as? Int == 6 * 90_015)
        #expect(blobs["externalValues"] as? Int == 6)
        #expect(blobs["inlineValues"] as? Int == 0)
        let store = try #require(info["store"] as? [String: Any])
        #expect((store["bytes"] as? Int ?? 0) > 0)
        #expect((store["pageSize"] as? Int ?? 0) > 0)
        // open does not print the schema.
        #expect(info["schema"] == nil)
    }

    @Test func inspectTextShowsTheSchema() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("inspect", path)
        e2eExpectSuccess(result)
        let text = result.stdout
        #expect(text.hasPrefix(path + "\n"))
        #expect(text.contains("  Card  10"))
        #expect(text.contains("values:   6 external, 0 inline"))
        #expect(text.contains("schema:\n"))
        #expect(text.contains("    title: string  (unique)"))
        #expect(text.contains("    front: string  (indexed)"))
        #expect(text.contains("    image: data  (optional, external ≥ 64.0 KiB)"))
        #expect(text.contains("    reviewCount: integer  (default 0)"))
        #expect(text.contains("    cards -> [Card]  (delete cascade, inverse deck)"))
        #expect(text.contains("    deck -> Deck  (delete nullify, inverse cards)"))
    }

    @Test func inspectJSONHasTheSchema() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("inspect", path, "--json")
        e2eExpectSuccess(result)
        let info = try e2eJSONObject(result.stdout)
        #expect(info["contentType"] as? String == "org.deck.flashcards")
        let blobs = try #require(info["blobs"] as? [String: Any])
        #expect(blobs["count"] as? Int == 6)
        let schema = try #require(info["schema"] as? [String: Any])
        #expect(schema["version"] as? String == "1.0.0")
        let entities = try #require(schema["entities"] as? [[String: Any]])
        #expect(entities.map { $0["name"] as? String } == ["Deck", "Card", "Tag"])
        let card = try #require(entities.first { $0["name"] as? String == "Card" })
        let attributes = try #require(card["attributes"] as? [[String: Any]])
        #expect(
            attributes.map { $0["name"] as? String } == [
                "front", "back", "creationDate", "image", "reviewCount",
            ])
        let image = try #require(attributes.first { $0["name"] as? String == "image" })
        #expect(image["type"] as? String == "data")
        #expect(image["optional"] as? Bool == true)
        #expect(image["options"] as? [String] == ["externalStorage"])
        // The schema is exactly the library's sample schema.
        let decoded = try JSONDecoder().decode(
            StoreSchema.self, from: JSONSerialization.data(withJSONObject: schema))
        #expect(decoded == FlashcardsSample.schema)
    }

    @Test func openAndInspectCountAnInsertedRecord() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        e2eExpectSuccess(try deck("insert", path, "Tag", "name=extra"))
        let info = try e2eJSONObject(try deck("open", path, "--json").stdout)
        let entities = try #require(info["entities"] as? [[String: Any]])
        #expect(entities.first { $0["name"] as? String == "Tag" }?["records"] as? Int == 6)
    }

    // MARK: Not packages

    /// Runs open, inspect (text and JSON) and query on `path`, expecting the same failure each time.
    func expectAllRefuse(
        _ path: String, status: Int32, _ fragments: String...,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let commands: [[String]] = [
            ["open", path], ["open", path, "--json"], ["inspect", path], ["inspect", path, "--json"],
            ["query", path, "Card"],
        ]
        for arguments in commands {
            let result = try e2eDeck(arguments)
            #expect(
                result.status == status, "\(arguments): \(result.status) \(result.stderr)",
                sourceLocation: sourceLocation)
            #expect(
                result.stdout.isEmpty, "\(arguments) printed \(result.stdout)", sourceLocation: sourceLocation
            )
            #expect(
                result.stderr.hasPrefix("deck: "), "\(arguments): \(result.stderr)",
                sourceLocation: sourceLocation)
            for fragment in fragments {
                #expect(
                    result.stderr.contains(fragment), "\(arguments): \(result.stderr)",
                    sourceLocation: sourceLocation)
            }
        }
    }

    @Test func missingPath() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("nowhere.deck")
        try expectAllRefuse(path, status: 66, "deck: \(path): no such file or directory")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func regularFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("notes.txt")
        try "hello\n".write(toFile: path, atomically: true, encoding: .utf8)
        try expectAllRefuse(path, status: 66, path, "not a Deck package")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "hello\n")
    }

    @Test func emptyDirectory() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Empty.deck")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try expectAllRefuse(path, status: 66, path, "not a Deck package", "no manifest.json")
        // Nothing was created inside (no lock, no tmp).
        #expect(try FileManager.default.contentsOfDirectory(atPath: path).isEmpty)
    }

    @Test func garbageManifest() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Garbage.deck")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try "{{{ not json".write(toFile: path + "/manifest.json", atomically: true, encoding: .utf8)
        try expectAllRefuse(
            path, status: 66, "not a Deck package", "manifest.json is not a valid Deck manifest")
    }

    @Test func manifestOfAnotherFormat() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let manifestPath = path + "/manifest.json"
        let text = try String(contentsOfFile: manifestPath, encoding: .utf8)
        try text.replacingOccurrences(of: "org.deck.package", with: "com.example.other")
            .write(toFile: manifestPath, atomically: true, encoding: .utf8)
        try expectAllRefuse(path, status: 66, "not a Deck package", "com.example.other")
    }

    @Test func packageFromANewerDeck() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let manifestPath = path + "/manifest.json"
        var manifest = try e2eJSONObject(try String(contentsOfFile: manifestPath, encoding: .utf8))
        manifest["formatVersion"] = 99
        manifest["minimumReaderVersion"] = 99
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: manifestPath))
        try expectAllRefuse(
            path, status: 66, "format 99", "upgrade", "hint: this package was written by a newer Deck")
        // verify refuses the same way (it cannot judge a format it does not know).
        e2eExpectFailure(try deck("verify", path), status: 66, "upgrade")
        // And writers too.
        e2eExpectFailure(try deck("insert", path, "Tag", "name=x"), status: 66, "upgrade")
    }

    @Test func inconsistentManifestVersionsAreCorruption() throws {
        // minimumReaderVersion above formatVersion breaks the spec's rule 1 ≤ min ≤ format.
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let manifestPath = path + "/manifest.json"
        var manifest = try e2eJSONObject(try String(contentsOfFile: manifestPath, encoding: .utf8))
        manifest["minimumReaderVersion"] = 99
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: manifestPath))
        try expectAllRefuse(path, status: 65, "corrupt", "minimumReaderVersion 99")
    }

    @Test func truncatedStore() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let storePath = path + "/store.sqlite"
        let store = try Data(contentsOf: URL(fileURLWithPath: storePath))
        try store.prefix(store.count / 2).write(to: URL(fileURLWithPath: storePath))
        try expectAllRefuse(path, status: 65, path, "corrupt", "store.sqlite", "run 'deck verify")
        let verify = try deck("verify", path)
        #expect(verify.status == 65)
        #expect(verify.stdout.contains("corruption: "))
        #expect(verify.stdout.contains("CORRUPT"))
        #expect(verify.stderr.isEmpty)
    }

    @Test func storeThatIsNotSQLite() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        try e2eNoise(8_192, seed: 7).write(to: URL(fileURLWithPath: path + "/store.sqlite"))
        try expectAllRefuse(path, status: 65, "corrupt")
    }

    @Test func missingStore() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        try FileManager.default.removeItem(atPath: path + "/store.sqlite")
        try expectAllRefuse(path, status: 65, "corrupt", "store.sqlite is missing")
    }

    @Test func symbolicLinkToAPackage() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let link = directory.appending("Link.deck")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        try expectAllRefuse(link, status: 66, "not a Deck package", "symbolic link")
    }

    @Test(.enabled(if: getuid() != 0, "root reads everything: nothing to test"))
    func unreadablePackage() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        #expect(chmod(path, 0o000) == 0)
        defer { _ = chmod(path, 0o755) }
        try expectAllRefuse(path, status: 66, path, "permission denied")
        e2eExpectFailure(try deck("verify", path), status: 66, "permission denied")
    }

    @Test func zipFileHintNamesACommandThatExists() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Spanish.zip")
        try Data("PK\u{3}\u{4}".utf8).write(to: URL(fileURLWithPath: path))
        let result = try deck("open", path)
        e2eExpectFailure(result, status: 66, "not a Deck package")
        // The hint sends the user to 'deck import'; that command must exist.
        if result.stderr.contains("'deck import'") {
            let help = try deck("help", "import")
            #expect(help.status == 0, "the hint names 'deck import', which does not exist: \(help.stderr)")
        }
    }
}
