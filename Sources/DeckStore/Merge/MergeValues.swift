import DeckSQLite
import Foundation

/// Values a merge reads to report them (spec 20.9).
enum MergeValues {
    /// The schema of each side's row alias in the cell merge: this copy, the other, the ancestor.
    static let schemas = ["xa": "main", "xb": "other", "xo": "ancestor"]

    /// Cell `property` of record `key` of the copy `schema` (`main` or `other`), as a difference
    /// gives it.
    static func cell(
        _ database: Database, _ t: MergeTable, _ property: String, _ schema: String, _ key: Int64,
        epoch: DateEpoch
    ) throws -> DiffCell {
        if let reference = t.columns.references.first(where: { $0.column == property }) {
            let row = try database.rows(
                "SELECT d._entity, d._gid, x.\(quote(property)) FROM \(schema).\(t.quoted) x "
                    + "LEFT JOIN \(schema).\(quote(reference.destination)) d ON d._pk = x.\(quote(property)) "
                    + "WHERE x._pk = ?", [.integer(key)]
            ).first
            if let row, let entity = row[0].string, let gid = DocumentMerger.globalID(row[1]) {
                return .record(entity: entity, globalID: gid)
            }
            if let missing = row?[2].int64 { return .missingRecord(missing) }
            return .value(.null)
        }
        guard let type = t.columns.attributes.first(where: { $0.name == property })?.type,
            let sql = try database.rows(
                "SELECT \(quote(property)) FROM \(schema).\(t.quoted) WHERE _pk = ?", [.integer(key)]
            ).first?[0]
        else { return .value(.null) }
        return .value(
            Value(sql: sql, type: type, epoch: epoch) { digest in
                (try? database.scalar(
                    "SELECT size FROM \(schema).deck_blob WHERE digest = ?", [.text(digest.hexDigest)]))??
                    .int64 ?? -1
            })
    }
}
