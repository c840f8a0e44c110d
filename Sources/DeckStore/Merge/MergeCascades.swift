import DeckSQLite
import Foundation

/// The delete rules a merge did not follow, as repairs (spec 20.9, steps 4, 6 and 7).
///
/// A delete removes what the copy that made it held: the records that copy's delete rules took
/// with it are its tombstones, merged as any other. A record that copy did not hold in the
/// relationship (the other copy added it, or moved it there, meanwhile) is kept, its reference
/// set to null or its link removed, whatever the rule: following a `cascade` across copies would
/// delete it in one order of merging three copies and keep it in another, when a third copy
/// moved it out of the relationship.
enum MergeCascades {
    /// The repairs for `overrides`, gathered over the whole merge: a `cascade` for each record
    /// that is still there at its end (one a tombstone of the other copy deleted after all is
    /// not "kept"), a `deny` for each deleted record; each once, in the order first met.
    static func repairs(
        _ overrides: [RecordWriter.MergeOverride], _ database: Database
    ) throws -> [MergeRepair] {
        var repairs: [MergeRepair] = []
        var seen: Set<String> = []
        for override in overrides {
            let live = override.rule == .cascade
            let table = quote(live ? override.table : VersionDDL.rowsTable(override.table))
            let entity = live ? "_entity" : "NULL"
            guard
                let row = try database.rows(
                    "SELECT \(entity), _gid FROM main.\(table) WHERE _pk = ?", [.integer(override.id)]
                ).first
            else { continue }
            let gid = DocumentMerger.globalID(row[1])
            let name = row[0].string ?? override.entity
            let kind: MergeRepair.Kind = live ? .keptFromCascade : .denyOverridden
            guard seen.insert("\(kind)/\(name)/\(gid?.uuidString ?? "")/\(override.relationship)").inserted
            else { continue }
            repairs.append(
                MergeRepair(entity: name, globalID: gid, property: override.relationship, kind: kind))
        }
        return repairs
    }

    /// Sets to null every to-one cell of `main` that names a record `main` holds only as a
    /// tombstone (a `noAction` rule's dangling reference, left by a delete of either copy),
    /// keeping its version (the merge's own changes are versioned back, ``MergeVersions``):
    /// merged in either order, such a reference reads the same, and no key of a record that is
    /// gone is left. Found through the tombstones and the column's index, so the cost follows the
    /// deletes, not the size.
    static func clearDangling(_ database: Database, tables: [MergeTable], connection: StoreConnection) throws
    {
        for t in tables {
            for (column, destination) in t.columns.references {
                let c = quote(column)
                try database.forEachRow(
                    """
                    UPDATE main.\(t.quoted) AS x SET \(c) = NULL WHERE x.\(c) IN (
                        SELECT r._pk FROM main.\(quote(VersionDDL.rowsTable(destination))) r WHERE r.alive % 2 = 0
                            AND NOT EXISTS (SELECT 1 FROM main.\(quote(destination)) d WHERE d._pk = r._pk))
                    RETURNING _pk, _entity
                    """
                ) { row in connection.changes.updated(row.text(at: 1), row.int64(at: 0)) }
            }
        }
    }
}
