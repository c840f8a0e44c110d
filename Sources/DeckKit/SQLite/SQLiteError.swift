import CSQLite
import Foundation

/// An error reported by SQLite, with the extended result code, SQLite's message, the SQL that
/// failed and the database file.
///
/// The description — what users see — names the code, the message and the file, not the SQL,
/// which is generated and would only bury the message: the statement is in ``sql``, and in
/// ``debugDescription``. Set the environment variable `DECK_DEBUG_SQL` to `1` to have the
/// description include it too (deck(1), ENVIRONMENT).
///
/// Match a primary code with `~=`, which also matches every extended code under it:
///
/// ```swift
/// do { try db.execute("INSERT …") }
/// catch let error as SQLiteError where error.primaryCode == SQLITE_CONSTRAINT { … }
/// ```
///
/// See <https://sqlite.org/rescode.html>.
public struct SQLiteError: Error, CustomStringConvertible, CustomDebugStringConvertible, Sendable {
    /// The extended result code (`sqlite3_extended_errcode`).
    public let code: Int32
    /// SQLite's own message (`sqlite3_errmsg`), or the generic text for the code.
    public let message: String
    /// The statement that failed, when there was one.
    public let sql: String?
    /// The database file, when known.
    public let path: String?

    public init(code: Int32, message: String? = nil, sql: String? = nil, path: String? = nil) {
        self.code = code
        self.message = message ?? String(cString: sqlite3_errstr(code))
        self.sql = sql
        self.path = path
    }

    init(connection: OpaquePointer?, code: Int32, sql: String?, path: String?) {
        let extended = connection.map { sqlite3_extended_errcode($0) } ?? code
        let message = connection.map { String(cString: sqlite3_errmsg($0)) }
        // sqlite3_extended_errcode reports the most recent failure, which is ours unless the
        // primary codes disagree (e.g. after an API misuse).
        self.init(
            code: (extended & 0xff) == (code & 0xff) ? extended : code, message: message, sql: sql, path: path
        )
    }

    /// `SQLITE_CONSTRAINT_UNIQUE`: Swift cannot import the C macro.
    public static let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)
    /// `SQLITE_CONSTRAINT_PRIMARYKEY`.
    public static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)

    /// The primary result code (the low byte of ``code``).
    public var primaryCode: Int32 { code & 0xff }

    /// True for `SQLITE_BUSY` and `SQLITE_LOCKED`: another connection holds a conflicting lock.
    public var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

    /// True when SQLite found the database file damaged or not a database.
    public var isCorruption: Bool { primaryCode == SQLITE_CORRUPT || primaryCode == SQLITE_NOTADB }

    /// The code, SQLite's message and the file; the SQL only when `DECK_DEBUG_SQL` is set to `1`.
    public var description: String {
        Self.showsSQL ? debugDescription : text(withSQL: false)
    }

    /// The code, SQLite's message, the file and the SQL that failed.
    public var debugDescription: String { text(withSQL: true) }

    private func text(withSQL: Bool) -> String {
        var text = "SQLite error \(code): \(message)"
        if let path { text += " (in \(path))" }
        if withSQL, let sql { text += " while executing: \(sql)" }
        return text
    }

    /// Whether `DECK_DEBUG_SQL=1` asks for the SQL in descriptions.
    static var showsSQL: Bool { ProcessInfo.processInfo.environment["DECK_DEBUG_SQL"] == "1" }
}

/// Matches an error whose extended or primary SQLite code equals `code`:
/// `catch SQLITE_CONSTRAINT` also catches `SQLITE_CONSTRAINT_UNIQUE`.
public func ~= (code: Int32, error: any Error) -> Bool {
    guard let error = error as? SQLiteError else { return false }
    return error.code == code || error.primaryCode == code
}
