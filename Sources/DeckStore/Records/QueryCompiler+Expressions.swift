import DeckSQLite
import Foundation

/// The typed compilation of conditions and operands (``QueryExpression``).
///
/// Every operand compiles to SQL with the values of its `?` parameters in the order they appear,
/// and a type: an attribute type, a record (an id), a to-many relationship (usable only by
/// `count`, `any`, `all`, null tests and membership), null, or a value whose type is decided by
/// what it meets. Names are validated identifiers and every value is a parameter: nothing a user
/// writes is spliced into the SQL.
extension QueryCompiler {
    /// What an operand is.
    enum Kind {
        /// A value of an attribute type (arithmetic gives `.integer` or `.double`, `count` `.integer`).
        case typed(StoreSchema.AttributeType)
        /// A record id: a to-one relationship, `_id`, a quantifier's element.
        case record
        /// A to-many relationship of the record aliased `owner`.
        case toMany(Relationship, storage: RelationshipStorage, destination: EntityMapping, owner: Scope)
        /// A value not yet typed: it takes the type of what it meets.
        case literal(Value)
        /// Null.
        case null
    }

    /// A compiled operand.
    struct Operand {
        var sql: String
        var arguments: [SQLValue]
        var kind: Kind
        var joins: Set<Int>
        /// How the operand was written, for messages.
        var text: String
        /// Whether it is an attribute (whose type a value is converted to exactly).
        var isAttribute = false
    }

    /// A compiled condition (before its cost is estimated).
    struct Compiled {
        var sql: String
        var arguments: [SQLValue]
        var joins: Set<Int>
    }

    /// The attribute types that compare with one another: numbers, texts, and each other type alone.
    static func family(_ type: StoreSchema.AttributeType) -> Int {
        switch type {
        case .integer, .double, .decimal: 0
        case .string, .url, .uuid, .json: 1
        case .bool: 2
        case .date: 3
        case .data: 4
        }
    }

    static func isNumeric(_ type: StoreSchema.AttributeType) -> Bool { family(type) == 0 }

    static func isText(_ type: StoreSchema.AttributeType) -> Bool { family(type) == 1 }

    static func describe(_ kind: Kind) -> String {
        switch kind {
        case .typed(let type): "\(type.article) \(type.rawValue)"
        case .record: "a record"
        case .toMany: "a to-many relationship"
        case .literal(let value): "\(value.kindName == "integer" ? "an" : "a") \(value.kindName) value"
        case .null: "null"
        }
    }

    func checkLevel(_ level: Int, _ text: @autoclosure () -> String) throws(DeckError) {
        guard level <= RecordQuery.Limits.depth else {
            throw DeckError.invalidQuery(
                "'\(Self.abbreviated(text()))' nests more than \(RecordQuery.Limits.depth) levels deep; "
                    + "split it into simpler conditions")
        }
    }

    // MARK: Conditions

    /// A condition: a comparison, test, quantifier, or `and`/`or`/`not` (inside quantifiers, where
    /// the top level's normalisation does not reach), or a boolean.
    mutating func condition(_ expression: QueryExpression, scope: Scope? = nil, level: Int) throws(DeckError)
        -> Compiled
    {
        let scope = scope ?? root
        try checkLevel(level, "\(expression)")
        switch expression {
        case .value(.bool(let value)):
            return Compiled(sql: value ? "1" : "0", arguments: [], joins: [])
        case .and(let parts), .or(let parts):
            var isAnd = false
            if case .and = expression { isAnd = true }
            guard !parts.isEmpty else { return Compiled(sql: isAnd ? "1" : "0", arguments: [], joins: []) }
            var levels = 0
            while 1 << levels < parts.count { levels += 1 }
            var compiled: [Compiled] = []
            for part in parts {
                var one = try condition(part, scope: scope, level: level + levels)
                one.sql = "coalesce(" + one.sql + ", 0)"
                compiled.append(one)
            }
            return Self.joined(compiled[...], separator: isAnd ? " AND " : " OR ")
        case .not(let inner):
            var compiled = try condition(inner, scope: scope, level: level + 1)
            compiled.sql = "NOT coalesce(" + compiled.sql + ", 0)"
            return compiled
        case .compare(let lhs, let op, let rhs):
            return try comparison(lhs, op, rhs, scope: scope, level: level)
        case .text(let lhs, let op, let rhs, let folding):
            return try textTest(lhs, op, rhs, folding, scope: scope, level: level)
        case .oneOf(let lhs, let list):
            return try membership(lhs, list, scope: scope, level: level)
        case .isNull(let inner):
            let operand = try self.operand(inner, scope: scope, level: level + 1)
            switch operand.kind {
            case .toMany(_, let storage, let destination, let owner):
                var members = try self.members(storage, destination, owner: owner, level: level)
                members.sql = "NOT EXISTS (" + members.sql + ")"
                members.joins = Self.statementJoins(operand.joins, joins)
                return members
            case .null:
                return Compiled(sql: "1", arguments: [], joins: [])
            case .literal(let value):
                return Compiled(sql: value.isNull ? "1" : "0", arguments: [], joins: [])
            default:
                return Compiled(
                    sql: operand.sql + " IS NULL", arguments: operand.arguments, joins: operand.joins)
            }
        case .any(let collection, let variable, let body), .all(let collection, let variable, let body):
            var isAny = false
            if case .any = expression { isAny = true }
            return try quantifier(
                isAny: isAny, collection, variable, body, scope: scope, level: level, text: "\(expression)")
        case .path(let path):
            // A boolean attribute is a condition by itself.
            let operand = try self.operand(.path(path), scope: scope, level: level)
            guard case .typed(.bool) = operand.kind else {
                throw DeckError.invalidQuery(
                    "'\(Self.abbreviated(path.description))' is \(Self.describe(operand.kind)), not a condition"
                )
            }
            return Compiled(sql: operand.sql + " = 1", arguments: operand.arguments, joins: operand.joins)
        default:
            throw DeckError.invalidQuery(
                "'\(Self.abbreviated("\(expression)"))' is a value, not a condition; compare it with something"
            )
        }
    }

