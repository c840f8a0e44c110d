import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// Conflict copies that file-sync services leave in a package (spec 2.4): recognised by each
/// service's naming, reported by verification, ignored by readers, left alone by garbage
/// collection.
@Suite("File-sync conflict copies", .timed)
struct SyncConflictTests {
    @Test(arguments: [
        ("store.sync-conflict-20261203-101500-ABCDEFG.sqlite", "store.sqlite", "Syncthing"),
        ("store.sync-conflict-20261203-101500-7Q2XK4M.sqlite-wal", "store.sqlite-wal", "Syncthing"),
        ("manifest.sync-conflict-20261203-101500-ABCDEFG.json", "manifest.json", "Syncthing"),
        ("lock.sync-conflict-20261203-101500-ABCDEFG", "lock", "Syncthing"),
        ("store (conflicted copy 2026-12-03 101500).sqlite", "store.sqlite", "Nextcloud"),
        ("store (Alice's conflicted copy 2026-12-03).sqlite", "store.sqlite", "Dropbox"),
        ("store (conflicted copy).sqlite-shm", "store.sqlite-shm", "Dropbox"),
        ("manifest_conflict-20261203-101500.json", "manifest.json", "ownCloud"),
        ("store 2.sqlite", "store.sqlite", "iCloud Drive"),
        ("store 12.sqlite-journal", "store.sqlite-journal", "iCloud Drive"),
        ("manifest 3.json", "manifest.json", "iCloud Drive"),
    ])
    func eachServicesNamingIsRecognised(name: String, original: String, service: String) {
        let copy = SyncConflictCopy.recognize(name)
        #expect(
            copy?.original == original && copy?.service == service, "\(name): \(String(describing: copy))")
    }

    @Test(arguments: [
        "store.sqlite", "manifest.json", "lock", "blobs", "tmp", "store.sqlite.bak", "store 0.sqlite",
        "store  2.sqlite", "store 1234567.sqlite", "store (copy).sqlite",
        "store (conflicted copy 2026-12-03.sqlite",
        "store.sync-conflict-2026120-101500-ABCDEFG.sqlite",
        "store.sync-conflict-20261203-101500-abcdefg.sqlite",
        "store.sync-conflict-20261203-101500-ABCDEFGH.sqlite",
        "notes.sync-conflict-20261203-101500-ABCDEFG.sqlite",
        "store 2.sqlite3", "Store 2.sqlite", "README.txt",
    ])
    func otherNamesAreNot(name: String) {
        #expect(SyncConflictCopy.recognize(name) == nil, "\(name)")
    }

    /// A package whose store says "here", beside Syncthing's copy of an older store that says
    /// "there" and iCloud Drive's copy of its manifest.
    func packageWithConflicts(in dir: URL) throws -> (URL, [String]) {
        let url = dir.appendingPathComponent("notes.deck")
        let store = try PackageStore.create(at: url, contentType: "org.test", schema: flashCardsSchema())
        _ = try store.write { t in try t.insert("Deck", ["title": .string("there")]) }
        try store.close()
        let storeCopy = "store.sync-conflict-20261203-101500-ABCDEFG.sqlite"
        let manifestCopy = "manifest 2.json"
        try FileManager.default.copyItem(
            at: url.appendingPathComponent("store.sqlite"), to: url.appendingPathComponent(storeCopy))
        try FileManager.default.copyItem(
            at: url.appendingPathComponent("manifest.json"), to: url.appendingPathComponent(manifestCopy))
        let reopened = try PackageStore.open(at: url)
        try reopened.write { t in try t.update("Deck", id: 1, ["title": .string("here")]) }
        try reopened.close()
        return (url, [manifestCopy, storeCopy])
    }

    @Test func verificationReportsEachCopyAndThePackageStaysValid() throws {
        try withTestDirectory { dir in
            let (url, copies) = try packageWithConflicts(in: dir)
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes == ["sync-conflict", "sync-conflict"], "\(report.findings)")
            #expect(report.isValid)
            #expect(report.findings.map(\.object) == copies.map { url.appendingPathComponent($0).path })
            #expect(report.findings.allSatisfy { $0.severity == .untidy })
            #expect(
                report.findings.last?.message.hasPrefix("Syncthing's conflict copy of store.sqlite") == true)
            #expect(
                report.findings.first?.message.hasPrefix("iCloud Drive's conflict copy of manifest.json")
                    == true)
        }
    }

    @Test func readersReadTheStoreNotACopyAndGarbageCollectionKeepsThem() throws {
        try withTestDirectory { dir in
            let (url, copies) = try packageWithConflicts(in: dir)
            let store = try PackageStore.open(at: url)
            let titles = try store.read { try $0.fetch(RecordQuery("Deck")).map { $0["title"] } }
            #expect(titles == [.string("here")])
            _ = try store.collectGarbage()
            try store.close()
            for copy in copies {
                #expect(FileManager.default.fileExists(atPath: url.appendingPathComponent(copy).path))
            }
        }
    }

    @Test func aCopyOfLockIsSaidToBeHarmlessAndGarbageCollectionRemovesIt() throws {
        try withTestDirectory { dir in
            let (url, copies) = try packageWithConflicts(in: dir)
            let lockCopy = url.appendingPathComponent("lock.sync-conflict-20261205-054417-SWXA5HA")
            try Data("4242\n".utf8).write(to: lockCopy)
            let report = try PackageVerifier.verify(at: url)
            let finding = try #require(report.findings.first { $0.object == lockCopy.path })
            #expect(finding.code == "sync-conflict" && finding.severity == .untidy && report.isValid)
            #expect(finding.message.contains("holds nothing of the document"), "\(finding.message)")
            let store = try PackageStore.open(at: url)
            let dryRun = try store.collectGarbage(dryRun: true)
            #expect(dryRun.temporaries == [lockCopy.path])
            _ = try store.collectGarbage()
            try store.close()
            #expect(!FileManager.default.fileExists(atPath: lockCopy.path))
            for copy in copies {
                #expect(FileManager.default.fileExists(atPath: url.appendingPathComponent(copy).path))
            }
        }
    }

    @Test func aPackageWithoutItsStoreStillNamesTheCopies() throws {
        // A sync that carried the conflict copy but not the store: the copy is reported beside
        // the missing store, so that nobody takes the package for empty and deletes it.
        try withTestDirectory { dir in
            let (url, _) = try packageWithConflicts(in: dir)
            try FileManager.default.removeItem(at: url.appendingPathComponent("store.sqlite"))
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes.contains("store-missing"))
            #expect(report.codes.filter { $0 == "sync-conflict" }.count == 2)
        }
    }

    @Test func aConflictCopyOfTheStoreIsComparedWithTheStore() throws {
        try withTestDirectory { dir in
            let (url, _) = try packageWithConflicts(in: dir)
            let copies = SyncConflictCopy.find(in: url)
            #expect(copies.map(\.service) == ["iCloud Drive", "Syncthing"])
            let store = try #require(copies.first { $0.isStore })
            let difference = try DocumentDifference(between: url, andConflictCopy: store)
            // The copy is the store before the deck was renamed "here".
            guard case .cells(let cells)? = difference.records.first?.change else {
                Issue.record("no changed record: \(difference)")
                return
            }
            #expect(difference.records.count == 1)
            #expect(
                cells == [
                    CellDifference(
                        name: "title", first: .value(.string("here")), second: .value(.string("there")))
                ])
            // Nothing was written into the package.
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: url.path).sorted() == [
                    "blobs", "lock", "manifest 2.json", "manifest.json", "store.sqlite",
                    "store.sync-conflict-20261203-101500-ABCDEFG.sqlite",
                ])
            let manifest = try #require(copies.first { !$0.isStore })
            #expect(throws: DeckError.self) {
                try DocumentDifference(between: url, andConflictCopy: manifest)
            }
        }
    }

    @Test func aConflictCopyThatIsNoStoreOrNoFileIsRefusedByItsName() throws {
        try withTestDirectory { dir in
            let (url, _) = try packageWithConflicts(in: dir)
            let name = "store.sync-conflict-20261203-101500-ABCDEFG.sqlite"
            let path = url.appendingPathComponent(name).path
            // Garbage where the other device's store should be.
            try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
            let copy = try #require(SyncConflictCopy.recognize(name))
            #expect {
                try DocumentDifference(between: url, andConflictCopy: copy)
            } throws: { error in
                guard case DeckError.corrupt(let where_, _) = error else { return false }
                return where_ == path
            }
            // A FIFO in its place is refused, not read (which would block).
            try FileManager.default.removeItem(atPath: path)
            #expect(mkfifo(path, 0o600) == 0)
            #expect {
                try DocumentDifference(between: url, andConflictCopy: copy)
            } throws: { error in
                guard case DeckError.notARegularFile(let where_, _) = error else { return false }
                return where_ == path
            }
        }
    }
}
