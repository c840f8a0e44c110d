import Foundation

/// A condition on records, compiled to parameterised SQL (never pasted strings).
///
/// Keys name attributes, or to-one relationships (compared with `.reference(id)` or null). A
/// dotted key (`deck.title`) follows to-one relationships.
///
/// ```swift
/// let filter: Filter = .and([
///     .compare("front", .equal, .string("hola")),
///     .text("back", .contains, "hello", caseInsensitive: true),
/// ])
/// ```
public indirect enum Filter: Sendable, Hashable {
    /// Comparison operators.
    public enum Comparison: String, Sendable, Hashable {
        case equal = "="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
    }

    /// Text operators.
    public enum TextMatch: String, Sendable, Hashable {
        case contains, beginsWith, endsWith
    }

    /// Every record.
    case all
    /// `key op value`; comparing with `.null` using `.equal`/`.notEqual` tests for null.
    case compare(String, Comparison, Value)
    /// `key` is null (or, for a to-many relationship, empty).
    case isNull(String)
    /// A text test; `caseInsensitive` folds ASCII case.
    case text(String, TextMatch, String, caseInsensitive: Bool)
    /// `key` equals one of the values.
    case oneOf(String, [Value])
    case and([Filter])
    case or([Filter])
    case not(Filter)
}

/// A sort key: an attribute (or dotted to-one path) and a direction.
public struct SortKey: Sendable, Hashable {
    public var key: String
    public var ascending: Bool

    public init(_ key: String, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }
}

/// What to fetch: an entity (with its subentities), a filter, an order and a window.
public struct RecordQuery: Sendable, Hashable {
    public var entity: String
    public var filter: Filter
    public var sort: [SortKey]
    public var limit: Int?
    public var offset: Int
    /// Whether records of subentities are included (true, as in SwiftData).
    public var includesSubentities: Bool

    public init(
        _ entity: String, filter: Filter = .all, sort: [SortKey] = [], limit: Int? = nil, offset: Int = 0,
        includesSubentities: Bool = true
    ) {
        self.entity = entity
        self.filter = filter
        self.sort = sort
        self.limit = limit
        self.offset = offset
        self.includesSubentities = includesSubentities
    }
}

/// One record as the generic API returns it.
public struct Record: Sendable, Hashable {
    /// The record's concrete entity (a subentity of the queried one, possibly).
    public var entity: String
    /// The record id (`_pk`), stable for the record's life.
    public var id: Int64
    /// Attribute values, and to-one relationships as `.reference` or `.null`.
    public var values: [String: Value]
    /// The record's global id (`_gid`, spec section 6.10): random, never changed, unique in the
    /// document and kept by every copy of it, where ``id`` is local to one store. Nil only when a
    /// package of format version 1 is read without being upgraded (``PackageStore/storeFormatVersion``).
    public var globalID: UUID? = nil

    public subscript(_ name: String) -> Value? { values[name] }
}

extension RecordQuery {
    /// The limits on one query (documented in deck(1), "Expressions"). Beyond them a fetch throws
    /// ``DeckError/invalidQuery(_:)``; below them every query compiles, in time linear in its size,
    /// to SQL that SQLite's default limits accept.
    public enum Limits {
        /// Conditions in a filter (comparisons, text tests, `in` lists, null tests).
        public static let conditions = 10_000
        /// Values in a filter: one per comparison or text test, one per element of an `in` list.
        public static let values = 10_000
        /// How deeply `and`, `or` and `not` nest: each may have at most this many of them around it.
        /// (``FilterParser`` accepts at most ``FilterParser/maximumDepth`` levels of parentheses and
        /// `not`, so whatever it parses compiles.)
        public static let nesting = FilterParser.maximumDepth
        /// Different relationship steps that the keys of one query follow in all: `deck.title` and
        /// `deck.size` take one step, `deck.owner.name` two. (Each is a join, and SQLite joins at most
        /// 64 tables.)
        public static let relationshipSteps = 63
        /// Sort keys.
        public static let sortKeys = 64
    }
}