    /// Parts joined by `separator` as a balanced tree.
    static func joined(_ parts: ArraySlice<Compiled>, separator: String) -> Compiled {
        if parts.count == 1, let only = parts.first { return only }
        let middle = parts.startIndex + parts.count / 2
        let left = joined(parts[..<middle], separator: separator)
        let right = joined(parts[middle...], separator: separator)
        return Compiled(
            sql: "(" + left.sql + separator + right.sql + ")", arguments: left.arguments + right.arguments,
            joins: left.joins.union(right.joins))
    }

    mutating func comparison(
        _ lhs: QueryExpression, _ op: QueryExpression.Comparison, _ rhs: QueryExpression, scope: Scope,
        level: Int
    ) throws(DeckError) -> Compiled {
        let text = "\(lhs) \(op.rawValue) \(rhs)"
        var left = try operand(lhs, scope: scope, level: level + 1)
        var right = try operand(rhs, scope: scope, level: level + 1)
        // A to-many relationship compares with a record by membership.
        if case .toMany = right.kind, !(left.kind.isToMany) { swap(&left, &right) }
        if case .toMany(_, let storage, let destination, let owner) = left.kind {
            guard op == .equal || op == .notEqual else {
                throw DeckError.invalidQuery(
                    "'\(Self.abbreviated(left.text))' is a to-many relationship: only = and != (membership) "
                        + "apply; use '.count' to compare its size")
            }
            let id = try recordOperand(right, comparedWith: left.text)
            var members = try self.members(storage, destination, owner: owner, level: level)
            members.sql += " AND q._pk = " + id.sql
            members.arguments += id.arguments
            members.joins = Self.statementJoins(left.joins.union(id.joins), joins)
            members.sql = (op == .equal ? "EXISTS (" : "NOT EXISTS (") + members.sql + ")"
            return members
        }
        if op != .equal && op != .notEqual {
            for side in [left, right] {
                if side.kind.isNull {
                    throw DeckError.invalidQuery(
                        "'\(Self.abbreviated(text))' is always false: only = and != compare with null")
                }
            }
        }
        let (a, b) = try unify(left, right, text: text)
        let sql: String
        switch op {
        // Null equals null, as Swift's optionals do.
        case .equal: sql = a.sql + " IS " + b.sql
        case .notEqual: sql = a.sql + " IS NOT " + b.sql
        default: sql = a.sql + " " + op.rawValue + " " + b.sql
        }
        return Compiled(sql: sql, arguments: a.arguments + b.arguments, joins: a.joins.union(b.joins))
    }

