import DeckSQLite
import Foundation

// Paths and relationships in a query's SQL: where a path starts (the record being queried or a
// quantifier's element), the `LEFT JOIN`s its to-one steps take, and the subqueries over to-many
// relationships (membership, `count`, `any`, `all`).
extension QueryCompiler {
    /// A `LEFT JOIN` for one relationship step, the join its `ON` clause refers to, and the
    /// quantifier subquery it belongs to (nil: the statement's).
    struct Join {
        let sql: String
        let after: Int?
        let subquery: Int?
    }

    /// Where paths from a record start: its alias and entity, and the subquery whose `FROM` its
    /// joins go to (nil for the record being queried).
    struct Scope {
        let alias: String
        let entity: EntityMapping
        let subquery: Int?
    }

    /// Resolves property paths to SQL, and owns what they share across a statement: the joins
    /// (one per relationship step, shared by every path that takes it), the element scopes of the
    /// quantifiers being compiled, and the count of quantifier subqueries (for their aliases).
    struct PathResolver {
        let mapping: SchemaMapping
        /// The record being queried.
        let root: Scope
        private(set) var joins: [Join] = []
        private var joinByStep: [String: Int] = [:]
        /// The element scopes of the quantifiers being compiled, by variable.
        var scopes: [QueryExpression.Variable: Scope] = [:]
        /// Quantifier subqueries made so far (for their aliases).
        var subqueries = 0

        init(mapping: SchemaMapping, entity: EntityMapping) {
            self.mapping = mapping
            self.root = Scope(alias: "r", entity: entity, subquery: nil)
        }

