import CSQLite
import DeckSQLite
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What export needs of a store: a consistent copy of its committed state, and a fresh look at
/// one blob (spec: section 16.3). Borrows a reader's connection for the length of a call.
struct StoreSnapshot {
    let connection: StoreConnection

    init(_ connection: StoreConnection) { self.connection = connection }

    private var database: Database { connection.database }
    private var blobs: BlobStore { connection.blobs }
    private func translate(_ error: any Error) -> DeckError { connection.translate(error) }

    /// Whether the committed store (read now, in a new transaction) still references `digest`
    /// and its blob file is still missing.
    func referencesMissingBlob(_ digest: Digest) throws(DeckError) -> Bool {
        let refs: Int64
        do {
            refs =
                try database.scalar("SELECT refs FROM deck_blob WHERE digest = ?", [.text(digest.hexDigest)])?
                .int64 ?? 0
        } catch {
            throw translate(error)
        }
        guard refs > 0 else { return false }
        return try FileSystem.status(blobs.path(for: digest)) == nil
    }

    /// Copies the committed store into a new file at `path` and returns the blobs it references.
    /// A failure to write the copy (a full disk) is an I/O error on `destination`, the archive
    /// the copy is for; one reading the store names the store.
    func snapshotStore(to path: String, for destination: String) throws(DeckError) -> Set<Digest> {
        try vacuum(into: path, for: destination)
        do {
            let copy = try Database(path: path, mode: .readWrite)
            defer { copy.close() }
            _ = try copy.pragma("journal_mode=DELETE")
            var digests: Set<Digest> = []
            try copy.forEachRow("SELECT digest FROM deck_blob WHERE refs > 0") { row in
                if let digest = Digest(hex: row.text(at: 0)) { digests.insert(digest) }
            }
            return digests
        } catch {
            throw translate(error)
        }
    }

    /// `VACUUM INTO path`, with SQLite's I/O failures turned into I/O errors on the file concerned.
    private func vacuum(into path: String, for destination: String) throws(DeckError) {
        let failure: SQLiteError
        do {
            try database.run("VACUUM INTO ?", [.text(path)])
            return
        } catch {
            failure = error
        }
        guard [SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN].contains(failure.primaryCode) else {
            throw translate(failure)
        }
        let system = sqlite3_system_errno(database.handle)
        let reading = failure.code == .ioErrorRead || failure.code == .ioErrorShortRead
        throw DeckError.io(
            path: reading ? database.path : destination,
            operation: reading ? "read" : "write (the store snapshot)",
            errno: system != 0 ? system : failure.primaryCode == SQLITE_FULL ? ENOSPC : EIO)
    }
}

extension PackageStore {
    /// Copies the committed store into a new file at `path` (with `VACUUM INTO` on a reader, so
    /// it works while a writer is busy) and returns the blobs that copy references. A failure to
    /// write the copy (a full disk) is an I/O error on `destination`, the archive it is for.
    package func snapshotStore(to path: String, for destination: String) throws(DeckError) -> Set<Digest> {
        do {
            return try withReaderConnection {
                try StoreSnapshot($0).snapshotStore(to: path, for: destination)
            }
        } catch {
            throw DeckError.wrap(error)
        }
    }

    /// Whether the committed store, read now in a new transaction, still references `digest`
    /// while its blob file is missing (damage, not a concurrent save).
    package func referencesMissingBlob(_ digest: Digest) throws(DeckError) -> Bool {
        do {
            return try withReaderConnection { try StoreSnapshot($0).referencesMissingBlob(digest) }
        } catch {
            throw DeckError.wrap(error)
        }
    }
}
