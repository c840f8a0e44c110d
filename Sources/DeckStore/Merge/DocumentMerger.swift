import DeckSQLite
import DeckSupport
import Foundation

/// Merges the store attached to the writer's connection as `other` into the writer's store
/// (`main`), inside the writer's open transaction (spec section 20.9). Both stores are copies of
/// one document with one schema, both version 5 or later; `other` was verified and is a private snapshot,
/// so nothing it holds runs or changes while it is read.
///
/// Merging takes, for every record, cell and link, the greater of the two copies' states: the
/// greater existence counter, then the greater version (clock, then writer id bytes), then, for a
/// cell, the greater value. What `other` wins is written to `main` with `other`'s version, never
/// a new one, so that merging again changes nothing and the copies merged in either order agree.
/// What the merge must change besides (a reference to a record deleted in the other copy, a
/// link to one) it changes as a `nullify` rule would: a reference set to null keeps its version,
/// a link removed takes the origin's, the lowest there is, so any real edit wins over either. A
/// delete takes only what its copy held (``MergeCascades``).
///
/// The work follows what `other` changed, not its size: its records are read by the ranges of
/// keys `main` does not have, its bookkeeping rows (tombstones, records with own versions,
/// changed cells, links) one by one.
struct DocumentMerger {
    let connection: StoreConnection
    let mapping: SchemaMapping
    /// The other copy's blob files (content-addressed: re-hashed as they are copied).
    let otherBlobs: BlobStore
    /// Whether a common ancestor's store is attached as `ancestor`: a conflict is then a cell
    /// both copies changed from the ancestor's value, rather than one whose versions neither
    /// copy has seen (and a lost edit likewise, ``MergeLostEdits``).
    var hasAncestor = false
    var report = MergeReport()
    /// The rules a merge's deletes did not follow (``MergeCascades``): reported at its end.
    var kept: [RecordWriter.MergeOverride] = []

    private var database: Database { connection.database }

