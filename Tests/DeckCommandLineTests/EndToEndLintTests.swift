import DeckKit
import DeckSQLite
import DeckTestTiming
import Foundation
import Testing

/// `deck lint`: the CloudKit check of a package, an archive or a schema file; its exit statuses;
/// wrong, truncated and hostile input.
@Suite("End to end: deck lint", .timed)
struct EndToEndLintTests {
    /// What the flash-cards sample breaks (see SchemaLintTests in DeckStoreTests).
    static let sampleFindings = [
        "unique-attribute Deck.title", "attribute-without-default Deck.title",
        "attribute-without-default Deck.created", "attribute-without-default Card.front",
        "attribute-without-default Card.back", "unique-attribute Tag.name",
        "attribute-without-default Tag.name",
    ]

    static let compatibleSchema = """
        {"version": "1.0.0", "entities": [
          {"name": "Trip", "attributes": [{"name": "name", "type": "string", "default": ""}],
           "relationships": [{"name": "items", "destination": "Item", "toMany": true, "inverse": "trip",
                              "deleteRule": "cascade"}]},
          {"name": "Item", "attributes": [{"name": "title", "type": "string", "optional": true}],
           "relationships": [{"name": "trip", "destination": "Trip"}]}
        ]}
        """

    func findings(_ json: String) throws -> [String] {
        let report = try e2eJSONObject(json)
        let findings = try #require(report["findings"] as? [[String: Any]])
        return findings.map { finding in
            let location = [finding["entity"] as? String, finding["property"] as? String].compactMap { $0 }
            return "\(finding["code"] as? String ?? "?") \(location.joined(separator: "."))"
        }
    }

    /// Every file of a package with its size and modification time, to show nothing changed.
    func snapshot(_ path: String) throws -> [String: [Int]] {
        var files: [String: [Int]] = [:]
        let enumerator = try #require(FileManager.default.enumerator(atPath: path))
        for case let name as String in enumerator {
            let attributes = try FileManager.default.attributesOfItem(atPath: path + "/" + name)
            let date = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            files[name] = [(attributes[.size] as? Int) ?? -1, Int(date * 1_000_000)]
        }
        return files
    }

