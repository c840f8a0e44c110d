import DeckSQLite
import Foundation

/// A common ancestor of two copies (spec section 20.9, "A common ancestor"): the copy both were
/// made from, which tells what each changed before it was versioned.
///
/// Two copies upgraded to format version 5 apart hold what they held then under one version, the
/// origin's: under it, a value one copy changed and the other kept look alike, and a record one
/// copy deleted leaves no tombstone. Compared with the ancestor, each copy's changes of that time
/// are found and given the version (1, origin), the lowest above the origin's: they win over
/// what the other copy kept from the ancestor, and lose to any change made since versioning.
enum MergeAncestor {
    /// The clock of a change found by comparing with the ancestor (writer: the origin).
    static let clock: Int64 = 1

    /// Versions the changes the store attached as `main` made before it was versioned, compared
    /// with the ancestor's store attached as `ancestor` (same schema, same date epoch), inside
    /// the caller's transaction:
    /// - a cell of a record `main` held when it was upgraded (its key in a range of the origin's,
    ///   or above every range) whose version is the origin's and whose value differs from the
    ///   ancestor's (a to-one cell: by its target's global id) gets a row of `"deck_cells:T"` at
    ///   (1, origin);
    /// - a record of the ancestor that `main` neither holds nor has a tombstone of gets one, with
    ///   counter 2 and version (1, origin), under a new key;
    /// - a link of the ancestor between two records `main` holds, of which `main` has no row in
    ///   `"deck_links:J"`, gets one with counter 2 and version (1, origin);
    /// - `deck_clock.clock` is at least 1.
    static func version(_ database: Database, mapping: SchemaMapping) throws {
        for columns in DocumentDiffer.tableColumns(mapping) {
            try versionCells(database, columns)
            try versionDeletes(database, columns.table)
        }
        for (table, source, target) in mapping.joinTables {
            let links = quote(VersionDDL.linksTable(table))
            try database.run(
                """
                INSERT INTO main.\(links)(source, target, alive, clock, writer)
                SELECT xs._pk, xt._pk, 2, \(version) FROM ancestor.\(quote(table)) l
                JOIN ancestor.\(quote(source)) os ON os._pk = l.source JOIN ancestor.\(quote(target)) ot ON ot._pk = l.target
                JOIN main.\(quote(source)) xs ON xs._gid = os._gid JOIN main.\(quote(target)) xt ON xt._gid = ot._gid
                WHERE NOT EXISTS (SELECT 1 FROM main.\(links) k WHERE k.source = xs._pk AND k.target = xt._pk)
                """)
        }
        // No version may be later than the store's clock (spec 20.2): a copy upgraded and never
        // written since has clock 0.
        try database.execute("UPDATE main.deck_clock SET clock = \(clock) WHERE clock < \(clock)")
    }

    /// The version of a change found with the ancestor, as SQL values (clock, writer).
    private static let version = "\(clock), \(VersionDDL.originWriter)"

