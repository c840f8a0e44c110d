import DeckSQLite
import Foundation

/// Where a relationship's links live in the store (spec: "Relationships").
enum RelationshipStorage: Equatable {
    /// A column on this entity's table holding the target's `_pk`.
    case ownColumn(column: String)
    /// A column on the destination's table holding this record's `_pk` (the inverse's own column).
    case inverseColumn(table: String, column: String)
    /// A join table with one row per link; `near` holds this side's `_pk`, `far` the other's.
    case joinTable(table: String, near: String, far: String)

    /// Whether the links are a column of this entity's table.
    var isOwnColumn: Bool {
        if case .ownColumn = self { return true }
        return false
    }
}

extension StoreSchema {
    /// The format's limits on a schema (spec section 5.9). A schema beyond any of them is invalid:
    /// they keep every table within SQLite's default limits (2,000 columns) and every operation on
    /// the schema close to linear in its size.
    public enum Limits {
        /// Entities in a schema.
        public static let entities = 1_000
        /// Entities in one inheritance chain, from the root to an entity, both included.
        public static let inheritanceDepth = 100
        /// Properties (attributes and relationships) declared by the entities of one hierarchy in
        /// all; so also the columns of one table (besides `_pk` and `_entity`) and the properties of
        /// one entity, inherited ones included.
        public static let propertiesPerHierarchy = 1_000
        /// Properties and unique constraints of every entity, inherited ones included, summed over
        /// the schema's entities.
        public static let expandedProperties = 100_000
        /// Entries of `uniqueConstraints` and `indexes` that one entity declares, together.
        public static let indexesPerEntity = 100
        /// Properties named by one entry of `uniqueConstraints` or `indexes`.
        public static let propertiesPerIndex = 32
        /// Bytes in an entity, attribute or relationship name.
        public static let nameLength = 64
        /// Tables, indexes and triggers that the schema maps to (spec section 6). SQLite takes time
        /// quadratic in their number to create them (about a second for 3,000).
        public static let storeObjects = 4_000
    }
}

/// An entity with everything inherited resolved, and its mapping to the store.
final class EntityMapping: Sendable {
    let entity: Entity
    /// The table: the name of the hierarchy's root entity.
    let table: String
    /// This entity and all its descendants, in schema order: the `_entity` values a fetch of it matches.
    let family: [String]
    /// Attributes, inherited first.
    let attributes: [Attribute]
    /// Each attribute's type and whether it may be null: what an insert needs of an attribute that
    /// is not data, without copying the attribute.
    let attributeTypes: [(type: AttributeType, isOptional: Bool)]
    /// Relationships, inherited first, with their storage.
    let relationships: [(relationship: Relationship, storage: RelationshipStorage)]
    /// For each of ``relationships``, the entity that declares it (this one or an ancestor).
    let declarers: [String]
    /// The entity's `uniqueConstraints` entries and its ancestors', nearest first.
    let constraintGroups: [[String]]
    /// The unique constraints a new record's global id may be made from (spec 6.10, "Global ids
    /// from unique values"), in the order upserts try them: each unique attribute, then each
    /// entry of ``constraintGroups`` that names attributes only; each by its names joined with
    /// `+` and its attributes' positions in ``attributes``.
    let identityKeys: [(names: String, positions: [Int])]
    private let attributePositions: [String: Int]
    private let relationshipPositions: [String: Int]

