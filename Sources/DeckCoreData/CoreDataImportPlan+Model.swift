import DeckSQLite
import DeckStore
import DeckSupport
import Foundation

/// Builds a ``CoreDataImportPlan`` from the store's model cache, in phases: the entities checked
/// against `Z_PRIMARYKEY`, Deck names, each hierarchy's table and columns, the generated order
/// attributes, then each entity's schema and reading plan.
struct ModelPlanBuilder {
    typealias Plan = CoreDataImportPlan

    /// The shared context (store, tables, notes).
    var context: ImportPlanBuilder
    let model: CoreDataModel

    /// Per entity (by Core Data name): Deck names of its properties (inherited ones included),
    /// by Core Data name.
    struct Names {
        var entities: [String: String] = [:]
        var properties: [String: [String: String]] = [:]
    }

    var byName: [String: CoreDataEntity] = [:]
    var numbers: [String: Int64] = [:]
    var children: [String: [String]] = [:]
    var roots: [String] = []
    /// Every entity, roots by name and each followed by its subentities (preorder, by name).
    var order: [String] = []
    var names = Names()
    /// The Deck property names taken in each entity (lowercased), inherited ones included.
    var takenProperties: [String: Set<String>] = [:]
    var tableOf: [String: String] = [:]
    var columnsOf: [String: Set<String>] = [:]
    /// The column of each stored property: entity -> property -> column.
    var assigned: [String: [String: String]] = [:]
    var generated: [String: [(attribute: StoreSchema.Attribute, column: Plan.AttributeColumn)]] = [:]
    var columnsByEntity: [String: [Plan.AttributeColumn]] = [:]
    var joinTables: [Plan.JoinTable] = []
    /// `Entity.relationship` of the ordered many-to-many relationships whose order a generated
    /// attribute keeps.
    var keptJoinOrders: Set<String> = []

    init(context: ImportPlanBuilder, model: CoreDataModel) {
        self.context = context
        self.model = model
    }

    var path: String { context.path }
    var store: CoreDataStore { context.store }

    mutating func note(_ entity: String?, _ property: String?, _ reason: String) {
        context.notes.append(Plan.Note(entity: entity, property: property, reason))
    }

    mutating func note(_ entity: String, _ reason: String) { note(entity, nil, reason) }

    mutating func build() throws(CoreDataError) -> Plan {
        try resolveEntities()
        assignNames()
        try assignColumns()
        generateOrderAttributes()
        try generateJoinOrderAttributes()
        var schemaEntities: [StoreSchema.Entity] = []
        var plans: [Plan.EntityPlan] = []
        for name in order {
            let (entity, plan) = try entity(name)
            schemaEntities.append(entity)
            plans.append(plan)
        }
        let schema = StoreSchema(
            version: model.versionIdentifiers.first { !$0.isEmpty } ?? "1.0.0", entities: schemaEntities)
        do {
            try schema.validate()
        } catch {
            throw CoreDataError(
                .badModel, "\(path): the model does not make a valid Deck schema: \(error.description)")
        }
        return Plan(
            schema: schema, notes: context.notes, entities: plans, joinTables: joinTables,
            hierarchies: try hierarchies(), storeUUID: store.metadata.uuid ?? "")
    }

    func preorder(_ name: String) -> [String] { [name] + (children[name] ?? []).flatMap(preorder) }

    func ancestry(_ name: String) -> [String] { context.ancestry(name, byName) }

