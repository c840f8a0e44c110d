import DeckSQLite
import Foundation

// The operands of a condition: literals, properties and the paths to them, arithmetic,
// coalescing, counts (see QueryCompiler+Expressions.swift for the types they compile to).
extension QueryCompiler {
    // MARK: Operands

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
            return Operand(sql: "", arguments: [], kind: .literal(value), joins: [], text: value.description)
        case .path(let path):
            return try self.path(path, scope: scope)
        case .arithmetic(let lhs, let op, let rhs):
            let left = try operand(lhs, scope: scope, level: level + 1)
            let right = try operand(rhs, scope: scope, level: level + 1)
            return try arithmetic(left, op, right, text: text)
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
            return try arithmetic(zero, .subtract, value, text: text)
        case .coalesce(let lhs, let rhs):
            let left = try operand(lhs, scope: scope, level: level + 1)
            let right = try operand(rhs, scope: scope, level: level + 1)
            for side in [left, right] where side.kind.isToMany {
                throw DeckError.invalidQuery(
                    "'\(Self.abbreviated(side.text))' is a to-many relationship, which is never null; "
                        + "'??' does not apply")
            }
            let (a, b) = try unify(left, right, text: text)
            let kind = a.kind.isNull ? b.kind : a.kind
            return Operand(
                sql: "coalesce(\(a.sql), \(b.sql))", arguments: a.arguments + b.arguments, kind: kind,
                joins: a.joins.union(b.joins), text: text)
        case .count(let inner):
            let relation = try operand(inner, scope: scope, level: level + 1)
            guard case .toMany(_, let storage, let destination, let owner) = relation.kind else {
                throw DeckError.invalidQuery(
                    "'\(Self.abbreviated(relation.text))' is \(Self.describe(relation.kind)); count applies to a "
                        + "to-many relationship")
            }
            var counted = try count(storage, destination, owner: owner, text: text)
            counted.joins = relation.joins
            return counted
        default:
            throw DeckError.invalidQuery(
                "'\(Self.abbreviated(text))' is a condition, not a value; it cannot be an operand here")
        }
    }

    func count(
        _ storage: RelationshipStorage, _ destination: EntityMapping, owner: Scope, text: String
    )
        throws(DeckError) -> Operand
    {
        let members = try self.members(storage, destination, owner: owner, level: 0)
        let sql =
            "(" + members.sql.replacingOccurrences(of: "SELECT 1 FROM", with: "SELECT count(*) FROM") + ")"
        return Operand(sql: sql, arguments: [], kind: .typed(.integer), joins: [], text: text)
    }

    func arithmetic(
        _ left: Operand, _ op: QueryExpression.ArithmeticOperator, _ right: Operand, text: String
    ) throws(DeckError) -> Operand {
        /// The operand as a number or a date, literals by their own type (a text next to a date is a date).
        func numeric(_ operand: Operand, other: Operand) throws(DeckError) -> Operand {
            var value = operand
            if case .literal(let literal) = operand.kind {
                if case .string = literal, case .typed(.date) = other.kind {
                    value = try encoded(literal, as: .date, text: operand.text)
                } else {
                    value = try natural(operand)
                }
            }
            switch value.kind {
            case .typed(let type) where Self.isNumeric(type) || type == .date: return value
            case .record:
                return Operand(
                    sql: value.sql, arguments: value.arguments, kind: .typed(.integer), joins: value.joins,
                    text: value.text)
            case .null: return value
            default:
                throw DeckError.invalidQuery(
                    "'\(Self.abbreviated(operand.text))' is \(Self.describe(value.kind)); arithmetic ('\(op.rawValue)') "
                        + "applies to numbers and dates (in '\(Self.abbreviated(text))')")
            }
        }
        let a = try numeric(left, other: right)
        let b = try numeric(right, other: left)
        func type(_ kind: Kind) -> StoreSchema.AttributeType? {
            if case .typed(let type) = kind { return type }
            return nil
        }
        let (ta, tb) = (type(a.kind), type(b.kind))
        var result: Kind
        switch (ta, tb) {
        case (.date, .date):
            guard op == .subtract else {
                throw DeckError.invalidQuery(
                    "'\(Self.abbreviated(text))': two dates can only be subtracted (giving the seconds between them)"
                )
            }
            result = .typed(.double)
        case (.date, _), (_, .date):
            guard op == .add || (op == .subtract && ta == .date) else {
                throw DeckError.invalidQuery(
                    "'\(Self.abbreviated(text))': a date can only have seconds added or subtracted")
            }
            result = .typed(.date)
        case (.integer, .integer): result = .typed(.integer)
        case (nil, nil): result = .null
        case (nil, let other?), (let other?, nil): result = .typed(other == .integer ? .integer : .double)
        default: result = .typed(.double)
        }
        if a.kind.isNull || b.kind.isNull { result = .null }
        return Operand(
            sql: "(\(a.sql) \(op.rawValue) \(b.sql))", arguments: a.arguments + b.arguments, kind: result,
            joins: a.joins.union(b.joins), text: text)
    }

    /// A property path from the record being queried or a quantifier's element.
    mutating func path(_ path: QueryExpression.PropertyPath, scope: Scope) throws(DeckError)
        -> Operand
    {
        // A path without a variable starts from the record being queried, wherever it is.
        var start = root
        if let variable = path.variable {
            guard let bound = scopes[variable] else {
                throw DeckError.invalidQuery(
                    "'\(Self.abbreviated(path.description))': \(variable) is not the element of an enclosing any "
                        + "or all")
            }
            start = bound
        }
        let text = path.description
        if path.names.isEmpty {
            return Operand(sql: "\(start.alias)._pk", arguments: [], kind: .record, joins: [], text: text)
        }
        guard path.names.count - 1 <= RecordQuery.Limits.relationshipSteps else {
            throw DeckError.invalidQuery(
                "'\(Self.abbreviated(text))' follows \(path.names.count - 1) relationships; a query follows at most "
                    + "\(RecordQuery.Limits.relationshipSteps)")
        }
        var current = start.entity
        var alias = start.alias
        var join: Int?
        var index = 0
        while index < path.names.count {
            let part = path.names[index]
            let isLast = index == path.names.count - 1
            let usedJoins: Set<Int> = join.map { [$0] } ?? []
            if part == "_id" || part == "_pk" {
                guard isLast else {
                    throw DeckError.invalidQuery(
                        "'\(part)' in '\(Self.abbreviated(text))' is the record id, so nothing can follow it")
                }
                return Operand(
                    sql: "\(alias)._pk", arguments: [], kind: .record, joins: usedJoins, text: text)
            }
            if let attribute = current.attribute(part) {
                guard isLast else {
                    throw DeckError.invalidQuery(
                        "'\(part)' in '\(Self.abbreviated(text))' is an attribute, so nothing can follow it")
                }
                let column = "\(alias).\(quote(part))"
                // Decimals are stored as text to keep every digit; they compare and compute as numbers.
                return Operand(
                    sql: attribute.type == .decimal ? "CAST(\(column) AS NUMERIC)" : column, arguments: [],
                    kind: .typed(attribute.type), joins: usedJoins, text: text, isAttribute: true)
            }
            guard let (relationship, storage) = current.relationship(part) else {
                throw DeckError.unknownProperty(
                    entity: current.name, name: part, known: current.propertyNames)
            }
            guard let destination = mapping.entities[relationship.destination] else {
                throw DeckError.unknownEntity(relationship.destination, known: mapping.entityNames)
            }
            let owner = Scope(alias: alias, entity: current, subquery: start.subquery)
            if relationship.isToMany {
                if isLast {
                    return Operand(
                        sql: "", arguments: [],
                        kind: .toMany(relationship, storage: storage, destination: destination, owner: owner),
                        joins: usedJoins, text: text)
                }
                if index == path.names.count - 2, path.names[index + 1] == "count" {
                    var counted = try count(storage, destination, owner: owner, text: text)
                    counted.joins = usedJoins
                    return counted
                }
                throw DeckError.invalidQuery(
                    "'\(part)' in '\(Self.abbreviated(text))' is a to-many relationship; only to-one relationships "
                        + "can be followed (use any, all or count)")
            }
            if isLast {
                return Operand(
                    sql: toOneColumn(storage, alias: alias, destination), arguments: [], kind: .record,
                    joins: usedJoins, text: text)
            }
            // One join per relationship step, shared by every path that takes it.
            let step = alias + "." + part
            if let existing = joinByStep[step] {
                join = existing
            } else {
                guard joins.count < RecordQuery.Limits.relationshipSteps else {
                    throw DeckError.invalidQuery(
                        "the query follows more than \(RecordQuery.Limits.relationshipSteps) different relationship "
                            + "steps (at '\(Self.abbreviated(text))')")
                }
                let next = "j\(joins.count + 1)"
                let on: String
                switch storage {
                case .ownColumn(let column):
                    on = "\(next)._pk = \(alias).\(quote(column))"
                default:
                    on = "\(next)._pk = " + toOneColumn(storage, alias: alias, destination)
                }
                joins.append(
                    Join(
                        sql: "LEFT JOIN \(quote(destination.table)) \(next) ON \(on)",
                        after: start.subquery == nil ? join : nil, subquery: start.subquery))
                join = joins.count - 1
                joinByStep[step] = joins.count - 1
            }
            alias = "j\((join ?? 0) + 1)"
            current = destination
            index += 1
        }
        throw DeckError.invalidQuery("empty property path")
    }

    /// The id a to-one relationship holds, for the record aliased `alias`.
    func toOneColumn(_ storage: RelationshipStorage, alias: String, _ destination: EntityMapping) -> String {
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
            return
                "(SELECT \(quote(far)) FROM \(quote(table)) WHERE \(quote(near)) = \(alias)._pk ORDER BY "
                + "\(quote(far)) LIMIT 1)"
        }
    }

    /// A sort key's operand: any value but a to-many relationship; with a folding, a text, which
    /// sorts by its folding first and then by its bytes (two keys).
    mutating func sortOperand(_ expression: QueryExpression, folding: QueryExpression.TextComparison = .exact)
        throws(DeckError) -> [Compiled]
    {
        let value = try natural(try operand(expression, scope: root, level: 0))
        if case .toMany = value.kind {
            throw DeckError.invalidQuery(
                "cannot sort by to-many relationship '\(Self.abbreviated(value.text))'; sort by its count")
        }
        let plain = Compiled(sql: value.sql, arguments: value.arguments, joins: value.joins)
        guard folding != .exact else { return [plain] }
        switch value.kind {
        case .typed(let type) where Self.isText(type): break
        case .null: return [plain]
        default:
            throw DeckError.invalidQuery(
                "'\(Self.abbreviated(value.text))' is \(Self.describe(value.kind)), not text, so it cannot sort "
                    + "with a text folding")
        }
        let folded =
            folding == .asciiCaseInsensitive
            ? "lower(\(value.sql))" : "deck_fold(\(value.sql), \(TextFolding.Mode(folding).rawValue))"
        return [Compiled(sql: folded, arguments: value.arguments, joins: value.joins), plain]
    }
}
