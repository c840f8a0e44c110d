import DeckSQLite
import Foundation

/// The version bookkeeping of a version 5 store (spec: section 20): who wrote each record, cell
/// and link, and when, kept so that two copies of a document edited apart can be merged. The
/// entity and join tables stay as section 6 derives them; everything here lives beside them in
/// tables named `deck_…`, which a version 4 reader ignores, and is kept up to date by triggers,
/// so that every write path (and a write made with another SQLite program) is versioned alike.
///
/// - `deck_writer`: the writers' 16-byte ids, each numbered once; number 0 is the *origin*, 16
///   zero bytes, the writer of what the store held when it was upgraded to version 5.
/// - `deck_clock`: one row, the version the open transaction writes: its clock and its writer's
///   number. A writer advances it when it begins a transaction.
/// - `deck_inserts`: the records each transaction inserted, as a range of keys per table (keys
///   are given out in increasing order): written once per transaction and table, at commit, so
///   that an insert costs no bookkeeping row of its own. A record in no range has the origin's
///   version.
/// - `"deck_rows:T"`: one row per record of table `T` whose version is not its key's range's:
///   a deleted record (its existence counter even), or one a merge brought from another copy
///   with its own version; its counter (odd while it exists), version and global id.
/// - `"deck_cells:T"`: one row per cell of `T` changed after its record's insert: the version of
///   its last change.
/// - `"deck_links:J"`: one row per link of join table `J` that exists or existed, with its
///   counter and version.
enum VersionDDL {
    /// The format version that introduced the bookkeeping.
    static let firstFormatVersion = 5

    /// The writer number of the origin: the versions an upgrade gives to what a store held.
    static let originWriter: Int64 = 0

    /// The store-wide tables, created with `deck_meta` in a version 5 store. The writer ids'
    /// uniqueness is an index of its own, not a `UNIQUE` constraint: SQLite would name that one
    /// `sqlite_autoindex_…`, which a version 4 reader does not ignore (spec 4.1).
    static let tables = """
        CREATE TABLE deck_writer(
            id INTEGER PRIMARY KEY,
            writer BLOB NOT NULL CHECK (length(writer) = 16)
        ) STRICT;
        CREATE UNIQUE INDEX "deck_writer.writer" ON deck_writer(writer);
        CREATE TABLE deck_clock(
            id INTEGER PRIMARY KEY CHECK (id = 1),
            clock INTEGER NOT NULL CHECK (clock >= 0),
            writer INTEGER NOT NULL REFERENCES deck_writer(id)
        ) STRICT;
        CREATE TABLE deck_inserts(
            tbl TEXT NOT NULL,
            first INTEGER NOT NULL,
            last INTEGER NOT NULL CHECK (last >= first),
            clock INTEGER NOT NULL CHECK (clock >= 0),
            writer INTEGER NOT NULL,
            PRIMARY KEY (tbl, last)
        ) STRICT, WITHOUT ROWID;
        """

    /// The rows every new version 5 store's `deck_writer` and `deck_clock` start with: the origin,
    /// at clock 0.
    static let initialRows = """
        INSERT INTO deck_writer(id, writer) VALUES (0, zeroblob(16));
        INSERT INTO deck_clock(id, clock, writer) VALUES (1, 0, 0);
        """

    static func rowsTable(_ table: String) -> String { "deck_rows:" + table }

    /// The format version that indexes `"deck_rows:T"` by global id (spec 20.3), so that a new
    /// record's id made from its unique values is checked against the tombstones (spec 6.10).
    static let gidIndexFormatVersion = 6

    /// `CREATE INDEX "deck_rows:T.gid" ON "deck_rows:T"(_gid)`.
    static func gidIndex(_ table: String) -> String {
        "CREATE INDEX \(quote(rowsTable(table) + ".gid")) ON \(quote(rowsTable(table)))(_gid)"
    }
    static func cellsTable(_ table: String) -> String { "deck_cells:" + table }
    static func linksTable(_ table: String) -> String { "deck_links:" + table }