    /// Checks the model against `Z_PRIMARYKEY` (the same entities, the same parents) and orders
    /// the entities.
    mutating func resolveEntities() throws(CoreDataError) {
        let stored = store.entities.filter { !$0.isPersistentHistory }
        let entities = model.entities.filter { entity in
            !(store.entity(named: entity.name)?.isPersistentHistory ?? false)
        }
        for entity in entities {
            guard byName.updateValue(entity, forKey: entity.name) == nil else {
                throw CoreDataError(
                    .badModel, "\(path): the model cache describes the entity '\(entity.name)' twice")
            }
        }
        for entity in entities {
            if let parent = entity.parentName, byName[parent] == nil {
                throw CoreDataError(
                    .badModel,
                    "\(path): the model cache gives '\(entity.name)' the parent '\(parent)', which it does not describe"
                )
            }
            guard let row = store.entity(named: entity.name) else {
                throw CoreDataError(
                    .badModel,
                    "\(path): the model cache describes the entity '\(entity.name)', which Z_PRIMARYKEY does not list; "
                        + "the model cache does not belong to these tables")
            }
            numbers[entity.name] = row.number
            let parent = entity.parentName.flatMap { name in store.entity(named: name)?.number } ?? 0
            guard parent == row.parentNumber else {
                throw CoreDataError(
                    .badModel,
                    "\(path): the model cache gives '\(entity.name)' the parent '\(entity.parentName ?? "none")', "
                        + "but Z_PRIMARYKEY gives it the parent number \(row.parentNumber)")
            }
            if let parent = entity.parentName { children[parent, default: []].append(entity.name) }
        }
        for entity in stored where model.entity(named: entity.name) == nil {
            throw CoreDataError(
                .badModel,
                "\(path): Z_PRIMARYKEY lists the entity '\(entity.name)' (number \(entity.number)), "
                    + "which the model cache does not describe")
        }
        for key in children.keys { children[key]?.sort() }
        roots = entities.filter { $0.parentName == nil }.map(\.name).sorted()
        order = roots.flatMap(preorder)
        guard order.count == entities.count else {
            throw CoreDataError(.badModel, "\(path): the model cache's entities inherit in a cycle")
        }
    }

    /// Deck names: entities across the schema, properties within an entity with its ancestors'.
    mutating func assignNames() {
        var takenEntities = Set<String>()
        for name in order {
            let deck = Plan.unique(Plan.deckName(name), in: &takenEntities)
            if deck != name { note(name, "named '\(deck)' in Deck (spec 5.7's naming rules)") }
            names.entities[name] = deck
        }
        for name in order {
            guard let entity = byName[name] else { continue }
            var taken = entity.parentName.flatMap { takenProperties[$0] } ?? []
            var map = entity.parentName.flatMap { names.properties[$0] } ?? [:]
            for property in entity.attributes.map(\.name) + entity.relationships.map(\.name) {
                let deck = Plan.unique(Plan.deckName(property), in: &taken)
                if deck != property {
                    note(name, property, "named '\(deck)' in Deck (spec 5.7's naming rules)")
                }
                map[property] = deck
            }
            takenProperties[name] = taken
            names.properties[name] = map
        }
    }

    /// Each hierarchy's table, and the column of each stored property: `Z<NAME>`, and where
    /// properties of the hierarchy share a name, `Z<NAME>1`, `Z<NAME>2`… in the order root
    /// first, entities and then properties by name.
    mutating func assignColumns() throws(CoreDataError) {
        for root in roots {
            let expected = "Z" + root.uppercased()
            guard let table = context.table(expected) else {
                throw CoreDataError(
                    .badStoreTable,
                    "\(path): the store has no table \(expected) for the entity '\(root)' and its subentities"
                )
            }
            let columns = Set(try context.columns(of: table).map { $0.name.uppercased() })
            var counts: [String: Int] = [:]
            var sharing: [String: [String]] = [:]
            defer {
                // Which property got which numbered column follows the order above, which no
                // store written by Core Data has confirmed yet: say so where it decides.
                for (base, owners) in sharing.sorted(by: { $0.key < $1.key }) where owners.count > 1 {
                    let columns = owners.indices.map { $0 == 0 ? base : base + String($0) }
                    note(
                        nil, nil,
                        "the properties \(owners.joined(separator: ", ")) of one hierarchy share a name, and are "
                            + "read from the columns \(columns.joined(separator: ", ")) in that order (root first, "
                            + "then entities and properties by name, as Core Data numbers them); check their values"
                    )
                }
            }
            for name in preorder(root) {
                tableOf[name] = table
                columnsOf[name] = columns
                guard let entity = byName[name] else { continue }
                let stored =
                    entity.attributes.filter { !$0.isTransient }.map(\.name)
                    + entity.relationships.filter { !$0.isTransient && !$0.isToMany }.map(\.name)
                for property in stored.sorted() {
                    let base = "Z" + property.uppercased()
                    let count = counts[base, default: 0]
                    counts[base] = count + 1
                    sharing[base, default: []].append(name + "." + property)
                    assigned[name, default: [:]][property] = count == 0 ? base : base + String(count)
                }
            }
        }
    }

