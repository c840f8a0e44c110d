import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// `deck insert`, `deck update`, `deck delete` and `deck blob get`.
@Suite("End to end: insert, update, delete, blob get", .timed)
struct EndToEndWriteTests {
    /// The one record of `entity` matching `expression`, via `--json`.
    func record(
        _ path: String, _ entity: String, _ expression: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String: Any] {
        let result = try deck("query", path, entity, "--where", expression, "--json")
        #expect(result.status == 0, "\(result.stderr)", sourceLocation: sourceLocation)
        let records = try e2eJSONArray(result.stdout)
        #expect(records.count == 1, "\(expression) matched \(records.count)", sourceLocation: sourceLocation)
        return try #require(records.first, sourceLocation: sourceLocation)
    }

    func related(_ path: String, _ entity: String, _ id: Int64, _ relationship: String) throws -> [Int64] {
        let document = try PackageStore.open(at: URL(fileURLWithPath: path), mode: .readOnly)
        defer { try? document.close() }
        return try document.read { try $0.related(entity, id: id, relationship).sorted() }
    }

    @Test func insertWithEverySampleAttributeType() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck(
            "insert", path, "Card", "front=uno", "back=one", "creationDate=2026-11-30T10:00:00Z",
            "reviewCount=3", "image=" + Data([1, 2, 3, 4]).base64EncodedString(), "deck=#1", "tags=#1,#2")
        e2eExpectSuccess(result)
        #expect(result.stdout == "Inserted Card #11\n")
        let card = try record(path, "Card", "front = uno")
        #expect(card["_id"] as? Int == 11)
        #expect(card["back"] as? String == "one")
        #expect(card["creationDate"] as? String == "2026-11-30T10:00:00.000Z")
        #expect(card["reviewCount"] as? Int == 3)
        #expect(card["image"] as? String == "AQIDBA==")  // small: stored inline, printed as base64
        #expect(card["deck"] as? Int == 1)
        #expect(try related(path, "Card", 11, "tags") == [1, 2])
        #expect(try related(path, "Deck", 1, "cards").contains(11))
        #expect(try related(path, "Tag", 2, "cards").contains(11))
        e2eExpectSuccess(try deck("verify", path))
    }

    @Test func insertUsesDefaults() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        e2eExpectSuccess(try deck("insert", path, "Card", "front=f", "back=b", "creationDate=2026-01-01"))
        let card = try record(path, "Card", "front = f")
        #expect(card["reviewCount"] as? Int == 0)
        #expect(card["image"] is NSNull)
        #expect(card["deck"] is NSNull)
    }

    @Test func insertJSONOutput() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("insert", path, "Tag", "name=verb", "--json")
        e2eExpectSuccess(result)
        let object = try e2eJSONObject(result.stdout)
        #expect(object["id"] as? Int == 6)
        #expect(object["inserted"] as? Bool == true)
    }

    @Test func imageFromAFileBecomesABlob() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let bytes = e2eNoise(100 * 1024, seed: 42)
        let imagePath = directory.appending("photo.bin")
        try bytes.write(to: URL(fileURLWithPath: imagePath))
        let digest = e2eSHA256(bytes)

        let result = try deck(
            "insert", path, "Card", "front=uno", "back=one", "creationDate=2026-11-30", "deck=#1",
            "image=@" + imagePath)
        e2eExpectSuccess(result)
        let card = try record(path, "Card", "front = uno")
        let image = try #require(card["image"] as? [String: Any])
        #expect(image["blob"] as? String == digest)
        #expect(image["size"] as? Int == 100 * 1024)
        let blobPath = try #require(try e2eBlobFiles(path)[digest])
        #expect(blobPath == "\(path)/blobs/\(digest.prefix(2))/\(digest)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: blobPath)) == bytes)

        // blob get to a file.
        let outPath = directory.appending("out.bin")
        let toFile = try deck("blob", "get", path, digest, "-o", outPath)
        e2eExpectSuccess(toFile)
        #expect(toFile.stdout.isEmpty)
        #expect(try Data(contentsOf: URL(fileURLWithPath: outPath)) == bytes)
        // No partial file left beside it.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [
                "Spanish.deck", "out.bin", "photo.bin",
            ])

        // blob get to standard output (compare bytes: the noise is not UTF-8).
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent("deck")
        process.arguments = ["blob", "get", path, digest.uppercased()]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let streamed = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(errors.isEmpty)
        #expect(streamed == bytes)

        // The inspect figures count it.
        let info = try e2eJSONObject(try deck("open", path, "--json").stdout)
        #expect((info["blobs"] as? [String: Any])?["count"] as? Int == 7)
        e2eExpectSuccess(try deck("verify", path))
    }

    @Test func blobGetOverwritesAnExistingOutputFile() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let (digest, blobPath) = try #require(try e2eBlobFiles(path).first)
        let outPath = directory.appending("out.ppm")
        try "old".write(toFile: outPath, atomically: true, encoding: .utf8)
        e2eExpectSuccess(try deck("blob", "get", path, digest, "--output", outPath))
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: outPath))
                == Data(contentsOf: URL(fileURLWithPath: blobPath)))
    }

    @Test func blobGetWithABadDigest() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        for bad in ["abc", String(repeating: "g", count: 64), String(repeating: "a", count: 65)] {
            let result = try deck("blob", "get", path, bad)
            e2eExpectUsageError(result, command: "deck blob get", "'\(bad)' is not a SHA-256 digest")
        }
    }

    @Test func blobGetWithAnUnknownDigest() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let unknown = e2eSHA256(Data("not in this package".utf8))
        let result = try deck("blob", "get", path, unknown)
        e2eExpectFailure(result, status: 65, "blob \(unknown)")
        let outPath = directory.appending("out.bin")
        let toFile = try deck("blob", "get", path, unknown, "-o", outPath)
        e2eExpectFailure(toFile, status: 65, "blob \(unknown)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["Spanish.deck"])
    }

    @Test func blobGetIntoAMissingDirectorySaysSo() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let digest = try #require(try e2eBlobFiles(path).keys.first)
        let outPath = directory.appending("no/such/dir/out.bin")
        let result = try deck("blob", "get", path, digest, "-o", outPath)
        #expect(result.status != 0)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("deck: "))
        #expect(result.stderr.contains("no such file or directory"), "misleading reason: \(result.stderr)")
        #expect(!result.stderr.contains("permission denied"), "misleading reason: \(result.stderr)")
    }

    @Test func nullOption() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck(
            "insert", path, "Card", "front=dos", "back=two", "creationDate=2026-11-30", "--null", "image",
            "--null", "deck", "--json")
        e2eExpectSuccess(result)
        #expect(try e2eJSONObject(result.stdout)["id"] as? Int == 11)
        let card = try record(path, "Card", "front = dos")
        #expect(card["image"] is NSNull)
        #expect(card["deck"] is NSNull)

        // update --null clears a value that was set.
        e2eExpectSuccess(try deck("update", path, "Card", "--where", "front = hola", "--null", "image"))
        #expect(try record(path, "Card", "front = hola")["image"] is NSNull)
        // The image's blob file went away with its last reference.
        #expect(try e2eBlobFiles(path).count == 5)
        e2eExpectSuccess(try deck("verify", path))
    }

    @Test func nullOfAnUnknownKey() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("insert", path, "Tag", "name=x", "--null", "nme")
        e2eExpectFailure(result, status: 65, "has no attribute or relationship 'nme'", "did you mean 'name'")
    }

    @Test func missingRequiredAttribute() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("insert", path, "Card", "front=tres", "creationDate=2026-11-30")
        e2eExpectFailure(result, status: 65, "Card.back", "required")
        #expect(try deck("query", path, "Card", "--count").stdout == "10\n")
    }

    @Test func wrongType() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck(
            "insert", path, "Card", "front=x", "back=y", "creationDate=2026-11-30", "reviewCount=abc")
        e2eExpectFailure(result, status: 65, "Card.reviewCount", "'abc'", "integer")
        let date = try deck("insert", path, "Card", "front=x", "back=y", "creationDate=someday")
        e2eExpectFailure(date, status: 65, "Card.creationDate", "'someday'", "ISO 8601")
        let image = try deck(
            "insert", path, "Card", "front=x", "back=y", "creationDate=2026-11-30",
            "image=@" + directory.appending("none.bin"))
        e2eExpectFailure(image, status: 65, "Card.image", "cannot read file")
        #expect(try deck("query", path, "Card", "--count").stdout == "10\n")
    }

    @Test func badRelationshipValues() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let base = ["insert", path, "Card", "front=x", "back=y", "creationDate=2026-11-30"]
        e2eExpectFailure(try e2eDeck(base + ["deck=#1,#2"]), status: 65, "Card.deck", "one id")
        e2eExpectFailure(
            try e2eDeck(base + ["deck=first"]), status: 65, "Card.deck", "'first' is not a record id")
        e2eExpectFailure(try e2eDeck(base + ["deck=#99"]), status: 65, "Deck #99 does not exist")
        e2eExpectFailure(try e2eDeck(base + ["tags=#1,#77"]), status: 65, "Tag #77 does not exist")
        #expect(try deck("query", path, "Card", "--count").stdout == "10\n")
        e2eExpectSuccess(try deck("verify", path))
    }

    @Test func unknownAttributeSuggestsTheClosest() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("insert", path, "Card", "frnt=x", "back=y", "creationDate=2026-11-30")
        e2eExpectFailure(
            result, status: 65, "entity 'Card' has no attribute or relationship 'frnt'",
            "did you mean 'front'?")
    }

    @Test func unknownEntityOnInsert() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        e2eExpectFailure(
            try deck("insert", path, "Tags", "name=x"), status: 65, "unknown entity 'Tags'",
            "did you mean 'Tag'")
    }

    @Test func assignmentWithoutEquals() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("insert", path, "Tag", "name")
        e2eExpectUsageError(result, command: "deck insert", "'name' is not key=value")
        let empty = try deck("insert", path, "Tag", "=x")
        e2eExpectUsageError(empty, command: "deck insert", "'=x' is not key=value")
    }

    @Test func uniqueViolation() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("insert", path, "Tag", "name=greeting")
        e2eExpectFailure(result, status: 65, "Tag", "another record already has the same name")
        #expect(try deck("query", path, "Tag", "--count").stdout == "5\n")
    }

    @Test func upsertUpdatesTheRecordWithTheSameUniqueValue() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("insert", path, "Tag", "name=greeting", "--upsert", "--json")
        e2eExpectSuccess(result)
        let object = try e2eJSONObject(result.stdout)
        #expect(object["inserted"] as? Bool == false)
        #expect(object["id"] as? Int == 1)
        #expect(try deck("query", path, "Tag", "--count").stdout == "5\n")
        // Text form, and an upsert that does insert.
        let text = try deck("insert", path, "Tag", "name=greeting", "--upsert")
        e2eExpectSuccess(text)
        #expect(text.stdout == "Updated Tag #1\n")
        let fresh = try deck("insert", path, "Tag", "name=verb", "--upsert", "--json")
        e2eExpectSuccess(fresh)
        #expect(try e2eJSONObject(fresh.stdout)["inserted"] as? Bool == true)
        #expect(try deck("query", path, "Tag", "--count").stdout == "6\n")
    }

    @Test func upsertOfADeckChangesItsOtherValues() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck(
            "insert", path, "Deck", "title=Spanish basics", "created=2030-01-01", "--upsert", "--json")
        e2eExpectSuccess(result)
        #expect(try e2eJSONObject(result.stdout)["inserted"] as? Bool == false)
        let spanish = try record(path, "Deck", "title = 'Spanish basics'")
        #expect(spanish["_id"] as? Int == 1)
        #expect(spanish["created"] as? String == "2030-01-01T00:00:00.000Z")
        // Its cards are still its cards.
        #expect(try deck("query", path, "Card", "--where", "deck = #1", "--count").stdout == "6\n")
    }

    @Test func updateNeedsWhereOrAll() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        e2eExpectUsageError(
            try deck("update", path, "Card", "back=z"), command: "deck update", "say which records")
        e2eExpectUsageError(
            try deck("update", path, "Card", "back=z", "--all", "--where", "front = hola"),
            command: "deck update",
            "--where and --all cannot be combined")
        e2eExpectUsageError(
            try deck("update", path, "Card", "--all"), command: "deck update", "nothing to change")
        #expect(try deck("query", path, "Card", "--where", "back = z", "--count").stdout == "0\n")
    }

    @Test func updateWhere() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck(
            "update", path, "Card", "--where", "front = hola", "back=hi (informal)", "reviewCount=7")
        e2eExpectSuccess(result)
        #expect(result.stdout == "Updated 1 record\n")
        let hola = try record(path, "Card", "front = hola")
        #expect(hola["back"] as? String == "hi (informal)")
        #expect(hola["reviewCount"] as? Int == 7)
        let json = try deck(
            "update", path, "Card", "--where", "deck.title = 'French basics'", "reviewCount=1", "--json")
        e2eExpectSuccess(json)
        #expect(try e2eJSONObject(json.stdout)["count"] as? Int == 4)
        let none = try deck("update", path, "Card", "--where", "front = nothing", "back=x")
        e2eExpectSuccess(none)
        #expect(none.stdout == "Updated 0 records\n")
    }

    @Test func updateAll() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("update", path, "Card", "--all", "reviewCount=2", "--json")
        e2eExpectSuccess(result)
        #expect(try e2eJSONObject(result.stdout)["count"] as? Int == 10)
        #expect(try deck("query", path, "Card", "--where", "reviewCount = 2", "--count").stdout == "10\n")
    }

    @Test func updateRelationships() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        e2eExpectSuccess(
            try deck("update", path, "Card", "--where", "front = hola", "deck=#2", "tags=#3,#4,#5"))
        #expect(try record(path, "Card", "front = hola")["deck"] as? Int == 2)
        #expect(try related(path, "Card", 1, "tags") == [3, 4, 5])
        e2eExpectSuccess(try deck("update", path, "Card", "--where", "front = hola", "tags="))
        #expect(try related(path, "Card", 1, "tags") == [])
        e2eExpectSuccess(try deck("verify", path))
    }

    @Test func updateFailureChangesNothing() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        // Two decks cannot share a title: the whole update is refused.
        let result = try deck("update", path, "Deck", "--all", "title=Same")
        e2eExpectFailure(result, status: 65, "another record already has the same title")
        #expect(
            try e2eColumn(try deck("query", path, "Deck", "--json").stdout, "title") == [
                "Spanish basics", "French basics",
            ])
    }

    @Test func deleteCascadesFromDeckToItsCards() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let before = try e2eBlobFiles(path).count
        let result = try deck("delete", path, "Deck", "--where", "title begins-with French")
        e2eExpectSuccess(result)
        #expect(result.stdout == "Deleted 5 records (Deck and related records its delete rules reach)\n")
        #expect(try deck("query", path, "Deck", "--count").stdout == "1\n")
        #expect(try deck("query", path, "Card", "--count").stdout == "6\n")
        #expect(try deck("query", path, "Card", "--where", "deck = #2", "--count").stdout == "0\n")
        // Tags survive (nullify), and the French cards' two images are gone.
        #expect(try deck("query", path, "Tag", "--count").stdout == "5\n")
        #expect(try e2eBlobFiles(path).count == before - 2)
        e2eExpectSuccess(try deck("verify", path))
    }

    @Test func deletingACardNullifiesButKeepsItsDeck() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("delete", path, "Card", "--where", "front = hola", "--json")
        e2eExpectSuccess(result)
        #expect(try e2eJSONObject(result.stdout)["count"] as? Int == 1)
        #expect(try deck("query", path, "Deck", "--count").stdout == "2\n")
        #expect(try related(path, "Deck", 1, "cards") == [2, 3, 4, 5, 6])
    }

    @Test func deleteNeedsWhereOrAll() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        e2eExpectUsageError(try deck("delete", path, "Card"), command: "deck delete", "say which records")
        e2eExpectUsageError(
            try deck("delete", path, "Card", "--all", "--where", "front = hola"), command: "deck delete",
            "--where and --all cannot be combined")
        #expect(try deck("query", path, "Card", "--count").stdout == "10\n")
        let all = try deck("delete", path, "Tag", "--all")
        e2eExpectSuccess(all)
        #expect(all.stdout == "Deleted 5 records (Tag and related records its delete rules reach)\n")
        #expect(try deck("query", path, "Card", "--count").stdout == "10\n")
        #expect(try related(path, "Card", 1, "tags") == [])
    }

    @Test func writesOnAMissingPackage() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("nowhere.deck")
        e2eExpectFailure(try deck("insert", path, "Tag", "name=x"), status: 66, "no such file or directory")
        e2eExpectFailure(
            try deck("update", path, "Tag", "--all", "name=x"), status: 66, "no such file or directory")
        e2eExpectFailure(try deck("delete", path, "Tag", "--all"), status: 66, "no such file or directory")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    // MARK: A schema with every attribute type

    static let allTypesSchema = """
        {"version": "2.0.0", "entities": [{"name": "Item", "attributes": [
          {"name": "s", "type": "string"}, {"name": "i", "type": "integer"}, {"name": "d", "type": "double"},
          {"name": "b", "type": "bool"}, {"name": "t", "type": "date"}, {"name": "raw", "type": "data"},
          {"name": "u", "type": "uuid"}, {"name": "link", "type": "url"}, {"name": "money", "type": "decimal"},
          {"name": "meta", "type": "json"}, {"name": "note", "type": "string", "optional": true}]}]}
        """

    func allTypesPackage(_ directory: TemporaryDirectory) throws -> String {
        let schemaPath = directory.appending("all.json")
        try Self.allTypesSchema.write(toFile: schemaPath, atomically: true, encoding: .utf8)
        let path = directory.appending("All.deck")
        e2eExpectSuccess(try deck("new", path, "--schema", schemaPath, "--type", "org.example.all"))
        e2eExpectSuccess(
            try deck(
                "insert", path, "Item", "s=a, \"b\"", "i=-42", "d=2.5", "b=true", "t=2026-11-30T10:00:00Z",
                "raw=aGVsbG8=", "u=6F9619FF-8B86-D011-B42D-00C04FC964FF", "link=https://example.org/x?y=1",
                "money=12.345", #"meta={"k":[1,2]}"#))
        return path
    }

    @Test func everyAttributeTypeRoundTrips() throws {
        let directory = try TemporaryDirectory()
        let path = try allTypesPackage(directory)
        let result = try deck("query", path, "Item", "--json")
        e2eExpectSuccess(result)
        let item = try #require(try e2eJSONArray(result.stdout).first)
        #expect(item["s"] as? String == "a, \"b\"")
        #expect(item["i"] as? Int == -42)
        #expect(item["d"] as? Double == 2.5)
        #expect(item["b"] as? Bool == true)
        #expect(item["t"] as? String == "2026-11-30T10:00:00.000Z")
        #expect(item["raw"] as? String == "aGVsbG8=")
        #expect(item["u"] as? String == "6f9619ff-8b86-d011-b42d-00c04fc964ff")
        #expect(item["link"] as? String == "https://example.org/x?y=1")
        #expect(item["money"] as? String == "12.345")
        #expect((item["meta"] as? [String: Any])?["k"] as? [Int] == [1, 2])
        #expect(item["note"] is NSNull)

        let csv = e2eParseCSV(try deck("query", path, "Item", "--csv").stdout)
        #expect(csv.count == 2)
        #expect(csv[1][2] == "a, \"b\"")
        #expect(csv[1][11] == #"{"k":[1,2]}"#)

        for (expression, count) in [
            ("i < 0", 1), ("d > 2", 1), ("b = true", 1), ("t >= 2026-11-30", 1),
            ("u = 6F9619FF-8B86-D011-B42D-00C04FC964FF", 1), ("link = 'https://example.org/x?y=1'", 1),
            ("money = '12.345'", 1), ("note is null", 1), ("s contains '\"b\"'", 1),
        ] {
            let counted = try deck("query", path, "Item", "--where", expression, "--count")
            e2eExpectSuccess(counted)
            #expect(counted.stdout == "\(count)\n", "--where \(expression)")
        }
        e2eExpectSuccess(try deck("verify", path))
    }

    @Test func wrongValuesForEachType() throws {
        let directory = try TemporaryDirectory()
        let path = try allTypesPackage(directory)
        let valid = [
            "s": "x", "i": "1", "d": "1.5", "b": "false", "t": "2026-01-01", "raw": "aGk=",
            "u": "6F9619FF-8B86-D011-B42D-00C04FC964F0", "link": "https://e.org", "money": "1", "meta": "1",
        ]
        let wrong = [
            "i": "1.5", "d": "abc", "b": "maybe", "t": "tomorrow", "raw": "***", "u": "not-a-uuid",
            "link": "no scheme", "money": "12,5", "meta": "{broken",
        ]
        for (key, bad) in wrong.sorted(by: { $0.key < $1.key }) {
            var values = valid
            values[key] = bad
            let result = try e2eDeck(
                ["insert", path, "Item"]
                    + values.sorted(by: { $0.key < $1.key }).map { "\($0.key)=\($0.value)" })
            e2eExpectFailure(result, status: 65, "Item.\(key)", "'\(bad)'")
        }
        #expect(try deck("query", path, "Item", "--count").stdout == "1\n")
    }

    /// A decimal attribute compared with a number: `12.345` is how anyone writes a decimal.
    @Test func decimalComparedWithANumberLiteral() throws {
        let directory = try TemporaryDirectory()
        let path = try allTypesPackage(directory)
        let result = try deck("query", path, "Item", "--where", "money = 12.345", "--count")
        e2eExpectSuccess(result)
        #expect(result.stdout == "1\n")
    }
}
