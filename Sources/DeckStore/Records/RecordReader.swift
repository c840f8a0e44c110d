import CSQLite
import DeckSQLite
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The record API's reads (fetch, with rows, cursors or records; ids; counts; one record by id
/// or global id; related ids, one record's or many records' at once) on one connection, a
/// reader's or the writer's: it borrows the connection for one call (`RecordReader(connection)
/// .fetch(…)`), as ``StoreReader`` makes it.
struct RecordReader {
    /// The connection, for the length of the call.
    let connection: StoreConnection

    init(_ connection: StoreConnection) { self.connection = connection }

    private var database: Database { connection.database }
    private var dateEpoch: DateEpoch { connection.dateEpoch }
    private var formatVersion: Int { connection.formatVersion }

    /// The ids related to record `id` (of a table `table`) through a relationship's storage, whose
    /// destination is `destination` (spec section 9.1).
    func relatedIDs(_ id: Int64, storage: RelationshipStorage, table: String, destination: EntityMapping)
        throws -> [Int64]
    {
        let sql: String
        switch storage {
        case .ownColumn(let column):
            sql =
                "SELECT \(quote(column)) FROM \(quote(table)) WHERE _pk = ? AND \(quote(column)) IS NOT NULL"
        case .inverseColumn(let other, let column):
            // Only the destination's records: sibling entities may share the column.
            let family = destination.familyCondition(nil).map { " AND " + $0 } ?? ""
            sql = "SELECT _pk FROM \(quote(other)) WHERE \(quote(column)) = ?\(family) ORDER BY _pk"
        case .joinTable(let join, let near, let far):
            sql = "SELECT \(far) FROM \(quote(join)) WHERE \(near) = ? ORDER BY \(far)"
        }
        return try database.rows(sql, [.integer(id)]).compactMap { $0.first?.int64 }
    }

    /// The ids relationship `relationship` of each of records `ids` of `entity` holds, in one
    /// statement however many there are (the ids go in as one JSON array).
    func related(_ entity: String, ids: [Int64], _ relationship: String) throws(DeckError) -> [Int64: [Int64]]
    {
        let mapping = try connection.mapping.entity(entity)
        guard let (found, storage) = mapping.relationship(relationship) else {
            throw DeckError.unknownProperty(entity: entity, name: relationship, known: mapping.propertyNames)
        }
        let list = "(SELECT value FROM json_each(?))"
        do {
            let destination = try connection.mapping.entity(found.destination)
            let sql: String
            switch storage {
            case .ownColumn(let column):
                sql =
                    "SELECT _pk, \(quote(column)) FROM \(quote(mapping.table)) WHERE _pk IN \(list) "
                    + "AND \(quote(column)) IS NOT NULL"
            case .inverseColumn(let other, let column):
                let family = destination.familyCondition(nil).map { " AND " + $0 } ?? ""
                sql =
                    "SELECT \(quote(column)), _pk FROM \(quote(other)) WHERE \(quote(column)) IN \(list)\(family) "
                    + "ORDER BY _pk"
            case .joinTable(let join, let near, let far):
                sql = "SELECT \(near), \(far) FROM \(quote(join)) WHERE \(near) IN \(list) ORDER BY \(far)"
            }
            let json = "[" + ids.map(String.init).joined(separator: ",") + "]"
            var result: [Int64: [Int64]] = [:]
            for row in try database.rows(sql, [.text(json)]) {
                guard let owner = row[0].int64, let target = row[1].int64 else { continue }
                result[owner, default: []].append(target)
            }
            return result
        } catch {
            throw connection.translate(error)
        }
    }

    /// The records `query` matches.
    func fetch(_ query: RecordQuery) throws(DeckError) -> [Record] {
        var records: [Record] = []
        try forEach(query) { records.append($0) }
        return records
    }

