import DeckSQLite
import DeckSupport
import Foundation

/// The versions a migration made for a merge leaves (spec section 20.9, "Copies at different
/// schema versions"): what it changed takes the versions of what it was computed from, read
/// before it ran, instead of the migration transaction's own, so that the old copy's edits made
/// since the copies parted still count, and the migration itself beats no edit.
struct MigratedVersions {
    /// A version: its clock, then its writer id's bytes (spec section 20.6).
    struct Version: Comparable {
        var clock: Int64
        var writer: [UInt8]

        static let origin = Version(clock: 0, writer: [UInt8](repeating: 0, count: 16))

        static func < (a: Version, b: Version) -> Bool {
            a.clock != b.clock ? a.clock < b.clock : a.writer.lexicographicallyPrecedes(b.writer)
        }
    }

    private struct Cell: Hashable {
        var gid: Data
        var property: String
    }

    /// Each record's own version (section 20.3), and the greatest of it and its cells'.
    private var records: [Data: (own: Version, greatest: Version)] = [:]
    /// The versions of the cells that have a row of their own.
    private var cells: [Cell: Version] = [:]
    /// The greatest writer number before the migration: the migration's writers are above it.
    let lastWriter: Int64

    /// The versions of the store `database` holds, before the migration.
    init(reading database: Database) throws {
        var writers: [Int64: [UInt8]] = [:]
        for row in try database.rows("SELECT id, writer FROM deck_writer") {
            if let id = row[0].int64, let bytes = row[1].data { writers[id] = [UInt8](bytes) }
        }
        lastWriter = writers.keys.max() ?? 0
        func version(_ clock: SQLValue, _ writer: SQLValue) -> Version? {
            guard let clock = clock.int64, let id = writer.int64, let bytes = writers[id] else { return nil }
            return Version(clock: clock, writer: bytes)
        }
        for table in try Self.entityTables(database) {
            let (t, rows, cellRows) = (
                quote(table), quote("deck_rows:" + table), quote("deck_cells:" + table)
            )
            for row in try database.rows(
                """
                SELECT t._gid, r.clock, r.writer, i.clock, i.writer FROM \(t) AS t
                LEFT JOIN \(rows) AS r ON r._pk = t._pk
                LEFT JOIN deck_inserts AS i ON i.tbl = ? AND t._pk BETWEEN i.first AND i.last
                """, [.text(table)])
            {
                guard let gid = row[0].data else { continue }
                let own = version(row[1], row[2]) ?? version(row[3], row[4]) ?? .origin
                records[gid] = (own, own)
            }
            for row in try database.rows(
                "SELECT t._gid, c.property, c.clock, c.writer FROM \(cellRows) AS c JOIN \(t) AS t ON t._pk = c._pk"
            ) {
                guard let gid = row[0].data, let property = row[1].string, let cell = version(row[2], row[3])
                else { continue }
                cells[Cell(gid: gid, property: property)] = cell
                if let record = records[gid], record.greatest < cell { records[gid]?.greatest = cell }
            }
        }
    }

    /// The store's entity tables: those with version bookkeeping.
    private static func entityTables(_ database: Database) throws -> [String] {
        try database.rows(
            "SELECT substr(name, 11) FROM sqlite_schema WHERE type = 'table' AND name GLOB 'deck_rows:*' ORDER BY name"
        ).compactMap { $0[0].string }
    }

    /// Gives the versions the migration's writers recorded in `database` (the migrated store, in
    /// a transaction) those this says: a cell of a record the store held before takes, with
    /// `stages` (code of the application's ran, which may compute a value from any of the
    /// record's), the greatest version of the record; otherwise (a lightweight step, computed from
    /// the cell alone: a default filled in, a reference set to null) the cell's own version, or
    /// the record's when the cell had no row of its own or another name. A record the migration
    /// deleted keeps its tombstone's counter with the record's greatest version. Every other
    /// version the migration recorded (links, cells of tombstones) becomes the origin's; the keys
    /// it gave out (records a stage inserted) keep the migration's.
    func apply(to database: Database, stages: Bool) throws {
        var numbers: [[UInt8]: Int64] = [:]
        for row in try database.rows(
            "SELECT id, writer FROM deck_writer WHERE id <= ?", [.integer(lastWriter)])
        {
            if let id = row[0].int64, let bytes = row[1].data { numbers[[UInt8](bytes)] = id }
        }
        func values(_ version: Version) -> [SQLValue] {
            [.integer(version.clock), .integer(numbers[version.writer] ?? 0)]
        }
        let after = SQLValue.integer(lastWriter)
        for table in try Self.entityTables(database) {
            let (t, rows, cellRows) = (
                quote(table), quote("deck_rows:" + table), quote("deck_cells:" + table)
            )
            for row in try database.rows(
                "SELECT c._pk, c.property, t._gid FROM \(cellRows) AS c JOIN \(t) AS t ON t._pk = c._pk WHERE c.writer > ?",
                [after])
            {
                guard let gid = row[2].data, let record = records[gid] else { continue }
                let version =
                    stages
                    ? record.greatest
                    : row[1].string.flatMap { cells[Cell(gid: gid, property: $0)] } ?? record.own
                try database.run(
                    "UPDATE \(cellRows) SET clock = ?, writer = ? WHERE _pk = ? AND property = ?",
                    values(version) + [row[0], row[1]])
            }
            for row in try database.rows("SELECT _pk, _gid FROM \(rows) WHERE writer > ?", [after]) {
                guard let gid = row[1].data, let record = records[gid] else { continue }
                try database.run(
                    "UPDATE \(rows) SET clock = ?, writer = ? WHERE _pk = ?",
                    values(record.greatest) + [row[0]])
            }
        }
        let rest = try database.rows(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND (name GLOB 'deck_cells:*' OR name GLOB 'deck_links:*' OR name GLOB 'deck_rows:*') ORDER BY name"
        ).compactMap { $0[0].string }
        for table in rest {
            try database.run("UPDATE \(quote(table)) SET clock = 0, writer = 0 WHERE writer > ?", [after])
        }
    }
}
