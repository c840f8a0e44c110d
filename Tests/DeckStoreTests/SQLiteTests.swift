import CSQLite
import DeckSQLite
import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@Suite("SQLite wrapper", .timed)
struct SQLiteTests {
    // MARK: Open modes

    @Test func createModeCreatesTheFileAndReadWriteReopensIt() throws {
        try withTestDirectory { dir throws in
            let path = dir.appendingPathComponent("new.sqlite").path
            #expect(!FileManager.default.fileExists(atPath: path))
            let db = try Database(path: path, mode: .create)
            #expect(db.path == path)
            try db.execute("CREATE TABLE t(x); INSERT INTO t VALUES (42);")
            db.close()
            db.close()  // safe twice
            #expect(FileManager.default.fileExists(atPath: path))

            let again = try Database(path: path, mode: .readWrite)
            #expect(try again.scalar("SELECT x FROM t")?.int64 == 42)
            try again.run("INSERT INTO t VALUES (?)", [.integer(43)])
            #expect(try again.scalar("SELECT count(*) FROM t")?.int64 == 2)
        }
    }

    @Test(arguments: [Database.Mode.readWrite, .readOnly])
    func openingAMissingFileFailsWithThePath(mode: Database.Mode) throws {
        try withTestDirectory { dir throws in
            let path = dir.appendingPathComponent("missing.sqlite").path
            do throws(SQLiteError) {
                _ = try Database(path: path, mode: mode)
                Issue.record("opened a missing file in mode \(mode)")
            } catch {
                #expect(error.primaryCode == SQLITE_CANTOPEN)
                #expect(error.path == path)
                #expect(error.description.contains(path))
            }
            #expect(!FileManager.default.fileExists(atPath: path), "a failed open must not create the file")
        }
    }

    @Test func readOnlyConnectionRefusesWrites() throws {
        try withTestDirectory { dir throws in
            let path = dir.appendingPathComponent("ro.sqlite").path
            let setup = try Database(path: path, mode: .create)
            try setup.execute("CREATE TABLE t(x)")
            setup.close()

            let db = try Database(path: path, mode: .readOnly)
            #expect(db.mode == .readOnly)
            #expect(try db.scalar("SELECT count(*) FROM t")?.int64 == 0)
            do throws(SQLiteError) {
                try db.run("INSERT INTO t VALUES (1)")
                Issue.record("a read-only connection wrote")
            } catch {
                #expect(error.primaryCode == SQLITE_READONLY)
                #expect(error.sql == "INSERT INTO t VALUES (1)")
            }
        }
    }

    // MARK: execute / run / rows / scalar

    @Test func executeRunRowsAndScalar() throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE u(y);")
            try db.run("INSERT INTO t(name) VALUES (?)", [.text("a")])
            #expect(db.lastInsertRowID == 1)
            try db.run("INSERT INTO t(name) VALUES (?)", [.text("b")])
            #expect(db.lastInsertRowID == 2)
            try db.run("INSERT INTO t(name) VALUES (?)", [.null])
            try db.run("UPDATE t SET name = upper(name) WHERE name IS NOT NULL")
            #expect(db.changes == 2)

            let rows = try db.rows("SELECT id, name FROM t ORDER BY id")
            #expect(rows == [[.integer(1), .text("A")], [.integer(2), .text("B")], [.integer(3), .null]])
            #expect(try db.rows("SELECT * FROM u").isEmpty)
            #expect(try db.scalar("SELECT name FROM t WHERE id = ?", [.integer(2)]) == .text("B"))
            #expect(try db.scalar("SELECT name FROM t WHERE id = ?", [.integer(99)]) == nil)
            #expect(try db.scalar("SELECT name FROM t WHERE id = 3") == .null)
            #expect(try db.pragma("user_version") == .integer(0))

