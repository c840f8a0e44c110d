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
public struct Query: Sendable, Hashable {
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

    public subscript(_ name: String) -> Value? { values[name] }
}

/// Compiles filters and sort keys against an entity mapping.
struct QueryCompiler {
    let mapping: SchemaMapping
    let entity: EntityMapping
    /// The alias of the entity's table in the statement.
    let alias: String
    var arguments: [SQLValue] = []
    private var aliasCounter = 0

    init(mapping: SchemaMapping, entity: EntityMapping, alias: String = "r") {
        self.mapping = mapping
        self.entity = entity
        self.alias = alias
    }

    enum Target {
        case attribute(Attribute, column: String)
        case toOne(Relationship, column: String)
        case toMany(Relationship, storage: RelationshipStorage, owner: String)
    }

    /// Resolves a possibly dotted key to a column expression.
    mutating func resolve(_ key: String) throws(DeckError) -> Target {
        let parts = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let current = entity
        let tableAlias = alias
        if key == "_id" || key == "_pk" {
            // The record id, as every output names it.
            return .attribute(Attribute("_id", .integer), column: "\(tableAlias)._pk")
        }
        for (index, part) in parts.enumerated() {
            let isLast = index == parts.count - 1
            if let attribute = current.attribute(part) {
                guard isLast else {
                    throw DeckError.invalidQuery(
                        "'\(part)' in '\(key)' is an attribute, so nothing can follow it")
                }
                let column = "\(tableAlias).\(quote(part))"
                // Decimals are stored as text to keep every digit; they compare and sort as numbers.
                return .attribute(
                    attribute, column: attribute.type == .decimal ? "CAST(\(column) AS NUMERIC)" : column)
            }
            guard let (relationship, storage) = current.relationship(part) else {
                throw DeckError.unknownProperty(
                    entity: current.name, name: part,
                    suggestion: closestMatch(to: part, in: current.propertyNames))
            }
            let column: String
            switch storage {
            case .ownColumn(let c): column = "\(tableAlias).\(quote(c))"
            case .inverseColumn(let table, let c) where !relationship.isToMany:
                column = "(SELECT _pk FROM \(quote(table)) WHERE \(quote(c)) = \(tableAlias)._pk LIMIT 1)"
            default:
                guard isLast else {
                    throw DeckError.invalidQuery(
                        "'\(part)' in '\(key)' is a to-many relationship; only to-one paths can be followed")
                }
                return .toMany(relationship, storage: storage, owner: "\(tableAlias)._pk")
            }
            if isLast { return .toOne(relationship, column: column) }
            guard let next = mapping.entities[relationship.destination] else {
                throw DeckError.unknownEntity(relationship.destination, suggestion: nil)
            }
            aliasCounter += 1
            let nextAlias = "\(alias)\(aliasCounter)"
            // Re-express the rest of the path inside a scalar subquery on the destination.
            var inner = QueryCompiler(mapping: mapping, entity: next, alias: nextAlias)
            inner.aliasCounter = aliasCounter + 100
            let rest = parts[(index + 1)...].joined(separator: ".")
            let target = try inner.resolve(rest)
            arguments += inner.arguments
            func wrap(_ expression: String) -> String {
                "(SELECT \(expression) FROM \(quote(next.table)) \(nextAlias) WHERE \(nextAlias)._pk = \(column))"
            }
            switch target {
            case .attribute(let a, let c): return .attribute(a, column: wrap(c))
            case .toOne(let r, let c): return .toOne(r, column: wrap(c))
            case .toMany:
                throw DeckError.invalidQuery("'\(key)': a to-many relationship cannot end a dotted path")
            }
        }
        throw DeckError.invalidQuery("empty key")
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

    /// SQL for a filter, appending its arguments.
    mutating func compile(_ filter: Filter) throws(DeckError) -> String {
        switch filter {
        case .all:
            return "1"
        case .and(let parts):
            guard !parts.isEmpty else { return "1" }
            var sql: [String] = []
            for part in parts { sql.append(try compile(part)) }
            return "(" + sql.joined(separator: " AND ") + ")"
        case .or(let parts):
            guard !parts.isEmpty else { return "0" }
            var sql: [String] = []
            for part in parts { sql.append(try compile(part)) }
            return "(" + sql.joined(separator: " OR ") + ")"
        case .not(let inner):
            // Two-valued: a comparison with null is false, so its negation is true.
            return "NOT coalesce(" + (try compile(inner)) + ", 0)"
        case .isNull(let key):
            let target = try resolve(key)
            switch target {
            case .attribute(_, let column), .toOne(_, let column): return "\(column) IS NULL"
            case .toMany(_, let storage, let owner): return "NOT EXISTS " + membersSQL(storage, owner: owner)
            }
        case .compare(let key, let op, let value):
            let target = try resolve(key)
            if case .toMany(_, let storage, let owner) = target {
                // A to-many relationship compares by membership: `tags == #3` means it holds #3.
                guard op == .equal || op == .notEqual else {
                    throw DeckError.invalidQuery(
                        "'\(key)' is a to-many relationship: only == and != (membership) apply")
                }
                let id = try encode(value, for: target, key: key)
                arguments.append(id)
                let exists =
                    "EXISTS (SELECT 1 FROM (\(membersSelect(storage, owner: owner))) WHERE member = ?)"
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
            arguments.append(encoded)
            if op == .notEqual { return "\(column) IS NOT ?" }
            return "\(column) \(op.rawValue) ?"
        case .text(let key, let match, let needle, let caseInsensitive):
            let target = try resolve(key)
            guard case .attribute(let attribute, let column) = target,
                attribute.type == .string || attribute.type == .url
                    || attribute.type == .json || attribute.type == .uuid
            else {
                throw DeckError.invalidQuery("'\(key)' is not text, so \(match.rawValue) does not apply")
            }
            let lhs = caseInsensitive ? "lower(\(column))" : column
            let rhs = caseInsensitive ? "lower(?)" : "?"
            switch match {
            case .contains:
                arguments.append(.text(needle))
                return "instr(\(lhs), \(rhs)) > 0"
            case .beginsWith:
                arguments += [.text(needle), .text(needle)]
                return "substr(\(lhs), 1, length(?)) = \(rhs)"
            case .endsWith:
                arguments += [.text(needle), .text(needle), .text(needle)]
                return "(length(?) = 0 OR substr(\(lhs), -length(?)) = \(rhs))"
            }
        case .oneOf(let key, let values):
            guard !values.isEmpty else { return "0" }
            let target = try resolve(key)
            var encoded: [SQLValue] = []
            for value in values { encoded.append(try encode(value, for: target, key: key)) }
            let placeholders = "(" + encoded.map { _ in "?" }.joined(separator: ", ") + ")"
            if case .toMany(_, let storage, let owner) = target {
                // A to-many relationship is "in" the list when it holds any of the ids.
                arguments += encoded
                return
                    "EXISTS (SELECT 1 FROM (\(membersSelect(storage, owner: owner))) WHERE member IN \(placeholders))"
            }
            arguments += encoded
            return "\(columnOf(target)) IN \(placeholders)"
        }
    }

    private func columnOf(_ target: Target) -> String {
        switch target {
        case .attribute(_, let column), .toOne(_, let column): column
        case .toMany(_, _, let owner): owner
        }
    }

    private func membersSelect(_ storage: RelationshipStorage, owner: String) -> String {
        switch storage {
        case .inverseColumn(let table, let column):
            "SELECT _pk AS member FROM \(quote(table)) WHERE \(quote(column)) = \(owner)"
        case .joinTable(let table, let near, let far):
            "SELECT \(far) AS member FROM \(quote(table)) WHERE \(near) = \(owner)"
        case .ownColumn(let column):
            "SELECT \(quote(column)) AS member WHERE \(quote(column)) IS NOT NULL"
        }
    }

    private func membersSQL(_ storage: RelationshipStorage, owner: String) -> String {
        "(" + membersSelect(storage, owner: owner) + ")"
    }

    /// SQL for an ORDER BY list (stable: ends with `_pk`).
    mutating func orderBy(_ keys: [SortKey]) throws(DeckError) -> String {
        var terms: [String] = []
        for key in keys {
            let target = try resolve(key.key)
            if case .toMany = target {
                throw DeckError.invalidQuery("cannot sort by to-many relationship '\(key.key)'")
            }
            terms.append("\(columnOf(target)) \(key.ascending ? "ASC" : "DESC")")
        }
        terms.append("\(alias)._pk ASC")
        return terms.joined(separator: ", ")
    }
}
