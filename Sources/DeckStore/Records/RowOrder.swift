/// The order of a query's rows, worked out by the caller from each row's sort values rather than by
/// SQLite's sorter (``RecordQuery/lettingCallerOrder``).
///
/// SQLite sorts a result by copying each whole row into its sorter, then comparing and reading the
/// copies back: for a fetch of every record, with all its columns, that costs more than reading
/// the rows (about twice as many instructions for 100,000 cards). A caller that keeps every row
/// anyway, as the model layer keeps an object per row, reads them unsorted, notes each one's sort
/// values here, and puts what it made in order afterwards, comparing the sort values alone.
///
/// The order is exactly the one `ORDER BY` gives, term by term, then the record id ascending: a
/// null comes first (last in a descending key), numbers compare by value, an integer and a real
/// as numbers. Only number attributes take this path (integer, double, date, bool), so a cell
/// holds a null, an integer or a real. A text or a blob, which only a damaged or foreign store
/// holds there, and an integer beyond 2⁵³ beside reals in one key, which a binary64 cannot compare
/// exactly, leave the order undecided (``permutation()`` is nil): the caller then asks the store
/// to sort.
package struct RowOrder {
    /// One sort value, as SQLite gave it.
    enum Value {
        case null
        case integer(Int64)
        case real(Double)
        /// Text or bytes.
        case other
    }

    /// Each key's direction.
    private let ascending: [Bool]
    /// The rows' sort values, one per key for each row, in the order the rows were added.
    private var values: [Value] = []
    /// The rows' record ids.
    private var ids: [Int64] = []

    /// An order by keys with these directions.
    init(ascending: [Bool]) {
        self.ascending = ascending
    }

    /// The number of rows added.
    package var count: Int { ids.count }

    /// Adds the cursor's current row, after those added before.
    package mutating func add(_ cursor: RowCursor) {
        cursor.appendSortValues(to: &values)
        ids.append(cursor.id)
    }

    /// Adds a row of record `id` whose sort values are `rowValues`, one per key.
    mutating func add(_ rowValues: [Value], id: Int64) {
        precondition(rowValues.count == ascending.count, "one value per key")
        values += rowValues
        ids.append(id)
    }

    /// The positions of the rows added (0 for the first added), in the order; nil when the
    /// values cannot be ordered here (see ``RowOrder``).
    package func permutation() -> [Int]? {
        let keyCount = ascending.count
        guard keyCount > 0, !ids.isEmpty else { return Array(ids.indices) }
        // Each value as a rank (null, number) and an unsigned integer that sorts as the number,
        // both flipped for a descending key: a comparison is then of integers alone.
        var ranks = [UInt8](repeating: 0, count: values.count)
        var bits = [UInt64](repeating: 0, count: values.count)
        for key in 0..<keyCount {
            guard encode(key: key, keyCount: keyCount, ranks: &ranks, bits: &bits) else { return nil }
        }
        if keyCount == 1 {
            // The common case: one key, sorted as plain structs.
            var entries = (0..<ids.count).map { Entry(rank: ranks[$0], bits: bits[$0], id: ids[$0], row: $0) }
            entries.sort()
            return entries.map(\.row)
        }
        var rows = Array(ids.indices)
        ranks.withUnsafeBufferPointer { ranks in
            bits.withUnsafeBufferPointer { bits in
                ids.withUnsafeBufferPointer { ids in
                    rows.sort { left, right in
                        var l = left * keyCount
                        var r = right * keyCount
                        for _ in 0..<keyCount {
                            if ranks[l] != ranks[r] { return ranks[l] < ranks[r] }
                            if bits[l] != bits[r] { return bits[l] < bits[r] }
                            l += 1
                            r += 1
                        }
                        return ids[left] < ids[right]
                    }
                }
            }
        }
        return rows
    }

    /// A row of a one-key order.
    private struct Entry: Comparable {
        var rank: UInt8
        var bits: UInt64
        var id: Int64
        var row: Int

        static func < (left: Entry, right: Entry) -> Bool {
            if left.rank != right.rank { return left.rank < right.rank }
            if left.bits != right.bits { return left.bits < right.bits }
            return left.id < right.id
        }
    }

    /// Encodes the values of key `key` (see ``permutation()``); false when they cannot be ordered
    /// as integers.
    private func encode(key: Int, keyCount: Int, ranks: inout [UInt8], bits: inout [UInt64]) -> Bool {
        var hasInteger = false
        var hasReal = false
        var integersAreExactReals = true
        for index in stride(from: key, to: values.count, by: keyCount) {
            switch values[index] {
            case .null: break
            case .integer(let number):
                hasInteger = true
                if number.magnitude > Self.largestExactInteger { integersAreExactReals = false }
            case .real: hasReal = true
            case .other: return false
            }
        }
        // Integers beside reals compare as reals, which is exact up to 2⁵³ (dates, whose integers
        // are whole seconds within ±2.6 × 10¹¹, always are).
        let integersAsReals = hasInteger && hasReal
        if integersAsReals && !integersAreExactReals { return false }
        let descending = !ascending[key]
        for index in stride(from: key, to: values.count, by: keyCount) {
            var rank: UInt8 = 1
            var encoded: UInt64
            switch values[index] {
            case .null:
                rank = 0
                encoded = 0
            case .integer(let number):
                encoded = integersAsReals ? Self.sortable(Double(number)) : Self.sortable(number)
            case .real(let number):
                encoded = Self.sortable(number)
            case .other:
                return false
            }
            if descending {
                rank = 1 - rank
                encoded = ~encoded
            }
            ranks[index] = rank
            bits[index] = encoded
        }
        return true
    }

    /// The largest magnitude up to which every integer is a binary64.
    private static let largestExactInteger: UInt64 = 1 << 53

    /// An unsigned integer whose order is `number`'s.
    private static func sortable(_ number: Int64) -> UInt64 {
        UInt64(bitPattern: number) ^ (1 << 63)
    }

    /// An unsigned integer whose order is `number`'s (a finite number; zero and negative zero
    /// alike, as SQLite compares them).
    private static func sortable(_ number: Double) -> UInt64 {
        let pattern = (number == 0 ? 0 : number).bitPattern
        return pattern >> 63 == 1 ? ~pattern : pattern | (1 << 63)
    }
}