            var seen: [Int64] = []
            try db.forEachRow("SELECT id FROM t WHERE id >= ? ORDER BY id", [.integer(2)]) {
                seen.append($0.int64(at: 0))
            }
            #expect(seen == [2, 3])
        }
    }

    @Test(
        "identifiers are quoted so that SQLite reads back the same name",
        arguments: ["Card", "two words", "a\"b", "\"", "\"\"x\"", "q\"\u{301}", "é\"😀", ""])
    func quotedIdentifiersRoundTrip(name: String) throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute("CREATE TABLE \(quote(name))(\(quote(name + "!")) INTEGER)")
            #expect(try db.scalar("SELECT name FROM sqlite_schema WHERE type = 'table'") == .text(name))
            #expect(
                try db.scalar("SELECT name FROM pragma_table_info(?)", [.text(name)]) == .text(name + "!"))
        }
    }

    @Test func executeReportsSyntaxErrorsWithSQLAndPath() throws {
        try withTestDirectory { dir throws in
            let path = dir.appendingPathComponent("db.sqlite").path
            let db = try Database(path: path, mode: .create)
            do throws(SQLiteError) {
                try db.execute("CREATE TABL t(x)")
                Issue.record("bad SQL ran")
            } catch {
                #expect(error.primaryCode == SQLITE_ERROR)
                #expect(error.sql == "CREATE TABL t(x)")
                #expect(error.path == path)
                #expect(error.message.contains("syntax error"))
            }
            // A statement that fails to prepare through the cache reports the same way.
            do throws(SQLiteError) {
                _ = try db.rows("SELECT * FROM nowhere")
                Issue.record("query on a missing table ran")
            } catch {
                #expect(error.sql == "SELECT * FROM nowhere")
                #expect(error.message.contains("no such table"))
            }
        }
    }

    @Test func doubleQuotedStringLiteralsAreRefused() throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute("CREATE TABLE t(x)")
            #expect(throws: SQLiteError.self) { try db.run("INSERT INTO t VALUES (\"not-a-column\")") }
        }
    }

    @Test func foreignKeysAreEnforced() throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute(
                "CREATE TABLE p(id INTEGER PRIMARY KEY); CREATE TABLE c(p INTEGER REFERENCES p(id));")
            do throws(SQLiteError) {
                try db.run("INSERT INTO c VALUES (7)")
                Issue.record("a dangling foreign key was accepted")
            } catch {
                #expect(error.code == .constraintForeignKey)
            }
        }
    }

    // MARK: Binding

    static let roundTripValues: [SQLValue] = [
        .null,
        .integer(0), .integer(-1), .integer(.max), .integer(.min),
        .real(3.25), .real(-1e300), .real(0.1),
        .text(""), .text("plain"), .text("héllo wörld — 日本語 🃏👩‍👩‍👧"), .text("quote ' and \" and \\"),
        .blob(Data()), .blob(Data([0, 1, 2, 255])), .blob(Data(repeating: 0xAB, count: 100_000)),
    ]

    @Test(arguments: roundTripValues)
    func typedBindingRoundTrip(value: SQLValue) throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute("CREATE TABLE t(v)")  // no affinity: values keep their storage class
            try db.run("INSERT INTO t VALUES (?)", [value])
            let row = try db.rows("SELECT v, typeof(v) FROM t")
            #expect(row == [[value, .text(value.storageClass)]])
            // The value also matches itself as a parameter.
            if !value.isNull {
                #expect(try db.scalar("SELECT count(*) FROM t WHERE v = ?", [value])?.int64 == 1)
            }
        }
    }

    @Test func emptyBlobBindsAsBlobNotNull() throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute("CREATE TABLE t(v BLOB NOT NULL)")
            try db.run("INSERT INTO t VALUES (?)", [.blob(Data())])
            #expect(try db.scalar("SELECT typeof(v) || ':' || length(v) FROM t") == .text("blob:0"))
            #expect(try db.scalar("SELECT v FROM t") == .blob(Data()))
        }
    }

    @Test func textWithAnEmbeddedNULRoundTrips() throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute("CREATE TABLE t(v TEXT)")
            let text = "before\u{0}after"
            try db.run("INSERT INTO t VALUES (?)", [.text(text)])
            #expect(try db.scalar("SELECT length(CAST(v AS BLOB)) FROM t")?.int64 == Int64(text.utf8.count))
            #expect(try db.scalar("SELECT v FROM t") == .text(text))
        }
    }

    @Test func sqlValueAccessorsAndDescription() {
        #expect(SQLValue.integer(5).int64 == 5)
        #expect(SQLValue.integer(5).double == 5.0)
        #expect(SQLValue.real(2.5).double == 2.5)
        #expect(SQLValue.real(2.5).int64 == nil)
        #expect(SQLValue.text("x").string == "x")
        #expect(SQLValue.blob(Data([1])).data == Data([1]))
        #expect(SQLValue.null.isNull)
        #expect(!SQLValue.integer(0).isNull)
        #expect(SQLValue.text("it's").description == "'it''s'")
        #expect(SQLValue.blob(Data([0x0a, 0xff])).description == "X'0aff'")
        #expect(SQLValue.null.description == "NULL")
    }

    // MARK: Statement cache

    @Test func cachedStatementsAreReused() throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute("CREATE TABLE t(x)")
            let sql = "SELECT count(*) FROM t WHERE x > ?"
            let first = try db.cachedStatement(sql)
            let second = try db.cachedStatement(sql)
            #expect(first === second)
            #expect(try db.cachedStatement("SELECT 1") !== first)
            #expect(try db.prepare(sql) !== first, "prepare never caches")

            // The cached statement is reset and rebound between uses.
            for i in 1...5 { try db.run("INSERT INTO t VALUES (?)", [.integer(Int64(i))]) }
            #expect(try db.scalar(sql, [.integer(3)])?.int64 == 2)
            #expect(try db.scalar(sql, [.integer(0)])?.int64 == 5)
            #expect(try db.rows(sql, [.integer(4)]) == [[.integer(1)]])
            #expect(try db.cachedStatement(sql) === first)
        }
    }

    @Test(
        "A query's statement is reused once given back, never while it is out, and the idle ones are bounded")
    func queryStatementsAreTakenAndGivenBack() throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1), (2), (3)")
            let sql = "SELECT x FROM t WHERE x >= ? ORDER BY x"
            let outer = try db.takeQueryStatement(sql)
            try outer.bind([.integer(2)])
            #expect(try outer.step())
            // The same query inside the first one's loop gets its own statement, and the first
            // goes on where it was.
            let inner = try db.takeQueryStatement(sql)
            #expect(inner !== outer)
            try inner.bind([.integer(1)])
            #expect(try inner.step() && inner.int64(at: 0) == 1)
            db.returnQueryStatement(inner)
            #expect(outer.int64(at: 0) == 2)
            #expect(try outer.step() && outer.int64(at: 0) == 3)
            db.returnQueryStatement(outer)
            // Given back reset and unbound: the next taker starts afresh.
            let again = try db.takeQueryStatement(sql)
            #expect(again === outer || again === inner)
            #expect(try again.step() == false, "an unbound parameter is null: no row")
            db.returnQueryStatement(again)
            // Queries of any text fill the cache at most up to its limit.
            var distinct: [Statement] = []
            for i in 0...Database.queryStatementLimit {
                let statement = try db.takeQueryStatement("SELECT \(i)")
                distinct.append(statement)
                db.returnQueryStatement(statement)
            }
            #expect(try db.takeQueryStatement("SELECT \(Database.queryStatementLimit)") === distinct.last)
            #expect(try db.takeQueryStatement("SELECT 0") !== distinct.first)
        }
    }

    @Test func aStatementThatFailedMidwayCanBeReused() throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute("CREATE TABLE t(x UNIQUE)")
            let sql = "INSERT INTO t VALUES (?)"
            try db.run(sql, [.integer(1)])
            #expect(throws: SQLiteError.self) { try db.run(sql, [.integer(1)]) }
            try db.run(sql, [.integer(2)])
            #expect(try db.scalar("SELECT group_concat(x) FROM t") == .text("1,2"))
        }
    }

    @Test func statementColumnsAndAccessors() throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            let statement = try db.prepare("SELECT 7 AS seven, 'txt' AS word, NULL AS none_")
            #expect(statement.columnCount == 3)
            #expect(statement.columnName(0) == "seven")
            #expect(statement.columnName(2) == "none_")
            #expect(try statement.step())
            #expect(statement.int64(at: 0) == 7)
            #expect(statement.text(at: 1) == "txt")
            #expect(statement.isNull(at: 2))
            #expect(!statement.isNull(at: 0))
            #expect(statement.row() == [.integer(7), .text("txt"), .null])
            #expect(try !statement.step())
        }
    }

    // MARK: Transactions

    @Test func transactionCommits() throws {
        try withTestDirectory { dir throws in
            let path = dir.appendingPathComponent("db.sqlite").path
            let db = try Database(path: path, mode: .create)
            try db.execute("CREATE TABLE t(x)")
            let result = try db.transaction { () throws -> Int in
                #expect(db.isInTransaction)
                try db.run("INSERT INTO t VALUES (1)")
                return 17
            }
            #expect(result == 17)
            #expect(!db.isInTransaction)
            // Committed: another connection sees it.
            let other = try Database(path: path, mode: .readOnly)
            #expect(try other.scalar("SELECT count(*) FROM t")?.int64 == 1)
        }
    }

    @Test func transactionRollsBackWhenTheBodyThrows() throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute("CREATE TABLE t(x)")
            try db.run("INSERT INTO t VALUES (0)")
            #expect(throws: StorageTestError.self) {
                try db.transaction {
                    try db.run("INSERT INTO t VALUES (1)")
                    try db.run("DELETE FROM t WHERE x = 0")
                    throw StorageTestError()
                }
            }
            #expect(!db.isInTransaction)
            #expect(try db.rows("SELECT x FROM t") == [[.integer(0)]])
        }
    }

    @Test func nestedTransactionRollbackKeepsOuterWork() throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute("CREATE TABLE t(x)")
            try db.transaction {
                try db.run("INSERT INTO t VALUES (1)")
                #expect(throws: StorageTestError.self) {
                    try db.transaction {
                        try db.run("INSERT INTO t VALUES (2)")
                        // A third level that succeeds is undone with its failing parent.
                        try db.savepoint { try db.run("INSERT INTO t VALUES (22)") }
                        throw StorageTestError()
                    }
                }
                #expect(db.isInTransaction, "the outer transaction survives the inner failure")
                try db.savepoint { try db.run("INSERT INTO t VALUES (3)") }
            }
            #expect(try db.rows("SELECT x FROM t ORDER BY x") == [[.integer(1)], [.integer(3)]])
        }
    }

    @Test func savepointOutsideATransactionActsAsOne() throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute("CREATE TABLE t(x)")
            try db.savepoint { try db.run("INSERT INTO t VALUES (1)") }
            #expect(!db.isInTransaction)
            #expect(throws: StorageTestError.self) {
                try db.savepoint {
                    try db.run("INSERT INTO t VALUES (2)")
                    throw StorageTestError()
                }
            }
            #expect(!db.isInTransaction)
            #expect(try db.rows("SELECT x FROM t") == [[.integer(1)]])
        }
    }

    // MARK: Errors

    @Test func uniqueViolationCarriesExtendedCodeSQLAndPath() throws {
        try withTestDirectory { dir throws in
            let path = dir.appendingPathComponent("db.sqlite").path
            let db = try Database(path: path, mode: .create)
            try db.execute("CREATE TABLE t(x UNIQUE)")
            let sql = "INSERT INTO t VALUES (?)"
            try db.run(sql, [.text("a")])
            do throws(SQLiteError) {
                try db.run(sql, [.text("a")])
                Issue.record("duplicate accepted")
            } catch {
                #expect(error.code == .constraintUnique)
                #expect(ResultCode.constraint ~= error.code)
                #expect(error.primaryCode == SQLITE_CONSTRAINT)
                #expect(error.sql == sql)
                #expect(error.path == path)
                #expect(error.message.contains("UNIQUE constraint failed: t.x"))
                #expect(error.description.contains("2067"))
                #expect(error.description.contains(path))
                // Generated SQL is for code and debugging, not for messages (DECK_DEBUG_SQL=1 adds it).
                #expect(!error.description.contains(sql) || SQLiteError.showsSQL)
                #expect(error.debugDescription.contains(sql))
                #expect(error.debugDescription.contains(path))
                #expect(!DeckError.sqlite(error).description.contains(sql) || SQLiteError.showsSQL)
                #expect(!error.isBusy)
                #expect(!error.isCorruption)
            }
        }
    }

    @Test func catchMatchesPrimaryAndExtendedCodes() throws {
        try withTestDirectory { dir throws in
            let db = try Database(path: dir.appendingPathComponent("db.sqlite").path, mode: .create)
            try db.execute("CREATE TABLE t(x UNIQUE)")
            try db.run("INSERT INTO t VALUES (1)")
            var matched = ""
            do throws(SQLiteError) {
                try db.run("INSERT INTO t VALUES (1)")
            } catch SQLITE_BUSY {
                matched = "busy"
            } catch SQLITE_CONSTRAINT {
                matched = "constraint"
            } catch {
                matched = "other"
            }
            #expect(matched == "constraint")

            let error = SQLiteError(code: 2067)
            #expect(2067 ~= error)
            #expect(SQLITE_CONSTRAINT ~= error)
            #expect(!(SQLITE_BUSY ~= error))
            #expect(!(2067 ~= StorageTestError()))
            #expect(error.message == String(cString: sqlite3_errstr(2067)))
        }
    }

    @Test func busyAndCorruptionClassification() {
        #expect(SQLiteError(code: SQLITE_BUSY).isBusy)
        #expect(SQLiteError(code: 261).isBusy)  // SQLITE_BUSY_RECOVERY
        #expect(SQLiteError(code: SQLITE_LOCKED).isBusy)
        #expect(SQLiteError(code: SQLITE_CORRUPT).isCorruption)
        #expect(SQLiteError(code: SQLITE_NOTADB).isCorruption)
        #expect(!SQLiteError(code: SQLITE_IOERR).isCorruption)
    }

    @Test func secondWriterGetsBusy() throws {
        try withTestDirectory { dir throws in
            let path = dir.appendingPathComponent("db.sqlite").path
            let a = try Database(path: path, mode: .create)
            try a.execute("CREATE TABLE t(x)")
            let b = try Database(path: path, mode: .readWrite, busyTimeout: 0)
            try a.execute("BEGIN IMMEDIATE")
            do throws(SQLiteError) {
                try b.execute("BEGIN IMMEDIATE")
                Issue.record("two writers at once")
            } catch {
                #expect(error.isBusy)
                #expect(SQLITE_BUSY ~= error)
            }
            try a.execute("COMMIT")
            try b.execute("BEGIN IMMEDIATE; COMMIT;")
        }
    }

    // MARK: Backup

    @Test func backupCopiesAConsistentDatabase() throws {
        try withTestDirectory { dir throws in
            let source = try Database(path: dir.appendingPathComponent("src.sqlite").path, mode: .create)
            try source.execute(
                "PRAGMA journal_mode=WAL; PRAGMA application_id=1145389899; CREATE TABLE t(x, y)")
            try source.transaction {
                for i in 0..<2_000 {
                    try source.run(
                        "INSERT INTO t VALUES (?, ?)",
                        [.integer(Int64(i)), .blob(testBytes(100, seed: UInt8(i % 200)))])
                }
            }
            let copyPath = dir.appendingPathComponent("copy.sqlite").path
            try source.backup(to: copyPath)

            let copy = try Database(path: copyPath, mode: .readOnly)
            #expect(try copy.scalar("SELECT count(*) FROM t")?.int64 == 2_000)
            #expect(try copy.scalar("SELECT sum(x) FROM t")?.int64 == 1_999_000)
            #expect(try copy.pragma("application_id")?.int64 == 1_145_389_899)
            #expect(try copy.scalar("PRAGMA integrity_check") == .text("ok"))
            #expect(
                !FileManager.default.fileExists(atPath: copyPath + "-wal")
                    || (try? FileManager.default.attributesOfItem(atPath: copyPath + "-wal")[.size] as? Int)
                        == 0
            )
        }
    }

    @Test func backupIntoAnUnwritablePlaceFails() throws {
        try withTestDirectory { dir throws in
            let source = try Database(path: dir.appendingPathComponent("src.sqlite").path, mode: .create)
            try source.execute("CREATE TABLE t(x)")
            let target = dir.appendingPathComponent("no/such/dir/copy.sqlite").path
            do throws(SQLiteError) {
                try source.backup(to: target)
                Issue.record("backup into a missing directory succeeded")
            } catch {
                #expect(error.primaryCode == SQLITE_CANTOPEN)
                #expect(error.path == target)
            }
        }
    }

    @Test(
        .disabled(
            "BUG: backup(to:) spins forever when the source connection has an open write transaction (sqlite3_backup_step returns SQLITE_BUSY every time)"
        ))
    func backupDuringAnOpenWriteTransactionFailsOrSnapshots() throws {
        try withTestDirectory { dir throws in
            let source = try Database(path: dir.appendingPathComponent("src.sqlite").path, mode: .create)
            try source.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
            try source.execute("BEGIN IMMEDIATE")
            try source.run("INSERT INTO t VALUES (2)")
            let copyPath = dir.appendingPathComponent("copy.sqlite").path
            do throws(SQLiteError) {
                try source.backup(to: copyPath)
                let copy = try Database(path: copyPath, mode: .readOnly)
                #expect(
                    try copy.scalar("SELECT count(*) FROM t")?.int64 == 1,
                    "a backup holds only committed data")
            } catch {
                #expect(error.isBusy)
            }
            try source.execute("ROLLBACK")
        }
    }
}
