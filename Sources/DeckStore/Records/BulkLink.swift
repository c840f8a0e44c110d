import DeckSQLite
import Foundation

/// One relationship's links as a ``BulkLoader`` writes them: where spec 6.5 stores them, with
/// the statements prepared once (a load sets one relationship for every row in turn). Checks that
/// both ends of a link exist and are of the right entities (spec 6.4: a foreign key proves only
/// that a row exists); runs no delete rule and records no change.
final class BulkLink {
    /// The entity the links are set from, as the caller named it.
    let source: EntityMapping
    let name: String
    let isToMany: Bool
    private let destination: EntityMapping
    private let storage: RelationshipStorage
    /// `SELECT _entity` of a row of the source's and of the destination's table, by key.
    private let sourceRow: Statement
    private let targetRow: Statement
    /// What a link writes: the source's column, the inverse's column, or a join table's row
    /// (bound: the source's key, then the target's; for the source's own column, the reverse).
    private let write: Statement?
    /// What a one-to-one lets go first: the earlier partner's link (bound: the target's key and
    /// the source's for an own column; the source's key for the inverse's column).
    private let release: Statement?

    init(_ connection: StoreConnection, entity source: EntityMapping, relationship name: String)
        throws(DeckError)
    {
        guard let (relationship, storage) = source.relationship(name) else {
            throw DeckError.unknownProperty(entity: source.name, name: name, known: source.propertyNames)
        }
        guard let destination = connection.mapping.entities[relationship.destination] else {
            throw DeckError.unknownEntity(relationship.destination, known: connection.mapping.entityNames)
        }
        self.source = source
        self.name = name
        self.isToMany = relationship.isToMany
        self.destination = destination
        self.storage = storage
        let inverseIsToOne =
            relationship.inverse.flatMap { destination.relationship($0)?.relationship.isToMany } == false
        var writeSQL: String?
        var releaseSQL: String?
        switch storage {
        case .ownColumn(let column):
            let declarer = source.relationshipPosition(name).flatMap {
                connection.mapping.entities[source.declarers[$0]]
            }
            writeSQL =
                "UPDATE \(quote(source.table)) SET \(quote(column)) = ? WHERE _pk = ?\(Self.and(source))"
            if inverseIsToOne {
                releaseSQL =
                    "UPDATE \(quote(source.table)) SET \(quote(column)) = NULL WHERE \(quote(column)) = ? "
                    + "AND _pk != ?\(Self.and(declarer ?? source))"
            }
        case .inverseColumn(let table, let column):
            writeSQL = "UPDATE \(quote(table)) SET \(quote(column)) = ? WHERE _pk = ?"
            if !relationship.isToMany {
                releaseSQL =
                    "UPDATE \(quote(table)) SET \(quote(column)) = NULL WHERE \(quote(column)) = ?"
                    + Self.and(destination)
            }
        case .joinTable(let table, let near, let far):
            writeSQL = "INSERT OR IGNORE INTO \(quote(table))(\(near), \(far)) VALUES (?, ?)"
        }
        let database = connection.database
        do {
            sourceRow = try database.prepare("SELECT _entity FROM \(quote(source.table)) WHERE _pk = ?")
            targetRow = try database.prepare("SELECT _entity FROM \(quote(destination.table)) WHERE _pk = ?")
            write = try writeSQL.map { sql throws(SQLiteError) in try database.prepare(sql) }
            release = try releaseSQL.map { sql throws(SQLiteError) in try database.prepare(sql) }
        } catch {
            throw connection.translate(error)
        }
    }

    /// ` AND _entity IN (…)` for a subentity's family; nothing for a root's.
    private static func and(_ mapping: EntityMapping) -> String {
        mapping.familyCondition(nil).map { " AND " + $0 } ?? ""
    }

    /// Sets the to-one link of record `pk` to `target` (nil: none).
    func setToOne(_ pk: Int64, _ target: Int64?) throws {
        guard let write else { return }
        switch storage {
        case .ownColumn:
            if let target, let release { try run(release, .integer(target), .integer(pk)) }
            try run(write, target.map { .integer($0) } ?? .null, .integer(pk))
            guard write.database.changes == 1 else { throw missingSource(pk) }
        case .inverseColumn:
            try requireSource(pk)
            if let release { try run(release, .integer(pk), nil) }
            if let target { try run(write, .integer(pk), .integer(target)) }
        case .joinTable:
            break
        }
    }

    /// Adds `target` to the to-many link of record `pk`; false when the link was there already
    /// (a pair given twice).
    func add(_ pk: Int64, _ target: Int64) throws -> Bool {
        guard let write else { return false }
        switch storage {
        case .inverseColumn, .joinTable:
            try run(write, .integer(pk), .integer(target))
            return write.database.changes > 0
        case .ownColumn: return false
        }
    }

    private func run(_ statement: Statement, _ first: SQLValue, _ second: SQLValue?) throws {
        statement.rewind()
        try statement.bind(first, at: 1)
        if let second { try statement.bind(second, at: 2) }
        try statement.runBound()
    }

    /// Checks that record `pk` exists and is of the source entity or a descendant.
    func requireSource(_ pk: Int64) throws {
        guard try entity(of: pk, in: sourceRow, family: source.family).isMember else {
            throw missingSource(pk)
        }
    }

    /// Checks that record `target`, linked from record `pk`, exists and is of the destination
    /// entity or a descendant.
    func requireTarget(_ target: Int64, from pk: Int64) throws {
        let (isMember, found) = try entity(of: target, in: targetRow, family: destination.family)
        guard !isMember else { return }
        throw Self.wrongTarget(
            entity: source.name, relationship: name, pk: pk, destination: destination.name, target: target,
            found: found)
    }

    /// A link from record `pk` to `target`, which is not a record of `destination` (nor of a
    /// descendant): `found` is the entity it is, nil when there is no such record.
    static func wrongTarget(
        entity: String, relationship: String, pk: Int64, destination: String, target: Int64, found: String?
    ) -> DeckError {
        .invalidValue(
            entity: entity, property: relationship,
            reason: "the record with key \(pk) links to \(destination) key \(target), "
                + (found.map { "which is a \($0), not a \(destination)" } ?? "which does not exist"))
    }

    /// Whether the row with key `pk` (read by `statement`) is of `family`, and its entity (nil: no
    /// such row).
    private func entity(of pk: Int64, in statement: Statement, family: [String]) throws -> (
        isMember: Bool, entity: String?
    ) {
        statement.rewind()
        try statement.bind(.integer(pk), at: 1)
        defer { statement.rewind() }
        guard try statement.step() else { return (false, nil) }
        let entity = statement.text(at: 0)
        return (family.contains(entity), entity)
    }

    private func missingSource(_ pk: Int64) -> DeckError {
        .invalidValue(
            entity: source.name, property: name,
            reason: "no record of \(source.name) (or a descendant) has key \(pk) to link from")
    }
}

@available(*, unavailable)
extension BulkLink: Sendable {}
