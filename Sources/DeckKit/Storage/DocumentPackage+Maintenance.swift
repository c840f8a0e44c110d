import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What ``DocumentPackage/collectGarbage(dryRun:)`` removed (or would remove).
public struct GarbageReport: Sendable {
    /// Blob files no record references.
    public var orphanFiles: [String] = []
    public var orphanBytes: Int64 = 0
    /// `deck_blob` rows with no references.
    public var unreferencedRows = 0
    /// Files under `tmp/`.
    public var temporaries: [String] = []
    public var temporaryBytes: Int64 = 0
    /// Store size before and after compaction (equal in a dry run).
    public var storeBytesBefore: Int64 = 0
    public var storeBytesAfter: Int64 = 0

    /// Bytes freed in all.
    public var reclaimedBytes: Int64 {
        orphanBytes + temporaryBytes + max(0, storeBytesBefore - storeBytesAfter)
    }
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
}

extension DocumentPackage {
    /// Removes what no committed state needs: blob files nothing references, `deck_blob` rows
    /// with no references, and temporaries; then compacts the store with `VACUUM`.
    ///
    /// Refuses while there are unsaved changes. With `dryRun`, only reports; a dry run also
    /// works on a package opened read-only (which, unlike a writer's open, leaves `tmp/` alone).
    /// - Parameter progress: receives (files removed, files to remove) as they go.
    public func collectGarbage(dryRun: Bool = false, progress: ((Int64, Int64) -> Void)? = nil)
        throws(DeckError)
        -> GarbageReport
    {
        // A dry run only reads: it works on a read-only package too.
        if !dryRun || mode == .readWrite { try requireWritable() }
        guard !hasChanges else {
            throw DeckError.invalidQuery(
                "\(path): save or roll back the unsaved changes before collecting garbage")
        }
        var report = GarbageReport()
        let storePath = path + "/" + PackageLayout.store
        report.storeBytesBefore = Int64((try FileSystem.status(storePath))?.st_size ?? 0)
        do {
            report.unreferencedRows = Int(
                try database.scalar("SELECT count(*) FROM deck_blob WHERE refs = 0")?.int64 ?? 0)
            var known: Set<Digest> = []
            try database.forEachRow("SELECT digest FROM deck_blob WHERE refs > 0") { row in
                if let digest = Digest(hex: row.text(at: 0)) { known.insert(digest) }
            }
            let (files, _) = try blobs.inventory()
            for (digest, filePath) in files.sorted(by: { $0.key < $1.key }) where !known.contains(digest) {
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
            guard !dryRun else {
                report.storeBytesAfter = report.storeBytesBefore
                return report
            }
            // Rows first (committed), then files: a crash in between leaves only orphans.
            if report.unreferencedRows > 0 {
                try database.transaction { try database.run("DELETE FROM deck_blob WHERE refs = 0") }
            }
            let doomed = report.orphanFiles + report.temporaries
            for (index, filePath) in doomed.enumerated() {
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

    /// Counts and sizes for `deck inspect`.
    public func info() throws(DeckError) -> PackageInfo {
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
                lockHolder: mode == .readWrite ? getpid() : WriterLock.holder(packagePath: path))
        } catch {
            throw translate(error)
        }
    }
}
