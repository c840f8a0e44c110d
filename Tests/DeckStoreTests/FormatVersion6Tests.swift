import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@_spi(Testing) @testable import DeckStore

/// Format version 6 (spec: sections 6.10 "Global ids from unique values", 12.13 to 12.15): a new
/// record's global id is made from its unique values, and tombstones are indexed by global id;
/// the version 5 package of Tests/Fixtures/v5 (made by the Deck of commit 79a6431) reads as it is
/// and upgrades keeping every value and version.
@Suite(.timed) struct FormatVersion6Tests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/v5")
    static let fixture = fixtures.appendingPathComponent("Flashcards.flashcards")

    static func rows(_ url: URL, _ sql: String, _ arguments: [SQLValue] = []) throws -> [[SQLValue]] {
        try FormatVersion5Tests.rows(url, sql, arguments)
    }

    /// Every row of the version bookkeeping, table by table, in key order.
    static func bookkeeping(_ url: URL) throws -> [String: [[SQLValue]]] {
        var result: [String: [[SQLValue]]] = [:]
        let tables = try rows(
            url,
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'deck\\_%' ESCAPE '\\' "
                + "AND name NOT IN ('deck_meta', 'deck_blob') ORDER BY name")
        for table in tables.compactMap({ $0[0].string }) {
            result[table] = try rows(url, "SELECT * FROM \(quote(table)) ORDER BY 1, 2")
        }
        return result
    }

    @Test func aVersion5PackageReadsAsItIsAndUpgradesKeepingEveryValueAndVersion() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("Flashcards.flashcards")
            try FileManager.default.copyItem(at: Self.fixture, to: url)
            let before = try FormatVersion5Tests.everything(url)
            #expect(before["Card"]?.count == 9 && before["Tag"]?.count == 6 && before["Deck"]?.count == 2)
            // What the Deck of 79a6431 printed: every back as it was.
            let printed = try #require(
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: Self.fixtures.appendingPathComponent("Flashcards.expected.json")))
                    as? [[String: Any]])
            let backs = before["Card"]?.map { record -> String? in
                if case .string(let text)? = record["back"] { return text }
                return nil
            }
            #expect(printed.map { $0["back"] as? String } == backs)
            // Its change log reads as that Deck printed it (the same transactions, values, token).
            let oldLog = try #require(
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: Self.fixtures.appendingPathComponent("Flashcards.log.json")))
                    as? [String: Any])
            let log = try ChangeLog(of: PackageStore.open(at: url, mode: .readOnly))
            #expect(log.token.description == oldLog["token"] as? String)
            #expect(log.transactions.count == (oldLog["transactions"] as? [Any])?.count)
            // A reader does not upgrade.
            #expect(try Self.rows(url, "PRAGMA user_version").first?[0].int64 == 5)
            let versions = try Self.bookkeeping(url)
            #expect(versions["deck_rows:Card"]?.isEmpty == false, "the fixture holds a tombstone")

            let store = try PackageStore.open(at: url, mode: .readWrite)
            try store.close()
            #expect(try Self.rows(url, "PRAGMA user_version").first?[0].int64 == 6)
            let manifest = try Manifest.read(packagePath: url.path)
            #expect(manifest.formatVersion == 6 && manifest.minimumReaderVersion == 4)
            #expect(try FormatVersion5Tests.everything(url) == before)
            // Nothing of the bookkeeping changed but the new indexes; global ids stay random.
            #expect(try Self.bookkeeping(url) == versions)
            let indexes = try Self.rows(
                url, "SELECT name FROM sqlite_schema WHERE name LIKE '%.gid' ORDER BY name"
            ).compactMap { $0[0].string }
            #expect(indexes == ["deck_rows:Card.gid", "deck_rows:Deck.gid", "deck_rows:Tag.gid"])
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid && report.findings.isEmpty, "\(report.findings)")
            #expect(report.formatVersion == 6)
        }
    }

    @Test func aVersion5StoreMissingTheIndexIsNotCorruptAndAVersion6OneIs() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("Flashcards.flashcards")
            try FileManager.default.copyItem(at: Self.fixture, to: url)
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
            let store = try PackageStore.open(at: url, mode: .readWrite)
            try store.close()
            let db = try Database(path: url.path + "/store.sqlite", mode: .readWrite)
            try db.execute("DROP INDEX \"deck_rows:Tag.gid\"")
            db.close()
            let findings = try PackageVerifier.verify(at: url).findings
            #expect(findings.contains { "\($0)".contains("deck_rows:Tag.gid") }, "\(findings)")
        }
    }

    /// The spec's example (section 6.10), made by the writer: the document id and values are the
    /// spec's, the ids those the spec gives (computed apart from Deck, from the spec's text).
    @Test func aNewRecordsIdIsTheOneTheSpecDerivesFromItsValuesAndGeneration() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("Spanish.deck")
            try PackageStore.create(at: url, contentType: flashCardsType, schema: flashCardsSchema()).close()
            let db = try Database(path: url.path + "/store.sqlite", mode: .readWrite)
            try db.execute(
                "UPDATE deck_meta SET value = '1b4e28ba-2fa1-41d2-883f-0016d3cca427' WHERE key = 'document_id'"
            )
            db.close()
            func gid(_ name: String) throws -> String? {
                try Self.rows(url, "SELECT _gid FROM Tag WHERE name = ?", [.text(name)]).first.flatMap {
                    GlobalID.uuid($0[0])?.uuidString.lowercased()
                }
            }
            let store = try PackageStore.open(at: url)
            let first = try store.write { t in try t.insert("Tag", ["name": .string("verbs")]) }.value
            #expect(try gid("verbs") == "facee85d-7bda-8119-ac7b-f90f0d67de17")
            // Deleted, then made again: generation 1, since the tombstone holds generation 0's.
            try store.write { t in
                try t.delete("Tag", id: first)
                _ = try t.insert("Tag", ["name": .string("verbs")])
            }
            #expect(try gid("verbs") == "f65d45d3-f82e-8d4e-8d3b-24bcd9118048")
            // Renamed away, then made again: generation 2 (0 is a tombstone's, 1 the renamed one's).
            try store.write { t in
                let id = try #require(try t.fetchIDs(RecordQuery("Tag")).first)
                try t.update("Tag", id: id, ["name": .string("old verbs")])
                _ = try t.insert("Tag", ["name": .string("verbs")])
            }
            #expect(try gid("old verbs") == "f65d45d3-f82e-8d4e-8d3b-24bcd9118048")
            #expect(try gid("verbs").map { $0.dropFirst(14).first } == "8")
            #expect(try gid("verbs") != "f65d45d3-f82e-8d4e-8d3b-24bcd9118048")
            // An id given is kept; a record of an entity with no unique value gets a random one.
            let given = UUID()
            try store.write { t in
                _ = try t.insert("Tag", ["name": .string("nouns")], globalID: given)
                _ = try t.insert("Card", ["front": .string("hola")])
            }
            #expect(try gid("nouns") == given.uuidString.lowercased())
            let card = try Self.rows(url, "SELECT _gid FROM Card").first.flatMap { GlobalID.uuid($0[0]) }
            #expect(card?.uuidString.lowercased().dropFirst(14).first == "4")
            try store.close()
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }
}
