import DeckSQLite
import Foundation

/// Keyset ("seek") paging: the condition that a row comes after a ``RecordQuery/Position`` in the
/// query's order, so that a page starts where the one before ended without reading what came
/// before it (an offset would, making a walk through all the pages quadratic), and records
/// inserted or deleted before that point shift nothing.
///
/// The order is `ORDER BY t1 [ASC|DESC], …, tn [ASC|DESC], r._pk ASC`; SQLite sorts each term by
/// its storage class first (null, then numbers, then texts, then blobs) and then by value (numbers
/// as numbers, texts by their bytes: no column has another collation), so null comes first in
/// ascending order and last in descending order. SQL's comparisons order values the same way,
/// classes included, unless affinity converts a side (a text meeting a column of numeric
/// affinity, a number one of TEXT affinity); that cannot happen here, for the position's value of
/// a term is what the statement gave that term, and a column holds values of its own class (the
/// tables are STRICT). Null is tested apart. For each term, "after" is `t > v`, or descending
/// `t < v OR t IS NULL` (after a null, any value ascending and nothing descending), and "same" is
/// `t = v`, or `t IS NULL`; the rows after the position are those after it in the first term, or
/// the same in it and after it in the rest. Written as a balanced tree — after(first half) OR
/// (same(first half) AND after(second half)) — so that 129 terms (64 keys with a folding, and the
/// record id) nest 8 levels deep; past the parser's budget the condition becomes a common table
/// expression, like any other.
extension QueryCompiler {
    /// One term of a query's order, compiled.
    struct OrderTerm {
        var sql: String
        var arguments: [SQLValue]
        var joins: Set<Int>
        var ascending: Bool
        /// Never null: a column of the record that its table declares `NOT NULL`, or the record id.
        var isNeverNull = false
        /// A column of the record, as stored: an index on it can find a position.
        var isColumn = false
    }

    /// The terms of the order of `keys` (without the record id that ends it): each key's
    /// expression, preceded by its folded form when it sorts with a folding.
    mutating func orderTerms(_ keys: [SortKey]) throws(DeckError) -> [OrderTerm] {
        var terms: [OrderTerm] = []
        for key in keys {
            let operands = try expressions.sortOperand(key.expression, folding: key.folding)
            for operand in operands {
                var term = OrderTerm(
                    sql: operand.sql, arguments: operand.arguments, joins: operand.joins,
                    ascending: key.ascending)
                if operands.count == 1, let isNeverNull = storedColumn(key.expression) {
                    term.isColumn = true
                    term.isNeverNull = isNeverNull
                }
                terms.append(term)
            }
        }
        return terms
    }

    /// For the record's id or an attribute of the record itself that sorts as stored (not a
    /// decimal, which sorts as a number), whether its table declares it `NOT NULL`; nil for
    /// anything else.
    private func storedColumn(_ expression: QueryExpression) -> Bool? {
        guard case .path(let path) = expression, path.variable == nil, path.names.count == 1 else {
            return nil
        }
        let name = path.names[0]
        if name == "_id" || name == "_pk" { return true }
        guard let attribute = entity.attribute(name), attribute.type != .decimal else { return nil }
        // A column is NOT NULL where the table's root entity declares a required attribute
        // (StoreDDL): the table's other rows lack the rest.
        let root = mapping.members[entity.table]?.first { $0.entity.superentity == nil }
        return root?.entity.attributes.first { $0.name == name }.map { !$0.isOptional } ?? false
    }

    /// A term of the order with the position's value of it.
    typealias Place = (term: OrderTerm, key: RecordQuery.Position.Key)

    /// The conditions that keep the rows after `position` in the order of `terms` then the record
    /// id: the condition itself, and before it, when an index on the first term's column can serve
    /// it, a bound on that column alone (implied by the condition) that SQLite can seek to.
    mutating func seek(after position: RecordQuery.Position, terms: [OrderTerm]) throws(DeckError)
        -> [Fragment]
    {
        guard position.keys.count == terms.count else {
            throw DeckError.misuse(
                "a position of \(position.keys.count) sort terms cannot continue an order of \(terms.count)")
        }
        let id = OrderTerm(
            sql: "r._pk", arguments: [], joins: [], ascending: true, isNeverNull: true, isColumn: true)
        let places: [Place] = Array(zip(terms, position.keys)) + [(id, .value(.integer(position.recordID)))]
        var fragments: [Fragment] = []
        // (Without sort keys the condition is a bound itself.)
        if places.count > 1, let first = places.first, first.term.isColumn,
            case .sql(let bound) = SeekCondition.bound(first)
        {
            fragments.append(Self.measured(bound))
        }
        switch SeekCondition.after(places[...]) {
        case .constant(true): break
        case .constant(false): fragments.append(.constant(false))
        case .sql(let condition):
            var fragment = Self.measured(condition)
            if fragment.cost > Self.parserBudget { fragment = hoist(fragment) }
            fragments.append(fragment)
        }
        return fragments
    }

