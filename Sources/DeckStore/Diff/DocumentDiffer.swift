import DeckSQLite
import DeckSupport
import Foundation

/// Compares the store of a connection (`main`) with the one attached to it as `other`, both of
/// the schema `mapping` maps, in SQL: SQLite joins the tables of the two stores by global id
/// (each table's unique index on `_gid` serves both sides), so the cost follows the rows, with
/// no copy of either store in memory.
struct DocumentDiffer {
    let database: Database
    let mapping: SchemaMapping
    /// The date epochs of the two stores (spec 4.2): the same for copies of one document.
    let epochs: (first: DateEpoch, second: DateEpoch)

    /// Each side, with the schema names of its store and of the other (`main` is the first).
    private static let sides: [(side: DiffSide, near: String, far: String)] = [
        (.first, "main", "other"), (.second, "other", "main"),
    ]

    /// The columns of one table: its attributes, and its to-one relationships stored as own
    /// columns with the table their targets are in.
    struct TableColumns {
        let table: String
        var attributes: [(name: String, type: StoreSchema.AttributeType)] = []
        var references: [(column: String, destination: String)] = []
    }

    func difference() throws -> DocumentDifference {
        var difference = DocumentDifference()
        for columns in tables() {
            try records(of: columns, into: &difference.records)
        }
        // By name: the order of the links in the result.
        let joinTables = mapping.joinTables.sorted { $0.table.utf8.lexicographicallyPrecedes($1.table.utf8) }
        for (table, source, target) in joinTables {
            try links(table, source: source, target: target, into: &difference.links)
        }
        try blobs(into: &difference.blobs)
        return difference
    }

    /// The entity tables in schema order of their roots, each with every column its entities
    /// have (siblings share a column, spec section 6.1).
    private func tables() -> [TableColumns] { Self.tableColumns(mapping) }

    /// The entity tables of `mapping` in schema order of their roots, each with every column
    /// its entities have.
    static func tableColumns(_ mapping: SchemaMapping) -> [TableColumns] {
        var result: [TableColumns] = []
        for root in mapping.roots {
            var columns = TableColumns(table: root.table)
            for member in mapping.members[root.table] ?? [root] {
                for attribute in member.attributes
                where !columns.attributes.contains(where: { $0.name == attribute.name }) {
                    columns.attributes.append((attribute.name, attribute.type))
                }
                for (relationship, storage) in member.relationships {
                    guard case .ownColumn(let column) = storage,
                        !columns.references.contains(where: { $0.column == column }),
                        let destination = mapping.entities[relationship.destination]
                    else { continue }
                    columns.references.append((column, destination.table))
                }
            }
            result.append(columns)
        }
        return result
    }

    /// The records of one table in one copy only, then those in both whose cells differ, merged
    /// in global-id order.
    private func records(of columns: TableColumns, into result: inout [RecordDifference]) throws {
        let table = quote(columns.table)
        var found: [(gid: [UInt8], difference: RecordDifference)] = []
        for (side, near, far) in Self.sides {
            try database.forEachRow(
                "SELECT x._gid, x._entity FROM \(near).\(table) x "
                    + "WHERE NOT EXISTS (SELECT 1 FROM \(far).\(table) y WHERE y._gid = x._gid)"
            ) { row in
                let gid = try globalID(row, 0)
                found.append(
                    (
                        Self.bytes(gid),
                        RecordDifference(entity: row.text(at: 1), globalID: gid, change: .only(side))
                    ))
            }
        }
        try changedRecords(of: columns) { difference in
            found.append((Self.bytes(difference.globalID), difference))
        }
        found.sort { $0.gid.lexicographicallyPrecedes($1.gid) }
        result += found.map(\.difference)
    }

    /// The records of one table in both copies whose entity, attributes or to-one targets differ.
    private func changedRecords(of columns: TableColumns, _ body: (RecordDifference) -> Void) throws {
        let table = quote(columns.table)
        var selected = ["x._gid", "x._entity", "y._entity"]
        var joins: [String] = []
        var differs = ["x._entity IS NOT y._entity"]
        for (name, type) in columns.attributes {
            let column = quote(name)
            selected += ["x.\(column)", "y.\(column)"]
            if type == .date, epochs.first != epochs.second {
                // Dates of two epochs: compared as seconds since 1970.
                differs.append(
                    "x.\(column) + \(epochs.first.rawValue) IS NOT y.\(column) + \(epochs.second.rawValue)")
            } else {
                differs.append("x.\(column) IS NOT y.\(column)")
            }
        }
        for (offset, (name, destination)) in columns.references.enumerated() {
            let column = quote(name)
            // A target by its global id; a dangling reference (no target) by its local key.
            joins.append("LEFT JOIN main.\(quote(destination)) rx\(offset) ON rx\(offset)._pk = x.\(column)")
            joins.append("LEFT JOIN other.\(quote(destination)) ry\(offset) ON ry\(offset)._pk = y.\(column)")
            selected += [
                "rx\(offset)._gid", "ry\(offset)._gid", "x.\(column)", "y.\(column)", "rx\(offset)._entity",
                "ry\(offset)._entity",
            ]
            differs.append(
                "rx\(offset)._gid IS NOT ry\(offset)._gid "
                    + "OR (rx\(offset)._gid IS NULL AND x.\(column) IS NOT y.\(column))")
        }
        let sql =
            "SELECT \(selected.joined(separator: ", ")) FROM main.\(table) x "
            + "JOIN other.\(table) y ON y._gid = x._gid \(joins.joined(separator: " ")) "
            + "WHERE \(differs.map { "(\($0))" }.joined(separator: " OR "))"
        try database.forEachRow(sql) { row in
            var cells: [CellDifference] = []
            let (entity, otherEntity) = (row.text(at: 1), row.text(at: 2))
            if entity != otherEntity {
                cells.append(
                    CellDifference(
                        name: "_entity", first: .value(.string(entity)), second: .value(.string(otherEntity)))
                )
            }
            var position = 3
            for (name, type) in columns.attributes {
                let (first, second) = (row.value(at: position), row.value(at: position + 1))
                position += 2
                if !same(first, second, type) {
                    cells.append(
                        CellDifference(
                            name: name, first: .value(value(first, type, .first)),
                            second: .value(value(second, type, .second))))
                }
            }
            for (name, _) in columns.references {
                let first = Self.target(
                    row.uuid(at: position), row.value(at: position + 4), key: row.value(at: position + 2))
                let second = Self.target(
                    row.uuid(at: position + 1), row.value(at: position + 5), key: row.value(at: position + 3))
                position += 6
                // The same target (by global id) is no difference here, whatever its entity.
                if !Self.sameTarget(first, second) {
                    cells.append(CellDifference(name: name, first: first, second: second))
                }
            }
            guard !cells.isEmpty else { return }
            body(RecordDifference(entity: entity, globalID: try globalID(row, 0), change: .cells(cells)))
        }
    }

