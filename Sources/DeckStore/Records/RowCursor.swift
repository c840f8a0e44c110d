import CSQLite
import DeckSQLite
import Foundation

/// The current row of a record query, read in place: each cell is decoded from the statement
/// only when asked for, so a caller that maps rows onto its own storage (the model layer) makes
/// no ``Value`` or array per row. One cursor serves a whole query and moves to the next row
/// after each call of the body it is given: it must not be kept beyond that call.
package final class RowCursor {
    // The row's state is read for every cell of every row: the stored properties are not checked
    // for exclusive access at run time (each access is a plain read or a write in `move` and
    // `advance`, never an inout access across a call), and other modules read them through the
    // computed properties, which carry that choice with them (a stored property reached from
    // another module is checked there).
    @exclusivity(unchecked) private var currentEntity = ""
    @exclusivity(unchecked) private var currentID: Int64 = 0
    @exclusivity(unchecked) private var currentGlobalID: UUID?
    @exclusivity(unchecked) private var currentNames: [String] = []

    /// The record's entity.
    package var entity: String { currentEntity }
    /// The record's id in this store.
    package var id: Int64 { currentID }
    /// The record's global id (format version 2 on).
    package var globalID: UUID? { currentGlobalID }
    /// The entity's attributes, then its to-one relationships (the same array for every row of
    /// the entity, as in ``StoreRow/names``).
    package var names: [String] { currentNames }

    typealias Reader = (column: Int, type: StoreSchema.AttributeType?)
    @exclusivity(unchecked) private var readers: [Reader] = []
    private let statement: Statement
    private let readsGlobalIDs: Bool
    private let blobSize: (Digest) -> Int64
    /// The instant the store's dates count from (spec 4.2).
    private let dateEpoch: DateEpoch
    /// The result columns that hold the terms of the order, when the query reads positions.
    private let positionColumns: Range<Int>?
    /// The result columns of the sort keys and their directions, when the caller orders the rows
    /// (``RecordQuery/lettingCallerOrder``).
    private let sortColumns: [(column: Int32, ascending: Bool)]?

    init(
        statement: Statement, readsGlobalIDs: Bool, positionColumns: Range<Int>? = nil,
        sortColumns: [(column: Int32, ascending: Bool)]? = nil, dateEpoch: DateEpoch,
        blobSize: @escaping (Digest) -> Int64
    ) {
        self.dateEpoch = dateEpoch
        self.statement = statement
        self.readsGlobalIDs = readsGlobalIDs
        self.positionColumns = positionColumns
        self.sortColumns = sortColumns
        self.blobSize = blobSize
    }

    /// An empty order of the query's rows when the caller orders them (the statement does not);
    /// nil when the statement sorts them (``RecordQuery/lettingCallerOrder``).
    package func callerOrder() -> RowOrder? {
        sortColumns.map { RowOrder(ascending: $0.map(\.ascending)) }
    }

    /// Appends the row's sort values, one per key (``callerOrder()``).
    func appendSortValues(to values: inout [RowOrder.Value]) {
        guard let sortColumns else { return }
        let handle = statement.handle
        for (column, _) in sortColumns {
            switch sqlite3_column_type(handle, column) {
            case SQLITE_NULL: values.append(.null)
            case SQLITE_INTEGER: values.append(.integer(sqlite3_column_int64(handle, column)))
            case SQLITE_FLOAT: values.append(.real(sqlite3_column_double(handle, column)))
            default: values.append(.other)
            }
        }
    }

    /// Where the row stands in the query's order, for a later page of the query to continue
    /// after it (``RecordQuery/after``): the values the statement sorted it by, as SQLite gave
    /// them. Nil unless the query reads positions (``RecordQuery/readsPositions``).
    package var position: RecordQuery.Position? {
        guard let positionColumns else { return nil }
        var keys: [RecordQuery.Position.Key] = []
        keys.reserveCapacity(positionColumns.count)
        for column in positionColumns {
            guard sqlite3_column_type(statement.handle, Int32(column)) == SQLITE_TEXT else {
                keys.append(.value(statement.value(at: column)))
                continue
            }
            // The bytes as stored: a text that is not valid UTF-8 would not survive a String.
            // (The text first, then its length: SQLite's documented order.)
            let start = sqlite3_column_text(statement.handle, Int32(column))
            let count = Int(sqlite3_column_bytes(statement.handle, Int32(column)))
            let bytes = UnsafeRawBufferPointer(start: start, count: count)
            if let text = String(validating: bytes, as: UTF8.self) {
                keys.append(.value(.text(text)))
            } else {
                keys.append(.textBytes(Data(bytes)))
            }
        }
        return RecordQuery.Position(keys: keys, recordID: id)
    }

    /// Moves to the statement's current row, whose entity's cells are read by `readers`.
    func move(entity: String, names: [String], readers: [Reader]) {
        currentEntity = entity
        currentNames = names
        self.readers = readers
        advance()
    }

    /// Moves to the statement's current row, of the same entity as the last one.
    func advance() {
        currentID = statement.int64(at: 0)
        currentGlobalID = readsGlobalIDs ? statement.uuid(at: 2) : nil
    }

    /// The number of cells (``names``'s count).
    package var count: Int { readers.count }

    /// Cell `cell` as a value: what ``StoreRow/cells`` holds at that position.
    package func value(_ cell: Int) -> Value {
        let reader = readers[cell]
        let raw = statement.value(at: reader.column)
        guard let type = reader.type else { return raw.int64.map(Value.reference) ?? .null }
        return Value(sql: raw, type: type, epoch: dateEpoch, blobSize: blobSize)
    }

    /// The legacy value (spec 7.7) cell `cell` holds, described for messages; nil when it holds
    /// none (or is a relationship's).
    package func legacyValue(_ cell: Int) -> String? {
        let reader = readers[cell]
        guard let type = reader.type else { return nil }
        return Value.legacyValue(
            statement.value(at: reader.column), type: type, isOptional: false, epoch: dateEpoch)
    }

    /// The attribute type of cell `cell`, nil for a to-one relationship.
    package func type(_ cell: Int) -> StoreSchema.AttributeType? { readers[cell].type }

    /// True when cell `cell` is null.
    package func isNull(_ cell: Int) -> Bool { statement.isNull(at: readers[cell].column) }

    // The typed readers below each give what `value(cell)` gives for the common case of their
    // type — a string attribute holding text, and so on — and nil for anything else, for which
    // the caller falls back to `value(cell)`: they are a faster path, never a different answer.

    /// The statement column of cell `cell` when its attribute is of `type` and the column holds
    /// SQLite storage class `storage` in this row; nil otherwise.
    @inline(__always)
    private func column(_ cell: Int, _ type: StoreSchema.AttributeType, _ storage: Int32) -> Int32? {
        let reader = readers[cell]
        let column = Int32(reader.column)
        guard reader.type == type, sqlite3_column_type(statement.handle, column) == storage else {
            return nil
        }
        return column
    }

    /// The text of a string attribute's cell.
    package func string(_ cell: Int) -> String? {
        guard let column = column(cell, .string, SQLITE_TEXT) else { return nil }
        return statement.text(at: Int(column))
    }

    /// The integer of an integer attribute's cell.
    package func integer(_ cell: Int) -> Int64? {
        guard let column = column(cell, .integer, SQLITE_INTEGER) else { return nil }
        return sqlite3_column_int64(statement.handle, column)
    }

    /// The number of a double attribute's cell holding a real (negative zero reads as zero).
    package func double(_ cell: Int) -> Double? {
        guard let column = column(cell, .double, SQLITE_FLOAT) else { return nil }
        let number = sqlite3_column_double(statement.handle, column)
        return number == 0 ? 0 : number
    }

    /// The instant of a date attribute's cell holding a real within the storable range.
    package func date(_ cell: Int) -> Timestamp? {
        guard let column = column(cell, .date, SQLITE_FLOAT) else { return nil }
        let seconds = sqlite3_column_double(statement.handle, column)
        let timestamp = Timestamp(seconds: seconds, epoch: dateEpoch)
        return timestamp.isStorable ? timestamp : nil
    }

    /// The flag of a bool attribute's cell holding 0 or 1.
    package func bool(_ cell: Int) -> Bool? {
        guard let column = column(cell, .bool, SQLITE_INTEGER) else { return nil }
        switch sqlite3_column_int64(statement.handle, column) {
        case 0: return false
        case 1: return true
        default: return nil
        }
    }

    /// The current row with every cell decoded.
    package var row: StoreRow {
        StoreRow(entity: entity, id: id, globalID: globalID, names: names, cells: (0..<count).map(value))
    }
}
