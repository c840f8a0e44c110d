import CSQLite
import DeckSQLite
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A package directory on disk: creating one (spec: section 10.7), and opening one with every
/// check of the spec's section 2.2 — layout, manifest, lock, store identity, stored schema and
/// derived schema objects. ``PackageStore`` builds on it.
enum PackageDirectory {
    /// A package that passed the open checks, with a connection to its store.
    struct Opened {
        let url: URL
        let manifest: Manifest
        let schema: StoreSchema
        let mapping: SchemaMapping
        let database: Database
        /// The writer lock, for a read-write open.
        let lock: WriterLock?
        /// The store's format version (`user_version`), by whose rules it is read: the current one
        /// after a read-write open, which upgrades older packages (spec: section 12.2).
        let formatVersion: Int
        /// `deck_meta.document_id` (nil for a version 1 store, or one whose value is not a UUID).
        let documentID: UUID?
        /// The instant the store's dates count from: `deck_meta.date_epoch` in version 4, 1970
        /// before.
        let dateEpoch: DateEpoch
    }

    /// Creates a new, empty package at `url` (spec: section 10.7) and returns its path.
    ///
    /// The package is built under a temporary name beside `url` and renamed into place, so
    /// `url` either does not exist or holds a complete package. Never replaces an existing path.
    static func create(at url: URL, contentType: String, schema: StoreSchema) throws(DeckError) -> String {
        let mapping = try SchemaMapping(schema)
        let (target, parent) = try checkNewPackage(at: url, contentType: contentType)
        // `.NAME.creating-<16 hex>`, shortened to fit a file name, locked while it is built and
        // removed on a signal; a stale one (no lock) is removed by the next create of NAME.
        let staging = try Staging.make(beside: target, kind: .creating, isDirectory: true)
        do {
            try writeEmptyPackage(
                in: staging.path, contentType: contentType, schema: schema, mapping: mapping, documentID: nil)
            try moveIntoPlace(staging, target: target, parent: parent)
        } catch {
            staging.discard()
            if case DeckError.alreadyExists = error { throw DeckError.alreadyExists(path: target) }
            throw DeckError.wrap(error)
        }
        return target
    }

    /// The full path of a package to be created at `url`, and its parent directory: refuses an
    /// existing path, a content type the spec does not allow, and a parent that is no directory.
    static func checkNewPackage(at url: URL, contentType: String) throws(DeckError) -> (
        target: String, parent: String
    ) {
        let target = url.standardizedFileURL.path
        guard try FileSystem.status(target) == nil else { throw DeckError.alreadyExists(path: target) }
        guard PackageLayout.isValidContentType(contentType) else {
            throw DeckError.invalidSchema(
                "content type '\(contentType)' must be 1 to 255 printable ASCII characters without spaces")
        }
        let written = (target as NSString).deletingLastPathComponent
        let parent = written.isEmpty ? "." : written
        let creating = "create \((target as NSString).lastPathComponent) in it"
        guard FileSystem.isDirectory(parent) else {
            // A file where the folder should be is not "no such file".
            if try FileSystem.status(parent) != nil {
                throw DeckError.io(path: written, operation: creating, errno: ENOTDIR)
            }
            throw DeckError.notFound(path: written)
        }
        // A folder this user may not write in: say so of the folder, not of the staging name
        // that would fail first.
        if access(parent, W_OK | X_OK) != 0 {
            let code = errno
            if code == EACCES || code == EROFS {
                throw DeckError.permissionDenied(
                    path: parent,
                    operation: creating + (code == EROFS ? ": the file system is read-only" : ""))
            }
        }
        return (target, parent)
    }