    /// Calls `body` for each record `query` matches, without collecting them all.
    func forEach(_ query: RecordQuery, _ body: (Record) throws -> Void) throws(DeckError) {
        try forEachRow(query) { row in
            var values: [String: Value] = [:]
            values.reserveCapacity(row.cells.count)
            for (name, cell) in zip(row.names, row.cells) { values[name] = cell }
            try body(Record(entity: row.entity, id: row.id, values: values, globalID: row.globalID))
        }
    }

    /// Calls `body` for each record `query` matches, with its values in the order of the
    /// entity's attributes then to-one relationships (``StoreRow/names``): no dictionary per row.
    func forEachRow(_ query: RecordQuery, _ body: (StoreRow) throws -> Void) throws(DeckError) {
        try forEachCursor(query) { cursor in try body(cursor.row) }
    }

    /// Calls `body` for each record `query` matches, with a cursor on it (see ``RowCursor``).
    func forEachCursor(_ query: RecordQuery, _ body: (RowCursor) throws -> Void) throws(DeckError) {
        let mapping = try connection.mapping.entity(query.entity)
        // What to read for each entity the query can return (``readLayout(members:onlyEntity:)``).
        let members = query.includesSubentities ? mapping.family : [mapping.name]
        // A table that holds one entity's records needs no entity name per row: its rows are all
        // that entity's (a row naming another, which only a damaged store holds and `deck verify`
        // reports as entity-unknown, is read as this entity's). Not reading the name keeps it out
        // of the sorter's records and saves a comparison per row.
        let onlyEntity =
            members == [mapping.name] && connection.mapping.members[mapping.table]?.count == 1
            ? mapping.name : nil
        let layout = readLayout(members: members, onlyEntity: onlyEntity)
        let (columns, positions, layouts) = (layout.columns, layout.positions, layout.layouts)
        var query = query
        let sortColumns = callerSortColumns(query, mapping: mapping, positions: positions)
        if sortColumns != nil { query.sort = [] }
        let (sql, arguments) = try selectSQL(
            query, mapping: mapping, columns: columns.joined(separator: ", "))
        var sizes: [Digest: Int64] = [:]
        func blobSize(_ digest: Digest) -> Int64 {
            if let size = sizes[digest] { return size }
            let size =
                (try? database.scalar(
                    "SELECT size FROM deck_blob WHERE digest = ?", [.text(digest.hexDigest)]))??.int64 ?? -1
            sizes[digest] = size
            return size
        }
        do {
            let statement = try prepareQuery { () throws(SQLiteError) in try database.takeQueryStatement(sql)
            }
            defer { database.returnQueryStatement(statement) }
            try statement.bind(arguments)
            // The terms of the order follow the columns asked for (QueryCompiler.select).
            let cursor = RowCursor(
                statement: statement, readsGlobalIDs: formatVersion >= 2,
                positionColumns: query.readsPositions ? columns.count..<statement.columnCount : nil,
                sortColumns: sortColumns, dateEpoch: dateEpoch, blobSize: blobSize)
            var last: (entity: String, names: [String], readers: [ColumnReader]) = ("", [], [])
            var first = true
            while try statement.step() {
                // Rows of one entity come in runs: its name is compared in place, and read as a
                // string only when it connection.changes.
                if first || (onlyEntity == nil && !statement.textEquals(&last.entity, at: 1)) {
                    first = false
                    let entityName = onlyEntity ?? statement.text(at: 1)
                    let layout = layouts[entityName] ?? ([], [])
                    last = (entityName, layout.names, layout.readers)
                    cursor.move(entity: last.entity, names: last.names, readers: last.readers)
                } else {
                    cursor.advance()
                }
                try body(cursor)
            }
        } catch {
            throw connection.translate(error)
        }
    }

    /// How a value is read: its result column, and only its attribute's type (copying the whole
    /// attribute for every cell costs more than reading it); nil for a to-one relationship.
    typealias ColumnReader = (column: Int, type: AttributeType?)

