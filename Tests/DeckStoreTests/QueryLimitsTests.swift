import DeckQueryLanguage
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// Filters of every shape and size up to the limits of ``Query/Limits`` run, and return what a
/// direct evaluation in Swift returns; beyond the limits they are refused with a clear error
/// (never a raw SQLite error).
@Suite("RecordQuery limits", .timed)
struct QueryLimitsTests {
    static let schema = StoreSchema(entities: [
        Entity(
            "Node",
            attributes: [
                Attribute("n", .integer), Attribute("s", .string, isOptional: true),
                Attribute("d", .decimal, isOptional: true),
            ],
            relationships: [
                Relationship("parent", to: "Node", inverse: "children"),
                Relationship("children", to: "Node", toMany: true, inverse: "parent"),
                Relationship("left", to: "Node", inverse: "right"),
                Relationship("right", to: "Node", inverse: "left"),
            ])
    ])

    /// What the test knows about each record, to evaluate filters without SQL.
    struct Row {
        let id: Int64
        let n: Int64
        let s: String?
        let parent: Int?
    }

    static let words = ["apple", "Apricot", "banana", "cherry", "", "ApPle pie", "kiwi"]

    /// 80 nodes in one chain (each the parent of the next); `n` cycles through 0…9, `s` through
    /// `words` and null.
    static func withNodes(_ body: (StoreTransaction, [Row]) throws -> Void) throws {
        try withTestDirectory { dir throws in
            let store = try makeTestStore(in: dir, schema: schema)
            var rows: [Row] = []
            try store.write { tx in
                for index in 0..<80 {
                    let s: String? = index % 8 == 7 ? nil : words[index % words.count]
                    var values: [String: Value] = [
                        "n": .integer(Int64(index % 10)), "s": s.map(Value.string) ?? .null,
                    ]
                    if let last = rows.last { values["parent"] = .reference(last.id) }
                    let id = try tx.insert("Node", values)
                    rows.append(
                        Row(id: id, n: Int64(index % 10), s: s, parent: rows.isEmpty ? nil : rows.count - 1))
                }
            }
            let tx = try store.beginTransaction()
            defer { tx.rollback() }
            try body(tx, rows)
            tx.rollback()
            try store.close()
        }
    }

    /// The ids `filter` matches, evaluated directly (two-valued: a condition on null is false).
    static func evaluate(_ filter: QueryExpression, _ rows: [Row]) -> [Int64] {
        func value(_ key: String, _ row: Row) -> Row? {
            var current: Row? = row
            for _ in key.split(separator: ".").dropLast() { current = current?.parent.map { rows[$0] } }
            return current
        }
        func holds(_ filter: QueryExpression, _ row: Row) -> Bool {
            switch filter {
            case .value(.bool(let value)): return value
            case .and(let parts): return parts.allSatisfy { holds($0, row) }
            case .or(let parts): return parts.contains { holds($0, row) }
            case .not(let inner): return !holds(inner, row)
            case .compare(.path(let path), let op, .value(.integer(let wanted))):
                let key = path.names.joined(separator: ".")
                // != holds for a missing value, as in SQL's IS NOT.
                guard let target = value(key, row) else { return op == .notEqual }
                let n = target.n
                switch op {
                case .equal: return n == wanted
                case .notEqual: return n != wanted
                case .less: return n < wanted
                case .lessOrEqual: return n <= wanted
                case .greater: return n > wanted
                case .greaterOrEqual: return n >= wanted
                }
            case .compare(.path(let path), .equal, .value(.reference(let child)))
            where path.names == ["children"]:
                return rows.first { $0.id == child }?.parent.map { rows[$0].id } == row.id
            case .isNull(.path(let path)) where path.names.last == "s":
                return value(path.names.joined(separator: "."), row)?.s == nil
            case .text(.path(let path), let match, .value(.string(let needle)), let folding):
                guard var text = value(path.names.joined(separator: "."), row)?.s else { return false }
                var needle = needle
                if folding == .asciiCaseInsensitive {
                    (text, needle) = (text.lowercased(), needle.lowercased())
                }
                switch match {
                case .contains: return needle.isEmpty || text.contains(needle)
                case .beginsWith: return text.hasPrefix(needle)
                case .endsWith: return text.hasSuffix(needle)
                case .equals: return text == needle
                }
            case .oneOf(.path(let path), let list):
                guard let target = value(path.names.joined(separator: "."), row) else { return false }
                return list.contains(.value(.integer(target.n)))
            default:
                Issue.record("the evaluator does not know \(filter)")
                return false
            }
        }
        return rows.filter { holds(filter, $0) }.map(\.id)
    }

