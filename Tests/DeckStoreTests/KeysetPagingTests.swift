import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// Keyset paging (``RecordQuery/after``, ``RowCursor/position``): page after page, each
/// continuing after the last row of the one before, a query's rows come exactly as one fetch of
/// all of them sorts them — for every order the store sorts by, nulls, ties and foldings included.
@Suite("Keyset paging", .timed)
struct KeysetPagingTests {
    static let schema = StoreSchema(entities: [
        Entity(
            "Deck",
            attributes: [Attribute("title", .string, isOptional: true), Attribute("rank", .integer)],
            relationships: [Relationship("items", to: "Item", toMany: true, inverse: "deck")]),
        Entity(
            "Item",
            attributes: [
                Attribute("i", .integer, isOptional: true), Attribute("n", .integer),
                Attribute("x", .double, isOptional: true), Attribute("dec", .decimal, isOptional: true),
                Attribute("when", .date, isOptional: true), Attribute("flag", .bool, isOptional: true),
                Attribute("token", .uuid, isOptional: true), Attribute("name", .string),
                Attribute("label", .string, isOptional: true), Attribute("link", .url, isOptional: true),
                Attribute("bytes", .data, isOptional: true),
            ],
            relationships: [Relationship("deck", to: "Deck", inverse: "items")],
            indexes: [["n"], ["when"], ["label"]]),
        Entity("SubItem", superentity: "Item", attributes: [Attribute("extra", .integer)]),
    ])

    /// Texts that fold alike in some foldings and not in others.
    static let texts = [
        "Apple", "apple", "Äpfel", "apfel", "banana", "", "ß", "SS", "ss", "é", "e", "É", "İ", "i", "Zebra",
        "z",
    ]

    /// A small pool for each attribute, so that many records tie; nil where the attribute is optional.
    static func values(_ generator: inout SeededGenerator) -> [String: Value] {
        func pick<T>(_ pool: [T?], _ make: (T) -> Value) -> Value {
            pool.randomElement(using: &generator).flatMap { $0.map(make) } ?? .null
        }
        let tokens = (1...3).map { UUID(uuidString: "00000000-0000-0000-0000-00000000000\($0)") }
        return [
            "i": pick([nil, -5, 0, 0, 3, 3, 9_007_199_254_740_993, .max, .min], Value.integer),
            "n": pick([0, 1, 2, 3], Value.integer),
            "x": pick([nil, -1.5, -0.0, 0.0, 2.5, 1e300, 3], Value.double),
            "dec": pick(
                [
                    nil, "1.5", "1.50", "10", "2", "-3.25", "1.00000000000000000001",
                    "1.00000000000000000002",
                    "99999999999999999999999",
                ], { Value.decimal(Decimal(string: $0) ?? 0) }),
            "when": pick(
                [nil, 0, -86_400, 1.7e9, 1.7e9 + 0.5], { Value.date(Timestamp(timeIntervalSince1970: $0)) }),
            "flag": pick([nil, true, false], Value.bool),
            "token": pick(tokens + [nil], Value.uuid),
            "name": pick(texts, Value.string),
            "label": pick(texts + [nil, nil, nil], Value.string),
            "link": pick(
                [nil, "https://a.example/x", "https://A.example", "file:///tmp/a"],
                { URL(string: $0).map(Value.url) ?? .null }),
            "bytes": pick([nil, Data(), Data([0]), Data([0, 0]), Data([1]), Data([0xFF])], Value.data),
        ]
    }

    /// A store of 8 decks and 160 items (a quarter of them sub-items), their values drawn from
    /// the stream of `seed`; a fifth of the items have no deck.
    static func withItems(seed: UInt64, _ body: (PackageStore) throws -> Void) throws {
        var generator = SeededGenerator(seed: seed)
        try withTestDirectory { directory in
            let store = try PackageStore.create(
                at: directory.appendingPathComponent("items.deck"), contentType: "org.example.items",
                schema: schema)
            defer { try? store.close() }
            try store.write { transaction in
                var decks: [Int64] = []
                for index in 0..<8 {
                    let title: Value = index % 3 == 2 ? .null : .string(texts[index % 4])
                    decks.append(
                        try transaction.insert("Deck", ["title": title, "rank": .integer(Int64(index % 2))]))
                }
                for index in 0..<160 {
                    var values = Self.values(&generator)
                    if index % 5 != 0 {
                        values["deck"] = .reference(decks.randomElement(using: &generator) ?? 0)
                    }
                    if index % 4 == 3 {
                        values["extra"] = .integer(Int64.random(in: 0...2, using: &generator))
                        _ = try transaction.insert("SubItem", values)
                    } else {
                        _ = try transaction.insert("Item", values)
                    }
                }
            }
            try body(store)
        }
    }