    /// The result columns of a query of `members` (the record id, the entity name unless
    /// `onlyEntity` makes it needless, the global id from format version 2 on, then one column per
    /// distinct column expression), their positions by expression, and for each entity the names
    /// of its values (``StoreRow/names``) and how each is read. Siblings can give one name
    /// different storage (an attribute in one, a to-one relationship in another), so each entity
    /// has its own list.
    func readLayout(members: [String], onlyEntity: String?) -> (
        columns: [String], positions: [String: Int],
        layouts: [String: (names: [String], readers: [ColumnReader])]
    ) {
        var columns =
            ["r._pk", onlyEntity == nil ? "r._entity" : "NULL"] + (formatVersion >= 2 ? ["r._gid"] : [])
        var positions: [String: Int] = [:]
        func column(_ expression: String) -> Int {
            if let known = positions[expression] { return known }
            columns.append(expression)
            positions[expression] = columns.count - 1
            return columns.count - 1
        }
        var layouts: [String: (names: [String], readers: [ColumnReader])] = [:]
        for member in members.compactMap({ connection.mapping.entities[$0] }) {
            var names: [String] = []
            var list: [ColumnReader] = []
            for attribute in member.attributes {
                names.append(attribute.name)
                list.append((column("r.\(quote(attribute.name))"), attribute.type))
            }
            for (relationship, storage) in member.relationships where !relationship.isToMany {
                guard let expression = toOneExpression(relationship, storage) else { continue }
                names.append(relationship.name)
                list.append((column(expression), nil))
            }
            layouts[member.name] = (names, list)
        }
        return (columns, positions, layouts)
    }

    /// The expression of the id a to-one relationship of the record `r` holds; nil for a join
    /// table's (read apart).
    func toOneExpression(_ relationship: Relationship, _ storage: RelationshipStorage) -> String? {
        switch storage {
        case .ownColumn(let name): return "r.\(quote(name))"
        case .inverseColumn(let table, let name):
            // Only the destination's records: sibling entities may share the column.
            let family =
                connection.mapping.entities[relationship.destination]?.familyCondition("u").map {
                    " AND " + $0
                }
                ?? ""
            return
                "(SELECT u._pk FROM \(quote(table)) u WHERE u.\(quote(name)) = r._pk\(family) "
                + "ORDER BY u._pk LIMIT 1)"
        case .joinTable: return nil
        }
    }

    /// The result columns of `query`'s sort keys, with their directions, when the caller orders
    /// the rows (``RecordQuery/lettingCallerOrder``, ``RowOrder``): a query of every matching
    /// record, sorted by number attributes of the record itself. `positions` gives the result
    /// column of each column expression.
    private func callerSortColumns(_ query: RecordQuery, mapping: EntityMapping, positions: [String: Int])
        -> [(column: Int32, ascending: Bool)]?
    {
        guard query.lettingCallerOrder, !query.sort.isEmpty, query.sort.count <= RecordQuery.Limits.sortKeys,
            query.limit == nil, query.offset == 0, query.after == nil, !query.readsPositions
        else { return nil }
        var columns: [(column: Int32, ascending: Bool)] = []
        for key in query.sort {
            guard key.folding == .exact, case .path(let path) = key.expression, path.variable == nil,
                path.names.count == 1, let attribute = mapping.attribute(path.names[0]),
                [.integer, .double, .date, .bool].contains(attribute.type),
                let column = positions["r.\(quote(attribute.name))"]
            else { return nil }
            columns.append((Int32(column), key.ascending))
        }
        return columns
    }

    /// The ids of the records `query` matches, in order.
    func fetchIDs(_ query: RecordQuery) throws(DeckError) -> [Int64] {
        let mapping = try connection.mapping.entity(query.entity)
        let (sql, arguments) = try selectSQL(query, mapping: mapping, columns: "r._pk")
        let statement = try prepareQuery { () throws(SQLiteError) in try database.prepare(sql) }
        do {
            try statement.bind(arguments)
            var ids: [Int64] = []
            while try statement.step() { ids.append(statement.int64(at: 0)) }
            return ids
        } catch {
            throw connection.translate(error)
        }
    }

