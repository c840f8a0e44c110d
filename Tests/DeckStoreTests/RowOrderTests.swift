import DeckSQLite
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// ``RowOrder`` orders rows as SQLite's `ORDER BY` would, from their sort values alone.
@Suite("Row order", .timed)
struct RowOrderTests {
    typealias Value = RowOrder.Value

    /// The order of rows `values` (record ids 1, 2, … in the order given) by keys `ascending`,
    /// as record ids.
    func order(_ values: [[Value]], ascending: [Bool]) -> [Int64]? {
        var order = RowOrder(ascending: ascending)
        for (index, row) in values.enumerated() { order.add(row, id: Int64(index + 1)) }
        return order.permutation().map { $0.map { Int64($0 + 1) } }
    }

    /// The order SQLite gives the same rows, by a table of the values and `ORDER BY`.
    func sqliteOrder(_ values: [[Value]], ascending: [Bool]) throws -> [Int64] {
        let database = try Database(path: ":memory:", mode: .create)
        defer { database.close() }
        let keys = ascending.indices.map { "k\($0)" }
        try database.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, \(keys.joined(separator: ", ")))")
        for (index, row) in values.enumerated() {
            let cells: [SQLValue] = row.map {
                switch $0 {
                case .null: .null
                case .integer(let number): .integer(number)
                case .real(let number): .real(number)
                case .other: .text("text")
                }
            }
            try database.run(
                "INSERT INTO t VALUES (?\(String(repeating: ", ?", count: keys.count)))",
                [.integer(Int64(index + 1))] + cells)
        }
        let terms = zip(keys, ascending).map { "\($0) \($1 ? "ASC" : "DESC")" } + ["id ASC"]
        return try database.rows("SELECT id FROM t ORDER BY \(terms.joined(separator: ", "))").map {
            try #require($0.first?.int64)
        }
    }

    @Test("Nulls first ascending and last descending; numbers by value; ties by record id")
    func edges() throws {
        let rows: [[Value]] = [
            [.integer(3)], [.null], [.integer(.min)], [.integer(.max)], [.integer(-1)], [.null],
            [.integer(3)],
            [.integer(0)],
        ]
        for ascending in [true, false] {
            let expected = try sqliteOrder(rows, ascending: [ascending])
            #expect(order(rows, ascending: [ascending]) == expected)
        }
        #expect(order(rows, ascending: [true]) == [2, 6, 3, 5, 8, 1, 7, 4])
    }

    @Test("Reals: negative zero equals zero, infinities at the ends")
    func reals() throws {
        let rows: [[Value]] = [
            [.real(0)], [.real(-0.0)], [.real(.infinity)], [.real(-.infinity)], [.real(-2.5)],
            [.real(.leastNonzeroMagnitude)], [.null], [.real(-.leastNonzeroMagnitude)], [.real(1e300)],
        ]
        for ascending in [true, false] {
            #expect(order(rows, ascending: [ascending]) == (try sqliteOrder(rows, ascending: [ascending])))
        }
    }

    @Test("Integers beside reals compare as numbers")
    func mixed() throws {
        let rows: [[Value]] = [
            [.real(2.5)], [.integer(2)], [.integer(3)], [.real(2)], [.integer(-(1 << 53))], [.real(-9.1e15)],
            [.null], [.integer(1 << 53)],
        ]
        for ascending in [true, false] {
            #expect(order(rows, ascending: [ascending]) == (try sqliteOrder(rows, ascending: [ascending])))
        }
    }

    @Test("What cannot be compared exactly leaves the order undecided")
    func undecided() {
        // Text or bytes: only a damaged store's number column holds them.
        #expect(order([[.integer(1)], [.other]], ascending: [true]) == nil)
        // An integer beyond 2⁵³ beside a real: a binary64 cannot tell it from its neighbours.
        #expect(order([[.integer((1 << 53) + 1)], [.real(1)]], ascending: [true]) == nil)
        // Integers alone compare exactly over their whole range.
        #expect(order([[.integer(.max)], [.integer(.max - 1)]], ascending: [true]) == [2, 1])
        #expect(order([], ascending: [true]) == [])
    }

    static let seed = TestSeed("RowOrderTests.random", filter: "RowOrderTests")

    @Test("Random rows of several keys, each way, agree with SQLite")
    func random() throws {
        var generator = Self.seed.generator()
        func value() -> Value {
            switch Int.random(in: 0..<6, using: &generator) {
            case 0: .null
            // Few distinct values, so that keys tie and the next key decides.
            case 1, 2: .integer(Int64.random(in: -3...3, using: &generator))
            case 3: .real(Double(Int.random(in: -6...6, using: &generator)) / 2)
            case 4: .integer(Int64.random(in: .min ... .max, using: &generator) >> 12)
            default: .real(Double.random(in: -1e6...1e6, using: &generator))
            }
        }
        for keyCount in 1...3 {
            for _ in 0..<20 {
                let ascending = (0..<keyCount).map { _ in Bool.random(using: &generator) }
                let rows = (0..<200).map { _ in (0..<keyCount).map { _ in value() } }
                let expected = try sqliteOrder(rows, ascending: ascending)
                #expect(order(rows, ascending: ascending) == expected, "\(Self.seed): \(rows) \(ascending)")
            }
        }
    }
}