    /// The cells of the entity table of `columns` changed before versioning.
    private static func versionCells(_ database: Database, _ columns: DocumentDiffer.TableColumns) throws {
        let t = quote(columns.table)
        let table = quoteLiteral(columns.table)
        let rows = quote(VersionDDL.rowsTable(columns.table))
        let cells = quote(VersionDDL.cellsTable(columns.table))
        // The records the store held when it was upgraded (their keys in a range of the origin's,
        // or above every range) that the ancestor has, with the ancestor's keys: a change made
        // before versioning can be nowhere else.
        try database.execute(
            """
            DROP TABLE IF EXISTS temp.ancestor_held;
            CREATE TEMP TABLE ancestor_held(pk INTEGER PRIMARY KEY, opk INTEGER NOT NULL);
            INSERT INTO temp.ancestor_held SELECT x._pk, o._pk FROM main.deck_inserts i
            JOIN main.\(t) x ON x._pk BETWEEN i.first AND i.last JOIN ancestor.\(t) o ON o._gid = x._gid
            WHERE i.tbl = \(table) AND i.clock = 0 AND i.writer = 0;
            INSERT OR IGNORE INTO temp.ancestor_held SELECT x._pk, o._pk FROM main.\(t) x
            JOIN ancestor.\(t) o ON o._gid = x._gid
            WHERE x._pk > coalesce((SELECT max(last) FROM main.deck_inserts WHERE tbl = \(table)), 0);
            """)
        defer { try? database.execute("DROP TABLE IF EXISTS temp.ancestor_held") }
        // The cell's version: its row, else its record's row, else the origin's (its range's).
        func atOrigin(_ property: String) -> String {
            """
            coalesce(
                (SELECT c.clock = 0 AND c.writer = 0 FROM main.\(cells) c
                 WHERE c._pk = x._pk AND c.property = \(quoteLiteral(property))),
                (SELECT r.clock = 0 AND r.writer = 0 FROM main.\(rows) r WHERE r._pk = x._pk),
                1)
            """
        }
        var changed: [(String, String)] = columns.attributes.map {
            ($0.name, "x.\(quote($0.name)) IS NOT o.\(quote($0.name))")
        }
        for (column, destination) in columns.references {
            let (c, d) = (quote(column), quote(destination))
            changed.append(
                (
                    column,
                    "(SELECT g._gid FROM main.\(d) g WHERE g._pk = x.\(c)) "
                        + "IS NOT (SELECT h._gid FROM ancestor.\(d) h WHERE h._pk = o.\(c))"
                ))
        }
        for (property, differs) in changed {
            try database.run(
                """
                INSERT INTO main.\(cells)(_pk, property, clock, writer)
                SELECT x._pk, \(quoteLiteral(property)), \(version) FROM temp.ancestor_held h
                JOIN main.\(t) x ON x._pk = h.pk JOIN ancestor.\(t) o ON o._pk = h.opk
                WHERE \(differs) AND \(atOrigin(property))
                ON CONFLICT (_pk, property) DO UPDATE SET clock = excluded.clock, writer = excluded.writer
                """)
        }
    }

    /// Tombstones for the records of the ancestor that entity table `table` holds no trace of:
    /// deleted before versioning.
    private static func versionDeletes(_ database: Database, _ table: String) throws {
        let t = quote(table)
        let rows = quote(VersionDDL.rowsTable(table))
        let missing = """
            FROM ancestor.\(t) o WHERE NOT EXISTS (SELECT 1 FROM main.\(t) x WHERE x._gid = o._gid)
            AND o._gid NOT IN (SELECT _gid FROM main.\(rows))
            """
        let count = try database.scalar("SELECT count(*) \(missing)")?.int64 ?? 0
        guard count > 0 else { return }
        let first = try MergeVersions.giveOutKeys(database, table: table, count: count)
        try database.run(
            "INSERT INTO main.\(rows)(_pk, _gid, alive, clock, writer) "
                + "SELECT ? + row_number() OVER (ORDER BY o._gid), o._gid, 2, \(version) \(missing)",
            [.integer(first - 1)])
    }

}

