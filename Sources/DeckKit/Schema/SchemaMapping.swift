import Foundation

/// Where a relationship's links live in the store (spec: "Relationships").
enum RelationshipStorage: Equatable {
    /// A column on this entity's table holding the target's `_pk`.
    case ownColumn(column: String)
    /// A column on the destination's table holding this record's `_pk` (the inverse's own column).
    case inverseColumn(table: String, column: String)
    /// A join table with one row per link; `near` holds this side's `_pk`, `far` the other's.
    case joinTable(table: String, near: String, far: String)
}

/// An entity with everything inherited resolved, and its mapping to the store.
final class EntityMapping: Sendable {
    let entity: Entity
    /// The table: the name of the hierarchy's root entity.
    let table: String
    /// This entity and all its descendants: the `_entity` values a fetch of it matches.
    let family: [String]
    /// Attributes, inherited first.
    let attributes: [Attribute]
    /// Relationships, inherited first, with their storage.
    let relationships: [(relationship: Relationship, storage: RelationshipStorage)]

    init(
        entity: Entity, table: String, family: [String], attributes: [Attribute],
        relationships: [(relationship: Relationship, storage: RelationshipStorage)]
    ) {
        self.entity = entity
        self.table = table
        self.family = family
        self.attributes = attributes
        self.relationships = relationships
    }

    var name: String { entity.name }

    /// `INSERT INTO table(_entity, every attribute) VALUES ('Entity', ?, …)`. The entity name
    /// is a validated identifier, so it is safe as a literal (and saves binding it per row).
    var insertSQL: String {
        "INSERT INTO \(quote(table))("
            + (["_entity"] + attributes.map { quote($0.name) }).joined(separator: ", ")
            + ") VALUES ('\(name)'" + String(repeating: ", ?", count: attributes.count) + ")"
    }

    func attribute(_ name: String) -> Attribute? { attributes.first { $0.name == name } }
    func relationship(_ name: String) -> (relationship: Relationship, storage: RelationshipStorage)? {
        relationships.first { $0.relationship.name == name }
    }
    var propertyNames: [String] { attributes.map(\.name) + relationships.map(\.relationship.name) }
}