    /// The seeded generator (``TestSeed``), so that a failure repeats.
    typealias Generator = SeededGenerator

    static func randomCondition(_ random: inout Generator, rows: [Row]) -> QueryExpression {
        let path = String(repeating: "parent.", count: Int.random(in: 0...2, using: &random))
        switch Int.random(in: 0..<7, using: &random) {
        case 0:
            let ops: [QueryExpression.Comparison] = [
                .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual,
            ]
            return .compare(
                .property(path + "n"), ops.randomElement(using: &random)!,
                .value(.integer(Int64.random(in: 0...9, using: &random))))
        case 1:
            let matches: [QueryExpression.TextOperator] = [.contains, .beginsWith, .endsWith]
            return .text(
                .property(path + "s"), matches.randomElement(using: &random)!,
                .value(.string(["ap", "e", "", "Pie", "an"].randomElement(using: &random)!)),
                Bool.random(using: &random) ? .asciiCaseInsensitive : .exact)
        case 2: return .isNull(.property(path + "s"))
        case 3:
            return .oneOf(
                .property(path + "n"),
                (0..<Int.random(in: 1...4, using: &random)).map { _ in
                    .value(.integer(Int64.random(in: 0...9, using: &random)))
                })
        case 4:
            return .compare(
                .property("children"), .equal, .value(.reference(rows.randomElement(using: &random)!.id)))
        case 5: return .not(randomCondition(&random, rows: rows))
        default: return true
        }
    }

    /// A random filter `depth` levels deep, with up to `width` parts per level.
    static func randomFilter(_ random: inout Generator, depth: Int, width: Int, rows: [Row])
        -> QueryExpression
    {
        guard depth > 0 else { return randomCondition(&random, rows: rows) }
        var parts = (0..<Int.random(in: 0...width, using: &random)).map { _ in
            randomCondition(&random, rows: rows)
        }
        parts.insert(
            randomFilter(&random, depth: depth - 1, width: width, rows: rows),
            at: Int.random(in: 0...parts.count, using: &random))
        switch Int.random(in: 0..<3, using: &random) {
        case 0: return .and(parts)
        case 1: return .or(parts)
        default: return .not(.or(parts))
        }
    }

    @Test func randomFiltersMatchADirectEvaluation() throws {
        try Self.withNodes { tx, rows throws in
            let seed = TestSeed("QueryLimitsTests.randomFilters", filter: "QueryLimitsTests")
            var random = seed.generator()
            for round in 0..<300 {
                // Shallow and narrow, deep and narrow, shallow and wide.
                let (depth, width) = [(3, 3), (40, 2), (2, 40)][round % 3]
                let filter = Self.randomFilter(&random, depth: depth, width: width, rows: rows)
                let ids = try tx.fetchIDs(RecordQuery("Node", where: filter))
                #expect(ids == Self.evaluate(filter, rows), "round \(round), \(seed): \(filter)")
            }
        }
    }

