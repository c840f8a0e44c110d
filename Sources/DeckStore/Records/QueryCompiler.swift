import DeckSQLite
import Foundation

/// Compiles a query — its condition, sort and window — to one parameterised SQL statement.
///
/// The statement's shape keeps within SQLite's default limits whatever the condition — its parser
/// stack of 100 entries, and expression trees at most 1,000 deep: the condition is first
/// normalised (nested `and`s and `or`s flattened, `not` moved down to the conditions, constants
/// folded); in each list the costliest part comes first, where nesting is cheap for the parser and
/// shallow in the expression tree, and the others form a balanced tree, as deep as the logarithm of
/// their number; a part that would still take the parser's stack past its budget becomes a common
/// table expression of matching ids; and paths become `LEFT JOIN`s (one per relationship step,
/// shared by every path that takes it) rather than nested subqueries. Inside one condition the
/// depth limit (``RecordQuery/Limits/depth``) bounds what a condition takes. Every value is a
/// parameter; each part carries its own values, so parts can be reordered.
///
/// This type assembles the statement and keeps the condition's shape within the budgets; it
/// delegates the rest: ``ConditionCompiler`` compiles each condition and its operands
/// (`QueryCompiler+Conditions.swift`), ``OperandTyping`` types them and converts their values
/// (`QueryCompiler+Typing.swift`), ``PathResolver`` turns paths into joins and subqueries
/// (`QueryCompiler+Paths.swift`), and ``SeekCondition`` builds the keyset paging condition
/// (`QueryCompiler+Seek.swift`).
struct QueryCompiler {
    let mapping: SchemaMapping
    let entity: EntityMapping
    /// The instant the store's dates count from: date literals are encoded as its numbers.
    let dateEpoch: DateEpoch
    /// The column of the records' global ids, when the store has them (format 2).
    var globalIDColumn: String?
    /// Compiles the conditions and operands, and holds the statement's joins.
    var expressions: ConditionCompiler
    private var commonTables: [String] = []
    /// The values of the common tables' parameters, which come first in the statement.
    private var commonTableArguments: [SQLValue] = []
    /// Parts that a constant made unnecessary (`x = 1 or true`).
    private var unused: [Node] = []

    /// The parser-stack entries a condition may take in one statement or common table expression:
    /// SQLite's default stack has 100, and the rest of a statement takes up to about 13.
    static let parserBudget = 80
    /// The expression-tree depth a whole condition may take, common table expressions included
    /// (SQLite resolves them inside the expression that refers to them): SQLite allows 1,000.
    static let heightBudget = 900

    init(mapping: SchemaMapping, entity: EntityMapping, dateEpoch: DateEpoch) {
        self.mapping = mapping
        self.entity = entity
        self.dateEpoch = dateEpoch
        self.expressions = ConditionCompiler(
            paths: PathResolver(mapping: mapping, entity: entity),
            typing: OperandTyping(entityName: entity.name, dateEpoch: dateEpoch))
    }

    /// Compiled SQL with the values of its parameters, what it costs SQLite, and the statement's
    /// joins it refers to.
    struct Fragment {
        var sql: String
        var arguments: [SQLValue]
        /// An upper bound on the parser-stack entries it takes.
        var cost: Int
        /// An upper bound on its expression-tree depth, with that of the common table expressions
        /// it refers to.
        var height: Int
        var joins: Set<Int>

        static func constant(_ value: Bool) -> Fragment {
            Fragment(sql: value ? "1" : "0", arguments: [], cost: 1, height: 1, joins: [])
        }
    }

    /// A condition in negation normal form: `not` only on conditions, no `and` directly inside an `and`.
    indirect enum Node {
        case constant(Bool)
        case condition(QueryExpression, negated: Bool)
        case and([Node])
        case or([Node])
    }

