import DeckSQLite
import Foundation

/// Which unique constraint a write broke, found by asking the store rather than by reading
/// SQLite's message (spec section 9.4).
///
/// When a write of a record fails with `SQLITE_CONSTRAINT_UNIQUE`, the statement or savepoint
/// has been undone: the store holds what it held before. Each unique index Deck made on the
/// record's table that applies to the record (its global id; the unique attributes and unique
/// constraints of its entity and its ancestors) is then looked up with the values the record
/// would have had (those written, else its stored ones, else a new record's defaults); the first
/// that another record already holds is the one the write broke.
struct UniqueConflict {
    let database: Database
    let mapping: SchemaMapping
    let dateEpoch: DateEpoch

    /// A constraint another record holds: the entity to name and its properties.
    typealias Found = (entity: String, properties: [String])

    /// The unique constraint that writing `values` (by property name) to record `id` of
    /// `writing` (nil: a new record, with `globalID` when one was given) breaks; nil when none of
    /// Deck's does (the failure was something else: a damaged store).
    func find(writing: EntityMapping, id: Int64?, values: [String: Value], globalID: UUID?) -> Found? {
        let table = writing.table
        if id == nil, let globalID {
            let bytes = withUnsafeBytes(of: globalID.uuid) { Data($0) }
            if exists("SELECT 1 FROM \(quote(table)) WHERE _gid = ? LIMIT 1", [.blob(bytes)]) {
                return (writing.name, ["_gid"])
            }
        }
        let concrete = id.map { entity(of: $0, in: writing) } ?? writing
        var cells: [String: SQLValue] = [:]
        var unknown: Set<String> = []
        for (name, value) in values {
            if let cell = cell(value, named: name, of: concrete) {
                cells[name] = cell
            } else {
                unknown.insert(name)
            }
        }
        if let group = conflict(in: concrete, id: id, cells: cells, unknown: unknown) {
            return (mapping.uniqueViolationEntity(table: table, columns: group, writing: writing), group)
        }
        // A relationship kept in the destination's column writes the destination's rows.
        guard let id else { return nil }
        for (name, value) in values {
            guard case .inverseColumn(_, let column)? = concrete.relationship(name)?.storage,
                let destination = concrete.relationship(name).flatMap({
                    mapping.entities[$0.relationship.destination]
                })
            else { continue }
            let targets: [Int64]
            switch value {
            case .reference(let target), .integer(let target): targets = [target]
            case .references(let list): targets = list
            default: continue
            }
            for target in targets {
                let owner = entity(of: target, in: destination)
                if let group = conflict(in: owner, id: target, cells: [column: .integer(id)], unknown: []) {
                    return (
                        mapping.uniqueViolationEntity(table: owner.table, columns: group, writing: owner),
                        group
                    )
                }
            }
        }
        return nil
    }

    /// The columns of the first unique index on `entity`'s table that applies to its records and
    /// that another record holds with the values record `id` (nil: a new one) would have.
    private func conflict(
        in entity: EntityMapping, id: Int64?, cells: [String: SQLValue], unknown: Set<String>
    )
        -> [String]?
    {
        let table = quote(entity.table)
        for declarer in mapping.members[entity.table] ?? [entity] where declarer.family.contains(entity.name)
        {
            let groups =
                declarer.entity.attributes.filter { $0.options.contains(.unique) }.map { [$0.name] }
                + declarer.entity.uniqueConstraints
            groups: for group in groups where unknown.isDisjoint(with: group) {
                var conditions: [String] = []
                var arguments: [SQLValue] = []
                for column in group {
                    if let cell = cells[column] ?? (id == nil ? defaultCell(column, of: entity) : nil) {
                        // Null is never equal to anything: no row can hold the same.
                        if cell.isNull { continue groups }
                        conditions.append("o.\(quote(column)) = ?")
                        arguments.append(cell)
                    } else if let id {
                        conditions.append(
                            "o.\(quote(column)) = (SELECT \(quote(column)) FROM \(table) WHERE _pk = ?)")
                        arguments.append(.integer(id))
                    } else {
                        continue groups
                    }
                }
                if let id {
                    conditions.append("o._pk != ?")
                    arguments.append(.integer(id))
                }
                if let family = declarer.familyCondition("o") { conditions.append(family) }
                let sql =
                    "SELECT 1 FROM \(table) o WHERE " + conditions.joined(separator: " AND ") + " LIMIT 1"
                if exists(sql, arguments) { return group }
            }
        }
        return nil
    }

    /// A new record's cell for `column` when the write gave none: the attribute's default, or
    /// null for a relationship.
    private func defaultCell(_ column: String, of entity: EntityMapping) -> SQLValue? {
        guard let attribute = entity.attribute(column) else { return .null }
        return cell(attribute.initialValue(), named: column, of: entity)
    }

    /// The cell `value` of property `name` is stored as, or nil when that cannot be told without
    /// writing (a file's bytes, an inline copy of an external blob).
    private func cell(_ value: Value, named name: String, of entity: EntityMapping) -> SQLValue? {
        guard let attribute = entity.attribute(name) else {
            switch value {
            case .null: return .null
            case .reference(let target), .integer(let target): return .integer(target)
            default: return nil
            }
        }
        guard attribute.type == .data else {
            return try? value.sqlValue(
                for: attribute.type, isOptional: attribute.isOptional, epoch: dateEpoch)
        }
        let external = attribute.options.contains(.externalStorage)
        switch value {
        case .null: return .null
        case .data(let data):
            return external && data.count >= attribute.effectiveExternalThreshold
                ? .text(SHA256Hasher.hash(data).hexDigest) : .blob(data)
        case .blob(let reference): return external ? .text(reference.digest.hexDigest) : nil
        default: return nil
        }
    }

    /// The concrete entity of record `id` of `entity`'s table (`entity` when it cannot be read).
    private func entity(of id: Int64, in entity: EntityMapping) -> EntityMapping {
        let name = first("SELECT _entity FROM \(quote(entity.table)) WHERE _pk = ?", [.integer(id)])?.string
        return name.flatMap { mapping.entities[$0] } ?? entity
    }

    private func exists(_ sql: String, _ arguments: [SQLValue]) -> Bool {
        first(sql, arguments) != nil
    }

    /// The first column of the first row of `sql` (uncached: these statements are made for one
    /// failure), or nil when there is none or the statement fails.
    private func first(_ sql: String, _ arguments: [SQLValue]) -> SQLValue? {
        do {
            let statement = try database.prepare(sql)
            try statement.bind(arguments)
            return try statement.step() ? statement.value(at: 0) : nil
        } catch {
            return nil
        }
    }
}