    /// An operand that holds a record id, for membership tests.
    func recordOperand(_ operand: Operand, comparedWith other: String) throws(DeckError) -> Operand {
        switch operand.kind {
        case .record, .typed(.integer):
            return operand
        case .null:
            throw DeckError.invalidQuery(
                "'\(Self.abbreviated(other))' holds no null; use 'is null' for a to-many relationship that is empty"
            )
        case .literal(let value):
            switch value {
            case .reference(let id), .integer(let id):
                return Operand(
                    sql: placeholder, arguments: [.integer(id)], kind: .record, joins: [], text: operand.text)
            default: break
            }
        default: break
        }
        throw DeckError.invalidQuery(
            "'\(Self.abbreviated(other))' is a to-many relationship, which compares with a record id (#42), not "
                + Self.describe(operand.kind))
    }

    /// Gives two operands one type: a literal takes the other's; two types must compare.
    func unify(_ left: Operand, _ right: Operand, text: String) throws(DeckError) -> (
        Operand, Operand
    ) {
        switch (left.kind, right.kind) {
        case (.literal, .literal):
            return (try natural(left), try natural(right))
        case (.literal(let value), _):
            return (try typed(value, like: right, text: left.text), right)
        case (_, .literal(let value)):
            return (left, try typed(value, like: left, text: right.text))
        case (.null, _), (_, .null):
            return (
                left.kind.isNull
                    ? Operand(sql: "NULL", arguments: [], kind: .null, joins: [], text: "null") : left,
                right.kind.isNull
                    ? Operand(sql: "NULL", arguments: [], kind: .null, joins: [], text: "null") : right
            )
        case (.record, .record), (.record, .typed(.integer)), (.typed(.integer), .record):
            return (left, right)
        case (.typed(let a), .typed(let b)) where Self.family(a) == Self.family(b):
            return (left, right)
        default:
            throw DeckError.invalidQuery(
                "'\(Self.abbreviated(text))' compares \(Self.describe(left.kind)) ('\(Self.abbreviated(left.text))') "
                    + "with \(Self.describe(right.kind)) ('\(Self.abbreviated(right.text))')")
        }
    }

    /// A literal as its own type.
    func natural(_ operand: Operand) throws(DeckError) -> Operand {
        guard case .literal(let value) = operand.kind else { return operand }
        let type: StoreSchema.AttributeType
        switch value {
        case .null: return Operand(sql: "NULL", arguments: [], kind: .null, joins: [], text: "null")
        case .string: type = .string
        case .integer: type = .integer
        case .double: type = .double
        case .bool: type = .bool
        case .date: type = .date
        case .data: type = .data
        case .uuid: type = .uuid
        case .url: type = .url
        case .decimal: type = .decimal
        case .json: type = .json
        case .reference(let id):
            return Operand(
                sql: placeholder, arguments: [.integer(id)], kind: .record, joins: [], text: operand.text)
        case .blob, .file, .references:
            throw DeckError.invalidQuery("a \(value.kindName) value cannot appear in a query")
        }
        return try encoded(value, as: type, text: operand.text)
    }

    /// A literal converted to the type of `other` (spec 7.3's conversions).
    func typed(_ value: Value, like other: Operand, text: String) throws(DeckError) -> Operand {
        switch other.kind {
        case .typed(let type):
            var isNumber = false
            switch value {
            case .integer, .double, .decimal: isNumber = true
            default: break
            }
            if isNumber && !other.isAttribute && Self.isNumeric(type) {
                // Computed numbers meet numbers as they are (`reps + 1 > 2.5`).
                return try natural(
                    Operand(sql: "", arguments: [], kind: .literal(value), joins: [], text: text))
            }
            return try encoded(
                value, as: type, text: text, comparedWith: other.isAttribute ? other.text : nil)
        case .record:
            switch value {
            case .null: return Operand(sql: "NULL", arguments: [], kind: .null, joins: [], text: "null")
            case .reference(let id), .integer(let id):
                return Operand(
                    sql: placeholder, arguments: [.integer(id)], kind: .record, joins: [], text: text)
            default:
                throw DeckError.invalidValue(
                    entity: entity.name, property: other.text,
                    reason: "a relationship compares with a record id, not \(value.kindName)")
            }
        default:
            return try natural(Operand(sql: "", arguments: [], kind: .literal(value), joins: [], text: text))
        }
    }

    func encoded(
        _ value: Value, as type: StoreSchema.AttributeType, text: String, comparedWith property: String? = nil
    ) throws(DeckError) -> Operand {
        let sqlValue: SQLValue
        do {
            sqlValue = try value.sqlValue(
                for: Attribute(property ?? "value", type, isOptional: true), epoch: dateEpoch)
        } catch {
            throw DeckError.invalidValue(
                entity: entity.name, property: property ?? text, reason: error.description)
        }
        if sqlValue == .null {
            return Operand(sql: "NULL", arguments: [], kind: .null, joins: [], text: text)
        }
        // Decimals are stored as text to keep every digit; they compare and compute as numbers.
        let sql = type == .decimal ? "CAST(\(placeholder) AS NUMERIC)" : placeholder
        return Operand(sql: sql, arguments: [sqlValue], kind: .typed(type), joins: [], text: text)
    }