    /// Ordered to-many relationships whose inverse is a to-one: a generated order attribute on
    /// the entity declaring the inverse, read from its `Z_FOK_` column.
    mutating func generateOrderAttributes() {
        for name in order {
            guard let entity = byName[name] else { continue }
            for relationship in entity.relationships where relationship.isOrdered && !relationship.isTransient
            {
                guard let inverseName = relationship.inverseName,
                    let destination = byName[relationship.destinationEntityName],
                    let inverse = destination.relationship(named: inverseName), !inverse.isToMany,
                    let foreignKey = assigned[destination.name]?[inverse.name]
                else { continue }
                let column = "Z_FOK_" + foreignKey.dropFirst()
                guard columnsOf[destination.name]?.contains(column) == true else {
                    note(
                        name, relationship.name,
                        "ordered, but the store has no \(column) column: the order is not kept")
                    continue
                }
                var taken = takenProperties[destination.name] ?? []
                let attributeName = Plan.unique(
                    Plan.deckName(
                        (names.properties[destination.name]?[inverse.name] ?? inverse.name) + "Order"),
                    in: &taken)
                takenProperties[destination.name] = taken
                generated[destination.name, default: []].append(
                    (
                        StoreSchema.Attribute(attributeName, .integer, isOptional: true),
                        Plan.AttributeColumn(
                            name: attributeName, coreDataName: inverse.name, column: column,
                            coreDataType: .integer64, type: .integer, usesExternalStorageEncoding: false)
                    ))
                note(
                    name, relationship.name,
                    "ordered: Deck's to-many relationships are sets, so the position of each "
                        + "\(destination.name) is kept in the generated integer attribute "
                        + "\(names.entities[destination.name] ?? destination.name).\(attributeName) "
                        + "(Core Data's \(column) as stored; sort ascending for the order)")
            }
        }
    }

    /// The Deck entity and the reading plan of the entity `name`.
    mutating func entity(_ name: String) throws(CoreDataError) -> (StoreSchema.Entity, Plan.EntityPlan) {
        guard let entity = byName[name], let deckName = names.entities[name], let table = tableOf[name],
            let number = numbers[name]
        else {
            throw CoreDataError(.badModel, "\(path): the entity '\(name)' could not be resolved")
        }
        let (attributes, attributeColumns) = try attributes(of: entity, table: table)
        var relationships: [StoreSchema.Relationship] = []
        var toOnes: [Plan.ToOneColumn] = []
        for relationship in entity.relationships {
            guard let (deck, toOne) = try self.relationship(relationship, of: entity, table: table) else {
                continue
            }
            relationships.append(deck)
            if let toOne { toOnes.append(toOne) }
        }
        let constraints = entity.uniquenessConstraints.compactMap {
            propertyList($0, of: entity, what: "uniqueness constraint")
        }
        let indexes = entity.indexes.compactMap { propertyList($0.propertyNames, of: entity, what: "index") }
        for other in entity.otherProperties {
            note(name, other.name, "a \(other.className) (not stored data): not imported")
        }
        if entity.isAbstract {
            note(
                name,
                "abstract in the model; Deck has no abstract entities, so it is an entity with no records of its own"
            )
        }
        var all = [number]
        var queue = children[name] ?? []
        while let next = queue.popLast() {
            if let n = numbers[next] { all.append(n) }
            queue += children[next] ?? []
        }
        let root = ancestry(name).first ?? name
        return (
            StoreSchema.Entity(
                deckName, superentity: entity.parentName.flatMap { names.entities[$0] },
                attributes: attributes,
                relationships: relationships, uniqueConstraints: constraints, indexes: indexes,
                originalName: context.renamed(entity.renamingIdentifier, from: entity.name)),
            Plan.EntityPlan(
                name: deckName, coreDataName: name, root: names.entities[root] ?? root, table: table,
                number: number, numbers: all.sorted(), isAbstract: entity.isAbstract,
                attributes: attributeColumns, toOnes: toOnes)
        )
    }