    @Test func aThousandAlternativesAndTheLimitOfConditions() throws {
        try Self.withNodes { tx, rows throws in
            // The tester's 1,000 or-ed conditions, then the limit.
            for count in [1_000, RecordQuery.Limits.conditions] {
                // The closure's type written out: inferred, it took the type checker 2.3 s.
                let filter = QueryExpression.or(
                    (0..<count).map { (index: Int) -> QueryExpression in
                        let value = Int64(index % 10 == 3 ? 3 : 100 + index)
                        return .compare(.property("n"), .equal, .value(.integer(value)))
                    })
                #expect(
                    try tx.count(RecordQuery("Node", where: filter)) == rows.filter { $0.n == 3 }.count)
            }
            let beyond = QueryExpression.or(
                (0...RecordQuery.Limits.conditions).map {
                    .compare(.property("n"), .equal, .value(.integer(Int64($0))))
                })
            Self.expectInvalidQuery(tx, beyond, "more than \(RecordQuery.Limits.conditions) conditions")
            // Negated, nested in pairs: still fine.
            let pairs = QueryExpression.and(
                (0..<(RecordQuery.Limits.conditions / 2)).map { index in
                    .not(
                        .and([
                            .compare(.property("n"), .equal, .value(.integer(Int64(index + 100)))),
                            .text(.property("s"), .endsWith, .value(.string("x")), .asciiCaseInsensitive),
                        ]))
                })
            #expect(try tx.count(RecordQuery("Node", where: pairs)) == rows.count)
        }
    }

    @Test func theLimitOfValues() throws {
        try Self.withNodes { tx, rows throws in
            let list = (0..<Int64(RecordQuery.Limits.values)).map { Value.integer($0 == 0 ? 4 : 1_000 + $0) }
            #expect(
                try tx.count(
                    RecordQuery("Node", where: .oneOf(.property("n"), list.map(QueryExpression.value))))
                    == rows.filter { $0.n == 4 }.count
            )
            Self.expectInvalidQuery(
                tx, .oneOf(.property("n"), (list + [.integer(5)]).map(QueryExpression.value)),
                "more than \(RecordQuery.Limits.values) values")
            Self.expectInvalidQuery(
                tx,
                .and([
                    .compare(.property("n"), .equal, .value(.integer(1))),
                    .oneOf(.property("n"), list.map(QueryExpression.value)),
                ]),
                "more than \(RecordQuery.Limits.values) values")
        }
    }

    @Test func nestingToTheLimit() throws {
        try Self.withNodes { tx, rows throws in
            // Alternating and/or with the heaviest conditions at every level, down to the limit.
            var filter: QueryExpression = .text(
                .property("parent.s"), .endsWith, .value(.string("e")), .asciiCaseInsensitive)
            for level in 0..<(RecordQuery.Limits.nesting / 2) {
                filter = .not(
                    level % 2 == 0
                        ? .or([
                            filter,
                            .compare(.property("children"), .equal, .value(.reference(rows[level].id))),
                        ])
                        : .and([
                            .oneOf(
                                .property("parent.parent.n"),
                                [.integer(1), .integer(2)].map(QueryExpression.value)), filter,
                        ]))
            }
            #expect(try tx.fetchIDs(RecordQuery("Node", where: filter)) == Self.evaluate(filter, rows))
            // As the parser reads it: 100 levels of parentheses and not.
            let text =
                String(repeating: "not (n = 1 or ", count: 50) + "s ends-with[c] 'E'"
                + String(repeating: ")", count: 50)
            let parsed = try QueryParser.parse(text)
            #expect(try tx.fetchIDs(RecordQuery("Node", where: parsed)) == Self.evaluate(parsed, rows))
            let nots = try QueryParser.parse(String(repeating: "not ", count: 99) + "n = 1")
            #expect(try tx.fetchIDs(RecordQuery("Node", where: nots)) == Self.evaluate(nots, rows))
            // What the parser accepts at its limit compiles: a top-level list, then 100 groups.
            let groups = try QueryParser.parse(
                "n = 1 or " + String(repeating: "(n = 2 and ", count: 100) + "s is null"
                    + String(repeating: ")", count: 100))
            #expect(try tx.fetchIDs(RecordQuery("Node", where: groups)) == Self.evaluate(groups, rows))
            // Each not may have 100 around it; one more is refused.
            var deeper: QueryExpression = .compare(.property("n"), .equal, .value(.integer(1)))
            for _ in 0...RecordQuery.Limits.nesting { deeper = .not(deeper) }
            #expect(try tx.fetchIDs(RecordQuery("Node", where: deeper)) == Self.evaluate(deeper, rows))
            Self.expectInvalidQuery(
                tx, .not(deeper), "nested more than \(RecordQuery.Limits.nesting) levels")
        }
    }

    @Test func wideAndDeepAtOnce() throws {
        try Self.withNodes { tx, rows throws in
            // 100 levels, each with 99 conditions beside the next level: 9,900 conditions.
            var filter: QueryExpression = .compare(.property("n"), .equal, .value(.integer(5)))
            for level in 0..<RecordQuery.Limits.nesting {
                let siblings = (0..<99).map { index -> QueryExpression in
                    .text(
                        .property("s"), .contains, .value(.string("zz\(level)-\(index)")),
                        (index % 2 == 0 ? .asciiCaseInsensitive : .exact))
                }
                filter =
                    level % 2 == 0 ? .or(siblings + [filter]) : .and([filter] + siblings.map { .not($0) })
            }
            #expect(try tx.fetchIDs(RecordQuery("Node", where: filter)) == Self.evaluate(filter, rows))
        }
    }

    @Test func relationshipSteps() throws {
        try Self.withNodes { tx, rows throws in
            let limit = RecordQuery.Limits.relationshipSteps
            let key = String(repeating: "parent.", count: limit) + "n"
            let expected = rows.filter { $0.id > Int64(limit) + rows[0].id - 1 }.filter {
                rows[Int($0.id - rows[0].id) - limit].n == 7
            }
            #expect(
                try tx.fetchIDs(
                    RecordQuery("Node", where: .compare(.property(key), .equal, .value(.integer(7)))))
                    == expected.map(\.id))
            // Sorting by a path shares its steps with the filter.
            #expect(
                try tx.fetchIDs(
                    RecordQuery(
                        "Node", where: .compare(.property(key), .equal, .value(.integer(7))),
                        sort: [SortKey("parent.n", ascending: false)])
                )
                .count == expected.count)
            Self.expectInvalidQuery(
                tx, .compare(.property("parent." + key), .equal, .value(.integer(7))),
                "follows \(limit + 1) relationships")
            // A tester's thousands of hops: refused at once.
            Self.expectInvalidQuery(
                tx,
                .compare(
                    .property(String(repeating: "parent.", count: 9_000) + "n"), .equal, .value(.integer(1))),
                "follows 9000 relationships")
            // Different steps add up across keys.
            Self.expectInvalidQuery(
                tx,
                .and([
                    .compare(.property(key), .equal, .value(.integer(7))),
                    .compare(.property("left.n"), .equal, .value(.integer(1))),
                ]),
                "more than \(limit) different relationship steps")
        }
    }

    @Test func sortKeys() throws {
        try Self.withNodes { tx, _ throws in
            let keys = (0..<RecordQuery.Limits.sortKeys).map { SortKey($0 % 2 == 0 ? "n" : "s") }
            #expect(try tx.fetchIDs(RecordQuery("Node", sort: keys)).count == 80)
            let error = expectDeckError {
                _ = try tx.fetchIDs(RecordQuery("Node", sort: keys + [SortKey("n")]))
            }
            guard case .invalidQuery(let message) = error else {
                Issue.record("expected invalidQuery, got \(String(describing: error))")
                return
            }
            #expect(message.contains("at most \(RecordQuery.Limits.sortKeys)"))
        }
    }

    /// A key that folds text sorts by two terms; SQLite 3.40 crashes on an ORDER BY of 64 terms
    /// or more of which one reads a joined table, so the limit counts terms.
    @Test func foldingKeysCountTwiceAndAJoinedKeyAtTheLimitRuns() throws {
        try Self.withNodes { tx, _ throws in
            let joined = [SortKey("parent.n")] + (1..<RecordQuery.Limits.sortKeys).map { _ in SortKey("n") }
            #expect(try tx.fetchIDs(RecordQuery("Node", sort: joined)).count == 80)
            let folded = (0..<RecordQuery.Limits.sortKeys / 2).map { _ in
                SortKey("s", folding: .caseAndDiacriticInsensitive)
            }
            #expect(try tx.fetchIDs(RecordQuery("Node", sort: folded)).count == 80)
            for keys in [
                folded + [SortKey("n")],
                [SortKey("parent.s", folding: .caseAndDiacriticInsensitive)] + folded,
            ] {
                let error = expectDeckError { _ = try tx.fetchIDs(RecordQuery("Node", sort: keys)) }
                guard case .invalidQuery(let message) = error else {
                    Issue.record("expected invalidQuery, got \(String(describing: error))")
                    continue
                }
                #expect(message.contains("counts twice"), "\(message)")
            }
        }
    }

    @Test func inverseToOneAndDecimalKeys() throws {
        try Self.withNodes { tx, rows throws in
            try tx.update(
                "Node", id: rows[1].id, ["right": .reference(rows[2].id), "d": .decimal(Decimal(12))])
            try tx.update("Node", id: rows[2].id, ["d": .decimal(Decimal(9))])
            #expect(
                try tx.fetchIDs(
                    RecordQuery("Node", where: .compare(.property("left.n"), .equal, .value(.integer(1)))))
                    == [
                        rows[2].id
                    ])
            #expect(
                try tx.fetchIDs(
                    RecordQuery("Node", where: .compare(.property("right.d"), .less, .value(.integer(10)))))
                    == [
                        rows[1].id
                    ])
            #expect(try tx.fetchIDs(RecordQuery("Node", where: .isNull(.property("right")))).count == 79)
            #expect(
                try tx.fetchIDs(
                    RecordQuery("Node", where: .not(.isNull(.property("d"))), sort: [SortKey("d")]))
                    == [
                        rows[2].id, rows[1].id,
                    ])
            #expect(try tx.record("Node", id: rows[2].id)?["left"] == .reference(rows[1].id))
            #expect(
                try tx.fetchIDs(
                    RecordQuery(
                        "Node", where: .compare(.property("children"), .equal, .value(.reference(rows[5].id)))
                    )) == [
                        rows[4].id
                    ])
            #expect(try tx.count(RecordQuery("Node", where: .isNull(.property("children")))) == 1)
            #expect(
                try tx.count(
                    RecordQuery(
                        "Node",
                        where: .compare(.property("children"), .notEqual, .value(.reference(rows[5].id)))))
                    == 79)
        }
    }

    @Test func partsThatAConstantDecidesAreStillChecked() throws {
        try Self.withNodes { tx, rows throws in
            #expect(
                try tx.count(
                    RecordQuery(
                        "Node", where: .or([true, .compare(.property("n"), .equal, .value(.integer(1)))])))
                    == 80)
            #expect(
                try tx.count(RecordQuery("Node", where: .and([.not(true), .isNull(.property("s"))])))
                    == 0)
            for filter: QueryExpression in [
                .or([.compare(.property("nope"), .equal, .value(.integer(1))), true]),
                .and([
                    .oneOf(.property("n"), [].map(QueryExpression.value)),
                    .not(.isNull(.property("parent.nope"))),
                ]),
            ] {
                let error = expectDeckError { _ = try tx.count(RecordQuery("Node", where: filter)) }
                guard case .unknownProperty("Node", "nope", _) = error else {
                    Issue.record("expected unknownProperty, got \(String(describing: error))")
                    continue
                }
            }
            let wrongValue = expectDeckError {
                _ = try tx.count(
                    RecordQuery(
                        "Node", where: .or([true, .compare(.property("n"), .equal, .value(.string("x")))])))
            }
            guard case .invalidValue = wrongValue else {
                Issue.record("expected invalidValue, got \(String(describing: wrongValue))")
                return
            }
            _ = rows
        }
    }

    static func expectInvalidQuery(
        _ reader: StoreReader, _ filter: QueryExpression, _ fragment: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for run in [
            { _ = try reader.count(RecordQuery("Node", where: filter)) },
            { _ = try reader.fetch(RecordQuery("Node", where: filter)) },
        ] {
            let error = expectDeckError(sourceLocation: sourceLocation, run)
            guard case .invalidQuery(let message) = error else {
                Issue.record(
                    "expected invalidQuery, got \(String(describing: error))", sourceLocation: sourceLocation)
                continue
            }
            #expect(message.contains(fragment), "message: \(message)", sourceLocation: sourceLocation)
            #expect(!message.contains("SELECT"), sourceLocation: sourceLocation)
            #expect(error?.kind == .invalidData, sourceLocation: sourceLocation)
        }
    }
}