    mutating func textTest(
        _ lhs: QueryExpression, _ op: QueryExpression.TextOperator, _ rhs: QueryExpression,
        _ folding: QueryExpression.TextComparison, scope: Scope, level: Int
    ) throws(DeckError) -> Compiled {
        let text = "\(lhs) \(op.rawValue) \(rhs)"
        let haystack = try textOperand(try operand(lhs, scope: scope, level: level + 1), test: op, text: text)
        var needle = try operand(rhs, scope: scope, level: level + 1)
        let mode = TextFolding.Mode(folding)
        if mode != .exact, case .literal(.string(let value)) = needle.kind {
            // The needle is folded once, here, rather than once per row.
            let code = Int64(QueryFunctions.code(op, folding, needleFolded: true))
            let folded = TextFolding.fold(value, mode)
            return Compiled(
                sql: "deck_match(\(haystack.sql), \(placeholder), \(code))",
                arguments: haystack.arguments + [.text(folded)], joins: haystack.joins)
        }
        needle = try textOperand(needle, test: op, text: text)
        let joins = haystack.joins.union(needle.joins)
        switch folding {
        case .caseAndDiacriticInsensitive, .caseInsensitive:
            let code = QueryFunctions.code(op, folding, needleFolded: false)
            return Compiled(
                sql: "deck_match(\(haystack.sql), \(needle.sql), \(code))",
                arguments: haystack.arguments + needle.arguments, joins: joins)
        case .exact, .asciiCaseInsensitive:
            // SQLite's lower() folds ASCII letters only.
            let fold = folding == .asciiCaseInsensitive
            let (h, n) = (
                fold ? "lower(\(haystack.sql))" : haystack.sql, fold ? "lower(\(needle.sql))" : needle.sql
            )
            let (ha, na) = (haystack.arguments, needle.arguments)
            switch op {
            case .equals:
                return Compiled(sql: "\(h) = \(n)", arguments: ha + na, joins: joins)
            case .contains:
                return Compiled(sql: "instr(\(h), \(n)) > 0", arguments: ha + na, joins: joins)
            case .beginsWith:
                return Compiled(
                    sql: "substr(\(h), 1, length(\(needle.sql))) = \(n)", arguments: ha + na + na,
                    joins: joins)
            case .endsWith:
                // substr(x, -0) is all of x, so the empty suffix needs a case of its own (which, like
                // the other tests, a null text does not pass).
                return Compiled(
                    sql: "(substr(\(h), -length(\(needle.sql))) = \(n) OR (length(\(needle.sql)) = 0 AND "
                        + "\(haystack.sql) IS NOT NULL))",
                    arguments: ha + na + na + na + ha, joins: joins)
            }
        }
    }

    /// A text operand of a text test.
    func textOperand(_ operand: Operand, test: QueryExpression.TextOperator, text: String)
        throws(DeckError)
        -> Operand
    {
        switch operand.kind {
        case .typed(let type) where Self.isText(type):
            return operand
        case .literal(.string(let value)):
            return Operand(
                sql: placeholder, arguments: [.text(value)], kind: .typed(.string), joins: [], text: text)
        case .null:
            return Operand(sql: "NULL", arguments: [], kind: .null, joins: [], text: text)
        default:
            throw DeckError.invalidQuery(
                "'\(Self.abbreviated(operand.text))' is \(Self.describe(operand.kind)), not text, so "
                    + "\(test.rawValue) does not apply (in '\(Self.abbreviated(text))')")
        }
    }