extension DocumentMerge {
    /// The merge of `source` (checked: a copy of the same document) into `store` with a common
    /// ancestor: the ancestor's store brought to `store`'s schema (a scratch copy migrated when
    /// its version is earlier), a scratch copy of `source` (migrated likewise) whose changes are
    /// versioned against it (``MergeAncestor/version(_:mapping:)``), then that copy merged, with
    /// `store`'s changes versioned the same way inside the merge's transaction.
    static func merge(
        from source: PackageStore, into store: PackageStore, differentDocuments: Bool, blobs: URL,
        migrator: MergeMigration.Migrator, ancestor url: URL
    ) throws(DeckError) -> MergeReport {
        let ancestor = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? ancestor.close() }
        try DocumentDifference.requireCopies(
            store, ancestor, paths: (store.url.path, url.path), differentDocuments: differentDocuments,
            verb: "take another document's copy as the ancestor", sameSchema: false)
        let scratch = try Staging.makeScratchDirectory(purpose: "merge", mode: 0o700)
        defer { scratch.discard() }
        // The ancestor is read from a snapshot (a writer may be changing it meanwhile: both
        // copies must be compared with one state of it); one of an earlier format version (its
        // dates may count from another epoch) or schema version is upgraded, then migrated, as
        // this store was.
        let upgrade =
            ancestor.storeFormatVersion < store.storeFormatVersion || ancestor.dateEpoch != store.dateEpoch
        let migrate = try MergeMigration.needsMigration(
            of: ancestor.schema, into: store.schema, paths: (store.url.path, url.path))
        let copy = scratch.url.appendingPathComponent("ancestor")
        do throws(DeckError) {
            try FileSystem.mkdir(copy.path, mode: 0o700, existingOK: false)
            try MergeMigration.copy(ancestor, blobs: url, into: copy, for: store.schema)
            try checkIntegrity(of: copy, path: url.path)
            if upgrade { try PackageStore.open(at: copy).close() }
            if migrate { try migrator.migrate(copy, store.schema) }
            let upgraded = try PackageStore.open(at: copy, mode: .readOnly)
            defer { try? upgraded.close() }
            guard upgraded.dateEpoch == store.dateEpoch else {
                throw DeckError.notComparable(
                    path: url.path, reason: "its dates count from another epoch than \(store.url.path)'s")
            }
        } catch {
            throw error.replacingPath(copy.path, with: url.path)
        }
        let ancestorStore = copy.appendingPathComponent(PackageLayout.store).path
        let other = scratch.url.appendingPathComponent("copy")
        try FileSystem.mkdir(other.path, mode: 0o700, existingOK: false)
        try MergeMigration.copy(source, blobs: blobs, into: other, for: store.schema)
        if try MergeMigration.needsMigration(
            of: source.schema, into: store.schema, paths: (store.url.path, source.url.path))
        {
            try MergeMigration.migrate(other, to: store.schema, with: migrator, path: source.url.path)
        }
        do {
            let database = try Database(
                path: other.appendingPathComponent(PackageLayout.store).path, mode: .readWrite)
            defer { database.close() }
            try database.attachReadOnly(ancestorStore, as: "ancestor")
            try database.transaction { try MergeAncestor.version(database, mapping: store.mapping) }
        } catch {
            throw DeckError.wrap(error).replacingPath(other.path, with: source.url.path)
        }
        do {
            return try merge(
                from: other, into: store, differentDocuments: differentDocuments, blobs: blobs,
                migrator: migrator,
                ancestorStore: ancestorStore)
        } catch {
            throw error.replacingPath(other.path, with: source.url.path)
        }
    }

    /// Refuses an ancestor whose snapshot (the package at `copy`) breaks SQLite's constraints:
    /// its rows are read as they are, and a global id of another length, for instance, could
    /// not be written as a tombstone. SQLite's `quick_check` checks the pages, `NOT NULL` and
    /// `STRICT` types, and `CHECK` constraints on a connection that could write (on a read-only
    /// one it passes over them): the snapshot is this merge's own. `path` is the ancestor given.
    private static func checkIntegrity(of copy: URL, path: String) throws(DeckError) {
        let problem: String?
        do {
            let database = try Database(
                path: copy.appendingPathComponent(PackageLayout.store).path, mode: .readWrite)
            defer { database.close() }
            problem = try database.rows("PRAGMA quick_check(1)").first?.first?.string
        } catch {
            throw DeckError.wrap(error).replacingPath(copy.path, with: path)
        }
        guard let problem, problem != "ok" else { return }
        throw DeckError.corrupt(path: path, reason: "it cannot be the common ancestor: \(problem)")
    }
}