    /// A condition being built, whose constants fold away.
    enum SeekCondition {
        case constant(Bool)
        case sql(Compiled)

        /// The rows after the position in the order of `places` (lexicographic): after it in the first
        /// half, or the same in the first half and after it in the second.
        fileprivate static func after(_ places: ArraySlice<Place>) -> SeekCondition {
            guard places.count > 1 else { return places.first.map(after) ?? .constant(false) }
            let middle = places.startIndex + places.count / 2
            return or(after(places[..<middle]), and(places[..<middle].map(same) + [after(places[middle...])]))
        }

        /// The rows after the position in one term.
        fileprivate static func after(_ place: Place) -> SeekCondition {
            let term = place.term
            guard let value = value(place.key) else {
                // Null sorts first: after it come the values ascending, and nothing descending.
                guard term.ascending else { return .constant(false) }
                return term.isNeverNull ? .constant(true) : .sql(isNull(term, negated: true))
            }
            if term.ascending { return .sql(compare(term, ">", value)) }
            if term.isNeverNull { return .sql(compare(term, "<", value)) }
            return or(.sql(compare(term, "<", value)), .sql(isNull(term)))
        }

        /// The rows the same as the position in one term.
        fileprivate static func same(_ place: Place) -> SeekCondition {
            guard let value = value(place.key) else {
                return place.term.isNeverNull ? .constant(false) : .sql(isNull(place.term))
            }
            return .sql(compare(place.term, "=", value))
        }

        /// A bound on the first term that every row after the position meets, for an index to seek
        /// to; `true` where none narrows.
        fileprivate static func bound(_ place: Place) -> SeekCondition {
            let term = place.term
            guard let value = value(place.key) else {
                // After a null ascending comes everything not null; descending, only nulls.
                return term.ascending ? .constant(true) : .sql(isNull(term))
            }
            if term.ascending { return .sql(compare(term, ">=", value)) }
            // Descending, nulls come last: a bound on the values alone holds only where there are none.
            return term.isNeverNull ? .sql(compare(term, "<=", value)) : .constant(true)
        }

        /// A position's value of a term as SQL, nil for null.
        fileprivate static func value(_ key: RecordQuery.Position.Key) -> Compiled? {
            switch key {
            case .value(.null): nil
            case .value(let value): Compiled(sql: "?", arguments: [value], joins: [])
            // The text of those bytes, unchanged. Its TEXT affinity would make a number compared with
            // it a text, but a term never holds both (operands of one family only).
            case .textBytes(let bytes): Compiled(sql: "CAST(? AS TEXT)", arguments: [.blob(bytes)], joins: [])
            }
        }

        /// `term op value`.
        fileprivate static func compare(_ term: OrderTerm, _ op: String, _ value: Compiled) -> Compiled {
            Compiled(
                sql: "\(term.sql) \(op) \(value.sql)", arguments: term.arguments + value.arguments,
                joins: term.joins)
        }

        /// `term IS [NOT] NULL`.
        fileprivate static func isNull(_ term: OrderTerm, negated: Bool = false) -> Compiled {
            Compiled(
                sql: "\(term.sql) IS \(negated ? "NOT " : "")NULL", arguments: term.arguments,
                joins: term.joins)
        }

        fileprivate static func and(_ parts: [SeekCondition]) -> SeekCondition {
            var compiled: [Compiled] = []
            for part in parts {
                switch part {
                case .constant(false): return .constant(false)
                case .constant(true): continue
                case .sql(let sql): compiled.append(sql)
                }
            }
            return joined(compiled, " AND ", empty: true)
        }

        fileprivate static func or(_ parts: SeekCondition...) -> SeekCondition {
            var compiled: [Compiled] = []
            for part in parts {
                switch part {
                case .constant(true): return .constant(true)
                case .constant(false): continue
                case .sql(let sql): compiled.append(sql)
                }
            }
            return joined(compiled, " OR ", empty: false)
        }

        /// `parts` joined by `separator` in parentheses; `empty` when there are none.
        fileprivate static func joined(_ parts: [Compiled], _ separator: String, empty: Bool) -> SeekCondition
        {
            guard parts.count > 1 else { return parts.first.map { .sql($0) } ?? .constant(empty) }
            return .sql(
                Compiled(
                    sql: "(" + parts.map(\.sql).joined(separator: separator) + ")",
                    arguments: parts.flatMap(\.arguments),
                    joins: parts.reduce(into: []) { $0.formUnion($1.joins) }))
        }
    }
}