    /// The entity's own attributes in Deck's form, and the columns of every attribute a record
    /// of it has (inherited ones first).
    mutating func attributes(of entity: CoreDataEntity, table: String) throws(CoreDataError)
        -> ([StoreSchema.Attribute], [Plan.AttributeColumn])
    {
        let name = entity.name
        let propertyNames = names.properties[name] ?? [:]
        let columns = columnsOf[name] ?? []
        var attributes: [StoreSchema.Attribute] = []
        var attributeColumns = entity.parentName.flatMap { columnsByEntity[$0] } ?? []
        for attribute in entity.attributes {
            let deck = propertyNames[attribute.name] ?? attribute.name
            if attribute.isTransient {
                note(name, attribute.name, "transient (not stored): not imported")
                continue
            }
            guard let type = context.mapType(attribute, entity: name) else { continue }
            guard let column = assigned[name]?[attribute.name], columns.contains(column) else {
                throw CoreDataError(
                    .badStoreTable,
                    "\(path): the table \(table) has no column \(assigned[name]?[attribute.name] ?? "?") "
                        + "for the attribute \(name).\(attribute.name)")
            }
            let external =
                attribute.allowsExternalBinaryDataStorage
                && (attribute.type == .binaryData || attribute.type == .transformable)
            var result = StoreSchema.Attribute(
                deck, type, isOptional: attribute.isOptional,
                options: external && type == .data ? [.externalStorage] : [],
                originalName: context.renamed(attribute.renamingIdentifier, from: attribute.name))
            if let value = attribute.defaultValue {
                result.defaultValue = context.defaultValue(
                    value, type: type, entity: name, attribute: attribute.name)
                if result.defaultValue != nil, let problem = result.defaultProblem {
                    note(name, attribute.name, "the default value is left out: \(problem)")
                    result.defaultValue = nil
                }
            }
            attributes.append(result)
            attributeColumns.append(
                Plan.AttributeColumn(
                    name: deck, coreDataName: attribute.name, column: column, coreDataType: attribute.type,
                    type: type, usesExternalStorageEncoding: external))
        }
        for (attribute, column) in generated[name] ?? [] {
            attributes.append(attribute)
            attributeColumns.append(column)
        }
        columnsByEntity[name] = attributeColumns
        return (attributes, attributeColumns)
    }

    /// The relationship in Deck's form and, for a to-one whose key this entity's table holds (and
    /// that Deck reads from this side), its column; nil (noted) when it is not imported. A
    /// many-to-many's join table is added to ``joinTables``.
    mutating func relationship(
        _ relationship: CoreDataRelationship, of entity: CoreDataEntity, table: String
    ) throws(CoreDataError) -> (StoreSchema.Relationship, Plan.ToOneColumn?)? {
        let name = entity.name
        let deck = names.properties[name]?[relationship.name] ?? relationship.name
        if relationship.isTransient {
            note(name, relationship.name, "transient (not stored): not imported")
            return nil
        }
        guard let destination = byName[relationship.destinationEntityName],
            let destinationName = names.entities[destination.name]
        else {
            throw CoreDataError(
                .badModel,
                "\(path): the relationship \(name).\(relationship.name) leads to the entity "
                    + "'\(relationship.destinationEntityName)', which the model does not describe")
        }
        let (inverseOwner, inverse) = try self.inverse(of: relationship, of: entity, destination: destination)
        if let inverse, inverse.name == relationship.name, destination.name == name {
            note(
                name, relationship.name,
                "its own inverse (a symmetric relationship), which Deck cannot store: not imported")
            return nil
        }
        let rule: StoreSchema.DeleteRule =
            switch relationship.deleteRule {
            case .noAction: .noAction
            case .nullify: .nullify
            case .cascade: .cascade
            case .deny: .deny
            }
        let result = StoreSchema.Relationship(
            deck, to: destinationName, toMany: relationship.isToMany,
            inverse: inverse.flatMap { names.properties[destination.name]?[$0.name] }, deleteRule: rule,
            originalName: context.renamed(relationship.renamingIdentifier, from: relationship.name))
        if relationship.minCount > 0 || (relationship.maxCount > 1 && relationship.isToMany) {
            let maximum = relationship.maxCount == 0 ? "any" : String(relationship.maxCount)
            note(
                name, relationship.name,
                "the count limits (\(relationship.minCount)…\(maximum)) are not enforced by Deck")
        }
        if !relationship.isToMany {
            let toOne = try toOneColumn(
                relationship, of: entity, table: table, deckName: deck, destination: destinationName,
                inverse: inverse, inverseOwner: inverseOwner)
            return (result, toOne)
        }
        if inverse == nil || inverse?.isToMany == true {
            if let join = try context.joinTable(
                entity: entity, relationship: relationship, inverse: inverse, destination: destination,
                names: names, numbers: numbers, children: children)
            {
                joinTables.append(join)
            }
            if relationship.isOrdered && !keptJoinOrders.contains(name + "." + relationship.name) {
                note(
                    name, relationship.name,
                    "ordered many-to-many: Deck keeps the links as a set, and the store has no position column, "
                        + "so the order is not kept")
            }
        }
        return (result, nil)
    }

