import DeckStore
import DeckTestTiming
import Foundation
import Testing

/// `deck` on the format version 1 fixtures (Tests/Fixtures/v1): reading commands read them as they
/// are and say which version they are; the first writing command upgrades them to version 3.
@Suite(.timed) struct EndToEndFormatTests {
    static func fixture(_ name: String, in directory: TemporaryDirectory, version: Int = 1) throws -> String {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/v\(version)/" + name)
        let path = directory.appending(name)
        try FileManager.default.copyItem(atPath: source.path, toPath: path)
        return path
    }

    static func records(_ result: RunResult) throws -> [[String: Any]] {
        try #require(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
    }

    @Test func aVersion2PackageHasNoFloorUntilAWriterUpgradesIt() throws {
        let directory = try TemporaryDirectory()
        let path = try Self.fixture("Library.deck", in: directory, version: 2)
        let inspect = try deck("open", path)
        e2eExpectSuccess(inspect)
        #expect(
            inspect.stdout.contains(
                "  format:   2 (the next writer upgrades it to \(PackageStore.formatVersion))   schema: 3.1.0\n"
            ))
        #expect(!inspect.stdout.contains("floor:") && inspect.stdout.contains("\n  fingerprint: "))
        let before = try #require(
            JSONSerialization.jsonObject(with: Data(try deck("inspect", path, "--json").stdout.utf8))
                as? [String: Any])
        #expect(before["schemaFloor"] is NSNull && (before["migrations"] as? [Any])?.isEmpty == true)
        e2eExpectSuccess(try deck("insert", path, "Tag", "name=new"))
        let after = try #require(
            JSONSerialization.jsonObject(with: Data(try deck("inspect", path, "--json").stdout.utf8))
                as? [String: Any])
        #expect(
            after["formatVersion"] as? Int == PackageStore.formatVersion
                && after["schemaFloor"] as? String == "3.1.0")
        #expect(after["schemaFingerprint"] as? String == before["schemaFingerprint"] as? String)
        #expect(after["documentId"] as? String == before["documentId"] as? String)
        let verify = try deck("verify", path)
        #expect(
            verify.status == 0 && verify.stdout.hasSuffix("(format \(PackageStore.formatVersion))\n"),
            "\(verify.stdout)")
    }

    @Test func readingCommandsSayVersion1AndWritingUpgrades() throws {
        let directory = try TemporaryDirectory()
        let path = try Self.fixture("Library.deck", in: directory)
        let inspect = try deck("inspect", path)
        e2eExpectSuccess(inspect)
        #expect(
            inspect.stdout.contains(
                "  format:   1 (the next writer upgrades it to \(PackageStore.formatVersion))   schema: 3.1.0\n"
            ))
        #expect(!inspect.stdout.contains("document:"))
        let json = try deck("inspect", path, "--json")
        let info = try #require(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(info["formatVersion"] as? Int == 1 && info["manifestFormatVersion"] as? Int == 1)
        #expect(info["documentId"] is NSNull)
        let verify = try deck("verify", path)
        e2eExpectSuccess(verify)
        #expect(
            verify.stdout.hasSuffix(
                " (format 1 (the next writer upgrades it to \(PackageStore.formatVersion)))\n"))
        let before = try Self.records(try deck("query", path, "Person", "--json"))
        #expect(before.count == 3 && before.allSatisfy { $0["_gid"] is NSNull })

        e2eExpectSuccess(try deck("insert", path, "Tag", "name=new"))
        let after = try Self.records(try deck("query", path, "Person", "--json"))
        let ids = after.compactMap { $0["_gid"] as? String }
        #expect(ids.count == 3 && Set(ids).count == 3)
        #expect(ids.allSatisfy { UUID(uuidString: $0)?.uuidString.lowercased() == $0 })
        // Every value as it was, the global ids aside.
        // Compared as JSON with sorted keys: a nested object's description depends on hash order.
        let strip = { (records: [[String: Any]]) throws -> String in
            let kept = records.map { record in record.filter { $0.key != "_gid" } }
            return String(
                decoding: try JSONSerialization.data(withJSONObject: kept, options: [.sortedKeys]),
                as: UTF8.self)
        }
        #expect(try strip(after) == strip(before))
        let verified = try deck("verify", path, "--json")
        let report = try #require(
            JSONSerialization.jsonObject(with: Data(verified.stdout.utf8)) as? [String: Any])
        #expect(
            report["valid"] as? Bool == true && report["formatVersion"] as? Int == PackageStore.formatVersion)
        let upgraded = try deck("inspect", path, "--json")
        let document = try #require(
            JSONSerialization.jsonObject(with: Data(upgraded.stdout.utf8)) as? [String: Any])
        #expect((document["documentId"] as? String).flatMap(UUID.init(uuidString:)) != nil)
        // The global ids stay what they are: a second query shows the same.
        let again = try Self.records(try deck("query", path, "Person", "--json"))
        #expect(again.compactMap { $0["_gid"] as? String } == ids)
    }

    /// Tests/Fixtures/legacy/Legacy.deck, written by the Deck of commit 55eba36 with values later
    /// rules refuse (spec 7.7): verify calls them legacy values and the package valid, query shows
    /// them (never null), the archive imports, and insert refuses new ones.
    @Test func legacyValuesAreValidShownExportedAndImported() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Legacy.deck")
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/legacy/Legacy.deck")
        try FileManager.default.copyItem(atPath: source.path, toPath: path)
        let verify = try deck("verify", path)
        #expect(verify.status == 0, "\(verify.stdout)")
        #expect(verify.stdout.contains("legacy value: Reading #1.taken: holds the date +infinity"))
        #expect(verify.stdout.contains(", 7 legacy value(s) (format 1"))
        let records = try Self.records(try deck("query", path, "Reading", "--json"))
        try #require(records.count == 4)
        #expect(records[0]["taken"] as? String == "inf" && records[1]["taken"] as? String == "-inf")
        #expect(records[0]["amount"] as? String == "123456789012345678901234567890123456789")
        #expect(records[1]["extra"] as? String == #"{"unit":"mm","unit":"cm"}"#)
        let archive = directory.appending("Legacy.deckz")
        e2eExpectSuccess(try deck("export", path, "--output", archive))
        #expect(try deck("verify", archive).status == 0)
        let imported = directory.appending("Imported.deck")
        e2eExpectSuccess(try deck("import", archive, "--output", imported))
        #expect(try deck("verify", imported).status == 0)
        let refused = try deck("insert", path, "Reading", "label=x", "payload=1", "taken=inf")
        #expect(refused.status != 0)
    }

    /// A migration that rebuilds the table (a rename) keeps legacy values byte for byte (spec 7.7).
    @Test func aMigrationKeepsLegacyValues() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Legacy.deck")
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/legacy")
        try FileManager.default.copyItem(
            atPath: fixtures.appendingPathComponent("Legacy.deck").path, toPath: path)
        let schema = try String(
            contentsOf: fixtures.appendingPathComponent("legacy.schema.json"), encoding: .utf8
        )
        .replacingOccurrences(of: #""1.0.0""#, with: #""2.0.0""#)
        .replacingOccurrences(
            of: #""name": "label", "type": "string""#,
            with: #""name": "title", "type": "string", "originalName": "label""#)
        let schemaPath = directory.appending("v2.schema.json")
        try schema.write(toFile: schemaPath, atomically: true, encoding: .utf8)
        let cells = { () throws -> String in
            try runTool(
                "sqlite3",
                [
                    path + "/store.sqlite",
                    "SELECT quote(taken), amount, extra, quote(payload) FROM Reading ORDER BY _pk",
                ]
            ).stdout
        }
        let before = try cells()
        let migrate = try deck("migrate", path, "--to", schemaPath)
        e2eExpectSuccess(migrate)
        #expect(migrate.stdout.contains("rebuilt: Reading"), "\(migrate.stdout)")
        #expect(
            try cells() == before && before.contains("Inf|123456789012345678901234567890123456789"))
        #expect(try deck("verify", path).status == 0)
    }

    /// A version 3 store whose `schema_floor` is missing, not text or above the schema's version:
    /// the floor counts as the schema's version (spec 4.2), in inspect as in compat.
    @Test(arguments: [
        "DELETE FROM deck_meta WHERE key = 'schema_floor'",
        "UPDATE deck_meta SET value = 7 WHERE key = 'schema_floor'",
        "UPDATE deck_meta SET value = '9.0.0' WHERE key = 'schema_floor'",
    ])
    func aDamagedFloorCountsAsTheSchemaVersionInInspect(sql: String) throws {
        let directory = try TemporaryDirectory()
        let path = try Self.fixture("Library.deck", in: directory, version: 2)
        e2eExpectSuccess(try deck("insert", path, "Tag", "name=new"))  // upgrades to the current version
        let damage = try runTool("sqlite3", [path + "/store.sqlite", sql])
        try #require(damage.status == 0, "\(damage.stderr)")
        let info = try e2eJSONObject(try deck("inspect", path, "--json").stdout)
        #expect(info["formatVersion"] as? Int == PackageStore.formatVersion)
        #expect(info["schemaFloor"] as? String == "3.1.0", "\(info["schemaFloor"] ?? "none")")
        let open = try deck("open", path)
        #expect(open.stdout.contains("  floor:    3.1.0   fingerprint: "), "\(open.stdout)")
    }
}
