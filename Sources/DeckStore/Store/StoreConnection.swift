import CSQLite
import DeckSQLite
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One SQLite connection to a package's store, with what the record API needs around it: the
/// schema mapping, prepared statements, and — for the writer — the blob files written in the
/// open transaction and the changes it made. The record API itself is ``RecordReader`` and
/// ``RecordWriter``, which borrow a connection for one call.
///
/// Not thread-safe, never public: ``PackageStore`` owns its connections and lends one to a
/// ``StoreReader`` or ``StoreTransaction`` for the length of a scope.
final class StoreConnection {
    /// The package directory.
    let url: URL
    let manifest: Manifest
    let schema: StoreSchema
    let mapping: SchemaMapping
    let database: Database
    /// The store's format version: the current one for a writer; an older one when a reader
    /// reads a package no writer has upgraded yet (its rows then have no global id).
    let formatVersion: Int
    /// The instant the store's dates count from (spec 4.2 `date_epoch`): 1970 for a store older
    /// than version 4.
    let dateEpoch: DateEpoch
    /// Whether this is the writer's connection (the only one that may change the store).
    let isWriter: Bool
    /// The package's blob files; the writer's instance tracks the files its transaction wrote.
    let blobs: BlobStore
    /// The writer's prepared inserts, kept from one ``RecordWriter`` call to the next.
    let inserts = InsertStatements()
    /// What the open transaction changed, record by record.
    var changes = ChangeRecorder()
    /// How many ``change(atomic:_:)`` calls are under way (one inside another when an operation
    /// is built of others).
    var changeDepth = 0
    /// The error of a commit that failed after SQLite rolled the transaction back by itself: the
    /// transaction is gone, and until it is rolled back every change and commit throws it.
    var abandoned: DeckError?
    /// This write session's writer id (spec 20.1): 16 random bytes, made when the connection
    /// opens, never stored as the device's, so a copy of the package made by a file manager gets
    /// an id of its own at its next open.
    let writerID: [UInt8]
    /// The number `deck_writer` gives ``writerID``, once a committed transaction has recorded it.
    var writerNumber: Int64?

    var path: String { url.path }

    init(
        url: URL, manifest: Manifest, schema: StoreSchema, mapping: SchemaMapping, database: Database,
        formatVersion: Int, dateEpoch: DateEpoch, isWriter: Bool
    ) {
        self.formatVersion = formatVersion
        self.dateEpoch = dateEpoch
        self.url = url
        self.manifest = manifest
        self.schema = schema
        self.mapping = mapping
        self.database = database
        self.isWriter = isWriter
        self.writerID = isWriter ? VersionClock.newWriterID() : []
        self.blobs = BlobStore(packagePath: url.path)
        blobs.isRegistered = { [unowned database] digest in
            let row = try? database.scalar(
                "SELECT 1 FROM deck_blob WHERE digest = ?", [.text(digest.hexDigest)])
            return (row ?? nil) != nil
        }
    }

    // MARK: Transactions

    func requireWritable() throws(DeckError) {
        guard isWriter else { throw DeckError.readOnly(path: path) }
        if let abandoned { throw abandoned }
        guard database.isInTransaction else {
            throw DeckError.misuse("\(path): a change outside a transaction")
        }
    }

    /// Begins the writer's transaction (`BEGIN IMMEDIATE`) and advances the store's clock, so
    /// that everything the transaction changes carries a version later than any the store holds
    /// (spec 20.2).
    func begin() throws(DeckError) {
        do {
            try database.run("BEGIN IMMEDIATE")
        } catch {
            throw translate(error)
        }
        do {
            if formatVersion >= VersionDDL.firstFormatVersion {
                writerNumber = try VersionClock.advance(
                    database, writer: writerID, number: writerNumber, packagePath: path)
            }
        } catch {
            try? database.run("ROLLBACK")
            writerNumber = nil
            throw translate(error)
        }
        abandoned = nil
        changes = ChangeRecorder()
    }

