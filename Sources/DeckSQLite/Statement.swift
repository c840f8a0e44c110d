import CSQLite
import DeckSupport
import Foundation

/// A prepared SQLite statement.
///
/// Owned by its ``Database``; not thread-safe. Bind with ``bind(_:)``, step with ``step()``, read
/// columns with ``value(at:)`` and friends.
///
/// See <https://sqlite.org/c3ref/stmt.html>.
package final class Statement {
    package let handle: OpaquePointer
    /// The SQL text the statement was prepared from.
    package let sql: String
    package unowned let database: Database

    package init(database: Database, sql: String) throws(SQLiteError) {
        var handle: OpaquePointer?
        let code = sqlite3_prepare_v3(database.handle, sql, -1, 0, &handle, nil)
        guard code == SQLITE_OK, let handle else {
            throw database.error(code, sql: sql)
        }
        self.handle = handle
        self.sql = sql
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    /// The number of result columns.
    package var columnCount: Int { Int(sqlite3_column_count(handle)) }

    /// The name of result column `index`.
    package func columnName(_ index: Int) -> String {
        sqlite3_column_name(handle, Int32(index)).map { String(cString: $0) } ?? ""
    }

    /// Resets the statement and clears its bindings, ready for the next use.
    package func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Resets the statement, keeping its bindings: for a caller that binds every parameter next.
    package func rewind() {
        sqlite3_reset(handle)
    }

    /// Binds `values` to parameters 1…n, after resetting the statement. Parameters beyond
    /// `values.count` are cleared.
    package func bind(_ values: [SQLValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        if Int(sqlite3_bind_parameter_count(handle)) > values.count { sqlite3_clear_bindings(handle) }
        for (offset, value) in values.enumerated() {
            try bind(value, at: offset + 1)
        }
    }

    /// Binds one value to the 1-based parameter `index`.
    package func bind(_ value: SQLValue, at index: Int) throws(SQLiteError) {
        let i = Int32(index)
        let code: Int32
        switch value {
        case .null: code = sqlite3_bind_null(handle, i)
        case .integer(let v): code = sqlite3_bind_int64(handle, i, v)
        case .real(let v): code = sqlite3_bind_double(handle, i, v)
        case .text(var v):
            code = v.withUTF8 { utf8 in
                sqlite3_bind_text64(
                    handle, i,
                    UnsafeRawPointer(utf8.baseAddress ?? UnsafePointer(bitPattern: 1))?
                        .assumingMemoryBound(to: CChar.self), sqlite3_uint64(utf8.count),
                    deck_sqlite_transient(),
                    UInt8(SQLITE_UTF8))
            }
        case .blob(let v):
            code = v.withUnsafeBytes { buffer in
                // A zero-length blob must still bind as a blob, not NULL: give SQLite a valid pointer.
                sqlite3_bind_blob64(
                    handle, i, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                    sqlite3_uint64(buffer.count),
                    deck_sqlite_transient())
            }
        }
        guard code == SQLITE_OK else { throw database.error(code, sql: sql) }
    }

    /// Advances to the next row; returns false when the statement is done.
    @discardableResult
    package func step() throws(SQLiteError) -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = database.error(code, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Runs the statement to completion with `values` bound, ignoring any rows.
    package func run(_ values: [SQLValue] = []) throws(SQLiteError) {
        try bind(values)
        try runBound()
    }

    /// Runs the statement with the values bound already (to every parameter), to its end.
    package func runBound() throws(SQLiteError) {
        while try step() {}
        sqlite3_reset(handle)
    }

    /// Binds a global id's 16 bytes (or null) to the 1-based parameter `index`.
    package func bind(globalID: UUID?, at index: Int) throws(SQLiteError) {
        guard let globalID else { return try bind(.null, at: index) }
        let code = withUnsafeBytes(of: globalID.uuid) { bytes in
            sqlite3_bind_blob64(handle, Int32(index), bytes.baseAddress, 16, deck_sqlite_transient())
        }
        guard code == SQLITE_OK else { throw database.error(code, sql: sql) }
    }

    /// The value of column `index` of the current row.
    package func value(at index: Int) -> SQLValue {
        let i = Int32(index)
        switch sqlite3_column_type(handle, i) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, i))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, i))
        case SQLITE_TEXT: return .text(text(at: index))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, i))
            guard count > 0, let base = sqlite3_column_blob(handle, i) else { return .blob(Data()) }
            return .blob(Data(bytes: base, count: count))
        default: return .null
        }
    }

    /// Column `index` as an integer (SQLite's conversion rules apply).
    package func int64(at index: Int) -> Int64 { sqlite3_column_int64(handle, Int32(index)) }

    /// ``value(at:)``, except that text that is not valid UTF-8 (SQLite stores what it is given)
    /// sets `repaired`: each invalid sequence reads as U+FFFD, as everywhere else.
    package func value(at index: Int, repaired: inout Bool) -> SQLValue {
        let i = Int32(index)
        guard sqlite3_column_type(handle, i) == SQLITE_TEXT, let base = sqlite3_column_text(handle, i) else {
            return value(at: index)
        }
        let bytes = UnsafeBufferPointer(start: base, count: Int(sqlite3_column_bytes(handle, i)))
        if let text = String(validating: bytes, as: UTF8.self) { return .text(text) }
        repaired = true
        return .text(String(decoding: bytes, as: UTF8.self))
    }

    /// Column `index` as text (SQLite's conversion rules apply; NULL reads as "").
    package func text(at index: Int) -> String {
        let i = Int32(index)
        guard let base = sqlite3_column_text(handle, i) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, i))
        return String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self)
    }

    /// Whether column `index` holds exactly the UTF-8 bytes of `text` (compared in place: no
    /// string is made).
    package func textEquals(_ text: inout String, at index: Int) -> Bool {
        let i = Int32(index)
        guard let base = sqlite3_column_text(handle, i) else { return false }
        let count = Int(sqlite3_column_bytes(handle, i))
        return text.withUTF8 { utf8 in
            guard utf8.count == count else { return false }
            guard count > 0, let start = utf8.baseAddress else { return true }
            return memcmp(start, base, count) == 0
        }
    }

    /// Column `index` as a UUID when it is a 16-byte blob (a global id), else nil.
    package func uuid(at index: Int) -> UUID? {
        let i = Int32(index)
        guard sqlite3_column_type(handle, i) == SQLITE_BLOB, sqlite3_column_bytes(handle, i) == 16,
            let base = sqlite3_column_blob(handle, i)
        else { return nil }
        return UUID(uuid: UnsafeRawPointer(base).loadUnaligned(as: uuid_t.self))
    }

    /// True when column `index` of the current row is NULL.
    package func isNull(at index: Int) -> Bool { sqlite3_column_type(handle, Int32(index)) == SQLITE_NULL }

    /// All columns of the current row.
    package func row() -> [SQLValue] { (0..<columnCount).map { value(at: $0) } }
}

@available(*, unavailable)
extension Statement: Sendable {}