/// Compiles a query — its filter, sort and window — to one parameterised SQL statement.
///
/// The statement's shape keeps within SQLite's default limits whatever the filter — its parser
/// stack of 100 entries, and expression trees at most 1,000 deep: a filter is first normalised
/// (nested `and`s and `or`s flattened, `not` moved down to the conditions, constants folded); in
/// each list the costliest part comes first, where nesting is cheap for the parser and shallow in
/// the expression tree, and the others form a balanced tree, as deep as the logarithm of their
/// number; a part that would still take the parser's stack past its budget becomes a common table
/// expression of matching ids; and dotted keys become `LEFT JOIN`s (one per relationship step,
/// shared by every key that takes it) rather than nested subqueries. Every value is a parameter;
/// each part carries its own values, so parts can be reordered.
struct QueryCompiler {
    let mapping: SchemaMapping
    let entity: EntityMapping
    /// The values of the condition being compiled, in the order of their parameters.
    private var pending: [SQLValue] = []
    /// The values of the common tables' parameters, which come first in the statement.
    private var commonTableArguments: [SQLValue] = []
    private var joins: [Join] = []
    private var joinByStep: [String: Int] = [:]
    private var commonTables: [String] = []
    private var conditions = 0
    private var values = 0
    /// Parts that a constant made unnecessary (`x = 1 or true`).
    private var unused: [Node] = []

    /// The parser-stack entries a filter may take in one statement or common table expression:
    /// SQLite's default stack has 100, and the rest of a statement takes up to about 13.
    static let parserBudget = 80
    /// The expression-tree depth a whole filter may take, common table expressions included
    /// (SQLite resolves them inside the expression that refers to them): SQLite allows 1,000.
    static let heightBudget = 900

    init(mapping: SchemaMapping, entity: EntityMapping) {
        self.mapping = mapping
        self.entity = entity
    }

    /// A `LEFT JOIN` for one relationship step, and the join its `ON` clause refers to.
    private struct Join {
        let sql: String
        let after: Int?
    }

    /// Compiled SQL with the values of its parameters, what it costs SQLite, and the joins it
    /// refers to.
    private struct Fragment {
        var sql: String
        var arguments: [SQLValue]
        /// An upper bound on the parser-stack entries it takes.
        var cost: Int
        /// An upper bound on its expression-tree depth, with that of the common table expressions
        /// it refers to.
        var height: Int
        var joins: Set<Int>
    }

    /// A filter in negation normal form: `not` only on conditions, no `and` directly inside an `and`.
    private indirect enum Node {
        case constant(Bool)
        case condition(Filter, negated: Bool)
        case and([Node])
        case or([Node])
    }

    /// The statement `SELECT columns FROM table r … WHERE … ORDER BY … [LIMIT ? OFFSET ?]`.
    ///
    /// - Parameter columns: the result columns, which may refer to the table as `r`.
    mutating func select(_ query: RecordQuery, columns: String) throws(DeckError) -> (String, [SQLValue]) {
        var conditions: [String] = []
        var arguments: [SQLValue] = []
        var used: Set<Int> = []
        let members = query.includesSubentities ? entity.family : [entity.name]
        if members.count != (mapping.members[entity.table]?.count ?? 0) {
            // Entity names are validated identifiers, safe as literals.
            conditions.append("r._entity IN (" + members.map { "'\($0)'" }.joined(separator: ", ") + ")")
        }
        if case .compare("_pk", .equal, .integer(let id)) = query.filter {
            conditions.append("r._pk = ?")
            arguments.append(.integer(id))
        } else if query.filter != .all {
            let fragment = try compile(query.filter)
            conditions.append(fragment.sql)
            arguments += fragment.arguments
            used.formUnion(fragment.joins)
        }
        guard query.sort.count <= RecordQuery.Limits.sortKeys else {
            throw DeckError.invalidQuery(
                "the query has \(query.sort.count) sort keys; at most \(RecordQuery.Limits.sortKeys) are allowed"
            )
        }
        var order: [String] = []
        for key in query.sort {
            let (target, join) = try resolve(key.key)
            if case .toMany = target {
                throw DeckError.invalidQuery("cannot sort by to-many relationship '\(key.key)'")
            }
            if let join { used.insert(join) }
            order.append("\(columnOf(target)) \(key.ascending ? "ASC" : "DESC")")
        }
        order.append("r._pk ASC")
        var sql = ""
        if !commonTables.isEmpty { sql += "WITH " + commonTables.joined(separator: ",\n") + "\n" }
        sql += "SELECT \(columns) FROM \(quote(entity.table)) r" + joinClauses(used)
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        sql += " ORDER BY " + order.joined(separator: ", ")
        if query.limit != nil || query.offset > 0 {
            sql += " LIMIT ? OFFSET ?"
            arguments += [.integer(Int64(query.limit ?? -1)), .integer(Int64(max(0, query.offset)))]
        }
        // Parameters are plain `?`s, bound in the order they appear: SQLite looks numbered ones up
        // in a list, which takes time quadratic in their number.
        return (sql, commonTableArguments + arguments)
    }

