import DeckKit
import Foundation

/// `deck log`'s cost follows the changes, not the size: the changes since a token read from a
/// 1M-row document that 100 records changed since, against the same from a small document with
/// the same change (the copies of ``editedCopies(rows:named:movedTo:)``: the token is the first
/// copy's, the log the second's).
func runLogBenchmarks() throws {
    guard selected("log") else { return }
    let large = rowCount * 10
    let small = max(rowCount / 100, 200)
    let (largeFirst, largeSecond) = try editedCopies(rows: large, named: "log-large", movedTo: 2)
    let (smallFirst, smallSecond) = try editedCopies(rows: small, named: "log-small", movedTo: 2)
    func token(_ url: URL) throws -> ChangeLog.Token {
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        return try ChangeLog(of: store).token
    }
    let (largeToken, smallToken) = (try token(largeFirst), try token(smallFirst))
    var listed = (0, 0)
    func changes(_ url: URL, _ token: ChangeLog.Token) throws -> Int {
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        return try ChangeLog(of: store, after: token).transactions.reduce(0) { $0 + $1.changes.count }
    }
    try compare(
        "log since a token, \(large) rows", target: "≥ 0.33× (\(small) rows)",
        deck: { listed.0 = try changes(largeSecond, largeToken) },
        baseline: { listed.1 = try changes(smallSecond, smallToken) })
    // 40 updated, 30 inserted and 30 deleted cards.
    print("  the logs listed \(listed.0) and \(listed.1) changes (100 expected)")
}

/// A whole log reads every record with its values: against the `sqlite3` shell printing every
/// card (no target: watched).
func runFullLogBenchmark() throws {
    guard selected("full log") else { return }
    let (first, _) = try editedCopies(rows: rowCount, named: "log-full", movedTo: 2)
    var listed = 0
    try compare(
        "full log, \(rowCount) rows", target: "none (watch)",
        deck: {
            let store = try PackageStore.open(at: first, mode: .readOnly)
            defer { try? store.close() }
            listed = try ChangeLog(of: store).transactions.reduce(0) { $0 + $1.changes.count }
        },
        baseline: {
            _ = shell("sqlite3 -readonly '\(first.path)/store.sqlite' 'SELECT * FROM Card' > /dev/null")
        })
    print("  the log listed \(listed) changes")
}