    mutating func run() throws {
        try MergeVersions.seen(database, mapping: mapping, tables: tablesOf(mapping), schema: "main")
        try internWriters()
        let tables = tablesOf(mapping)
        try MergeVersions.seen(database, mapping: mapping, tables: tables, schema: "other")
        for table in tables { try compare(table) }
        // This copy's edits that lose to the other's deletes, read before anything is deleted.
        for table in tables {
            report.lostEdits += try MergeLostEdits.here(
                database, table, epoch: connection.dateEpoch, ancestor: hasAncestor)
        }
        // From here on, a reference the merge sets to null keeps its version.
        try MergeVersions.keep(database, tables: tables)
        // The records the other copy brings come in once nothing here stands in the way of their
        // unique values: a record it deleted and made again (spec 6.10) is deleted first, and the
        // attributes of the records both hold are merged first (it renamed one and made another
        // with the old name). The result is the same in any order.
        for table in tables {
            try delete(table, only: try MergeCollisions.deletedInTheWay(database, mapping: mapping, table))
        }
        try MergeVersions.putBack(database, tables: tables)
        for table in tables { try mergeAttributes(table) }
        for table in tables { try insertNew(table) }
        for table in tables { try pointNew(table) }
        // References before deletes: a delete clears the references to the deleted record once
        // both copies' changes of the references are in (and reports the records it kept).
        for table in tables { try mergeReferences(table) }
        let byTable = Dictionary(tables.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        // Links before deletes too, for the same reason; the links the other copy made to records
        // this one deleted are removed as those deletes would have removed them.
        kept += try MergeLinks.mergeAll(
            database, mapping: mapping, tables: byTable, connection: connection, report: &report)
        for table in tables { try delete(table) }
        try MergeCascades.clearDangling(database, tables: tables, connection: connection)
        try MergeVersions.restore(database, tables: tables)
        for table in tables {
            report.lostEdits += try MergeLostEdits.there(
                database, table, epoch: connection.dateEpoch, ancestor: hasAncestor)
            try learnTombstones(table)
        }
        // The links again, with every tombstone by global id, those the deletes above made
        // included: the links of the records deleted here take their removals' versions.
        for table in tables {
            try database.execute(
                "DELETE FROM \(table.tombstones); INSERT OR IGNORE INTO \(table.tombstones)(gid, apk) "
                    + "SELECT _gid, _pk FROM main.\(table.rows) WHERE alive % 2 = 0")
        }
        kept += try MergeLinks.mergeAll(
            database, mapping: mapping, tables: byTable, connection: connection, report: &report)
        report.repairs += try MergeCascades.repairs(kept, database)
        for table in tables {
            for name in [table.other, table.main, table.new, table.candidates, table.tombstones] {
                try database.execute("DROP TABLE IF EXISTS \(name)")
            }
        }
        try database.execute(
            "DROP TABLE IF EXISTS temp.merge_writer; DROP TABLE IF EXISTS temp.merge_seen_a; "
                + "DROP TABLE IF EXISTS temp.merge_seen_b; DROP TABLE IF EXISTS temp.merge_w")
    }

    /// What errors name as their path for the other copy, replaced with its path by the caller.
    static let otherCopy = "the copy merged in"

    /// A global id read as a value (16 bytes), else nil.
    static func globalID(_ value: SQLValue?) -> UUID? {
        guard case .blob(let data)? = value, data.count == 16 else { return nil }
        return data.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }

    /// The entity tables of `mapping`, with their temporary tables' numbers.
    private func tablesOf(_ mapping: SchemaMapping) -> [MergeTable] {
        var tables: [MergeTable] = []
        for (index, columns) in DocumentDiffer.tableColumns(mapping).enumerated() {
            guard let root = mapping.roots.first(where: { $0.table == columns.table }) else { continue }
            tables.append(MergeTable(columns: columns, root: root, index: index))
        }
        return tables
    }

    // MARK: Writers and blobs

    /// Numbers in `main` every writer id `other` has that `main` lacks, and maps `other`'s
    /// numbers to `main`'s (`temp.merge_writer`).
    private func internWriters() throws {
        try database.execute(
            """
            CREATE TEMP TABLE merge_writer(b INTEGER PRIMARY KEY, a INTEGER NOT NULL);
            INSERT INTO main.deck_writer(id, writer)
            SELECT (SELECT max(id) FROM main.deck_writer) + row_number() OVER (ORDER BY o.id), o.writer
            FROM other.deck_writer o
            WHERE NOT EXISTS (SELECT 1 FROM main.deck_writer m WHERE m.writer = o.writer);
            INSERT INTO temp.merge_writer(b, a)
            SELECT o.id, m.id FROM other.deck_writer o JOIN main.deck_writer m ON m.writer = o.writer;
            """)
    }

    /// Copies the blob files that the cells `digests` selects (`digest` column) name and `main`
    /// lacks, hashing each as it is copied, and registers them: before the cells are written,
    /// so that the triggers count their references.
    private mutating func copyBlobs(_ digests: String) throws {
        let missing = try database.rows(
            "SELECT DISTINCT d.digest FROM (\(digests)) d WHERE typeof(d.digest) = 'text' "
                + "AND d.digest NOT IN (SELECT digest FROM main.deck_blob) ORDER BY d.digest")
        for row in missing {
            guard let hex = row[0].string, let digest = Digest(hex: hex) else {
                throw DeckError.corrupt(
                    path: Self.otherCopy,
                    reason: "it cannot be merged in: a cell names a blob by \(row[0]), which is no digest")
            }
            let source = otherBlobs.path(for: digest)
            guard (try? FileSystem.status(source)) ?? nil != nil else {
                throw DeckError.blobUnavailable(
                    digest: hex, reason: "the copy merged in names it and lacks its file (\(source))")
            }
            let reference = try connection.blobs.write(contentsOf: source)
            guard reference.digest == digest else {
                throw DeckError.corrupt(
                    path: source, reason: "the blob file's contents do not hash to its name")
            }
            try database.run(
                "INSERT INTO main.deck_blob(digest, size, refs) VALUES (?, ?, 0) ON CONFLICT(digest) DO NOTHING",
                [.text(hex), .integer(reference.size)])
            report.copiedBlobs += 1
        }
    }

    /// Refuses the other copy's values that `query` selects (columns: global id, entity, then
    /// the attributes `names`) unless each keeps its attribute's encoding (spec 7.1), as the
    /// verifier's cell check has them: the merge writes only values a store may hold.
    private func checkValues(_ t: MergeTable, _ names: [String], _ query: String) throws {
        var attributes: [String: Attribute] = [:]
        for member in mapping.members[t.name] ?? [t.root] {
            for attribute in member.attributes where attributes[attribute.name] == nil {
                attributes[attribute.name] = attribute
            }
        }
        var problem: String?
        try database.forEachRow(query) { row in
            guard problem == nil else { return }
            let entity = row.text(at: 1)
            guard let member = mapping.entities[entity], member.table == t.name else {
                problem =
                    "a record of table \(t.name) is of entity '\(entity)', which the table does not hold"
                return
            }
            for (offset, name) in names.enumerated() {
                guard let attribute = attributes[name] else { continue }
                if let found = CellCheck.cellProblem(
                    row.value(at: offset + 2), attribute: attribute,
                    entityHasIt: member.attribute(name) != nil,
                    dateEpoch: connection.dateEpoch)
                {
                    problem =
                        "\(entity).\(name) of record \(row.uuid(at: 0)?.uuidString.lowercased() ?? "?"): \(found)"
                    return
                }
            }
        }
        if let problem {
            throw DeckError.corrupt(path: Self.otherCopy, reason: "it cannot be merged in: \(problem)")
        }
    }

    /// Records as updated, for the store's observers, the records `query` selects (entity, key).
    private func recordUpdates(_ query: String) throws {
        try database.forEachRow(query) { row in connection.changes.updated(row.text(at: 0), row.int64(at: 1))
        }
    }

    /// The attribute columns of `t` that may name blob files (data, spec section 8).
    private func dataColumns(_ t: MergeTable) -> [String] {
        t.columns.attributes.filter { $0.type == .data }.map(\.name)
    }

    // MARK: Records

    /// The records of `other` that `main` may not know, and `main`'s state of them.
    private func compare(_ t: MergeTable) throws {
        let table = t.literal
        try database.execute(
            """
            CREATE TEMP TABLE \(t.other)(gid BLOB PRIMARY KEY, bpk INTEGER, alive INTEGER NOT NULL,
                clock INTEGER NOT NULL, writer INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TEMP TABLE \(t.main)(gid BLOB PRIMARY KEY, apk INTEGER NOT NULL, alive INTEGER NOT NULL,
                clock INTEGER NOT NULL, writer INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TEMP TABLE \(t.tombstones)(gid BLOB PRIMARY KEY, apk INTEGER NOT NULL) WITHOUT ROWID;
            INSERT OR IGNORE INTO \(t.tombstones)(gid, apk)
            SELECT _gid, _pk FROM main.\(t.rows) WHERE alive % 2 = 0;
            -- Records with a row of their own (tombstones, records a merge brought): that row.
            INSERT OR IGNORE INTO \(t.other)(gid, bpk, alive, clock, writer)
            SELECT r._gid, x._pk, r.alive, r.clock, w.a FROM other.\(t.rows) r
            JOIN temp.merge_writer w ON w.b = r.writer LEFT JOIN other.\(t.quoted) x ON x._pk = r._pk
            WHERE (r.alive % 2 = 1) = (x._pk IS NOT NULL) AND (x._pk IS NULL OR x._gid = r._gid);
            -- Records of the ranges main does not have, and of the origin's.
            INSERT OR IGNORE INTO \(t.other)(gid, bpk, alive, clock, writer)
            SELECT x._gid, x._pk, 1, u.clock, u.writer
            FROM (SELECT i.first, i.last, i.clock, w.a AS writer FROM other.deck_inserts i
                  JOIN temp.merge_writer w ON w.b = i.writer
                  WHERE i.tbl = \(table) AND (i.clock = 0 OR NOT EXISTS (
                      SELECT 1 FROM main.deck_inserts a WHERE a.tbl = i.tbl AND a.last = i.last
                      AND a.first = i.first AND a.clock = i.clock AND a.writer = w.a))) u
            JOIN other.\(t.quoted) x ON x._pk BETWEEN u.first AND u.last;
            INSERT OR IGNORE INTO \(t.other)(gid, bpk, alive, clock, writer)
            SELECT x._gid, x._pk, 1, 0, 0 FROM other.\(t.quoted) x
            WHERE x._pk > coalesce((SELECT max(last) FROM other.deck_inserts WHERE tbl = \(table)), 0);
            -- main's state of them: a record (its version) or a tombstone.
            INSERT INTO \(t.main)(gid, apk, alive, clock, writer)
            SELECT x._gid, x._pk, coalesce(r.alive, 1), coalesce(r.clock, i.clock, 0), coalesce(r.writer, i.writer, 0)
            FROM \(t.other) b JOIN main.\(t.quoted) x ON x._gid = b.gid
            LEFT JOIN main.\(t.rows) r ON r._pk = x._pk
            LEFT JOIN main.deck_inserts i ON i.tbl = \(table)
                AND i.last = (SELECT min(last) FROM main.deck_inserts WHERE tbl = \(table) AND last >= x._pk)
                AND i.first <= x._pk;
            INSERT OR IGNORE INTO \(t.main)(gid, apk, alive, clock, writer)
            SELECT r._gid, r._pk, r.alive, r.clock, r.writer FROM \(t.tombstones) d
            JOIN main.\(t.rows) r ON r._pk = d.apk JOIN \(t.other) b ON b.gid = d.gid;
            CREATE TEMP TABLE \(t.new)(gid BLOB PRIMARY KEY, bpk INTEGER NOT NULL, alive INTEGER NOT NULL,
                clock INTEGER NOT NULL, writer INTEGER NOT NULL) WITHOUT ROWID;
            INSERT INTO \(t.new) SELECT b.gid, b.bpk, b.alive, b.clock, b.writer FROM \(t.other) b
            WHERE b.alive % 2 = 1 AND NOT EXISTS (SELECT 1 FROM \(t.main) a WHERE a.gid = b.gid);
            """)
    }

    /// Whether `other`'s state of a record (`b`) is greater than `main`'s (`a`): counter, then
    /// version.
    static let otherWins = """
        (b.alive, b.clock, (SELECT writer FROM main.deck_writer WHERE id = b.writer))
        > (a.alive, a.clock, (SELECT writer FROM main.deck_writer WHERE id = a.writer))
        """

    /// Inserts the records only `other` has (their references come after, once every record
    /// is in), each with its version and its cells' versions from `other`.
    private mutating func insertNew(_ t: MergeTable) throws {
        let attributes = t.columns.attributes.map { quote($0.name) }
        let columns = (["_gid", "_entity"] + attributes).joined(separator: ", ")
        let selected = (["x._gid", "x._entity"] + attributes.map { "x." + $0 }).joined(separator: ", ")
        try checkValues(
            t, t.columns.attributes.map(\.name),
            "SELECT \(selected) FROM \(t.new) n JOIN other.\(t.quoted) x ON x._pk = n.bpk")
        for column in dataColumns(t) {
            try copyBlobs(
                "SELECT x.\(quote(column)) AS digest FROM \(t.new) n JOIN other.\(t.quoted) x ON x._pk = n.bpk"
            )
        }
        try database.run(
            "INSERT INTO main.\(t.quoted)(\(columns)) SELECT \(selected) FROM \(t.new) n "
                + "JOIN other.\(t.quoted) x ON x._pk = n.bpk ORDER BY x._pk")
        let inserted = database.changes
        guard inserted > 0 else { return }
        report.insertedRecords += inserted
        report.originDifferences += Int(
            try database.scalar("SELECT count(*) FROM \(t.new) WHERE clock = 0 AND writer = 0")?.int64 ?? 0)
        try database.execute(
            """
            INSERT INTO main.\(t.rows)(_pk, _gid, alive, clock, writer)
            SELECT x._pk, n.gid, n.alive, n.clock, n.writer FROM \(t.new) n JOIN main.\(t.quoted) x ON x._gid = n.gid;
            INSERT INTO main.\(t.cells)(_pk, property, clock, writer)
            SELECT x._pk, c.property, c.clock, w.a FROM \(t.new) n JOIN main.\(t.quoted) x ON x._gid = n.gid
            JOIN other.\(t.cells) c ON c._pk = n.bpk JOIN temp.merge_writer w ON w.b = c.writer;
            """)
        try database.forEachRow(
            "SELECT x._entity, x._pk FROM \(t.new) n JOIN main.\(t.quoted) x ON x._gid = n.gid"
        ) { row in
            connection.changes.inserted(row.text(at: 0), row.int64(at: 0 + 1))
        }
    }

    /// Sets the to-one references of the records `insertNew` brought, by their targets' global
    /// ids; one whose target `main` no longer has is repaired (``repair(_:column:keys:)``).
    private mutating func pointNew(_ t: MergeTable) throws {
        for (column, destination) in t.columns.references {
            let c = quote(column)
            let d = quote(destination)
            try database.run(
                """
                UPDATE main.\(t.quoted) AS u SET \(c) = (
                    SELECT ta._pk FROM other.\(t.quoted) xb JOIN other.\(d) tb ON tb._pk = xb.\(c)
                    JOIN main.\(d) ta ON ta._gid = tb._gid WHERE xb._gid = u._gid)
                WHERE u._gid IN (SELECT gid FROM \(t.new))
                """)
            try recordUpdates(
                "SELECT g._entity, g._pk FROM \(t.new) n JOIN main.\(t.quoted) x ON x._gid = n.gid "
                    + "JOIN main.\(d) g ON g._pk = x.\(c)")
            let dangling = try database.rows(
                """
                SELECT xa._pk FROM \(t.new) n JOIN main.\(t.quoted) xa ON xa._gid = n.gid
                JOIN other.\(t.quoted) xb ON xb._pk = n.bpk WHERE xb.\(c) IS NOT NULL AND xa.\(c) IS NULL
                """
            ).compactMap { $0[0].int64 }
            try repair(t, column: column, keys: dangling)
        }
    }

    /// Records of `main` whose reference `column` lost its target to a delete of the other copy
    /// (or never had it there): the cell is set to null, keeping its version, whatever the
    /// relationship's delete rule; a `cascade` rule is reported as not followed (step 6).
    private mutating func repair(_ t: MergeTable, column: String, keys: [Int64]) throws {
        for key in keys {
            guard
                let entity = try database.scalar(
                    "SELECT _entity FROM main.\(t.quoted) WHERE _pk = ?", [.integer(key)])?.string,
                let mapping = mapping.entities[entity]
            else { continue }
            let relationship = mapping.relationships.first {
                if case .ownColumn(let own) = $0.storage { return own == column }
                return false
            }?.relationship
            let cascades =
                relationship.flatMap { relationship in
                    relationship.inverse.flatMap { inverse in
                        self.mapping.entities[relationship.destination]?.relationship(inverse)?.relationship
                            .deleteRule
                    }
                } == .cascade
            // The cell keeps its version (restoreVersions): that of the change that made it
            // point at the deleted record.
            try database.run(
                "UPDATE main.\(t.quoted) SET \(quote(column)) = NULL WHERE _pk = ?", [.integer(key)])
            connection.changes.updated(entity, key)
            if cascades {
                kept.append(
                    .init(table: t.name, id: key, entity: entity, relationship: column, rule: .cascade))
            } else {
                let gid = try database.scalar(
                    "SELECT _gid FROM main.\(t.quoted) WHERE _pk = ?", [.integer(key)])
                report.repairs.append(
                    MergeRepair(
                        entity: entity, globalID: Self.globalID(gid), property: column, kind: .targetDeleted))
            }
        }
    }

    /// Deletes the records that `other` deleted later than `main` changed their existence (those
    /// of `only`, when given), and gives each tombstone `other`'s counter and version. No rule
    /// deletes more, and none refuses: the related records are kept, their references nulled
    /// (step 4).
    private mutating func delete(_ t: MergeTable, only: Set<Int64>? = nil) throws {
        if let only, only.isEmpty { return }
        let doomed = try database.rows(
            """
            SELECT a.apk, b.alive, b.clock, b.writer FROM \(t.other) b JOIN \(t.main) a ON a.gid = b.gid
            WHERE b.alive % 2 = 0 AND a.alive % 2 = 1 AND \(Self.otherWins)
            ORDER BY a.apk
            """)
        for row in doomed {
            guard let key = row[0].int64, only?.contains(key) ?? true else { continue }
            if try database.scalar("SELECT 1 FROM main.\(t.quoted) WHERE _pk = ?", [.integer(key)]) != nil {
                let (count, overridden) = try RecordWriter(connection).deleteMerging(key, of: t.root)
                report.deletedRecords += count
                kept += overridden
            }
            try database.run(
                "UPDATE main.\(t.rows) SET alive = ?, clock = ?, writer = ? WHERE _pk = ?",
                [row[1], row[2], row[3], .integer(key)])
        }
    }

    /// Tombstones `other` has that `main` lacks or holds with a lower state: `main` learns the
    /// delete (a copy merged later that still has the record then deletes it too).
    private mutating func learnTombstones(_ t: MergeTable) throws {
        try database.run(
            """
            UPDATE main.\(t.rows) AS r SET (alive, clock, writer) = (
                SELECT b.alive, b.clock, b.writer FROM \(t.main) a JOIN \(t.other) b ON b.gid = a.gid
                WHERE a.apk = r._pk)
            WHERE r._pk IN (SELECT a.apk FROM \(t.main) a JOIN \(t.other) b ON b.gid = a.gid
                WHERE a.alive % 2 = 0 AND b.alive % 2 = 0 AND \(Self.otherWins))
            """)
        // Tombstones of records main never had take keys of their own, given out as an insert's
        // would be (the commit's range covers them).
        let unknown =
            try database.scalar(
                "SELECT count(*) FROM \(t.other) b WHERE b.alive % 2 = 0 "
                    + "AND NOT EXISTS (SELECT 1 FROM \(t.main) a WHERE a.gid = b.gid)")?.int64 ?? 0
        guard unknown > 0 else { return }
        let first = try MergeVersions.giveOutKeys(database, table: t.name, count: unknown)
        try database.run(
            """
            INSERT INTO main.\(t.rows)(_pk, _gid, alive, clock, writer)
            SELECT ? + row_number() OVER (ORDER BY b.gid), b.gid, b.alive, b.clock, b.writer FROM \(t.other) b
            WHERE b.alive % 2 = 0 AND NOT EXISTS (SELECT 1 FROM \(t.main) a WHERE a.gid = b.gid)
            """, [.integer(first - 1)])
        report.learnedTombstones += Int(unknown)
    }

    // MARK: Cells

    /// Gives every attribute cell of a record both copies hold the greater of the two copies'
    /// versions, with its value (its to-one cells come with ``mergeReferences(_:)``, once the
    /// records `other` brings are in). The cells looked at: those `other` changed after their
    /// record's insert, and every cell of a record whose version differs between the copies or
    /// is the origin's (copies upgraded apart may hold different values under it).
    private mutating func mergeAttributes(_ t: MergeTable) throws {
        let properties = t.columns.attributes.map(\.name) + t.columns.references.map(\.column)
        guard !properties.isEmpty else { return }
        try database.execute(
            """
            CREATE TEMP TABLE \(t.candidates)(apk INTEGER NOT NULL, bpk INTEGER NOT NULL, property TEXT NOT NULL,
                clock INTEGER NOT NULL, writer INTEGER NOT NULL, edited INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (apk, property)) WITHOUT ROWID;
            INSERT OR IGNORE INTO \(t.candidates)(apk, bpk, property, clock, writer, edited)
            SELECT xa._pk, xb._pk, c.property, c.clock, w.a, 1 FROM other.\(t.cells) c
            JOIN other.\(t.quoted) xb ON xb._pk = c._pk JOIN main.\(t.quoted) xa ON xa._gid = xb._gid
            JOIN temp.merge_writer w ON w.b = c.writer
            WHERE NOT EXISTS (SELECT 1 FROM \(t.new) n WHERE n.gid = xb._gid);
            """)
        // A record whose versions differ: main's cells keep the version they have now, as rows
        // of their own, before the record's version changes.
        let values = properties.map { "(\(quoteLiteral($0)))" }.joined(separator: ", ")
        try database.execute(
            """
            DROP TABLE IF EXISTS temp.merge_d;
            CREATE TEMP TABLE merge_d AS
            SELECT a.apk, b.bpk, a.clock AS aclock, a.writer AS awriter, b.alive AS balive, b.clock AS bclock,
                b.writer AS bwriter,
                (b.alive, b.clock, (SELECT writer FROM main.deck_writer WHERE id = b.writer))
                > (a.alive, a.clock, (SELECT writer FROM main.deck_writer WHERE id = a.writer)) AS wins
            FROM \(t.main) a JOIN \(t.other) b ON b.gid = a.gid JOIN main.\(t.quoted) x ON x._pk = a.apk
            WHERE b.alive % 2 = 1 AND (b.clock = 0 OR b.clock IS NOT a.clock OR b.writer IS NOT a.writer
                OR b.alive IS NOT a.alive);
            INSERT OR IGNORE INTO \(t.candidates)(apk, bpk, property, clock, writer)
            SELECT d.apk, d.bpk, p.column1, d.bclock, d.bwriter FROM temp.merge_d d, (VALUES \(values)) p;
            INSERT OR IGNORE INTO main.\(t.cells)(_pk, property, clock, writer)
            SELECT d.apk, p.column1, d.aclock, d.awriter FROM temp.merge_d d, (VALUES \(values)) p WHERE d.wins;
            INSERT INTO main.\(t.rows)(_pk, _gid, alive, clock, writer)
            SELECT d.apk, (SELECT _gid FROM main.\(t.quoted) WHERE _pk = d.apk), d.balive, d.bclock, d.bwriter
            FROM temp.merge_d d WHERE d.wins
            ON CONFLICT (_pk) DO UPDATE SET alive = excluded.alive, clock = excluded.clock, writer = excluded.writer;
            DROP TABLE temp.merge_d;
            """)
        for (name, _) in t.columns.attributes {
            try mergeCell(t, property: name, value: { "\($0).\(quote(name))" }, joins: { _ in "" })
        }
    }

    /// The to-one cells of the records both copies hold, as ``mergeAttributes(_:)`` merges their
    /// attributes (its candidates), by their targets' global ids.
    private mutating func mergeReferences(_ t: MergeTable) throws {
        for (column, destination) in t.columns.references {
            let d = quote(destination)
            // The other copy's target counts as null unless this copy holds it: a reference to a
            // record deleted here is null once merged (step 6), whatever its version.
            try mergeCell(
                t, property: column,
                value: { side in
                    side == "xb"
                        ? "(SELECT g._gid FROM main.\(d) g WHERE g._gid = xbt._gid)" : "\(side)t._gid"
                },
                joins: { side in
                    "LEFT JOIN \(MergeValues.schemas[side] ?? "main").\(d) \(side)t ON \(side)t._pk = \(side).\(quote(column))"
                })
        }
    }

    /// Writes the cells of `property` whose version in `other` wins over `main`'s: greater
    /// version, or the same version and a greater value (`value` of a side's row alias; to-one
    /// cells compare their targets' global ids).
    private mutating func mergeCell(
        _ t: MergeTable, property: String, value: (String) -> String, joins: (String) -> String
    ) throws {
        let p = quoteLiteral(property)
        // main's version of the cell: its row, else its record's.
        let recordVersion = { (field: String) in
            """
            coalesce(ca.\(field), ar.\(field), (SELECT CASE WHEN first <= m.apk THEN \(field) END
                FROM main.deck_inserts WHERE tbl = \(t.literal) AND last >= m.apk ORDER BY last LIMIT 1), 0)
            """
        }
        let (va, vb, vo) = (value("xa"), value("xb"), value("xo"))
        // Each change made after the copies parted: not seen by the other copy; with an
        // ancestor, each that left a value other than the ancestor's (of a record the ancestor
        // has: for others, the versions tell).
        let unseen =
            "w.aclock > coalesce((SELECT clock FROM temp.merge_seen_b WHERE writer = w.awriter), -1) "
            + "AND w.clock > coalesce((SELECT clock FROM temp.merge_seen_a WHERE writer = w.writer), -1)"
        let bothChanged =
            hasAncestor
            ? "CASE WHEN xo._gid IS NOT NULL THEN \(va) IS NOT \(vo) AND \(vb) IS NOT \(vo) END" : "NULL"
        let ancestorJoins =
            hasAncestor ? "LEFT JOIN ancestor.\(t.quoted) xo ON xo._gid = xa._gid \(joins("xo"))" : ""
        try database.execute(
            """
            DROP TABLE IF EXISTS temp.merge_w;
            CREATE TEMP TABLE merge_w AS
            SELECT m.apk, m.bpk, m.clock, m.writer, \(va) IS NOT \(vb) AS differs,
                ca.clock IS NOT NULL AS edited, ca.clock AS aclock, ca.writer AS awriter, m.edited AS otherEdited,
                \(bothChanged) AS bothChanged,
                \(recordVersion("clock")) = 0 AND \(recordVersion("writer")) = 0 AND m.clock = 0 AND m.writer = 0
                    AS originTie,
                (m.clock, (SELECT writer FROM main.deck_writer WHERE id = m.writer), \(vb) IS NOT NULL, \(vb) COLLATE BINARY)
                > (\(recordVersion("clock")), (SELECT writer FROM main.deck_writer WHERE id = \(recordVersion("writer"))),
                   \(va) IS NOT NULL, \(va)) AS wins
            FROM \(t.candidates) m JOIN main.\(t.quoted) xa ON xa._pk = m.apk
            JOIN other.\(t.quoted) xb ON xb._pk = m.bpk
            LEFT JOIN main.\(t.cells) ca ON ca._pk = m.apk AND ca.property = \(p)
            LEFT JOIN main.\(t.rows) ar ON ar._pk = m.apk
            \(joins("xa")) \(joins("xb")) \(ancestorJoins)
            WHERE m.property = \(p) AND (differs OR wins);
            """)
        // Changes of both copies that differ: the one that loses is reported.
        for row in try database.rows(
            "SELECT x._entity, w.apk, w.bpk, x._gid, w.wins FROM temp.merge_w w "
                + "JOIN main.\(t.quoted) x ON x._pk = w.apk "
                + "WHERE w.differs AND w.edited AND w.otherEdited "
                + "AND coalesce(w.bothChanged, \(unseen)) "
                + "ORDER BY x._gid")
        {
            guard let apk = row[1].int64, let bpk = row[2].int64 else { continue }
            let here = try MergeValues.cell(database, t, property, "main", apk, epoch: connection.dateEpoch)
            let there = try MergeValues.cell(database, t, property, "other", bpk, epoch: connection.dateEpoch)
            let wins = row[4].int64 == 1
            report.conflicts.append(
                MergeConflict(
                    entity: row[0].string ?? "", globalID: Self.globalID(row[3]), property: property,
                    kept: wins ? there : here, lost: wins ? here : there, lostHere: wins))
        }
        report.originDifferences += Int(
            try database.scalar("SELECT count(*) FROM temp.merge_w WHERE differs AND originTie")?.int64 ?? 0)
        try database.execute("DELETE FROM temp.merge_w WHERE NOT wins")
        let winners = try database.scalar("SELECT count(*) FROM temp.merge_w")?.int64 ?? 0
        guard winners > 0 else { return }
        try applyWinners(t, property: property)
    }

    /// Writes the cells of `property` listed in `temp.merge_w` (``mergeCell(_:property:value:joins:)``)
    /// with `other`'s values and versions, reporting those `main` had changed too.
    private mutating func applyWinners(_ t: MergeTable, property: String) throws {
        let p = quoteLiteral(property)
        let c = quote(property)
        if let reference = t.columns.references.first(where: { $0.column == property }) {
            let d = quote(reference.destination)
            // The records pointed at before and after see the change (their to-many side).
            let targets =
                "SELECT g._entity, g._pk FROM temp.merge_w w JOIN main.\(t.quoted) x ON x._pk = w.apk "
                + "JOIN main.\(d) g ON g._pk = x.\(c) WHERE w.differs"
            try recordUpdates(targets)
            try database.run(
                """
                UPDATE main.\(t.quoted) AS u SET \(c) = (
                    SELECT ta._pk FROM temp.merge_w w JOIN other.\(t.quoted) xb ON xb._pk = w.bpk
                    JOIN other.\(d) tb ON tb._pk = xb.\(c) JOIN main.\(d) ta ON ta._gid = tb._gid
                    WHERE w.apk = u._pk)
                WHERE u._pk IN (SELECT apk FROM temp.merge_w WHERE differs)
                """)
            try recordUpdates(targets)
        } else {
            try checkValues(
                t, [property],
                "SELECT xb._gid, xb._entity, xb.\(c) FROM temp.merge_w w JOIN other.\(t.quoted) xb ON xb._pk = w.bpk "
                    + "WHERE w.differs")
            if dataColumns(t).contains(property) {
                try copyBlobs(
                    "SELECT xb.\(c) AS digest FROM temp.merge_w w JOIN other.\(t.quoted) xb ON xb._pk = w.bpk "
                        + "WHERE w.differs")
            }
            try database.run(
                """
                UPDATE main.\(t.quoted) AS u SET \(c) = (
                    SELECT xb.\(c) FROM temp.merge_w w JOIN other.\(t.quoted) xb ON xb._pk = w.bpk WHERE w.apk = u._pk)
                WHERE u._pk IN (SELECT apk FROM temp.merge_w WHERE differs)
                """)
        }
        report.changedCells += Int(
            try database.scalar("SELECT count(*) FROM temp.merge_w WHERE differs")?.int64 ?? 0)
        try database.run(
            """
            INSERT INTO main.\(t.cells)(_pk, property, clock, writer)
            SELECT apk, \(p), clock, writer FROM temp.merge_w WHERE true
            ON CONFLICT (_pk, property) DO UPDATE SET clock = excluded.clock, writer = excluded.writer
            """)
        try database.forEachRow(
            "SELECT x._entity, x._pk FROM temp.merge_w w JOIN main.\(t.quoted) x ON x._pk = w.apk WHERE w.differs"
        ) { row in
            connection.changes.updated(row.text(at: 0), row.int64(at: 1))
        }
        if t.columns.references.contains(where: { $0.column == property }) {
            let dangling = try database.rows(
                """
                SELECT w.apk FROM temp.merge_w w JOIN main.\(t.quoted) xa ON xa._pk = w.apk
                JOIN other.\(t.quoted) xb ON xb._pk = w.bpk WHERE xb.\(c) IS NOT NULL AND xa.\(c) IS NULL
                """
            ).compactMap { $0[0].int64 }
            try repair(t, column: property, keys: dangling)
        }
    }

}
