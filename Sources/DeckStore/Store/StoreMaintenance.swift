import DeckSQLite
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What `PackageStore.collectGarbage(dryRun:repair:progress:)` removed (or would remove).
public struct GarbageReport: Sendable {
    /// Blob files no record references.
    public var orphanFiles: [String] = []
    public var orphanBytes: Int64 = 0
    /// `deck_blob` rows with no references.
    public var unreferencedRows = 0
    /// Files under `tmp/`, and file-sync conflict copies of `lock` (spec 2.4), which hold
    /// nothing of the document.
    public var temporaries: [String] = []
    public var temporaryBytes: Int64 = 0
    /// Store size before and after compaction (equal in a dry run).
    public var storeBytesBefore: Int64 = 0
    public var storeBytesAfter: Int64 = 0
    /// Digests that `deck_blob` does not count (no row, or `refs` 0) although records name them.
    /// Their files and rows are kept, never collected; ``PackageStore/repairReferences(dryRun:)``
    /// (`deck gc --repair`) corrects the counts.
    public var uncountedReferences: [String] = []
    /// Indexes the schema derives that the store lacked, created again (or that would be).
    public var createdIndexes: [String] = []
    /// What the repair did, when one was asked for.
    public var repair: ReferenceRepairReport?

    /// Bytes freed in all.
    public var reclaimedBytes: Int64 {
        orphanBytes + temporaryBytes + max(0, storeBytesBefore - storeBytesAfter)
    }
}

/// What ``PackageStore/repairReferences(dryRun:)`` did (or would do) to make `deck_blob`
/// agree with the cells.
public struct ReferenceRepairReport: Sendable {
    /// A `deck_blob.refs` that differed from the cells, and the count it was set to.
    public struct Recount: Sendable, Equatable {
        public let digest: String
        public let from: Int64
        public let to: Int64
    }

    /// What could not be repaired, and why.
    public struct Unrepaired: Sendable, Equatable {
        /// The digest, or for a cell that holds no digest, the cell (`Table #id.column`).
        public let object: String
        public let reason: String
    }

    /// Digests records named but `deck_blob` lacked, whose files were intact: registered.
    public var registered: [String] = []
    /// Rows whose `refs` differed from the cells.
    public var recounted: [Recount] = []
    /// Rows whose `size` differed from their intact file's length: corrected.
    public var resized: [String] = []
    /// Referenced blobs whose file is missing, corrupt or not a regular file, and references
    /// that are not digests: nothing can restore them but a copy of the bytes.
    public var unrepaired: [Unrepaired] = []

    /// True when nothing was left unrepaired.
    public var isComplete: Bool { unrepaired.isEmpty }
}

/// A summary of a package for `deck inspect` and `deck open`.
public struct PackageInfo: Sendable {
    /// One entity and its record count (its own records, not its subentities').
    public struct EntityInfo: Sendable {
        public let name: String
        public let superentity: String?
        public let table: String
        public let records: Int
    }

    /// The package (a caller may put the name the user gave here).
    public var path: String
    public let manifest: Manifest
    public let schemaVersion: String
    public let created: String?
    public let modified: String?
    public let entities: [EntityInfo]
    /// Distinct blob files.
    public let blobCount: Int
    /// Bytes in blob files (each stored once).
    public let blobBytes: Int64
    /// Bytes the references stand for (a blob referenced twice counts twice).
    public let referencedBytes: Int64
    /// External data values (cells naming a blob).
    public let externalValues: Int
    /// Non-null data values stored inline in data attributes that allow external storage.
    public let inlineValues: Int
    public let storeBytes: Int64
    public let pageSize: Int
    public let pageCount: Int
    public let freelistCount: Int
    /// The pid of the process holding the writer lock, if any (-1: held, pid unknown).
    public let lockHolder: Int32?
    /// The store's format version, by whose rules it is read (spec: section 12). It is lower than
    /// the manifest's `formatVersion` only after an interrupted upgrade, which the next writer
    /// finishes, and lower than ``PackageStore/formatVersion`` only in a package no writer of this
    /// version has opened yet.
    public let formatVersion: Int
    /// The document id (`deck_meta.document_id`), nil in a version 1 store.
    public let documentID: UUID?
    /// The stored schema's fingerprint, computed from it (spec: section 5.10).
    public let schemaFingerprint: String
    /// The compatibility floor (`deck_meta.schema_floor`, spec: sections 4.2 and 19): the oldest
    /// schema version whose apps may still write the document, as readers take it (a value that
    /// is missing, not text or above the schema's version counts as the schema's version; a
    /// breaking migration's target raises it); nil in a store older than version 3.
    public let schemaFloor: String?
    /// The migrations applied, oldest first (spec: section 4.4); empty before version 3.
    public let migrations: [MigrationRecord]
    /// What the version bookkeeping holds (spec: section 20); nil before version 5.
    public let versions: VersionInfo?

