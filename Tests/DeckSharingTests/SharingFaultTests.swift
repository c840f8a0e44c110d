import DeckKit
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// File-system failures injected into export and import, on the test's own thread (they run in
/// parallel).
@Suite("Export and import under file-system failures", .timed)
struct SharingFaultTests {
    /// The calls export makes through `FileSystem` (the snapshot's staging directory is its only
    /// directory).
    static let exportOperations: [FaultInjection.Operation] = [
        .open, .read, .write, .fsync, .rename, .mkdir, .unlink, .stat,
    ]
    /// The calls import makes through `FileSystem` (libarchive reads the archive's descriptor
    /// itself; a zip's central directory and local headers are read with `pread`).
    static let importOperations: [FaultInjection.Operation] = [
        .open, .read, .write, .fsync, .rename, .mkdir, .stat,
    ]

    /// A full disk or an I/O error is an I/O failure (`.io`, exit 74) that names a path in `directory`, never
    /// a corrupt document or an archive entry; a refused permission is `.cannotOpen` (or `.io` where the
    /// injected fault replaces a `stat`, which reports every errno as an I/O error).
    fileprivate func expectIOFailure(
        _ thrown: (any Error)?, errno: Int32, in directory: URL, _ label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let error = thrown as? DeckError else {
            Issue.record("\(label): \(String(describing: thrown))", sourceLocation: sourceLocation)
            return
        }
        let expected: Set<DeckError.Kind> = errno == EACCES ? [.cannotOpen, .io] : [.io]
        #expect(expected.contains(error.kind), "\(label): \(error)", sourceLocation: sourceLocation)
        #expect(
            error.description.contains(directory.path), "\(label): \(error)", sourceLocation: sourceLocation)
        #expect(
            !error.description.contains("cannot be written to the archive"), "\(label): \(error)",
            sourceLocation: sourceLocation)
    }

    /// A fresh directory, and a flash-cards package in it.
    fileprivate func sharedSample() throws -> (ScratchDirectory, URL) {
        let directory = try ScratchDirectory()
        let url = directory.appending("Sample.deck")
        let document = try PackageStore.create(
            at: url, contentType: SampleCards.contentType, schema: SampleCards.schema)
        try SampleCards.populate(document)
        try document.close()
        return (directory, url)
    }

    /// Names in `directory` that only an interrupted export or import would leave.
    fileprivate func leftovers(_ directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(".") }
    }

    @Test(arguments: exportOperations)
    func aFailedExportLeavesNoArchiveAndAnIntactDocument(operation: FaultInjection.Operation) throws {
        let (scratch, url) = try sharedSample()
        let directory = scratch.url
        let before = try Data(contentsOf: url.appendingPathComponent("store.sqlite"))
        var fired = 0
        for (attempt, errno) in [(0, ENOSPC), (1, EIO), (2, EACCES), (5, ENOSPC), (20, EIO)] {
            let archive = directory.appendingPathComponent("out-\(attempt).zip")
            let (didFire, _, thrown) = FaultInjection.inject(
                operation, pathContains: directory.lastPathComponent, skip: attempt, errno: errno
            ) { try DeckDocument.export(at: url, to: archive) }
            if didFire {
                fired += 1
                // A fault while removing the snapshot is retried; the export itself succeeded.
                if thrown != nil || operation != .unlink {
                    expectIOFailure(thrown, errno: errno, in: directory, "\(operation) #\(attempt)")
                }
                // Either no archive, or (a fault after the final rename) a complete, valid one.
                if FileManager.default.fileExists(atPath: archive.path) {
                    #expect(
                        try DeckDocument.verifyArchive(at: archive).isValid, "\(operation) #\(attempt)")
                }
            } else {
                #expect(thrown == nil)
                #expect(try DeckDocument.verifyArchive(at: archive).isValid)
            }
            let left = try leftovers(directory)
            #expect(left.isEmpty, "\(operation) #\(attempt): \(left)")
        }
        #expect(fired > 0, "no \(operation) call was made by export; the test proved nothing")
        #expect(try Data(contentsOf: url.appendingPathComponent("store.sqlite")) == before)
        #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
    }

    @Test(arguments: importOperations)
    func aFailedImportLeavesNothing(operation: FaultInjection.Operation) throws {
        let (scratch, url) = try sharedSample()
        let directory = scratch.url
        let archive = directory.appendingPathComponent("in.zip")
        try DeckDocument.export(at: url, to: archive)
        var fired = 0
        for (attempt, errno) in [(0, ENOSPC), (1, EIO), (2, EACCES), (4, ENOSPC), (9, EIO), (30, EACCES)] {
            let destination = directory.appendingPathComponent("Imported-\(attempt).deck")
            let (didFire, _, thrown) = FaultInjection.inject(
                operation, pathContains: directory.lastPathComponent, skip: attempt, errno: errno
            ) { _ = try DeckDocument.importArchive(at: archive, to: destination) }
            if didFire {
                fired += 1
                if thrown != nil || operation != .unlink {
                    expectIOFailure(thrown, errno: errno, in: directory, "\(operation) #\(attempt)")
                }
                // Either nothing, or (a fault after the final rename) a complete, valid package.
                if FileManager.default.fileExists(atPath: destination.path) {
                    #expect(try PackageVerifier.verify(at: destination).isValid)
                }
            } else {
                #expect(thrown == nil)
                #expect(try PackageVerifier.verify(at: destination).isValid)
            }
            let left = try leftovers(directory)
            #expect(left.isEmpty, "\(operation) #\(attempt): \(left)")
        }
        #expect(fired > 0, "no \(operation) call was made by import; the test proved nothing")
    }
}