        /// A property path from the record being queried or a quantifier's element.
        mutating func resolve(_ path: QueryExpression.PropertyPath, scope: Scope) throws(DeckError)
            -> Operand
        {
            let start = try self.start(of: path)
            let text = path.description
            if path.names.isEmpty {
                return Operand(sql: "\(start.alias)._pk", arguments: [], kind: .record, joins: [], text: text)
            }
            guard path.names.count - 1 <= RecordQuery.Limits.relationshipSteps else {
                throw DeckError.invalidQuery(
                    "'\(abbreviated(text))' follows \(path.names.count - 1) relationships; a query follows at most "
                        + "\(RecordQuery.Limits.relationshipSteps)")
            }
            var current = start.entity
            var alias = start.alias
            var join: Int?
            for (index, part) in path.names.enumerated() {
                let isLast = index == path.names.count - 1
                let usedJoins: Set<Int> = join.map { [$0] } ?? []
                if part == "_id" || part == "_pk" {
                    guard isLast else {
                        throw DeckError.invalidQuery(
                            "'\(part)' in '\(abbreviated(text))' is the record id, so nothing can follow it")
                    }
                    return Operand(
                        sql: "\(alias)._pk", arguments: [], kind: .record, joins: usedJoins, text: text)
                }
                if let attribute = current.attribute(part) {
                    guard isLast else {
                        throw DeckError.invalidQuery(
                            "'\(part)' in '\(abbreviated(text))' is an attribute, so nothing can follow it")
                    }
                    let column = "\(alias).\(quote(part))"
                    // Decimals are stored as text to keep every digit; they compare and compute as numbers.
                    return Operand(
                        sql: attribute.type == .decimal ? "CAST(\(column) AS NUMERIC)" : column,
                        arguments: [],
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
                    return try toManyEnd(
                        part, relationship, storage, destination, owner: owner,
                        rest: path.names[(index + 1)...], joins: usedJoins, text: text)
                }
                if isLast {
                    return Operand(
                        sql: toOneColumn(storage, alias: alias, destination), arguments: [], kind: .record,
                        joins: usedJoins, text: text)
                }
                let taken = try self.join(part, from: owner, storage, destination, after: join, text: text)
                join = taken
                alias = "j\(taken + 1)"
                current = destination
            }
            throw DeckError.invalidQuery("empty property path")
        }

        /// The scope a path starts from: its variable's element, or the record being queried.
        private func start(of path: QueryExpression.PropertyPath) throws(DeckError) -> Scope {
            // A path without a variable starts from the record being queried, wherever it is.
            guard let variable = path.variable else { return root }
            guard let bound = scopes[variable] else {
                throw DeckError.invalidQuery(
                    "'\(abbreviated(path.description))': \(variable) is not the element of an enclosing any "
                        + "or all")
            }
            return bound
        }

        /// A path that reaches a to-many relationship (`part`): the relationship where the path
        /// ends, its count where `count` alone follows; a to-many relationship cannot be followed.
        private func toManyEnd(
            _ part: String, _ relationship: Relationship, _ storage: RelationshipStorage,
            _ destination: EntityMapping, owner: Scope, rest: ArraySlice<String>, joins usedJoins: Set<Int>,
            text: String
        ) throws(DeckError) -> Operand {
            if rest.isEmpty {
                return Operand(
                    sql: "", arguments: [],
                    kind: .toMany(relationship, storage: storage, destination: destination, owner: owner),
                    joins: usedJoins, text: text)
            }
            if rest.elementsEqual(["count"]) {
                var counted = try count(storage, destination, owner: owner, text: text)
                counted.joins = usedJoins
                return counted
            }
            throw DeckError.invalidQuery(
                "'\(part)' in '\(abbreviated(text))' is a to-many relationship; only to-one relationships "
                    + "can be followed (use any, all or count)")
        }

        /// The index of the join for the to-one step `part` from `owner`, made the first time a
        /// path takes that step and shared by every path that takes it after; `previous` is the
        /// join `owner`'s alias comes from.
        private mutating func join(
            _ part: String, from owner: Scope, _ storage: RelationshipStorage, _ destination: EntityMapping,
            after previous: Int?, text: String
        ) throws(DeckError) -> Int {
            let step = owner.alias + "." + part
            if let existing = joinByStep[step] { return existing }
            guard joins.count < RecordQuery.Limits.relationshipSteps else {
                throw DeckError.invalidQuery(
                    "the query follows more than \(RecordQuery.Limits.relationshipSteps) different relationship "
                        + "steps (at '\(abbreviated(text))')")
            }
            let next = "j\(joins.count + 1)"
            let on: String
            switch storage {
            case .ownColumn(let column):
                on = "\(next)._pk = \(owner.alias).\(quote(column))"
            default:
                on = "\(next)._pk = " + toOneColumn(storage, alias: owner.alias, destination)
            }
            joins.append(
                Join(
                    sql: "LEFT JOIN \(quote(destination.table)) \(next) ON \(on)",
                    after: owner.subquery == nil ? previous : nil, subquery: owner.subquery))
            joinByStep[step] = joins.count - 1
            return joins.count - 1
        }

        /// The id a to-one relationship holds, for the record aliased `alias`.
        func toOneColumn(_ storage: RelationshipStorage, alias: String, _ destination: EntityMapping)
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
                return
                    "(SELECT \(quote(far)) FROM \(quote(table)) WHERE \(quote(near)) = \(alias)._pk ORDER BY "
                    + "\(quote(far)) LIMIT 1)"
            }
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

        func count(
            _ storage: RelationshipStorage, _ destination: EntityMapping, owner: Scope, text: String
        )
            throws(DeckError) -> Operand
        {
            let members = try self.members(storage, destination, owner: owner, level: 0)
            let sql =
                "(" + members.sql.replacingOccurrences(of: "SELECT 1 FROM", with: "SELECT count(*) FROM")
                + ")"
            return Operand(sql: sql, arguments: [], kind: .typed(.integer), joins: [], text: text)
        }

        /// Of `used`, the joins of the statement (not of a quantifier's subquery).
        func statementJoins(_ used: Set<Int>) -> Set<Int> {
            used.filter { joins[$0].subquery == nil }
        }

        /// The joins `used` refers to, with the joins they depend on, in the order they were made.
        func joinClauses(_ used: Set<Int>) -> String {
            var needed = used
            for index in used {
                var next = joins[index].after
                while let current = next, needed.insert(current).inserted { next = joins[current].after }
            }
            return needed.sorted().map { " " + joins[$0].sql }.joined()
        }
    }
}
