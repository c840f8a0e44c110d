import DeckSQLite
import Foundation

/// The links of a merge (spec 20.9, step 7).
enum MergeLinks {
    /// What merging one join table's links did.
    struct Outcome {
        var added = 0
        var removed = 0
        /// The pairs made or removed.
        var changed: [(source: Int64, target: Int64)] = []
        /// The links `other` holds, and wins, between a record `main` holds and one it deleted:
        /// removed with the origin's version; the delete's rule decides the other record's fate.
        var toDeleted: [(source: Int64, target: Int64, sourceDeleted: Bool)] = []
    }

    /// Gives every link of join table `table` the greater of the copies' states (counter, then
    /// version): a link `other` made or removed later is made or removed in `main`. A link to a
    /// record `main` deleted is removed, as the delete would have removed it, with the origin's
    /// version.
    static func merge(
        _ database: Database, _ table: String, source: MergeTable, target: MergeTable
    ) throws -> Outcome {
        var outcome = Outcome()
        let links = quote(VersionDDL.linksTable(table))
        let rows = try database.rows(
            """
            WITH l AS (
                SELECT coalesce(s._gid, sr._gid) AS sg, coalesce(g._gid, gr._gid) AS tg, l.alive, l.clock, w.a AS writer
                FROM other.\(links) l JOIN temp.merge_writer w ON w.b = l.writer
                LEFT JOIN other.\(source.quoted) s ON s._pk = l.source LEFT JOIN other.\(source.rows) sr ON sr._pk = l.source
                LEFT JOIN other.\(target.quoted) g ON g._pk = l.target LEFT JOIN other.\(target.rows) gr ON gr._pk = l.target
            ), k AS (
                SELECT l.*, coalesce(sa._pk, st.apk) AS asrc, coalesce(ta._pk, tt.apk) AS atgt,
                    sa._pk IS NOT NULL AND ta._pk IS NOT NULL AS bothAlive
                FROM l LEFT JOIN main.\(source.quoted) sa ON sa._gid = l.sg LEFT JOIN \(source.tombstones) st ON st.gid = l.sg
                LEFT JOIN main.\(target.quoted) ta ON ta._gid = l.tg LEFT JOIN \(target.tombstones) tt ON tt.gid = l.tg
                WHERE l.sg IS NOT NULL AND l.tg IS NOT NULL
            )
            SELECT k.asrc, k.atgt, k.alive, k.clock, k.writer, k.bothAlive, la.alive,
                EXISTS (SELECT 1 FROM main.\(source.quoted) WHERE _pk = k.asrc) AS sourceAlive
            FROM k LEFT JOIN main.\(links) la ON la.source = k.asrc AND la.target = k.atgt
            WHERE k.asrc IS NOT NULL AND k.atgt IS NOT NULL AND (la.source IS NULL
                OR (k.alive, k.clock, (SELECT writer FROM main.deck_writer WHERE id = k.writer))
                 > (la.alive, la.clock, (SELECT writer FROM main.deck_writer WHERE id = la.writer)))
            """)
        let j = quote(table)
        for row in rows {
            guard let from = row[0].int64, let to = row[1].int64, let alive = row[2].int64 else { continue }
            let pair: [SQLValue] = [.integer(from), .integer(to)]
            var state: [SQLValue] = [row[2], row[3], row[4]]
            if alive % 2 == 1 {
                if row[5].int64 == 1 {
                    try database.run("INSERT OR IGNORE INTO main.\(j)(source, target) VALUES (?, ?)", pair)
                    if database.changes > 0 {
                        outcome.added += 1
                        outcome.changed.append((from, to))
                    }
                } else {
                    // An end is deleted here: the link went with it.
                    state = [.integer(alive + 1), .integer(0), .integer(0)]
                    outcome.toDeleted.append((from, to, row[7].int64 != 1))
                }
            } else {
                try database.run("DELETE FROM main.\(j) WHERE source = ? AND target = ?", pair)
                if database.changes > 0 {
                    outcome.removed += 1
                    outcome.changed.append((from, to))
                }
            }
            try database.run(
                "INSERT INTO main.\(links)(source, target, alive, clock, writer) VALUES (?, ?, ?, ?, ?) "
                    + "ON CONFLICT (source, target) DO UPDATE SET alive = excluded.alive, clock = excluded.clock, "
                    + "writer = excluded.writer",
                pair + state)
        }
        return outcome
    }

    /// Step 7 for every join table of `mapping` (its tables in `tables`, by name), counted in
    /// `report`; the records whose links changed are marked changed. Returns the records kept
    /// at the other end of a link `other` won to a record `main` deleted, whose side of the
    /// relationship cascades: the delete did not take them (spec 20.9, step 7).
    static func mergeAll(
        _ database: Database, mapping: SchemaMapping, tables: [String: MergeTable],
        connection: StoreConnection,
        report: inout MergeReport
    ) throws -> [RecordWriter.MergeOverride] {
        var kept: [RecordWriter.MergeOverride] = []
        for (table, source, target) in mapping.joinTables {
            guard let source = tables[source], let target = tables[target] else { continue }
            let outcome = try merge(database, table, source: source, target: target)
            report.addedLinks += outcome.added
            report.removedLinks += outcome.removed
            let sides = relationships(in: table, mapping)
            for (from, to, sourceDeleted) in outcome.toDeleted {
                let (deleted, alive) = sourceDeleted ? ("source", "target") : ("target", "source")
                guard sides[deleted]?.deleteRule == .cascade else { continue }
                kept.append(
                    RecordWriter.MergeOverride(
                        table: sourceDeleted ? target.name : source.name, id: sourceDeleted ? to : from,
                        entity: (sourceDeleted ? target : source).root.name,
                        relationship: sides[alive]?.name ?? sides[deleted]?.name ?? table, rule: .cascade))
            }
            // Both ends of a link made or removed see it (the records they hold change).
            for (from, to) in outcome.changed {
                for (end, key) in [(source, from), (target, to)] {
                    if let entity = try database.scalar(
                        "SELECT _entity FROM main.\(end.quoted) WHERE _pk = ?", [.integer(key)])?.string
                    {
                        connection.changes.updated(entity, key)
                    }
                }
            }
        }
        return kept
    }

    /// The relationships join table `table` stores, by the column holding their own record's key.
    private static func relationships(in table: String, _ mapping: SchemaMapping)
        -> [String: StoreSchema.Relationship]
    {
        var sides: [String: StoreSchema.Relationship] = [:]
        for entity in mapping.entities.values {
            for (relationship, storage) in entity.relationships {
                if case .joinTable(table, let near, _) = storage { sides[near] = relationship }
            }
        }
        return sides
    }
}