// MARK: Export while another writer changes the document (spec 16.3)

extension SharingFaultTests {
    /// The sample's cards whose image blob no other card shares: (card id, digest).
    fileprivate func cardsWithOwnBlob(_ document: PackageStore) throws -> [(Int64, Digest)] {
        var owners: [Digest: [Int64]] = [:]
        for card in try document.read({ try $0.fetch(RecordQuery("Card")) }) {
            if case .blob(let reference)? = card["image"] {
                owners[reference.digest, default: []].append(card.id)
            }
        }
        return owners.compactMap { $0.value.count == 1 ? ($0.value[0], $0.key) : nil }.sorted { $0.0 < $1.0 }
    }

    /// The snapshots an export took.
    fileprivate final class Attempts {
        var made: [Int] = []
    }

    /// Exports `url`, running `body` after each snapshot (attempt 1, 2, 3) as a concurrent
    /// writer would, and recording the attempts in `attempts`. The hook is this thread's: an
    /// export another test runs meanwhile does not call it.
    fileprivate func exportObserved(
        _ url: URL, to archive: URL, attempts: Attempts = Attempts(), _ body: @escaping (Int) throws -> Void
    ) throws(DeckError) -> [Int] {
        let hook: (URL, Int) -> Void = { package, attempt in
            #expect(package.standardizedFileURL.path == url.standardizedFileURL.path)
            attempts.made.append(attempt)
            do { try body(attempt) } catch { Issue.record("the concurrent writer failed: \(error)") }
        }
        try FaultInjection.withExportSnapshotHook(hook) { () throws(DeckError) in
            try DeckDocument.export(at: url, to: archive)
        }
        return attempts.made
    }