    /// The ids of the rows of `query` after `after`, and the position of the last one.
    static func page(_ store: PackageStore, _ query: RecordQuery, after: RecordQuery.Position?) throws
        -> (ids: [Int64], last: RecordQuery.Position?)
    {
        var query = query
        query.after = after
        query.readsPositions = true
        var ids: [Int64] = []
        var last: RecordQuery.Position?
        try store.read { reader throws in
            try reader.forEachCursor(query) { cursor in
                ids.append(cursor.id)
                last = cursor.position
            }
        }
        return (ids, last)
    }

    /// The ids of `query`'s rows read `size` at a time, each page after the last row of the one
    /// before (its offset on the first page, its limit over all); at most 1,000, so that a
    /// condition that repeats rows fails the test rather than running for ever.
    static func paged(_ store: PackageStore, _ query: RecordQuery, size: Int) throws -> [Int64] {
        var ids: [Int64] = []
        var remaining = query.limit ?? .max
        var window = query
        var after: RecordQuery.Position?
        while remaining > 0 {
            window.limit = min(size, remaining)
            let (page, last) = try Self.page(store, window, after: after)
            ids += page
            guard page.count == window.limit, let last, ids.count <= 1_000 else { break }
            remaining -= page.count
            window.offset = 0
            after = last
        }
        return ids
    }

    /// A random sort key: an attribute, a path through the deck, the record id or an expression,
    /// either way, texts with a random folding.
    static func randomKey(_ generator: inout SeededGenerator, subItems: Bool) -> SortKey {
        let foldings = QueryExpression.TextComparison.allCases
        let texts: [QueryExpression] = [
            .property("name"), .property("label"), .property("deck.title"), .property("link"),
        ]
        var others: [QueryExpression] = [
            "i", "n", "x", "dec", "when", "flag", "token", "bytes", "deck.rank", "deck", "_id",
        ].map(QueryExpression.property)
        others += [
            .coalesce(.property("i"), .property("n")), .property("n") + .property("i"),
            .property("deck.items").count,
        ]
        if subItems { others += [.property("extra"), .property("extra")] }
        let ascending = Bool.random(using: &generator)
        if Int.random(in: 0..<3, using: &generator) == 0, let text = texts.randomElement(using: &generator) {
            return SortKey(
                text, ascending: ascending, folding: foldings.randomElement(using: &generator) ?? .exact)
        }
        return SortKey(others.randomElement(using: &generator) ?? .recordID, ascending: ascending)
    }

    @Test("Random orders, conditions and windows: pages of every size give what one sorted fetch gives")
    func randomOrders() throws {
        // Fixed seeds: the same records and the same 300 queries every run (the first 60 in a
        // sampled pass, TestSweep).
        try Self.withItems(seed: 0x5EE7_2026) { store in
            var generator = SeededGenerator(seed: 0x5EE7_2027)
            for round in 0..<TestSweep.count(300, sampled: 60) {
                let subItems = Int.random(in: 0..<4, using: &generator) == 0
                var query = RecordQuery(subItems ? "SubItem" : "Item")
                query.sort = (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                    Self.randomKey(&generator, subItems: subItems)
                }
                let conditions: [QueryExpression?] = [
                    nil, nil, .property("n") >= 1, .property("flag").equals(true),
                    .property("label").isNotNull,
                ]
                query.where = conditions.randomElement(using: &generator) ?? nil
                let all = try store.read { try $0.fetchIDs(query) }
                if round % 3 == 0 {
                    query.offset = Int.random(in: 0...5, using: &generator)
                    query.limit =
                        Bool.random(using: &generator) ? Int.random(in: 0...40, using: &generator) : nil
                }
                let expected = Array(all.dropFirst(query.offset).prefix(query.limit ?? .max))
                let size = Int.random(in: 1...9, using: &generator)
                let paged = try Self.paged(store, query, size: size)
                #expect(paged == expected, "round \(round), pages of \(size): \(query)")
                if paged != expected { return }
            }
        }
    }