    /// Appends a value of the condition being compiled and returns its parameter.
    private mutating func bind(_ value: SQLValue) -> String {
        pending.append(value)
        return placeholder
    }

    /// `?`, or, in a filter with many values, a `?` that SQLite does not take for a constant.
    /// SQLite computes each constant of a statement once, and finds whether it has already done so
    /// by searching the list of those it has: time quadratic in the number of distinct constants
    /// (3 seconds for 10,000 comparisons). Made to depend on the row, a value is not factored out
    /// (it then cannot drive an index, which only matters for small filters). Lists (`in`) keep
    /// plain parameters, which SQLite handles in one piece.
    private var placeholder: String { wrapsParameters ? "iif(r._pk IS NULL, NULL, ?)" : "?" }
    private var wrapsParameters = false
    private var scalarValues = 0
    /// From how many values (not counting lists) on the parameters are wrapped.
    static let wrappingThreshold = 100

    /// The joins `used` refers to, with the joins they depend on, in the order they were made.
    private func joinClauses(_ used: Set<Int>) -> String {
        var needed = used
        for index in used {
            var next = joins[index].after
            while let current = next, needed.insert(current).inserted { next = joins[current].after }
        }
        return needed.sorted().map { " " + joins[$0].sql }.joined()
    }

    // MARK: Filters

    private mutating func compile(_ filter: Filter) throws(DeckError) -> Fragment {
        let node = try normalize(filter, negated: false, depth: 0)
        wrapsParameters = scalarValues > Self.wrappingThreshold
        for part in unused {
            // Compiled only to report a wrong key or value; what they would add is dropped.
            var scratch = self
            _ = try scratch.emit(part)
        }
        var fragment = try emit(node)
        if fragment.cost > Self.parserBudget { fragment = hoist(fragment) }
        guard fragment.height <= Self.heightBudget else {
            // Not reached within the limits of Query.Limits; a safeguard all the same.
            throw DeckError.invalidQuery("the filter is too complex; split it into simpler queries")
        }
        return fragment
    }