/// A validated schema with its table mapping. Built once per open.
struct SchemaMapping {
    let schema: Schema
    let entities: [String: EntityMapping]
    /// Entity names in schema order.
    let entityNames: [String]

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
        } && name.utf8.count <= 64
    }

    init(_ schema: Schema) throws(DeckError) {
        self.schema = schema
        var byName: [String: Entity] = [:]
        for entity in schema.entities {
            guard Self.isValidName(entity.name) else {
                throw DeckError.invalidSchema(
                    "entity name '\(entity.name)' must be ASCII letters, digits and '_', start with a letter, "
                        + "and not start with 'deck_' or 'sqlite_'")
            }
            guard byName.keys.allSatisfy({ $0.lowercased() != entity.name.lowercased() }) else {
                throw DeckError.invalidSchema(
                    "entity '\(entity.name)' is declared twice (names are case-insensitive)")
            }
            byName[entity.name] = entity
        }

        // Inheritance: find each entity's chain to the root, refusing cycles and unknown parents.
        func chain(_ entity: Entity) throws(DeckError) -> [Entity] {
            var result = [entity]
            var seen: Set<String> = [entity.name]
            var current = entity
            while let parentName = current.superentity {
                guard let parent = byName[parentName] else {
                    throw DeckError.invalidSchema(
                        "entity '\(current.name)' inherits from unknown entity '\(parentName)'")
                }
                guard seen.insert(parentName).inserted else {
                    throw DeckError.invalidSchema(
                        "entity '\(entity.name)' inherits from itself through '\(parentName)'")
                }
                result.insert(parent, at: 0)
                current = parent
            }
            return result
        }

        var chains: [String: [Entity]] = [:]
        for entity in schema.entities { chains[entity.name] = try chain(entity) }

        // Relationship storage needs every entity's own relationships first.
        func relationshipsOf(_ name: String) -> [Relationship] {
            (chains[name] ?? []).flatMap(\.relationships)
        }

        // The entity in `entityName`'s chain that declares relationship `name`.
        func declarer(of name: String, in entityName: String) -> String {
            (chains[entityName] ?? []).last(where: { $0.relationships.contains { $0.name == name } })?.name
                ?? entityName
        }
        func isAncestorOrSelf(_ ancestor: String, of entityName: String) -> Bool {
            (chains[entityName] ?? []).contains { $0.name == ancestor }
        }

        /// Where `relationship`, declared by `owner`, keeps its links, and the relationship with
        /// its inverse filled in (an inverse named on one side only is inferred on the other).
        func storage(for relationship: Relationship, declaredBy owner: String) throws(DeckError)
            -> (RelationshipStorage, Relationship)
        {
            let label = "'\(owner).\(relationship.name)'"
            guard let destinationChain = chains[relationship.destination] else {
                throw DeckError.invalidSchema(
                    "relationship \(label) points to unknown entity '\(relationship.destination)'")
            }
            let destinationTable = destinationChain[0].name
            var inverse: Relationship?
            if let inverseName = relationship.inverse {
                guard
                    let found = relationshipsOf(relationship.destination).first(where: {
                        $0.name == inverseName
                    })
                else {
                    throw DeckError.invalidSchema(
                        "relationship \(label) names inverse '\(inverseName)', "
                            + "which '\(relationship.destination)' does not have")
                }
                guard isAncestorOrSelf(found.destination, of: owner) else {
                    throw DeckError.invalidSchema(
                        "'\(relationship.destination).\(inverseName)' points to '\(found.destination)', "
                            + "so it cannot be the inverse of \(label)")
                }
                if let back = found.inverse, back != relationship.name {
                    throw DeckError.invalidSchema(
                        "\(label) and '\(relationship.destination).\(inverseName)' disagree about their inverse"
                    )
                }
                inverse = found
            } else {
                inverse = relationshipsOf(relationship.destination).first {
                    $0.inverse == relationship.name && isAncestorOrSelf($0.destination, of: owner)
                }
            }
            var resolved = relationship
            resolved.inverse = inverse?.name
            let ownKey = owner + "." + relationship.name
            guard let inv = inverse else {
                return relationship.isToMany
                    ? (.joinTable(table: ownKey, near: "source", far: "target"), resolved)
                    : (.ownColumn(column: relationship.name), resolved)
            }
            let otherKey = declarer(of: inv.name, in: relationship.destination) + "." + inv.name
            guard otherKey != ownKey else {
                throw DeckError.invalidSchema("\(label) cannot be its own inverse")
            }
            switch (relationship.isToMany, inv.isToMany) {
            case (false, true):
                return (.ownColumn(column: relationship.name), resolved)
            case (false, false):
                // One-to-one: the side whose "Entity.relationship" sorts first holds the column.
                return ownKey < otherKey
                    ? (.ownColumn(column: relationship.name), resolved)
                    : (.inverseColumn(table: destinationTable, column: inv.name), resolved)
            case (true, false):
                return (.inverseColumn(table: destinationTable, column: inv.name), resolved)
            case (true, true):
                return ownKey < otherKey
                    ? (.joinTable(table: ownKey, near: "source", far: "target"), resolved)
                    : (.joinTable(table: otherKey, near: "target", far: "source"), resolved)
            }
        }

        var mappings: [String: EntityMapping] = [:]
        for entity in schema.entities {
            let chain = chains[entity.name] ?? [entity]
            let attributes = chain.flatMap(\.attributes)
            let relationships = chain.flatMap(\.relationships)
            var names: Set<String> = []
            for name in attributes.map(\.name) + relationships.map(\.name) {
                guard Self.isValidName(name) else {
                    throw DeckError.invalidSchema(
                        "'\(entity.name).\(name)': property names must be ASCII letters, digits and '_', "
                            + "start with a letter, and not start with 'deck_'")
                }
                guard names.insert(name.lowercased()).inserted else {
                    throw DeckError.invalidSchema("'\(entity.name).\(name)' is declared twice")
                }
            }
            for attribute in attributes {
                if attribute.options.contains(.externalStorage) && attribute.type != .data {
                    throw DeckError.invalidSchema(
                        "'\(entity.name).\(attribute.name)': externalStorage applies to data attributes only")
                }
                if let threshold = attribute.externalThreshold, threshold < 1 {
                    throw DeckError.invalidSchema(
                        "'\(entity.name).\(attribute.name)': externalThreshold must be at least 1")
                }
                if let problem = attribute.defaultProblem {
                    throw DeckError.invalidSchema("'\(entity.name).\(attribute.name)': \(problem)")
                }
            }
            for group in entity.uniqueConstraints + entity.indexes {
                guard !group.isEmpty else {
                    throw DeckError.invalidSchema(
                        "'\(entity.name)': an index or unique constraint lists no attributes")
                }
                for name in group
                where !attributes.contains(where: { $0.name == name })
                    && !relationships.contains(where: { $0.name == name && !$0.isToMany })
                {
                    throw DeckError.invalidSchema(
                        "'\(entity.name)': index or unique constraint names unknown attribute '\(name)'")
                }
            }
            var resolved: [(Relationship, RelationshipStorage)] = []
            for declaring in chain {
                for relationship in declaring.relationships {
                    let (where_, effective) = try storage(for: relationship, declaredBy: declaring.name)
                    resolved.append((effective, where_))
                }
            }
            for group in entity.uniqueConstraints + entity.indexes {
                for name in group {
                    guard let (relationship, storage) = resolved.first(where: { $0.0.name == name }) else {
                        continue
                    }
                    guard case .ownColumn = storage, !relationship.isToMany else {
                        throw DeckError.invalidSchema(
                            "'\(entity.name)': index or unique constraint names '\(name)', a relationship whose "
                                + "links are not stored in this entity's table")
                    }
                }
            }
            let family = schema.entities.filter {
                (chains[$0.name] ?? []).contains { $0.name == entity.name }
            }.map(\.name)
            mappings[entity.name] = EntityMapping(
                entity: entity, table: chain[0].name, family: family, attributes: attributes,
                relationships: resolved.map { (relationship: $0.0, storage: $0.1) })
        }
        // Entities sharing a table must not give one column two meanings.
        var columnTypes: [String: [String: String]] = [:]
        for entity in schema.entities {
            guard let mapping = mappings[entity.name] else { continue }
            var columns: [(String, String)] = mapping.attributes.map { attribute in
                (
                    attribute.name,
                    attribute.type.rawValue
                        + (attribute.options.contains(.externalStorage) ? "+external" : "")
                )
            }
            for (relationship, storage) in mapping.relationships {
                if case .ownColumn(let column) = storage {
                    columns.append((column, "reference to " + relationship.destination))
                }
            }
            for (column, type) in columns {
                if let existing = columnTypes[mapping.table]?[column], existing != type {
                    throw DeckError.invalidSchema(
                        "'\(entity.name).\(column)' (\(type)) conflicts with a sibling's '\(column)' (\(existing)) "
                            + "in the shared table '\(mapping.table)'")
                }
                columnTypes[mapping.table, default: [:]][column] = type
            }
        }
        self.entities = mappings
        self.entityNames = schema.entities.map(\.name)
    }

    /// The mapping of entity `name`, or an error suggesting the closest name.
    func entity(_ name: String) throws(DeckError) -> EntityMapping {
        if let mapping = entities[name] { return mapping }
        throw DeckError.unknownEntity(name, suggestion: closestMatch(to: name, in: entityNames))
    }

    /// Root entities (one table each), in schema order.
    var roots: [EntityMapping] {
        entityNames.compactMap { entities[$0] }.filter { $0.entity.superentity == nil }
    }
}
