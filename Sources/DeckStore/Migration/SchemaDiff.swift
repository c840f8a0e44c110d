import Foundation

/// The ordered steps that take a document from one schema to another (spec: section 17).
///
/// Entities and properties of the new schema are matched with the old one's by name, or by the
/// name their `originalName` gives (or a plan's rename) when that name is in the old schema; each
/// step says whether it is *lightweight* (inferred and carried out by the store alone) and, when
/// it is not, which change it is and why it needs a custom stage.
///
/// ```swift
/// let diff = SchemaDiff(from: stored.schema, to: appSchema)
/// for step in diff.steps where !step.isLightweight { print(step.summary, step.reason ?? "") }
/// ```
public struct SchemaDiff: Sendable, Equatable {
    /// One change between the two schemas.
    public struct Step: Sendable, Equatable {
        /// What kind of change it is.
        public enum Kind: String, Sendable, CaseIterable {
            case addEntity, removeEntity, renameEntity, changeSuperentity
            case addAttribute, removeAttribute, renameAttribute, changeAttributeType
            case makeOptional, makeRequired, changeDefault
            case addUnique, removeUnique, addIndex, removeIndex
            case changeExternalStorage
            case addRelationship, removeRelationship, renameRelationship
            case makeToMany, makeToOne, changeDestination, changeInverse, changeDeleteRule
            case addUniqueConstraint, removeUniqueConstraint, addCompositeIndex, removeCompositeIndex
            case reorder
        }

        /// The kind of change.
        public var kind: Kind
        /// The entity it concerns, by its new name (the old one for a removal).
        public var entity: String
        /// The attribute or relationship, by its new name (the old one for a removal), or the
        /// names of a constraint or index joined by `+`; nil for a change of the entity itself.
        public var property: String?
        /// The change in words, e.g. `Card.image: external storage threshold 65536 → 1024`.
        public var summary: String
        /// Whether the store carries it out alone. Some lightweight steps still check the data
        /// when they run (``needsDataCheck``).
        public var isLightweight: Bool
        /// For a step that is not lightweight: why it needs a custom stage.
        public var reason: String?
        /// True when the step can fail on the document's data when it runs: a new unique
        /// constraint over duplicate values, a required attribute over null values.
        public var needsDataCheck: Bool

        public init(
            _ kind: Kind, entity: String, property: String? = nil, summary: String,
            isLightweight: Bool = true,
            reason: String? = nil, needsDataCheck: Bool = false
        ) {
            self.kind = kind
            self.entity = entity
            self.property = property
            self.summary = summary
            self.isLightweight = isLightweight
            self.reason = reason
            self.needsDataCheck = needsDataCheck
        }
    }

    /// The schemas compared.
    public let from: StoreSchema
    public let to: StoreSchema
    /// The changes, in the order of section 17: entities first (renames, additions, removals),
    /// then each entity of the new schema in order, its attributes, relationships, constraints
    /// and indexes.
    public private(set) var steps: [Step] = []
    /// For each entity of the new schema, the old entity it continues (nil for a new one).
    public private(set) var entityOrigins: [String: String] = [:]
    /// For each `Entity.property` of the new schema, the old property (by name, in the old
    /// entity) it continues.
    public private(set) var propertyOrigins: [String: String] = [:]
    /// Lookups made once, so that comparing stays close to linear in the number of properties
    /// (a schema at the limits has 1,000 entities of 99 attributes): the old schema's entities by
    /// name, each old entity's new name, and each new entity's renamed properties (old name →
    /// new name).
    private var oldEntities: [String: StoreSchema.Entity] = [:]
    private var newEntityNames: [String: String] = [:]
    private var renamedProperties: [String: [String: String]] = [:]

    /// True when every step is lightweight (also when there is none).
    public var isLightweight: Bool { steps.allSatisfy(\.isLightweight) }
    /// True when the two schemas store the same things the same way (equal fingerprints).
    public var isEmpty: Bool { from.fingerprint == to.fingerprint }

    /// Compares `from` (the document's) with `to`.
    /// - Parameter renames: renames a plan declares, `Entity` → its old name for entities and
    ///   `Entity.property` (new names) → the old property name, used where the schema gives no
    ///   `originalName`; they let one migration span several versions' renames.
    public init(from: StoreSchema, to: StoreSchema, renames: [String: String] = [:]) {
        self.from = from
        self.to = to
        compare(renames: renames)
        // Only what makes a diff: two diffs of the same schemas are equal.
        oldEntities = [:]
        newEntityNames = [:]
        renamedProperties = [:]
    }