    /// Moves `not` down to the conditions (a condition's null counts as false, so the usual laws of
    /// logic hold), flattens nested lists of one kind and folds constants; counts conditions and values.
    private mutating func normalize(_ filter: Filter, negated: Bool, depth: Int) throws(DeckError) -> Node {
        switch filter {
        case .not, .and, .or:
            guard depth <= RecordQuery.Limits.nesting else {
                throw DeckError.invalidQuery(
                    "the filter is nested more than \(RecordQuery.Limits.nesting) levels deep (and, or, not)")
            }
        default:
            break
        }
        switch filter {
        case .all:
            return .constant(!negated)
        case .not(let inner):
            return try normalize(inner, negated: !negated, depth: depth + 1)
        case .and(let parts), .or(let parts):
            var isAnd = false
            if case .and = filter { isAnd = true }
            // not (a and b) is (not a) or (not b), and the other way round.
            if negated { isAnd.toggle() }
            var children: [Node] = []
            var decided = false
            for part in parts {
                switch try normalize(part, negated: negated, depth: depth + 1) {
                case .constant(let value):
                    // true decides an or, false an and; the other one changes nothing.
                    if value != isAnd { decided = true }
                case .and(let inner) where isAnd: children += inner
                case .or(let inner) where !isAnd: children += inner
                case let child: children.append(child)
                }
            }
            if decided {
                // The other parts are not needed, but their keys and values must still be valid.
                unused += children
                return .constant(!isAnd)
            }
            if children.isEmpty { return .constant(isAnd) }
            if children.count == 1 { return children[0] }
            return isAnd ? .and(children) : .or(children)
        case .oneOf(_, let list) where list.isEmpty:
            // Nothing is in an empty list.
            return .constant(negated)
        case .compare, .isNull, .text, .oneOf:
            conditions += 1
            switch filter {
            case .oneOf(_, let list): values += list.count
            case .isNull: break
            default:
                values += 1
                scalarValues += 1
            }
            guard conditions <= RecordQuery.Limits.conditions else {
                throw DeckError.invalidQuery(
                    "the filter has more than \(RecordQuery.Limits.conditions) conditions; split the query, "
                        + "or use 'in' lists")
            }
            guard values <= RecordQuery.Limits.values else {
                throw DeckError.invalidQuery(
                    "the filter holds more than \(RecordQuery.Limits.values) values (every value of an 'in' "
                        + "list counts); split the query")
            }
            return .condition(filter, negated: negated)
        }
    }

    private mutating func emit(_ node: Node) throws(DeckError) -> Fragment {
        switch node {
        case .constant(let value):
            return Fragment(sql: value ? "1" : "0", arguments: [], cost: 1, height: 1, joins: [])
        case .condition(let filter, let negated):
            var fragment = try condition(filter)
            if negated {
                // Two-valued: a comparison with null is false, so its negation is true.
                fragment.sql = "NOT coalesce(" + fragment.sql + ", 0)"
                fragment.cost += 6
                fragment.height += 2
            }
            return fragment
        case .and(let children), .or(let children):
            var isAnd = false
            if case .and = node { isAnd = true }
            var fragments: [Fragment] = []
            fragments.reserveCapacity(children.count)
            for child in children { fragments.append(try emit(child)) }
            // The costliest part first: "(first OP rest)" takes one stack entry and one level of
            // depth above it. The rest, a balanced tree, takes three entries and one level per level
            // of the tree; parts too costly for their place move into common tables of their own.
            let first = fragments.indices.max { fragments[$0].cost < fragments[$1].cost } ?? 0
            var head = fragments.remove(at: first)
            if head.cost + 1 > Self.parserBudget { head = hoist(head) }
            var levels = 0
            while 1 << levels < fragments.count { levels += 1 }
            let room = Self.parserBudget - 3 - 3 * levels
            for index in fragments.indices where fragments[index].cost > room {
                fragments[index] = hoist(fragments[index])
            }
            let separator = isAnd ? " AND " : " OR "
            let rest = balanced(fragments[...], separator: separator)
            return Fragment(
                sql: "(" + head.sql + separator + rest.sql + ")", arguments: head.arguments + rest.arguments,
                cost: max(1 + head.cost, 3 + rest.cost), height: 1 + max(head.height, rest.height),
                joins: head.joins.union(rest.joins))
        }
    }

    private func balanced(_ fragments: ArraySlice<Fragment>, separator: String) -> Fragment {
        if fragments.count == 1, let only = fragments.first { return only }
        let middle = fragments.startIndex + fragments.count / 2
        let left = balanced(fragments[..<middle], separator: separator)
        let right = balanced(fragments[middle...], separator: separator)
        return Fragment(
            sql: "(" + left.sql + separator + right.sql + ")", arguments: left.arguments + right.arguments,
            cost: max(1 + left.cost, 3 + right.cost), height: 1 + max(left.height, right.height),
            joins: left.joins.union(right.joins))
    }

