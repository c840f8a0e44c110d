import CSQLite
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One Deck package on disk: its manifest, SQLite store, blob files and writer lock, with the
/// generic, schema-driven record API (values by attribute name).
///
/// Changes made through a read-write package accumulate in one open transaction until
/// ``save()`` commits them following the spec's save protocol (blob files durable first, then
/// the commit, then unreferenced files removed), or ``rollback()`` discards them.
///
/// ```swift
/// let doc = try DocumentPackage.create(at: url, contentType: "org.example.notes", schema: schema)
/// let id = try doc.insert("Note", ["title": .string("Hello")])
/// try doc.save()
/// let notes = try doc.fetch(Query("Note", sort: [SortKey("title")]))
/// try doc.close()
/// ```
///
/// Not thread-safe: one package object belongs to one thread or task at a time. Other processes
/// may read concurrently; a second writer gets ``DeckError/locked(path:pid:)``.
public final class DocumentPackage {
    /// How to open a package.
    public enum Mode: Sendable {
        /// Take the writer lock; changes are possible.
        case readWrite
        /// No lock; reads see committed states only.
        case readOnly
    }

    /// The package directory.
    public let url: URL
    public let manifest: Manifest
    public let mode: Mode
    /// The stored schema.
    public let schema: Schema
    let mapping: SchemaMapping
    let database: Database
    /// The package's blob files.
    public let blobs: BlobStore
    private var lock: WriterLock?
    private var isClosed = false
    /// Prepared insert statements by entity, made on first use.
    var insertStatements: [String: Statement] = [:]
    /// The entity and statement of the latest insert.
    var lastInsert: (mapping: EntityMapping, statement: Statement)?

    var path: String { url.path }

    private init(
        url: URL, manifest: Manifest, mode: Mode, schema: Schema, database: Database, lock: WriterLock?
    )
        throws(DeckError)
    {
        self.url = url
        self.manifest = manifest
        self.mode = mode
        self.schema = schema
        self.mapping = try SchemaMapping(schema)
        self.database = database
        self.blobs = BlobStore(packagePath: url.path)
        self.lock = lock
        blobs.isRegistered = { [unowned database] digest in
            let row = try? database.scalar(
                "SELECT 1 FROM deck_blob WHERE digest = ?", [.text(digest.hexDigest)])
            return (row ?? nil) != nil
        }
    }

    deinit {
        if !isClosed { try? close() }
    }

    // MARK: Create

    /// Creates a new, empty package at `url` and opens it for writing.
    ///
    /// The package is built under a temporary name beside `url` and renamed into place, so
    /// `url` either does not exist or holds a complete package. Never replaces an existing path.
    public static func create(at url: URL, contentType: String, schema: Schema) throws(DeckError)
        -> DocumentPackage
    {
        let mapping = try SchemaMapping(schema)
        let target = url.standardizedFileURL.path
        guard try FileSystem.status(target) == nil else { throw DeckError.alreadyExists(path: target) }
        guard PackageLayout.isValidContentType(contentType) else {
            throw DeckError.invalidSchema(
                "content type '\(contentType)' must be 1 to 255 printable ASCII characters without spaces")
        }
        let parent = (target as NSString).deletingLastPathComponent
        guard FileSystem.isDirectory(parent.isEmpty ? "." : parent) else {
            throw DeckError.notFound(path: parent)
        }
        // `.NAME.creating-<16 hex>`, shortened to fit a file name, locked while it is built and
        // removed on a signal; a stale one (no lock) is removed by the next create of NAME.
        let staging = try Staging.make(beside: target, kind: .creating, isDirectory: true)
        let temporary = staging.path
        do {
            try FileSystem.mkdir(temporary + "/" + PackageLayout.blobsDirectory)
            try writeFileAtomically(
                Manifest(contentType: contentType).encoded(), to: temporary + "/" + PackageLayout.manifest)
            let storePath = temporary + "/" + PackageLayout.store
            do {
                let db = try Database(path: storePath, mode: .create)
                defer { db.close() }
                try db.execute("PRAGMA journal_mode=DELETE")
                try db.execute("PRAGMA application_id=\(PackageLayout.applicationID)")
                try db.execute("PRAGMA user_version=\(PackageLayout.formatVersion)")
                try db.transaction {
                    try db.execute(StoreDDL.metadata)
                    for statement in StoreDDL.statements(for: mapping) { try db.execute(statement) }
                    let now = Value.iso8601(Date())
                    let meta: [(String, SQLValue)] = [
                        ("format_version", .integer(Int64(PackageLayout.formatVersion))),
                        ("content_type", .text(contentType)),
                        ("schema", .text(try encodeSchema(schema))),
                        ("schema_version", .text(schema.version)),
                        ("created", .text(now)),
                        ("modified", .text(now)),
                    ]
                    for (key, value) in meta {
                        try db.run("INSERT INTO deck_meta(key, value) VALUES (?, ?)", [.text(key), value])
                    }
                }
            } catch {
                throw DeckError.wrap(error)
            }
            let fd = try FileSystem.open(storePath, O_RDONLY)
            defer { FileSystem.close(fd) }
            try FileSystem.fsync(fd, path: storePath)
            try FileSystem.fsyncDirectory(temporary)
            try FileSystem.renameNoReplace(temporary, target)
            staging.release()
            try FileSystem.fsyncDirectory(parent.isEmpty ? "." : parent)
        } catch {
            staging.discard()
            if case DeckError.alreadyExists = error { throw DeckError.alreadyExists(path: target) }
            throw DeckError.wrap(error)
        }
        return try open(at: URL(fileURLWithPath: target), mode: .readWrite)
    }

