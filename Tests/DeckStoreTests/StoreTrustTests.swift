import CSQLite
import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

#if canImport(Glibc)
    import Glibc
#endif

/// A package from elsewhere is hostile: schema objects the stored schema does not derive are
/// corruption, and nobody opens a store that has them (issue 8; spec sections 4.1, 13, 15).
@Suite("Store trust: schema objects", .timed)
struct StoreObjectTests {
    static let image = testBytes(100, seed: 1)

    /// A closed package with two cards sharing one external image, and one deck.
    func package(in dir: URL) throws -> URL {
        let package = try makeTestStore(in: dir)
        try package.write { tx in
            let deck = try tx.insert("Deck", ["title": .string("Spanish")])
            try tx.insert(
                "Card", ["front": .string("a"), "image": .data(Self.image), "deck": .reference(deck)])
            try tx.insert("Card", ["front": .string("b"), "image": .data(Self.image)])
        }
        try package.close()
        return package.url
    }

    /// Everything in the package directory, with each file's bytes.
    func contents(_ url: URL) throws -> [String: Data] {
        var result: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: url.path)
        while let name = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: url.path + "/" + name, isDirectory: &isDirectory)
            result[name] =
                isDirectory.boolValue ? Data() : try Data(contentsOf: url.appendingPathComponent(name))
        }
        return result
    }

    /// Expects every kind of open to refuse the package as corrupt, naming `object`, and to
    /// change nothing.
    func expectRefused(_ url: URL, naming object: String, sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        let before = try contents(url)
        for mode in [PackageStore.Mode.readWrite, .readOnly] {
            let error = expectDeckError(sourceLocation: sourceLocation) {
                _ = try PackageStore.open(at: url, mode: mode)
            }
            guard case .corrupt(_, let reason) = error else {
                Issue.record(
                    "expected corrupt, got \(String(describing: error))", sourceLocation: sourceLocation)
                continue
            }
            #expect(reason.contains("'\(object)'"), "\(reason)", sourceLocation: sourceLocation)
            #expect(error?.description.contains("deck verify") == true, sourceLocation: sourceLocation)
        }
        #expect(
            try contents(url) == before, "a refused open changed the package", sourceLocation: sourceLocation)
    }

    @Test func aPlantedTriggerIsCorruptionAndNoOpenRunsIt() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            // The attack of issue 8: the first ordinary insert zeroes every count, so the save
            // would delete every blob file.
            try rawStore(url).execute(
                "CREATE TRIGGER wipe AFTER INSERT ON \"Deck\" BEGIN UPDATE deck_blob SET refs = 0; END")
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes == ["trigger-unknown"], "\(report.findings)")
            #expect(!report.isValid)
            #expect(report.finding("trigger-unknown")?.object == "wipe")
            #expect(report.finding("trigger-unknown")?.message.contains("DROP TRIGGER") == true)
            try expectRefused(url, naming: "wipe")
            #expect(blobFiles(url) == [blobName(Self.image)])
        }
    }

    @Test func aDerivedTriggerWithAnotherBodyIsAltered() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try rawStore(url).execute(
                """
                DROP TRIGGER "deck_refs:Card.image:delete";
                CREATE TRIGGER "deck_refs:Card.image:delete" AFTER DELETE ON "Card"
                WHEN typeof(OLD."image") = 'text' BEGIN
                    UPDATE deck_blob SET refs = 0 WHERE digest = OLD."image";
                END;
                """)
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes == ["trigger-altered"], "\(report.findings)")
            #expect(report.finding("trigger-altered")?.severity == .corruption)
            try expectRefused(url, naming: "deck_refs:Card.image:delete")
        }
    }

    @Test func aViewInPlaceOfATableIsAltered() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try rawStore(url).execute(
                """
                DROP TABLE "Card.tags";
                CREATE VIEW "Card.tags" AS SELECT 1 AS source, 1 AS target;
                """)
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes.contains("table-altered"), "\(report.findings)")
            #expect(report.finding("table-altered")?.message.contains("view") == true)
            try expectRefused(url, naming: "Card.tags")
        }
    }

    @Test func anExtraIndexViewOrTableIsCorruption() throws {
        for (sql, code, name) in [
            ("CREATE INDEX extra ON \"Card\"(\"front\")", "index-unknown", "extra"),
            ("CREATE VIEW cards AS SELECT * FROM \"Card\"", "view-unknown", "cards"),
            ("CREATE TABLE notes(x)", "table-unknown", "notes"),
        ] {
            try withTestDirectory { dir throws in
                let url = try package(in: dir)
                try rawStore(url).execute(sql)
                let report = try PackageVerifier.verify(at: url)
                #expect(report.codes == [code], "\(report.findings)")
                #expect(!report.isValid)
                try expectRefused(url, naming: name)
            }
        }
    }

    @Test func aMissingPlainIndexIsUntidyAndGCCreatesIt() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try rawStore(url).execute(#"DROP INDEX "Card.deck.index""#)
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes == ["index-missing"], "\(report.findings)")
            #expect(report.isValid)
            let writer = try PackageStore.open(at: url)
            #expect(try writer.collectGarbage(dryRun: true).createdIndexes == ["Card.deck.index"])
            #expect(try writer.collectGarbage().createdIndexes == ["Card.deck.index"])
            try writer.close()
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }

    @Test func aMissingUniqueIndexOrTriggerIsCorruption() throws {
        for (sql, name) in [
            (#"DROP INDEX "Deck.title.unique""#, "Deck.title.unique"),
            (#"DROP TRIGGER "deck_refs:Card.image:insert""#, "deck_refs:Card.image:insert"),
        ] {
            try withTestDirectory { dir throws in
                let url = try package(in: dir)
                try rawStore(url).execute(sql)
                #expect(!(try PackageVerifier.verify(at: url)).isValid)
                try expectRefused(url, naming: name)
            }
        }
    }

    @Test func sqlitesOwnStatisticsTablesAreAllowed() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try rawStore(url).execute("ANALYZE")
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
            let writer = try PackageStore.open(at: url)
            try writer.close()
        }
    }

    /// The derived objects are made in parts (`ExpectedStore`: one database of thousands of
    /// objects costs SQLite a scan of its schema table per object); they are SQLite's records of
    /// them all the same, whatever the parts.
    @Test(arguments: [1, 7, 256, Int.max])
    func derivedObjectsMadeInPartsAreThoseOfOneDatabase(partSize: Int) throws {
        var inherited = flashCardsSchema()
        inherited.entities.append(
            StoreSchema.Entity(
                "Verb", superentity: "Card",
                attributes: [StoreSchema.Attribute("tense", .string, isOptional: true)]))
        for schema in [flashCardsSchema(), inherited, SchemaLimitsTests.chain(12), StoreSchema(entities: [])]
        {
            let mapping = try SchemaMapping(schema)
            for formatVersion in 2...PackageLayout.formatVersion {
                let one = try Database(path: ":memory:", mode: .create)
                defer { one.close() }
                try one.execute(StoreDDL.metadata)
                if formatVersion >= 3 { try one.execute(SchemaBookkeeping.historyTable) }
                for statement in StoreDDL.statements(for: mapping, formatVersion: formatVersion) {
                    try one.execute(statement)
                }
                if formatVersion >= VersionDDL.firstFormatVersion {
                    try one.execute(VersionDDL.tables)
                    for statement in VersionDDL.statements(for: mapping, formatVersion: formatVersion) {
                        try one.execute(statement)
                    }
                }
                var expected: [String: StoreObjects.Object] = [:]
                for object in try StoreObjects.objects(one) { expected[object.name] = object }
                let parted = try StoreObjects.expectedStore(
                    for: mapping, formatVersion: formatVersion, partSize: partSize)
                defer { parted.close() }
                #expect(try StoreObjects.derived(from: parted) == expected, "format \(formatVersion)")
                for (name, object) in expected where object.type == "table" {
                    let columns = "SELECT name, type, \"notnull\" FROM pragma_table_info(?)"
                    #expect(
                        try parted.database(holding: name)?.rows(columns, [.text(name)])
                            == one.rows(columns, [.text(name)]), "\(name)")
                }
            }
        }
    }

    @Test func whitespaceCaseAndCommentsDoNotMatterButTokensDo() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try rawStore(url).execute(
                """
                DROP INDEX "Card.deck.index";
                create   index "Card.deck.index" -- the same index, written by hand
                  on "Card" ( "deck" ) /* still the same */;
                """)
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
            try PackageStore.open(at: url).close()
        }
        func same(_ a: String, _ b: String) -> Bool {
            StoreObjects.same(Array(a.utf8), Array(b.utf8))
        }
        #expect(same("CREATE TABLE t(a INTEGER)", "create table t ( a integer )"))
        #expect(same("CHECK (x >= 0)", "CHECK(x>=0)"))
        #expect(!same("CHECK (x >= 0)", "CHECK (x > = 0)"))
        #expect(!same("length(d) = 64", "length(d) = 6 4"))
        #expect(!same(#"ON "Card"(x)"#, #"ON "card"(x)"#), "quoted identifiers compare exactly")
        #expect(!same(#"ON "Card"(x)"#, "ON Card(x)"))
        #expect(
            !same(#"ON "Card"(x)"#, "ON [Card](x)") && !same("ON [Card](x)", "ON `Card`(x)"), "quotes count")
        #expect(!same("IN ('blob')", "IN ('BLOB')"), "string literals compare exactly")
        #expect(!same("x'00'", "x '00'"))
        #expect(!same("a -- c\nb", "a"))
        #expect(!same("digest", "d\u{131}gest"), "only ASCII letters fold")
        #expect(!same(#"ON "Kit"(x)"#, "ON \"\u{212A}it\"(x)"), "no canonical equivalence")
    }
}