    /// Moves `fragment` into a common table expression of the ids it matches, and returns the
    /// condition that tests for them.
    private mutating func hoist(_ fragment: Fragment) -> Fragment {
        let name = "deck_filter\(commonTables.count + 1)"
        commonTables.append(
            "\(name)(id) AS (SELECT r._pk FROM \(quote(entity.table)) r\(joinClauses(fragment.joins)) "
                + "WHERE \(fragment.sql))")
        commonTableArguments += fragment.arguments
        return Fragment(
            sql: "r._pk IN \(name)", arguments: [], cost: 4, height: fragment.height + 4, joins: [])
    }

    /// Resolves a key to a column expression, and the join whose alias that expression uses.
    private enum Target {
        case attribute(Attribute, column: String)
        case toOne(Relationship, column: String)
        case toMany(Relationship, storage: RelationshipStorage, destination: EntityMapping)
    }

    private mutating func resolve(_ key: String) throws(DeckError) -> (Target, join: Int?) {
        if key == "_id" || key == "_pk" {
            // The record id, as every output names it.
            return (.attribute(Attribute("_id", .integer), column: "r._pk"), nil)
        }
        let parts = key.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count - 1 <= RecordQuery.Limits.relationshipSteps else {
            throw DeckError.invalidQuery(
                "'\(Self.abbreviated(key))' follows \(parts.count - 1) relationships; a query follows at most "
                    + "\(RecordQuery.Limits.relationshipSteps)")
        }
        var current = entity
        var alias = "r"
        var join: Int?
        for (index, partText) in parts.enumerated() {
            let part = String(partText)
            let isLast = index == parts.count - 1
            if let attribute = current.attribute(part) {
                guard isLast else {
                    throw DeckError.invalidQuery(
                        "'\(part)' in '\(Self.abbreviated(key))' is an attribute, so nothing can follow it")
                }
                let column = "\(alias).\(quote(part))"
                // Decimals are stored as text to keep every digit; they compare and sort as numbers.
                return (
                    .attribute(
                        attribute, column: attribute.type == .decimal ? "CAST(\(column) AS NUMERIC)" : column),
                    join
                )
            }
            guard let (relationship, storage) = current.relationship(part) else {
                throw DeckError.unknownProperty(
                    entity: current.name, name: part,
                    known: current.propertyNames)
            }
            guard let destination = mapping.entities[relationship.destination] else {
                throw DeckError.unknownEntity(relationship.destination, known: mapping.entityNames)
            }
            if relationship.isToMany {
                guard parts.count == 1 else {
                    throw DeckError.invalidQuery(
                        isLast
                            ? "'\(Self.abbreviated(key))': a to-many relationship cannot end a dotted path"
                            : "'\(part)' in '\(Self.abbreviated(key))' is a to-many relationship; only to-one "
                                + "paths can be followed")
                }
                return (.toMany(relationship, storage: storage, destination: destination), nil)
            }
            if isLast {
                return (.toOne(relationship, column: toOneColumn(storage, alias: alias, destination)), join)
            }
            // One join per relationship step, shared by every key that takes it.
            let step = alias + "." + part
            if let existing = joinByStep[step] {
                join = existing
            } else {
                guard joins.count < RecordQuery.Limits.relationshipSteps else {
                    throw DeckError.invalidQuery(
                        "the query follows more than \(RecordQuery.Limits.relationshipSteps) different relationship "
                            + "steps (at '\(Self.abbreviated(key))')")
                }
                let next = "j\(joins.count + 1)"
                let on: String
                switch storage {
                case .ownColumn(let column):
                    on = "\(next)._pk = \(alias).\(quote(column))"
                default:
                    on = "\(next)._pk = " + toOneColumn(storage, alias: alias, destination)
                }
                joins.append(Join(sql: "LEFT JOIN \(quote(destination.table)) \(next) ON \(on)", after: join))
                join = joins.count - 1
                joinByStep[step] = joins.count - 1
            }
            alias = "j\((join ?? 0) + 1)"
            current = destination
        }
        throw DeckError.invalidQuery("empty key")
    }

