import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@_spi(Testing) @testable import DeckStore

#if canImport(Glibc)
    import Glibc
#endif

/// The version 1 packages of Tests/Fixtures/v1 (made by the Deck of commit 7cfab88): read as they
/// are, upgraded by a writer to the current version in one transaction keeping every value, and
/// the identity rules of version 2 (spec: sections 6.10, 12.2 and 12.5).
/// ``FormatVersion3Tests`` does the same for the version 2 fixtures.
@Suite(.timed) struct FormatUpgradeTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/v1")
    static let names = ["Flashcards.flashcards", "Library.deck"]

    /// A copy of fixture `name` in `dir`.
    static func copy(_ name: String, to dir: URL) throws -> URL {
        let url = dir.appendingPathComponent(name)
        try FileManager.default.copyItem(at: fixtures.appendingPathComponent(name), to: url)
        return url
    }

    /// Every file of a package with its bytes and modification time (to the nanosecond).
    static func snapshot(_ url: URL) throws -> [String: (Data, Int, Int)] {
        var result: [String: (Data, Int, Int)] = [:]
        let enumerator = FileManager.default.enumerator(atPath: url.path)
        while let name = enumerator?.nextObject() as? String {
            let path = url.path + "/" + name
            var st = stat()
            guard lstat(path, &st) == 0 else { continue }
            let data =
                (st.st_mode & S_IFMT) == S_IFREG ? try Data(contentsOf: URL(fileURLWithPath: path)) : Data()
            result[name] = (data, st.st_mtim.tv_sec, st.st_mtim.tv_nsec)
        }
        return result
    }

    static func same(_ a: [String: (Data, Int, Int)], _ b: [String: (Data, Int, Int)]) -> Bool {
        a.count == b.count && a.allSatisfy { name, value in b[name].map { $0 == value } ?? false }
    }

    /// Everything a package holds, by entity: each record (without its global id) and its to-many
    /// relationships' ids; and the blob rows with their reference counts.
    struct Content: Equatable {
        var records: [String: [Record]] = [:]
        var related: [String: [Int64]] = [:]
        var blobs: [[SQLValue]] = []
    }

    static func content(_ url: URL) throws -> Content {
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        var content = Content()
        try store.read { reader throws in
            for entity in store.schema.entities {
                var records = try reader.fetch(RecordQuery(entity.name, includesSubentities: false))
                for index in records.indices { records[index].globalID = nil }
                content.records[entity.name] = records
                let toMany = store.schema.properties(of: entity.name).relationships.filter(\.isToMany)
                for record in records {
                    for relationship in toMany {
                        content.related["\(entity.name) #\(record.id).\(relationship.name)"] =
                            try reader.related(entity.name, id: record.id, relationship.name).sorted()
                    }
                }
            }
        }
        let db = try Database(path: url.path + "/store.sqlite", mode: .readOnly)
        defer { db.close() }
        content.blobs = try db.rows("SELECT digest, size, refs FROM deck_blob ORDER BY digest")
        return content
    }

    @Test(arguments: names)
    func aReadOnlyOpenReadsVersion1AsItIsAndWritesNothing(name: String) throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy(name, to: dir)
            let before = try Self.snapshot(url)
            let store = try PackageStore.open(at: url, mode: .readOnly)
            #expect(store.storeFormatVersion == 1)
            #expect(store.manifest.formatVersion == 1)
            #expect(store.documentID == nil)
            let records = try store.read { reader throws in
                try store.schema.entities.filter { $0.superentity == nil }.flatMap {
                    try reader.fetch(RecordQuery($0.name))
                }
            }
            #expect(!records.isEmpty)
            #expect(records.allSatisfy { $0.globalID == nil })
            #expect(try store.info().formatVersion == 1)
            try store.close()
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid, "\(report.findings)")
            #expect(report.formatVersion == 1 && report.manifestFormatVersion == 1)
            #expect(Self.same(before, try Self.snapshot(url)), "a read-only open or verify changed a file")
        }
    }

    @Test(arguments: names)
    func aWriterUpgradesKeepingEveryValue(name: String) throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy(name, to: dir)
            let before = try Self.content(url)
            let findingsBefore = try PackageVerifier.verify(at: url).findings.map(\.code)

            let store = try PackageStore.open(at: url, mode: .readWrite)
            #expect(store.storeFormatVersion == PackageLayout.formatVersion)
            #expect(
                store.manifest.formatVersion == PackageLayout.formatVersion
                    && store.manifest.minimumReaderVersion == PackageLayout.minimumReaderVersion)
            let documentID = try #require(store.documentID)
            #expect(documentID.uuidString.lowercased().dropFirst(14).first == "4")
            try store.close()

            let manifest = try Manifest.read(packagePath: url.path)
            #expect(
                manifest.formatVersion == PackageLayout.formatVersion
                    && manifest.minimumReaderVersion == PackageLayout.minimumReaderVersion)
            #expect(try Self.content(url) == before)
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid, "\(report.findings)")
            #expect(report.findings.map(\.code) == findingsBefore)
            #expect(report.formatVersion == PackageLayout.formatVersion)

            // Every record has a version 4 global id, unique in the document.
            let reader = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? reader.close() }
            let ids = try reader.read { reader throws in
                try reader.schema.entities.filter { $0.superentity == nil }.flatMap {
                    try reader.fetch(RecordQuery($0.name)).map(\.globalID)
                }
            }
            #expect(ids.count == before.records.values.map(\.count).reduce(0, +))
            let unique = Set(ids.compactMap { $0 })
            #expect(unique.count == ids.count)
            #expect(unique.allSatisfy { $0.uuid.6 >> 4 == 4 && $0.uuid.8 >> 6 == 2 })
            #expect(reader.documentID == documentID)
            // The store's objects are those version 2 derives (the open checked it), and the key
            // sequence starts after the highest key kept.
            let db = try Database(path: url.path + "/store.sqlite", mode: .readOnly)
            defer { db.close() }
            for (table, records) in before.records where !records.isEmpty {
                guard let root = reader.schema.entity(named: table), root.superentity == nil else { continue }
                let highest = try db.scalar("SELECT max(_pk) FROM \(quote(table))")?.int64 ?? 0
                let sequence = try db.scalar("SELECT seq FROM sqlite_sequence WHERE name = ?", [.text(table)])
                #expect(sequence?.int64 == highest)
            }
        }
    }

    @Test func aSecondOpenChangesNothingAndKeysAreNeverReused() throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy("Library.deck", to: dir)
            try PackageStore.open(at: url).close()
            func ids() throws -> [Int64: UUID?] {
                let store = try PackageStore.open(at: url, mode: .readOnly)
                defer { try? store.close() }
                return try store.read { reader throws in
                    Dictionary(
                        uniqueKeysWithValues: try reader.fetch(RecordQuery("Item")).map {
                            ($0.id, $0.globalID)
                        })
                }
            }
            let first = try ids()
            let manifest = try Data(contentsOf: url.appendingPathComponent("manifest.json"))
            let documentID = try PackageStore.open(at: url, mode: .readOnly).documentID
            let store = try PackageStore.open(at: url)
            #expect(store.documentID == documentID)
            #expect(try ids() == first)
            #expect(try Data(contentsOf: url.appendingPathComponent("manifest.json")) == manifest)
            // The highest key, deleted, is never given out again.
            let highest = try #require(first.keys.max())
            let (added, _) = try store.write { transaction in
                _ = try transaction.delete("Item", id: highest)
                return try transaction.insert("Item", ["title": .string("new")])
            }
            #expect(added == highest + 1)
            let again = try store.write { transaction in
                _ = try transaction.delete("Item", id: added)
                return try transaction.insert("Item", ["title": .string("newer")])
            }.0
            #expect(again == added + 1)
            try store.close()
        }
    }

    @Test func unknownMetadataKeysSurviveTheUpgrade() throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy("Library.deck", to: dir)
            let db = try rawStore(url)
            try db.run("INSERT INTO deck_meta VALUES ('later_key', x'0102')")
            db.close()
            try PackageStore.open(at: url).close()
            let after = try Database(path: url.path + "/store.sqlite", mode: .readOnly)
            defer { after.close() }
            #expect(
                try after.scalar("SELECT value FROM deck_meta WHERE key = 'later_key'")
                    == .blob(Data([1, 2])))
            #expect(try PackageVerifier.verify(at: url).isValid)
        }
    }

    @Test func anInterruptedUpgradeIsReadableAndTheNextWriterFinishesIt() throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy("Flashcards.flashcards", to: dir)
            let before = try Self.content(url)
            // What a kill between the manifest and the store's commit leaves.
            var manifest = try Manifest.read(packagePath: url.path)
            manifest.formatVersion = 3
            manifest.minimumReaderVersion = 2
            try FormatUpgrade.writeManifest(manifest, packagePath: url.path)
            let reader = try PackageStore.open(at: url, mode: .readOnly)
            #expect(reader.storeFormatVersion == 1 && reader.manifest.formatVersion == 3)
            try reader.close()
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid && report.findings.isEmpty, "\(report.findings)")
            #expect(report.formatVersion == 1 && report.manifestFormatVersion == 3)

            try PackageStore.open(at: url).close()
            #expect(try Self.content(url) == before)
            let after = try PackageVerifier.verify(at: url)
            #expect(after.isValid && after.findings.isEmpty, "\(after.findings)")
            #expect(after.formatVersion == PackageLayout.formatVersion)
        }
    }

    @Test func aFailedManifestWriteLeavesVersion1() throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy("Flashcards.flashcards", to: dir)
            FaultInjection.arm(.rename, pathContains: url.path, errno: ENOSPC)
            let error = expectDeckError { _ = try PackageStore.open(at: url) }
            FaultInjection.disarm()
            #expect(error != nil)
            #expect(try Manifest.read(packagePath: url.path).formatVersion == 1)
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid && report.formatVersion == 1, "\(report.findings)")
            // The lock was released: the next writer upgrades.
            try PackageStore.open(at: url).close()
            #expect(try PackageVerifier.verify(at: url).formatVersion == PackageLayout.formatVersion)
        }
    }

    @Test func globalIDsNeverChangeAndTheKeySequenceIsChecked() throws {
        try withTestDirectory { dir throws in
            let store = try makeTestStore(in: dir)
            try store.write { tx in
                try tx.insert("Tag", ["name": .string("a")])
                try tx.insert("Tag", ["name": .string("b")])
            }
            let url = store.url
            try store.close()
            let db = try rawStore(url)
            defer { db.close() }
            for change in [
                "UPDATE Tag SET _gid = randomblob(16) WHERE _pk = 1",
                "UPDATE Tag SET _gid = (SELECT _gid FROM Tag WHERE _pk = 2) WHERE _pk = 1",
            ] {
                do {
                    try db.run(change)
                    Issue.record("\(change) changed a global id")
                } catch {
                    #expect("\(error)".contains("never changes"), "\(error)")
                }
            }
            // A same-value update is no change.
            try db.run("UPDATE Tag SET _gid = _gid, name = 'c' WHERE _pk = 1")
            try db.run("UPDATE sqlite_sequence SET seq = 1 WHERE name = 'Tag'")
            let report = try PackageVerifier.verify(at: url)
            // The range of keys the inserts recorded (spec 20.3) now passes the sequence too.
            #expect(report.codes == ["key-sequence", "versions"], "\(report.findings)")
            try db.run("UPDATE sqlite_sequence SET seq = 2 WHERE name = 'Tag'")
            try db.execute("DROP TRIGGER \"deck_gid:Tag:update\"")
            #expect(try PackageVerifier.verify(at: url).codes.contains("trigger-missing"))
            let error = expectDeckError { _ = try PackageStore.open(at: url, mode: .readOnly) }
            if case .corrupt(_, let reason) = error {
                #expect(reason.contains("deck_gid:Tag:update"))
            } else {
                Issue.record("expected corrupt, got \(String(describing: error))")
            }
        }
    }
}