    /// The columns of a hierarchy's table that hold its records' properties, in table order:
    /// each attribute's and each own to-one column, once (spec 6.1).
    static func propertyColumns(_ root: EntityMapping, mapping: SchemaMapping) -> [String] {
        var seen: Set<String> = []
        var columns: [String] = []
        for member in mapping.members[root.table] ?? [root] {
            for attribute in member.attributes where seen.insert(attribute.name).inserted {
                columns.append(attribute.name)
            }
            for (_, storage) in member.relationships {
                if case .ownColumn(let column) = storage, seen.insert(column).inserted {
                    columns.append(column)
                }
            }
        }
        return columns
    }

    /// The version of the open transaction, as the triggers read it.
    private static let current = "(SELECT clock FROM deck_clock), (SELECT writer FROM deck_clock)"

    /// The statements that create the bookkeeping of every table of `mapping`: per hierarchy, its
    /// rows and cells tables with their clock indexes and three triggers; per join table, its
    /// links table with its clock index and two triggers.
    static func statements(for mapping: SchemaMapping, formatVersion: Int = PackageLayout.formatVersion)
        -> [String]
    {
        var statements: [String] = []
        for root in mapping.roots {
            statements += tableStatements(
                root.table, columns: propertyColumns(root, mapping: mapping), formatVersion: formatVersion)
        }
        for (table, _, _) in mapping.joinTables {
            statements += joinTableStatements(table)
        }
        return statements
    }

    /// The bookkeeping of entity table `table`, whose property columns are `columns`.
    /// From version 6 (``gidIndexFormatVersion``), the tombstones are indexed by global id too.
    static func tableStatements(
        _ table: String, columns: [String], formatVersion: Int = PackageLayout.formatVersion
    ) -> [String] {
        let t = quote(table)
        let rows = quote(rowsTable(table))
        let cells = quote(cellsTable(table))
        var statements = [
            """
            CREATE TABLE \(rows)(
                _pk INTEGER PRIMARY KEY,
                _gid BLOB NOT NULL CHECK (length(_gid) = 16),
                alive INTEGER NOT NULL CHECK (alive > 0),
                clock INTEGER NOT NULL CHECK (clock >= 0),
                writer INTEGER NOT NULL
            ) STRICT
            """,
            "CREATE INDEX \(quote(rowsTable(table) + ".clock")) ON \(rows)(clock)",
            """
            CREATE TABLE \(cells)(
                _pk INTEGER NOT NULL,
                property TEXT NOT NULL,
                clock INTEGER NOT NULL CHECK (clock >= 0),
                writer INTEGER NOT NULL,
                PRIMARY KEY (_pk, property)
            ) STRICT, WITHOUT ROWID
            """,
            "CREATE INDEX \(quote(cellsTable(table) + ".clock")) ON \(cells)(clock)",
            """
            CREATE TRIGGER \(quote("deck_version:" + table + ":delete")) AFTER DELETE ON \(t) BEGIN
                INSERT INTO \(rows)(_pk, _gid, alive, clock, writer) VALUES (OLD._pk, OLD._gid, 2, \(current))
                ON CONFLICT (_pk) DO UPDATE SET _gid = excluded._gid, alive = alive + 1, clock = excluded.clock,
                    writer = excluded.writer;
            END
            """,
        ]
        if formatVersion >= Self.gidIndexFormatVersion {
            statements.insert(gidIndex(table), at: 2)
        }
        if !columns.isEmpty {
            let changed = columns.map { column in
                let c = quote(column)
                return "(\(quoteLiteral(column)), OLD.\(c) IS NOT NEW.\(c))"
            }
            statements.append(
                """
                CREATE TRIGGER \(quote("deck_version:" + table + ":update")) AFTER UPDATE ON \(t)
                WHEN NEW._pk <= coalesce((SELECT max(last) FROM deck_inserts WHERE tbl = \(quoteLiteral(table))), 0)
                BEGIN
                    INSERT INTO \(cells)(_pk, property, clock, writer)
                    SELECT NEW._pk, changed.column1, deck_clock.clock, deck_clock.writer
                    FROM (VALUES \(changed.joined(separator: ", "))) AS changed, deck_clock
                    WHERE changed.column2
                    ON CONFLICT (_pk, property) DO UPDATE SET clock = excluded.clock, writer = excluded.writer;
                END
                """)
        }
        return statements
    }

