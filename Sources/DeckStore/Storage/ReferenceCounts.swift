import DeckSQLite
import Foundation

/// Counts of the cells that name each blob, taken from the cells themselves. `deck_blob.refs`
/// is kept by triggers and is only as right as the store it lives in: before anything unlinks
/// a blob file, the references are counted again from the cells (spec: sections 8.2, 10.3, 10.4
/// and 10.8), so that no file a record names is ever deleted.
enum ReferenceCounts {
    /// One external-storage column of one table.
    struct Column {
        let table: String
        let column: String
    }

    /// Every external-storage column, once per table, in schema order.
    static func columns(_ mapping: SchemaMapping) -> [Column] {
        var result: [Column] = []
        var seen: Set<String> = []
        for name in mapping.entityNames {
            guard let entity = mapping.entities[name] else { continue }
            for attribute in entity.attributes where attribute.options.contains(.externalStorage) {
                if seen.insert(entity.table + "\u{0}" + attribute.name).inserted {
                    result.append(Column(table: entity.table, column: attribute.name))
                }
            }
        }
        return result
    }

    /// How many cells name each of `candidates` (a digest no cell names is absent), with one
    /// scan per external-storage column however many candidates there are.
    static func count(_ db: Database, mapping: SchemaMapping, among candidates: Set<Digest>) throws
        -> [Digest: Int64]
    {
        guard !candidates.isEmpty else { return [:] }
        // Digests are hex, so the JSON array needs no escaping; SQLite builds an index of it once.
        let list = "[" + candidates.map { "\"\($0.hexDigest)\"" }.joined(separator: ",") + "]"
        var counts: [Digest: Int64] = [:]
        for column in columns(mapping) {
            let c = quote(column.column)
            let sql =
                "SELECT \(c), count(*) FROM \(quote(column.table)) WHERE typeof(\(c)) = 'text' "
                + "AND \(c) IN (SELECT value FROM json_each(?)) GROUP BY \(c)"
            try db.forEachRow(sql, [.text(list)]) { row in
                if let digest = Digest(hex: row.text(at: 0)) {
                    counts[digest, default: 0] += row.int64(at: 1)
                }
            }
        }
        return counts
    }

    /// Every external reference: the cells of storage class TEXT in every external-storage
    /// column, counted by their text (which may not be a digest in a damaged store), with the
    /// first cell naming each, as `Table #pk.column`.
    static func countAll(_ db: Database, mapping: SchemaMapping) throws -> (
        counts: [String: Int64], firstUser: [String: String]
    ) {
        var counts: [String: Int64] = [:]
        var firstUser: [String: String] = [:]
        for column in columns(mapping) {
            let c = quote(column.column)
            let sql =
                "SELECT \(c), count(*), min(_pk) FROM \(quote(column.table)) "
                + "WHERE typeof(\(c)) = 'text' GROUP BY \(c)"
            for row in try db.rows(sql) {
                let text = row[0].string ?? ""
                counts[text, default: 0] += row[1].int64 ?? 0
                if firstUser[text] == nil {
                    firstUser[text] = "\(column.table) #\(row[2].int64 ?? 0).\(column.column)"
                }
            }
        }
        return (counts, firstUser)
    }
}
