import DeckSQLite
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The blob checks: the references the cells hold, counted, against `deck_blob`
/// (`reference-malformed`, `blob-unregistered`, `refcount-mismatch`, `blob-unreferenced`), and
/// every referenced blob present with its size and contents (`blob-missing`, `blob-unreadable`,
/// `blob-size`, `blob-corrupt`), with what nothing references (`blob-orphan`, `stray-file`): the
/// files of a package directory, or the blobs an archive's scan already hashed.
enum BlobCheck {
    /// `deck_blob`'s rows: digest (as stored) → size and reference count.
    typealias Registered = [String: (size: Int64, refs: Int64)]

    /// Counts references, compares them with `deck_blob`, and checks every blob file.
    static func run(
        _ db: Database, mapping: SchemaMapping, path: String, options: PackageVerifier.Options,
        blobFiles: PackageVerifier.BlobFiles, report: inout VerificationReport
    ) throws {
        // The references as the cells hold them: deck_blob is checked against these, never trusted.
        let (counted, firstUser) = try ReferenceCounts.countAll(db, mapping: mapping)
        var known: Registered = [:]
        for row in try db.rows("SELECT digest, size, refs FROM deck_blob") {
            known[row[0].string ?? ""] = (row[1].int64 ?? 0, row[2].int64 ?? 0)
        }
        compareCounts(counted, firstUser: firstUser, known: known, report: &report)
        let referenced = referencedBlobs(counted, known: known)
        switch blobFiles {
        case .archived(let archived):
            checkArchived(archived, referenced: referenced, known: known, report: &report)
        case .directory:
            try checkDirectory(path, referenced: referenced, known: known, options: options, report: &report)
        }
    }

    /// Compares the references counted in the cells with `deck_blob`'s counts, both ways.
    static func compareCounts(
        _ counted: [String: Int64], firstUser: [String: String], known: Registered,
        report: inout VerificationReport
    ) {
        let repair = "'deck gc --repair' counts the references again"
        for (digest, count) in counted.sorted(by: { $0.key < $1.key }) {
            let user = firstUser[digest] ?? "?"
            guard Digest(hex: digest) != nil else {
                report.add(.corruption, "reference-malformed", user, "'\(digest)' is not a SHA-256 digest")
                continue
            }
            guard let entry = known[digest] else {
                report.add(
                    .corruption, "blob-unregistered", digest,
                    "referenced by \(user) but missing from deck_blob; 'deck gc --repair' registers its file "
                        + "if the file is intact")
                continue
            }
            if entry.refs != count {
                report.add(
                    .corruption, "refcount-mismatch", digest,
                    "deck_blob.refs is \(entry.refs) but \(count) cell(s) reference it; \(repair)")
            }
        }
        for (digest, entry) in known.sorted(by: { $0.key < $1.key }) where counted[digest] == nil {
            if entry.refs == 0 {
                report.add(
                    .untidy, "blob-unreferenced", digest,
                    "deck_blob.refs is 0 and nothing references it; 'deck gc' removes it")
            } else {
                report.add(
                    .corruption, "refcount-mismatch", digest,
                    "deck_blob.refs is \(entry.refs) but nothing references it; \(repair)")
            }
        }
    }

    /// The blobs that must be present: a cell names them, or `deck_blob` counts references to
    /// them; with the size `deck_blob` gives (nil when it has no row).
    static func referencedBlobs(_ counted: [String: Int64], known: Registered) -> [Digest: Int64?] {
        var referenced: [Digest: Int64?] = [:]
        for (digestText, entry) in known where entry.refs > 0 || counted[digestText] != nil {
            if let digest = Digest(hex: digestText) { referenced[digest] = entry.size }
        }
        for digestText in counted.keys where known[digestText] == nil {
            if let digest = Digest(hex: digestText) { referenced[digest] = .some(nil) }
        }
        return referenced
    }

    /// The blobs of an archive (digest → size, hashed by its scan) against those referenced.
    static func checkArchived(
        _ archived: [Digest: Int64], referenced: [Digest: Int64?], known: Registered,
        report: inout VerificationReport
    ) {
        for (digest, expectedSize) in referenced.sorted(by: { $0.key < $1.key }) {
            let digestText = digest.hexDigest
            if let size = archived[digest] {
                report.blobsChecked += 1
                report.bytesChecked += size
                if let expectedSize, size != expectedSize {
                    report.add(
                        .corruption, "blob-size", digestText,
                        "the archived blob has \(size) bytes, deck_blob says \(expectedSize)")
                }
            } else {
                report.add(
                    .corruption, "blob-missing", digestText,
                    "the archive holds no blobs/\(digestText.prefix(2))/\(digestText)")
            }
        }
        for digest in archived.keys.sorted()
        where known[digest.hexDigest] == nil && referenced[digest] == nil {
            report.add(
                .untidy, "blob-orphan", "blobs/\(digest.hexDigest.prefix(2))/\(digest.hexDigest)",
                "no record references it")
        }
    }

