import Foundation

/// The entities of a set of model types: SwiftData's `Schema`. Deck derives a ``StoreSchema``
/// from it, which it keeps in every document (so `deck inspect` and `deck query` read typed
/// documents without the app).
///
/// The types' related models (through relationships) and model superclasses join the schema by
/// themselves; list subclasses, which Deck cannot find from their superclass.
public struct Schema: Sendable {
    /// The schema version stored in documents.
    public let version: String
    /// The store schema derived from the models (nil when ``problems`` is not empty).
    public let storeSchema: StoreSchema?
    /// What prevents the models from being stored, each naming the type and property (empty when
    /// nothing does). ``ModelContainer`` refuses a schema with problems.
    public let problems: [String]
    /// The metadata of each entity, by name.
    let metadata: [String: ModelMetadata]

    /// The schema of `types` and the types they reach, at `version`.
    public init(_ types: [any PersistentModel.Type], version: String = "1.0.0") {
        self.version = version
        var found: [String: ModelMetadata] = [:]
        var order: [ModelMetadata] = []
        var problems: [String] = []
        var queue = types.map { ModelMetadata.of($0) }
        while !queue.isEmpty {
            let metadata = queue.removeFirst()
            if let existing = found[metadata.entityName] {
                if existing !== metadata {
                    problems.append(
                        "two model types have the entity name \(metadata.entityName): \(existing.type) and "
                            + "\(metadata.type)")
                }
                continue
            }
            found[metadata.entityName] = metadata
            order.append(metadata)
            problems += metadata.problems
            if let parent = metadata.superMetadata { queue.append(parent) }
            for accessor in metadata.properties {
                if let relationship = accessor as? any RelationshipDescribing {
                    queue.append(ModelMetadata.of(relationship.destinationType))
                }
            }
        }
        metadata = found
        guard problems.isEmpty else {
            self.problems = problems
            storeSchema = nil
            return
        }
        var builder = SchemaBuilder(metadata: found)
        let entities = order.map { builder.entity($0) }
        problems += builder.problems
        if problems.isEmpty {
            let schema = StoreSchema(version: version, entities: entities)
            do {
                try schema.validate()
            } catch {
                problems.append(error.description)
            }
            storeSchema = problems.isEmpty ? schema : nil
            if problems.isEmpty { builder.recordInverses() }
        } else {
            storeSchema = nil
        }
        self.problems = problems
    }

    /// The schema of `types`: `Schema(Card.self, Deck.self)`.
    public init(_ types: any PersistentModel.Type..., version: String = "1.0.0") {
        self.init(types, version: version)
    }

    /// The model types of the schema's entities.
    public var modelTypes: [any PersistentModel.Type] { metadata.values.map(\.type) }

    /// The metadata of entity `name`.
    func metadata(named name: String) -> ModelMetadata? { metadata[name] }
}

/// Turns metadata into store entities: names the inverses, resolves key paths of constraints.
private struct SchemaBuilder {
    let metadata: [String: ModelMetadata]
    var problems: [String] = []
    /// The inverse of each relationship, as (entity, relationship) → relationship name.
    private var inverses: [String: [String: String]] = [:]

    init(metadata: [String: ModelMetadata]) {
        self.metadata = metadata
        pairInverses()
    }

    private static func key(_ entity: ModelMetadata, _ name: String) -> String {
        entity.entityName + "." + name
    }

    /// Names each relationship's inverse: the one it declares, the one that declares it, or, when
    /// neither side declares one, the only relationship back when each side has exactly one.
    private mutating func pairInverses() {
        for entity in metadata.values.sorted(by: { $0.entityName < $1.entityName }) {
            for accessor in ownProperties(entity) {
                guard let relationship = accessor as? any RelationshipDescribing,
                    let keyPath = relationship.relationshipInverse
                else { continue }
                let destination = ModelMetadata.of(relationship.destinationType)
                let path = destination.resolve(keyPath)
                guard path.count == 1, let inverse = path.first, inverse is any RelationshipDescribing else {
                    problems.append(
                        "\(entity.type).\(accessor.name): the inverse \(keyPath) is not a relationship of "
                            + "\(destination.type)")
                    continue
                }
                let back = inverse as! any RelationshipDescribing
                guard entity.inherits(from: ModelMetadata.of(back.destinationType)) else {
                    problems.append(
                        "\(entity.type).\(accessor.name): its inverse \(destination.type).\(inverse.name) points "
                            + "at \(back.destinationType), not \(entity.type)")
                    continue
                }
                if let other = inverses[entity.entityName]?[accessor.name], other != inverse.name {
                    problems.append(
                        "\(entity.type).\(accessor.name) has two inverses: \(other) and \(inverse.name)")
                    continue
                }
                if let other = inverses[destination.entityName]?[inverse.name], other != accessor.name {
                    problems.append(
                        "\(destination.type).\(inverse.name) is the inverse of both \(other) and \(accessor.name)"
                    )
                    continue
                }
                inverses[entity.entityName, default: [:]][accessor.name] = inverse.name
                inverses[destination.entityName, default: [:]][inverse.name] = accessor.name
            }
        }
        // Neither side declares one: pair the only relationship each way.
        for entity in metadata.values.sorted(by: { $0.entityName < $1.entityName }) {
            for accessor in ownProperties(entity) where inverses[entity.entityName]?[accessor.name] == nil {
                guard let relationship = accessor as? any RelationshipDescribing else { continue }
                let destination = ModelMetadata.of(relationship.destinationType)
                let outgoing = relationships(of: entity, to: destination)
                let incoming = relationships(of: destination, to: entity)
                guard outgoing.count == 1, incoming.count == 1, let back = incoming.first,
                    back !== accessor,
                    inverses[destination.entityName]?[back.name] == nil
                else { continue }
                inverses[entity.entityName, default: [:]][accessor.name] = back.name
                inverses[destination.entityName, default: [:]][back.name] = accessor.name
            }
        }
    }