    /// The inverse of `relationship` and the entity declaring it: the destination or one of its
    /// ancestors.
    func inverse(
        of relationship: CoreDataRelationship, of entity: CoreDataEntity, destination: CoreDataEntity
    ) throws(CoreDataError) -> (owner: String?, inverse: CoreDataRelationship?) {
        guard let inverseName = relationship.inverseName else { return (nil, nil) }
        let owner = ancestry(destination.name).last { byName[$0]?.relationship(named: inverseName) != nil }
        guard let owner, let inverse = byName[owner]?.relationship(named: inverseName) else {
            throw CoreDataError(
                .badModel,
                "\(path): the relationship \(entity.name).\(relationship.name) names the inverse "
                    + "'\(inverseName)', which \(destination.name) neither declares nor inherits")
        }
        return (owner, inverse)
    }

    /// The column of to-one `relationship`, or nil when Deck reads the link from the other side.
    mutating func toOneColumn(
        _ relationship: CoreDataRelationship, of entity: CoreDataEntity, table: String, deckName deck: String,
        destination: String, inverse: CoreDataRelationship?, inverseOwner: String?
    ) throws(CoreDataError) -> Plan.ToOneColumn? {
        let name = entity.name
        guard let column = assigned[name]?[relationship.name], columnsOf[name]?.contains(column) == true
        else {
            if let inverse, !inverse.isToMany { return nil }  // the other side holds the key
            throw CoreDataError(
                .badStoreTable,
                "\(path): the table \(table) has no column \(assigned[name]?[relationship.name] ?? "?") "
                    + "for the to-one relationship \(name).\(relationship.name)")
        }
        // A one-to-one whose key Core Data keeps on both sides is read once, from the side Deck
        // stores it on (spec 6.5: the smaller key, entity.relationship in byte order).
        if let inverse, let owner = inverseOwner, !inverse.isToMany,
            let other = assigned[owner]?[inverse.name], columnsOf[owner]?.contains(other) == true
        {
            let mine = Array("\(names.entities[name] ?? name).\(deck)".utf8)
            let theirs = Array(
                "\(names.entities[owner] ?? owner).\(names.properties[owner]?[inverse.name] ?? inverse.name)"
                    .utf8)
            if !mine.lexicographicallyPrecedes(theirs) { return nil }
        }
        if !relationship.isOptional {
            note(
                name, relationship.name,
                "required in the model; Deck's to-one relationships are always optional")
        }
        return Plan.ToOneColumn(
            name: deck, coreDataName: relationship.name, column: column, destination: destination)
    }

    /// The Deck names of a uniqueness constraint's or index's properties, or nil (noted) when
    /// one is not a stored attribute or to-one relationship of `entity` (spec 5.8 rule 5).
    mutating func propertyList(_ list: [String], of entity: CoreDataEntity, what: String) -> [String]? {
        var result: [String] = []
        for property in list {
            let isAttribute =
                columnsByEntity[entity.name]?.contains {
                    $0.coreDataName == property && !$0.column.hasPrefix("Z_FOK_")
                } ?? false
            let isToOne = ancestry(entity.name).contains { owner in
                guard let relationship = byName[owner]?.relationship(named: property) else { return false }
                return !relationship.isToMany && !relationship.isTransient
                    && (assigned[owner]?[property]).map { columnsOf[owner]?.contains($0) == true } == true
            }
            guard isAttribute || isToOne, let deck = names.properties[entity.name]?[property] else {
                note(
                    entity.name, nil,
                    "the \(what) on \(list.joined(separator: ", ")) is left out: '\(property)' is not "
                        + "a stored attribute or to-one relationship of the entity")
                return nil
            }
            result.append(deck)
        }
        return result.isEmpty ? nil : result
    }

    /// One per hierarchy, with the highest primary key it has handed out (checking every row's
    /// `Z_ENT` on the way).
    func hierarchies() throws(CoreDataError) -> [Plan.Hierarchy] {
        var hierarchies: [Plan.Hierarchy] = []
        for root in roots {
            guard let table = tableOf[root] else { continue }
            let members = Set(preorder(root))
            let maximum =
                store.entities.filter { members.contains($0.name) }.map(\.maximumPrimaryKey).max() ?? 0
            let scanned = try context.scan(table, numbers: Set(members.compactMap { numbers[$0] }))
            hierarchies.append(
                Plan.Hierarchy(
                    root: names.entities[root] ?? root, coreDataRoot: root, table: table,
                    maximumPrimaryKey: max(maximum, scanned)))
        }
        return hierarchies
    }
}