/// Tables are STRICT and every cell has a storage class its column's type allows.
@Suite("Store trust: storage classes", .timed)
struct StorageClassTests {
    static let schema = StoreSchema(
        version: "1",
        entities: [
            Entity(
                "Item",
                attributes: [
                    Attribute("i", .integer),
                    Attribute("flag", .bool, defaultValue: .bool(false)),
                    Attribute("when", .date, isOptional: true),
                    Attribute("raw", .data, isOptional: true),
                    Attribute("file", .data, isOptional: true, options: [.externalStorage]),
                    Attribute("name", .string, isOptional: true),
                ])
        ])

    func package(in dir: URL) throws -> URL {
        let package = try makeTestStore(in: dir, schema: Self.schema)
        try package.write { tx in
            try tx.insert("Item", ["i": .integer(1), "name": .string("one")])
        }
        try package.close()
        return package.url
    }

    /// A connection that can do what SQLite's defensive mode forbids (edit sqlite_schema).
    func untrusted(_ url: URL) throws -> Database {
        let db = try rawStore(url)
        var enabled: Int32 = 0
        _ = deck_sqlite_db_config_int(db.handle, SQLITE_DBCONFIG_DEFENSIVE, 0, &enabled)
        return db
    }

    /// Rewrites the stored SQL of table `Item` (then reconnect to use it).
    func setItemSQL(_ url: URL, strict: Bool) throws {
        let db = try untrusted(url)
        defer { db.close() }
        let sql = try #require(
            try db.scalar("SELECT sql FROM sqlite_schema WHERE name = 'Item'")?.string)
        let base = sql.hasSuffix(" STRICT") ? String(sql.dropLast(7)) : sql
        try db.execute("PRAGMA writable_schema = ON")
        try db.run(
            "UPDATE sqlite_schema SET sql = ? WHERE name = 'Item'", [.text(strict ? base + " STRICT" : base)])
        try db.execute("PRAGMA writable_schema = OFF")
    }

    @Test func aTableThatIsNotStrictHoldingTextInAnIntegerColumn() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try setItemSQL(url, strict: false)
            let db = try rawStore(url)
            try db.run(
                #"INSERT INTO "Item"(_gid, _entity, "i", "flag") VALUES (randomblob(16), 'Item', 'abc', 0)"#)
            db.close()
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes.contains("table-altered"), "\(report.findings)")
            #expect(report.finding("table-altered")?.message.contains("not STRICT") == true)
            let cell = try #require(report.finding("cell-type"), "\(report.findings)")
            #expect(cell.object == "Item #2")
            #expect(cell.message.contains("'i'") && cell.message.contains("text"), "\(cell.message)")
            expectDeckError { _ = try PackageStore.open(at: url, mode: .readOnly) }
        }
    }

    /// A STRICT table whose cells were written while it was not (the table's SQL matches the
    /// derived SQL again): SQLite's integrity check names the column, and quick verification,
    /// whatever its SQLite version, still finds every wrong storage class.
    @Test func cellsWrittenWhileTheTableWasNotStrict() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try setItemSQL(url, strict: false)
            let db = try untrusted(url)
            try db.execute("PRAGMA ignore_check_constraints = ON")
            try db.run(
                #"INSERT INTO "Item"(_gid, _entity, "i", "flag", "when", "raw", "file") VALUES (randomblob(16), 'Item', 2.5, 7, 'soon', 'text', 5)"#
            )
            db.close()
            try setItemSQL(url, strict: true)
            let full = try PackageVerifier.verify(at: url)
            #expect(!full.isValid)
            #expect(
                full.codes.contains("sqlite-integrity") || full.codes.contains("cell-type"),
                "\(full.findings)")
            // Straight to the per-column check, without SQLite's own.
            let db2 = try rawStore(url)
            defer { db2.close() }
            var report = VerificationReport(path: url.path)
            let mapping = try SchemaMapping(Self.schema)
            try StorageClassCheck.run(
                db2, mapping: mapping, tables: ["Item"], report: &report)
            let columns = report.findings.filter { $0.code == "cell-type" }.map { finding in
                String(finding.message.split(separator: "'")[1])
            }
            #expect(Set(columns) == ["i", "flag", "when", "raw", "file"], "\(report.findings)")
            #expect(report.findings.allSatisfy { $0.object == "Item #2" && $0.severity == .corruption })
        }
    }

    @Test func aNullInARequiredColumn() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try setItemSQL(url, strict: false)
            let db = try untrusted(url)
            // NOT NULL cannot be ignored; rewrite it away, insert, and put it back.
            let sql = try #require(try db.scalar("SELECT sql FROM sqlite_schema WHERE name = 'Item'")?.string)
            try db.execute("PRAGMA writable_schema = ON")
            try db.run(
                "UPDATE sqlite_schema SET sql = ? WHERE name = 'Item'",
                [.text(sql.replacingOccurrences(of: "\"i\" INTEGER NOT NULL", with: "\"i\" INTEGER"))])
            db.close()
            let db2 = try rawStore(url)
            try db2.run(#"INSERT INTO "Item"(_gid, _entity, "flag") VALUES (randomblob(16), 'Item', 0)"#)
            db2.close()
            let report = try PackageVerifier.verify(at: url)
            let cell = try #require(
                report.findings.first { $0.code == "cell-type" && $0.message.contains("NULL") })
            #expect(cell.object == "Item #2")
        }
    }

    @Test func aCleanStoreHasNoCellFindings() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: Self.schema)
            try package.write { tx in
                try tx.insert(
                    "Item",
                    [
                        "i": .integer(5), "flag": .bool(true), "when": .date(Date(timeIntervalSince1970: 7)),
                        "raw": .data(Data([1, 2])), "file": .data(testBytes(70_000)),
                    ])
                try tx.insert("Item", ["i": .integer(6), "file": .data(Data([9]))])
            }
            try package.close()
            #expect(try PackageVerifier.verify(at: package.url).findings.isEmpty)
        }
    }
}