    private func ownProperties(_ entity: ModelMetadata) -> [PropertyAccessor] {
        entity.properties.filter {
            $0.declaringType.map(ObjectIdentifier.init) == ObjectIdentifier(entity.type)
        }
    }

    /// The relationships `entity` declares whose destination is `destination` (or an ancestor).
    private func relationships(of entity: ModelMetadata, to destination: ModelMetadata) -> [PropertyAccessor]
    {
        ownProperties(entity).filter { accessor in
            guard let relationship = accessor as? any RelationshipDescribing else { return false }
            return destination.inherits(from: ModelMetadata.of(relationship.destinationType))
        }
    }

    mutating func entity(_ entity: ModelMetadata) -> StoreSchema.Entity {
        var attributes: [StoreSchema.Attribute] = []
        var relationships: [StoreSchema.Relationship] = []
        for accessor in ownProperties(entity) {
            if let attribute = accessor as? any AttributeDescribing, let type = attribute.attributeType {
                var options: StoreSchema.Attribute.Options = []
                if attribute.attributeOptions.contains(.unique) { options.insert(.unique) }
                if attribute.attributeOptions.contains(.externalStorage) {
                    if type == .data {
                        options.insert(.externalStorage)
                    } else {
                        problems.append(
                            "\(entity.type).\(accessor.name): .externalStorage is for Data properties, not "
                                + accessor.typeDescription)
                    }
                }
                var stored = StoreSchema.Attribute(
                    accessor.name, type, isOptional: attribute.isOptional, options: options,
                    originalName: attribute.attributeOriginalName)
                // The initial value becomes the document's default (what `deck insert`, a
                // migration adding the attribute and CloudKit give records that lack it), unless
                // the store could not hold it as one.
                if let (value, dynamic) = entity.storeDefaults[accessor.index] {
                    var withDefault = stored
                    withDefault.defaultValue = value.flatMap { $0.isNull ? nil : $0 }
                    withDefault.dynamicDefault = dynamic
                    if withDefault.defaultProblem == nil { stored = withDefault }
                }
                attributes.append(stored)
            } else if let relationship = accessor as? any RelationshipDescribing {
                let destination = ModelMetadata.of(relationship.destinationType)
                relationships.append(
                    StoreSchema.Relationship(
                        accessor.name, to: destination.entityName, toMany: relationship.isToMany,
                        inverse: inverses[entity.entityName]?[accessor.name],
                        deleteRule: relationship.relationshipDeleteRule,
                        originalName: relationship.relationshipOriginalName))
            }
        }
        func names(_ groups: [[AnyKeyPath]], _ what: String) -> [[String]] {
            groups.compactMap { group in
                let names = group.map { keyPath -> String? in
                    let path = entity.resolve(keyPath)
                    guard let root = Swift.type(of: keyPath).rootType as? any PersistentModel.Type,
                        entity.inherits(from: ModelMetadata.of(root)), path.count == 1,
                        path[0] is any AttributeDescribing
                    else {
                        problems.append(
                            "\(entity.type): the \(what) key path (\(ModelMetadata.describeRefused(keyPath))) is not an attribute of "
                                + "\(entity.type)"
                        )
                        return nil
                    }
                    return path[0].name
                }
                return names.contains(nil) ? nil : names.compactMap { $0 }
            }
        }
        func declared(_ type: any PersistentModel.Type) -> (unique: [[AnyKeyPath]], indexes: [[AnyKeyPath]]) {
            (type.uniqueConstraints, type.indexes)
        }
        let (unique, indexes) = declared(entity.type)
        var uniqueNames = names(unique, "unique constraint")
        var indexNames = names(indexes, "index")
        // A subclass inherits its superclass's static lists: keep them on the superentity only.
        if let parent = entity.superMetadata {
            let (parentUnique, parentIndexes) = declared(parent.type)
            if unique == parentUnique { uniqueNames = [] }
            if indexes == parentIndexes { indexNames = [] }
        }
        return StoreSchema.Entity(
            entity.entityName, superentity: entity.superMetadata?.entityName, attributes: attributes,
            relationships: relationships, uniqueConstraints: uniqueNames, indexes: indexNames,
            originalName: entity.type.originalEntityName)
    }

    /// Gives each metadata the names of its relationships' inverses (for keeping them in step in
    /// memory), for its own and its inherited relationships.
    func recordInverses() {
        for entity in metadata.values {
            var byIndex: [Int: String] = [:]
            var level: ModelMetadata? = entity
            while let current = level {
                for (name, inverse) in inverses[current.entityName] ?? [:] {
                    if let index = entity.property(named: name)?.index, byIndex[index] == nil {
                        byIndex[index] = inverse
                    }
                }
                level = current.superMetadata
            }
            entity.inverseNames.withLock { $0 = byIndex }
        }
    }
}
