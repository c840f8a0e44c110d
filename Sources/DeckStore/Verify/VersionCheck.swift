import DeckSQLite
import Foundation

/// The checks of a version 5 store's version bookkeeping (spec: section 20.8): every record and
/// link has its version row and no row claims a record or link that is not there, every version
/// names a known writer and a clock no later than the store's. Each kind of problem is one
/// finding (`versions`, corruption) naming the first record it concerns and how many there are.
/// Tables that are not the derived ones were reported by the table check and are left alone.
/// The tables' `CHECK` constraints are checked here too: SQLite's integrity check passes over
/// them on a read-only connection, which is how the verifier reads a store.
struct VersionCheck {
    let db: Database
    /// The store's clock.
    let clock: Int64
    var report: VerificationReport

    static func run(
        _ db: Database, mapping: SchemaMapping, report: inout VerificationReport
    )
        throws
    {
        guard try db.hasTable("deck_clock"), try db.hasTable("deck_writer") else { return }
        let clocks = try db.rows("SELECT clock FROM deck_clock")
        guard clocks.count == 1, let clock = clocks[0][0].int64 else {
            report.add(
                .corruption, "versions", "deck_clock",
                "deck_clock has \(clocks.count) rows; it has exactly one")
            return
        }
        var check = VersionCheck(db: db, clock: clock, report: report)
        if clock < 0 || clock >= VersionClock.limit {
            check.add(
                "deck_clock", "deck_clock's clock \(clock) is below 0 or beyond the clock's limit of 2^62")
        }
        try check.writers()
        for root in mapping.roots {
            try check.records(of: root.table, columns: VersionDDL.propertyColumns(root, mapping: mapping))
        }
        for (table, _, _) in mapping.joinTables { try check.links(of: table) }
        try check.inserts(tables: mapping.roots.map(\.table))
        report = check.report
    }

    private mutating func add(_ object: String, _ message: String) {
        report.add(.corruption, "versions", object, message)
    }

    /// Reports the rows `query` selects: how many, and the first, named by `object`.
    private mutating func each(_ query: String, _ object: ([SQLValue]) -> String, _ message: String) throws {
        let rows = try db.rows(query)
        guard let first = rows.first else { return }
        add(object(first), rows.count == 1 ? message : "\(message) (and \(rows.count - 1) more)")
    }

    private static func key(_ value: SQLValue) -> String { value.int64.map(String.init) ?? "?" }

    /// The origin is number 0 and 16 zero bytes, and no other writer has its id.
    private mutating func writers() throws {
        let origin = try db.rows("SELECT id FROM deck_writer WHERE writer = zeroblob(16)").compactMap(
            \.[0].int64)
        if origin != [VersionDDL.originWriter] {
            add("deck_writer", "the origin (16 zero bytes) is not writer number 0, alone")
        }
        try each(
            "SELECT id FROM deck_writer WHERE typeof(writer) IS NOT 'blob' OR length(writer) != 16 ORDER BY id",
            { "deck_writer #\(Self.key($0[0]))" }, "a writer id is not 16 bytes")
    }

    /// The versions of entity table `table`'s records and cells.
    private mutating func records(of table: String, columns: [String]) throws {
        let rowsName = VersionDDL.rowsTable(table)
        let cellsName = VersionDDL.cellsTable(table)
        guard try db.hasTable(rowsName), try db.hasTable(cellsName) else { return }
        let (t, rows, cells) = (quote(table), quote(rowsName), quote(cellsName))
        let record = { (row: [SQLValue]) in "\(table) #\(Self.key(row[0]))" }
        try each(
            "SELECT r._pk FROM \(rows) AS r WHERE (r.alive % 2 = 1) = (r._pk NOT IN (SELECT _pk FROM \(t))) "
                + "ORDER BY r._pk",
            record, "the version's existence counter disagrees with the table (odd: the record exists)")
        try each(
            "SELECT r._pk FROM \(rows) AS r WHERE r.alive < 1 OR r.alive >= \(VersionClock.limit) "
                + "OR typeof(r._gid) IS NOT 'blob' OR length(r._gid) != 16 "
                + "OR (r.alive % 2 = 0 AND r._gid IN (SELECT _gid FROM \(t))) "
                + "OR (r.alive % 2 = 1 AND r._gid IS NOT (SELECT _gid FROM \(t) WHERE _pk = r._pk)) ORDER BY r._pk",
            record,
            "a counter is below 1 or beyond 2^62, a global id is not 16 bytes, a tombstone's global id is a record's that exists, or a record's "
                + "version names another global id than the record's")
        let known = columns.map(quoteLiteral).joined(separator: ", ")
        try each(
            "SELECT c._pk FROM \(cells) AS c WHERE (c._pk NOT IN (SELECT _pk FROM \(t)) "
                + "AND c._pk NOT IN (SELECT _pk FROM \(rows))) OR c.property NOT IN (\(known.isEmpty ? "NULL" : known)) ORDER BY c._pk",
            record, "a cell version names a record or a property the table does not have")
        try versions(in: rowsName)
        try versions(in: cellsName)
    }

