import DeckSQLite
import Foundation

/// Edits that lost to a delete the other copy made meanwhile (spec 20.9): the delete wins, and
/// the edits it overrode are reported with their values, read before they go.
enum MergeLostEdits {
    /// The cells this copy changed since the copies parted (versions the other copy has not
    /// seen) of its records that the other copy's delete is about to delete: read before any
    /// delete runs, since a delete in one table cascades into others.
    static func here(_ database: Database, _ t: MergeTable, epoch: DateEpoch) throws -> [MergeLostEdit] {
        let rows = try database.rows(
            """
            SELECT x._entity, x._gid, c.property, x._pk FROM \(t.other) b JOIN \(t.main) a ON a.gid = b.gid
            JOIN main.\(t.quoted) x ON x._pk = a.apk JOIN main.\(t.cells) c ON c._pk = a.apk
            WHERE b.alive % 2 = 0 AND a.alive % 2 = 1 AND \(DocumentMerger.otherWins)
            AND c.clock > coalesce((SELECT clock FROM temp.merge_seen_b WHERE writer = c.writer), -1)
            ORDER BY x._gid, c.property
            """)
        return try edits(rows, database, t, in: "main", epoch: epoch)
    }

    /// The cells the other copy changed since the copies parted (versions this copy has not
    /// seen) of records it holds and this copy deleted: its edits that lose to this copy's delete.
    static func there(_ database: Database, _ t: MergeTable, epoch: DateEpoch) throws -> [MergeLostEdit] {
        // From this copy's tombstones: the other copy's records are not all read.
        let rows = try database.rows(
            """
            SELECT x._entity, x._gid, c.property, x._pk FROM \(t.tombstones) d
            CROSS JOIN other.\(t.quoted) x ON x._gid = d.gid
            JOIN other.\(t.cells) c ON c._pk = x._pk JOIN temp.merge_writer w ON w.b = c.writer
            WHERE c.clock > coalesce((SELECT clock FROM temp.merge_seen_a WHERE writer = w.a), -1)
            ORDER BY x._gid, c.property
            """)
        return try edits(rows, database, t, in: "other", epoch: epoch)
    }

    /// The edits of `rows` (entity, global id, property, key in `schema`), with their values
    /// read from `schema`: `main` for this copy's edits, `other` for the other copy's.
    private static func edits(
        _ rows: [[SQLValue]], _ database: Database, _ t: MergeTable, in schema: String, epoch: DateEpoch
    ) throws -> [MergeLostEdit] {
        try rows.compactMap { row in
            guard let property = row[2].string, let key = row[3].int64 else { return nil }
            return MergeLostEdit(
                entity: row[0].string ?? "", globalID: DocumentMerger.globalID(row[1]), property: property,
                lost: try MergeValues.cell(database, t, property, schema, key, epoch: epoch),
                lostHere: schema == "main")
        }
    }
}
