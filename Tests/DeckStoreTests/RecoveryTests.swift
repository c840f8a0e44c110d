import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// A writer that stops without closing leaves its committed changes in the write-ahead log.
/// Readers must still open the package (found by the long crash run: a read-only connection
/// cannot replay a log by itself).
@Suite(.timed) struct RecoveryTests {
    @Test func aReaderOpensAStoreWhoseWriterLeftAWriteAheadLog() throws {
        let scratch = try ScratchDirectory()
        let directory = scratch.url
        let live = directory.appendingPathComponent("Live.deck")
        let writer = try PackageStore.create(
            at: live, contentType: SampleCards.contentType, schema: SampleCards.schema)
        try SampleCards.populate(writer)
        try writer.write { tx in try tx.insert("Tag", ["name": .string("only in the log")]) }
        // What a crash leaves: the files as they are now, with the log, and SQLite's
        // shared-memory index in a state that needs rebuilding (here: zeroed).
        let crashed = directory.appendingPathComponent("Crashed.deck")
        try FileManager.default.createDirectory(at: crashed, withIntermediateDirectories: false)
        for name in ["manifest.json", "store.sqlite", "store.sqlite-wal", "blobs"] {
            try FileManager.default.copyItem(
                at: live.appendingPathComponent(name), to: crashed.appendingPathComponent(name))
        }
        try Data(count: 32_768).write(to: crashed.appendingPathComponent("store.sqlite-shm"))
        try writer.close()
        #expect(
            FileManager.default.fileExists(atPath: crashed.appendingPathComponent("store.sqlite-wal").path))

        let reader = try PackageStore.open(at: crashed, mode: .readOnly)
        #expect(
            try reader.read {
                try $0.count(
                    RecordQuery(
                        "Tag", where: .compare(.property("name"), .equal, .value(.string("only in the log"))))
                )
            }
                == 1)
        try reader.close()
        let report = try PackageVerifier.verify(at: crashed)
        #expect(report.isValid, "\(report.findings)")
    }
}
