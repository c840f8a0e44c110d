import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One problem ``PackageVerifier`` found.
public struct Finding: Sendable, Hashable, CustomStringConvertible {
    /// How bad a finding is.
    public enum Severity: String, Sendable, Hashable, Comparable {
        /// Data is damaged or unreadable: the package is invalid.
        case corruption
        /// Harmless leftovers (orphan files, temporaries): `deck gc` tidies them.
        case untidy

        public static func < (a: Severity, b: Severity) -> Bool { a == .corruption && b == .untidy }
    }

    public let severity: Severity
    /// A stable identifier of the kind of finding, e.g. `blob-missing` (listed in the spec).
    public let code: String
    /// What the finding is about: a path, `Entity #id`, a table, or a digest.
    public let object: String
    public let message: String

    public var description: String { "\(severity.rawValue): \(object): \(message)" }
}

/// The outcome of verifying a package.
public struct VerificationReport: Sendable {
    public let path: String
    public var findings: [Finding] = []
    /// Blob files whose bytes were hashed.
    public var blobsChecked = 0
    /// Bytes hashed.
    public var bytesChecked: Int64 = 0
    /// Records counted across all tables.
    public var records = 0

    /// True when nothing is corrupt (untidy findings are allowed).
    public var isValid: Bool { !findings.contains { $0.severity == .corruption } }
}

/// Checks a package against the spec without changing it (spec: "Verification").
///
/// ```swift
/// let report = try PackageVerifier.verify(at: url)
/// for finding in report.findings { print(finding) }
/// ```
///
/// Throws only when the path cannot be examined at all (missing, not a package, no
/// permission, too new); everything wrong inside a package is a ``Finding``.
public enum PackageVerifier {
    /// Options for a verification.
    public struct Options: Sendable {
        /// Skip hashing blob files and use SQLite's `quick_check`.
        public var quick: Bool
        /// Hash every blob file (true unless `quick`). An importer that has just checked every
        /// digest while unpacking turns it off and keeps the full `integrity_check`.
        public var hashBlobs: Bool
        /// Threads that hash blob files (default: the number of cores).
        public var threads: Int
        /// Called with (bytes done, bytes total) while hashing, from any thread.
        public var progress: (@Sendable (Int64, Int64) -> Void)?

        public init(
            quick: Bool = false, hashBlobs: Bool? = nil, threads: Int? = nil,
            progress: (@Sendable (Int64, Int64) -> Void)? = nil
        ) {
            self.quick = quick
            self.hashBlobs = hashBlobs ?? !quick
            self.threads = max(1, threads ?? ProcessInfo.processInfo.activeProcessorCount)
            self.progress = progress
        }
    }

    public static func verify(at url: URL, options: Options = Options()) throws(DeckError)
        -> VerificationReport
    {
        let path = url.standardizedFileURL.path
        guard let st = try FileSystem.status(path) else { throw DeckError.notFound(path: path) }
        if (st.st_mode & S_IFMT) == S_IFLNK {
            throw DeckError.notAPackage(
                path: path, reason: "it is a symbolic link; verify its target instead")
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            throw DeckError.notAPackage(path: path, reason: "it is a file, not a package directory")
        }
        guard access(path, R_OK | X_OK) == 0 else {
            throw DeckError.permissionDenied(path: path, operation: "open")
        }
        var report = VerificationReport(path: path)
        func add(_ severity: Finding.Severity, _ code: String, _ object: String, _ message: String) {
            report.findings.append(Finding(severity: severity, code: code, object: object, message: message))
        }
        try PackageLayout.refuseLinks(packagePath: path)
        let manifest = try Manifest.read(packagePath: path)
        let storePath = path + "/" + PackageLayout.store
        guard let storeStatus = try FileSystem.status(storePath), (storeStatus.st_mode & S_IFMT) == S_IFREG
        else {
            add(.corruption, "store-missing", storePath, "the store is missing")
            return report
        }
        let database: Database
        let schema: Schema
        do {
            database = try DocumentPackage.openStore(storePath, mode: .readOnly)
            schema = try DocumentPackage.checkStore(
                database, packagePath: path, manifest: manifest, checkContentType: false)
        } catch let error as DeckError {
            if case .notAPackage(_, let reason) = error {
                add(.corruption, "store-identity", storePath, reason)
            } else if case .corrupt(_, let reason) = error {
                add(.corruption, "store-metadata", storePath, reason)
            } else {
                throw error
            }
            return report
        } catch {
            add(.corruption, "store-unreadable", storePath, "not a readable SQLite database (\(error))")
            return report
        }
        defer { database.close() }
        do {
            try checkStore(
                database, schema: schema, manifest: manifest, path: path, options: options, report: &report)
        } catch {
            add(.corruption, "store-unreadable", storePath, "\(error)")
        }
        checkLeftovers(path: path, report: &report)
        report.findings.sort { ($0.severity, $0.code, $0.object) < ($1.severity, $1.code, $1.object) }
        return report
    }

