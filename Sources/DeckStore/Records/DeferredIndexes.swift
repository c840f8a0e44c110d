import DeckSQLite
import Foundation

/// The indexes of the entity tables of a package being built, taken away while its rows load
/// and made again, each in one sorted pass, once they are in: faster than keeping every index
/// (the random global ids above all) in step row by row. A unique index that cannot be made
/// again names the first two records that share its value.
///
/// Only indexes of plain columns (all Deck makes) are deferred; the join tables keep theirs, as
/// links need them. The statements made again are the ones that were there, so the schema
/// reads the same.
struct DeferredIndexes {
    private struct Index {
        let name: String
        let table: String
        let sql: String
        let isUnique: Bool
        let columns: [String]
        /// The partial index's condition (a subentity's unique constraint), if any.
        let condition: String?
    }

    private var indexes: [Index] = []

    /// Drops the indexes of `tables` (names of entity tables) and remembers them.
    static func suspend(tables: [String], in database: Database) throws(SQLiteError) -> DeferredIndexes {
        var deferred = DeferredIndexes()
        for table in tables {
            let rows = try database.rows(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL "
                    + "ORDER BY name", [.text(table)])
            for row in rows {
                guard let name = row[0].string, let sql = row[1].string else { continue }
                let info = try database.rows(
                    "SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(name)])
                let columns = info.compactMap { $0[0].string }
                guard columns.count == info.count, !columns.isEmpty else { continue }
                let condition = sql.range(of: ") WHERE ", options: .backwards).map {
                    String(sql[$0.upperBound...])
                }
                deferred.indexes.append(
                    Index(
                        name: name, table: table, sql: sql, isUnique: sql.hasPrefix("CREATE UNIQUE"),
                        columns: columns, condition: condition))
            }
        }
        for index in deferred.indexes { try database.execute("DROP INDEX \(quote(index.name))") }
        return deferred
    }

    /// Makes every suspended index again. A unique one that the rows break is an
    /// ``DeckError/invalidValue(entity:property:reason:)`` naming the record with the greater key
    /// of the first pair that shares the value.
    mutating func restore(in connection: StoreConnection) throws(DeckError) {
        let database = connection.database
        while let index = indexes.first {
            do {
                try database.execute(index.sql)
            } catch {
                guard index.isUnique, error.code == .constraintUnique,
                    let found = try duplicate(of: index, in: database, connection)
                else { throw connection.translate(error) }
                throw found
            }
            indexes.removeFirst()
        }
    }

    /// The error naming a pair of records that share the value of unique `index`.
    private func duplicate(of index: Index, in database: Database, _ connection: StoreConnection)
        throws(DeckError)
        -> DeckError?
    {
        let columns = index.columns.map(quote)
        let filter = ([index.condition].compactMap { $0 } + columns.map { "\($0) IS NOT NULL" })
            .joined(separator: " AND ")
        let sql =
            "SELECT min(_pk), max(_pk) FROM \(quote(index.table)) WHERE \(filter) GROUP BY "
            + columns.joined(separator: ", ") + " HAVING count(*) > 1 ORDER BY 2 LIMIT 1"
        do {
            guard let pair = try database.rows(sql).first, let first = pair[0].int64,
                let second = pair[1].int64,
                let entity = try database.scalar(
                    "SELECT _entity FROM \(quote(index.table)) WHERE _pk = ?", [.integer(second)])?.string
            else { return nil }
            let record = "the record with key \(second)"
            if index.columns == ["_gid"] {
                return .invalidValue(
                    entity: entity, property: "_gid",
                    reason:
                        "\(record): the record with key \(first) of table \(index.table) has the same global id"
                )
            }
            return .invalidValue(
                entity: entity, property: index.columns.joined(separator: ", "),
                reason: "\(record): another record (key \(first)) has the same value (the property is unique)"
            )
        } catch {
            throw connection.translate(error)
        }
    }
}