    /// The id a to-one relationship holds, for the record aliased `alias`.
    private func toOneColumn(_ storage: RelationshipStorage, alias: String, _ destination: EntityMapping)
        -> String
    {
        switch storage {
        case .ownColumn(let column):
            return "\(alias).\(quote(column))"
        case .inverseColumn(let table, let column):
            // Only rows of the destination's family: siblings may share the column.
            let family = destination.familyCondition("u").map { " AND " + $0 } ?? ""
            return
                "(SELECT u._pk FROM \(quote(table)) u WHERE u.\(quote(column)) = \(alias)._pk\(family) "
                + "ORDER BY u._pk LIMIT 1)"
        case .joinTable(let table, let near, let far):
            return "(SELECT \(far) FROM \(quote(table)) WHERE \(near) = \(alias)._pk ORDER BY \(far) LIMIT 1)"
        }
    }

    private func encode(_ value: Value, for target: Target, key: String) throws(DeckError) -> SQLValue {
        switch target {
        case .attribute(let attribute, _):
            do {
                return try value.sqlValue(for: attribute)
            } catch {
                throw DeckError.invalidValue(entity: entity.name, property: key, reason: error.description)
            }
        case .toOne, .toMany:
            switch value {
            case .null: return .null
            case .reference(let id), .integer(let id): return .integer(id)
            default:
                throw DeckError.invalidValue(
                    entity: entity.name, property: key,
                    reason: "a relationship compares with a record id, not \(value.kindName)")
            }
        }
    }

    /// SQL for one condition.
    private mutating func condition(_ filter: Filter) throws(DeckError) -> Fragment {
        var join: Int?
        pending.removeAll(keepingCapacity: true)
        let sql = try conditionSQL(filter, join: &join)
        // Names are validated identifiers and values are parameters: every parenthesis is SQL's.
        // Measured with SQLite 3.40, a condition takes about 3 parser-stack entries, each level of
        // parentheses (a function call) up to 5 more and a subquery 6 more again; the estimate
        // errs on the high side.
        var depth = 0
        var deepest = 0
        for byte in sql.utf8 {
            if byte == UInt8(ascii: "(") {
                depth += 1
                deepest = max(deepest, depth)
            } else if byte == UInt8(ascii: ")") {
                depth -= 1
            }
        }
        let subqueries = sql.components(separatedBy: "SELECT ").count - 1
        return Fragment(
            sql: sql, arguments: pending, cost: 4 + 5 * deepest + 6 * subqueries,
            height: 3 + 2 * deepest + 2 * subqueries, joins: join.map { [$0] } ?? [])
    }

