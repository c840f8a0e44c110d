import CDeckSystem
import DeckKit
import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Staging files and directories (spec 16.9): locked while alive, removed by the signal
/// cleanup, and swept by the next run once stale.
@Suite(.timed) struct ArchiveStagingTests {
    static func sample(in sandbox: ScratchDirectory) throws -> URL {
        let url = sandbox.appending("Sample.deck")
        let document = try PackageStore.create(
            at: url, contentType: SampleCards.contentType, schema: SampleCards.schema)
        try SampleCards.populate(document)
        try document.close()
        return url
    }

    /// Holds an exclusive flock on `path`, as a live process writing it would.
    final class Holder {
        let fd: Int32
        init(_ path: String) throws {
            fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            try #require(fd >= 0)
            try #require(flock(fd, LOCK_EX | LOCK_NB) == 0)
        }
        deinit { close(fd) }
    }

    @Test func theNextExportRemovesStaleStagingItemsForItsNameOnly() throws {
        let sandbox = try ScratchDirectory()
        let original = try Self.sample(in: sandbox)
        let hex = "0123456789abcdef"
        let manager = FileManager.default
        // Left by killed exports and imports to out.zip: a file, and a directory with a store.
        try Data("half an archive".utf8).write(to: sandbox.appending(".out.zip.pack-\(hex)"))
        try manager.createDirectory(
            at: sandbox.appending(".out.zip.store-\(hex)"), withIntermediateDirectories: false)
        try Data("snapshot".utf8).write(to: sandbox.appending(".out.zip.store-\(hex)/store.sqlite"))
        try manager.createDirectory(
            at: sandbox.appending(".out.zip.unpack-\(hex)/blobs/ab"), withIntermediateDirectories: true)
        // A live one (locked), another name's, and names that only look similar.
        try manager.createDirectory(
            at: sandbox.appending(".out.zip.creating-\(hex)"), withIntermediateDirectories: false)
        var live: Holder? = try Holder(sandbox.appending(".out.zip.creating-\(hex)").path)
        let kept = [
            ".out.zip.creating-\(hex)", ".other.zip.pack-\(hex)", ".out.zip.pack-0123",
            ".out.zip.pack-\(hex)x",
            ".out.zip.pack-0123456789ABCDEF", ".out.zip.link-\(hex)",
        ]
        for name in kept.dropFirst() { try Data("keep".utf8).write(to: sandbox.appending(name)) }
        try manager.createSymbolicLink(
            atPath: sandbox.appending(".out.zip.unpack-fedcba9876543210").path,
            withDestinationPath: original.path)

        try DeckDocument.export(at: original, to: sandbox.appending("out.zip"))
        let hidden = try sandbox.names().filter { $0.hasPrefix(".") }
        #expect(Set(hidden) == Set(kept + [".out.zip.unpack-fedcba9876543210"]))
        #expect(try PackageVerifier.verify(at: original).isValid)
        #expect(live != nil)
        // Once its process is gone (the lock dropped), the next run removes it too.
        live = nil
        try DeckDocument.export(at: original, to: sandbox.appending("out.zip"), overwrite: true)
        #expect(!manager.fileExists(atPath: sandbox.appending(".out.zip.creating-\(hex)").path))
    }

    @Test func createImportAndUnpackSweepTheirNamesToo() throws {
        let sandbox = try ScratchDirectory()
        let original = try Self.sample(in: sandbox)
        try DeckDocument.export(at: original, to: sandbox.appending("s.zip"))
        let hex = "00000000000000aa"
        for name in ["New.deck", "Imported.deck", "Unpacked.deck"] {
            try FileManager.default.createDirectory(
                at: sandbox.appending(".\(name).creating-\(hex)/blobs"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(
                at: sandbox.appending(".\(name).unpack-\(hex)"), withIntermediateDirectories: false)
        }
        try PackageStore.create(
            at: sandbox.appending("New.deck"), contentType: "org.example.x", schema: SampleCards.schema
        )
        .close()
        try DeckDocument.importArchive(at: sandbox.appending("s.zip"), to: sandbox.appending("Imported.deck"))
        try DeckDocument.unpack(at: sandbox.appending("s.zip"), to: sandbox.appending("Unpacked.deck"))
        #expect(try sandbox.names().filter { $0.hasPrefix(".") }.isEmpty)
    }

    @Test func aStagingItemIsLockedUntilReleased() throws {
        let sandbox = try ScratchDirectory()
        let item = try Staging.make(
            beside: sandbox.appending("out.zip").path, kind: .pack, isDirectory: false)
        #expect(item.path.hasPrefix(sandbox.url.path + "/.out.zip.pack-"))
        guard case .taken = Staging.claim(item.path) else {
            Issue.record("a live staging item could be claimed")
            return
        }
        // Another run's sweep leaves it alone.
        Staging.removeStale(in: sandbox.url.path) { _ in true }
        #expect(FileManager.default.fileExists(atPath: item.path))
        item.discard()
        #expect(try sandbox.names().isEmpty)
    }

    @Test func theSignalCleanupRemovesRegisteredItemsOnly() throws {
        let sandbox = try ScratchDirectory()
        let directory = try Staging.make(
            beside: sandbox.appending("A.deck").path, kind: .unpack, isDirectory: true)
        try FileManager.default.createDirectory(
            at: directory.url.appendingPathComponent("blobs/ab"), withIntermediateDirectories: true)
        try Data("x".utf8).write(to: directory.url.appendingPathComponent("blobs/ab/file"))
        try Data("y".utf8).write(to: directory.url.appendingPathComponent("store.sqlite"))
        try FileManager.default.createSymbolicLink(
            atPath: directory.url.appendingPathComponent("link").path,
            withDestinationPath: sandbox.appending("outside").path)
        try Data("outside".utf8).write(to: sandbox.appending("outside"))
        let file = try Staging.make(beside: sandbox.appending("b.zip").path, kind: .pack, isDirectory: false)
        let released = try Staging.make(
            beside: sandbox.appending("C.deck").path, kind: .creating, isDirectory: true)
        try FileManager.default.moveItem(atPath: released.path, toPath: sandbox.appending("C.deck").path)
        released.release()

        // Only this test's directory: other tests stage files of their own meanwhile.
        #expect(deck_staging_cleanup_under(sandbox.url.path + "/") >= 2)
        #expect(try sandbox.names() == ["C.deck", "outside"])
        #expect(try Data(contentsOf: sandbox.appending("outside")) == Data("outside".utf8))
        // The items are gone; discarding them afterwards is harmless.
        directory.discard()
        file.discard()
        #expect(try sandbox.names() == ["C.deck", "outside"])
    }

    @Test func readingAnArchiveSweepsStaleScratchDirectories() throws {
        let sandbox = try ScratchDirectory()
        let original = try Self.sample(in: sandbox)
        try DeckDocument.export(at: original, to: sandbox.appending("s.zip"))
        let temporary = FileManager.default.temporaryDirectory
        let stale = temporary.appendingPathComponent("deck-archive-\(Staging.randomSuffix())")
        try FileManager.default.createDirectory(
            at: stale.appendingPathComponent("package.deck/blobs"), withIntermediateDirectories: true)
        let cards = try DeckDocument.withArchive(at: sandbox.appending("s.zip")) { document in
            // While the body runs, its own scratch directory exists and is locked.
            try document.read { try $0.count(RecordQuery("Card")) }
        }
        #expect(cards == 10)
        #expect(!FileManager.default.fileExists(atPath: stale.path))
    }
}
