import CSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// SQLite's failures are told apart by their extended result codes and by the names and messages
/// of what Deck itself creates, never by reading SQLite's text: a reference count taken below
/// zero (the writer's guard, in every format), a unique constraint, a query over one of SQLite's
/// limits. Each test looks at the error's case, not its message.
@Suite("Errors by code", .timed)
struct ErrorClassificationTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// Each fixture of an older format, and the root entity whose records name its blobs (nil:
    /// it has none).
    static let oldDocuments: [(path: String, entity: String?)] = [
        ("v1/Flashcards.flashcards", "Card"), ("v1/Library.deck", "Person"),
        ("v2/Flashcards.flashcards", "Card"), ("v2/Library.deck", "Person"),
        ("v3/Dates.deck", nil), ("legacy/Legacy.deck", nil),
    ]

    /// The writer's guard lives in its connection: old documents get it without a change on
    /// disk, and a count taken below zero is a corrupt store in each of them.
    @Test(arguments: oldDocuments.map(\.path))
    func aCountBelowZeroIsCorruptionInEveryFormat(_ fixture: String) throws {
        let entity = Self.oldDocuments.first { $0.path == fixture }?.entity
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent((fixture as NSString).lastPathComponent)
            try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent(fixture), to: url)
            let store = try PackageStore.open(at: url, mode: .readWrite)
            let writer = try #require(store.writer)
            try writer.database.run("UPDATE deck_blob SET refs = 0")
            let guards = try writer.database.rows(
                "SELECT name FROM sqlite_temp_master WHERE type = 'trigger'")
            #expect(guards == [[.text("deck:refs-guard")]])
            if let entity {
                let error = expectDeckError { _ = try store.write { try $0.delete(RecordQuery(entity)) } }
                guard case .corrupt(_, let reason) = error else {
                    Issue.record("expected corrupt, got \(String(describing: error))")
                    return
                }
                #expect(reason.contains("deck gc --repair"))
            }
            try store.close()
            let onDisk = try rawStore(url).rows(
                "SELECT name FROM sqlite_master WHERE name = 'deck:refs-guard'")
            #expect(onDisk.isEmpty)
        }
    }

    /// A unique constraint names the entity and the properties of the index SQLite reports.
    @Test func aUniqueConstraintIsAUniqueViolation() throws {
        try withTestDirectory { dir throws in
            let store = try PackageStore.create(
                at: dir.appendingPathComponent("u.deck"), contentType: flashCardsType,
                schema: flashCardsSchema())
            try store.write { _ = try $0.insert("Tag", ["name": .string("a")]) }
            let error = expectDeckError {
                _ = try store.write { try $0.insert("Tag", ["name": .string("a")]) }
            }
            guard case .uniqueViolation("Tag", ["name"]) = error else {
                Issue.record("expected uniqueViolation, got \(String(describing: error))")
                return
            }
            try store.close()
        }
    }

    /// A statement SQLite refuses to prepare because of one of its limits is the query's fault:
    /// the depth of an expression (`SQLITE_ERROR`) and the length of the statement
    /// (`SQLITE_TOOBIG`), for each way of running a query.
    @Test(arguments: [SQLITE_LIMIT_EXPR_DEPTH, SQLITE_LIMIT_SQL_LENGTH])
    func aQueryOverALimitOfSQLiteIsAnInvalidQuery(_ limit: Int32) throws {
        try withTestDirectory { dir throws in
            let store = try PackageStore.create(
                at: dir.appendingPathComponent("q.deck"), contentType: flashCardsType,
                schema: flashCardsSchema())
            try store.write { _ = try $0.insert("Tag", ["name": .string("a")]) }
            let names = (0..<20).map { QueryExpression.property("name").equals(.value(.string("tag \($0)"))) }
            let query = RecordQuery("Tag", where: .or(names))
            let handle = try #require(store.writer).database.handle
            let previous = sqlite3_limit(handle, limit, limit == SQLITE_LIMIT_EXPR_DEPTH ? 4 : 200)
            let attempts: [(StoreTransaction) throws -> Void] = [
                { _ = try $0.fetch(query) }, { _ = try $0.fetchIDs(query) }, { _ = try $0.count(query) },
            ]
            for attempt in attempts {
                let error = expectDeckError {
                    let transaction = try store.beginTransaction()
                    defer { transaction.rollback() }
                    try attempt(transaction)
                }
                guard case .invalidQuery = error else {
                    Issue.record("expected invalidQuery, got \(String(describing: error))")
                    continue
                }
            }
            sqlite3_limit(handle, limit, previous)
            try store.close()
        }
    }
}