    /// The version bookkeeping of a version 5 store, in figures.
    public struct VersionInfo: Sendable, Equatable {
        /// The store's clock (`deck_clock`): the version of its latest transaction.
        public let clock: Int64
        /// The write sessions that have written to it (`deck_writer`, the origin aside).
        public let writers: Int
        /// Deleted records whose tombstones it keeps.
        public let tombstones: Int
        /// Cells changed after their records' inserts, each with its version.
        public let changedCells: Int
    }
}

/// Maintenance on one connection of a store (garbage collection, the repair of reference
/// counts, counts and sizes): borrows the connection for the length of a call, and keeps no
/// state of its own.
struct StoreMaintenance {
    let connection: StoreConnection

    init(_ connection: StoreConnection) { self.connection = connection }

    private var database: Database { connection.database }
    private var mapping: SchemaMapping { connection.mapping }
    private var schema: StoreSchema { connection.schema }
    private var manifest: Manifest { connection.manifest }
    private var blobs: BlobStore { connection.blobs }
    private var path: String { connection.path }
    private var formatVersion: Int { connection.formatVersion }
    private var isWriter: Bool { connection.isWriter }
    private func translate(_ error: any Error) -> DeckError { connection.translate(error) }

    /// Removes what no committed state needs: blob files nothing references, `deck_blob` rows
    /// with no references, and temporaries; creates any index the schema derives that the store
    /// lacks; then compacts the store with `VACUUM`.
    ///
    /// Reference counts are not trusted: before a row or a file is removed, the cells that name
    /// it are counted (one scan per external-storage column), and whatever a record names is kept
    /// and listed in ``GarbageReport/uncountedReferences``. With `repair`, the counts are made
    /// right first (``repairReferences(dryRun:)``).
    ///
    /// With `dryRun`, only reports; a dry run also works on a package opened read-only (which,
    /// unlike a writer's open, leaves `tmp/` alone).
    /// - Parameter progress: receives (files removed, files to remove) as they go.
    func collectGarbage(
        dryRun: Bool = false, repair: Bool = false, progress: ((Int64, Int64) -> Void)? = nil
    )
        throws(DeckError)
        -> GarbageReport
    {
        // A dry run only reads: it works on a read-only package too.
        guard dryRun || isWriter else { throw DeckError.readOnly(path: path) }
        var report = GarbageReport()
        if repair { report.repair = try repairReferences(dryRun: dryRun) }
        let storePath = path + "/" + PackageLayout.store
        report.storeBytesBefore = Int64((try FileSystem.status(storePath))?.st_size ?? 0)
        do {
            var zeroRows: Set<Digest> = []
            var counted: Set<Digest> = []
            try database.forEachRow("SELECT digest, refs FROM deck_blob") { row in
                guard let digest = Digest(hex: row.text(at: 0)) else { return }
                if row.int64(at: 1) > 0 { counted.insert(digest) } else { zeroRows.insert(digest) }
            }
            let (files, _) = try blobs.inventory()
            let uncountedFiles = Set(files.keys).subtracting(counted)
            // The cells decide: nothing they name is removed, whatever deck_blob says.
            let named = try ReferenceCounts.count(
                database, mapping: mapping, among: zeroRows.union(uncountedFiles))
            report.uncountedReferences = named.keys.map(\.hexDigest).sorted()
            let doomedRows = zeroRows.subtracting(named.keys)
            report.unreferencedRows = doomedRows.count
            for digest in uncountedFiles.subtracting(named.keys).sorted() {
                guard let filePath = files[digest] else { continue }
                report.orphanFiles.append(filePath)
                report.orphanBytes += Int64((try FileSystem.status(filePath))?.st_size ?? 0)
            }
            if let names = try? FileSystem.list(blobs.tmpPath) {
                for name in names.sorted() {
                    let filePath = blobs.tmpPath + "/" + name
                    report.temporaries.append(filePath)
                    report.temporaryBytes += Int64((try FileSystem.status(filePath))?.st_size ?? 0)
                }
            }
            for copy in SyncConflictCopy.find(inPackage: path) where copy.isLock {
                let filePath = path + "/" + copy.name
                report.temporaries.append(filePath)
                report.temporaryBytes += Int64((try FileSystem.status(filePath))?.st_size ?? 0)
            }
            let missingIndexes = try StoreObjects.differences(
                database, derived: StoreObjects.derived(for: mapping, formatVersion: formatVersion)
            )
            .filter { $0.kind == .missing && !$0.isCorruption }
            report.createdIndexes = missingIndexes.map(\.object.name)
            guard !dryRun else {
                report.storeBytesAfter = report.storeBytesBefore
                return report
            }
            // Rows first (committed), then files: a crash in between leaves only orphans.
            if !doomedRows.isEmpty || !missingIndexes.isEmpty {
                try database.transaction {
                    if !doomedRows.isEmpty {
                        let list = "[" + doomedRows.map { "\"\($0.hexDigest)\"" }.joined(separator: ",") + "]"
                        try database.run(
                            "DELETE FROM deck_blob WHERE refs = 0 AND digest IN (SELECT value FROM json_each(?))",
                            [.text(list)])
                    }
                    for index in missingIndexes {
                        if let sql = index.object.sql {
                            try database.execute(String(decoding: sql, as: UTF8.self))
                        }
                    }
                }
            }
            let doomed = report.orphanFiles + report.temporaries
            for (index, filePath) in doomed.enumerated() {
                // Stopping between files leaves only orphans, which the next gc removes.
                try Cancellation.checkCurrent()
                try FileSystem.removeTree(filePath)
                progress?(Int64(index + 1), Int64(doomed.count))
            }
            try database.execute("VACUUM")
            _ = try database.pragma("wal_checkpoint(TRUNCATE)")
        } catch {
            throw translate(error)
        }
        report.storeBytesAfter = Int64((try FileSystem.status(storePath))?.st_size ?? 0)
        return report
    }