    /// The versions of join table `table`'s links.
    private mutating func links(of table: String) throws {
        let linksName = VersionDDL.linksTable(table)
        guard try db.hasTable(linksName) else { return }
        let (j, links) = (quote(table), quote(linksName))
        let pair = { (row: [SQLValue]) in "\(table) (source \(Self.key(row[0])), target \(Self.key(row[1])))"
        }
        try each(
            "SELECT j.source, j.target FROM \(j) AS j LEFT JOIN \(links) AS l "
                + "ON l.source = j.source AND l.target = j.target WHERE l.alive IS NULL OR l.alive % 2 = 0 "
                + "ORDER BY j.source, j.target",
            pair, "the link has no version, or its version says it was removed")
        try each(
            "SELECT l.source, l.target FROM \(links) AS l WHERE l.alive % 2 = 1 AND NOT EXISTS "
                + "(SELECT 1 FROM \(j) AS j WHERE j.source = l.source AND j.target = l.target) "
                + "ORDER BY l.source, l.target",
            pair, "the version says the link exists, but it does not")
        try each(
            "SELECT l.source, l.target FROM \(links) AS l WHERE l.alive < 1 OR l.alive >= \(VersionClock.limit) "
                + "ORDER BY l.source, l.target",
            pair, "the link's existence counter is below 1 or beyond 2^62")
        try versions(in: linksName)
    }

    /// The ranges of inserted keys: each of an entity table, not overlapping, within the keys the
    /// table gave out.
    private mutating func inserts(tables: [String]) throws {
        guard try db.hasTable("deck_inserts") else { return }
        // A schema with no entity has no sqlite_sequence, and no range.
        guard !tables.isEmpty else {
            try each(
                "SELECT tbl, last FROM deck_inserts ORDER BY tbl, last",
                { "deck_inserts (\($0[0].string ?? "?"), \(Self.key($0[1])))" },
                "a range of inserted keys names a table the schema does not map")
            return
        }
        let known = tables.map(quoteLiteral).joined(separator: ", ")
        let range = { (row: [SQLValue]) in "deck_inserts (\(row[0].string ?? "?"), \(Self.key(row[1])))" }
        try each(
            "SELECT tbl, last FROM deck_inserts WHERE tbl NOT IN (\(known.isEmpty ? "NULL" : known)) ORDER BY tbl, last",
            range, "a range of inserted keys names a table the schema does not map")
        try each(
            "SELECT tbl, last FROM (SELECT tbl, first, last, lag(last) OVER (PARTITION BY tbl ORDER BY last) AS previous "
                + "FROM deck_inserts) WHERE first < 1 OR last < first OR first <= previous "
                + "OR last > coalesce((SELECT seq FROM sqlite_sequence WHERE name = tbl), 0) ORDER BY tbl, last",
            range, "a range of inserted keys overlaps another, or is outside the keys its table gave out")
        try versions(in: "deck_inserts")
    }

    /// Versions in `table` naming an unknown writer or a clock later than the store's.
    private mutating func versions(in table: String) throws {
        let q = quote(table)
        if let count = try db.scalar(
            "SELECT count(*) FROM \(q) WHERE writer NOT IN (SELECT id FROM deck_writer)")?.int64, count > 0
        {
            add(table, "\(count) version(s) name a writer that deck_writer does not have")
        }
        if let latest = try db.scalar("SELECT max(clock) FROM \(q)")?.int64, latest > clock {
            add(table, "a version's clock (\(latest)) is later than deck_clock's (\(clock))")
        }
        if let earliest = try db.scalar("SELECT min(clock) FROM \(q)")?.int64, earliest < 0 {
            add(table, "a version's clock (\(earliest)) is below 0")
        }
    }
}