    static func encodeSchema(_ schema: Schema) throws(DeckError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return String(decoding: try encoder.encode(schema), as: UTF8.self)
        } catch {
            throw DeckError.invalidSchema("cannot encode schema: \(error)")
        }
    }

    /// Writes `data` to `path` through a temporary file, fsynced, then renamed into place.
    static func writeFileAtomically(_ data: Data, to path: String) throws(DeckError) {
        let temporary = path + ".tmp-" + FileSystem.randomSuffix()
        let fd = try FileSystem.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o644)
        do {
            defer { FileSystem.close(fd) }
            try data.withUnsafeBytes { buffer in try FileSystem.write(fd, buffer, path: temporary) }
            try FileSystem.fsync(fd, path: temporary)
        } catch {
            try? FileSystem.unlink(temporary)
            throw DeckError.wrap(error)
        }
        do {
            try FileSystem.rename(temporary, path)
        } catch {
            try? FileSystem.unlink(temporary)
            throw error
        }
    }

    // MARK: Open

    /// Opens the package at `url`.
    ///
    /// Checks, in order: the path is a directory, the manifest, the store's `application_id`
    /// and format version, and the stored schema. A read-write open takes the writer lock and
    /// removes temporaries a crashed writer left in `tmp/`.
    public static func open(at url: URL, mode: Mode = .readWrite) throws(DeckError) -> DocumentPackage {
        let path = url.standardizedFileURL.path
        guard let st = try FileSystem.status(path) else { throw DeckError.notFound(path: path) }
        if (st.st_mode & S_IFMT) == S_IFLNK {
            throw DeckError.notAPackage(path: path, reason: "it is a symbolic link; open its target instead")
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            throw DeckError.notAPackage(path: path, reason: "it is a file, not a package directory")
        }
        guard access(path, R_OK | X_OK) == 0 else {
            throw DeckError.permissionDenied(path: path, operation: "open")
        }
        try PackageLayout.refuseLinks(packagePath: path)
        let manifest = try Manifest.read(packagePath: path)
        if mode == .readWrite && manifest.formatVersion > PackageLayout.formatVersion {
            throw DeckError.tooNew(
                path: path, version: manifest.formatVersion, supported: PackageLayout.formatVersion)
        }
        var lock: WriterLock?
        if mode == .readWrite {
            guard access(path, W_OK) == 0 else {
                throw DeckError.permissionDenied(path: path, operation: "open for writing")
            }
            lock = try WriterLock.acquire(packagePath: path)
        }
        let storePath = path + "/" + PackageLayout.store
        guard let storeStatus = try FileSystem.status(storePath), (storeStatus.st_mode & S_IFMT) == S_IFREG
        else {
            throw DeckError.corrupt(path: path, reason: "\(PackageLayout.store) is missing")
        }
        let database: Database
        let schema: Schema
        do {
            database = try openStore(storePath, mode: mode)
            schema = try checkStore(database, packagePath: path, manifest: manifest)
            if mode == .readWrite {
                _ = try database.pragma("journal_mode=WAL")
            }
        } catch let error as DeckError {
            throw error
        } catch let error as SQLiteError {
            if error.isCorruption {
                throw DeckError.corrupt(
                    path: path,
                    reason: "\(PackageLayout.store) is not a readable SQLite database (\(error.message))")
            }
            if error.primaryCode == SQLITE_CANTOPEN || error.primaryCode == SQLITE_READONLY {
                throw DeckError.permissionDenied(path: storePath, operation: "open store")
            }
            throw DeckError.sqlite(error)
        } catch {
            throw DeckError.wrap(error)
        }
        let package = try DocumentPackage(
            url: URL(fileURLWithPath: path), manifest: manifest, mode: mode, schema: schema,
            database: database, lock: lock)
        if mode == .readWrite { package.removeTemporaries() }
        return package
    }

    /// Opens the store. A read-only connection cannot replay the write-ahead log that a writer
    /// killed mid-work leaves behind (SQLite's `SQLITE_READONLY_RECOVERY`); a short-lived
    /// read-write connection replays it first, which changes nothing committed.
    static func openStore(_ storePath: String, mode: Mode) throws -> Database {
        guard mode == .readOnly else { return try Database(path: storePath, mode: .readWrite) }
        let database = try Database(path: storePath, mode: .readOnly)
        do {
            _ = try database.pragma("application_id")
            return database
        } catch let error where error.primaryCode == SQLITE_READONLY {
            database.close()
            do {
                let recovery = try Database(path: storePath, mode: .readWrite)
                _ = try recovery.pragma("application_id")
                recovery.close()
            } catch {
                throw DeckError.permissionDenied(
                    path: storePath,
                    operation: "replay the write-ahead log a stopped writer left (it needs write access once)"
                )
            }
            return try Database(path: storePath, mode: .readOnly)
        }
    }

    /// Checks the store's identity and version and reads its schema.
    /// - Parameter checkContentType: the verifier turns it off to report a mismatch as its own finding.
    static func checkStore(
        _ db: Database, packagePath path: String, manifest: Manifest, checkContentType: Bool = true
    ) throws -> Schema {
        let applicationID = try db.pragma("application_id")?.int64 ?? 0
        guard applicationID == Int64(PackageLayout.applicationID) else {
            throw DeckError.notAPackage(
                path: path,
                reason:
                    "\(PackageLayout.store) is not a Deck store (application_id \(String(applicationID, radix: 16)))"
            )
        }
        let userVersion = Int(try db.pragma("user_version")?.int64 ?? 0)
        guard userVersion == manifest.formatVersion else {
            throw DeckError.corrupt(
                path: path,
                reason:
                    "store format version \(userVersion) does not match manifest \(manifest.formatVersion)")
        }
        let storedType = try db.scalar("SELECT value FROM deck_meta WHERE key = 'content_type'")?.string
        guard storedType == manifest.contentType || !checkContentType else {
            throw DeckError.corrupt(
                path: path,
                reason: "the store's content type '\(storedType ?? "none")' differs from the manifest's "
                    + "'\(manifest.contentType)'")
        }
        guard let schemaText = try db.scalar("SELECT value FROM deck_meta WHERE key = 'schema'")?.string
        else {
            throw DeckError.corrupt(path: path, reason: "the store holds no schema (deck_meta.schema)")
        }
        do {
            return try JSONDecoder().decode(Schema.self, from: Data(schemaText.utf8))
        } catch {
            throw DeckError.corrupt(
                path: path, reason: "the stored schema is unreadable (\(describe(error)))")
        }
    }

    /// Removes everything in `tmp/`: with the lock held, nothing there belongs to a live writer.
    private func removeTemporaries() {
        let tmp = blobs.tmpPath
        guard FileSystem.isDirectory(tmp), let names = try? FileSystem.list(tmp) else { return }
        for name in names { try? FileSystem.removeTree(tmp + "/" + name) }
    }

    // MARK: Transactions

    /// True when there are changes that ``save()`` would commit.
    public var hasChanges: Bool { database.isInTransaction }

    func requireWritable() throws(DeckError) {
        guard !isClosed else { throw DeckError.invalidQuery("\(path): the package is closed") }
        guard mode == .readWrite else { throw DeckError.readOnly(path: path) }
    }

    /// Runs one change inside the open write transaction: a failed change is undone whole and
    /// leaves earlier unsaved changes in place. A change of several statements runs in a
    /// savepoint; one of a single statement (`atomic: false`) relies on SQLite undoing a failed
    /// statement by itself, which saves two statements per insert.
    func change<T>(atomic: Bool = true, _ body: () throws -> T) throws(DeckError) -> T {
        try requireWritable()
        let createdBefore = blobs.createdSinceSave
        let beginsTransaction = !database.isInTransaction
        do {
            if beginsTransaction { try database.run("BEGIN IMMEDIATE") }
            return atomic ? try database.savepoint(body) : try body()
        } catch {
            // The first change failed: nothing was pending, so nothing is now.
            if beginsTransaction && database.isInTransaction { try? database.run("ROLLBACK") }
            // Files this failed change created and nothing now registers would be orphans.
            for digest in blobs.createdSinceSave.subtracting(createdBefore) where !blobs.isRegistered(digest)
            {
                try? blobs.remove(digest)
                blobs.forget(digest)
            }
            throw translate(error)
        }
    }

    /// Runs `body` on one consistent snapshot: every fetch and count inside sees the same
    /// committed state, even while another process commits. (A read-write package already sees
    /// its own state, unsaved changes included; `body` simply runs.)
    ///
    /// ```swift
    /// let (cards, decks) = try document.withSnapshot {
    ///     (try document.count(Query("Card")), try document.count(Query("Deck")))
    /// }
    /// ```
    public func withSnapshot<T>(_ body: () throws -> T) throws -> T {
        guard mode == .readOnly, !database.isInTransaction else { return try body() }
        do {
            try database.execute("BEGIN DEFERRED")
        } catch {
            throw translate(error)
        }
        defer { try? database.execute("COMMIT") }
        return try body()
    }

    /// Commits the unsaved changes (spec: "Save protocol").
    ///
    /// 1. Blob files written since the last save are made durable.
    /// 2. Blobs no longer referenced are dropped from `deck_blob`, and the transaction commits.
    /// 3. Their files are removed; a crash here leaves only orphans that ``collectGarbage(dryRun:)``
    ///    removes.
    public func save() throws(DeckError) {
        try requireWritable()
        guard database.isInTransaction else { return }
        var unreferenced: [Digest] = []
        do {
            try blobs.makeDurable()
            try database.forEachRow("SELECT digest FROM deck_blob WHERE refs = 0") { row in
                if let digest = Digest(hex: row.text(at: 0)) { unreferenced.append(digest) }
            }
            try database.run("DELETE FROM deck_blob WHERE refs = 0")
            try database.run(
                "UPDATE deck_meta SET value = ? WHERE key = 'modified'", [.text(Value.iso8601(Date()))])
            try database.execute("COMMIT")
        } catch {
            throw translate(error)
        }
        blobs.resetTracking()
        for digest in unreferenced { try? blobs.remove(digest) }
    }

    /// Discards the unsaved changes, and the blob files only they referenced.
    public func rollback() {
        guard database.isInTransaction else { return }
        try? database.execute("ROLLBACK")
        for digest in blobs.createdSinceSave {
            if !blobs.isRegistered(digest) { try? blobs.remove(digest) }
        }
        blobs.resetTracking()
    }

    /// Closes the package: discards unsaved changes, checkpoints the store back into a single
    /// file (no `-wal` or `-shm` remain) and releases the writer lock.
    public func close() throws(DeckError) {
        guard !isClosed else { return }
        isClosed = true
        if mode == .readWrite {
            rollback()
            // Both fail harmlessly (SQLITE_BUSY) while readers are attached; the WAL stays then.
            _ = try? database.pragma("wal_checkpoint(TRUNCATE)")
            _ = try? database.pragma("journal_mode=DELETE")
        }
        database.close()
        lock?.release()
        lock = nil
    }

    /// Maps SQLite constraint errors to the record-level errors users understand.
    func translate(_ error: any Error) -> DeckError {
        if let error = error as? SQLiteError {
            if error.code == SQLiteError.constraintUnique || error.code == SQLiteError.constraintPrimaryKey {
                // "UNIQUE constraint failed: Card.front, Card.back"
                let detail = error.message.components(separatedBy: ": ").last ?? ""
                let columns = detail.components(separatedBy: ", ").map {
                    $0.components(separatedBy: ".").last ?? $0
                }
                let table = detail.components(separatedBy: ".").first ?? "?"
                return .uniqueViolation(entity: table, properties: columns)
            }
            if error.isBusy { return .locked(path: path, pid: WriterLock.holder(packagePath: path)) }
            if error.isCorruption { return .corrupt(path: path, reason: error.message) }
            return .sqlite(error)
        }
        return DeckError.wrap(error)
    }

    // MARK: Blobs

    /// Loads the bytes of an external value, checking its digest.
    public func data(for reference: BlobReference) throws(DeckError) -> Data {
        try blobs.read(reference.digest)
    }

    /// Loads a data value whether inline or external; nil for null.
    public func data(of value: Value) throws(DeckError) -> Data? {
        switch value {
        case .data(let d): d
        case .blob(let r): try data(for: r)
        case .null: nil
        default: throw DeckError.invalidQuery("a \(value.kindName) value holds no data")
        }
    }
}

@available(*, unavailable)
extension DocumentPackage: Sendable {}