    /// Makes `deck_blob` agree with the cells (spec: section 10.8): counts every external
    /// reference from the cells, registers each referenced digest that `deck_blob` lacks when
    /// its file is intact (hashed), sets every `refs` to the count, corrects a `size` that
    /// differs from an intact file, and reports what it could not repair (referenced files that
    /// are missing, corrupt or not regular files, cells that hold no digest). Holds the writer
    /// lock and does it in one transaction. Removes nothing: ``collectGarbage(dryRun:repair:progress:)``
    /// does that afterwards.
    ///
    /// With `dryRun`, only reports (and also works on a package opened read-only).
    func repairReferences(dryRun: Bool = false) throws(DeckError) -> ReferenceRepairReport {
        guard dryRun || isWriter else { throw DeckError.readOnly(path: path) }
        do {
            if dryRun {
                try database.execute("BEGIN DEFERRED")
                defer { try? database.execute("COMMIT") }
                return try repairWork(apply: false)
            }
            return try database.transaction(.immediate) { try repairWork(apply: true) }
        } catch {
            throw translate(error)
        }
    }

    private func repairWork(apply: Bool) throws -> ReferenceRepairReport {
        var report = ReferenceRepairReport()
        let (counted, firstUser) = try ReferenceCounts.countAll(database, mapping: mapping)
        var known: [String: (size: Int64, refs: Int64)] = [:]
        for row in try database.rows("SELECT digest, size, refs FROM deck_blob") {
            known[row[0].string ?? ""] = (row[1].int64 ?? 0, row[2].int64 ?? 0)
        }
        for (text, count) in counted.sorted(by: { $0.key < $1.key }) {
            guard let digest = Digest(hex: text) else {
                report.unrepaired.append(
                    .init(object: firstUser[text] ?? text, reason: "'\(text)' is not a SHA-256 digest"))
                continue
            }
            guard known[text] == nil else { continue }
            switch intactSize(digest) {
            case .success(let size):
                report.registered.append(text)
                if apply {
                    try database.run(
                        "INSERT INTO deck_blob(digest, size, refs) VALUES (?, ?, ?)",
                        [.text(text), .integer(size), .integer(count)])
                }
            case .failure(let unrepaired):
                report.unrepaired.append(unrepaired)
            }
        }
        for (text, entry) in known.sorted(by: { $0.key < $1.key }) {
            let count = counted[text] ?? 0
            if entry.refs != count {
                report.recounted.append(.init(digest: text, from: entry.refs, to: count))
                if apply {
                    try database.run(
                        "UPDATE deck_blob SET refs = ? WHERE digest = ?", [.integer(count), .text(text)])
                }
            }
            guard count > 0, let digest = Digest(hex: text) else { continue }
            // A referenced file must be there and whole: its length first, its hash only when
            // the length disagrees with deck_blob (verify hashes everything).
            let filePath = blobs.path(for: digest)
            guard let st = try FileSystem.status(filePath) else {
                report.unrepaired.append(.init(object: text, reason: "file \(filePath) is missing"))
                continue
            }
            guard (st.st_mode & S_IFMT) == S_IFREG else {
                report.unrepaired.append(
                    .init(
                        object: text,
                        reason: "file \(filePath) is \(FileSystem.kindName(st.st_mode)), not a regular file"))
                continue
            }
            guard Int64(st.st_size) != entry.size else { continue }
            switch intactSize(digest) {
            case .success(let size):
                report.resized.append(text)
                if apply {
                    try database.run(
                        "UPDATE deck_blob SET size = ? WHERE digest = ?", [.integer(size), .text(text)])
                }
            case .failure(let unrepaired):
                report.unrepaired.append(unrepaired)
            }
        }
        return report
    }