    @Test("After any row, the rest of the order follows, whatever the keys' directions")
    func afterEveryRow() throws {
        try Self.withItems(seed: 7) { store in
            let orders: [[SortKey]] = [
                [SortKey("label", folding: .caseAndDiacriticInsensitive), SortKey("i", ascending: false)],
                [SortKey("deck.title", ascending: false), SortKey("x"), SortKey("when", ascending: false)],
                [SortKey("flag", ascending: false), SortKey("dec"), SortKey("token", ascending: false)],
                [SortKey("bytes"), SortKey("link", ascending: false, folding: .asciiCaseInsensitive)],
                [SortKey("n", ascending: false)], [SortKey("label", ascending: false)], [SortKey("when")],
            ]
            for sort in orders {
                let query = RecordQuery("Item", sort: sort)
                var all: [(id: Int64, position: RecordQuery.Position?)] = []
                var reading = query
                reading.readsPositions = true
                try store.read { reader throws in
                    try reader.forEachCursor(reading) { all.append(($0.id, $0.position)) }
                }
                for (index, row) in all.enumerated() {
                    let rest = try Self.page(store, query, after: row.position).ids
                    #expect(rest == all[(index + 1)...].map(\.id), "after row \(index) of \(sort)")
                }
            }
        }
    }

    @Test("A position holds the values the store sorted by: it outlives its record's changes and deletion")
    func positionOutlivesRecord() throws {
        try Self.withItems(seed: 11) { store in
            let query = RecordQuery(
                "Item",
                sort: [SortKey("deck.title", folding: .caseInsensitive), SortKey("n", ascending: false)])
            let all = try store.read { try $0.fetchIDs(query) }
            var first = query
            first.limit = 60
            let end = try #require(try Self.page(store, first, after: nil).last)
            #expect(end.recordID == all[59])
            // The last row of the page changes so that it sorts first among its deck's items…
            try store.write { try $0.update("Item", id: end.recordID, ["n": .integer(99)]) }
            #expect(try Self.page(store, query, after: end).ids == Array(all[60...]))
            // …then goes, and so do two rows after it.
            try store.write { transaction in
                for id in [end.recordID, all[60], all[100]] { _ = try transaction.delete("Item", id: id) }
            }
            let rest = all[61...].filter { $0 != all[100] }
            #expect(try Self.page(store, query, after: end).ids == rest)
            // A row before the position that changes to sort after it comes again.
            try store.write { try $0.update("Item", id: all[10], ["deck": .null, "n": .integer(-1)]) }
            let moved = try Self.page(store, query, after: end).ids
            #expect(Set(moved) == Set(rest).union([all[10]]))
        }
    }

    @Test("The record id ends every order: pages of one through rows that tie on every key")
    func ties() throws {
        try Self.withItems(seed: 3) { store in
            for sort in [
                [SortKey("flag")], [SortKey("flag", ascending: false)], [SortKey("deck.rank"), SortKey("n")],
            ] {
                let query = RecordQuery("Item", sort: sort)
                let all = try store.read { try $0.fetchIDs(query) }
                #expect(try Self.paged(store, query, size: 1) == all)
            }
        }
    }

    @Test("Texts that are not valid UTF-8 page by their bytes")
    func invalidText() throws {
        try withTestDirectory { directory in
            let url = directory.appendingPathComponent("texts.deck")
            var ids: [Int64] = []
            do {
                let store = try PackageStore.create(
                    at: url, contentType: "org.example.items", schema: Self.schema)
                try store.write { transaction in
                    for index in 0..<12 {
                        ids.append(
                            try transaction.insert("Item", ["n": .integer(0), "name": .string("\(index)")]))
                    }
                }
                try store.close()
            }
            // Texts a String cannot hold: each would read as U+FFFD followed by a letter.
            let database = try rawStore(url)
            let bytes: [[UInt8]] = [
                [0xFF, 0x41], [0xFE, 0x41], [0xFF, 0x42], [0xC0, 0x41], [0x41, 0xFF],
            ]
            for (id, text) in zip(ids, bytes + bytes) {
                try database.run(
                    "UPDATE Item SET label = CAST(? AS TEXT) WHERE _pk = ?",
                    [.blob(Data(text)), .integer(id)])
            }
            database.close()
            let store = try PackageStore.open(at: url)
            defer { try? store.close() }
            for ascending in [true, false] {
                let query = RecordQuery("Item", sort: [SortKey("label", ascending: ascending)])
                let all = try store.read { try $0.fetchIDs(query) }
                #expect(try Self.paged(store, query, size: 1) == all)
                #expect(try Self.paged(store, query, size: 2) == all)
            }
        }
    }