    /// The bookkeeping of join table `table`.
    static func joinTableStatements(_ table: String) -> [String] {
        let j = quote(table)
        let links = quote(linksTable(table))
        return [
            """
            CREATE TABLE \(links)(
                source INTEGER NOT NULL,
                target INTEGER NOT NULL,
                alive INTEGER NOT NULL CHECK (alive > 0),
                clock INTEGER NOT NULL CHECK (clock >= 0),
                writer INTEGER NOT NULL,
                PRIMARY KEY (source, target)
            ) STRICT, WITHOUT ROWID
            """,
            "CREATE INDEX \(quote(linksTable(table) + ".clock")) ON \(links)(clock)",
            """
            CREATE TRIGGER \(quote("deck_version:" + table + ":insert")) AFTER INSERT ON \(j) BEGIN
                INSERT INTO \(links)(source, target, alive, clock, writer)
                VALUES (NEW.source, NEW.target, 1, \(current))
                ON CONFLICT (source, target) DO UPDATE SET alive = alive + 1 - alive % 2,
                    clock = excluded.clock, writer = excluded.writer;
            END
            """,
            """
            CREATE TRIGGER \(quote("deck_version:" + table + ":delete")) AFTER DELETE ON \(j) BEGIN
                UPDATE \(links) SET alive = alive + alive % 2, (clock, writer) = (SELECT clock, writer FROM deck_clock)
                WHERE source = OLD.source AND target = OLD.target;
            END
            """,
        ]
    }

    /// Gives every link that `db` holds and that has no version the origin's version, at clock 0
    /// (spec 12.11): what an upgrade to version 5 does, and a migration for the join tables it
    /// makes anew. Records need nothing: a record in no range of `deck_inserts` has the origin's
    /// version.
    static func versionExisting(_ db: Database, mapping: SchemaMapping) throws {
        for (table, _, _) in mapping.joinTables {
            try db.execute(
                "INSERT INTO \(quote(linksTable(table)))(source, target, alive, clock, writer) "
                    + "SELECT source, target, 1, 0, \(originWriter) FROM \(quote(table)) WHERE true "
                    + "ON CONFLICT (source, target) DO NOTHING")
        }
    }

    /// What a writer runs before it commits (spec 20.3): for each entity table whose key sequence
    /// passed the greatest key `deck_inserts` covers for it, the keys between, with the
    /// transaction's version. One statement, whatever the transaction did: a table it inserted
    /// nothing into is passed over by one lookup.
    static let recordInserts = """
        INSERT INTO deck_inserts(tbl, first, last, clock, writer)
        SELECT name, covered + 1, seq, deck_clock.clock, deck_clock.writer
        FROM (SELECT s.name AS name, max(s.seq) AS seq,
                coalesce((SELECT max(i.last) FROM deck_inserts AS i WHERE i.tbl = s.name), 0) AS covered
              FROM sqlite_sequence AS s WHERE s.name NOT LIKE 'deck\\_%' ESCAPE '\\' GROUP BY s.name), deck_clock
        WHERE seq > covered
        """

    /// What an upgrade to version 5 records (spec 12.11): the keys every entity table has given
    /// out so far, as inserted by the origin.
    static let originInserts = """
        INSERT INTO deck_inserts(tbl, first, last, clock, writer)
        SELECT name, 1, max(seq), 0, 0 FROM sqlite_sequence WHERE name NOT LIKE 'deck\\_%' ESCAPE '\\'
        GROUP BY name HAVING max(seq) > 0
        """
}
