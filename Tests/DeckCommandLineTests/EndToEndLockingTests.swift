import DeckKit
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// One writer, many readers: while this test process holds a package open for writing, `deck`
/// writers get exit status 75 and readers keep working.
@Suite("End to end: the writer lock", .timed)
struct EndToEndLockingTests {
    var pid: Int32 { getpid() }

    @Test func writersAreRefusedWhileWeHoldTheLock() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let document = try PackageStore.open(at: URL(fileURLWithPath: path), mode: .readWrite)

        let insert = try deck("insert", path, "Tag", "name=blocked")
        e2eExpectFailure(insert, status: 75, "locked by pid \(pid)", "hint: only one process may write")
        e2eExpectFailure(
            try deck("update", path, "Tag", "--all", "name=x"), status: 75, "locked by pid \(pid)")
        e2eExpectFailure(try deck("delete", path, "Tag", "--all"), status: 75, "locked by pid \(pid)")
        e2eExpectFailure(try deck("gc", path), status: 75, "locked by pid \(pid)")

        // Readers still work, and a dry-run gc only reads.
        e2eExpectSuccess(try deck("gc", path, "--dry-run"))
        let query = try deck("query", path, "Tag", "--count")
        e2eExpectSuccess(query)
        #expect(query.stdout == "5\n")
        let verify = try deck("verify", path)
        e2eExpectSuccess(verify)
        let open = try deck("open", path)
        e2eExpectSuccess(open)
        #expect(open.stdout.contains("  writer:   pid \(pid)\n"))
        let json = try e2eJSONObject(try deck("open", path, "--json").stdout)
        #expect(json["lockHolder"] as? Int == Int(pid))

        try document.close()
        let after = try deck("insert", path, "Tag", "name=unblocked")
        e2eExpectSuccess(after)
        #expect(after.stdout == "Inserted Tag #6\n")
        #expect(try deck("query", path, "Tag", "--where", "name = blocked", "--count").stdout == "0\n")
        let reopened = try e2eJSONObject(try deck("open", path, "--json").stdout)
        #expect(reopened["lockHolder"] is NSNull)
    }

    @Test func readersSeeOnlySavedChanges() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let document = try PackageStore.open(at: URL(fileURLWithPath: path), mode: .readWrite)
        defer { try? document.close() }
        let transaction = try document.beginTransaction()
        try transaction.insert("Tag", ["name": .string("pending")])
        #expect(try deck("query", path, "Tag", "--where", "name = pending", "--count").stdout == "0\n")
        try transaction.commit()
        let result = try deck("query", path, "Tag", "--where", "name = pending", "--json")
        e2eExpectSuccess(result)
        #expect(try e2eColumn(result.stdout, "name") == ["pending"])
    }

    @Test func shellOnALockedPackageIsReadOnly() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let document = try PackageStore.open(at: URL(fileURLWithPath: path), mode: .readWrite)
        defer { try? document.close() }
        let result = try deck("open", path, "--shell", stdin: "query Tag --count\ninsert Tag name=nope\n")
        #expect(result.status == 1)
        #expect(result.stdout == "5\n")
        #expect(result.stderr.contains("error: "), "\(result.stderr)")
        #expect(result.stderr.contains("read-only"), "\(result.stderr)")
        try document.close()
        #expect(try deck("query", path, "Tag", "--count").stdout == "5\n")
    }

    @Test func lockIsReleasedWhenTheHolderCloses() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        for round in 0..<3 {
            let document = try PackageStore.open(at: URL(fileURLWithPath: path), mode: .readWrite)
            #expect(try deck("insert", path, "Tag", "name=r\(round)a").status == 75)
            try document.close()
            e2eExpectSuccess(try deck("insert", path, "Tag", "name=r\(round)b"))
        }
        #expect(try deck("query", path, "Tag", "--count").stdout == "8\n")
    }
}
