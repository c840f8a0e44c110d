import DeckKit
import DeckSamples
import DeckTestTiming
import Foundation
import Testing

/// `deck new`: empty documents, content types, the sample, schema files, and refusals.
@Suite("End to end: deck new", .timed)
struct EndToEndNewTests {
    /// The names in `directory` other than the ones given: leftovers of a failed create.
    func leftovers(_ directory: TemporaryDirectory, except names: Set<String>) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !names.contains($0) }
    }

    @Test func plainCreatesAnEmptyGenericDocument() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Notes.deck")
        let result = try deck("new", path)
        e2eExpectSuccess(result)
        #expect(result.stdout == "Created org.deck.document document \(path)\n")
        for name in ["manifest.json", "store.sqlite", "blobs"] {
            #expect(FileManager.default.fileExists(atPath: path + "/" + name), "missing \(name)")
        }
        let info = try e2eJSONObject(try deck("open", path, "--json").stdout)
        #expect(info["contentType"] as? String == "org.deck.document")
        #expect((info["entities"] as? [Any])?.isEmpty == true)
        e2eExpectSuccess(try deck("verify", path))
        #expect(try leftovers(directory, except: ["Notes.deck"]).isEmpty)
    }

    @Test func typeSetsTheContentType() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Notes.deck")
        let result = try deck("new", path, "--type", "org.example.notes")
        e2eExpectSuccess(result)
        #expect(result.stdout == "Created org.example.notes document \(path)\n")
        let manifest = try e2eJSONObject(
            String(
                decoding: try Data(contentsOf: URL(fileURLWithPath: path + "/manifest.json")), as: UTF8.self))
        #expect(manifest["contentType"] as? String == "org.example.notes")
        #expect(manifest["format"] as? String == "org.deck.package")
        #expect(manifest["formatVersion"] as? Int == 6)
        #expect(manifest["minimumReaderVersion"] as? Int == 4)
    }

    @Test func jsonOutput() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Notes.deck")
        let result = try deck("new", path, "--type", "org.example.notes", "--json")
        e2eExpectSuccess(result)
        let object = try e2eJSONObject(result.stdout)
        #expect(object["path"] as? String == path)
        #expect(object["contentType"] as? String == "org.example.notes")
        #expect(object["formatVersion"] as? Int == 6)
    }

    @Test func sampleHasTenCardsTwoDecksFiveTagsSixBlobs() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Spanish.deck")
        let result = try deck("new", path, "--sample", "flashcards")
        e2eExpectSuccess(result)
        #expect(result.stdout == "Created org.deck.flashcards document \(path)\n")

        let cards = try deck("query", path, "Card")
        e2eExpectSuccess(cards)
        #expect(cards.stdout.hasSuffix("(10 records)\n"))
        for front in [
            "hola", "adiós", "gracias", "por favor", "el gato", "el perro", "bonjour", "merci", "le chat",
            "la pomme",
        ] {
            #expect(cards.stdout.contains(front), "no card '\(front)'")
        }
        #expect(try deck("query", path, "Card", "--count").stdout == "10\n")
        #expect(try deck("query", path, "Deck", "--count").stdout == "2\n")
        #expect(try deck("query", path, "Tag", "--count").stdout == "5\n")
        #expect(try e2eBlobFiles(path).count == 6)

        // The library agrees.
        let report = try PackageVerifier.verify(at: URL(fileURLWithPath: path))
        #expect(report.isValid)
        #expect(report.findings.isEmpty)
        #expect(report.blobsChecked == 6)
    }

    @Test func sampleKeepsAnExplicitType() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Mine.deck")
        let result = try deck("new", path, "--sample", "flashcards", "--type", "org.example.cards")
        e2eExpectSuccess(result)
        #expect(result.stdout == "Created org.example.cards document \(path)\n")
        #expect(try deck("query", path, "Card", "--count").stdout == "10\n")
    }

    @Test func schemaFileFromTheRepository() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("FromFile.deck")
        let result = try deck("new", path, "--schema", e2eSampleSchemaPath, "--type", "org.deck.flashcards")
        e2eExpectSuccess(result)
        let inspect = try deck("inspect", path, "--json")
        e2eExpectSuccess(inspect)
        let info = try e2eJSONObject(inspect.stdout)
        let entities = try #require(info["entities"] as? [[String: Any]])
        #expect(entities.map { $0["name"] as? String } == ["Deck", "Card", "Tag"])
        #expect(entities.allSatisfy { $0["records"] as? Int == 0 })
        // The stored schema is the file's schema, and the same as the built-in sample's.
        let stored = try #require(info["schema"] as? [String: Any])
        let storedData = try JSONSerialization.data(withJSONObject: stored)
        let schema = try JSONDecoder().decode(StoreSchema.self, from: storedData)
        #expect(schema == FlashcardsSample.schema)
        // And it works: a record can go in.
        e2eExpectSuccess(try deck("insert", path, "Tag", "name=first"))
        #expect(try deck("query", path, "Tag", "--count").stdout == "1\n")
    }

    @Test func schemaFileThatIsNotJSON() throws {
        let directory = try TemporaryDirectory()
        let schemaPath = directory.appending("bad.json")
        try "this is not json".write(toFile: schemaPath, atomically: true, encoding: .utf8)
        let path = directory.appending("Bad.deck")
        let result = try deck("new", path, "--schema", schemaPath)
        e2eExpectFailure(result, status: 65, "invalid schema", schemaPath, "JSON")
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try leftovers(directory, except: ["bad.json"]).isEmpty)
    }

    @Test func schemaFileWithAnUnknownAttributeType() throws {
        let directory = try TemporaryDirectory()
        let schemaPath = directory.appending("bad.json")
        try """
        {"version": "1.0.0", "entities": [{"name": "Note", "attributes": [{"name": "body", "type": "blob"}]}]}
        """.write(toFile: schemaPath, atomically: true, encoding: .utf8)
        let path = directory.appending("Bad.deck")
        let result = try deck("new", path, "--schema", schemaPath)
        e2eExpectFailure(result, status: 65, "invalid schema", "blob", "type")
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try leftovers(directory, except: ["bad.json"]).isEmpty)
    }

    @Test func schemaFileWithARelationshipToAnUnknownEntity() throws {
        let directory = try TemporaryDirectory()
        let schemaPath = directory.appending("bad.json")
        try """
        {"version": "1.0.0", "entities": [
          {"name": "Note", "attributes": [{"name": "title", "type": "string"}],
           "relationships": [{"name": "folder", "destination": "Folder"}]}]}
        """.write(toFile: schemaPath, atomically: true, encoding: .utf8)
        let path = directory.appending("Bad.deck")
        let result = try deck("new", path, "--schema", schemaPath)
        e2eExpectFailure(
            result, status: 65, "invalid schema",
            "relationship 'Note.folder' points to unknown entity 'Folder'")
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try leftovers(directory, except: ["bad.json"]).isEmpty)
    }

    @Test func schemaFileWithoutItsVersion() throws {
        let directory = try TemporaryDirectory()
        let schemaPath = directory.appending("bad.json")
        try #"{"entities": []}"#.write(toFile: schemaPath, atomically: true, encoding: .utf8)
        let result = try deck("new", directory.appending("Bad.deck"), "--schema", schemaPath)
        e2eExpectFailure(result, status: 65, "invalid schema", "missing key 'version'")
    }

    @Test func missingSchemaFile() throws {
        let directory = try TemporaryDirectory()
        let schemaPath = directory.appending("nowhere.json")
        let path = directory.appending("Bad.deck")
        let result = try deck("new", path, "--schema", schemaPath)
        e2eExpectFailure(result, status: 66, schemaPath, "no such file or directory")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func existingPackageIsLeftUntouched() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let manifestBefore = try Data(contentsOf: URL(fileURLWithPath: path + "/manifest.json"))
        let storeBefore = try Data(contentsOf: URL(fileURLWithPath: path + "/store.sqlite"))
        let result = try deck("new", path)
        e2eExpectFailure(result, status: 73, path, "already exists")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/manifest.json")) == manifestBefore)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/store.sqlite")) == storeBefore)
        #expect(try deck("query", path, "Card", "--count").stdout == "10\n")
        #expect(try leftovers(directory, except: ["Spanish.deck"]).isEmpty)
    }

    @Test func existingFileIsLeftUntouched() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("notes.txt")
        try "keep me\n".write(toFile: path, atomically: true, encoding: .utf8)
        let result = try deck("new", path, "--sample", "flashcards")
        e2eExpectFailure(result, status: 73, path, "already exists")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "keep me\n")
        #expect(try leftovers(directory, except: ["notes.txt"]).isEmpty)
    }

    @Test func existingEmptyDirectoryIsNotReplaced() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Empty.deck")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        let result = try deck("new", path)
        e2eExpectFailure(result, status: 73, "already exists")
        #expect(try FileManager.default.contentsOfDirectory(atPath: path).isEmpty)
    }

    @Test func sampleAndSchemaCannotBeCombined() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Both.deck")
        let result = try deck("new", path, "--sample", "flashcards", "--schema", e2eSampleSchemaPath)
        e2eExpectUsageError(result, command: "deck new", "--sample and --schema cannot be combined")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func unknownSample() throws {
        let directory = try TemporaryDirectory()
        let result = try deck("new", directory.appending("X.deck"), "--sample", "recipes")
        e2eExpectUsageError(
            result, command: "deck new", "Invalid value 'recipes' for '--sample <name>'", "'flashcards'")
    }

    @Test func parentDirectoryMustExist() throws {
        let directory = try TemporaryDirectory()
        let result = try deck("new", directory.appending("missing/X.deck"))
        e2eExpectFailure(result, status: 66, "no such file or directory")
        #expect(!FileManager.default.fileExists(atPath: directory.appending("missing")))
    }
}
