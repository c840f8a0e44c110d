import CSQLite
import DeckSupport
import Foundation

/// A connection to one SQLite database file.
///
/// Opened read-write or read-only, with foreign keys on, a busy timeout, and a cache of prepared
/// statements. Not thread-safe: a connection belongs to one thread or task at a time.
///
/// ```swift
/// let db = try Database(path: "/tmp/x.sqlite", mode: .create)
/// try db.execute("CREATE TABLE t(x)")
/// try db.run("INSERT INTO t VALUES (?)", [.integer(1)])
/// let n = try db.scalar("SELECT count(*) FROM t")?.int64
/// ```
package final class Database {
    /// How a connection opens its file.
    package enum Mode: Sendable {
        /// Read and write; the file must exist.
        case readWrite
        /// Read and write; the file is created if missing.
        case create
        /// Read only; the file must exist.
        case readOnly
    }

    package let handle: OpaquePointer
    /// The database file.
    package let path: String
    /// The mode the connection was opened in.
    package let mode: Mode
    private var statementCache: [String: Statement] = [:]
    /// Queries' statements, idle (``takeQueryStatement(_:)``).
    private var queryStatements: [String: Statement] = [:]
    private var savepointDepth = 0
    private var isClosed = false
    /// The names of the main database's tables (their UTF-8 bytes) at a schema version
    /// (``hasTable(_:)``).
    private var tableNames: (schemaVersion: Int64, names: Set<[UInt8]>)?

    /// Opens `path`.
    ///
    /// - Parameter busyTimeout: how long a statement waits for another connection's lock
    ///   before failing with `SQLITE_BUSY`, in milliseconds.
    /// - Parameter uriParameters: query parameters of SQLite's URI filenames, e.g.
    ///   `("readonly_shm", "1")` (see <https://sqlite.org/uri.html>); the file is then opened
    ///   through a `file:` URI built from `path`.
    package init(
        path: String, mode: Mode, busyTimeout: Int32 = 5_000, uriParameters: [(String, String)] = []
    ) throws(SQLiteError) {
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        switch mode {
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .create: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        var filename = path
        if !uriParameters.isEmpty {
            filename = Self.uri(path, uriParameters)
            flags |= SQLITE_OPEN_URI
        } else if path.hasPrefix("/") {
            // An absolute path reads the same either way; with URIs on, ATTACH takes one
            // (read-only attachments, attach(readOnly:)).
            flags |= SQLITE_OPEN_URI
        }
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(filename, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let error = SQLiteError(connection: handle, code: code, sql: nil, path: path)
            sqlite3_close_v2(handle)
            throw error
        }
        self.handle = handle
        self.path = path
        self.mode = mode
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeout)
        var enabled: Int32 = 0
        _ = deck_sqlite_db_config_int(handle, SQLITE_DBCONFIG_ENABLE_FKEY, 1, &enabled)
        // A store may come from anyone: its schema must not run application-defined functions
        // from triggers or views. See <https://sqlite.org/c3ref/c_dbconfig_defensive.html>.
        _ = deck_sqlite_db_config_int(handle, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &enabled)
        _ = deck_sqlite_db_config_int(handle, SQLITE_DBCONFIG_DEFENSIVE, 1, &enabled)
        // Double-quoted string literals are a footgun; refuse them.
        _ = deck_sqlite_db_config_int(handle, SQLITE_DBCONFIG_DQS_DML, 0, &enabled)
        _ = deck_sqlite_db_config_int(handle, SQLITE_DBCONFIG_DQS_DDL, 0, &enabled)
        // deck_gid(): a new record's global id (GlobalID.swift).
        _ = deck_sqlite_register_gid(handle)
        // The function compiled queries call for Unicode-aware text tests (QueryFunctions).
        let registered = QueryFunctions.register(on: handle)
        guard registered == SQLITE_OK else { throw error(registered, sql: nil) }
        if SQLTrace.isEnabled { SQLTrace.install(on: handle) }
    }

    deinit { close() }

    /// The `file:` URI of `path` with query `parameters` (see <https://sqlite.org/uri.html>):
    /// everything but unreserved characters and '/' percent-encoded, so '?', '#' and '%' in the
    /// path stay part of it.
    package static func uri(_ path: String, _ parameters: [(String, String)]) -> String {
        func encode(_ text: String) -> String {
            var out = ""
            for byte in text.utf8 {
                if (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte)
                    || (0x61...0x7A).contains(byte)
                    || [
                        UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
                        UInt8(ascii: "/"),
                    ]
                    .contains(byte)
                {
                    out.append(Character(Unicode.Scalar(byte)))
                } else {
                    out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
                }
            }
            return out
        }
        return "file:" + encode(path) + "?"
            + parameters.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }

    /// Attaches the database at the absolute `path` as `name`, read-only: nothing in this
    /// connection can write it, whatever its schema holds. Outside a transaction (SQLite refuses
    /// ATTACH in one).
    package func attachReadOnly(_ path: String, as name: String) throws(SQLiteError) {
        try run("ATTACH DATABASE ? AS \(quote(name))", [.text(Self.uri(path, [("mode", "ro")]))])
    }

    /// Finalizes cached statements and closes the connection. Safe to call twice.
    package func close() {
        guard !isClosed else { return }
        isClosed = true
        statementCache.removeAll()
        queryStatements.removeAll()
        sqlite3_close_v2(handle)
    }

    package func error(_ code: Int32, sql: String?) -> SQLiteError {
        SQLiteError(connection: handle, code: code, sql: sql, path: path)
    }

    /// Runs one or more SQL statements that take no parameters.
    package func execute(_ sql: String) throws(SQLiteError) {
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw error(code, sql: sql) }
    }

    /// Prepares `sql` without caching it.
    package func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        try Statement(database: self, sql: sql)
    }

    /// A prepared statement for `sql`, reused across calls.
    package func cachedStatement(_ sql: String) throws(SQLiteError) -> Statement {
        if let statement = statementCache[sql] {
            statement.reset()
            return statement
        }
        let statement = try Statement(database: self, sql: sql)
        statementCache[sql] = statement
        return statement
    }

    /// A statement for query `sql`, idle since an earlier query gave it back
    /// (``returnQueryStatement(_:)``), or prepared now. A statement being stepped is out of the
    /// cache, so a query run inside another's loop gets a statement of its own. The queries a
    /// model layer repeats (a record by id, a relationship's targets) are then parsed once per
    /// connection, whatever the number of loads.
    package func takeQueryStatement(_ sql: String) throws(SQLiteError) -> Statement {
        if let statement = queryStatements.removeValue(forKey: sql) { return statement }
        return try Statement(database: self, sql: sql)
    }

    /// Gives back a statement from ``takeQueryStatement(_:)``, reset and unbound. At most
    /// ``queryStatementLimit`` are kept: queries can be made of any text, so the cache starts
    /// over when full rather than grow with them.
    package func returnQueryStatement(_ statement: Statement) {
        statement.reset()
        guard !isClosed else { return }
        if queryStatements.count >= Self.queryStatementLimit { queryStatements.removeAll() }
        queryStatements[statement.sql] = statement
    }

    /// How many idle query statements a connection keeps.
    package static let queryStatementLimit = 32

    /// Runs one statement with `arguments` bound, ignoring any rows.
    package func run(_ sql: String, _ arguments: [SQLValue] = []) throws(SQLiteError) {
        try cachedStatement(sql).run(arguments)
    }

    /// All rows of one statement.
    package func rows(_ sql: String, _ arguments: [SQLValue] = []) throws(SQLiteError) -> [[SQLValue]] {
        let statement = try cachedStatement(sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        var rows: [[SQLValue]] = []
        while try statement.step() { rows.append(statement.row()) }
        return rows
    }

    /// Calls `body` for each row of one statement, without collecting them.
    package func forEachRow(
        _ sql: String, _ arguments: [SQLValue] = [], _ body: (Statement) throws -> Void
    ) throws {
        let statement = try cachedStatement(sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        while try statement.step() { try body(statement) }
    }

    /// The first column of the first row, or nil when there is no row.
    package func scalar(_ sql: String, _ arguments: [SQLValue] = []) throws(SQLiteError) -> SQLValue? {
        let statement = try cachedStatement(sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        return try statement.step() ? statement.value(at: 0) : nil
    }

    /// Drops every index and trigger of `table` (those with SQL: not the automatic indexes of its
    /// constraints), as a table rebuild does before it renames the table away.
    package func dropIndexesAndTriggers(of table: String) throws(SQLiteError) {
        let dependents = try rows(
            "SELECT type, name FROM sqlite_schema WHERE tbl_name = ? AND type IN ('index', 'trigger') "
                + "AND sql IS NOT NULL ORDER BY name",
            [.text(table)])
        for row in dependents {
            guard let type = row[0].string, let name = row[1].string else { continue }
            try execute("DROP \(type == "index" ? "INDEX" : "TRIGGER") \(quote(name))")
        }
    }

    /// Whether the database has a table named `name` (its bytes, as `name = ?` compares them in
    /// `sqlite_schema`). The names are read once per schema version: `sqlite_schema` has no
    /// index, and a check of each of a store's thousands of tables would scan it each time.
    package func hasTable(_ name: String) throws(SQLiteError) -> Bool {
        let version = try scalar("PRAGMA schema_version")?.int64 ?? -1
        if let tableNames, tableNames.schemaVersion == version {
            return tableNames.names.contains(Array(name.utf8))
        }
        var names: Set<[UInt8]> = []
        for row in try rows("SELECT CAST(name AS BLOB) FROM sqlite_schema WHERE type = 'table'") {
            if case .blob(let bytes) = row[0] { names.insert(Array(bytes)) }
        }
        tableNames = (version, names)
        return names.contains(Array(name.utf8))
    }

    /// The rowid of the most recent successful insert.
    package var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// The number of rows the most recent statement changed.
    package var changes: Int { Int(sqlite3_changes64(handle)) }

    /// True while a transaction is open.
    package var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Makes closing the last connection keep `-wal` and `-shm` (`SQLITE_FCNTL_PERSIST_WAL`): a
    /// store left in WAL mode without them is one readers refuse (spec: section 10.5).
    package func keepLogFilesOnClose() {
        var persist: Int32 = 1
        _ = sqlite3_file_control(handle, "main", SQLITE_FCNTL_PERSIST_WAL, &persist)
    }

    /// How a transaction takes its locks. See <https://sqlite.org/lang_transaction.html>.
    package enum TransactionKind: String, Sendable {
        case deferred = "DEFERRED"
        case immediate = "IMMEDIATE"
        case exclusive = "EXCLUSIVE"
    }

    /// Runs `body` in a transaction: commits if it returns, rolls back if it throws.
    ///
    /// Nested calls become savepoints, so an inner failure undoes only the inner work.
    package func transaction<T>(_ kind: TransactionKind = .immediate, _ body: () throws -> T) throws -> T {
        if isInTransaction { return try savepoint(body) }
        try execute("BEGIN \(kind.rawValue)")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            if isInTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Runs `body` inside a savepoint: released if it returns, rolled back to if it throws.
    package func savepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "deck_sp\(savepointDepth)"
        try run("SAVEPOINT \(name)")
        do {
            let result = try body()
            try run("RELEASE \(name)")
            return result
        } catch {
            try? run("ROLLBACK TO \(name)")
            try? run("RELEASE \(name)")
            throw error
        }
    }

    /// `PRAGMA name`'s first value.
    package func pragma(_ name: String) throws(SQLiteError) -> SQLValue? {
        try scalar("PRAGMA \(name)")
    }

    /// Copies the whole database into a new file at `path`, as a consistent snapshot, with the
    /// online backup API. See <https://sqlite.org/backup.html>.
    package func backup(to path: String) throws(SQLiteError) {
        let target = try Database(path: path, mode: .create)
        defer { target.close() }
        guard let backup = sqlite3_backup_init(target.handle, "main", handle, "main") else {
            throw target.error(sqlite3_errcode(target.handle), sql: nil)
        }
        // A source with an open write transaction stays busy until it ends: give up after
        // about five seconds rather than wait forever.
        var code: Int32
        var busyRounds = 0
        repeat {
            code = sqlite3_backup_step(backup, 1024)
            if code == SQLITE_BUSY || code == SQLITE_LOCKED {
                busyRounds += 1
                sqlite3_sleep(5)
            }
        } while code == SQLITE_OK || ((code == SQLITE_BUSY || code == SQLITE_LOCKED) && busyRounds < 1_000)
        let finish = sqlite3_backup_finish(backup)
        guard code == SQLITE_DONE, finish == SQLITE_OK else {
            throw target.error(code == SQLITE_DONE ? finish : code, sql: nil)
        }
    }
}

@available(*, unavailable)
extension Database: Sendable {}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}

/// A log of the SQL the store runs, the analogue of Core Data's `SQLDebug` levels: with the
/// environment variable `DECK_DEBUG_SQL` at `1`, an SQLite error's description shows the
/// statement that failed; at `2` or more, every statement is also written to standard error as it
/// starts, as `deck sql: …` — its text with `?` for the values, which are never logged. Tests
/// count statements through ``statements(ofThisThreadDuring:)``. Connections opened while neither is on are not traced.
package enum SQLTrace {
    /// The observers, by token: each is called with each statement's text, on the thread that
    /// runs it. Several can observe at once (tests running in parallel each watch their own).
    private static let observers = Locked<(next: Int, all: [Int: @Sendable (String) -> Void])>((0, [:]))

    /// Runs `body`, and returns what it returns with the text of each statement this thread ran
    /// meanwhile, in order (on connections opened while some observer was on).
    package static func statements<T>(ofThisThreadDuring body: () throws -> T) rethrows -> (T, [String]) {
        let thread = pthread_self()
        let texts = Locked<[String]>([])
        let token = observers.withLock { state in
            let token = state.next
            state.next += 1
            state.all[token] = { sql in
                if pthread_equal(pthread_self(), thread) != 0 { texts.withLock { $0.append(sql) } }
            }
            return token
        }
        defer { observers.withLock { _ = $0.all.removeValue(forKey: token) } }
        let result = try body()
        return (result, texts.withLock { $0 })
    }

    /// `DECK_DEBUG_SQL` as a number (0 when unset or not a number).
    package static var debugLevel: Int { SQLiteError.debugLevel }

    private static let printsToStandardError = debugLevel >= 2

    package static var isEnabled: Bool { printsToStandardError || observers.withLock { !$0.all.isEmpty } }

    package static func install(on handle: OpaquePointer) {
        sqlite3_trace_v2(
            handle, UInt32(SQLITE_TRACE_STMT),
            { _, _, statement, text in
                // For a statement the text is its SQL; for a trigger's, a comment naming it.
                let sql =
                    text.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
                    ?? statement.flatMap { sqlite3_sql(OpaquePointer($0)) }.map { String(cString: $0) } ?? ""
                SQLTrace.record(sql)
                return 0
            }, nil)
    }

    package static func record(_ sql: String) {
        if printsToStandardError { FileHandle.standardError.write(Data(("deck sql: " + sql + "\n").utf8)) }
        for observer in observers.withLock({ Array($0.all.values) }) { observer(sql) }
    }
}