    /// The blob files of the package at `path` against those referenced: present, regular,
    /// of their size, and (unless `options` says not to) hashing to their names.
    static func checkDirectory(
        _ path: String, referenced: [Digest: Int64?], known: Registered, options: PackageVerifier.Options,
        report: inout VerificationReport
    ) throws {
        let blobs = BlobStore(packagePath: path)
        let (files, allStrays) = try blobs.inventory()
        // A referenced blob's path holding something else is reported below, not as a stray.
        let referencedPaths = Set(referenced.keys.map { blobs.path(for: $0) })
        let strays = allStrays.filter { !referencedPaths.contains($0) }
        for stray in strays {
            report.add(
                .untidy, "stray-file", stray,
                "not a blob file (wrong name or place); 'deck gc' leaves it alone")
        }
        var toHash: [(Digest, String, Int64?)] = []
        for (digest, expectedSize) in referenced.sorted(by: { $0.key < $1.key }) {
            guard let filePath = files[digest] else {
                let blobPath = blobs.path(for: digest)
                if let st = try FileSystem.status(blobPath) {
                    report.add(
                        .corruption, "blob-unreadable", digest.hexDigest,
                        "file \(blobPath) is \(FileSystem.kindName(st.st_mode)), not a regular file")
                } else {
                    report.add(.corruption, "blob-missing", digest.hexDigest, "file \(blobPath) is missing")
                }
                continue
            }
            toHash.append((digest, filePath, expectedSize))
        }
        for (digest, filePath) in files.sorted(by: { $0.key < $1.key })
        where known[digest.hexDigest] == nil && referenced[digest] == nil {
            report.add(
                .untidy, "blob-orphan", filePath, "no record references this file; 'deck gc' removes it")
        }
        // Sizes are cheap to check; contents need hashing.
        for (digest, filePath, size) in toHash {
            if let size, let st = try FileSystem.status(filePath), Int64(st.st_size) != size {
                report.add(
                    .corruption, "blob-size", digest.hexDigest,
                    "file \(filePath) has \(st.st_size) bytes, deck_blob says \(size)")
            }
        }
        guard options.hashBlobs else { return }
        try checkContents(toHash, blobs: blobs, options: options, report: &report)
    }

    /// Hashes the files of `toHash` (digest, path, expected size) and reports those whose contents
    /// do not hash to their names or cannot be read.
    static func checkContents(
        _ toHash: [(Digest, String, Int64?)], blobs: BlobStore, options: PackageVerifier.Options,
        report: inout VerificationReport
    ) throws {
        let total = toHash.reduce(Int64(0)) { $0 + ($1.2 ?? 0) }
        let results = hashAll(
            toHash.map { ($0.0, $0.1) }, threads: options.threads, total: total, progress: options.progress)
        // A cancelled verify has no verdict: it reports nothing rather than a partial one.
        try Cancellation.checkCurrent()
        for (digest, outcome) in results {
            switch outcome {
            case .success(let (actual, size)):
                report.blobsChecked += 1
                report.bytesChecked += size
                if actual != digest {
                    report.add(
                        .corruption, "blob-corrupt", digest.hexDigest,
                        "file \(blobs.path(for: digest)) hashes to \(actual.hexDigest)")
                }
            case .failure(.corrupt(let file, let reason)):
                // A FIFO or device in its place, refused without blocking.
                report.add(.corruption, "blob-unreadable", digest.hexDigest, "file \(file): \(reason)")
            case .failure(let error):
                report.add(.corruption, "blob-unreadable", digest.hexDigest, "\(error)")
            }
        }
    }

    /// Hashes files on `threads` threads, largest first. The threads inherit the caller's
    /// ``WorkerContext`` (a debug build's injected faults).
    static func hashAll(
        _ files: [(Digest, String)], threads: Int, total: Int64, progress: (@Sendable (Int64, Int64) -> Void)?
    ) -> [(Digest, Result<(Digest, Int64), DeckError>)] {
        let results = Locked<[(Digest, Result<(Digest, Int64), DeckError>)]>([])
        let next = Atomic<Int>(0)
        let done = Atomic<Int64>(0)
        let work = files.map { ($0.0, $0.1) }
        let context = WorkerContext.capture()
        // Worker threads do not inherit the caller's thread-local flag: they check this one.
        let cancellation = Cancellation.current
        DispatchQueue.concurrentPerform(iterations: min(threads, max(1, work.count))) { _ in
            context.run {
                while cancellation?.isCancelled != true {
                    let index = next.add(1, ordering: .relaxed).oldValue
                    guard index < work.count else { return }
                    let (digest, path) = work[index]
                    let outcome: Result<(Digest, Int64), DeckError>
                    do {
                        outcome = .success(try BlobStore.hashFile(at: path))
                    } catch {
                        outcome = .failure(DeckError.wrap(error))
                    }
                    if case .success(let (_, size)) = outcome {
                        let sum = done.add(size, ordering: .relaxed).newValue
                        progress?(sum, total)
                    }
                    results.withLock { $0.append((digest, outcome)) }
                }
            }
        }
        return results.withLock { $0 }.sorted { $0.0 < $1.0 }
    }
}
