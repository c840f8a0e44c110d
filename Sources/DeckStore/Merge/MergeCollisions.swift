import DeckSQLite
import Foundation

/// Records of the two copies that meet on a unique constraint in a merge: those the other copy
/// deleted and made again (deleted first, ``deletedInTheWay(_:mapping:_:)``), and those that make
/// the merge fail (spec 20.9: refused), one in each copy, with different global ids and the same
/// values of one of the entity's unique attributes or constraints, read only after the merge
/// failed, so the full comparison costs nothing to a merge that succeeds.
enum MergeCollisions {
    /// Up to `limit` such pairs, each as `Entity a = 'x', b = 2: <gid> here, <gid> there`, read
    /// from the committed stores at `store` and `other` (package paths); empty when none is found
    /// or the stores cannot be read.
    static func describe(_ mapping: SchemaMapping, store: URL, other: URL, limit: Int = 5) -> [String] {
        guard
            let database = try? Database(
                path: store.appendingPathComponent(PackageLayout.store).path, mode: .readOnly)
        else { return [] }
        defer { database.close() }
        guard
            (try? database.attachReadOnly(other.appendingPathComponent(PackageLayout.store).path, as: "other"))
                != nil
        else { return [] }
        var found: [String] = []
        for name in mapping.entities.keys.sorted() {
            guard let entity = mapping.entities[name] else { continue }
            let declared =
                entity.entity.attributes.filter { $0.options.contains(.unique) }.map { [$0.name] }
                + entity.entity.uniqueConstraints
            let attributes = Set(entity.attributes.map(\.name))
            // Constraints of attributes only: a to-one column holds a key of its own copy.
            for columns in declared where columns.allSatisfy(attributes.contains) {
                let t = quote(entity.table)
                let tombstones = quote(VersionDDL.rowsTable(entity.table))
                let same = columns.map { "a.\(quote($0)) = b.\(quote($0))" }.joined(separator: " AND ")
                let family = entity.family.map(quoteLiteral).joined(separator: ", ")
                let sql = """
                    SELECT a._gid, b._gid, \(columns.map { "a." + quote($0) }.joined(separator: ", "))
                    FROM other.\(t) b JOIN main.\(t) a ON \(same)
                    WHERE a._gid <> b._gid AND a._entity IN (\(family))
                    AND b._gid NOT IN (SELECT _gid FROM main.\(tombstones) WHERE alive % 2 = 0)
                    AND a._gid NOT IN (SELECT _gid FROM other.\(tombstones) WHERE alive % 2 = 0)
                    ORDER BY a._gid LIMIT \(limit - found.count)
                    """
                for row in (try? database.rows(sql)) ?? [] {
                    let values = zip(columns, row.dropFirst(2)).map { "\($0) = \($1.description)" }
                    let here = DocumentMerger.globalID(row[0])?.uuidString.lowercased() ?? "-"
                    let there = DocumentMerger.globalID(row[1])?.uuidString.lowercased() ?? "-"
                    found.append("\(name) \(values.joined(separator: ", ")): \(here) here, \(there) there")
                }
                if found.count >= limit { return found }
            }
        }
        return found
    }

    /// The records of `main` that `other` deleted (spec 20.9 step 4) and that have the same
    /// values of a unique constraint of attributes as a record `other` brings (spec 6.10: made
    /// again after the delete, under the next generation's id): they must go first.
    static func deletedInTheWay(_ database: Database, mapping: SchemaMapping, _ t: MergeTable) throws -> Set<
        Int64
    > {
        var groups: Set<[String]> = []
        for name in mapping.entityNames {
            guard let entity = mapping.entities[name], entity.table == t.name else { continue }
            for key in entity.identityKeys { groups.insert(key.positions.map { entity.attributes[$0].name }) }
        }
        var keys: Set<Int64> = []
        for group in groups.sorted(by: { $0.joined(separator: "+") < $1.joined(separator: "+") }) {
            let same = group.map { "x.\(quote($0)) = y.\(quote($0))" }.joined(separator: " AND ")
            for row in try database.rows(
                """
                SELECT a.apk FROM \(t.other) b JOIN \(t.main) a ON a.gid = b.gid
                WHERE b.alive % 2 = 0 AND a.alive % 2 = 1 AND \(DocumentMerger.otherWins) AND EXISTS (
                    SELECT 1 FROM \(t.new) n JOIN other.\(t.quoted) x ON x._pk = n.bpk
                    JOIN main.\(t.quoted) y ON y._pk = a.apk WHERE \(same))
                """)
            {
                if let key = row[0].int64 { keys.insert(key) }
            }
        }
        return keys
    }
}