    /// Hashes a referenced blob's file: its length when intact, or why it is not.
    private enum Intact {
        case success(Int64)
        case failure(ReferenceRepairReport.Unrepaired)
    }

    /// Hashes the file of a referenced blob: its length when it hashes to its name, or why not.
    private func intactSize(_ digest: Digest) -> Intact {
        let filePath = blobs.path(for: digest)
        func failure(_ reason: String) -> Intact {
            .failure(ReferenceRepairReport.Unrepaired(object: digest.hexDigest, reason: reason))
        }
        do {
            let (actual, size) = try BlobStore.hashFile(at: filePath)
            return actual == digest
                ? .success(size)
                : failure("file \(filePath) is corrupt: its bytes hash to \(actual.hexDigest)")
        } catch .notFound {
            return failure("file \(filePath) is missing")
        } catch .corrupt(_, let reason) {
            return failure("file \(filePath): \(reason)")
        } catch {
            return failure("file \(filePath) cannot be read: \(error)")
        }
    }

    /// The figures of the version bookkeeping, summed over the tables.
    private func versionInfo() throws -> PackageInfo.VersionInfo {
        var tombstones: Int64 = 0
        var cells: Int64 = 0
        for root in mapping.roots {
            tombstones +=
                try database.scalar(
                    "SELECT count(*) FROM \(quote(VersionDDL.rowsTable(root.table))) WHERE alive % 2 = 0")?
                .int64 ?? 0
            cells +=
                try database.scalar("SELECT count(*) FROM \(quote(VersionDDL.cellsTable(root.table)))")?.int64
                ?? 0
        }
        return PackageInfo.VersionInfo(
            clock: try database.scalar("SELECT clock FROM deck_clock")?.int64 ?? 0,
            writers: Int(try database.scalar("SELECT count(*) FROM deck_writer WHERE id <> 0")?.int64 ?? 0),
            tombstones: Int(tombstones), changedCells: Int(cells))
    }

