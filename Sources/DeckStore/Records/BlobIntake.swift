import DeckSupport
import Foundation

/// Blob files written for a ``BulkLoader`` by another thread while the rows load, so that
/// hashing and copying large files overlaps the inserts (``BulkLoader/blobIntake()``).
///
/// One thread at a time writes (``write(contentsOf:)``); the loader's thread asks which files
/// were written (``isWritten(_:)``), and a row names one as `.blob(reference)` without its bytes
/// being read again: each was hashed as it was written. ``finish()`` makes the files durable and
/// must be called before the load ends (its thread's work done); files that no row names by then
/// are removed when the load ends.
package final class BlobIntake: Sendable {
    /// The writing side: the blob store (not thread-safe) and whether it is still open.
    private let writer: Locked<(store: BlobStore, isOpen: Bool)>
    /// Every file written, by digest, with its size.
    private let written = Locked<[Digest: Int64]>([:])

    init(packagePath: String) {
        writer = Locked((BlobStore(packagePath: packagePath), true))
    }

    /// Streams the file at `path` into a blob file of the package and returns its reference.
    package func write(contentsOf path: String) throws(DeckError) -> BlobReference {
        let reference = try writer.withLock { (state) throws(DeckError) -> BlobReference in
            guard state.isOpen else { throw DeckError.misuse("a blob intake was used after finish()") }
            return try state.store.write(contentsOf: path)
        }
        written.withLock { $0[reference.digest] = reference.size }
        return reference
    }

    /// Whether this intake wrote the file of `reference` (its digest, with that size).
    package func isWritten(_ reference: BlobReference) -> Bool {
        written.withLock { $0[reference.digest] == reference.size }
    }

    /// Makes every file written durable (before the load's commit) and closes the intake.
    package func finish() throws(DeckError) {
        try writer.withLock { (state) throws(DeckError) in
            guard state.isOpen else { return }
            state.isOpen = false
            try state.store.makeDurable()
        }
    }

    /// Whether ``finish()`` has run.
    var isFinished: Bool { writer.withLock { !$0.isOpen } }

    /// The digests of the files written.
    var digests: [Digest] { written.withLock { Array($0.keys) } }
}