    @Test("Up to 31 sort keys with a folding each (62 terms): the condition stays within SQLite's limits")
    func manyKeys() throws {
        try Self.withItems(seed: 5) { store in
            // The record's own texts: SQLite 3.40 crashes on an ORDER BY of 64 terms or more of
            // which one reads a joined table, a limit of its own.
            let keys = ["label", "name", "link", "token"].map {
                SortKey($0, ascending: $0 != "name", folding: .caseAndDiacriticInsensitive)
            }
            for count in [4, 8, 12, 16, 24, RecordQuery.Limits.sortKeys / 2] {
                let query = RecordQuery("Item", sort: (0..<count).map { keys[$0 % keys.count] })
                let all = try store.read { try $0.fetchIDs(query) }
                #expect(try Self.paged(store, query, size: 7) == all, "\(count) keys")
                // Within the parser's budget the condition stays in the statement (past it, it would
                // move into a common table expression).
                var paging = query
                paging.after = RecordQuery.Position(
                    keys: Array(repeating: .value(.text("a")), count: 2 * count), recordID: 1)
                var compiler = QueryCompiler(
                    mapping: store.mapping, entity: try store.mapping.entity("Item"), dateEpoch: .reference)
                let (sql, _) = try compiler.select(paging, columns: "r._pk")
                #expect(!sql.hasPrefix("WITH deck_filter"), "\(count) keys")
            }
        }
    }

    @Test("An index on the first sort key finds the position: no batch reads the rows before it")
    func indexSeek() throws {
        try Self.withItems(seed: 13) { store in
            let mapping = store.mapping
            // The key, its direction, the position's value, and whether a bound seeks to it: not
            // for a descending key with nulls (they come last), which still walks the index in
            // order rather than reading each disjunction through it and sorting what they find.
            let cases: [(String, Bool, SQLValue, Bool)] = [
                ("n", false, .integer(2), true), ("n", true, .integer(2), true),
                ("when", true, .real(0), true),
                ("label", true, .text("b"), true), ("label", false, .null, true),
                ("when", false, .real(0), false),
                ("_id", true, .integer(9), true),
            ]
            for (key, ascending, value, seeks) in cases {
                var query = RecordQuery("Item", sort: [SortKey(key, ascending: ascending)], limit: 10)
                query.after = RecordQuery.Position(keys: [.value(value)], recordID: 50)
                var compiler = QueryCompiler(
                    mapping: mapping, entity: try mapping.entity("Item"), dateEpoch: .reference)
                let (sql, arguments) = try compiler.select(query, columns: "r._pk")
                let plan = try store.read { reader throws in
                    try reader.live().database.prepareAndCollect("EXPLAIN QUERY PLAN " + sql, arguments) {
                        $0.text(at: 3)
                    }
                }
                let label = "\(key) \(ascending ? "ascending" : "descending") after \(value): \(plan)"
                #expect(plan.contains { $0.hasPrefix("SEARCH r USING") } == seeks, "\(label)")
                #expect(!plan.contains("USE TEMP B-TREE FOR ORDER BY"), "\(label)")
                #expect(!plan.contains("MULTI-INDEX OR"), "\(label)")
            }
        }
    }

    @Test("A position of another order is refused")
    func wrongPosition() throws {
        try Self.withItems(seed: 17) { store in
            var query = RecordQuery("Item", sort: [SortKey("name", folding: .caseInsensitive)])
            query.after = RecordQuery.Position(keys: [.value(.text("a"))], recordID: 1)
            #expect {
                try store.read { try $0.fetchIDs(query) }
            } throws: { error in
                guard let error = error as? DeckError, case .misuse = error else { return false }
                return true
            }
        }
    }
}