    /// The statement `SELECT columns FROM table r … WHERE … ORDER BY … [LIMIT ? OFFSET ?]`.
    ///
    /// With ``RecordQuery/readsPositions`` the terms of the order follow `columns` as result
    /// columns, one each (``RowCursor/position`` reads them); with ``RecordQuery/after`` the
    /// condition keeps only the rows after that position (`QueryCompiler+Seek.swift`).
    ///
    /// - Parameter columns: the result columns, which may refer to the table as `r`.
    mutating func select(_ query: RecordQuery, columns: String) throws(DeckError) -> (String, [SQLValue]) {
        var conditions: [String] = []
        var arguments: [SQLValue] = []
        var used: Set<Int> = []
        let members = query.includesSubentities ? entity.family : [entity.name]
        // Entity names are validated identifiers, safe as literals.
        let entityList = "(" + members.map { "'\($0)'" }.joined(separator: ", ") + ")"
        if members.count != (mapping.members[entity.table]?.count ?? 0) {
            conditions.append("r._entity IN " + entityList)
        } else {
            // Every entity of the hierarchy: a row of an unknown entity (corruption, spec 6.1) is
            // still no record of any. The `+` keeps SQLite from reading the `_entity` index for a
            // term that leaves out no row of a sound store.
            conditions.append("+r._entity IN " + entityList)
        }
        var counts = Counts()
        if let condition = query.where {
            try counts.measure(condition)
        }
        for key in query.sort { try counts.measure(key.expression, asCondition: false) }
        expressions.typing.wrapsParameters = counts.scalarValues > Self.wrappingThreshold
        if let condition = query.where {
            if let id = Self.recordID(condition) {
                conditions.append("r._pk = ?")
                arguments.append(.integer(id))
            } else {
                let fragment = try compile(condition)
                conditions.append(fragment.sql)
                arguments += fragment.arguments
                used.formUnion(fragment.joins)
            }
        }
        guard query.sort.count <= RecordQuery.Limits.sortKeys else {
            throw DeckError.invalidQuery(
                "the query has \(query.sort.count) sort keys; at most \(RecordQuery.Limits.sortKeys) are allowed"
            )
        }
        let terms = try orderTerms(query.sort)
        guard terms.count <= RecordQuery.Limits.sortKeys else {
            throw DeckError.invalidQuery(
                "the query's \(query.sort.count) sort keys sort by \(terms.count) terms (a key that folds text "
                    + "counts twice); at most \(RecordQuery.Limits.sortKeys) are allowed")
        }
        if let position = query.after {
            for fragment in try seek(after: position, terms: terms) {
                conditions.append(fragment.sql)
                arguments += fragment.arguments
                used.formUnion(fragment.joins)
            }
        }
        var order: [String] = []
        for term in terms {
            used.formUnion(term.joins)
            arguments += term.arguments
            order.append("\(term.sql) \(term.ascending ? "ASC" : "DESC")")
        }
        order.append("r._pk ASC")
        var resultColumns = columns
        var columnArguments: [SQLValue] = []
        if query.readsPositions {
            // Identical to the ORDER BY terms, so SQLite computes each once (a term with parameters
            // excepted: each `?` is a parameter of its own).
            for term in terms {
                resultColumns += ", " + term.sql
                columnArguments += term.arguments
            }
        }
        var sql = ""
        if !commonTables.isEmpty { sql += "WITH " + commonTables.joined(separator: ",\n") + "\n" }
        sql += "SELECT \(resultColumns) FROM \(quote(entity.table)) r" + expressions.paths.joinClauses(used)
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        sql += " ORDER BY " + order.joined(separator: ", ")
        if query.limit != nil || query.offset > 0 {
            sql += " LIMIT ? OFFSET ?"
            arguments += [.integer(Int64(query.limit ?? -1)), .integer(Int64(max(0, query.offset)))]
        }
        // Parameters are plain `?`s, bound in the order they appear: SQLite looks numbered ones up
        // in a list, which takes time quadratic in their number.
        return (sql, commonTableArguments + columnArguments + arguments)
    }

    /// The id of `_id = id`, the condition of `record(_:id:)`, which needs no
    /// compiling.
    static func recordID(_ condition: QueryExpression) -> Int64? {
        guard case .compare(.path(let path), .equal, .value(.integer(let id))) = condition,
            path.variable == nil,
            path.names == ["_id"] || path.names == ["_pk"]
        else { return nil }
        return id
    }

    /// From how many values (not counting lists) on the parameters are wrapped.
    static let wrappingThreshold = 100

    // MARK: Conditions

    private mutating func compile(_ condition: QueryExpression) throws(DeckError) -> Fragment {
        let node = try normalize(condition, negated: false, depth: 0)
        for part in unused {
            // Compiled only to report a wrong key or value; what they would add is dropped.
            var scratch = self
            _ = try scratch.emit(part)
        }
        var fragment = try emit(node)
        if fragment.cost > Self.parserBudget { fragment = hoist(fragment) }
        guard fragment.height <= Self.heightBudget else {
            // Not reached within the limits of RecordQuery.Limits; a safeguard all the same.
            throw DeckError.invalidQuery("the condition is too complex; split it into simpler queries")
        }
        return fragment
    }