    private mutating func conditionSQL(_ filter: Filter, join: inout Int?) throws(DeckError) -> String {
        switch filter {
        case .isNull(let key):
            let (target, via) = try resolve(key)
            join = via
            switch target {
            case .attribute(_, let column), .toOne(_, let column): return "\(column) IS NULL"
            case .toMany(_, let storage, let destination):
                return "NOT EXISTS " + members(storage, destination, matching: nil)
            }
        case .compare(let key, let op, let value):
            let (target, via) = try resolve(key)
            join = via
            if case .toMany(_, let storage, let destination) = target {
                // A to-many relationship compares by membership: `tags == #3` means it holds #3.
                guard op == .equal || op == .notEqual else {
                    throw DeckError.invalidQuery(
                        "'\(key)' is a to-many relationship: only == and != (membership) apply")
                }
                let id = bind(try encode(value, for: target, key: key))
                let exists = "EXISTS " + members(storage, destination, matching: "= " + id)
                return op == .equal ? exists : "NOT " + exists
            }
            let column = columnOf(target)
            let encoded = try encode(value, for: target, key: key)
            if encoded == .null {
                switch op {
                case .equal: return "\(column) IS NULL"
                case .notEqual: return "\(column) IS NOT NULL"
                default:
                    throw DeckError.invalidQuery("'\(key) \(op.rawValue) null' is always false; use == or !=")
                }
            }
            let parameter = bind(encoded)
            if op == .notEqual { return "\(column) IS NOT \(parameter)" }
            return "\(column) \(op.rawValue) \(parameter)"
        case .text(let key, let match, let needle, let caseInsensitive):
            let (target, via) = try resolve(key)
            join = via
            guard case .attribute(let attribute, let column) = target,
                attribute.type == .string || attribute.type == .url
                    || attribute.type == .json || attribute.type == .uuid
            else {
                throw DeckError.invalidQuery("'\(key)' is not text, so \(match.rawValue) does not apply")
            }
            // The needle once per parameter, in the order they appear.
            let lhs = caseInsensitive ? "lower(\(column))" : column
            let rhs = caseInsensitive ? "lower(\(placeholder))" : placeholder
            switch match {
            case .contains:
                pending.append(.text(needle))
                return "instr(\(lhs), \(rhs)) > 0"
            case .beginsWith:
                pending += [.text(needle), .text(needle)]
                return "substr(\(lhs), 1, length(\(placeholder))) = \(rhs)"
            case .endsWith:
                // substr(x, -0) is all of x, so the empty suffix needs a case of its own (which, like
                // the other operators, a null value does not match).
                pending += [.text(needle), .text(needle), .text(needle)]
                return
                    "(substr(\(lhs), -length(\(placeholder))) = \(rhs) OR (length(\(placeholder)) = 0 "
                    + "AND \(column) IS NOT NULL))"
            }
        case .oneOf(let key, let list):
            let (target, via) = try resolve(key)
            join = via
            var placeholders: [String] = []
            placeholders.reserveCapacity(list.count)
            for value in list {
                pending.append(try encode(value, for: target, key: key))
                placeholders.append("?")
            }
            let set = "IN (" + placeholders.joined(separator: ", ") + ")"
            if case .toMany(_, let storage, let destination) = target {
                // A to-many relationship is "in" the list when it holds any of the ids.
                return "EXISTS " + members(storage, destination, matching: set)
            }
            return "\(columnOf(target)) \(set)"
        case .all, .and, .or, .not:
            // Normalisation leaves only conditions here.
            return "1"
        }
    }

    private func columnOf(_ target: Target) -> String {
        switch target {
        case .attribute(_, let column), .toOne(_, let column): column
        case .toMany: "r._pk"
        }
    }

    /// `(SELECT 1 …)` over the records a to-many relationship of `r` holds, optionally only those
    /// whose id satisfies `matching` (`= ?3`, `IN (?3, ?4)`).
    private func members(_ storage: RelationshipStorage, _ destination: EntityMapping, matching: String?)
        -> String
    {
        switch storage {
        case .inverseColumn(let table, let column):
            // Only rows of the destination's family: siblings may share the column.
            var sql = "(SELECT 1 FROM \(quote(table)) u WHERE u.\(quote(column)) = r._pk"
            if let family = destination.familyCondition("u") { sql += " AND " + family }
            if let matching { sql += " AND u._pk " + matching }
            return sql + ")"
        case .joinTable(let table, let near, let far):
            var sql = "(SELECT 1 FROM \(quote(table)) WHERE \(near) = r._pk"
            if let matching { sql += " AND \(far) " + matching }
            return sql + ")"
        case .ownColumn(let column):
            var sql = "(SELECT 1 WHERE r.\(quote(column)) IS NOT NULL"
            if let matching { sql += " AND r.\(quote(column)) " + matching }
            return sql + ")"
        }
    }

    private static func abbreviated(_ text: String) -> String {
        text.utf8.count <= 64 ? text : String(text.prefix(61)) + "..."
    }
}