    @Test func exportTakesANewSnapshotWhenAWriterRemovesABlobAfterTheFirst() throws {
        let (scratch, url) = try sharedSample()
        let directory = scratch.url
        let writer = try PackageStore.open(at: url)
        defer { try? writer.close() }
        let (card, digest) = try #require(try cardsWithOwnBlob(writer).first)
        let archive = directory.appendingPathComponent("out.zip")
        let attempts = try exportObserved(url, to: archive) { attempt in
            guard attempt == 1 else { return }
            // The concurrent writer's save: the card goes, and its blob file with it.
            try writer.write { tx in _ = try tx.delete("Card", id: card) }
        }
        #expect(attempts == [1, 2])
        #expect(try DeckDocument.verifyArchive(at: archive).isValid)
        let scan = try PackageArchive.scan(archive: archive)
        #expect(!scan.blobs.contains { $0.digest == digest })
        let imported = try DeckDocument.importArchive(
            at: archive, to: directory.appendingPathComponent("I.deck"))
        let copy = try PackageStore.open(at: imported, mode: .readOnly)
        #expect(try copy.read { try $0.count(RecordQuery("Card")) } == 9)
        try copy.close()
        #expect(try leftovers(directory).isEmpty)
    }

    @Test func exportRetriesWhenABlobVanishesWhileItIsBeingCopied() throws {
        let (scratch, url) = try sharedSample()
        let directory = scratch.url
        let reader = try PackageStore.open(at: url, mode: .readOnly)
        let (_, digest) = try #require(try cardsWithOwnBlob(reader).first)
        try reader.close()
        // The first open of that blob file fails as if it had just been removed.
        let archive = directory.appendingPathComponent("out.zip")
        var attempts: [Int] = []
        let (fired, _, thrown) = FaultInjection.inject(.open, pathContains: digest.hexDigest, errno: ENOENT) {
            attempts = try exportObserved(url, to: archive) { _ in }
        }
        #expect(fired)
        #expect(thrown == nil, "\(String(describing: thrown))")
        #expect(attempts == [1, 2])
        #expect(try PackageArchive.scan(archive: archive).blobs.contains { $0.digest == digest })
        #expect(try DeckDocument.verifyArchive(at: archive).isValid)
        #expect(try leftovers(directory).isEmpty)
    }

    @Test func exportGivesUpAfterThreeSnapshotsThatEachLostABlob() throws {
        let (scratch, url) = try sharedSample()
        let directory = scratch.url
        let writer = try PackageStore.open(at: url)
        defer { try? writer.close() }
        let victims = try cardsWithOwnBlob(writer)
        try #require(victims.count >= 3)
        let archive = directory.appendingPathComponent("out.zip")
        var thrown: DeckError?
        do {
            _ = try exportObserved(url, to: archive) { attempt in
                try writer.write { tx in _ = try tx.delete("Card", id: victims[attempt - 1].0) }
            }
        } catch {
            thrown = error
        }
        guard case .locked(let path, let pid)? = thrown else {
            Issue.record("expected a locked error, got \(String(describing: thrown))")
            return
        }
        #expect(path == url.standardizedFileURL.path)
        #expect(pid == getpid())
        #expect(thrown?.kind == .busy)
        #expect(!FileManager.default.fileExists(atPath: archive.path))
        #expect(try leftovers(directory).isEmpty)
    }

    @Test func exportReportsAReferencedBlobThatIsMissingAsCorruption() throws {
        let (scratch, url) = try sharedSample()
        let directory = scratch.url
        let reader = try PackageStore.open(at: url, mode: .readOnly)
        let (_, digest) = try #require(try cardsWithOwnBlob(reader).first)
        let file = BlobStore(packagePath: reader.url.path).path(for: digest)
        try reader.close()
        try FileManager.default.removeItem(atPath: file)
        let archive = directory.appendingPathComponent("out.zip")
        let attempts = Attempts()
        #expect {
            try exportObserved(url, to: archive, attempts: attempts) { _ in }
        } throws: { error in
            guard case DeckError.corrupt(_, let reason) = error else { return false }
            return reason.contains(digest.hexDigest) && (error as? DeckError)?.kind == .invalidData
        }
        // Damage, not a writer: no second snapshot.
        #expect(attempts.made == [1])
        #expect(!FileManager.default.fileExists(atPath: archive.path))
        #expect(try leftovers(directory).isEmpty)
    }
}