    init(
        entity: Entity, table: String, family: [String], attributes: [Attribute],
        relationships: [(relationship: Relationship, storage: RelationshipStorage)], declarers: [String],
        constraintGroups: [[String]] = []
    ) {
        self.entity = entity
        self.table = table
        self.family = family
        self.attributes = attributes
        self.attributeTypes = attributes.map { ($0.type, $0.isOptional) }
        self.relationships = relationships
        self.declarers = declarers
        var attributePositions: [String: Int] = [:]
        for (index, attribute) in attributes.enumerated() { attributePositions[attribute.name] = index }
        var relationshipPositions: [String: Int] = [:]
        for (index, relationship) in relationships.enumerated() {
            relationshipPositions[relationship.relationship.name] = index
        }
        self.attributePositions = attributePositions
        self.relationshipPositions = relationshipPositions
        self.constraintGroups = constraintGroups
        var keys = attributes.indices.filter { attributes[$0].options.contains(.unique) }.map {
            (names: attributes[$0].name, positions: [$0])
        }
        for group in constraintGroups {
            let positions = group.compactMap { attributePositions[$0] }
            guard !group.isEmpty, positions.count == group.count else { continue }
            keys.append((group.joined(separator: "+"), positions))
        }
        self.identityKeys = keys
    }

    var name: String { entity.name }

    /// Whether this entity is the root of its hierarchy, so that its family is every row of the table.
    var isRoot: Bool { entity.superentity == nil }

    /// `alias._entity IN ('A', 'B')` (without `alias.` when nil): the rows of this entity's family;
    /// nil for a root entity, whose family is the whole table. Entity names are validated
    /// identifiers, so they are safe as literals.
    func familyCondition(_ alias: String?) -> String? {
        guard !isRoot else { return nil }
        return (alias.map { $0 + "." } ?? "") + "_entity IN ("
            + family.map { "'\($0)'" }.joined(separator: ", ") + ")"
    }

    /// `INSERT INTO table(_gid, _entity, every attribute) VALUES (coalesce(?, deck_gid()),
    /// 'Entity', ?, …)`: a new row of a current (version 2) store, with the global id bound first
    /// (null makes a new one). The entity name is a validated identifier, so it is safe as a
    /// literal (and saves binding it per row).
    var insertSQL: String {
        "INSERT INTO \(quote(table))("
            + (["_gid", "_entity"] + attributes.map { quote($0.name) }).joined(separator: ", ")
            + ") VALUES (coalesce(?, deck_gid()), '\(name)'"
            + String(repeating: ", ?", count: attributes.count) + ")"
    }

    /// The position of attribute `name` in ``attributes``.
    func attributePosition(_ name: String) -> Int? {
        // A handful of names compare faster than one hash.
        if attributes.count <= 8 { return attributes.firstIndex { $0.name == name } }
        return attributePositions[name]
    }

    func attribute(_ name: String) -> Attribute? { attributePosition(name).map { attributes[$0] } }

    /// The position of relationship `name` in ``relationships``.
    func relationshipPosition(_ name: String) -> Int? {
        if relationships.count <= 8 { return relationships.firstIndex { $0.relationship.name == name } }
        return relationshipPositions[name]
    }

    func relationship(_ name: String) -> (relationship: Relationship, storage: RelationshipStorage)? {
        relationshipPosition(name).map { relationships[$0] }
    }

    var propertyNames: [String] { attributes.map(\.name) + relationships.map(\.relationship.name) }
}

/// A to-one relationship stored as an own column, seen from the entity it points to.
struct IncomingReference {
    /// The entity that declares the relationship (its family's rows hold it).
    let declarer: EntityMapping
    let relationship: Relationship
    let column: String
    /// Whether the column is a foreign key (spec section 6.4), so it can never dangle.
    let isForeignKey: Bool
}

/// A validated schema with its table mapping. Built once per open, in time close to linear in
/// the schema's size (its limits, ``Schema/Limits``, bound the rest).
struct SchemaMapping {
    let schema: StoreSchema
    let entities: [String: EntityMapping]
    /// Entity names in schema order.
    let entityNames: [String]
    /// Own-column relationships by the name of their destination entity.
    let incoming: [String: [IncomingReference]]
    /// `table + "." + column` of every own column that is a foreign key (spec section 6.4).
    let foreignKeyColumns: Set<String>
    /// The entities of each table, in schema order, by table name.
    let members: [String: [EntityMapping]]