    private mutating func compare(renames: [String: String]) {
        // Entities: originalName (or a plan's rename) first, then the same name.
        oldEntities = Dictionary(from.entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var claimed: Set<String> = []
        for entity in to.entities {
            let original = entity.originalName ?? renames[entity.name]
            if let original, oldEntities[original] != nil, claimed.insert(original).inserted {
                entityOrigins[entity.name] = original
            }
        }
        for entity in to.entities where entityOrigins[entity.name] == nil {
            if oldEntities[entity.name] != nil, claimed.insert(entity.name).inserted {
                entityOrigins[entity.name] = entity.name
            }
        }
        for (new, old) in entityOrigins { newEntityNames[old] = new }
        for entity in to.entities {
            guard let origin = entityOrigins[entity.name] else {
                steps.append(Step(.addEntity, entity: entity.name, summary: "add entity \(entity.name)"))
                continue
            }
            if origin != entity.name {
                steps.append(
                    Step(
                        .renameEntity, entity: entity.name,
                        summary: "rename entity \(origin) → \(entity.name)"))
            }
        }
        for entity in from.entities where !claimed.contains(entity.name) {
            steps.append(
                Step(
                    .removeEntity, entity: entity.name,
                    summary: "remove entity \(entity.name) (its records are deleted)"))
        }
        // Every property's origin is known before any comparison: an inverse names a property of
        // another entity, which may come later.
        var pairs: [(old: StoreSchema.Entity, new: StoreSchema.Entity)] = []
        for entity in to.entities {
            guard let origin = entityOrigins[entity.name], let old = oldEntities[origin] else {
                continue
            }
            pairs.append((old, entity))
            match(
                old: old.attributes.map(\.name), new: entity.attributes.map { ($0.name, $0.originalName) },
                entity: entity.name, renames: renames)
            match(
                old: old.relationships.map(\.name),
                new: entity.relationships.map { ($0.name, $0.originalName) },
                entity: entity.name, renames: renames)
        }
        for (key, old) in propertyOrigins {
            guard let dot = key.firstIndex(of: ".") else { continue }
            renamedProperties[String(key[..<dot]), default: [:]][old] = String(key[key.index(after: dot)...])
        }
        var mappings = Mappings()
        for (old, new) in pairs { compareEntity(old: old, new: new, mappings: &mappings) }
    }

    /// The two schemas' mappings, made when a step first needs them (building one is linear; a
    /// build per relationship was not).
    private struct Mappings {
        var made = false
        var old: SchemaMapping?
        var new: SchemaMapping?

        mutating func make(from: StoreSchema, to: StoreSchema) -> (old: SchemaMapping?, new: SchemaMapping?) {
            if !made {
                made = true
                old = try? SchemaMapping(from)
                new = try? SchemaMapping(to)
            }
            return (old, new)
        }
    }

    /// For a relationship whose inverse changes, the new inverse (`Entity.relationship`) when that
    /// one existed before and was not the relationship's inverse then, so that both had links of
    /// their own, which one pair cannot keep apart; nil otherwise. (Which storage the links move
    /// to does not matter: the migration moves them, section 18.2.)
    private func pairsTwoLinkSets(
        entity: String, relationship: String, old oldEntity: String, origin: String, mappings: inout Mappings
    ) -> String? {
        let made = mappings.make(from: from, to: to)
        guard let newMapping = made.new, let oldMapping = made.old,
            let (new, _) = newMapping.entities[entity]?.relationship(relationship), let inverse = new.inverse,
            let inverseOrigin = self.origin(new.destination, inverse),
            let oldDestination = entityOrigins[new.destination],
            oldMapping.entities[oldDestination]?.relationship(inverseOrigin) != nil
        else { return nil }
        let oldInverse = oldMapping.entities[oldEntity]?.relationship(origin)?.relationship.inverse
        return oldInverse == inverseOrigin ? nil : new.destination + "." + inverse
    }

    /// The old name of property `name` of new entity `entity`, nil for a new property.
    private func origin(_ entity: String, _ name: String) -> String? { propertyOrigins[entity + "." + name] }

    /// The new name of an old entity, or nil when it was removed.
    private func newName(ofOld name: String) -> String? {
        newEntityNames[name]
    }

    /// The root of a hierarchy in a schema.
    private static func root(of name: String, in schema: StoreSchema) -> String? {
        schema.inheritanceChain(of: name).first?.name
    }

    private mutating func compareEntity(
        old: StoreSchema.Entity, new: StoreSchema.Entity, mappings: inout Mappings
    ) {
        let name = new.name
        // Inheritance: a move within one hierarchy keeps the records in their table.
        let oldParent = old.superentity.flatMap(newName(ofOld:))
        if old.superentity != nil || new.superentity != nil,
            oldParent != new.superentity
                || (old.superentity != nil && oldParent == nil)
        {
            let oldRoot = Self.root(of: old.name, in: from).flatMap(newName(ofOld:))
            let newRoot = Self.root(of: name, in: to)
            let within = oldRoot != nil && oldRoot == newRoot
            steps.append(
                Step(
                    .changeSuperentity, entity: name,
                    summary:
                        "\(name): superentity \(old.superentity ?? "none") → \(new.superentity ?? "none")",
                    isLightweight: within,
                    reason: within
                        ? nil
                        : "the records would move to another hierarchy's table; a custom stage must copy them"
                ))
        }
        compareAttributes(old: old, new: new)
        compareRelationships(old: old, new: new, mappings: &mappings)
        compareLists(
            old.uniqueConstraints, new.uniqueConstraints, entity: name, attributeRenames: localRenames(name),
            add: .addUniqueConstraint, remove: .removeUniqueConstraint, noun: "unique constraint",
            checks: true)
        compareLists(
            old.indexes, new.indexes, entity: name, attributeRenames: localRenames(name),
            add: .addCompositeIndex, remove: .removeCompositeIndex, noun: "index", checks: false)
        let oldOrder = old.attributes.map { newPropertyName(entity: name, old: $0.name) ?? "" }
        let oldNames = Set(oldOrder)
        let newOrder = new.attributes.map(\.name).filter { oldNames.contains($0) }
        let newNames = Set(newOrder)
        if oldOrder.filter({ newNames.contains($0) }) != newOrder {
            steps.append(
                Step(.reorder, entity: name, summary: "\(name): attributes declared in another order"))
        }
    }

    /// Old property name → new, for one entity.
    private func localRenames(_ entity: String) -> [String: String] {
        renamedProperties[entity] ?? [:]
    }

    private func newPropertyName(entity: String, old: String) -> String? {
        renamedProperties[entity]?[old]
    }

    /// Matches properties: originalName (or a plan's rename) first, then the same name.
    private mutating func match(
        old: [String], new: [(name: String, originalName: String?)], entity: String, renames: [String: String]
    ) {
        var origins: [String: String] = [:]
        var claimed: Set<String> = []
        let old = Set(old)
        for property in new {
            let original = property.originalName ?? renames[entity + "." + property.name]
            if let original, old.contains(original), claimed.insert(original).inserted {
                origins[property.name] = original
            }
        }
        for property in new where origins[property.name] == nil {
            if old.contains(property.name), claimed.insert(property.name).inserted {
                origins[property.name] = property.name
            }
        }
        for (new, old) in origins { propertyOrigins[entity + "." + new] = old }
    }

    private mutating func compareAttributes(old: StoreSchema.Entity, new: StoreSchema.Entity) {
        let name = new.name
        let isRoot = new.superentity == nil
        var kept: Set<String> = []
        let oldAttributes = Dictionary(
            old.attributes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for attribute in new.attributes {
            guard let origin = origin(name, attribute.name), let before = oldAttributes[origin]
            else {
                steps.append(Self.addedAttribute(attribute, entity: name, isRoot: isRoot))
                continue
            }
            kept.insert(origin)
            compareAttribute(before, attribute, entity: name, origin: origin)
        }
        for attribute in old.attributes where !kept.contains(attribute.name) {
            steps.append(
                Step(
                    .removeAttribute, entity: name, property: attribute.name,
                    summary: "remove attribute \(name).\(attribute.name) (its values are deleted)"))
        }
    }

    /// The step that adds `attribute` to `entity`: lightweight when it is optional or has a
    /// default, or belongs to a subentity (whose records, if it has any, a data check then finds).
    private static func addedAttribute(_ attribute: StoreSchema.Attribute, entity name: String, isRoot: Bool)
        -> Step
    {
        let path = "\(name).\(attribute.name)"
        let filled =
            attribute.isOptional || attribute.defaultValue != nil || attribute.dynamicDefault != nil
        return Step(
            .addAttribute, entity: name, property: attribute.name,
            summary: "add attribute \(path) (\(attribute.type.rawValue)"
                + (attribute.isOptional ? ", optional" : "") + ")",
            isLightweight: filled || !isRoot,
            reason: filled || !isRoot
                ? nil
                : "it is required and has no default, so existing records have no value for it; "
                    + "give it a default, make it optional, or fill it in a custom stage",
            needsDataCheck: !filled && !isRoot)
    }

    /// The steps for an attribute that continues `before` (its origin, named `origin`): its
    /// name, type, optionality and default, then its options.
    private mutating func compareAttribute(
        _ before: StoreSchema.Attribute, _ attribute: StoreSchema.Attribute, entity name: String,
        origin: String
    ) {
        let path = "\(name).\(attribute.name)"
        if origin != attribute.name {
            steps.append(
                Step(
                    .renameAttribute, entity: name, property: attribute.name,
                    summary: "rename attribute \(name).\(origin) → \(attribute.name)"))
        }
        if before.type != attribute.type {
            steps.append(
                Step(
                    .changeAttributeType, entity: name, property: attribute.name,
                    summary: "\(path): type \(before.type.rawValue) → \(attribute.type.rawValue)",
                    isLightweight: false,
                    reason: "stored values of type \(before.type.rawValue) do not convert to "
                        + "\(attribute.type.rawValue) by rule; a custom stage must convert them"))
        }
        if before.isOptional && !attribute.isOptional {
            let hasDefault = attribute.defaultValue != nil || attribute.dynamicDefault != nil
            steps.append(
                Step(
                    .makeRequired, entity: name, property: attribute.name,
                    summary: "\(path): optional → required"
                        + (hasDefault ? " (nulls get the default)" : ""),
                    isLightweight: hasDefault,
                    reason: hasDefault
                        ? nil
                        : "records that hold no value would break the rule; give it a default or fill "
                            + "the values in a custom stage",
                    needsDataCheck: !hasDefault))
        } else if !before.isOptional && attribute.isOptional {
            steps.append(
                Step(
                    .makeOptional, entity: name, property: attribute.name,
                    summary: "\(path): required → optional"))
        }
        if before.defaultValue != attribute.defaultValue
            || before.dynamicDefault != attribute.dynamicDefault
        {
            steps.append(
                Step(
                    .changeDefault, entity: name, property: attribute.name,
                    summary: "\(path): default changed"))
        }
        compareAttributeOptions(before, attribute, entity: name)
    }

    /// The steps for the options of an attribute that continues `before`: unique, indexed,
    /// external storage.
    private mutating func compareAttributeOptions(
        _ before: StoreSchema.Attribute, _ attribute: StoreSchema.Attribute, entity name: String
    ) {
        let path = "\(name).\(attribute.name)"
        let wasUnique = before.options.contains(.unique)
        let isUnique = attribute.options.contains(.unique)
        if !wasUnique && isUnique {
            steps.append(
                Step(
                    .addUnique, entity: name, property: attribute.name,
                    summary: "\(path): becomes unique (checked: no two records may share a value)",
                    needsDataCheck: true))
        } else if wasUnique && !isUnique {
            steps.append(
                Step(
                    .removeUnique, entity: name, property: attribute.name,
                    summary: "\(path): no longer unique"))
        }
        let wasIndexed = before.options.contains(.indexed) && !wasUnique
        let isIndexed = attribute.options.contains(.indexed) && !isUnique
        if !wasIndexed && isIndexed {
            steps.append(
                Step(.addIndex, entity: name, property: attribute.name, summary: "\(path): indexed"))
        } else if wasIndexed && !isIndexed {
            steps.append(
                Step(
                    .removeIndex, entity: name, property: attribute.name,
                    summary: "\(path): no longer indexed"))
        }
        let wasExternal = before.options.contains(.externalStorage)
        let isExternal = attribute.options.contains(.externalStorage)
        if wasExternal != isExternal
            || (isExternal && before.effectiveExternalThreshold != attribute.effectiveExternalThreshold)
        {
            let describe = { (external: Bool, attribute: StoreSchema.Attribute) in
                external ? "external storage ≥ \(attribute.effectiveExternalThreshold) bytes" : "inline"
            }
            steps.append(
                Step(
                    .changeExternalStorage, entity: name, property: attribute.name,
                    summary:
                        "\(path): \(describe(wasExternal, before)) → \(describe(isExternal, attribute)) "
                        + "(values move between the store and blob files)"))
        }
    }

    private mutating func compareRelationships(
        old: StoreSchema.Entity, new: StoreSchema.Entity, mappings: inout Mappings
    ) {
        let name = new.name
        var kept: Set<String> = []
        let oldRelationships = Dictionary(
            old.relationships.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for relationship in new.relationships {
            let path = "\(name).\(relationship.name)"
            guard let origin = origin(name, relationship.name), let before = oldRelationships[origin]
            else {
                steps.append(
                    Step(
                        .addRelationship, entity: name, property: relationship.name,
                        summary:
                            "add relationship \(path) → \(relationship.isToMany ? "[\(relationship.destination)]" : relationship.destination)"
                    ))
                continue
            }
            kept.insert(origin)
            if origin != relationship.name {
                steps.append(
                    Step(
                        .renameRelationship, entity: name, property: relationship.name,
                        summary: "rename relationship \(name).\(origin) → \(relationship.name)"))
            }
            if newName(ofOld: before.destination) != relationship.destination {
                steps.append(
                    Step(
                        .changeDestination, entity: name, property: relationship.name,
                        summary: "\(path): destination \(before.destination) → \(relationship.destination)",
                        isLightweight: false,
                        reason: "its links name records of \(before.destination), not of "
                            + "\(relationship.destination); a custom stage must relink them"))
            }
            if before.isToMany != relationship.isToMany {
                let toMany = relationship.isToMany
                steps.append(
                    Step(
                        toMany ? .makeToMany : .makeToOne, entity: name, property: relationship.name,
                        summary: "\(path): " + (toMany ? "to-one → to-many" : "to-many → to-one")
                            + (toMany ? "" : " (checked: no record may have more than one link)"),
                        needsDataCheck: !toMany))
            }
            compareInverse(
                before, relationship, entity: name, oldEntity: old.name, origin: origin, mappings: &mappings)
            if before.deleteRule != relationship.deleteRule {
                steps.append(
                    Step(
                        .changeDeleteRule, entity: name, property: relationship.name,
                        summary:
                            "\(path): delete rule \(before.deleteRule.rawValue) → \(relationship.deleteRule.rawValue)"
                            + (before.deleteRule == .noAction ? " (checked: no link may dangle)" : ""),
                        needsDataCheck: before.deleteRule == .noAction))
            }
        }
        for relationship in old.relationships where !kept.contains(relationship.name) {
            steps.append(
                Step(
                    .removeRelationship, entity: name, property: relationship.name,
                    summary: "remove relationship \(name).\(relationship.name) (its links are deleted)"))
        }
    }

    /// The step for a relationship whose inverse changes from `before`'s (by its new name):
    /// lightweight unless it pairs two relationships that each had links of their own.
    private mutating func compareInverse(
        _ before: StoreSchema.Relationship, _ relationship: StoreSchema.Relationship, entity name: String,
        oldEntity: String, origin: String, mappings: inout Mappings
    ) {
        let path = "\(name).\(relationship.name)"
        // The old inverse by its new name (an inverse that was renamed is the same inverse).
        let renamedInverse = before.inverse.map { inverse in
            newName(ofOld: before.destination).flatMap { newPropertyName(entity: $0, old: inverse) }
                ?? inverse
        }
        if renamedInverse != relationship.inverse {
            // Naming an inverse that was inferred, or the reverse, keeps the storage (spec:
            // section 6.5); a pairing that moves the links does not.
            // A pairing that moves the links moves them too (section 18.2), unless it pairs two
            // relationships that each had links of their own: merging them is the app's call.
            let merged = pairsTwoLinkSets(
                entity: name, relationship: relationship.name, old: oldEntity, origin: origin,
                mappings: &mappings)
            steps.append(
                Step(
                    .changeInverse, entity: name, property: relationship.name,
                    summary:
                        "\(path): inverse \(before.inverse ?? "none") → \(relationship.inverse ?? "none")",
                    isLightweight: merged == nil,
                    reason: merged.map {
                        "it pairs the relationship with \($0), and each had links of its own; a custom stage "
                            + "must merge them"
                    }))
        }
    }

    private mutating func compareLists(
        _ old: [[String]], _ new: [[String]], entity: String, attributeRenames: [String: String],
        add: Step.Kind, remove: Step.Kind, noun: String, checks: Bool
    ) {
        let renamedOld = old.map { $0.map { attributeRenames[$0] ?? $0 } }
        for entry in new where !renamedOld.contains(entry) {
            let names = entry.joined(separator: "+")
            steps.append(
                Step(
                    add, entity: entity, property: names,
                    summary: "\(entity): add \(noun) \(names)"
                        + (checks ? " (checked: no two records may share the values)" : ""),
                    needsDataCheck: checks))
        }
        for entry in renamedOld where !new.contains(entry) {
            let names = entry.joined(separator: "+")
            steps.append(
                Step(remove, entity: entity, property: names, summary: "\(entity): remove \(noun) \(names)"))
        }
    }
}
