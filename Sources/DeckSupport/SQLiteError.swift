import CSQLite
import Foundation

/// An SQLite result code: a primary code (the low byte) and, for extended codes, more detail in
/// the bits above it. See <https://sqlite.org/rescode.html>.
///
/// Compare with the named constants; `~=` lets a `catch` or `switch` on a primary code also match
/// its extended codes:
///
/// ```swift
/// do { try store.write { try $0.insert("Tag", ["name": .string("x")]) } }
/// catch DeckError.sqlite(let error) where ResultCode.constraint ~= error.code { … }
/// ```
public struct ResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code as SQLite returns it (`sqlite3_extended_errcode`).
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The primary result code (the low byte).
    public var primary: ResultCode { ResultCode(rawValue: rawValue & 0xff) }

    /// SQLite's English text for the code (`sqlite3_errstr`).
    public var description: String { "\(rawValue) (\(String(cString: sqlite3_errstr(rawValue))))" }

    /// Matches `code` when it is `pattern` or one of `pattern`'s extended codes.
    public static func ~= (pattern: ResultCode, code: ResultCode) -> Bool {
        pattern == code || (pattern.rawValue & 0xff == pattern.rawValue && pattern == code.primary)
    }

    /// Success.
    public static let ok = ResultCode(rawValue: 0)
    /// A generic error (SQL error or missing database).
    public static let error = ResultCode(rawValue: 1)
    /// An internal logic error in SQLite.
    public static let internalError = ResultCode(rawValue: 2)
    /// Access permission denied.
    public static let permission = ResultCode(rawValue: 3)
    /// A callback requested an abort.
    public static let abort = ResultCode(rawValue: 4)
    /// The database file is locked by another connection.
    public static let busy = ResultCode(rawValue: 5)
    /// A table in the database is locked.
    public static let locked = ResultCode(rawValue: 6)
    /// A memory allocation failed.
    public static let noMemory = ResultCode(rawValue: 7)
    /// An attempt to write a read-only database.
    public static let readOnly = ResultCode(rawValue: 8)
    /// The operation was interrupted.
    public static let interrupt = ResultCode(rawValue: 9)
    /// A disk I/O error.
    public static let ioError = ResultCode(rawValue: 10)
    /// The database disk image is malformed.
    public static let corrupt = ResultCode(rawValue: 11)
    /// Unknown opcode or file-control operation.
    public static let notFound = ResultCode(rawValue: 12)
    /// The database or disk is full.
    public static let full = ResultCode(rawValue: 13)
    /// The database file cannot be opened.
    public static let cannotOpen = ResultCode(rawValue: 14)
    /// A locking protocol error.
    public static let protocolError = ResultCode(rawValue: 15)
    /// The database schema changed.
    public static let schemaChanged = ResultCode(rawValue: 17)
    /// A string or blob exceeds the size limit.
    public static let tooBig = ResultCode(rawValue: 18)
    /// A constraint was violated.
    public static let constraint = ResultCode(rawValue: 19)
    /// A data type mismatch.
    public static let mismatch = ResultCode(rawValue: 20)
    /// The library was used incorrectly.
    public static let misuse = ResultCode(rawValue: 21)
    /// Authorization denied.
    public static let authorization = ResultCode(rawValue: 23)
    /// A bind parameter index out of range.
    public static let range = ResultCode(rawValue: 25)
    /// The file is not a database.
    public static let notADatabase = ResultCode(rawValue: 26)
    /// A read-only connection cannot recover the write-ahead log.
    public static let readOnlyRecovery = ResultCode(rawValue: 8 | (1 << 8))
    /// A read-only connection cannot initialise the shared-memory index.
    public static let readOnlyCannotInitialize = ResultCode(rawValue: 8 | (5 << 8))
    /// A read failed.
    public static let ioErrorRead = ResultCode(rawValue: 10 | (1 << 8))
    /// A read returned fewer bytes than asked.
    public static let ioErrorShortRead = ResultCode(rawValue: 10 | (2 << 8))
    /// A CHECK constraint failed.
    public static let constraintCheck = ResultCode(rawValue: 19 | (1 << 8))
    /// A foreign-key constraint failed.
    public static let constraintForeignKey = ResultCode(rawValue: 19 | (3 << 8))
    /// A NOT NULL constraint failed.
    public static let constraintNotNull = ResultCode(rawValue: 19 | (5 << 8))
    /// A PRIMARY KEY constraint failed.
    public static let constraintPrimaryKey = ResultCode(rawValue: 19 | (6 << 8))
    /// A RAISE in a trigger.
    public static let constraintTrigger = ResultCode(rawValue: 19 | (7 << 8))
    /// A UNIQUE constraint failed.
    public static let constraintUnique = ResultCode(rawValue: 19 | (8 << 8))
}