    @Test func theSampleHasFindingsAndStatusOne() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let before = try snapshot(path)
        let text = try deck("lint", path)
        #expect(text.status == 1, "\(text.stderr)")
        #expect(text.stderr.isEmpty)
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 8)
        #expect(
            lines.first
                == "unique-attribute: Deck.title: the unique option is not supported by CloudKit; remove it and "
                + "find duplicates in the app (for example by a UUID attribute)")
        #expect(lines.last == "\(path): not CloudKit-compatible: 7 findings")

        let json = try deck("lint", path, "--json")
        #expect(json.status == 1)
        #expect(json.stderr.isEmpty)
        let report = try e2eJSONObject(json.stdout)
        #expect(report["path"] as? String == path)
        #expect(report["source"] as? String == "package")
        #expect(report["compatible"] as? Bool == false)
        #expect(try findings(json.stdout) == Self.sampleFindings)
        // Read-only: nothing in the package changed, and no lock or journal was left.
        #expect(try snapshot(path) == before)
    }

    /// The sample in `directory` (`Spanish.deck`), exported to `Spanish.zip`: the archive's path
    /// and bytes.
    func exportedSample(in directory: TemporaryDirectory) throws -> (path: String, bytes: Data) {
        let path = try e2eSample(in: directory)
        let archive = directory.appending("Spanish.zip")
        e2eExpectSuccess(try deck("export", path, "-o", archive, "--quiet"))
        return (archive, try Data(contentsOf: URL(fileURLWithPath: archive)))
    }

    @Test func anArchiveIsCheckedLikeItsPackage() throws {
        let directory = try TemporaryDirectory()
        let (archive, archiveBytes) = try exportedSample(in: directory)
        let json = try deck("lint", archive, "--json")
        #expect(json.status == 1, "\(json.stderr)")
        #expect(try findings(json.stdout) == Self.sampleFindings)
        #expect(try Data(contentsOf: URL(fileURLWithPath: archive)) == archiveBytes)
        // Nothing left beside the archive.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [
                "Spanish.deck", "Spanish.zip",
            ])
    }

    @Test func aCompatibleSchemaFileHasStatusZero() throws {
        let directory = try TemporaryDirectory()
        let file = directory.appending("trips.schema.json")
        try Self.compatibleSchema.write(toFile: file, atomically: true, encoding: .utf8)
        let text = try deck("lint", "--schema", file)
        e2eExpectSuccess(text)
        #expect(text.stdout == "\(file): CloudKit-compatible\n")
        let json = try deck("lint", "--schema", file, "--json")
        e2eExpectSuccess(json)
        let report = try e2eJSONObject(json.stdout)
        #expect(report["source"] as? String == "schema-file")
        #expect(report["compatible"] as? Bool == true)
        #expect((report["findings"] as? [Any])?.isEmpty == true)
    }

    /// A schema file given as the path is checked as with `--schema`; a file that is neither a
    /// schema file nor an archive points at `--schema`.
    @Test func aSchemaFileAsThePath() throws {
        let directory = try TemporaryDirectory()
        let file = directory.appending("notes.schema.json")
        try Self.compatibleSchema.write(toFile: file, atomically: true, encoding: .utf8)
        let text = try deck("lint", file)
        e2eExpectSuccess(text)
        #expect(text.stdout == "\(file): CloudKit-compatible\n")
        let json = try deck("lint", file, "--json")
        e2eExpectSuccess(json)
        #expect(try e2eJSONObject(json.stdout)["source"] as? String == "schema-file")
        // Found by its content too, whatever its name.
        let unnamed = directory.appending("notes")
        try Self.compatibleSchema.write(toFile: unnamed, atomically: true, encoding: .utf8)
        e2eExpectSuccess(try deck("lint", unnamed))
        let sample = directory.appending("sample-schema")
        try FileManager.default.copyItem(atPath: e2eSampleSchemaPath, toPath: sample)
        #expect(try findings(try deck("lint", sample, "--json").stdout) == Self.sampleFindings)
        let plain = directory.appending("notes.txt")
        try Data("just text".utf8).write(to: URL(fileURLWithPath: plain))
        e2eExpectFailure(try deck("lint", plain), status: 66, "not a Deck package", "--schema FILE")
    }

    @Test func theSampleSchemaFileAndAUniqueConstraint() throws {
        let json = try deck("lint", "--schema", e2eSampleSchemaPath, "--json")
        #expect(json.status == 1)
        #expect(try findings(json.stdout) == Self.sampleFindings)

        let directory = try TemporaryDirectory()
        let file = directory.appending("orders.json")
        try """
        {"version": "1", "entities": [{"name": "Order", "uniqueConstraints": [["number"]],
          "attributes": [{"name": "number", "type": "string", "default": ""}],
          "relationships": [{"name": "lines", "destination": "Line", "toMany": true, "deleteRule": "deny"}]},
          {"name": "Line", "attributes": []}]}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try deck("lint", "--schema", file, "--json")
        #expect(result.status == 1)
        #expect(
            try findings(result.stdout) == [
                "relationship-without-inverse Order.lines", "deny-delete-rule Order.lines",
                "unique-constraint Order",
            ])
        let report = try e2eJSONObject(result.stdout)
        let constraint = try #require((report["findings"] as? [[String: Any]])?.last)
        #expect(constraint["property"] is NSNull)
        #expect((constraint["message"] as? String)?.contains("(number)") == true)
        let text = try deck("lint", "--schema", file)
        #expect(text.stdout.contains("\nunique-constraint: Order: the unique constraint on (number) "))
        #expect(text.stdout.hasSuffix(": not CloudKit-compatible: 3 findings\n"))
    }

    @Test func usage() throws {
        e2eExpectUsageError(try deck("lint"), command: "deck lint", "missing <path>")
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        e2eExpectUsageError(
            try deck("lint", path, "--schema", e2eSampleSchemaPath), command: "deck lint", "not both")
        e2eExpectUsageError(try deck("lint", path, "--schema"), command: "deck lint")
    }

    @Test func missingFiles() throws {
        let directory = try TemporaryDirectory()
        e2eExpectFailure(
            try deck("lint", directory.appending("Nothing.deck")), status: 66, "no such file or directory")
        e2eExpectFailure(
            try deck("lint", "--schema", directory.appending("nothing.json")), status: 66,
            "no such file or directory")
    }

    @Test func aDirectoryThatIsNotAPackage() throws {
        let directory = try TemporaryDirectory()
        let plain = directory.appending("plain")
        try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: false)
        try Data("x".utf8).write(to: URL(fileURLWithPath: plain + "/notes.txt"))
        e2eExpectFailure(try deck("lint", plain), status: 66, "not a Deck package")
        #expect(try FileManager.default.contentsOfDirectory(atPath: plain) == ["notes.txt"])
        // A directory as the schema file.
        e2eExpectFailure(try deck("lint", "--schema", plain), status: 65, "is a directory, not a schema file")
    }

    @Test func aSchemaFileThatIsNotJSON() throws {
        let directory = try TemporaryDirectory()
        let file = directory.appending("broken.json")
        try Data("{\"version\": \"1\", \"entities\": [".utf8).write(to: URL(fileURLWithPath: file))
        e2eExpectFailure(try deck("lint", "--schema", file), status: 65, "invalid schema", "not valid JSON")
        try Data([0xFF, 0xFE, 0x00, 0x01]).write(to: URL(fileURLWithPath: file))
        e2eExpectFailure(try deck("lint", "--schema", file, "--json"), status: 65, "invalid schema")
        // Valid JSON, but not a valid schema: an unknown destination.
        try Data(
            #"{"version": "1", "entities": [{"name": "A", "relationships": [{"name": "b", "destination": "B"}]}]}"#
                .utf8
        ).write(to: URL(fileURLWithPath: file))
        e2eExpectFailure(try deck("lint", "--schema", file), status: 65, "unknown entity 'B'")
    }

    @Test func aTruncatedArchive() throws {
        let directory = try TemporaryDirectory()
        let bytes = try exportedSample(in: directory).bytes
        let truncated = directory.appending("Truncated.zip")
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: truncated))
        // Cannot open: not a package directory, and not an archive Deck can read.
        e2eExpectFailure(
            try deck("lint", truncated), status: 66, "Truncated.zip: not a Deck package",
            "not a readable package archive")
        // Nothing left beside it.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [
                "Spanish.deck", "Spanish.zip", "Truncated.zip",
            ])
    }

    /// A store with a trigger planted by a hostile tool, archived as it is: refused (as `deck
    /// import` refuses it), never opened for its schema.
    @Test func anArchiveWithAHostileStore() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let db = try Database(path: path + "/store.sqlite", mode: .readWrite)
        try db.execute("CREATE TRIGGER wipe AFTER INSERT ON Tag BEGIN UPDATE deck_blob SET refs = 0; END")
        db.close()
        e2eExpectFailure(try deck("lint", path), status: 65, "'wipe'")
        let raw = directory.appending("raw.zip")
        try DeckDocument.pack(directory: URL(fileURLWithPath: path), to: URL(fileURLWithPath: raw))
        e2eExpectFailure(try deck("lint", raw, "--json"), status: 65, "wipe")
    }

    @Test func helpAndCompletionsKnowTheCommand() throws {
        let help = try deck("lint", "--help")
        e2eExpectSuccess(help)
        #expect(
            help.stdout.contains("USAGE: deck lint [<path>] [--schema <file>] [--json]"), "\(help.stdout)")
        #expect(help.stdout.contains("Exit status 0 means no findings, 1 findings."))
        let bash = try deck("completions", "bash")
        #expect(bash.stdout.contains("lint"))
    }
}