    /// Verifies a package archive by streaming it: every entry is checked as unpacking would
    /// check it (paths, links, sizes, each blob's digest), the store is copied to a private
    /// staging directory for SQLite's checks and removed afterwards. Nothing else is written.
    ///
    /// The archive is valid exactly when `deck import` accepts it: both run the same pass over
    /// the archive and then ``verifyArchived(_:storePath:archivePath:options:)``.
    public static func verifyArchive(at url: URL, options: Options = Options()) throws(DeckError)
        -> VerificationReport
    {
        try DocumentPackage.requireArchive(url)
        let path = url.standardizedFileURL.path
        var report = VerificationReport(path: path)
        let scratch = try Staging.makeScratchDirectory(purpose: "verify")
        defer { scratch.discard() }
        let store = scratch.path + "/" + PackageLayout.store
        let scan: ArchiveScanReport
        do {
            scan = try PackageArchive.scan(archive: url, storeTo: URL(fileURLWithPath: store))
        } catch let error as ArchiveError {
            switch error {
            case .fileSystem, .insufficientSpace: throw DeckError(archiveError: error)
            default: break
            }
            if case .unreadable(_, let message) = error, message.contains("Unrecognized archive format"),
                !looksLikeArchive(path)
            {
                throw DeckError.notAPackage(
                    path: path, reason: "it is neither a package directory nor a package archive")
            }
            report.findings.append(
                Finding(
                    severity: .corruption, code: "archive-refused", object: path, message: error.description))
            return report
        } catch {
            throw DeckError(archiveError: error)
        }
        return try verifyArchived(scan, storePath: store, archivePath: path, options: options)
    }

    /// The decision on what an archive holds, once its entries have passed the pass over the
    /// archive: made here for both ``verifyArchive(at:options:)`` and import, on the archived
    /// store (a private copy: `storePath`) and the blobs the pass found and hashed.
    ///
    /// Refuses (as corruption) a non-empty write-ahead log or rollback journal beside the store
    /// (the archive is a raw copy of a package in use, not a snapshot), a manifest over 1 MiB or
    /// not valid, and anything the store checks find. A store whose header says WAL mode is
    /// switched to rollback mode first (it is a private copy with no log: nothing changes).
    static func verifyArchived(
        _ scan: ArchiveScanReport, storePath: String, archivePath path: String, options: Options
    ) throws(DeckError) -> VerificationReport {
        var report = VerificationReport(path: path)
        func add(_ code: String, _ object: String, _ message: String) {
            report.findings.append(
                Finding(severity: .corruption, code: code, object: object, message: message))
        }
        if scan.hasStoreLog {
            let wal = (scan.writeAheadLogBytes ?? 0) > 0
            let name = wal ? PackageItem.writeAheadLogName : PackageItem.rollbackJournalName
            let bytes = (wal ? scan.writeAheadLogBytes : scan.rollbackJournalBytes) ?? 0
            add(
                "archive-store-log", path + ":" + name,
                "the archive holds the store's \(wal ? "write-ahead log" : "rollback journal") (\(bytes) bytes), "
                    + "so it was made from a package that was open or had crashed and its store is not a "
                    + "snapshot; share the original with 'deck export', or unpack this archive with "
                    + "'deck unpack' and open the result, which applies the log")
            return report
        }
        guard scan.manifest.count <= 1 << 20 else {
            add("manifest-invalid", path, "\(PackageLayout.manifest) is larger than 1 MiB")
            return report
        }
        let manifest: Manifest
        do {
            manifest = try Manifest.decode(scan.manifest, packagePath: path)
        } catch .tooNew(let p, let v, let s) {
            throw DeckError.tooNew(path: p, version: v, supported: s)
        } catch {
            add("manifest-invalid", path, "\(error)")
            return report
        }
        let object = path + ":" + PackageLayout.store
        do {
            // The private copy is ours: failing to read or rewrite it is an I/O error, not a
            // finding about the archive.
            try settleJournalMode(storePath)
        } catch let error as DeckError {
            throw error
        } catch {
            add("store-unreadable", object, "\(error)")
            return report
        }
        do {
            let database = try Database(path: storePath, mode: .readOnly)
            defer { database.close() }
            let schema = try DocumentPackage.checkStore(
                database, packagePath: path, manifest: manifest, checkContentType: false)
            let archived = Dictionary(
                scan.blobs.map { ($0.digest, $0.size) }, uniquingKeysWith: { a, _ in a })
            try checkStore(
                database, schema: schema, manifest: manifest, path: path, options: options,
                blobFiles: .archived(archived), report: &report)
        } catch DeckError.notAPackage(_, let reason) {
            add("store-identity", object, reason)
        } catch DeckError.corrupt(_, let reason) {
            add("store-metadata", object, reason)
        } catch {
            add("store-unreadable", object, "\(error)")
        }
        report.findings.sort { ($0.severity, $0.code, $0.object) < ($1.severity, $1.code, $1.object) }
        return report
    }