    /// Moves `not` down to the conditions (a condition's null counts as false, so the usual laws of
    /// logic hold), flattens nested lists of one kind and folds constants.
    mutating func normalize(_ condition: QueryExpression, negated: Bool, depth: Int) throws(DeckError) -> Node
    {
        switch condition {
        case .not, .and, .or:
            guard depth <= RecordQuery.Limits.nesting else {
                throw DeckError.invalidQuery(
                    "the condition is nested more than \(RecordQuery.Limits.nesting) levels deep (and, or, not)"
                )
            }
        default:
            break
        }
        switch condition {
        case .value(.bool(let value)):
            return .constant(value != negated)
        case .not(let inner):
            return try normalize(inner, negated: !negated, depth: depth + 1)
        case .and(let parts), .or(let parts):
            var isAnd = false
            if case .and = condition { isAnd = true }
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
                // The other parts are not needed, but their paths and values must still be valid.
                unused += children
                return .constant(!isAnd)
            }
            if children.isEmpty { return .constant(isAnd) }
            if children.count == 1 { return children[0] }
            return isAnd ? .and(children) : .or(children)
        case .oneOf(_, let list) where list.isEmpty:
            // Nothing is in an empty list.
            return .constant(negated)
        default:
            return .condition(condition, negated: negated)
        }
    }

    private mutating func emit(_ node: Node) throws(DeckError) -> Fragment {
        switch node {
        case .constant(let value):
            return .constant(value)
        case .condition(let condition, let negated):
            var fragment = try topLevelCondition(condition)
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
            let rest = Self.balanced(fragments[...], separator: separator)
            return Fragment(
                sql: "(" + head.sql + separator + rest.sql + ")", arguments: head.arguments + rest.arguments,
                cost: max(1 + head.cost, 3 + rest.cost), height: 1 + max(head.height, rest.height),
                joins: head.joins.union(rest.joins))
        }
    }

    static func balanced(_ fragments: ArraySlice<Fragment>, separator: String) -> Fragment {
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
    mutating func hoist(_ fragment: Fragment) -> Fragment {
        let name = "deck_filter\(commonTables.count + 1)"
        commonTables.append(
            "\(name)(id) AS (SELECT r._pk FROM \(quote(entity.table)) r\(expressions.paths.joinClauses(fragment.joins)) "
                + "WHERE \(fragment.sql))")
        commonTableArguments += fragment.arguments
        return Fragment(
            sql: "r._pk IN \(name)", arguments: [], cost: 4, height: fragment.height + 4, joins: [])
    }

    /// SQL for one condition of the top level, with its cost estimated from its text.
    private mutating func topLevelCondition(_ condition: QueryExpression) throws(DeckError) -> Fragment {
        let compiled = try expressions.condition(condition, level: 0)
        // (The depth limit keeps one condition well within the budget.)
        return Self.measured(compiled)
    }

    /// `compiled` as a fragment, its cost estimated from its text. Names are validated identifiers
    /// and values are parameters: every parenthesis is SQL's. Measured with SQLite 3.40, a
    /// comparison takes about 3 parser-stack entries, each level of parentheses (a function call)
    /// up to 5 more and a subquery 6 more again; the estimate errs on the high side.
    static func measured(_ compiled: Compiled) -> Fragment {
        var depth = 0
        var deepest = 0
        for byte in compiled.sql.utf8 {
            if byte == UInt8(ascii: "(") {
                depth += 1
                deepest = max(deepest, depth)
            } else if byte == UInt8(ascii: ")") {
                depth -= 1
            }
        }
        let subqueries = compiled.sql.components(separatedBy: "SELECT ").count - 1
        return Fragment(
            sql: compiled.sql, arguments: compiled.arguments, cost: 4 + 5 * deepest + 6 * subqueries,
            height: 3 + 2 * deepest + 2 * subqueries, joins: compiled.joins)
    }

    static func abbreviated(_ text: String) -> String {
        text.utf8.count <= 64 ? text : String(text.prefix(61)) + "..."
    }
}

/// The conditions and values of a query, counted against ``RecordQuery/Limits``.
struct Counts {
    var conditions = 0
    var values = 0
    /// Values outside `in` lists.
    var scalarValues = 0

    /// Counts what `expression` holds (without recursion: an expression may be deep).
    mutating func measure(_ expression: QueryExpression, asCondition: Bool = true) throws(DeckError) {
        // (expression, whether a boolean value there is a constant of the logic, whether it is an
        // element of an `in` list)
        var stack: [(QueryExpression, Bool, Bool)] = [(expression, asCondition, false)]
        while let (next, isLogic, inList) = stack.popLast() {
            switch next {
            case .value(.bool) where isLogic:
                continue
            case .value:
                values += 1
                if !inList { scalarValues += 1 }
            case .and(let parts), .or(let parts):
                stack += parts.map { ($0, isLogic, false) }
                continue
            case .not(let inner):
                stack.append((inner, isLogic, false))
                continue
            case .oneOf(let operand, let list):
                if list.isEmpty { continue }
                conditions += 1
                stack.append((operand, false, false))
                stack += list.map { ($0, false, true) }
            case .compare, .text, .isNull:
                conditions += 1
                stack += next.children.map { ($0, false, false) }
            case .any(let collection, _, let body), .all(let collection, _, let body):
                conditions += 1
                stack += [(collection, false, false), (body, true, false)]
            default:
                stack += next.children.map { ($0, false, false) }
            }
            guard conditions <= RecordQuery.Limits.conditions else {
                throw DeckError.invalidQuery(
                    "the condition has more than \(RecordQuery.Limits.conditions) conditions; split the query, "
                        + "or use 'in' lists")
            }
            guard values <= RecordQuery.Limits.values else {
                throw DeckError.invalidQuery(
                    "the query holds more than \(RecordQuery.Limits.values) values (every value of an 'in' "
                        + "list counts); split the query")
            }
        }
    }
}
