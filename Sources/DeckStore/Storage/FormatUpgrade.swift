import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Upgrades a package of an older format version to the current one when a writer opens it
/// (spec: section 12.2). Readers never upgrade: they read an older package as it is.
///
/// Version 1 to 2, in this order:
///
/// 1. The manifest is rewritten (`formatVersion` 2, `minimumReaderVersion` 2) through a file in
///    `tmp/` that is flushed and renamed into place. It goes first so that it never claims less
///    than the store needs: a version 1 reader that opens the package from then on is told it is
///    too new, never that it is corrupt.
/// 2. The store is upgraded in one SQLite transaction: each entity table is rebuilt with an
///    `AUTOINCREMENT` key and a `_gid` column (every row gets 16 random bytes, a version 4 UUID),
///    keeping every row's key and cells, so relationships, join tables and blob reference counts
///    stay as they were; its indexes and triggers, and the new global-id index and trigger, are
///    created again; `deck_meta` gets a `document_id` and `format_version` 2, and `user_version`
///    becomes 2. Before committing, the store's objects are compared with those version 2 derives.
///
/// A kill at any moment leaves a version 1 package, one whose manifest says 2 over a version 1
/// store (read by version 1's rules; the next writer finishes the upgrade), or a version 2
/// package. Each of them verifies.
enum FormatUpgrade {
    /// Brings the package at `packagePath`, whose writer holds `db` in WAL mode and the writer
    /// lock, to the current version. Returns the manifest as it now is; does nothing for a
    /// package already current.
    static func upgrade(
        _ db: Database, packagePath: String, manifest: Manifest, mapping: SchemaMapping, storeVersion: Int
    ) throws -> Manifest {
        var manifest = manifest
        if manifest.formatVersion < PackageLayout.formatVersion {
            manifest.formatVersion = PackageLayout.formatVersion
            manifest.minimumReaderVersion = PackageLayout.minimumReaderVersion
            manifest.generator = Manifest(contentType: manifest.contentType).generator
            try writeManifest(manifest, packagePath: packagePath)
        }
        if storeVersion < 2 { try upgradeStoreToVersion2(db, mapping: mapping, packagePath: packagePath) }
        return manifest
    }

    /// Writes `manifest` in place of the package's, atomically: a file in `tmp/` (which the next
    /// writer empties if this one dies) is flushed, renamed over `manifest.json`, and the
    /// directory flushed.
    static func writeManifest(_ manifest: Manifest, packagePath: String) throws(DeckError) {
        let tmp = packagePath + "/" + PackageLayout.tmpDirectory
        try FileSystem.mkdir(tmp)
        let temporary = tmp + "/manifest-" + FileSystem.randomSuffix()
        let fd = try FileSystem.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o644)
        do {
            defer { FileSystem.close(fd) }
            let data = manifest.encoded()
            try data.withUnsafeBytes { buffer in try FileSystem.write(fd, buffer, path: temporary) }
            try FileSystem.fsync(fd, path: temporary)
            try FileSystem.rename(temporary, packagePath + "/" + PackageLayout.manifest)
        } catch {
            try? FileSystem.unlink(temporary)
            throw DeckError.wrap(error)
        }
        try FileSystem.fsyncDirectory(packagePath)
    }

    /// The temporary name an entity table has while it is rebuilt (names beginning with `deck_`
    /// are the format's, so no entity table has it).
    static let previousTable = "deck_upgrade_previous"

    /// Rebuilds every entity table in one transaction (see the type's documentation).
    static func upgradeStoreToVersion2(_ db: Database, mapping: SchemaMapping, packagePath: String) throws {
        // Both take effect outside a transaction only. With foreign keys off, dropping the old
        // table deletes no join-table row; with the legacy rename, renaming it leaves the other
        // tables' references naming the table as they are, and they name the new one.
        try db.execute("PRAGMA foreign_keys = OFF; PRAGMA legacy_alter_table = ON")
        defer { try? db.execute("PRAGMA foreign_keys = ON; PRAGMA legacy_alter_table = OFF") }
        try db.transaction(.immediate) {
            for root in mapping.roots {
                try rebuild(root, db: db, mapping: mapping)
            }
            try db.run(
                "INSERT INTO deck_meta(key, value) VALUES ('document_id', ?) ON CONFLICT(key) DO NOTHING",
                [.text(StoreMetadata.newDocumentID())])
            try db.run("UPDATE deck_meta SET value = 2 WHERE key = 'format_version'")
            try db.execute("PRAGMA user_version = 2")
            if let refusal = try StoreObjects.firstRefusal(db, mapping: mapping, formatVersion: 2) {
                throw DeckError.corrupt(
                    path: packagePath,
                    reason:
                        "upgrading to format version 2 made the store's \(refusal.object.type) "
                        + "'\(refusal.object.name)' differ from the one the schema derives; nothing was changed"
                )
            }
        }
    }

    /// Rebuilds the table of hierarchy `root` with the version 2 key columns.
    private static func rebuild(_ root: EntityMapping, db: Database, mapping: SchemaMapping) throws {
        let table = root.table
        // The open checked that the store holds exactly the derived objects: the table's indexes
        // and triggers are the schema's, and are made again below.
        let dependents = try db.rows(
            "SELECT type, name FROM sqlite_schema WHERE tbl_name = ? AND type IN ('index', 'trigger') "
                + "AND sql IS NOT NULL ORDER BY name",
            [.text(table)])
        for row in dependents {
            guard let type = row[0].string, let name = row[1].string else { continue }
            try db.execute("DROP \(type == "index" ? "INDEX" : "TRIGGER") \(quote(name))")
        }
        let columns = try db.rows("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)])
            .compactMap { $0[0].string }
        try db.execute("ALTER TABLE \(quote(table)) RENAME TO \(quote(previousTable))")
        let statements = StoreDDL.tableStatements(root, mapping: mapping, formatVersion: 2)
        try db.execute(statements.table)
        // Every cell as it was, in key order (the new table's rows are appended), and a new
        // global id per row. The reference-count triggers come after the copy: the cells
        // counted are the same.
        let kept = columns.filter { $0 != "_pk" }.map(quote)
        try db.execute(
            "INSERT INTO \(quote(table))(_pk, _gid, \(kept.joined(separator: ", "))) "
                + "SELECT _pk, deck_gid(), \(kept.joined(separator: ", ")) FROM \(quote(previousTable)) ORDER BY _pk"
        )
        try db.execute("DROP TABLE \(quote(previousTable))")
        for statement in statements.indexes + statements.triggers { try db.execute(statement) }
    }
}
