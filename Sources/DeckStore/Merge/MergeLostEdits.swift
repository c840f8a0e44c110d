import DeckSQLite
import Foundation

/// Edits that lost to a delete the other copy made meanwhile (spec 20.9): the delete wins, and
/// the edits it overrode are reported with their values, read before they go.
///
/// An edit counts when it was made since the copies parted: its version is one the other copy
/// has not seen; with a common ancestor attached (`ancestor`), it left a value other than the
/// ancestor's, for a record the ancestor has.
enum MergeLostEdits {
    /// The cells this copy changed since the copies parted of its records that the other copy's
    /// delete is about to delete: read before any delete runs, since a delete in one table
    /// clears the references to it in others.
    static func here(_ database: Database, _ t: MergeTable, epoch: DateEpoch, ancestor: Bool) throws
        -> [MergeLostEdit]
    {
        let rows = try database.rows(
            """
            SELECT x._entity, x._gid, c.property, x._pk,
                c.clock > coalesce((SELECT clock FROM temp.merge_seen_b WHERE writer = c.writer), -1) AS unseen,
                \(ancestorKey(t, ancestor))
            FROM \(t.other) b JOIN \(t.main) a ON a.gid = b.gid
            JOIN main.\(t.quoted) x ON x._pk = a.apk JOIN main.\(t.cells) c ON c._pk = a.apk
            WHERE b.alive % 2 = 0 AND a.alive % 2 = 1 AND \(DocumentMerger.otherWins)
            \(ancestor ? "" : "AND unseen")
            ORDER BY x._gid, c.property
            """)
        return try edits(rows, database, t, in: "main", epoch: epoch)
    }

    /// The cells the other copy changed since the copies parted of records it holds and this
    /// copy deleted: its edits that lose to this copy's delete.
    static func there(_ database: Database, _ t: MergeTable, epoch: DateEpoch, ancestor: Bool) throws
        -> [MergeLostEdit]
    {
        // From this copy's tombstones: the other copy's records are not all read.
        let rows = try database.rows(
            """
            SELECT x._entity, x._gid, c.property, x._pk,
                c.clock > coalesce((SELECT clock FROM temp.merge_seen_a WHERE writer = w.a), -1) AS unseen,
                \(ancestorKey(t, ancestor))
            FROM \(t.tombstones) d
            CROSS JOIN other.\(t.quoted) x ON x._gid = d.gid
            JOIN other.\(t.cells) c ON c._pk = x._pk JOIN temp.merge_writer w ON w.b = c.writer
            \(ancestor ? "" : "WHERE unseen")
            ORDER BY x._gid, c.property
            """)
        return try edits(rows, database, t, in: "other", epoch: epoch)
    }

    /// The key in the ancestor of the record of row alias `x`, else null.
    private static func ancestorKey(_ t: MergeTable, _ ancestor: Bool) -> String {
        ancestor ? "(SELECT o._pk FROM ancestor.\(t.quoted) o WHERE o._gid = x._gid)" : "NULL"
    }

    /// The edits of `rows` (entity, global id, property, key in `schema`, whether the version is
    /// unseen, key in the ancestor), with their values read from `schema`: `main` for this
    /// copy's edits, `other` for the other copy's. A record the ancestor has: the edits whose
    /// value is not the ancestor's.
    private static func edits(
        _ rows: [[SQLValue]], _ database: Database, _ t: MergeTable, in schema: String, epoch: DateEpoch
    ) throws -> [MergeLostEdit] {
        try rows.compactMap { row in
            guard let property = row[2].string, let key = row[3].int64 else { return nil }
            let value = try MergeValues.cell(database, t, property, schema, key, epoch: epoch)
            if let original = row[5].int64 {
                let before = try MergeValues.cell(database, t, property, "ancestor", original, epoch: epoch)
                guard value != before else { return nil }
            } else if row[4].int64 != 1 {
                return nil
            }
            return MergeLostEdit(
                entity: row[0].string ?? "", globalID: DocumentMerger.globalID(row[1]), property: property,
                lost: value, lostHere: schema == "main")
        }
    }
}