    /// How many records `query` matches (its window applies).
    func count(_ query: RecordQuery) throws(DeckError) -> Int {
        let mapping = try connection.mapping.entity(query.entity)
        let (sql, arguments) = try selectSQL(query, mapping: mapping, columns: "1")
        let statement = try prepareQuery { () throws(SQLiteError) in
            try database.cachedStatement("SELECT count(*) FROM (\(sql))")
        }
        do {
            try statement.bind(arguments)
            defer { statement.reset() }
            return Int(try statement.step() ? statement.int64(at: 0) : 0)
        } catch {
            throw connection.translate(error)
        }
    }

    /// One record by id, or nil.
    func record(_ entity: String, id: Int64) throws(DeckError) -> Record? {
        try fetch(RecordQuery(entity, where: .recordID.equals(.value(.integer(id))), limit: 1)).first
    }

    /// The record of `entity` (or one of its subentities) whose global id is `globalID`, or nil.
    func recordID(_ entity: String, globalID: UUID) throws(DeckError) -> Int64? {
        let mapping = try connection.mapping.entity(entity)
        guard formatVersion >= 2 else { return nil }
        let family = mapping.familyCondition(nil).map { " AND " + $0 } ?? ""
        do {
            return try database.prepareAndCollect(
                "SELECT _pk FROM \(quote(mapping.table)) WHERE _gid = ?\(family)",
                [.blob(GlobalID.bytes(globalID))]
            ) { $0.int64(at: 0) }.first
        } catch {
            throw connection.translate(error)
        }
    }

    /// The ids a relationship of record `id` holds (to-one: zero or one).
    func related(_ entity: String, id: Int64, _ relationship: String) throws(DeckError) -> [Int64] {
        let mapping = try connection.mapping.entity(entity)
        guard let (found, storage) = mapping.relationship(relationship) else {
            throw DeckError.unknownProperty(
                entity: entity, name: relationship,
                known: mapping.propertyNames)
        }
        do {
            let destination = try connection.mapping.entity(found.destination)
            return try relatedIDs(id, storage: storage, table: mapping.table, destination: destination)
        } catch {
            throw connection.translate(error)
        }
    }

    private func selectSQL(_ query: RecordQuery, mapping: EntityMapping, columns: String) throws(DeckError)
        -> (
            String, [SQLValue]
        )
    {
        var compiler = QueryCompiler(mapping: connection.mapping, entity: mapping, dateEpoch: dateEpoch)
        return try compiler.select(query, columns: columns)
    }

    /// The statement of a query the compiler built, from `prepare`. SQLite refuses to prepare
    /// such a statement only when it goes past one of SQLite's limits (the depth of an
    /// expression, the number of variables, terms, columns or tables in a join, the length of the
    /// statement; the compiler keeps within them, and this is the last line of defence): that is
    /// the input's fault. It is told by its code (`SQLITE_ERROR` or `SQLITE_TOOBIG`) and by its
    /// coming from the preparation, never by SQLite's text.
    private func prepareQuery(_ prepare: () throws(SQLiteError) -> Statement) throws(DeckError) -> Statement {
        do {
            return try prepare()
        } catch {
            guard error.code == .error || error.code.primary == .tooBig else {
                throw connection.translate(error)
            }
            throw DeckError.invalidQuery(
                "the query is too complex for SQLite (\(error.message)); simplify the filter")
        }
    }
}

extension Database {
    /// Prepares `sql` (uncached), binds `arguments` and maps every row.
    func prepareAndCollect<T>(_ sql: String, _ arguments: [SQLValue], _ map: (Statement) -> T) throws -> [T] {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        var result: [T] = []
        while try statement.step() { result.append(map(statement)) }
        return result
    }
}
