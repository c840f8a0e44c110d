import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@_spi(Testing) @testable import DeckStore

/// Format version 5 (spec: sections 12.10 to 12.12 and 20): every record, cell and link carries
/// the version of its last change, kept by triggers; the version 4 package of Tests/Fixtures/v4
/// (made by the Deck of commit 8fa1eb0) reads as it is and upgrades with the origin's version.
@Suite(.timed) struct FormatVersion5Tests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/v4/Flashcards.flashcards")

    static func rows(_ url: URL, _ sql: String, _ arguments: [SQLValue] = []) throws -> [[SQLValue]] {
        let db = try Database(path: url.path + "/store.sqlite", mode: .readOnly)
        defer { db.close() }
        return try db.rows(sql, arguments)
    }

    /// Every record of every entity, as the record API reads it.
    static func everything(_ url: URL) throws -> [String: [Record]] {
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        return try store.read { reader in
            try ["Deck", "Card", "Tag"].reduce(into: [:]) { $0[$1] = try reader.fetch(RecordQuery($1)) }
        }
    }

    /// (existence counter, clock, writer id bytes) of record `id` of `table`, as spec 20.3 says to
    /// find them: its row in `deck_rows:T` if it has one, else the range of `deck_inserts` that
    /// holds its key, else the origin's.
    static func recordVersion(_ url: URL, _ table: String, _ id: Int64) throws -> (Int64, Int64, Data)? {
        try rows(
            url,
            "SELECT coalesce(r.alive, 1), coalesce(r.clock, i.clock, 0), w.writer FROM (SELECT ? AS pk) AS p "
                + "LEFT JOIN \"deck_rows:\(table)\" AS r ON r._pk = p.pk "
                + "LEFT JOIN deck_inserts AS i ON i.tbl = ? AND p.pk BETWEEN i.first AND i.last "
                + "JOIN deck_writer AS w ON w.id = coalesce(r.writer, i.writer, 0)",
            [.integer(id), .text(table)]
        ).first.map { ($0[0].int64 ?? -1, $0[1].int64 ?? -1, $0[2].data ?? Data()) }
    }

    static func cellVersions(_ url: URL, _ table: String, _ id: Int64) throws -> [String: Int64] {
        try rows(url, "SELECT property, clock FROM \"deck_cells:\(table)\" WHERE _pk = ?", [.integer(id)])
            .reduce(into: [:]) { $0[$1[0].string ?? ""] = $1[1].int64 }
    }

    static func storeClock(_ url: URL) throws -> Int64 {
        try rows(url, "SELECT clock FROM deck_clock").first?[0].int64 ?? -1
    }

    // MARK: Upgrading version 4

    @Test func aVersion4PackageReadsAsItIsAndUpgradesWithTheOriginsVersion() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("v4.flashcards")
            try FileManager.default.copyItem(at: Self.fixture, to: url)
            let before = try Self.everything(url)
            #expect(before["Card"]?.count == 9 && before["Tag"]?.count == 6)
            // What the Deck of 8fa1eb0 printed, through the record API: every back as it was.
            let printed = try #require(
                try JSONSerialization.jsonObject(
                    with: Data(
                        contentsOf: Self.fixture.deletingLastPathComponent()
                            .appendingPathComponent("Flashcards.expected.json"))) as? [[String: Any]])
            let backs = before["Card"]?.map { record -> String? in
                if case .string(let text)? = record["back"] { return text }
                return nil
            }
            #expect(printed.map { $0["back"] as? String } == backs)
            // A reader does not upgrade.
            #expect(try Self.rows(url, "PRAGMA user_version").first?[0].int64 == 4)

            let store = try PackageStore.open(at: url, mode: .readWrite)
            try store.close()
            #expect(try Self.rows(url, "PRAGMA user_version").first?[0].int64 == 6)
            let manifest = try Manifest.read(packagePath: url.path)
            #expect(manifest.formatVersion == 6 && manifest.minimumReaderVersion == 4)
            #expect(try Self.everything(url) == before)
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid && report.findings.isEmpty, "\(report.findings)")
            // Everything it held: the origin's version, clock 0 (the keys each table gave out, as
            // inserted by the origin); nothing changed after.
            for table in ["Deck", "Card", "Tag"] {
                let ranges = try Self.rows(
                    url, "SELECT first, last, clock, writer FROM deck_inserts WHERE tbl = ?", [.text(table)])
                let seq = try Self.rows(
                    url, "SELECT seq FROM sqlite_sequence WHERE name = ?", [.text(table)])[0][0]
                #expect(ranges.map { $0.map(\.int64) } == [[1, seq.int64, 0, 0]], "\(table)")
                for record in before[table] ?? [] {
                    let version = try #require(try Self.recordVersion(url, table, record.id))
                    #expect(version.0 == 1 && version.1 == 0 && version.2 == Data(count: 16))
                }
                #expect(try Self.rows(url, "SELECT count(*) FROM \"deck_rows:\(table)\"")[0][0].int64 == 0)
                #expect(try Self.rows(url, "SELECT count(*) FROM \"deck_cells:\(table)\"")[0][0].int64 == 0)
            }
            let links = try Self.rows(url, "SELECT count(*), max(clock) FROM \"deck_links:Card.tags\"")
            let joined = try Self.rows(url, "SELECT count(*) FROM \"Card.tags\"")
            #expect(links[0][0] == joined[0][0] && links[0][1].int64 == 0)
            #expect(
                try Self.rows(url, "SELECT hex(writer) FROM deck_writer WHERE id = 0").first?[0].string
                    == String(repeating: "0", count: 32))
        }
    }

    // MARK: Versions follow changes

    @Test func insertsUpdatesDeletesAndLinksEachCarryTheirTransactionsVersion() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            let (deck, card, tag) = try package.write { tx in
                let deck = try tx.insert("Deck", ["title": .string("Spanish")])
                let tag = try tx.insert("Tag", ["name": .string("animals")])
                let card = try tx.insert(
                    "Card",
                    [
                        "front": .string("gato"), "back": .string("cat"), "deck": .reference(deck),
                        "tags": .references([tag]),
                    ])
                return (deck, card, tag)
            }.value
            let inserted = try #require(try Self.recordVersion(url, "Card", card))
            #expect(inserted.0 == 1 && inserted.1 > 0 && inserted.2 != Data(count: 16))
            // The deck, set in the insert's transaction, has the record's version: no cell version.
            #expect(try Self.cellVersions(url, "Card", card).isEmpty)

            // One cell changed: only its version; writing a value again changes nothing.
            try package.write { tx in
                try tx.update("Card", id: card, ["back": .string("the cat"), "front": .string("gato")])
            }
            let afterUpdate = try Self.cellVersions(url, "Card", card)
            #expect(Array(afterUpdate.keys) == ["back"])
            #expect((afterUpdate["back"] ?? 0) > inserted.1)
            #expect(try Self.recordVersion(url, "Card", card)?.1 == inserted.1)

            // A to-one change is a cell; a to-many change is a link.
            let second = try package.write { tx in try tx.insert("Deck", ["title": .string("French")]) }.value
            try package.write { tx in
                try tx.update("Card", id: card, ["deck": .reference(second), "tags": .references([])])
            }
            #expect(Set(try Self.cellVersions(url, "Card", card).keys) == ["back", "deck"])
            let unlinked = try Self.rows(url, "SELECT alive, clock FROM \"deck_links:Card.tags\"")
            #expect(
                unlinked.count == 1 && unlinked[0][0].int64 == 2 && (unlinked[0][1].int64 ?? 0) > inserted.1)
            try package.write { tx in try tx.update("Card", id: card, ["tags": .references([tag])]) }
            #expect(try Self.rows(url, "SELECT alive FROM \"deck_links:Card.tags\"")[0][0].int64 == 3)

            // A delete leaves a tombstone with the record's global id, and removes its links.
            let gid = try Self.rows(url, "SELECT _gid FROM Card WHERE _pk = ?", [.integer(card)])[0][0]
            let clockBefore = try Self.storeClock(url)
            _ = try package.write { tx in try tx.delete("Card", id: card) }
            let tombstone = try Self.rows(
                url, "SELECT alive, _gid, clock FROM \"deck_rows:Card\" WHERE _pk = ?", [.integer(card)])
            #expect(
                tombstone[0][0].int64 == 2 && tombstone[0][1] == gid
                    && (tombstone[0][2].int64 ?? 0) > clockBefore)
            #expect(try Self.rows(url, "SELECT alive FROM \"deck_links:Card.tags\"")[0][0].int64 == 4)
            #expect(try Self.recordVersion(url, "Deck", deck)?.0 == 1)
            try package.close()
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid && report.findings.isEmpty, "\(report.findings)")
        }
    }

    @Test func theClockNeverGoesBackAndEachSessionWritesUnderItsOwnID() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            var clocks: [Int64] = []
            for index in 0..<5 {
                _ = try package.write { tx in try tx.insert("Tag", ["name": .string("t\(index)")]) }
                clocks.append(try Self.storeClock(url))
            }
            #expect(clocks == clocks.sorted() && Set(clocks).count == 5)
            // A clock from the future (another device's, or a lie): the next transaction still
            // comes after it.
            try package.close()
            let ahead = clocks[4] + 1_000_000_000_000
            try rawStore(url).execute("UPDATE deck_clock SET clock = \(ahead)")
            let copy = dir.appendingPathComponent("copy.deck")
            try FileManager.default.copyItem(at: url, to: copy)
            for target in [url, copy] {
                let reopened = try PackageStore.open(at: target, mode: .readWrite)
                _ = try reopened.write { tx in try tx.insert("Tag", ["name": .string("later")]) }
                try reopened.close()
                #expect(try Self.storeClock(target) == ahead + 1)
            }
            // Three sessions wrote the original (the creation, the loop, the reopening), one the copy:
            // the copy's session has an id of its own, never its original's.
            let ids = try Self.rows(url, "SELECT writer FROM deck_writer WHERE id > 0").compactMap(\.[0].data)
            let copyIDs = try Self.rows(copy, "SELECT writer FROM deck_writer WHERE id > 0").compactMap(
                \.[0].data)
            #expect(Set(ids).count == ids.count && ids.count == 2)
            #expect(copyIDs.count == 2 && copyIDs[0] == ids[0] && copyIDs[1] != ids[1])
        }
    }

    @Test func aRolledBackFirstTransactionLeavesTheWriterToTheNextOne() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            try package.close()
            let store = try PackageStore.open(at: package.url, mode: .readWrite)
            #expect(throws: StorageTestError.self) {
                _ = try store.write { tx in
                    _ = try tx.insert("Tag", ["name": .string("gone")])
                    throw StorageTestError()
                }
            }
            let id = try store.write { tx in try tx.insert("Tag", ["name": .string("kept")]) }.value
            try store.close()
            let version = try #require(try Self.recordVersion(package.url, "Tag", id))
            #expect(version.2 != Data(count: 16))
            #expect(try Self.rows(package.url, "SELECT count(*) FROM deck_writer")[0][0].int64 == 2)
            #expect(try PackageVerifier.verify(at: package.url).findings.isEmpty)
        }
    }

    @Test func aClockOneBelowTheLimitIsRefusedForWritingAndNeverPassedIt() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            try package.close()
            try rawStore(package.url).execute("UPDATE deck_clock SET clock = \(VersionClock.limit - 1)")
            let store = try PackageStore.open(at: package.url, mode: .readWrite)
            let error = expectDeckError {
                _ = try store.write { tx in try tx.insert("Tag", ["name": .string("x")]) }
            }
            if case .corrupt(_, let reason) = error {
                #expect(reason.contains("2^62"))
            } else {
                Issue.record("expected corrupt, got \(String(describing: error))")
            }
            try store.close()
            // Refused before it changed anything: the store is as it was, and valid.
            #expect(try Self.storeClock(package.url) == VersionClock.limit - 1)
            #expect(try PackageVerifier.verify(at: package.url).findings.isEmpty)
        }
    }

    @Test func aDuplicatedSequenceRowIsReportedAndBlocksNoWrite() throws {
        try withTestDirectory { dir throws in
            // A version 4 package with a planted second sqlite_sequence row: reported, and the
            // upgrade and the writes after it still work (one range a table).
            let url = dir.appendingPathComponent("v4.flashcards")
            try FileManager.default.copyItem(at: Self.fixture, to: url)
            try rawStore(url).execute("INSERT INTO sqlite_sequence VALUES ('Tag', 6)")
            #expect(try PackageVerifier.verify(at: url).codes == ["key-sequence"])
            let store = try PackageStore.open(at: url, mode: .readWrite)
            _ = try store.write { tx in try tx.insert("Tag", ["name": .string("x")]) }
            _ = try store.write { tx in try tx.update("Tag", id: 1, ["name": .string("y")]) }
            try store.close()
            #expect(try PackageVerifier.verify(at: url).codes == ["key-sequence"])
            let ranges = try Self.rows(
                url, "SELECT first, last FROM deck_inserts WHERE tbl = 'Tag' ORDER BY last")
            #expect(ranges.count == 2 && ranges[0][1] == .integer(6) && ranges[1][0] == .integer(7))
        }
    }

    @Test func aClockAtTheLimitIsRefusedForWritingAndReported() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            try package.close()
            try rawStore(package.url).execute("UPDATE deck_clock SET clock = \(VersionClock.limit)")
            let store = try PackageStore.open(at: package.url, mode: .readWrite)
            defer { try? store.close() }
            let error = expectDeckError {
                _ = try store.write { tx in try tx.insert("Tag", ["name": .string("x")]) }
            }
            guard case .corrupt(_, let reason) = error else {
                Issue.record("expected corrupt, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("2^62"))
            try store.close()
            let report = try PackageVerifier.verify(at: package.url)
            #expect(report.findings.map(\.code) == ["versions"] && !report.isValid)
        }
    }

    @Test func aDocumentWithNoEntityCommitsAndGainsThemByMigration() throws {
        try withTestDirectory { dir throws in
            // No entity, so no sqlite_sequence: nothing to record at commit, nothing to check.
            let url = dir.appendingPathComponent("empty.deck")
            let store = try PackageStore.create(
                at: url, contentType: "org.test", schema: StoreSchema(entities: []))
            try store.write { _ in }
            try store.close()
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
            try rawStore(url).execute("INSERT INTO deck_inserts VALUES ('Tag', 1, 1, 0, 0)")
            #expect(try PackageVerifier.verify(at: url).codes == ["versions"])
            try rawStore(url).execute("DELETE FROM deck_inserts")
            var schema = flashCardsSchema()
            schema.version = "2.0.0"
            _ = try PackageStore.migrate(at: url, to: schema)
            let reopened = try PackageStore.open(at: url, mode: .readWrite)
            let tag = try reopened.write { tx in try tx.insert("Tag", ["name": .string("new")]) }.value
            try reopened.close()
            #expect(try Self.recordVersion(url, "Tag", tag).map { $0.1 > 0 } == true)
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid && report.findings.isEmpty, "\(report.findings)")
        }
    }

    // MARK: Verification

    @Test(arguments: [
        ("INSERT INTO \"deck_rows:Card\" VALUES (1, zeroblob(16), 2, 0, 0)", "Card #1", "disagrees"),
        ("INSERT INTO \"deck_rows:Card\" VALUES (99, zeroblob(16), 3, 0, 0)", "Card #99", "disagrees"),
        (
            "INSERT INTO \"deck_cells:Card\" VALUES (1, 'nothing', 0, 0)", "Card #1",
            "property the table does not have"
        ),
        ("INSERT INTO \"deck_cells:Card\" VALUES (99, 'front', 0, 0)", "Card #99", "names a record"),
        (
            "UPDATE deck_inserts SET writer = 7 WHERE tbl = 'Tag'", "deck_inserts",
            "writer that deck_writer does not have"
        ),
        (
            "UPDATE deck_inserts SET clock = 1 << 61 WHERE tbl = 'Tag'", "deck_inserts",
            "later than deck_clock's"
        ),
        (
            "INSERT INTO deck_inserts VALUES ('Nothing', 1, 1, 0, 0)", "deck_inserts (Nothing, 1)",
            "names a table"
        ),
        ("INSERT INTO deck_inserts VALUES ('Card', 1, 2, 0, 0)", "deck_inserts (Card, 2)", "overlaps"),
        ("UPDATE deck_inserts SET last = 5 WHERE tbl = 'Tag'", "deck_inserts (Tag, 5)", "outside the keys"),
        ("DELETE FROM \"deck_links:Card.tags\"", "Card.tags (source 1, target 1)", "the link has no version"),
        (
            "INSERT INTO \"deck_links:Card.tags\" VALUES (5, 5, 1, 0, 0)", "Card.tags (source 5, target 5)",
            "but it does not"
        ),
        ("DELETE FROM deck_clock", "deck_clock", "exactly one"),
        // What a hostile package may plant to make deletes overflow, or a tombstone name a live record.
        (
            "INSERT INTO \"deck_rows:Card\" VALUES (1, zeroblob(16), 9223372036854775807, 0, 0)", "Card #1",
            "beyond 2^62"
        ),
        (
            "INSERT INTO \"deck_rows:Card\" SELECT 99, _gid, 2, 0, 0 FROM Card WHERE _pk = 1", "Card #99",
            "a record's that exists"
        ),
        (
            "UPDATE \"deck_links:Card.tags\" SET alive = 9223372036854775807",
            "Card.tags (source 1, target 1)", "beyond 2^62"
        ),
        ("UPDATE deck_writer SET writer = randomblob(16) WHERE id = 0", "deck_writer", "the origin"),
        ("INSERT INTO \"deck_rows:Card\" VALUES (1, zeroblob(16), 1, 0, 0)", "Card #1", "another global id"),
        // The tables' CHECK constraints, broken by a writer that turned them off: SQLite's
        // integrity check passes over them on the verifier's read-only connection.
        (
            "PRAGMA ignore_check_constraints = ON; INSERT INTO \"deck_rows:Card\" VALUES (99, randomblob(16), 0, 0, 0)",
            "Card #99", "below 1"
        ),
        (
            "PRAGMA ignore_check_constraints = ON; INSERT INTO \"deck_rows:Card\" VALUES (99, x'01', 2, 0, 0)",
            "Card #99", "not 16 bytes"
        ),
        (
            "PRAGMA ignore_check_constraints = ON; UPDATE \"deck_links:Card.tags\" SET alive = -1",
            "Card.tags (source 1, target 1)", "below 1"
        ),
        (
            "PRAGMA ignore_check_constraints = ON; UPDATE deck_inserts SET clock = -5 WHERE tbl = 'Tag'",
            "deck_inserts", "(-5) is below 0"
        ),
        (
            "PRAGMA ignore_check_constraints = ON; UPDATE deck_clock SET clock = -1", "deck_clock", "below 0"
        ),
        (
            "PRAGMA ignore_check_constraints = ON; INSERT INTO deck_writer VALUES (9, x'01')",
            "deck_writer #9",
            "not 16 bytes"
        ),
        (
            "PRAGMA ignore_check_constraints = ON; UPDATE deck_inserts SET first = 2, last = 1 WHERE tbl = 'Tag'",
            "deck_inserts (Tag, 1)", "overlaps"
        ),
    ])
    func brokenBookkeepingIsReported(sql: String, object: String, message: String) throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            try package.write { tx in
                let deck = try tx.insert("Deck", ["title": .string("d")])
                let tag = try tx.insert("Tag", ["name": .string("t")])
                _ = try tx.insert(
                    "Card", ["front": .string("f"), "deck": .reference(deck), "tags": .references([tag])])
            }
            try package.close()
            #expect(try PackageVerifier.verify(at: package.url).findings.isEmpty)
            try rawStore(package.url).execute(sql)
            let report = try PackageVerifier.verify(at: package.url)
            let finding = try #require(report.findings.first { $0.code == "versions" }, "\(report.findings)")
            #expect(finding.object == object && finding.message.contains(message), "\(finding)")
            #expect(!report.isValid)
        }
    }

    @Test func aRecordMayCarryAVersionOfItsOwn() throws {
        try withTestDirectory { dir throws in
            // What a merge leaves for a record it brings from another copy (spec 20.3): a row
            // with a counter of 1, the record's global id and the insert's version there.
            let package = try makeTestStore(in: dir)
            let tag = try package.write { tx in try tx.insert("Tag", ["name": .string("t")]) }.value
            try package.close()
            try rawStore(package.url).execute(
                "INSERT INTO \"deck_rows:Tag\" SELECT _pk, _gid, 1, 5, 0 FROM Tag WHERE _pk = \(tag)")
            #expect(try Self.recordVersion(package.url, "Tag", tag).map { [$0.0, $0.1] } == [1, 5])
            #expect(try PackageVerifier.verify(at: package.url).findings.isEmpty)
        }
    }

    // MARK: Migrations

    @Test func linksKeepTheirVersionsWhenTheirJoinTableIsMadeAnew() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            let (card, kept, removed) = try package.write { tx in
                let deck = try tx.insert("Deck", ["title": .string("d")])
                let kept = try tx.insert("Tag", ["name": .string("kept")])
                let removed = try tx.insert("Tag", ["name": .string("removed")])
                let card = try tx.insert(
                    "Card",
                    ["front": .string("f"), "deck": .reference(deck), "tags": .references([kept, removed])])
                return (card, kept, removed)
            }.value
            try package.write { tx in try tx.update("Card", id: card, ["tags": .references([kept])]) }
            // Setting a to-many relationship writes only what changes: the link that stays keeps
            // its counter and version, and so do the cards a deck keeps.
            let deck = try #require(
                try Self.rows(url, "SELECT deck FROM Card WHERE _pk = ?", [.integer(card)])[0][0].int64)
            try package.write { tx in try tx.update("Deck", id: deck, ["cards": .references([card])]) }
            #expect(try Self.cellVersions(url, "Card", card).isEmpty)
            let before = try Self.rows(
                url,
                "SELECT source, target, alive, clock, writer FROM \"deck_links:Card.tags\" ORDER BY target")
            #expect(before.map { $0[2].int64 } == [1, 2])
            try package.close()

            // Tag renamed Label: Card.tags now points into another table, so the join table is
            // made anew; its links keep their versions, and the removal is not forgotten.
            var schema = flashCardsSchema()
            schema.version = "2.0.0"
            for index in schema.entities.indices {
                if schema.entities[index].name == "Tag" {
                    schema.entities[index].name = "Label"
                    schema.entities[index].originalName = "Tag"
                }
                for relationship in schema.entities[index].relationships.indices
                where schema.entities[index].relationships[relationship].destination == "Tag" {
                    schema.entities[index].relationships[relationship].destination = "Label"
                }
            }
            _ = try PackageStore.migrate(at: url, to: schema)
            let after = try Self.rows(
                url,
                "SELECT source, target, alive, clock, writer FROM \"deck_links:Card.tags\" ORDER BY target")
            #expect(after == before)
            #expect(before.map { $0[1].int64 } == [kept, removed])
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid && report.findings.isEmpty, "\(report.findings)")
        }
    }

    @Test func aRenamedPropertyKeepsItsCellsVersionsAndARemovedOneDropsThem() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            let card = try package.write { tx in
                let deck = try tx.insert("Deck", ["title": .string("d")])
                return try tx.insert("Card", ["front": .string("f"), "deck": .reference(deck)])
            }.value
            try package.write { tx in
                try tx.update("Card", id: card, ["back": .string("b"), "front": .string("g")])
            }
            let versions = try Self.cellVersions(url, "Card", card)
            #expect(
                Set(versions.keys) == ["back", "front"], "the deck set at the insert has the record's version"
            )
            let record = try #require(try Self.recordVersion(url, "Card", card))
            try package.close()

            var schema = flashCardsSchema()
            schema.version = "2.0.0"
            let cardIndex = try #require(schema.entities.firstIndex { $0.name == "Card" })
            schema.entities[cardIndex].attributes = schema.entities[cardIndex].attributes.compactMap {
                attribute in
                switch attribute.name {
                case "front":
                    var renamed = attribute
                    renamed.name = "question"
                    renamed.originalName = "front"
                    return renamed
                case "back": return nil
                default: return attribute
                }
            }
            _ = try PackageStore.migrate(at: url, to: schema, plan: MigrationPlan(removals: ["Card.back"]))
            #expect(try Self.cellVersions(url, "Card", card) == ["question": versions["front"] ?? -1])
            #expect(try Self.recordVersion(url, "Card", card).map { [$0.0, $0.1] } == [record.0, record.1])
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid && report.findings.isEmpty, "\(report.findings)")
        }
    }
}
