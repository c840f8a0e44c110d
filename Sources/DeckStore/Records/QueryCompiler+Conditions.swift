import DeckSQLite
import Foundation

// The conditions and operands of a query, compiled to SQL (their types are in
// QueryCompiler+Typing.swift, their paths in QueryCompiler+Paths.swift).
extension QueryCompiler {
    /// Compiles conditions (comparisons, text tests, membership, null tests, quantifiers) and the
    /// operands they take (values, paths, arithmetic, `??`, `count`) to SQL, with the values of
    /// their parameters and the statement's joins they use.
    struct ConditionCompiler {
        /// The paths, joins and quantifier scopes of the statement.
        var paths: PathResolver
        /// The operands' types and conversions.
        var typing: OperandTyping

        func checkLevel(_ level: Int, _ text: @autoclosure () -> String) throws(DeckError) {
            guard level <= RecordQuery.Limits.depth else {
                throw DeckError.invalidQuery(
                    "'\(abbreviated(text()))' nests more than \(RecordQuery.Limits.depth) levels deep; "
                        + "split it into simpler conditions")
            }
        }

        /// A condition: a comparison, test, quantifier, or `and`/`or`/`not` (inside quantifiers, where
        /// the top level's normalisation does not reach), or a boolean.
        mutating func condition(_ expression: QueryExpression, scope: Scope? = nil, level: Int)
            throws(DeckError)
            -> Compiled
        {
            let scope = scope ?? paths.root
            try checkLevel(level, "\(expression)")
            switch expression {
            case .value(.bool(let value)):
                return Compiled(sql: value ? "1" : "0", arguments: [], joins: [])
            case .and(let parts), .or(let parts):
                var isAnd = false
                if case .and = expression { isAnd = true }
                guard !parts.isEmpty else {
                    return Compiled(sql: isAnd ? "1" : "0", arguments: [], joins: [])
                }
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
                    var members = try paths.members(storage, destination, owner: owner, level: level)
                    members.sql = "NOT EXISTS (" + members.sql + ")"
                    members.joins = paths.statementJoins(operand.joins)
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
                    isAny: isAny, collection, variable, body, scope: scope, level: level,
                    text: "\(expression)")
            case .path(let path):
                // A boolean attribute is a condition by itself.
                let operand = try self.operand(.path(path), scope: scope, level: level)
                guard case .typed(.bool) = operand.kind else {
                    throw DeckError.invalidQuery(
                        "'\(abbreviated(path.description))' is \(describe(operand.kind)), not a condition"
                    )
                }
                return Compiled(sql: operand.sql + " = 1", arguments: operand.arguments, joins: operand.joins)
            default:
                throw DeckError.invalidQuery(
                    "'\(abbreviated("\(expression)"))' is a value, not a condition; compare it with something"
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
                sql: "(" + left.sql + separator + right.sql + ")",
                arguments: left.arguments + right.arguments,
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
                        "'\(abbreviated(left.text))' is a to-many relationship: only = and != (membership) "
                            + "apply; use '.count' to compare its size")
                }
                let id = try typing.recordOperand(right, comparedWith: left.text)
                var members = try paths.members(storage, destination, owner: owner, level: level)
                members.sql += " AND q._pk = " + id.sql
                members.arguments += id.arguments
                members.joins = paths.statementJoins(left.joins.union(id.joins))
                members.sql = (op == .equal ? "EXISTS (" : "NOT EXISTS (") + members.sql + ")"
                return members
            }
            if op != .equal && op != .notEqual {
                for side in [left, right] {
                    if side.kind.isNull {
                        throw DeckError.invalidQuery(
                            "'\(abbreviated(text))' is always false: only = and != compare with null")
                    }
                }
            }
            let (a, b) = try typing.unify(left, right, text: text)
            let sql: String
            switch op {
            // Null equals null, as Swift's optionals do.
            case .equal: sql = a.sql + " IS " + b.sql
            case .notEqual: sql = a.sql + " IS NOT " + b.sql
            default: sql = a.sql + " " + op.rawValue + " " + b.sql
            }
            return Compiled(sql: sql, arguments: a.arguments + b.arguments, joins: a.joins.union(b.joins))
        }

        mutating func textTest(
            _ lhs: QueryExpression, _ op: QueryExpression.TextOperator, _ rhs: QueryExpression,
            _ folding: QueryExpression.TextComparison, scope: Scope, level: Int
        ) throws(DeckError) -> Compiled {
            let text = "\(lhs) \(op.rawValue) \(rhs)"
            let haystack = try typing.textOperand(
                try operand(lhs, scope: scope, level: level + 1), test: op, text: text)
            var needle = try operand(rhs, scope: scope, level: level + 1)
            let mode = TextFolding.Mode(folding)
            if mode != .exact, case .literal(.string(let value)) = needle.kind {
                // The needle is folded once, here, rather than once per row.
                let code = Int64(QueryFunctions.code(op, folding, needleFolded: true))
                let folded = TextFolding.fold(value, mode)
                return Compiled(
                    sql: "deck_match(\(haystack.sql), \(typing.placeholder), \(code))",
                    arguments: haystack.arguments + [.text(folded)], joins: haystack.joins)
            }
            needle = try typing.textOperand(needle, test: op, text: text)
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
                    items.append(try typing.recordOperand(item, comparedWith: subject.text))
                } else {
                    items.append(try typing.unify(subject, item, text: "\(lhs) in (…)").1)
                }
            }
            var arguments: [SQLValue] = []
            var joins: Set<Int> = []
            var sql: [String] = []
            sql.reserveCapacity(items.count)
            for item in items {
                // Lists keep plain parameters, which SQLite handles in one piece.
                sql.append(item.sql == typing.placeholder ? "?" : item.sql)
                arguments += item.arguments
                joins.formUnion(item.joins)
            }
            let set = "IN (" + sql.joined(separator: ", ") + ")"
            if case .toMany(_, let storage, let destination, let owner) = subject.kind {
                // A to-many relationship is "in" the list when it holds any of the records.
                var members = try paths.members(storage, destination, owner: owner, level: level)
                members.sql = "EXISTS (" + members.sql + " AND q._pk " + set + ")"
                members.arguments += arguments
                members.joins = paths.statementJoins(subject.joins.union(joins))
                return members
            }
            let typedSubject = try typing.natural(subject)
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
                    "'\(abbreviated(relation.text))' is \(describe(relation.kind)); \(isAny ? "any" : "all") "
                        + "applies to a to-many relationship")
            }
            paths.subqueries += 1
            let alias = "q\(paths.subqueries)"
            let element = Scope(alias: alias, entity: destination, subquery: paths.subqueries)
            let previous = paths.scopes[variable]
            paths.scopes[variable] = element
            defer { paths.scopes[variable] = previous }
            let frame = paths.subqueries
            var inner = try condition(body, scope: element, level: level + 3)
            inner.sql = "coalesce(" + inner.sql + ", 0)"
            var members = try paths.members(
                storage, destination, owner: owner, level: level, alias: alias, frame: frame)
            // Joins of the element's paths go into the subquery; the statement's joins it refers to stay.
            members.sql += " AND " + (isAny ? inner.sql : "NOT " + inner.sql)
            members.arguments += inner.arguments
            members.joins = paths.statementJoins(inner.joins.union(relation.joins))
            members.sql = (isAny ? "EXISTS (" : "NOT EXISTS (") + members.sql + ")"
            return members
        }

        /// An operand: a value, a path, arithmetic, `??`, `count`.
        mutating func operand(_ expression: QueryExpression, scope: Scope, level: Int) throws(DeckError)
            -> Operand
        {
            try checkLevel(level, "\(expression)")
            let text = "\(expression)"
            switch expression {
            case .value(let value):
                if value.isNull {
                    return Operand(sql: "NULL", arguments: [], kind: .null, joins: [], text: "null")
                }
                return Operand(
                    sql: "", arguments: [], kind: .literal(value), joins: [], text: value.description)
            case .path(let path):
                return try paths.resolve(path, scope: scope)
            case .arithmetic(let lhs, let op, let rhs):
                let left = try operand(lhs, scope: scope, level: level + 1)
                let right = try operand(rhs, scope: scope, level: level + 1)
                return try typing.arithmetic(left, op, right, text: text)
            case .negate(let inner):
                let value = try operand(inner, scope: scope, level: level + 1)
                let zero = Operand(sql: "", arguments: [], kind: .literal(.integer(0)), joins: [], text: "0")
                if case .literal(.integer(let number)) = value.kind, number != .min {
                    return Operand(
                        sql: "", arguments: [], kind: .literal(.integer(-number)), joins: [], text: text)
                }
                if case .literal(.double(let number)) = value.kind {
                    return Operand(
                        sql: "", arguments: [], kind: .literal(.double(-number)), joins: [], text: text)
                }
                return try typing.arithmetic(zero, .subtract, value, text: text)
            case .coalesce(let lhs, let rhs):
                let left = try operand(lhs, scope: scope, level: level + 1)
                let right = try operand(rhs, scope: scope, level: level + 1)
                for side in [left, right] where side.kind.isToMany {
                    throw DeckError.invalidQuery(
                        "'\(abbreviated(side.text))' is a to-many relationship, which is never null; "
                            + "'??' does not apply")
                }
                let (a, b) = try typing.unify(left, right, text: text)
                let kind = a.kind.isNull ? b.kind : a.kind
                return Operand(
                    sql: "coalesce(\(a.sql), \(b.sql))", arguments: a.arguments + b.arguments, kind: kind,
                    joins: a.joins.union(b.joins), text: text)
            case .count(let inner):
                let relation = try operand(inner, scope: scope, level: level + 1)
                guard case .toMany(_, let storage, let destination, let owner) = relation.kind else {
                    throw DeckError.invalidQuery(
                        "'\(abbreviated(relation.text))' is \(describe(relation.kind)); count applies to a "
                            + "to-many relationship")
                }
                var counted = try paths.count(storage, destination, owner: owner, text: text)
                counted.joins = relation.joins
                return counted
            default:
                throw DeckError.invalidQuery(
                    "'\(abbreviated(text))' is a condition, not a value; it cannot be an operand here")
            }
        }

        /// A sort key's operand: any value but a to-many relationship; with a folding, a text, which
        /// sorts by its folding first and then by its bytes (two keys).
        mutating func sortOperand(
            _ expression: QueryExpression, folding: QueryExpression.TextComparison = .exact
        )
            throws(DeckError) -> [Compiled]
        {
            let value = try typing.natural(try operand(expression, scope: paths.root, level: 0))
            if case .toMany = value.kind {
                throw DeckError.invalidQuery(
                    "cannot sort by to-many relationship '\(abbreviated(value.text))'; sort by its count")
            }
            let plain = Compiled(sql: value.sql, arguments: value.arguments, joins: value.joins)
            guard folding != .exact else { return [plain] }
            switch value.kind {
            case .typed(let type) where isText(type): break
            case .null: return [plain]
            default:
                throw DeckError.invalidQuery(
                    "'\(abbreviated(value.text))' is \(describe(value.kind)), not text, so it cannot sort "
                        + "with a text folding")
            }
            let folded =
                folding == .asciiCaseInsensitive
                ? "lower(\(value.sql))" : "deck_fold(\(value.sql), \(TextFolding.Mode(folding).rawValue))"
            return [Compiled(sql: folded, arguments: value.arguments, joins: value.joins), plain]
        }
    }
}
