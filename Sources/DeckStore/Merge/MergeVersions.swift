import DeckSQLite
import Foundation

/// One entity table and the temporary tables the merge keeps for it.
struct MergeTable {
    let columns: DocumentDiffer.TableColumns
    let root: EntityMapping
    let index: Int
    var name: String { columns.table }
    var quoted: String { quote(columns.table) }
    var rows: String { quote(VersionDDL.rowsTable(columns.table)) }
    var cells: String { quote(VersionDDL.cellsTable(columns.table)) }
    var literal: String { quoteLiteral(columns.table) }
    /// `other`'s records to look at: global id, key there, counter and version (`writer`
    /// numbered as in `main`).
    var other: String { "temp.merge_b\(index)" }
    /// `main`'s state of the same global ids (records and tombstones).
    var main: String { "temp.merge_a\(index)" }
    /// The records only `other` has, alive: inserted.
    var new: String { "temp.merge_n\(index)" }
    /// Cells whose version `other` may win.
    var candidates: String { "temp.merge_c\(index)" }
    /// `main`'s tombstones by global id.
    var tombstones: String { "temp.merge_t\(index)" }
}

/// The versions a merge reads and keeps besides the states it compares (spec 20.9).
enum MergeVersions {
    /// What each copy has seen of each writer (numbered as in `main`): the greatest clock of its
    /// versions there (`temp.merge_seen_a`, `temp.merge_seen_b`). Copies merge whole, so a copy
    /// that holds a writer's version of clock *c* holds every change that writer made up to *c*,
    /// or a later one: a change of clock at most that is one the copy has seen. (A version that a
    /// later change replaced leaves no trace; a writer a copy knows and holds no version of had
    /// all its versions there replaced, and counts as seen whole: its session had ended, in all
    /// likelihood, when the copy took them.)
    static func seen(_ database: Database, mapping: SchemaMapping, tables: [MergeTable], schema: String)
        throws
    {
        func versions(_ schema: String) -> String {
            var parts = ["SELECT writer, clock FROM \(schema).deck_inserts"]
            for t in tables {
                parts.append("SELECT writer, clock FROM \(schema).\(t.rows)")
                parts.append("SELECT writer, clock FROM \(schema).\(t.cells)")
            }
            for (table, _, _) in mapping.joinTables {
                parts.append("SELECT writer, clock FROM \(schema).\(quote(VersionDDL.linksTable(table)))")
            }
            return parts.joined(separator: " UNION ALL ")
        }
        if schema == "main" {
            // Before the other copy's writers are numbered here.
            try database.execute(
                """
                CREATE TEMP TABLE merge_seen_a(writer INTEGER PRIMARY KEY, clock INTEGER NOT NULL);
                INSERT INTO temp.merge_seen_a SELECT writer, max(clock) FROM (\(versions("main"))) GROUP BY writer;
                INSERT OR IGNORE INTO temp.merge_seen_a SELECT id, \(VersionClock.limit) FROM main.deck_writer;
                """)
        } else {
            try database.execute(
                """
                CREATE TEMP TABLE merge_seen_b(writer INTEGER PRIMARY KEY, clock INTEGER NOT NULL);
                INSERT INTO temp.merge_seen_b SELECT w.a, max(v.clock) FROM (\(versions("other"))) v
                JOIN temp.merge_writer w ON w.b = v.writer GROUP BY w.a;
                INSERT OR IGNORE INTO temp.merge_seen_b SELECT a, \(VersionClock.limit) FROM temp.merge_writer;
                """)
        }
    }

    /// Starts keeping the version each cell had before the merge's own changes (nulls where a
    /// reference's target is deleted) gave it the origin's: such a cell keeps the version of
    /// the change that made it point at the deleted record, as the other copy's cell does, so
    /// that neither wins by it.
    static func keep(_ database: Database, tables: [MergeTable]) throws {
        try database.execute(
            "CREATE TEMP TABLE merge_prior(tbl TEXT NOT NULL, pk INTEGER NOT NULL, property TEXT NOT NULL, "
                + "clock INTEGER, writer INTEGER, PRIMARY KEY (tbl, pk, property)) WITHOUT ROWID")
        for t in tables where !t.columns.references.isEmpty {
            try database.execute(
                """
                CREATE TEMP TRIGGER "merge_prior:\(t.index):update" BEFORE UPDATE ON main.\(t.cells)
                WHEN NEW.clock = 0 AND NEW.writer = 0 AND NOT (OLD.clock = 0 AND OLD.writer = 0) BEGIN
                    INSERT OR REPLACE INTO merge_prior VALUES (\(t.literal), OLD._pk, OLD.property, OLD.clock, OLD.writer);
                END;
                CREATE TEMP TRIGGER "merge_prior:\(t.index):insert" AFTER INSERT ON main.\(t.cells)
                WHEN NEW.clock = 0 AND NEW.writer = 0 BEGIN
                    INSERT OR IGNORE INTO merge_prior VALUES (\(t.literal), NEW._pk, NEW.property, NULL, NULL);
                END;
                """)
        }
    }

    /// Gives back the versions ``keep(_:tables:)`` kept to the cells still at the origin's, and
    /// stops keeping them.
    static func restore(_ database: Database, tables: [MergeTable]) throws {
        try putBack(database, tables: tables)
        for t in tables where !t.columns.references.isEmpty {
            try database.execute(
                """
                DROP TRIGGER temp."merge_prior:\(t.index):update";
                DROP TRIGGER temp."merge_prior:\(t.index):insert";
                """)
        }
        try database.execute("DROP TABLE temp.merge_prior")
    }

    /// Gives back the versions kept so far to the cells still at the origin's, and keeps on
    /// keeping: what the merge compares after this sees the versions the cells had (a reference
    /// nulled by a delete made before the cells are compared keeps the version of its change).
    static func putBack(_ database: Database, tables: [MergeTable]) throws {
        for t in tables where !t.columns.references.isEmpty {
            try database.execute(
                """
                UPDATE main.\(t.cells) AS c SET clock = p.clock, writer = p.writer FROM temp.merge_prior p
                WHERE p.tbl = \(t.literal) AND p.pk = c._pk AND p.property = c.property AND p.clock IS NOT NULL
                    AND c.clock = 0 AND c.writer = 0;
                DELETE FROM main.\(t.cells) WHERE clock = 0 AND writer = 0 AND (_pk, property) IN (
                    SELECT pk, property FROM temp.merge_prior WHERE tbl = \(t.literal) AND clock IS NULL);
                DELETE FROM temp.merge_prior WHERE tbl = \(t.literal);
                """)
        }
    }

    /// Gives out `count` new keys of entity table `table` of `main`, as an insert would
    /// (`sqlite_sequence` advanced past them), for tombstones of records it never held; returns
    /// the first.
    static func giveOutKeys(_ database: Database, table: String, count: Int64) throws -> Int64 {
        try database.run(
            "INSERT INTO main.sqlite_sequence(name, seq) SELECT ?, 0 "
                + "WHERE NOT EXISTS (SELECT 1 FROM main.sqlite_sequence WHERE name = ?)",
            [.text(table), .text(table)])
        let sequence =
            try database.scalar("SELECT max(seq) FROM main.sqlite_sequence WHERE name = ?", [.text(table)])?
            .int64 ?? 0
        try database.run(
            "UPDATE main.sqlite_sequence SET seq = ? WHERE name = ?",
            [.integer(sequence + count), .text(table)])
        return sequence + 1
    }
}