    mutating func membership(
        _ lhs: QueryExpression, _ list: [QueryExpression], scope: Scope, level: Int
    )
        throws(DeckError) -> Compiled
    {
        let subject = try operand(lhs, scope: scope, level: level + 1)
        var items: [Operand] = []
        items.reserveCapacity(list.count)
        for element in list {
            let item = try operand(element, scope: scope, level: level + 1)
            if subject.kind.isToMany {
                items.append(try recordOperand(item, comparedWith: subject.text))
            } else {
                items.append(try unify(subject, item, text: "\(lhs) in (…)").1)
            }
        }
        var arguments: [SQLValue] = []
        var joins: Set<Int> = []
        var sql: [String] = []
        sql.reserveCapacity(items.count)
        for item in items {
            // Lists keep plain parameters, which SQLite handles in one piece.
            sql.append(item.sql == placeholder ? "?" : item.sql)
            arguments += item.arguments
            joins.formUnion(item.joins)
        }
        let set = "IN (" + sql.joined(separator: ", ") + ")"
        if case .toMany(_, let storage, let destination, let owner) = subject.kind {
            // A to-many relationship is "in" the list when it holds any of the records.
            var members = try self.members(storage, destination, owner: owner, level: level)
            members.sql = "EXISTS (" + members.sql + " AND q._pk " + set + ")"
            members.arguments += arguments
            members.joins = Self.statementJoins(subject.joins.union(joins), self.joins)
            return members
        }
        let typedSubject = try natural(subject)
        return Compiled(
            sql: typedSubject.sql + " " + set, arguments: typedSubject.arguments + arguments,
            joins: typedSubject.joins.union(joins))
    }

    /// `any` or `all` over a to-many relationship, a correlated subquery whose element is `variable`.
    mutating func quantifier(
        isAny: Bool, _ collection: QueryExpression, _ variable: QueryExpression.Variable,
        _ body: QueryExpression,
        scope: Scope, level: Int, text: String
    ) throws(DeckError) -> Compiled {
        let relation = try operand(collection, scope: scope, level: level + 1)
        guard case .toMany(_, let storage, let destination, let owner) = relation.kind else {
            throw DeckError.invalidQuery(
                "'\(Self.abbreviated(relation.text))' is \(Self.describe(relation.kind)); \(isAny ? "any" : "all") "
                    + "applies to a to-many relationship")
        }
        subqueries += 1
        let alias = "q\(subqueries)"
        let element = Scope(alias: alias, entity: destination, subquery: subqueries)
        let previous = scopes[variable]
        scopes[variable] = element
        defer { scopes[variable] = previous }
        let frame = subqueries
        var inner = try condition(body, scope: element, level: level + 3)
        inner.sql = "coalesce(" + inner.sql + ", 0)"
        var members = try self.members(
            storage, destination, owner: owner, level: level, alias: alias, frame: frame)
        // Joins of the element's paths go into the subquery; the statement's joins it refers to stay.
        members.sql += " AND " + (isAny ? inner.sql : "NOT " + inner.sql)
        members.arguments += inner.arguments
        members.joins = Self.statementJoins(inner.joins.union(relation.joins), joins)
        members.sql = (isAny ? "EXISTS (" : "NOT EXISTS (") + members.sql + ")"
        return members
    }

    /// Of `used`, the joins of the statement (not of a quantifier's subquery).
    static func statementJoins(_ used: Set<Int>, _ joins: [Join]) -> Set<Int> {
        used.filter { joins[$0].subquery == nil }
    }

    /// `SELECT 1 FROM … WHERE …` over the records a to-many relationship of `owner` holds, their
    /// alias `alias` (`q` unless given), and with the joins made in `frame` (a quantifier's).
    /// Only records of the destination's family count: siblings may share a table and a column.
    func members(
        _ storage: RelationshipStorage, _ destination: EntityMapping, owner: Scope, level: Int,
        alias: String = "q",
        frame: Int? = nil
    ) throws(DeckError) -> Compiled {
        let family = destination.familyCondition(alias).map { " AND " + $0 } ?? ""
        var extra = ""
        if let frame {
            for join in joins where join.subquery == frame { extra += " " + join.sql }
        }
        let sql: String
        switch storage {
        case .inverseColumn(let table, let column):
            sql =
                "SELECT 1 FROM \(quote(table)) \(alias)\(extra) WHERE \(alias).\(quote(column)) = \(owner.alias)._pk"
                + family
        case .joinTable(let table, let near, let far):
            sql =
                "SELECT 1 FROM \(quote(table)) \(alias)_link JOIN \(quote(destination.table)) \(alias) ON "
                + "\(alias)._pk = \(alias)_link.\(quote(far))\(extra) WHERE \(alias)_link.\(quote(near)) = "
                + "\(owner.alias)._pk" + family
        case .ownColumn(let column):
            sql =
                "SELECT 1 FROM \(quote(destination.table)) \(alias)\(extra) WHERE \(alias)._pk = "
                + "\(owner.alias).\(quote(column))" + family
        }
        return Compiled(sql: sql, arguments: [], joins: [])
    }
}

extension QueryCompiler.Kind {
    var isToMany: Bool {
        if case .toMany = self { return true }
        return false
    }

    var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}