    /// Counts and sizes for `deck inspect`.
    func info() throws(DeckError) -> PackageInfo {
        do {
            func meta(_ key: String) throws -> String? {
                try database.scalar("SELECT value FROM deck_meta WHERE key = ?", [.text(key)])?.string
            }
            var entities: [PackageInfo.EntityInfo] = []
            for name in mapping.entityNames {
                guard let entity = mapping.entities[name] else { continue }
                let count =
                    try database.scalar(
                        "SELECT count(*) FROM \(quote(entity.table)) WHERE _entity = ?", [.text(name)])?.int64
                    ?? 0
                entities.append(
                    .init(
                        name: name, superentity: entity.entity.superentity, table: entity.table,
                        records: Int(count)))
            }
            let blobRow =
                try database.rows(
                    "SELECT count(*), total(size), total(size * refs), total(refs) FROM deck_blob"
                )
                .first ?? []
            var inline = 0
            for root in mapping.roots {
                var seen: Set<String> = []
                for member in mapping.entities.values where member.table == root.table {
                    for attribute in member.attributes
                    where attribute.options.contains(.externalStorage) && seen.insert(attribute.name).inserted
                    {
                        inline += Int(
                            try database.scalar(
                                "SELECT count(*) FROM \(quote(root.table)) WHERE typeof(\(quote(attribute.name))) = 'blob'"
                            )?
                            .int64 ?? 0)
                    }
                }
            }
            let storePath = path + "/" + PackageLayout.store
            let stored = try StoreMetadata.read(database, packagePath: path)
            let history = formatVersion >= 3 ? try SchemaBookkeeping.history(database) : []
            return PackageInfo(
                path: path, manifest: manifest, schemaVersion: schema.version, created: try meta("created"),
                modified: try meta("modified"), entities: entities,
                blobCount: Int(blobRow.first?.int64 ?? 0),
                blobBytes: Int64(blobRow.count > 1 ? blobRow[1].double ?? 0 : 0),
                referencedBytes: Int64(blobRow.count > 2 ? blobRow[2].double ?? 0 : 0),
                externalValues: Int(blobRow.count > 3 ? blobRow[3].double ?? 0 : 0),
                inlineValues: inline,
                storeBytes: Int64((try FileSystem.status(storePath))?.st_size ?? 0),
                pageSize: Int(try database.pragma("page_size")?.int64 ?? 0),
                pageCount: Int(try database.pragma("page_count")?.int64 ?? 0),
                freelistCount: Int(try database.pragma("freelist_count")?.int64 ?? 0),
                lockHolder: isWriter ? getpid() : WriterLock.holder(packagePath: path),
                formatVersion: formatVersion,
                documentID: stored.documentID,
                schemaFingerprint: schema.fingerprint,
                schemaFloor: formatVersion >= 3
                    ? SchemaBookkeeping.effectiveFloor(
                        stored: stored.values["schema_floor"], version: schema.version, history: history)
                    : nil,
                migrations: history,
                versions: formatVersion >= VersionDDL.firstFormatVersion ? try versionInfo() : nil)
        } catch {
            throw translate(error)
        }
    }
}