/// An error reported by SQLite: the result code, SQLite's message, the SQL that failed and the
/// database file.
///
/// ``description`` leaves the SQL out (it can carry values and says little to a user); it is in
/// ``sql`` and ``debugDescription``, and in ``description`` too when the environment variable
/// `DECK_DEBUG_SQL` is `1` or more.
public struct SQLiteError: Error, CustomStringConvertible, CustomDebugStringConvertible, Sendable {
    /// The extended result code.
    public let code: ResultCode
    /// SQLite's own message (`sqlite3_errmsg`), or the generic text for the code.
    public let message: String
    /// The statement that failed, when there was one.
    public let sql: String?
    /// The database file, when known.
    public let path: String?

    public init(code: ResultCode, message: String? = nil, sql: String? = nil, path: String? = nil) {
        self.code = code
        self.message = message ?? String(cString: sqlite3_errstr(code.rawValue))
        self.sql = sql
        self.path = path
    }

    package init(code: Int32, message: String? = nil, sql: String? = nil, path: String? = nil) {
        self.init(code: ResultCode(rawValue: code), message: message, sql: sql, path: path)
    }

    package init(connection: OpaquePointer?, code: Int32, sql: String?, path: String?) {
        let extended = connection.map { sqlite3_extended_errcode($0) } ?? code
        let message = connection.map { String(cString: sqlite3_errmsg($0)) }
        // sqlite3_extended_errcode reports the most recent failure, which is ours unless the
        // primary codes disagree (e.g. after an API misuse).
        self.init(
            code: (extended & 0xff) == (code & 0xff) ? extended : code, message: message, sql: sql, path: path
        )
    }

    /// The primary result code, as SQLite's C constants spell it.
    package var primaryCode: Int32 { code.rawValue & 0xff }

    /// True for `SQLITE_BUSY` and `SQLITE_LOCKED`: another connection holds a conflicting lock.
    public var isBusy: Bool { code.primary == .busy || code.primary == .locked }

    /// True when SQLite found the database file damaged or not a database.
    public var isCorruption: Bool { code.primary == .corrupt || code.primary == .notADatabase }

    /// The code, SQLite's message and the file; the SQL only when `DECK_DEBUG_SQL` is `1` or more.
    public var description: String {
        Self.showsSQL ? debugDescription : text(withSQL: false)
    }

    /// The code, SQLite's message, the file and the SQL that failed.
    public var debugDescription: String { text(withSQL: true) }

    private func text(withSQL: Bool) -> String {
        var text = "SQLite error \(code.rawValue): \(message)"
        if let path { text += " (in \(path))" }
        if withSQL, let sql { text += " while executing: \(sql)" }
        return text
    }

    /// Whether `DECK_DEBUG_SQL` (1 or more) asks for the SQL in descriptions.
    package static var showsSQL: Bool { debugLevel >= 1 }

    /// `DECK_DEBUG_SQL` as a number (0 when unset or not a number); `SQLTrace` (DeckSQLite) prints
    /// every statement at 2 or more.
    package static var debugLevel: Int {
        Int(ProcessInfo.processInfo.environment["DECK_DEBUG_SQL"] ?? "") ?? 0
    }
}

/// Matches an error whose extended or primary SQLite code equals `code`, inside the store
/// (`catch SQLITE_CONSTRAINT` also catches `SQLITE_CONSTRAINT_UNIQUE`).
package func ~= (code: Int32, error: any Error) -> Bool {
    guard let error = error as? SQLiteError else { return false }
    return error.code.rawValue == code || error.primaryCode == code
}
