import DeckSQLite
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Upgrades a package of an older format version to the current one when a writer opens it
/// (spec: sections 12.2, 12.5 and 12.8). Readers never upgrade: they read an older package as it
/// is.
///
/// In this order:
///
/// 1. The manifest is rewritten (`formatVersion` 4, `minimumReaderVersion` 4) through a file in
///    `tmp/` that is flushed and renamed into place. It goes first so that it never claims less
///    than the store needs: an older reader that opens the package from then on is told it is
///    too new, never that it is corrupt (or, for version 3, reads no date 31 years off).
/// 2. The store is upgraded in one SQLite transaction, from whichever version it is at:
///    - from version 1, each entity table is rebuilt with an `AUTOINCREMENT` key and a `_gid`
///      column (every row gets 16 random bytes, a version 4 UUID), keeping every row's key and
///      cells, so relationships, join tables and blob reference counts stay as they were; its
///      indexes and triggers, and the new global-id index and trigger, are created again;
///      `deck_meta` gets a `document_id`;
///    - from version 1 or 2, the schema-evolution bookkeeping is added: the empty `deck_migration`
///      table, and `deck_meta`'s `schema_fingerprint` and `schema_floor` (the schema's version);
///    - from version 1, 2 or 3, the dates: counted from 2001 from then on when every stored date
///      converts exactly, from 1970 as they are otherwise (``convertDates(_:mapping:)``), and
///      `deck_meta`'s `date_epoch` says which;
///
///    then `format_version` and `user_version` become 4, and before committing the store's
///    objects are compared with those version 4 derives.
///
/// A kill at any moment leaves the old package, one whose manifest says 4 over a store of the
/// old version (read by that version's rules; the next writer finishes the upgrade), or a
/// version 4 package. Each of them verifies.
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
        if storeVersion < PackageLayout.formatVersion {
            try upgradeStore(db, from: storeVersion, mapping: mapping, packagePath: packagePath)
        }
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

    /// Upgrades a store of `version` to the current one in one transaction (see the type's
    /// documentation).
    static func upgradeStore(_ db: Database, from version: Int, mapping: SchemaMapping, packagePath: String)
        throws
    {
        let current = PackageLayout.formatVersion
        if version < 2 {
            // Both take effect outside a transaction only. With foreign keys off, dropping the old
            // table deletes no join-table row; with the legacy rename, renaming it leaves the other
            // tables' references naming the table as they are, and they name the new one.
            try db.execute("PRAGMA foreign_keys = OFF; PRAGMA legacy_alter_table = ON")
        }
        defer {
            if version < 2 { try? db.execute("PRAGMA foreign_keys = ON; PRAGMA legacy_alter_table = OFF") }
        }
        try db.transaction(.immediate) {
            if version < 2 {
                for root in mapping.roots {
                    try rebuild(root, db: db, mapping: mapping)
                }
                try db.run(
                    "INSERT INTO deck_meta(key, value) VALUES ('document_id', ?) ON CONFLICT(key) DO NOTHING",
                    [.text(StoreMetadata.newDocumentID())])
            }
            if version < 3 {
                // A version 2 writer adds no other deck_meta key, so these rows are new (a store that
                // holds them anyway had them planted: the upgrade sets them to the truth).
                try db.execute(SchemaBookkeeping.historyTable)
                for (key, value) in SchemaBookkeeping.metadataRows(for: mapping.schema) {
                    try db.run(
                        "INSERT INTO deck_meta(key, value) VALUES (?, ?) "
                            + "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                        [.text(key), value])
                }
            }
            if version < 4 {
                // Dates: counted from 2001 from now on when every one converts exactly, else
                // from 1970 as they are (spec 12.8). A version 3 writer adds no such key.
                let epoch = try convertDates(db, mapping: mapping)
                try db.run(
                    "INSERT INTO deck_meta(key, value) VALUES ('date_epoch', ?) "
                        + "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    [.integer(epoch.rawValue)])
            }
            if version < VersionDDL.firstFormatVersion {
                // Version bookkeeping (spec 12.11): what the store holds gets the origin's
                // version, clock 0, the same in every copy (its records as the keys given out so
                // far, its links one by one); the triggers come after, so that nothing above was
                // versioned.
                try db.execute(VersionDDL.tables)
                try db.execute(VersionDDL.initialRows)
                for statement in VersionDDL.statements(for: mapping) { try db.execute(statement) }
                if !mapping.roots.isEmpty { try db.execute(VersionDDL.originInserts) }
                try VersionDDL.versionExisting(db, mapping: mapping)
            } else if version < VersionDDL.gidIndexFormatVersion {
                // Version 6 (spec 12.14): the tombstones indexed by global id.
                for root in mapping.roots { try db.execute(VersionDDL.gidIndex(root.table)) }
            }
            try db.run(
                "UPDATE deck_meta SET value = ? WHERE key = 'format_version'", [.integer(Int64(current))])
            try db.execute("PRAGMA user_version = \(current)")
            if let refusal = try StoreObjects.firstRefusal(db, mapping: mapping, formatVersion: current) {
                throw DeckError.corrupt(
                    path: packagePath,
                    reason:
                        "upgrading to format version \(current) made the store's \(refusal.object.type) "
                        + "'\(refusal.object.name)' differ from the one the schema derives; nothing was changed"
                )
            }
        }
    }

    /// The columns of date attributes, table by table (a column shared by entities of one table
    /// once).
    static func dateColumns(_ mapping: SchemaMapping) -> [(table: String, column: String, isUnique: Bool)] {
        var seen: [[String]: Int] = [:]
        var columns: [(table: String, column: String, isUnique: Bool)] = []
        for name in mapping.entityNames {
            guard let entity = mapping.entities[name] else { continue }
            for attribute in entity.attributes where attribute.type == .date {
                let isUnique = attribute.options.contains(.unique)
                if let index = seen[[entity.table, attribute.name]] {
                    columns[index].isUnique = columns[index].isUnique || isUnique
                } else {
                    seen[[entity.table, attribute.name]] = columns.count
                    columns.append((entity.table, attribute.name, isUnique))
                }
            }
        }
        return columns
    }

    /// Counts the store's dates from 2001 when every stored date converts to a binary64 of
    /// seconds since 2001 exactly, and returns that epoch; otherwise changes nothing and returns
    /// 1970 (spec 12.8). A REAL cell converts when `cell − 978307200` is a binary64 (true of every
    /// date from 1987-01-05 on, and of whole seconds); an INTEGER cell stays an integer, 978307200
    /// less. Cells that are not numbers, and infinities, are left as they are (an infinity is the
    /// same in both epochs); a finite number that would round, and a finite legacy date outside the
    /// range (spec 7.7, kept byte for byte), keep the whole document at 1970.
    static func convertDates(_ db: Database, mapping: SchemaMapping) throws -> DateEpoch {
        let columns = dateColumns(mapping)
        let offset = DateEpoch.reference.rawValue
        for (table, column, _) in columns {
            let c = quote(column)
            var exact = true
            let (earliest, end) = Timestamp.range(in: .unix)
            try db.forEachRow(
                "SELECT \(c) FROM \(quote(table)) WHERE typeof(\(c)) = 'real' "
                    + "OR (typeof(\(c)) = 'integer' AND (\(c) < \(earliest) OR \(c) >= \(end)))"
            ) { row in
                guard exact, case .real(let seconds) = row.value(at: 0) else {
                    exact = false
                    return
                }
                let timestamp = Timestamp(seconds: seconds, epoch: .unix)
                // A finite legacy date (spec 7.7) is kept byte for byte, so its document stays at
                // 1970; an infinite one is the same number in both epochs.
                exact = timestamp.isExact(in: .reference) && (!seconds.isFinite || timestamp.isStorable)
            }
            if !exact { return .unix }
        }
        // A unique index would check each row as it changes, and a date may meet another's old
        // value: such a table's indexes and triggers are made again after the change (as section
        // 6 derives them; the change touches no column a trigger counts).
        let rebuilt = Set(columns.filter(\.isUnique).map(\.table))
        for table in rebuilt { try db.dropIndexesAndTriggers(of: table) }
        for (table, column, _) in columns {
            let c = quote(column)
            try db.execute(
                "UPDATE \(quote(table)) SET \(c) = CASE typeof(\(c)) WHEN 'integer' THEN \(c) - \(offset) "
                    + "ELSE \(c) - \(offset).0 END WHERE typeof(\(c)) IN ('real', 'integer')")
        }
        for root in mapping.roots where rebuilt.contains(root.table) {
            let statements = StoreDDL.tableStatements(
                root, mapping: mapping, formatVersion: PackageLayout.formatVersion)
            for statement in statements.indexes + statements.triggers { try db.execute(statement) }
        }
        return .reference
    }

    /// Rebuilds the table of hierarchy `root` with the version 2 key columns.
    private static func rebuild(_ root: EntityMapping, db: Database, mapping: SchemaMapping) throws {
        let table = root.table
        // The open checked that the store holds exactly the derived objects: the table's indexes
        // and triggers are the schema's, and are made again below.
        try db.dropIndexesAndTriggers(of: table)
        let columns = try db.rows("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)])
            .compactMap { $0[0].string }
        try db.execute("ALTER TABLE \(quote(table)) RENAME TO \(quote(previousTable))")
        let statements = StoreDDL.tableStatements(
            root, mapping: mapping, formatVersion: PackageLayout.formatVersion)
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
