import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@_spi(Testing) @testable import DeckStore

/// Format version 3 (spec: sections 4.2, 4.4, 5.10, 12.4 to 12.6): the schema fingerprint, the
/// compatibility floor and the migration history; the version 2 packages of Tests/Fixtures/v2
/// (made by the Deck of commit 415c743) read as they are and upgraded by a writer; and what the
/// verifier says of bookkeeping that lies.
@Suite(.timed) struct FormatVersion3Tests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/v2")
    static let names = ["Flashcards.flashcards", "Library.deck"]

    static func copy(_ name: String, to dir: URL) throws -> URL {
        let url = dir.appendingPathComponent(name)
        try FileManager.default.copyItem(at: fixtures.appendingPathComponent(name), to: url)
        return url
    }

    /// The schema of spec section 5.6, as a person writes it.
    static let flashCardsSchema = """
        { "version": "1.0.0",
          "entities": [
            { "name": "Card",
              "attributes": [
                { "name": "front", "type": "string" },
                { "name": "back", "type": "string" },
                { "name": "creationDate", "type": "date" },
                { "name": "image", "type": "data", "optional": true, "options": ["externalStorage"] } ],
              "relationships": [
                { "name": "deck", "destination": "Deck", "inverse": "cards" },
                { "name": "tags", "destination": "Tag", "toMany": true, "inverse": "cards" } ] },
            { "name": "Deck",
              "attributes": [ { "name": "title", "type": "string", "options": ["unique"] } ],
              "relationships": [ { "name": "cards", "destination": "Card", "toMany": true,
                                   "inverse": "deck", "deleteRule": "cascade" } ] },
            { "name": "Tag",
              "attributes": [ { "name": "name", "type": "string", "options": ["unique"] } ],
              "relationships": [ { "name": "cards", "destination": "Card", "toMany": true,
                                   "inverse": "tags" } ] } ] }
        """

    @Test func theFingerprintIsTheSpecsAndIgnoresVersionAndOriginalNames() throws {
        let schema = try StoreSchema(json: Data(Self.flashCardsSchema.utf8), source: "5.6")
        #expect(schema.fingerprint == "4bf7c41160355fb72700504114430160cbdc080264f09061f1ec48870fa47e7b")
        #expect(schema.fingerprintForm.hasPrefix(#"{"entities":[{"attributes":[{"name":"front""#))
        var renamed = schema
        renamed.version = "7.0"
        renamed.entities[0].originalName = "Flashcard"
        renamed.entities[0].attributes[0].originalName = "question"
        renamed.entities[0].relationships[0].originalName = "pile"
        #expect(renamed.fingerprint == schema.fingerprint)
        var changed = schema
        changed.entities[0].attributes[3].externalThreshold = 1024
        #expect(changed.fingerprint != schema.fingerprint)
        changed = schema
        changed.entities[0].attributes.swapAt(0, 1)
        #expect(changed.fingerprint != schema.fingerprint, "declaration order is part of the mapping")
    }

    /// The fingerprint is computed over the canonical form (spec 5.5), whatever the stored text's
    /// spelling: escapes, number spellings and whitespace do not change it, and the canonical form
    /// spells strings and numbers as section 5.5 says.
    @Test func theFingerprintIsOfTheCanonicalFormWhateverTheSpelling() throws {
        func schema(_ title: String, _ weight: String, _ text: String) throws -> StoreSchema {
            let json =
                #"{ "version" : "1.0.0", "entities" : [ { "name" : "Note", "attributes" : [ "#
                + #"{ "name" : "\#(title)", "type" : "string", "default" : "\#(text)" }, "#
                + #"{ "name" : "w", "type" : "double", "default" : \#(weight) } ] } ] }"#
            return try StoreSchema(json: Data(json.utf8), source: "test")
        }
        let plain = try schema("title", "1.5", #"a\u0001\b/\u00e9\u2028"#)
        let respelled = try schema(#"\u0074itle"#, "15e-1", #"\u0061\u0001\u0008\/é "#)
        #expect(respelled.fingerprint == plain.fingerprint)
        #expect(
            plain.fingerprintForm.contains(#""default":"a\u0001\b/é\#u{2028}""#), "\(plain.fingerprintForm)")
        #expect(plain.fingerprintForm.contains(#""default":1.5,"#))
        for (spelled, canonical) in [
            ("2.0", "2"), ("-0.0", "0"), ("1e15", "1000000000000000"), ("0.0001", "0.0001"),
            ("0.00001", "1e-05"), ("9007199254740994", "9.007199254740994e+15"), ("1E300", "1e+300"),
        ] {
            let form = try schema("title", spelled, "x").fingerprintForm
            #expect(form.contains(#""default":\#(canonical),"#), "\(spelled): \(form)")
        }
    }

    @Test func versionsOrderAsTheSpecSays() {
        let ascending = ["0.9", "1", "1.0.1", "1.2", "1.9.0", "1.10.0", "1.10.0.beta", "2", "10", "a"]
        for (index, lower) in ascending.enumerated() {
            for higher in ascending[(index + 1)...] {
                #expect(
                    StoreSchema.compareVersions(lower, higher) == .orderedAscending, "\(lower) < \(higher)")
                #expect(
                    StoreSchema.compareVersions(higher, lower) == .orderedDescending, "\(higher) > \(lower)")
            }
        }
        #expect(StoreSchema.compareVersions("2", "2.0.0") == .orderedSame)
        #expect(StoreSchema.compareVersions("01.2", "1.2") == .orderedSame)
        #expect(StoreSchema.compareVersions("1.0.beta", "1.0.9") == .orderedDescending)
        #expect(
            StoreSchema.compareVersions("1..2", "1.0.2") == .orderedDescending, "an empty component is text")
    }

    @Test func aNewPackageHasTheBookkeeping() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            try package.close()
            let store = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? store.close() }
            let info = try store.info()
            #expect(info.formatVersion == PackageLayout.formatVersion)
            #expect(info.schemaFingerprint == store.schema.fingerprint)
            #expect(info.schemaFloor == store.schema.version)
            #expect(info.migrations.isEmpty)
            let db = try Database(path: url.path + "/store.sqlite", mode: .readOnly)
            defer { db.close() }
            #expect(
                try db.scalar("SELECT value FROM deck_meta WHERE key = 'schema_fingerprint'")
                    == .text(store.schema.fingerprint))
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid && report.findings.isEmpty, "\(report.findings)")
        }
    }

    @Test(arguments: names)
    func aReadOnlyOpenReadsVersion2AsItIsAndWritesNothing(name: String) throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy(name, to: dir)
            let before = try FormatUpgradeTests.snapshot(url)
            let store = try PackageStore.open(at: url, mode: .readOnly)
            #expect(store.storeFormatVersion == 2 && store.manifest.formatVersion == 2)
            #expect(store.documentID != nil)
            let info = try store.info()
            #expect(info.formatVersion == 2 && info.schemaFloor == nil && info.migrations.isEmpty)
            #expect(info.schemaFingerprint == store.schema.fingerprint)
            try store.close()
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid, "\(report.findings)")
            #expect(report.formatVersion == 2 && report.manifestFormatVersion == 2)
            #expect(
                FormatUpgradeTests.same(before, try FormatUpgradeTests.snapshot(url)),
                "a read-only open or verify changed a file")
        }
    }

    @Test(arguments: names)
    func aWriterUpgradesVersion2KeepingEveryValueAndIdentity(name: String) throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy(name, to: dir)
            let before = try FormatUpgradeTests.content(url)
            let findingsBefore = try PackageVerifier.verify(at: url).findings.map(\.code)
            func globalIDs() throws -> [UUID?] {
                let store = try PackageStore.open(at: url, mode: .readOnly)
                defer { try? store.close() }
                return try store.read { reader throws in
                    try store.schema.entities.filter { $0.superentity == nil }.flatMap {
                        try reader.fetch(RecordQuery($0.name)).map(\.globalID)
                    }
                }
            }
            let ids = try globalIDs()
            let documentID = try PackageStore.open(at: url, mode: .readOnly).documentID

            let store = try PackageStore.open(at: url, mode: .readWrite)
            #expect(store.storeFormatVersion == PackageLayout.formatVersion)
            #expect(store.documentID == documentID)
            let info = try store.info()
            #expect(info.schemaFloor == store.schema.version && info.migrations.isEmpty)
            try store.close()

            let manifest = try Manifest.read(packagePath: url.path)
            #expect(
                manifest.formatVersion == PackageLayout.formatVersion
                    && manifest.minimumReaderVersion == PackageLayout.minimumReaderVersion)
            #expect(try FormatUpgradeTests.content(url) == before)
            #expect(try globalIDs() == ids)
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid, "\(report.findings)")
            #expect(report.findings.map(\.code) == findingsBefore)
            #expect(report.formatVersion == PackageLayout.formatVersion)
            // A second writer changes nothing.
            let store3 = try Data(contentsOf: url.appendingPathComponent("store.sqlite"))
            try PackageStore.open(at: url).close()
            let db = try Database(path: url.path + "/store.sqlite", mode: .readOnly)
            defer { db.close() }
            #expect(try db.scalar("SELECT count(*) FROM deck_migration") == .integer(0))
            #expect(store3.count > 0)
        }
    }

    @Test func anInterruptedVersion2UpgradeIsReadableAndTheNextWriterFinishesIt() throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy("Library.deck", to: dir)
            let before = try FormatUpgradeTests.content(url)
            var manifest = try Manifest.read(packagePath: url.path)
            manifest.formatVersion = 3
            try FormatUpgrade.writeManifest(manifest, packagePath: url.path)
            let reader = try PackageStore.open(at: url, mode: .readOnly)
            #expect(reader.storeFormatVersion == 2 && reader.manifest.formatVersion == 3)
            try reader.close()
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid && report.formatVersion == 2, "\(report.findings)")
            try PackageStore.open(at: url).close()
            #expect(try FormatUpgradeTests.content(url) == before)
            let after = try PackageVerifier.verify(at: url)
            #expect(after.isValid && after.formatVersion == PackageLayout.formatVersion, "\(after.findings)")
        }
    }

    @Test func aFailedStoreUpgradeLeavesVersion2Exactly() throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy("Flashcards.flashcards", to: dir)
            // A planted table named like the history makes the upgrade's CREATE fail inside the
            // transaction (the open refuses the plant for reading too: it is not derived).
            let db = try rawStore(url)
            try db.execute("CREATE TABLE deck_migration(x)")
            db.close()
            let storeBefore = try Data(contentsOf: url.appendingPathComponent("store.sqlite"))
            let error = expectDeckError { _ = try PackageStore.open(at: url) }
            if case .corrupt(_, let reason) = error {
                #expect(reason.contains("deck_migration"), "\(reason)")
            } else {
                Issue.record("expected corrupt, got \(String(describing: error))")
            }
            #expect(try Data(contentsOf: url.appendingPathComponent("store.sqlite")) == storeBefore)
        }
    }

    @Test func plantedBookkeepingInAVersion2StoreIsSetRightByTheUpgrade() throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy("Library.deck", to: dir)
            let db = try rawStore(url)
            try db.run("INSERT INTO deck_meta VALUES ('schema_fingerprint', x'0102'), ('schema_floor', '99')")
            try db.run("INSERT INTO deck_meta VALUES ('later_key', 'kept')")
            db.close()
            #expect(try PackageVerifier.verify(at: url).isValid, "a version 2 reader ignores the keys")
            let store = try PackageStore.open(at: url)
            let info = try store.info()
            #expect(info.schemaFloor == store.schema.version)
            try store.close()
            let after = try Database(path: url.path + "/store.sqlite", mode: .readOnly)
            defer { after.close() }
            #expect(try after.scalar("SELECT value FROM deck_meta WHERE key = 'later_key'") == .text("kept"))
            #expect(try PackageVerifier.verify(at: url).isValid)
        }
    }

    @Test func aReplacedHistoryTableIsReportedAndRefused() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            try package.close()
            let db = try rawStore(url)
            try db.execute("DROP TABLE deck_migration; CREATE TABLE deck_migration(x ANY) STRICT")
            db.close()
            let report = try PackageVerifier.verify(at: url)
            #expect(Set(report.codes) == ["table-altered", "column-missing"], "\(report.findings)")
            let error = expectDeckError { _ = try PackageStore.open(at: url, mode: .readOnly) }
            if case .corrupt(_, let reason) = error {
                #expect(reason.contains("deck_migration"))
            } else {
                Issue.record("expected corrupt, got \(String(describing: error))")
            }
        }
    }

    @Test func theVerifierReportsLyingBookkeeping() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            let schema = package.schema
            try package.close()
            let fingerprint = schema.fingerprint
            let other = String(repeating: "0", count: 64)
            func row(
                _ sequence: Int, from: String, _ fromFingerprint: String, to: String, _ toFingerprint: String,
                breaking: Int = 0
            ) -> String {
                "INSERT INTO deck_migration VALUES (\(sequence), '\(from)', '\(fromFingerprint)', '\(to)', "
                    + "'\(toFingerprint)', '2026-12-01T10:00:00.000Z', NULL, \(breaking))"
            }
            let v = schema.version
            let cases: [(String, [String], String)] = [
                (
                    "a wrong fingerprint",
                    ["UPDATE deck_meta SET value = '\(other)' WHERE key = 'schema_fingerprint'"],
                    "meta-invalid"
                ),
                (
                    "no fingerprint", ["DELETE FROM deck_meta WHERE key = 'schema_fingerprint'"],
                    "meta-invalid"
                ),
                (
                    "a floor above the version",
                    ["UPDATE deck_meta SET value = '99' WHERE key = 'schema_floor'"],
                    "meta-invalid"
                ),
                (
                    "a floor that is no text", ["UPDATE deck_meta SET value = 1 WHERE key = 'schema_floor'"],
                    "meta-invalid"
                ),
                (
                    "a history that ends elsewhere", [row(1, from: "0.1", other, to: "0.2", other)],
                    "migration-history"
                ),
                ("a gap", [row(2, from: "0.1", other, to: v, fingerprint)], "migration-history"),
                (
                    "a broken chain",
                    [
                        row(1, from: "0.1", other, to: "0.2", other),
                        row(2, from: "0.3", other, to: v, fingerprint),
                    ],
                    "migration-history"
                ),
                (
                    "a malformed fingerprint", [row(1, from: "0.1", "xyz", to: v, fingerprint)],
                    "migration-history"
                ),
                (
                    "a floor below a breaking migration",
                    [
                        row(1, from: "0.1", other, to: v, fingerprint, breaking: 1),
                        "UPDATE deck_meta SET value = '0.1' WHERE key = 'schema_floor'",
                    ],
                    "meta-invalid"
                ),
            ]
            let pristine = dir.appendingPathComponent("pristine")
            try FileManager.default.copyItem(at: url, to: pristine)
            for (what, statements, code) in cases {
                try FileManager.default.removeItem(at: url)
                try FileManager.default.copyItem(at: pristine, to: url)
                let db = try rawStore(url)
                for statement in statements { try db.execute(statement) }
                db.close()
                let report = try PackageVerifier.verify(at: url)
                #expect(report.codes == [code], "\(what): \(report.findings)")
                // Readers are not misled and do not refuse: the fingerprint is computed.
                let store = try PackageStore.open(at: url, mode: .readOnly)
                #expect(try store.info().schemaFingerprint == fingerprint, "\(what)")
                try store.close()
            }
            // A consistent history verifies.
            try FileManager.default.removeItem(at: url)
            try FileManager.default.copyItem(at: pristine, to: url)
            let db = try rawStore(url)
            try db.execute(row(1, from: "0.1", other, to: "0.2", other))
            try db.execute(row(2, from: "0.2", other, to: v, fingerprint, breaking: 1))
            db.close()
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid && report.findings.isEmpty, "\(report.findings)")
            let store = try PackageStore.open(at: url, mode: .readOnly)
            let history = try store.info().migrations
            try store.close()
            #expect(history.map(\.sequence) == [1, 2] && history.map(\.isBreaking) == [false, true])
            #expect(history.last?.toFingerprint == fingerprint && history.first?.stage == nil)
        }
    }
}