    /// Whether two cells are the same as SQLite's `IS` compares them: text by its bytes (where
    /// Swift's `==` takes canonically equivalent strings as equal), numbers by value.
    private func same(_ first: SQLValue, _ second: SQLValue, _ type: StoreSchema.AttributeType) -> Bool {
        switch (first, second) {
        case (.text(let a), .text(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.real(let a), .real(let b)) where type == .date:
            return a + Double(epochs.first.rawValue) == b + Double(epochs.second.rawValue)
        default: return first == second
        }
    }

    /// A cell of the copy `side` as the record API reads it (an external blob with its size).
    private func value(_ cell: SQLValue, _ type: StoreSchema.AttributeType, _ side: DiffSide) -> Value {
        let schema = side == .first ? "main" : "other"
        return Value(sql: cell, type: type, epoch: side == .first ? epochs.first : epochs.second) { digest in
            let size = try? database.scalar(
                "SELECT size FROM \(schema).deck_blob WHERE digest = ?", [.text(digest.hexDigest)])
            if case .integer(let size)? = size { return size }
            return -1
        }
    }

    /// The global id in column `index` of `row` (16 bytes: each table's CHECK, spec 6.1).
    private func globalID(_ row: Statement, _ index: Int) throws -> UUID {
        guard let gid = row.uuid(at: index) else {
            throw DeckError.corrupt(path: database.path, reason: "a record's _gid is not 16 bytes")
        }
        return gid
    }

    /// A to-one cell: its target's global id, a dangling reference's key, or null.
    private static func target(_ gid: UUID?, _ entity: SQLValue, key: SQLValue) -> DiffCell {
        if let gid, case .text(let entity) = entity { return .record(entity: entity, globalID: gid) }
        if case .integer(let key) = key { return .missingRecord(key) }
        return .value(.null)
    }

    /// Whether two to-one cells name the same target (its global id) or are both null, or both
    /// dangle with the same key.
    private static func sameTarget(_ first: DiffCell, _ second: DiffCell) -> Bool {
        if case .record(_, let a) = first, case .record(_, let b) = second { return a == b }
        return first == second
    }

    /// The links of one join table in one copy only.
    private func links(_ table: String, source: String, target: String, into result: inout [LinkDifference])
        throws
    {
        func pairs(_ schema: String) -> String {
            "SELECT s._gid, t._gid FROM \(schema).\(quote(table)) j "
                + "JOIN \(schema).\(quote(source)) s ON s._pk = j.source "
                + "JOIN \(schema).\(quote(target)) t ON t._pk = j.target"
        }
        var found: [(key: [UInt8], difference: LinkDifference)] = []
        for (side, near, far) in Self.sides {
            try database.forEachRow("\(pairs(near)) EXCEPT \(pairs(far))") { row in
                let (from, to) = (try globalID(row, 0), try globalID(row, 1))
                found.append(
                    (
                        Self.bytes(from) + Self.bytes(to),
                        LinkDifference(relationship: table, source: from, target: to, side: side)
                    ))
            }
        }
        found.sort { $0.key.lexicographicallyPrecedes($1.key) }
        result += found.map(\.difference)
    }

    /// The blobs with references in one copy only.
    private func blobs(into result: inout [BlobDifference]) throws {
        for (side, near, far) in Self.sides {
            try database.forEachRow(
                "SELECT digest FROM \(near).deck_blob WHERE refs > 0 "
                    + "EXCEPT SELECT digest FROM \(far).deck_blob WHERE refs > 0"
            ) { row in
                result.append(BlobDifference(digest: row.text(at: 0), side: side))
            }
        }
        result.sort { $0.digest < $1.digest }
    }
}

extension DocumentDiffer {
    /// The 16 bytes of `id`, in order: sorted as SQLite sorts the BLOBs.
    static func bytes(_ id: UUID) -> [UInt8] {
        withUnsafeBytes(of: id.uuid) { Array($0) }
    }
}