    /// Runs one change inside the open write transaction: a failed change is undone whole and
    /// leaves earlier changes of the transaction in place. A change of several statements runs in
    /// a savepoint; one of a single statement (`atomic: false`) relies on SQLite undoing a failed
    /// statement by itself, which saves two statements per insert.
    func change<T>(atomic: Bool = true, _ body: () throws -> T) throws(DeckError) -> T {
        try requireWritable()
        let createdBefore = blobs.createdSinceSave
        let mark = changes.mark
        changeDepth += 1
        defer { changeDepth -= 1 }
        do {
            let value = atomic ? try database.savepoint(body) : try body()
            if changeDepth == 1 { changes.keep() }
            return value
        } catch {
            changes.drop(to: mark)
            // Files this failed change created and nothing now registers would be orphans.
            removeCreatedFiles(blobs.createdSinceSave.subtracting(createdBefore))
            throw translate(error)
        }
    }

    /// Commits the open transaction with the spec's save protocol (section 10.3).
    ///
    /// 1. Blob files written in the transaction are made durable.
    /// 2. Blobs whose `deck_blob.refs` fell to 0 are dropped from `deck_blob`, and the transaction
    ///    commits. The count is not trusted: when there are such blobs, the cells that name them
    ///    are counted again (one scan per external-storage column), and a blob a cell still
    ///    names keeps its row, with `refs` set to the true count, and its file.
    /// 3. The dropped blobs' files are removed; a crash here leaves only orphans that garbage
    ///    collection removes.
    ///
    /// When the commit fails after SQLite has rolled the transaction back by itself (an I/O error
    /// or a full disk at `COMMIT`), its changes are gone: the files only it wrote are removed, and
    /// this commit and every later change or commit throw the same error until the transaction is
    /// rolled back (never a retry that reports success with nothing written). A commit with no
    /// transaction open is a misuse error, never a quiet success: what it was to keep may have
    /// been written statement by statement, or not at all.
    func commit() throws(DeckError) {
        guard database.isInTransaction else {
            if let abandoned { throw abandoned }
            throw DeckError.misuse(
                "\(path): a commit with no transaction open (it was committed or rolled back)")
        }
        var unreferenced: [Digest] = []
        do {
            try blobs.makeDurable()
            var candidates: Set<Digest> = []
            try database.forEachRow("SELECT digest FROM deck_blob WHERE refs = 0") { row in
                if let digest = Digest(hex: row.text(at: 0)) { candidates.insert(digest) }
            }
            if !candidates.isEmpty {
                let counted = try ReferenceCounts.count(database, mapping: mapping, among: candidates)
                for (digest, count) in counted {
                    try database.run(
                        "UPDATE deck_blob SET refs = ? WHERE digest = ?",
                        [.integer(count), .text(digest.hexDigest)])
                }
                unreferenced = candidates.subtracting(counted.keys).sorted()
                try database.run("DELETE FROM deck_blob WHERE refs = 0")
            }
            // A schema with no entity has no sqlite_sequence, and no keys to record.
            if formatVersion >= VersionDDL.firstFormatVersion, !mapping.roots.isEmpty {
                try database.execute(VersionDDL.recordInserts)
            }
            try database.run(
                "INSERT INTO deck_meta(key, value) VALUES ('modified', ?) "
                    + "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [.text(Value.iso8601(Date()))])
            try database.execute("COMMIT")
        } catch {
            let failure = translate(error)
            if !database.isInTransaction {
                removeCreatedFiles(blobs.createdSinceSave)
                blobs.resetTracking()
                changes = ChangeRecorder()
                writerNumber = nil
                abandoned = failure
            }
            throw failure
        }
        blobs.resetTracking()
        for digest in unreferenced { try? blobs.remove(digest) }
    }

    /// Discards the open transaction, and the blob files only it referenced.
    func rollback() {
        abandoned = nil
        // The writer's number may have been recorded by this transaction, which SQLite may
        // have rolled back by itself already (a full disk, an I/O error).
        writerNumber = nil
        guard database.isInTransaction else { return }
        try? database.execute("ROLLBACK")
        removeCreatedFiles(blobs.createdSinceSave)
        blobs.resetTracking()
        changes = ChangeRecorder()
    }

    /// Removes the files among `created` (files this writer created in the transaction) that no
    /// `deck_blob` row registers and no cell names. A cell may name a digest that `deck_blob`
    /// lacks (a damaged store): such a file is referenced and stays. When the cells cannot be
    /// counted, every file stays (an orphan is harmless; a lost blob is not).
    func removeCreatedFiles(_ created: Set<Digest>) {
        let unregistered = created.filter { !blobs.isRegistered($0) }
        guard !unregistered.isEmpty,
            let referenced = try? ReferenceCounts.count(database, mapping: mapping, among: unregistered)
        else { return }
        for digest in unregistered where referenced[digest] == nil {
            try? blobs.remove(digest)
            blobs.forget(digest)
        }
    }

    /// Runs `body` in one read transaction, so that everything it reads comes from one committed
    /// state.
    func readTransaction<T>(_ body: () throws -> T) throws -> T {
        // Prepared once per connection: a model's first read of a relationship is a read of its
        // own, and parsing these two cost as much as the query.
        do {
            try database.run("BEGIN DEFERRED")
        } catch {
            throw translate(error)
        }
        defer { try? database.run("COMMIT") }
        return try body()
    }

    /// Closes the connection. The writer's closing first discards an open transaction,
    /// checkpoints the log back into `store.sqlite` and returns to rollback mode (spec: section
    /// 10.5); while readers are attached that fails harmlessly and the log stays.
    func close() {
        if isWriter {
            rollback()
            _ = try? database.pragma("wal_checkpoint(TRUNCATE)")
            // Stepped to its end: the header's change to rollback mode commits there, and may fail.
            if (try? database.rows("PRAGMA journal_mode=DELETE"))?.first?.first?.string?.lowercased()
                != "delete"
            {
                // Still in WAL mode: should the last reader leave before our connection closes,
                // SQLite would delete -wal and -shm on closing and leave a store in WAL mode
                // without them. Keep them (spec: section 10.5).
                database.keepLogFilesOnClose()
                // A switch that failed after the checkpoint may have deleted them already (setting
                // the header to rollback mode failed): empty ones are what the checkpointed log was.
                try? PackageDirectory.createLogFiles(path + "/" + PackageLayout.store)
            }
        }
        inserts.removeAll()
        database.close()
    }

    /// Maps SQLite's errors to the errors users understand, by their extended result codes and
    /// the messages of what Deck itself creates, compared whole, never by reading SQLite's text.
    /// (A unique constraint is told by the record layer, which knows the record it wrote:
    /// ``UniqueConflict``.)
    func translate(_ error: any Error) -> DeckError {
        if let error = error as? SQLiteError {
            // The writer's guard on deck_blob.refs (StoreDDL.connectionGuards): a reference count
            // below the cells that name the blob (the store is damaged), which the next decrement
            // took below zero.
            if error.code == .constraintTrigger, error.message == StoreDDL.referenceCountBelowZero {
                return .corrupt(
                    path: path,
                    reason: "deck_blob counts fewer references to a blob than the records hold, so this "
                        + "change cannot be counted; run 'deck gc --repair' to count them again")
            }
            if error.isBusy { return .locked(path: path, pid: WriterLock.holder(packagePath: path)) }
            if error.isCorruption { return .corrupt(path: path, reason: error.message) }
            return .sqlite(error)
        }
        return DeckError.wrap(error)
    }

    // MARK: Blobs

    /// Loads the bytes of an external value, checking its digest.
    func data(for reference: BlobReference) throws(DeckError) -> Data {
        try blobs.read(reference.digest)
    }

    /// Loads a data value whether inline or external; nil for null.
    func data(of value: Value) throws(DeckError) -> Data? {
        switch value {
        case .data(let d): d
        case .blob(let r): try data(for: r)
        case .null: nil
        default: throw DeckError.invalidQuery("a \(value.kindName) value holds no data")
        }
    }
}

@available(*, unavailable)
extension StoreConnection: Sendable {}
