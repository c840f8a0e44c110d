import DeckKit
import DeckSQLite
import DeckTestTiming
import Foundation
import Testing

/// Schemas and expressions at and beyond the limits (spec section 5.9, deck(1) EXPRESSIONS),
/// relationships of sibling entities, and messages that never show generated SQL.
@Suite("End to end: limits and inheritance", .timed)
struct EndToEndLimitsTests {
    /// Writes `schema` as a schema file in `directory` and runs `deck new` with it.
    func create(_ schema: StoreSchema, in directory: TemporaryDirectory, name: String = "Test.deck") throws
        -> (
            path: String, result: RunResult
        )
    {
        let schemaPath = directory.appending("schema-\(UUID().uuidString.prefix(6)).json")
        try JSONEncoder().encode(schema).write(to: URL(fileURLWithPath: schemaPath))
        let path = directory.appending(name)
        return (path, try deck("new", path, "--schema", schemaPath))
    }

    /// Runs `deck new` with an invalid schema and checks the refusal: 65, the fragments, no SQL,
    /// and nothing created.
    func expectRefused(
        _ schema: StoreSchema, _ fragments: String..., sourceLocation: SourceLocation = #_sourceLocation
    )
        throws
    {
        let directory = try TemporaryDirectory()
        let (path, result) = try create(schema, in: directory)
        #expect(result.status == 65, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(
            result.stderr.hasPrefix("deck: invalid schema: "), "\(result.stderr)",
            sourceLocation: sourceLocation)
        for fragment in fragments {
            #expect(
                result.stderr.contains(fragment), "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        }
        for sql in ["CREATE", "SQLite", "STRICT"] {
            #expect(!result.stderr.contains(sql), "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        }
        #expect(!FileManager.default.fileExists(atPath: path), sourceLocation: sourceLocation)
    }

    @Test func schemasBeyondTheLimitsAreRefusedClearly() throws {
        // The tester's 2,100 attributes, formerly "too many columns" and a CREATE TABLE dump (74).
        try expectRefused(
            StoreSchema(entities: [
                StoreSchema.Entity(
                    "Wide", attributes: (0..<2_100).map { StoreSchema.Attribute("a\($0)", .integer) })
            ]),
            "hierarchy 'Wide'", "2100 properties", "at most 1000")
        // The 3,000-level chain that took 95 seconds to open.
        let chain = StoreSchema(
            entities: (1...3_000).map {
                StoreSchema.Entity("E\($0)", superentity: $0 == 1 ? nil : "E\($0 - 1)")
            })
        try expectRefused(chain, "3000 entities", "at most 1000")
        try expectRefused(
            StoreSchema(entities: Array(chain.entities.prefix(101))), "'E101' is 101 levels deep",
            "at most 100")
    }

    @Test func siblingsMustSpellASharedColumnAlike() throws {
        try expectRefused(
            StoreSchema(entities: [
                StoreSchema.Entity("Item"),
                StoreSchema.Entity(
                    "Book", superentity: "Item", attributes: [StoreSchema.Attribute("Shared", .string)]),
                StoreSchema.Entity(
                    "Film", superentity: "Item", attributes: [StoreSchema.Attribute("shared", .string)]),
            ]),
            "'Film.shared' and 'Book.Shared' would both be column 'Shared'", "spell them the same")
    }

    @Test func twoRelationshipsCannotShareAnInverse() throws {
        try expectRefused(
            StoreSchema(entities: [
                StoreSchema.Entity(
                    "Person",
                    relationships: [
                        StoreSchema.Relationship("books", to: "Book", toMany: true, inverse: "owner"),
                        StoreSchema.Relationship("novels", to: "Book", toMany: true, inverse: "owner"),
                    ]),
                StoreSchema.Entity("Book", relationships: [StoreSchema.Relationship("owner", to: "Person")]),
            ]),
            "both have 'Book.owner' as their inverse")
    }

    /// Item > Book, Film; both siblings' `owner` share one column.
    static let library = StoreSchema(entities: [
        StoreSchema.Entity(
            "Person", attributes: [StoreSchema.Attribute("name", .string)],
            relationships: [
                StoreSchema.Relationship(
                    "books", to: "Book", toMany: true, inverse: "owner", deleteRule: .cascade),
                StoreSchema.Relationship("films", to: "Film", toMany: true, inverse: "owner"),
            ]),
        StoreSchema.Entity("Item", attributes: [StoreSchema.Attribute("title", .string)]),
        StoreSchema.Entity(
            "Book", superentity: "Item",
            attributes: [StoreSchema.Attribute("isbn", .string, options: [.unique])],
            relationships: [StoreSchema.Relationship("owner", to: "Person", inverse: "books")]),
        StoreSchema.Entity(
            "Film", superentity: "Item",
            relationships: [StoreSchema.Relationship("owner", to: "Person", inverse: "films")]),
    ])

    @Test func siblingsSharingAnInverseColumn() throws {
        let directory = try TemporaryDirectory()
        let (path, created) = try create(Self.library, in: directory)
        e2eExpectSuccess(created)
        e2eExpectSuccess(try deck("insert", path, "Person", "name=Ann"))
        e2eExpectSuccess(try deck("insert", path, "Book", "title=Dune", "isbn=1", "owner=#1"))
        e2eExpectSuccess(try deck("insert", path, "Film", "title=Alien", "owner=#1"))
        // The film (#2 in Item) is not one of Ann's books.
        let books = try deck("query", path, "Person", "--where", "books = #2", "--count")
        e2eExpectSuccess(books)
        #expect(books.stdout == "0\n")
        let films = try deck("query", path, "Person", "--where", "films = #2", "--count")
        #expect(films.stdout == "1\n")
        let owned = try e2eJSONArray(
            try deck("query", path, "Book", "--where", "owner.name = Ann", "--json").stdout)
        #expect(owned.map { $0["title"] as? String } == ["Dune"])
        // A duplicate ISBN names the entity, not the table.
        let duplicate = try deck("insert", path, "Book", "title=Emma", "isbn=1")
        e2eExpectFailure(duplicate, status: 65, "Book: another record already has the same isbn")
        #expect(!duplicate.stderr.contains("Item"))
        // Deleting Ann cascades to her book only; the film stays, without an owner.
        e2eExpectSuccess(try deck("delete", path, "Person", "--all"))
        let left = try e2eJSONArray(try deck("query", path, "Item", "--json").stdout)
        #expect(left.map { $0["title"] as? String } == ["Alien"])
        e2eExpectSuccess(try deck("verify", path))
    }

    /// A chain of 70 nodes, each the parent of the next.
    func nodes(in directory: TemporaryDirectory) throws -> String {
        let schema = StoreSchema(entities: [
            StoreSchema.Entity(
                "Node", attributes: [StoreSchema.Attribute("n", .integer)],
                relationships: [StoreSchema.Relationship("parent", to: "Node")])
        ])
        let (path, created) = try create(schema, in: directory)
        e2eExpectSuccess(created)
        var script = ""
        for index in 1...70 {
            script += "insert Node n=\(index % 10)" + (index > 1 ? " parent=#\(index - 1)" : "") + "\n"
        }
        let shell = try deck("open", path, "--shell", stdin: script + "save\n")
        #expect(shell.status == 0, "\(shell.stderr)")
        return path
    }

    @Test func expressionsAtAndBeyondTheLimits() throws {
        let directory = try TemporaryDirectory()
        let path = try nodes(in: directory)
        func count(_ expression: String) throws -> RunResult {
            try deck("query", path, "Node", "--where", expression, "--count")
        }
        // 1,000 or-ed conditions: formerly "Expression tree is too large" and 23 KB of SQL (74).
        let thousand = try count(
            (0..<1_000).map { "n = \($0 + 100)" }.joined(separator: " or ") + " or n = 3")
        e2eExpectSuccess(thousand)
        #expect(thousand.stdout == "7\n")
        // 100 levels of not: formerly "parser stack overflow".
        let nots = try count(String(repeating: "not ", count: 99) + "n = 3")
        e2eExpectSuccess(nots)
        #expect(nots.stdout == "63\n")
        // 63 relationship steps work; 2,000 are refused at once.
        let deep = try count(String(repeating: "parent.", count: 63) + "n = 4")
        e2eExpectSuccess(deep)
        #expect(deep.stdout == "1\n")
        let hops = try count(String(repeating: "parent.", count: 2_000) + "n = 1")
        e2eExpectFailure(hops, status: 65, "follows 2000 relationships", "at most 63")
        // More conditions than the limit, within the 65,536 bytes an expression may have.
        let many = try count((0..<12_000).map { _ in "n=1" }.joined(separator: "||"))
        e2eExpectFailure(many, status: 65, "more than 10000 conditions")
        for result in [hops, many] {
            #expect(!result.stderr.contains("SELECT"), "\(result.stderr)")
            #expect(result.stderr.utf8.count < 300, "\(result.stderr)")
        }
    }

    @Test func generatedSQLIsShownOnlyWhenAskedFor() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        // Damage the store so that a query fails inside SQLite: no join table for Card.tags.
        let store = try Database(path: path + "/store.sqlite", mode: .readWrite)
        try store.execute("DROP TABLE \"Card.tags\"")
        store.close()
        let plain = try deck("query", path, "Card", "--where", "tags = #1")
        #expect(plain.status != 0)
        #expect(!plain.stderr.contains("SELECT"), "\(plain.stderr)")
        let debug = try deck(
            "query", path, "Card", "--where", "tags = #1", environment: ["DECK_DEBUG_SQL": "1"])
        #expect(debug.status == plain.status)
        if debug.status == 74 {
            // SQLite's own error: with DECK_DEBUG_SQL=1 the statement follows it.
            #expect(debug.stderr.contains("no such table"), "\(debug.stderr)")
            #expect(debug.stderr.contains("while executing: SELECT"), "\(debug.stderr)")
        }
    }

    @Test func everyStatementIsLoggedAtLevelTwoWithoutItsValues() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let quiet = try deck(
            "query", path, "Card", "--where", "front = 'secret value'", environment: ["DECK_DEBUG_SQL": "1"])
        #expect(!quiet.stderr.contains("deck sql:"), "\(quiet.stderr)")
        let traced = try deck(
            "query", path, "Card", "--where", "front = 'secret value'", environment: ["DECK_DEBUG_SQL": "2"])
        #expect(traced.status == quiet.status)
        #expect(traced.stdout == quiet.stdout)
        #expect(traced.stderr.contains("deck sql: SELECT"), "\(traced.stderr)")
        // Values are bound, never logged.
        #expect(!traced.stderr.contains("secret value"), "\(traced.stderr)")
    }
}
