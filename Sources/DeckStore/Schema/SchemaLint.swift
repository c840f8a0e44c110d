import Foundation

/// One way a schema breaks a rule of a check such as ``StoreSchema/cloudKitFindings()``: which
/// rule (``code``), where (``entity`` and ``property``) and what to change (``message``).
public struct SchemaFinding: Sendable, Hashable, CustomStringConvertible {
    /// The rules of the CloudKit-compatibility check. The raw values are stable (`deck lint
    /// --json` prints them); each case says what it finds.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// An attribute with the `unique` option (SwiftData's `@Attribute(.unique)`). CloudKit has
        /// no uniqueness across devices, so a store that syncs through it refuses the option.
        case uniqueAttribute = "unique-attribute"
        /// An entry of an entity's `uniqueConstraints` (SwiftData's `#Unique`), refused for the
        /// same reason. The finding names the entity; its message lists the attributes.
        case uniqueConstraint = "unique-constraint"
        /// A non-optional attribute with neither a `default` nor a `dynamicDefault`: a record that
        /// reaches a device without the field (from an older version of the app, or synced in
        /// pieces) would have no value for it.
        case attributeWithoutDefault = "attribute-without-default"
        /// A relationship that a record must fill: a to-many relationship declared as a
        /// non-optional array, or with a minimum count of at least one (typed models only; a
        /// store schema's relationships are always optional, spec section 5.1). CloudKit does not
        /// apply relationship changes atomically, so every relationship must allow being empty.
        case relationshipNotOptional = "relationship-not-optional"
        /// A relationship without an inverse, named or inferred (spec section 6.5). CloudKit keeps
        /// both sides of every relationship.
        case relationshipWithoutInverse = "relationship-without-inverse"
        /// A relationship whose delete rule is `deny`, which CloudKit cannot enforce across devices.
        case denyDeleteRule = "deny-delete-rule"
    }

    /// The rule broken.
    public let code: Code
    /// The entity that declares what breaks it (for an inherited property, the ancestor that
    /// declares it, so each violation is reported once).
    public let entity: String
    /// The attribute or relationship, or nil for a finding about the entity (a unique constraint).
    public let property: String?
    /// What is wrong and how to fix it, naming the entity and property.
    public let message: String

    /// `Entity.property: message` (`Entity: message` without a property).
    public var description: String { "\(location): \(message)" }

    /// `Entity.property`, or `Entity` for a finding about the entity.
    public var location: String { property.map { "\(entity).\($0)" } ?? entity }

    /// A finding of `code` about `entity` (and `property`).
    package init(code: Code, entity: String, property: String?, message: String) {
        self.code = code
        self.entity = entity
        self.property = property
        self.message = message
    }
}

extension StoreSchema {
    /// What keeps the schema from syncing through CloudKit, as SwiftData and Core Data check it
    /// for a store with a CloudKit database: each violation named by entity and property, in
    /// schema order (entity by entity: attributes, relationships, then unique constraints).
    ///
    /// The rules (``SchemaFinding/Code``):
    /// - no attribute has the `unique` option and no entity has unique constraints;
    /// - every non-optional attribute has a default (`default`, or `dynamicDefault` `now`);
    /// - every relationship has an inverse, named on either side or inferred (spec 6.5);
    /// - no relationship has the delete rule `deny`.
    ///
    /// CloudKit also asks that every relationship be optional; a store schema's relationships
    /// always are (a to-one may hold no record, a to-many may be empty), so only the typed check
    /// of models reports ``SchemaFinding/Code/relationshipNotOptional``. Not checked: what no
    /// schema can say (a record over CloudKit's 1 MB limit: store large data with
    /// `externalStorage`, which CloudKit keeps as an asset), and what Deck has no form for
    /// (ordered relationships, Core Data's undefined type, several configurations).
    ///
    /// An empty result means the schema passes. Properties inherited by a subentity are reported
    /// once, on the entity that declares them.
    ///
    /// ```swift
    /// for finding in try schema.cloudKitFindings() {
    ///     print(finding)  // Deck.title: the unique option is not supported by CloudKit; …
    /// }
    /// ```
    ///
    /// - Throws: ``DeckError/invalidSchema(_:)`` when the schema is not valid (see
    ///   ``validate()``), since its inverses are then unknown.
    public func cloudKitFindings() throws(DeckError) -> [SchemaFinding] {
        let mapping = try SchemaMapping(self)
        var findings: [SchemaFinding] = []
        for entity in entities {
            func add(_ code: SchemaFinding.Code, _ property: String?, _ message: String) {
                findings.append(
                    SchemaFinding(code: code, entity: entity.name, property: property, message: message))
            }
            for attribute in entity.attributes {
                if attribute.options.contains(.unique) {
                    add(
                        .uniqueAttribute, attribute.name,
                        "the unique option is not supported by CloudKit; remove it and find duplicates in the "
                            + "app (for example by a UUID attribute)")
                }
                if !attribute.isOptional && attribute.defaultValue == nil && attribute.dynamicDefault == nil {
                    // A unique attribute has no default in a document the typed models made: one
                    // default would make the second record that takes it fail.
                    add(
                        .attributeWithoutDefault, attribute.name,
                        "a non-optional \(attribute.type.rawValue) attribute needs a default for CloudKit; "
                            + (attribute.options.contains(.unique)
                                ? "a unique attribute has none (typed models store their initial value as the "
                                    + "default only once the unique option is removed); remove the option, then give "
                                    + "it a default or make it optional"
                                : "give it a default or make it optional"))
                }
            }
            let resolved = mapping.entities[entity.name]
            for relationship in entity.relationships {
                if resolved?.relationship(relationship.name)?.relationship.inverse == nil {
                    add(
                        .relationshipWithoutInverse, relationship.name,
                        "CloudKit needs an inverse for every relationship; add a relationship to "
                            + "\(entity.name) on \(relationship.destination) and name it as the inverse")
                }
                if relationship.deleteRule == .deny {
                    add(
                        .denyDeleteRule, relationship.name,
                        "the delete rule deny is not supported by CloudKit; use nullify or cascade, and check "
                            + "in the app before deleting")
                }
            }
            for constraint in entity.uniqueConstraints {
                add(
                    .uniqueConstraint, nil,
                    "the unique constraint on (\(constraint.joined(separator: ", "))) is not supported by "
                        + "CloudKit; remove it and find duplicates in the app")
            }
        }
        return findings
    }
}