    /// Names the format reserves: prefixes of metadata tables and columns.
    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.properties.isAlphabetic || first == "_" else {
            return false
        }
        guard !name.hasPrefix("_"), !name.lowercased().hasPrefix("deck_"),
            !name.lowercased().hasPrefix("sqlite_")
        else { return false }
        return name.unicodeScalars.allSatisfy {
            ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") && $0.isASCII
        } && name.utf8.count <= StoreSchema.Limits.nameLength
    }

    /// The mapping of a schema that ``SchemaValidation`` accepts: each relationship's storage,
    /// then the checks that depend on it (indexes name columns of their table; entities sharing
    /// a table agree on its columns), then the entities' mappings and the store's size.
    init(_ schema: StoreSchema) throws(DeckError) {
        self.schema = schema
        let checked = try SchemaValidation(schema)
        let resolved = Self.resolveStorage(checked)
        try Self.checkIndexes(checked, resolved)
        try Self.checkColumns(checked, resolved)
        let built = Self.entityMappings(checked, resolved)
        var mappings: [String: EntityMapping] = [:]
        for mapping in built { mappings[mapping.name] = mapping }
        let foreignKeys = Self.foreignKeys(built, mappings)
        var incoming: [String: [IncomingReference]] = [:]
        for (index, declarer) in built.enumerated() {
            for relationship in resolved[index] {
                guard case .ownColumn(let column) = relationship.storage else { continue }
                incoming[relationship.relationship.destination, default: []].append(
                    IncomingReference(
                        declarer: declarer, relationship: relationship.relationship, column: column,
                        isForeignKey: foreignKeys.contains(declarer.table + "." + column)))
            }
        }
        self.entities = mappings
        self.entityNames = checked.declared.map(\.name)
        self.incoming = incoming
        self.foreignKeyColumns = foreignKeys
        var members: [String: [EntityMapping]] = [:]
        for mapping in built { members[mapping.table, default: []].append(mapping) }
        self.members = members
        // Each statement creates one table, index or trigger.
        let objects = StoreDDL.statements(for: self).count
        guard objects <= StoreSchema.Limits.storeObjects else {
            throw DeckError.invalidSchema(
                "the schema maps to \(objects) tables, indexes and triggers; at most "
                    + "\(StoreSchema.Limits.storeObjects) are allowed (each entity hierarchy, join table, index and "
                    + "external-storage trigger counts)")
        }
    }

    /// A declared relationship as the mapping keeps it: with the inverse it has (named or found)
    /// and where its links are stored.
    private typealias Resolved = (relationship: Relationship, storage: RelationshipStorage)

    /// Relationship storage: once per declared relationship (every entity inheriting it shares
    /// it), by entity and position.
    private static func resolveStorage(_ checked: SchemaValidation) -> [[Resolved]] {
        let declared = checked.declared
        var resolved = [[Resolved]](repeating: [], count: declared.count)
        for owner in declared.indices {
            for (position, relationship) in declared[owner].relationships.enumerated() {
                guard let destination = checked.position[relationship.destination] else { continue }
                let destinationTable = declared[checked.rootOf[destination]].name
                var effective = relationship
                let ownKey = declared[owner].name + "." + relationship.name
                let storage: RelationshipStorage
                if let (declarer, offset) = checked.inverses[owner][position] {
                    let other = declared[declarer].relationships[offset]
                    effective.inverse = other.name
                    let otherKey = declared[declarer].name + "." + other.name
                    switch (relationship.isToMany, other.isToMany) {
                    case (false, true):
                        storage = .ownColumn(column: relationship.name)
                    case (false, false):
                        // One-to-one: the side whose "Entity.relationship" sorts first holds the column.
                        storage =
                            ownKey < otherKey
                            ? .ownColumn(column: relationship.name)
                            : .inverseColumn(table: destinationTable, column: other.name)
                    case (true, false):
                        storage = .inverseColumn(table: destinationTable, column: other.name)
                    case (true, true):
                        storage =
                            ownKey < otherKey
                            ? .joinTable(table: ownKey, near: "source", far: "target")
                            : .joinTable(table: otherKey, near: "target", far: "source")
                    }
                } else {
                    effective.inverse = nil
                    storage =
                        relationship.isToMany
                        ? .joinTable(table: ownKey, near: "source", far: "target")
                        : .ownColumn(column: relationship.name)
                }
                resolved[owner].append((effective, storage))
            }
        }
        return resolved
    }

    private static func checkIndexes(_ checked: SchemaValidation, _ resolved: [[Resolved]]) throws(DeckError)
    {
        let declared = checked.declared
        // Indexes and unique constraints name attributes, or to-one relationships stored in this table.
        for index in declared.indices {
            let entity = declared[index]
            for group in entity.uniqueConstraints + entity.indexes {
                guard !group.isEmpty else {
                    throw DeckError.invalidSchema(
                        "'\(entity.name)': an index or unique constraint lists no attributes")
                }
                for name in group where !checked.findAttribute(name, on: index) {
                    guard let (declarer, offset) = checked.findRelationship(name, on: index),
                        !declared[declarer].relationships[offset].isToMany
                    else {
                        throw DeckError.invalidSchema(
                            "'\(entity.name)': index or unique constraint names unknown attribute '\(name)'")
                    }
                    guard case .ownColumn = resolved[declarer][offset].storage else {
                        throw DeckError.invalidSchema(
                            "'\(entity.name)': index or unique constraint names '\(name)', a relationship whose "
                                + "links are not stored in this entity's table")
                    }
                }
            }
        }
    }

    private static func checkColumns(_ checked: SchemaValidation, _ resolved: [[Resolved]]) throws(DeckError)
    {
        let declared = checked.declared
        // Entities sharing a table must not give one column two meanings, nor two spellings: SQLite
        // compares column names without regard to ASCII case.
        var columns: [String: (name: String, meaning: String, owner: String)] = [:]
        for index in declared.indices {
            let entity = declared[index]
            let table = declared[checked.rootOf[index]].name
            var own: [(String, String)] = entity.attributes.map { attribute in
                (
                    attribute.name,
                    attribute.type.rawValue
                        + (attribute.options.contains(.externalStorage) ? "+external" : "")
                )
            }
            for relationship in resolved[index] {
                if case .ownColumn(let column) = relationship.storage {
                    own.append((column, "reference to " + relationship.relationship.destination))
                }
            }
            for (column, meaning) in own {
                let key = table + "." + column.lowercased()
                if let existing = columns[key] {
                    guard existing.name == column else {
                        throw DeckError.invalidSchema(
                            "'\(entity.name).\(column)' and '\(existing.owner).\(existing.name)' would both be "
                                + "column '\(existing.name)' of the shared table '\(table)' (column names "
                                + "compare without regard to case); spell them the same")
                    }
                    guard existing.meaning == meaning else {
                        throw DeckError.invalidSchema(
                            "'\(entity.name).\(column)' (\(meaning)) conflicts with a sibling's '\(column)' "
                                + "('\(existing.owner).\(column)', \(existing.meaning)) in the shared table '\(table)'"
                        )
                    }
                } else {
                    columns[key] = (column, meaning, entity.name)
                }
            }
        }
    }

    /// Each entity's mapping, in schema order.
    private static func entityMappings(_ checked: SchemaValidation, _ resolved: [[Resolved]])
        -> [EntityMapping]
    {
        let declared = checked.declared
        let count = declared.count
        // Families, in schema order: every entity joins its own and each ancestor's.
        var families = [[String]](repeating: [], count: count)
        for index in 0..<count {
            var current: Int? = index
            while let entity = current {
                families[entity].append(declared[index].name)
                current = checked.parent[entity]
            }
        }
        var built = [EntityMapping?](repeating: nil, count: count)
        for index in checked.byDepth {
            let entity = declared[index]
            let inherited = checked.parent[index].flatMap { built[$0] }
            let relationships = (inherited?.relationships ?? []) + resolved[index]
            built[index] = EntityMapping(
                entity: entity, table: declared[checked.rootOf[index]].name, family: families[index],
                attributes: (inherited?.attributes ?? []) + entity.attributes, relationships: relationships,
                declarers: (inherited?.declarers ?? [])
                    + [String](repeating: entity.name, count: entity.relationships.count),
                constraintGroups: entity.uniqueConstraints + (inherited?.constraintGroups ?? []))
        }
        return built.compactMap { $0 }
    }

    /// `table + "." + column` of each own column that is a foreign key. A shared own column is one
    /// as the first entity in schema order that has it decides (spec section 6.4): unless its
    /// relationship's rule, or its inverse's, is noAction.
    private static func foreignKeys(_ built: [EntityMapping], _ mappings: [String: EntityMapping]) -> Set<
        String
    > {
        var foreignKeys: Set<String> = []
        var decided: Set<String> = []
        for mapping in built {
            for (relationship, storage) in mapping.relationships {
                guard case .ownColumn(let column) = storage,
                    decided.insert(mapping.table + "." + column).inserted
                else { continue }
                let inverseRule = relationship.inverse.flatMap {
                    mappings[relationship.destination]?.relationship($0)?.relationship.deleteRule
                }
                if relationship.deleteRule != .noAction && inverseRule != .noAction {
                    foreignKeys.insert(mapping.table + "." + column)
                }
            }
        }
        return foreignKeys
    }

    /// The mapping of entity `name`, or an error suggesting the closest name.
    func entity(_ name: String) throws(DeckError) -> EntityMapping {
        if let mapping = entities[name] { return mapping }
        throw DeckError.unknownEntity(name, known: entityNames)
    }

    /// Root entities (one table each), in schema order.
    var roots: [EntityMapping] {
        entityNames.compactMap { entities[$0] }.filter { $0.entity.superentity == nil }
    }

    /// The join tables of stored to-many links (spec 6.6), each once, in the order their first
    /// relationship comes in the schema, with the tables their `source` and `target` columns
    /// point into.
    var joinTables: [(table: String, source: String, target: String)] {
        var result: [(table: String, source: String, target: String)] = []
        var seen: Set<String> = []
        for name in entityNames {
            guard let entity = entities[name] else { continue }
            for (relationship, storage) in entity.relationships {
                guard case .joinTable(let table, let near, _) = storage, seen.insert(table).inserted,
                    let destination = entities[relationship.destination]
                else { continue }
                result.append(
                    near == "source"
                        ? (table, entity.table, destination.table) : (table, destination.table, entity.table))
            }
        }
        return result
    }

    /// The entity to name for a unique violation that SQLite reports on `columns` of `table`:
    /// `writing`, the entity of the record being written, when one of its constraints has exactly
    /// those columns; otherwise the one entity of the table that declares such a constraint;
    /// otherwise the table.
    func uniqueViolationEntity(table: String, columns: [String], writing: EntityMapping) -> String {
        let wanted = Set(columns)
        func constraints(declaredBy entity: Entity) -> [[String]] {
            entity.attributes.filter { $0.options.contains(.unique) }.map { [$0.name] }
                + entity.uniqueConstraints
        }
        if writing.table == table {
            var current: EntityMapping? = writing
            while let entity = current {
                if constraints(declaredBy: entity.entity).contains(where: { Set($0) == wanted }) {
                    return writing.name
                }
                current = entity.entity.superentity.flatMap { entities[$0] }
            }
        }
        let declarers = (members[table] ?? []).filter {
            constraints(declaredBy: $0.entity).contains { Set($0) == wanted }
        }
        return declarers.count == 1 ? declarers[0].name : table
    }

    /// The own-column relationships that can point at a record of entity `name`: those whose
    /// destination is `name` or one of its ancestors.
    func references(to name: String) -> [IncomingReference] {
        var result: [IncomingReference] = []
        var current = entities[name]
        while let entity = current {
            result += incoming[entity.name] ?? []
            current = entity.entity.superentity.flatMap { entities[$0] }
        }
        return result
    }
}
