import CDeckFaultVFS
import CSQLite
import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// SQLite's own I/O failing under a save: the VFS in Tests/Harness/FaultVFS fails the n-th
/// read, write or sync of the package's store files. (Truncation happens only in the
/// checkpoint at close, whose failure is harmless and ignored by design.) The VFS keeps one plan
/// per path fragment, and each test arms its own directory's unique name, so they run in parallel.
@Suite("SQLite I/O failures under a save", .timed)
struct SQLiteFaultTests {
    /// SQLite VFS operations (see CDeckFaultVFS.h) and the errors they are made to return.
    static let sqliteFaults: [(name: String, operation: Int32, code: Int32)] = [
        ("write", 2, SQLITE_FULL), ("write", 2, SQLITE_IOERR | (3 << 8)),
        ("sync", 3, SQLITE_IOERR | (4 << 8)),
        ("read", 1, SQLITE_IOERR | (1 << 8)),
    ]

    @Test(arguments: 0..<sqliteFaults.count)
    func aFailingStoreKeepsTheCommittedState(fault index: Int) throws {
        let fault = Self.sqliteFaults[index]
        #expect(deck_fault_vfs_install() == SQLITE_OK)
        let scratch = try ScratchDirectory()
        let directory = scratch.url
        let url = directory.appendingPathComponent("Store.deck")
        let document = try PackageStore.create(
            at: url, contentType: SampleCards.contentType, schema: SampleCards.schema)
        try SampleCards.populate(document)
        try document.close()
        let before = try cards(url)

        var fired = 0
        for skip in [0, 1, 2, 5, 10, 25] {
            let writer = try PackageStore.open(at: url, mode: .readWrite)
            #expect(
                deck_fault_vfs_arm(fault.operation, directory.lastPathComponent, Int32(skip), fault.code)
                    == SQLITE_OK)
            var thrown: (any Error)?
            var transaction: StoreTransaction?
            do {
                let tx = try writer.beginTransaction()
                transaction = tx
                for i in 0..<20 {
                    try tx.insert(
                        "Card",
                        [
                            "front": .string("new \(i)"), "back": .string("x"), "creationDate": .date(.now),
                            "image": .data(Data(repeating: UInt8(i), count: 70_000)),
                        ])
                }
                try tx.commit()
            } catch {
                thrown = error
            }
            let didFire = deck_fault_vfs_disarm(directory.lastPathComponent) == 1
            transaction?.rollback()
            try? writer.close()
            let context = "\(fault.name) #\(skip)"
            if didFire {
                fired += 1
                #expect(thrown is DeckError, "\(context): \(String(describing: thrown))")
            }
            // Whatever happened, the package verifies and holds either the old cards or, when the
            // save went through, the old ones plus the twenty new.
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid, "\(context): \(report.findings)")
            let now = try cards(url)
            #expect(now == before || (thrown == nil && now.count == before.count + 20), "\(context)")
            if thrown == nil {
                // Put the package back as it was for the next round.
                let cleaner = try PackageStore.open(at: url, mode: .readWrite)
                try cleaner.write { tx in
                    try tx.delete(
                        RecordQuery(
                            "Card",
                            where: .text(.property("front"), .beginsWith, .value(.string("new ")), .exact)
                        ))
                }
                try cleaner.close()
            }
        }
        #expect(fired > 0, "no \(fault.name) reached the store; the test proved nothing")
    }

    private func cards(_ url: URL) throws -> [String] {
        let document = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? document.close() }
        return try document.read { try $0.fetch(RecordQuery("Card", sort: [SortKey("front")])) }.compactMap {
            $0["front"]?.description
        }
    }
}

/// Regression (found by the migration fault sweep): a long transaction's commit that failed after
/// SQLite had rolled the transaction back by itself left the transaction looking open, and a
/// second commit reported success with nothing written.
@Suite(.timed) struct FailedCommitTests {
    @Test func aCommitRetriedAfterSQLiteRolledBackKeepsFailingAndLosesNothingSilently() throws {
        #expect(deck_fault_vfs_install() == SQLITE_OK)
        try withTestDirectory { dir in
            let url = dir.appendingPathComponent("tags.deck")
            let store = try PackageStore.create(
                at: url, contentType: flashCardsType, schema: flashCardsSchema())
            try store.write { try $0.insert("Tag", ["name": .string("a")]) }
            let transaction = try store.beginTransaction()
            try transaction.insert("Tag", ["name": .string("b")])
            // The first write of the log at COMMIT fails.
            #expect(deck_fault_vfs_arm(2, dir.lastPathComponent, 0, SQLITE_IOERR | (3 << 8)) == SQLITE_OK)
            #expect(throws: DeckError.self) { _ = try transaction.commit() }
            #expect(deck_fault_vfs_disarm(dir.lastPathComponent) > 0)
            // Not a success with nothing written: the retry fails too, and so does a change.
            #expect(throws: DeckError.self) { _ = try transaction.commit() }
            #expect(throws: DeckError.self) { try transaction.insert("Tag", ["name": .string("c")]) }
            transaction.rollback()
            #expect(try store.read { try $0.count(RecordQuery("Tag")) } == 1)
            // Made again, the changes commit.
            try store.write { try $0.insert("Tag", ["name": .string("b")]) }
            #expect(try store.read { try $0.count(RecordQuery("Tag")) } == 2)
            try store.close()
        }
    }
}