    /// Writes an empty package into the (staging) directory `temporary`: `blobs/`, the manifest
    /// and the store (spec 10.7 steps 2 to 5), with `documentID` or a new one, all made durable.
    static func writeEmptyPackage(
        in temporary: String, contentType: String, schema: StoreSchema, mapping: SchemaMapping,
        documentID: UUID?
    ) throws(DeckError) {
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
                try db.execute(SchemaBookkeeping.historyTable)
                for statement in StoreDDL.statements(for: mapping) { try db.execute(statement) }
                try db.execute(VersionDDL.tables)
                try db.execute(VersionDDL.initialRows)
                for statement in VersionDDL.statements(for: mapping) { try db.execute(statement) }
                let now = Value.iso8601(Date())
                let meta: [(String, SQLValue)] =
                    [
                        ("format_version", .integer(Int64(PackageLayout.formatVersion))),
                        ("content_type", .text(contentType)),
                        ("schema", .text(try encodeSchema(schema))),
                        ("schema_version", .text(schema.version)),
                        ("created", .text(now)),
                        ("modified", .text(now)),
                        (
                            "document_id",
                            .text(
                                documentID.map { $0.uuidString.lowercased() } ?? StoreMetadata.newDocumentID()
                            )
                        ),
                        ("date_epoch", .integer(DateEpoch.reference.rawValue)),
                    ] + SchemaBookkeeping.metadataRows(for: schema)
                for (key, value) in meta {
                    try db.run("INSERT INTO deck_meta(key, value) VALUES (?, ?)", [.text(key), value])
                }
            }
        } catch {
            throw DeckError.wrap(error)
        }
        try syncStore(packagePath: temporary)
    }

    /// Makes the store of the package at `packagePath` and the package directory durable.
    static func syncStore(packagePath: String) throws(DeckError) {
        let storePath = packagePath + "/" + PackageLayout.store
        let fd = try FileSystem.open(storePath, O_RDONLY)
        defer { FileSystem.close(fd) }
        try FileSystem.fsync(fd, path: storePath)
        try FileSystem.fsyncDirectory(packagePath)
    }

    /// Renames a finished staging package to `target` without replacing anything, releases the
    /// staging item and makes the rename durable (spec 10.7 step 6).
    static func moveIntoPlace(_ staging: StagingItem, target: String, parent: String) throws(DeckError) {
        try FileSystem.renameNoReplace(staging.path, target)
        staging.release()
        try FileSystem.fsyncDirectory(parent)
    }

    static func encodeSchema(_ schema: StoreSchema) throws(DeckError) -> String {
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
    /// Checks, in the order of the spec's section 2.2: the path is a directory; no fixed name is
    /// a symbolic link; the manifest; every other fixed name is a regular file or directory as
    /// the layout says; (for writing) the writer lock; the store's identity, versions and
    /// `deck_meta`; the stored schema; and that the store's tables, indexes, triggers and views
    /// are exactly those the schema derives, so that no planted trigger or view ever runs or
    /// lies. A read-write open then removes temporaries a crashed writer left in `tmp/`.
    ///
    /// A read-only open writes no file of the package: see ``openStore(_:mode:packagePath:)``.
    /// Returns the checked package and a connection to its store: the writer's connection, in
    /// WAL mode, for `.readWrite` (which holds the writer lock), a reader's otherwise.
    static func open(at url: URL, mode: PackageStore.Mode) throws(DeckError) -> Opened {
        let path = url.standardizedFileURL.path
        try checkDirectory(path)
        try PackageLayout.refuseLinks(packagePath: path)
        var manifest = try Manifest.read(packagePath: path)
        if mode == .readWrite && manifest.formatVersion > PackageLayout.formatVersion {
            throw DeckError.tooNew(
                path: path, version: manifest.formatVersion, supported: PackageLayout.formatVersion)
        }
        try PackageLayout.checkKinds(packagePath: path)
        var lock: WriterLock?
        if mode == .readWrite {
            guard access(path, W_OK) == 0 else {
                throw DeckError.permissionDenied(path: path, operation: "open for writing")
            }
            lock = try WriterLock.acquire(packagePath: path)
        }
        let storePath = path + "/" + PackageLayout.store
        guard try FileSystem.status(storePath) != nil else {
            throw DeckError.corrupt(path: path, reason: "\(PackageLayout.store) is missing")
        }
        let database: Database
        let schema: StoreSchema
        let mapping: SchemaMapping
        var formatVersion: Int
        var documentID: UUID?
        var dateEpoch = DateEpoch.unix
        do {
            database = try openStore(storePath, mode: mode, packagePath: path)
            do {
                (schema, formatVersion) = try checkStore(database, packagePath: path, manifest: manifest)
                mapping = try storedMapping(schema, packagePath: path)
                if let refusal = try StoreObjects.firstRefusal(
                    database, mapping: mapping, formatVersion: formatVersion)
                {
                    throw DeckError.corrupt(
                        path: path,
                        reason:
                            "the store's \(refusal.object.type) '\(refusal.object.name)' (\(refusal.code)): "
                            + refusal.message)
                }
                if mode == .readWrite {
                    try createLogFiles(storePath)
                    _ = try database.pragma("journal_mode=WAL")
                    removeTemporaries(packagePath: path)
                    // Before anything else changes: a writer writes the current version only.
                    manifest = try FormatUpgrade.upgrade(
                        database, packagePath: path, manifest: manifest, mapping: mapping,
                        storeVersion: formatVersion)
                    formatVersion = PackageLayout.formatVersion
                    try database.execute(StoreDDL.connectionGuards)
                }
                let meta = try StoreMetadata.read(database, packagePath: path)
                documentID = meta.documentID
                dateEpoch = try meta.dateEpoch(formatVersion: formatVersion, packagePath: path)
            } catch {
                if mode == .readWrite {
                    // The store may be in WAL mode already: closing the last connection would delete
                    // -wal and -shm and leave it so without them (spec: section 10.5). Keep them.
                    database.keepLogFilesOnClose()
                }
                database.close()
                throw error
            }
        } catch let error as DeckError {
            throw error
        } catch let error as SQLiteError {
            throw storeError(error, path: path, mode: mode)
        } catch {
            throw DeckError.wrap(error)
        }
        return Opened(
            url: URL(fileURLWithPath: path), manifest: manifest, schema: schema, mapping: mapping,
            database: database, lock: lock, formatVersion: formatVersion, documentID: documentID,
            dateEpoch: dateEpoch)
    }

    /// Refuses a path that is not a directory that can be read: missing, a symbolic link (to
    /// anything), a file, or without permission to list it.
    static func checkDirectory(_ path: String) throws(DeckError) {
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
    }

    /// Creates `store.sqlite-wal` and `-shm`, empty, where they are missing, before a writer
    /// switches the store to WAL mode: SQLite itself creates them only at the next transaction,
    /// and a store whose header says WAL while they are missing is one that no reader can read
    /// without creating files (spec: section 11.2). Empty files beside a store in rollback mode
    /// mean nothing to SQLite.
    static func createLogFiles(_ storePath: String) throws(DeckError) {
        let permissions = (try FileSystem.status(storePath)).map { $0.st_mode & 0o666 } ?? 0o644
        for path in [storePath + "-wal", storePath + "-shm"] {
            let fd = try FileSystem.openRegular(path, O_RDWR | O_CREAT, mode: permissions)
            FileSystem.close(fd)
        }
    }

    /// What an SQLite failure while opening and checking the store means for the user.
    static func storeError(_ error: SQLiteError, path: String, mode: PackageStore.Mode) -> DeckError {
        let storePath = path + "/" + PackageLayout.store
        if error.isCorruption {
            return DeckError.corrupt(
                path: path,
                reason: "\(PackageLayout.store) is not a readable SQLite database (\(error.message))")
        }
        if error.isBusy { return .locked(path: path, pid: WriterLock.holder(packagePath: path)) }
        if error.primaryCode == SQLITE_READONLY && mode == .readOnly {
            return DeckError.permissionDenied(
                path: storePath,
                operation:
                    "read the store: it needs recovery that only a writer can do; open the package for writing once"
            )
        }
        if error.primaryCode == SQLITE_CANTOPEN || error.primaryCode == SQLITE_READONLY
            || error.primaryCode == SQLITE_PERM || error.primaryCode == SQLITE_AUTH
        {
            return DeckError.permissionDenied(path: storePath, operation: "open store")
        }
        return DeckError.sqlite(error)
    }

    /// The mapping of a stored schema; an invalid one makes the package corrupt (spec: 5.8).
    static func storedMapping(_ schema: StoreSchema, packagePath path: String) throws(DeckError)
        -> SchemaMapping
    {
        do {
            return try SchemaMapping(schema)
        } catch .invalidSchema(let reason) {
            throw DeckError.corrupt(path: path, reason: "the stored schema is invalid: \(reason)")
        }
    }

    /// Opens the store of the package at `packagePath`.
    ///
    /// A reader never opens the store read-write and never creates, deletes or changes a file
    /// of the package, with the one exception SQLite's locking protocol makes (spec: section
    /// 11.2): while the store is in WAL mode, a reader's connection writes its read marks into
    /// the existing shared-memory index `store.sqlite-shm`, and rebuilds that index there after
    /// a writer died; this changes no data. SQLite would create `-wal` and `-shm` when the store
    /// uses a log (its header says WAL mode, or a non-empty `-wal` exists) and one of them is
    /// missing; writers never leave that state (they create both before switching to WAL, and
    /// keep them when the switch back fails), so such a store is refused, with the advice to
    /// open it for writing once. Where SQLite cannot use the index (it is not writable, or
    /// needs a rebuild it refuses), the reader opens the store again with `readonly_shm=1`:
    /// SQLite then reads the log through a private index in memory and writes nothing.
    static func openStore(_ storePath: String, mode: PackageStore.Mode, packagePath: String) throws
        -> Database
    {
        // Shorter than SQLite's 100-byte header, with no log holding its pages: a truncated store,
        // corrupt (spec 2.2, step 8), though SQLite would take an empty file for an empty database.
        if let status = try FileSystem.status(storePath), status.st_size < 100,
            (try FileSystem.status(storePath + "-wal")?.st_size ?? 0) == 0
        {
            throw DeckError.corrupt(
                path: packagePath,
                reason:
                    "\(PackageLayout.store) is \(status.st_size) bytes, shorter than a SQLite database's "
                    + "100-byte header: it was truncated; restore the document from a copy")
        }
        guard mode == .readOnly else { return try Database(path: storePath, mode: .readWrite) }
        if let missing = try missingLogFileAtRest(storePath, packagePath: packagePath) {
            throw DeckError.corrupt(
                path: packagePath,
                reason:
                    "the store uses a write-ahead log but \(missing) is missing, so a reader cannot read it "
                    + "without creating files; open the package for writing once (for example 'deck gc') "
                    + "to fold the log into the store")
        }
        let first = Result { () throws(SQLiteError) in try probedReader(storePath, uriParameters: []) }
        if case .failure(let error) = first, error.primaryCode == SQLITE_READONLY {
            return try probedReader(storePath, uriParameters: [("readonly_shm", "1")])
        }
        return try first.get()
    }

    /// ``missingLogFile(_:)`` once no writer is at work: a writer that switches the store back to
    /// rollback mode as it closes passes through that state (SQLite deletes the checkpointed log
    /// before it rewrites the header) while it holds the package's writer lock, so while the lock
    /// is held the reader waits, up to `timeout` seconds, and looks again. Only a store left so
    /// with no writer at work (one killed in that moment) is reported.
    package static func missingLogFileAtRest(_ storePath: String, packagePath: String, timeout: Double = 5)
        throws(DeckError) -> String?
    {
        let deadline = Date().addingTimeInterval(timeout)
        while let missing = try missingLogFile(storePath) {
            guard WriterLock.holder(packagePath: packagePath) != nil else {
                // The writer may have finished between the two looks.
                return try missingLogFile(storePath)
            }
            guard Date() < deadline else { return missing }
            usleep(5_000)
        }
        return nil
    }

    /// The name of the log file a reader of the store at `storePath` lacks, when the store uses a
    /// write-ahead log (its header says WAL mode, or a non-empty `-wal` exists) and `-wal` or
    /// `-shm` is missing: SQLite would create it, which a reader may not (spec: section 11.2). A
    /// writer killed while it switched the store back to rollback mode at close (SQLite deletes
    /// the log, checkpointed, before it rewrites the header) leaves this; the writer's next open
    /// makes the files again and reads the store. Nil otherwise.
    package static func missingLogFile(_ storePath: String) throws(DeckError) -> String? {
        let header: [UInt8]
        do {
            let fd = try FileSystem.openRegular(storePath, O_RDONLY)
            defer { FileSystem.close(fd) }
            var bytes = [UInt8](repeating: 0, count: 100)
            let n: Int
            do {
                n = try bytes.withUnsafeMutableBytes { raw throws(DeckError) in
                    try FileSystem.read(fd, into: raw.baseAddress!, count: 100, path: storePath)
                }
            } catch let error as DeckError {
                throw error
            } catch {
                throw DeckError.wrap(error)
            }
            header = Array(bytes[0..<n])
        }
        let wal = storePath + "-wal"
        let shm = storePath + "-shm"
        let walSize = try FileSystem.status(wal).map { Int64($0.st_size) }
        let hasShm = try FileSystem.status(shm) != nil
        let headerSaysWAL = header.count >= 20 && header[18] == 2 && header[19] == 2
        guard headerSaysWAL || (walSize ?? 0) > 0, walSize == nil || !hasShm else { return nil }
        return walSize == nil ? PackageLayout.store + "-wal" : PackageLayout.store + "-shm"
    }

    /// A read-only connection that has read the store's header (the first read is where SQLite
    /// reports what it cannot do).
    private static func probedReader(_ storePath: String, uriParameters: [(String, String)])
        throws(SQLiteError)
        -> Database
    {
        let database = try Database(path: storePath, mode: .readOnly, uriParameters: uriParameters)
        do {
            _ = try database.pragma("application_id")
        } catch {
            database.close()
            throw error
        }
        return database
    }

    /// Checks the store's identity, versions and `deck_meta` (spec: sections 2.2 and 4.2) and
    /// reads its schema and format version. Any problem throws ``DeckError``: `notAPackage` for a
    /// foreign `application_id`, `tooNew` for a store of a version this library does not read,
    /// `corrupt` otherwise.
    ///
    /// The store's version (`user_version`) may differ from the manifest's `formatVersion` while
    /// an upgrade runs or after one was interrupted (spec: section 12.2): both are then versions
    /// this library reads, and the store is read by its own version's rules.
    /// - Parameter verifying: the verifier reports a wrong `content_type` or `schema_version`
    ///   as findings of their own, so they are not checked here then.
    static func checkStore(
        _ db: Database, packagePath path: String, manifest: Manifest, verifying: Bool = false
    ) throws -> (schema: StoreSchema, formatVersion: Int) {
        let applicationID = try db.pragma("application_id")?.int64 ?? 0
        guard applicationID == Int64(PackageLayout.applicationID) else {
            throw DeckError.notAPackage(
                path: path,
                reason:
                    "\(PackageLayout.store) is not a Deck store (application_id \(String(applicationID, radix: 16)))"
            )
        }
        let userVersion = Int(try db.pragma("user_version")?.int64 ?? 0)
        // A store older than its manifest is an interrupted upgrade, one newer than the manifest
        // an upgrade that finished after the manifest was read (spec: section 2.2, step 10); a
        // store newer than this library is read by its newest rules when the manifest allows it.
        guard userVersion >= PackageLayout.oldestFormatVersion,
            userVersion <= max(manifest.formatVersion, PackageLayout.formatVersion)
        else {
            throw DeckError.corrupt(
                path: path,
                reason:
                    "store format version \(userVersion) does not match manifest \(manifest.formatVersion)")
        }
        let meta = try StoreMetadata.read(db, packagePath: path)
        if let problem = meta.formatVersionProblem(userVersion: userVersion) {
            throw DeckError.corrupt(path: path, reason: problem)
        }
        if !verifying, let problem = meta.contentTypeProblem(manifest: manifest) {
            throw DeckError.corrupt(path: path, reason: problem)
        }
        _ = try meta.dateEpoch(formatVersion: userVersion, packagePath: path)
        let schema = try meta.schema(packagePath: path)
        if !verifying, let problem = meta.schemaVersionProblem(schema) {
            throw DeckError.corrupt(path: path, reason: problem)
        }
        return (schema, userVersion)
    }

    /// A new reader connection to the store of a package that is already open (and checked).
    static func openReaderDatabase(packagePath: String) throws(DeckError) -> Database {
        do {
            let db = try openStore(
                packagePath + "/" + PackageLayout.store, mode: .readOnly, packagePath: packagePath)
            // A reader's page cache of 16 MiB (SQLite's default is 2 MiB): it keeps a document of
            // that size in memory between reads, and SQLite sorts in memory up to that size
            // instead of spilling runs to temporary files (a sorted 100k-row fetch: 23% less time
            // in SQLite). The cache fills only as pages are read.
            try db.execute("PRAGMA cache_size=-16384")
            return db
        } catch let error as DeckError {
            throw error
        } catch let error as SQLiteError {
            throw storeError(error, path: packagePath, mode: .readOnly)
        } catch {
            throw DeckError.wrap(error)
        }
    }

    /// Removes everything in `tmp/`: with the lock held, nothing there belongs to a live writer.
    static func removeTemporaries(packagePath: String) {
        let tmp = packagePath + "/" + PackageLayout.tmpDirectory
        guard FileSystem.isDirectory(tmp), let names = try? FileSystem.list(tmp) else { return }
        for name in names { try? FileSystem.removeTree(tmp + "/" + name) }
    }
}