    /// Rewrites a private store copy whose header says WAL mode (bytes 18 and 19 are 2) into
    /// rollback mode, as a closing writer would, so that reading it creates no `-wal`/`-shm`.
    private static func settleJournalMode(_ storePath: String) throws {
        let fd = try FileSystem.open(storePath, O_RDONLY | O_NOFOLLOW)
        defer { FileSystem.close(fd) }
        var versions: [UInt8] = [0, 0]
        let count = versions.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 2, 18) }
        guard count == 2, versions != [1, 1] else { return }
        let database = try Database(path: storePath, mode: .readWrite)
        defer { database.close() }
        _ = try database.pragma("journal_mode=DELETE")
    }

    /// True when the file starts like a zip, gzip, zstd or tar file: damage then, not a stranger.
    static func looksLikeArchive(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 262)) ?? Data())
        if head.starts(with: [0x50, 0x4B]) || head.starts(with: [0x1F, 0x8B])
            || head.starts(with: [0x28, 0xB5, 0x2F, 0xFD])
        {
            return true
        }
        return head.count >= 262 && Array(head[257..<262]) == Array("ustar".utf8)
    }

    /// Where the blob files to check are.
    enum BlobFiles {
        /// In the package directory: listed, sized and hashed here.
        case directory
        /// In an archive, already hashed while it was scanned: digest → size.
        case archived([Digest: Int64])
    }

    private static func checkStore(
        _ db: Database, schema: Schema, manifest: Manifest, path: String, options: Options,
        blobFiles: BlobFiles = .directory, report: inout VerificationReport
    ) throws {
        let storePath = path + "/" + PackageLayout.store
        func add(_ severity: Finding.Severity, _ code: String, _ object: String, _ message: String) {
            report.findings.append(Finding(severity: severity, code: code, object: object, message: message))
        }
        // SQLite's own checks.
        let integrity = try db.rows(options.quick ? "PRAGMA quick_check" : "PRAGMA integrity_check")
        for row in integrity {
            let text = row.first?.string ?? ""
            if text != "ok" { add(.corruption, "sqlite-integrity", storePath, text) }
        }
        guard integrity.first?.first?.string == "ok" else { return }
        for row in try db.rows("PRAGMA foreign_key_check") {
            let table = row[0].string ?? "?"
            let rowid = row[1].int64.map(String.init) ?? "?"
            let parent = row[2].string ?? "?"
            add(
                .corruption, "dangling-reference", "\(table) #\(rowid)",
                "references a missing \(parent) record")
        }
        if let contentType = try db.scalar("SELECT value FROM deck_meta WHERE key = 'content_type'")?.string,
            contentType != manifest.contentType
        {
            add(
                .corruption, "content-type-mismatch", storePath,
                "store says content type '\(contentType)', manifest says '\(manifest.contentType)'")
        }
        let mapping: SchemaMapping
        do {
            mapping = try SchemaMapping(schema)
        } catch {
            add(.corruption, "schema-invalid", storePath, "the stored schema is invalid: \(error)")
            return
        }
        try checkTables(db, mapping: mapping, storePath: storePath, report: &report)
        try checkBlobs(
            db, mapping: mapping, path: path, options: options, blobFiles: blobFiles, report: &report)
    }

    /// Compares the store's tables, columns, triggers and indexes with what the schema maps to.
    private static func checkTables(
        _ db: Database, mapping: SchemaMapping, storePath: String, report: inout VerificationReport
    ) throws {
        func add(_ severity: Finding.Severity, _ code: String, _ object: String, _ message: String) {
            report.findings.append(Finding(severity: severity, code: code, object: object, message: message))
        }
        let expected = try Database(path: ":memory:", mode: .create)
        defer { expected.close() }
        try expected.execute(StoreDDL.metadata)
        for statement in StoreDDL.statements(for: mapping) { try expected.execute(statement) }
        func objects(_ db: Database) throws -> [String: String] {
            var result: [String: String] = [:]
            for row in try db.rows("SELECT type, name FROM sqlite_schema WHERE name NOT GLOB 'sqlite_*'") {
                result[row[1].string ?? ""] = row[0].string ?? ""
            }
            return result
        }
        let want = try objects(expected)
        let have = try objects(db)
        for (name, type) in want.sorted(by: { $0.key < $1.key }) {
            guard let actual = have[name] else {
                add(
                    type == "index" && !name.hasSuffix(".unique") ? .untidy : .corruption, "\(type)-missing",
                    name,
                    "the schema requires this \(type), but the store does not have it")
                continue
            }
            guard type == "table", actual == "table" else { continue }
            let wantColumns = try expected.rows(
                "SELECT name, type, \"notnull\" FROM pragma_table_info(?)", [.text(name)])
            let haveColumns = try db.rows(
                "SELECT name, type, \"notnull\" FROM pragma_table_info(?)", [.text(name)])
            let haveByName = Dictionary(
                haveColumns.map { ($0[0].string ?? "", $0) }, uniquingKeysWith: { a, _ in a })
            for column in wantColumns {
                let columnName = column[0].string ?? ""
                guard let actualColumn = haveByName[columnName] else {
                    add(
                        .corruption, "column-missing", "\(name).\(columnName)",
                        "the schema requires this column")
                    continue
                }
                if actualColumn[1] != column[1] {
                    add(
                        .corruption, "column-type", "\(name).\(columnName)",
                        "column type is \(actualColumn[1].string ?? "?"), the schema maps to \(column[1].string ?? "?")"
                    )
                }
            }
        }
        for (name, type) in have.sorted(by: { $0.key < $1.key }) where want[name] == nil {
            add(.untidy, "\(type)-unknown", name, "this \(type) is not part of the schema")
        }
        for root in mapping.roots where have[root.table] == "table" {
            let allowed = Set(mapping.entities.values.filter { $0.table == root.table }.map(\.name))
            for row in try db.rows("SELECT _entity, count(*) FROM \(quote(root.table)) GROUP BY _entity") {
                let name = row[0].string ?? "NULL"
                report.records += Int(row[1].int64 ?? 0)
                if !allowed.contains(name) {
                    add(
                        .corruption, "entity-unknown", root.table,
                        "\(row[1].int64 ?? 0) row(s) have _entity '\(name)', which is not in this table's hierarchy"
                    )
                }
            }
        }
        // References without a foreign key (delete rule noAction) may dangle by design; say so.
        var checked: Set<String> = []
        for name in mapping.entityNames {
            guard let entity = mapping.entities[name], have[entity.table] == "table" else { continue }
            for (relationship, storage) in entity.relationships {
                guard case .ownColumn(let column) = storage,
                    let destination = mapping.entities[relationship.destination],
                    have[destination.table] == "table",
                    checked.insert(entity.table + "." + column).inserted
                else { continue }
                let inverseRule = relationship.inverse.flatMap {
                    destination.relationship($0)?.relationship.deleteRule
                }
                guard relationship.deleteRule == .noAction || inverseRule == .noAction else { continue }
                let sql =
                    "SELECT count(*), min(r._pk) FROM \(quote(entity.table)) r WHERE r.\(quote(column)) IS NOT NULL "
                    + "AND NOT EXISTS (SELECT 1 FROM \(quote(destination.table)) d WHERE d._pk = r.\(quote(column)))"
                guard let row = try db.rows(sql).first, let count = row[0].int64, count > 0 else { continue }
                add(
                    .untidy, "dangling-reference", "\(entity.table) #\(row[1].int64 ?? 0)",
                    "'\(column)' and \(count - 1) more record(s) refer to a deleted \(relationship.destination) "
                        + "(delete rule noAction)")
            }
        }
    }

    /// Counts references, compares them with `deck_blob`, and checks every blob file.
    private static func checkBlobs(
        _ db: Database, mapping: SchemaMapping, path: String, options: Options, blobFiles: BlobFiles,
        report: inout VerificationReport
    ) throws {
        func add(_ severity: Finding.Severity, _ code: String, _ object: String, _ message: String) {
            report.findings.append(Finding(severity: severity, code: code, object: object, message: message))
        }
        var counted: [String: Int64] = [:]
        var firstUser: [String: String] = [:]
        for root in mapping.roots {
            var seen: Set<String> = []
            for member in mapping.entities.values where member.table == root.table {
                for attribute in member.attributes
                where attribute.options.contains(.externalStorage) && seen.insert(attribute.name).inserted {
                    let column = quote(attribute.name)
                    let sql =
                        "SELECT \(column), count(*), min(_pk) FROM \(quote(root.table)) "
                        + "WHERE typeof(\(column)) = 'text' GROUP BY \(column)"
                    for row in try db.rows(sql) {
                        let digest = row[0].string ?? ""
                        counted[digest, default: 0] += row[1].int64 ?? 0
                        if firstUser[digest] == nil {
                            firstUser[digest] = "\(root.table) #\(row[2].int64 ?? 0).\(attribute.name)"
                        }
                    }
                }
            }
        }
        var known: [String: (size: Int64, refs: Int64)] = [:]
        for row in try db.rows("SELECT digest, size, refs FROM deck_blob") {
            known[row[0].string ?? ""] = (row[1].int64 ?? 0, row[2].int64 ?? 0)
        }
        for (digest, count) in counted.sorted(by: { $0.key < $1.key }) {
            let user = firstUser[digest] ?? "?"
            guard Digest(hex: digest) != nil else {
                add(.corruption, "reference-malformed", user, "'\(digest)' is not a SHA-256 digest")
                continue
            }
            guard let entry = known[digest] else {
                add(
                    .corruption, "blob-unregistered", digest,
                    "referenced by \(user) but missing from deck_blob")
                continue
            }
            if entry.refs != count {
                add(
                    .corruption, "refcount-mismatch", digest,
                    "deck_blob.refs is \(entry.refs) but \(count) cell(s) reference it")
            }
        }
        for (digest, entry) in known.sorted(by: { $0.key < $1.key }) where counted[digest] == nil {
            add(
                entry.refs == 0 ? .untidy : .corruption,
                entry.refs == 0 ? "blob-unreferenced" : "refcount-mismatch",
                digest, "deck_blob.refs is \(entry.refs) but nothing references it")
        }
        let blobs = BlobStore(packagePath: path)
        if case .archived(let archived) = blobFiles {
            for (digestText, entry) in known.sorted(by: { $0.key < $1.key })
            where entry.refs > 0 || counted[digestText] != nil {
                guard let digest = Digest(hex: digestText) else { continue }
                if let size = archived[digest] {
                    report.blobsChecked += 1
                    report.bytesChecked += size
                    if size != entry.size {
                        add(
                            .corruption, "blob-size", digestText,
                            "the archived blob has \(size) bytes, deck_blob says \(entry.size)")
                    }
                } else {
                    add(
                        .corruption, "blob-missing", digestText,
                        "the archive holds no blobs/\(digestText.prefix(2))/\(digestText)")
                }
            }
            for digest in archived.keys.sorted() where known[digest.hexDigest] == nil {
                add(
                    .untidy, "blob-orphan", "blobs/\(digest.hexDigest.prefix(2))/\(digest.hexDigest)",
                    "no record references it")
            }
            return
        }
        let (files, strays) = try blobs.inventory()
        for stray in strays {
            add(
                .untidy, "stray-file", stray,
                "not a blob file (wrong name or place); 'deck gc' leaves it alone")
        }
        var toHash: [(Digest, String, Int64)] = []
        for (digestText, entry) in known.sorted(by: { $0.key < $1.key })
        where entry.refs > 0 || counted[digestText] != nil {
            guard let digest = Digest(hex: digestText) else { continue }
            guard let filePath = files[digest] else {
                add(.corruption, "blob-missing", digestText, "file \(blobs.path(for: digest)) is missing")
                continue
            }
            toHash.append((digest, filePath, entry.size))
        }
        for (digest, filePath) in files.sorted(by: { $0.key < $1.key }) where known[digest.hexDigest] == nil {
            add(.untidy, "blob-orphan", filePath, "no record references this file; 'deck gc' removes it")
        }
        // Sizes are cheap to check; contents need hashing.
        for (digest, filePath, size) in toHash {
            if let st = try FileSystem.status(filePath), Int64(st.st_size) != size {
                add(
                    .corruption, "blob-size", digest.hexDigest,
                    "file \(filePath) has \(st.st_size) bytes, deck_blob says \(size)")
            }
        }
        guard options.hashBlobs else { return }
        let total = toHash.reduce(Int64(0)) { $0 + $1.2 }
        let results = hashAll(
            toHash.map { ($0.0, $0.1) }, threads: options.threads, total: total, progress: options.progress)
        for (digest, outcome) in results {
            switch outcome {
            case .success(let (actual, size)):
                report.blobsChecked += 1
                report.bytesChecked += size
                if actual != digest {
                    add(
                        .corruption, "blob-corrupt", digest.hexDigest,
                        "file \(blobs.path(for: digest)) hashes to \(actual.hexDigest)")
                }
            case .failure(let error):
                add(.corruption, "blob-unreadable", digest.hexDigest, "\(error)")
            }
        }
    }

    /// Hashes files on `threads` threads, largest first.
    private static func hashAll(
        _ files: [(Digest, String)], threads: Int, total: Int64, progress: (@Sendable (Int64, Int64) -> Void)?
    ) -> [(Digest, Result<(Digest, Int64), DeckError>)] {
        let results = Mutex<[(Digest, Result<(Digest, Int64), DeckError>)]>([])
        let next = Atomic<Int>(0)
        let done = Atomic<Int64>(0)
        let work = files.map { ($0.0, $0.1) }
        DispatchQueue.concurrentPerform(iterations: min(threads, max(1, work.count))) { _ in
            while true {
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
        return results.withLock { $0 }.sorted { $0.0 < $1.0 }
    }

    /// Temporaries, and a `-wal` left by a writer that is gone.
    private static func checkLeftovers(path: String, report: inout VerificationReport) {
        let tmp = path + "/" + PackageLayout.tmpDirectory
        let writer = WriterLock.holder(packagePath: path)
        if writer == nil, let names = try? FileSystem.list(tmp) {
            for name in names.sorted() {
                report.findings.append(
                    Finding(
                        severity: .untidy, code: "temporary", object: tmp + "/" + name,
                        message: "left by an interrupted writer; opening for writing or 'deck gc' removes it")
                )
            }
        }
        let wal = path + "/" + PackageLayout.store + "-wal"
        if writer == nil, let st = try? FileSystem.status(wal), st.st_size > 0 {
            report.findings.append(
                Finding(
                    severity: .untidy, code: "wal-present", object: wal,
                    message:
                        "a write-ahead log remains without a writer; the next writer folds it into the store")
            )
        }
    }
}
