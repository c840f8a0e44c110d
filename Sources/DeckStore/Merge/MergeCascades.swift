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
}
