import DeckSQLite
import DeckStore
import DeckSupport
import Foundation

extension CoreDataStore {
    /// The import plan of this store: Deck's schema for its model (or, without a model cache,
    /// for its tables), the notes, and where every entity's rows and links live.
    ///
    /// Entity numbers are resolved by name from `Z_PRIMARYKEY`. Columns are Core Data's:
    /// `Z<NAME>` for an attribute or a to-one's foreign key, where properties of one hierarchy
    /// (one table) share a name Core Data numbers the later ones `Z<NAME>1`, `Z<NAME>2`… (this
    /// plan assigns the numbers in the order root first, entities and then properties by name,
    /// and checks every column exists); `Z_FOK_<NAME>` for an ordered to-many's positions; join
    /// tables `Z_<n><NAME>` (n the `Z_ENT` of the entity declaring relationship NAME) with the
    /// columns `Z_<m><NAME>` (m the `Z_ENT` of the pair's other entity) for many-to-many.
    ///
    /// - Throws: ``CoreDataError`` `badModel` when the model and `Z_PRIMARYKEY` disagree or
    ///   the result is not a valid Deck schema; `badStoreTable` when a table or column the
    ///   model implies is missing.
    package func importPlan() throws(CoreDataError) -> CoreDataImportPlan {
        var builder = ImportPlanBuilder(store: self)
        return try builder.build()
    }
}

/// Builds a ``CoreDataImportPlan``.
struct ImportPlanBuilder {
    typealias Plan = CoreDataImportPlan

    let store: CoreDataStore
    var notes: [Plan.Note] = []
    var tableNames: Set<String> = []

    init(store: CoreDataStore) { self.store = store }

    var path: String { store.sourceURL.path }

    var reader: StoreTableReader { StoreTableReader(database: store.database, path: path, limits: .standard) }

    func columns(of table: String) throws(CoreDataError) -> [(name: String, type: String)] {
        let rows = try reader.rows("PRAGMA table_info(\(quote(table)))", table: table)
        return rows.compactMap { row in
            guard row.count > 2, let name = row[1].string else { return nil }
            return (name, (row[2].string ?? "").uppercased())
        }
    }

    /// The store's table named `name` (compared as SQLite does, ignoring ASCII case).
    func table(_ name: String) -> String? { tableNames.first { $0.uppercased() == name.uppercased() } }

    /// The highest `Z_PK` of `table`, after checking that every row's `Z_ENT` is one of
    /// `numbers` (the entities stored in the table): a row of an entity the store does not
    /// describe would otherwise be left out silently by a reader that reads entity by entity.
    func scan(_ table: String, numbers: Set<Int64>) throws(CoreDataError) -> Int64 {
        let rows = try reader.rows(
            "SELECT Z_ENT, min(Z_PK), count(*), max(Z_PK) FROM \(quote(table)) GROUP BY Z_ENT", table: table)
        var maximum: Int64 = 0
        for row in rows where row.count == 4 {
            guard let number = row[0].int64, numbers.contains(number) else {
                throw CoreDataError(
                    .badRow,
                    "\(path): \(row[2]) row(s) of \(table) (the first Z_PK \(row[1])) have Z_ENT \(row[0]), which names "
                        + "no entity stored in that table (\(numbers.sorted().map(String.init).joined(separator: ", ")))"
                )
            }
            maximum = max(maximum, row[3].int64 ?? 0)
        }
        return maximum
    }

    mutating func build() throws(CoreDataError) -> Plan {
        tableNames = try reader.tableNames()
        for entity in store.entities where entity.isPersistentHistory {
            notes.append(
                Plan.Note(
                    entity: entity.name,
                    "SwiftData's persistent history (entity number \(entity.number)) is not imported"))
        }
        for name in ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"]
        where table(name) != nil && !store.entities.contains(where: { $0.name.uppercased() == name }) {
            notes.append(Plan.Note("the table \(name) (SwiftData's persistent history) is not imported"))
        }
        if let model = store.model {
            return try build(model: model)
        }
        return try buildFromTables()
    }

    // MARK: - From the model

    /// Per entity (by Core Data name): Deck names of its properties (inherited ones included),
    /// by Core Data name.
    struct Names {
        var entities: [String: String] = [:]
        var properties: [String: [String: String]] = [:]
    }

    mutating func build(model: CoreDataModel) throws(CoreDataError) -> Plan {
        let stored = store.entities.filter { !$0.isPersistentHistory }
        let modelEntities = model.entities.filter { entity in
            !(store.entity(named: entity.name)?.isPersistentHistory ?? false)
        }
        var numbers: [String: Int64] = [:]
        var seen = Set<String>()
        for entity in modelEntities {
            guard seen.insert(entity.name).inserted else {
                throw CoreDataError(
                    .badModel, "\(path): the model cache describes the entity '\(entity.name)' twice")
            }
        }
        for entity in modelEntities {
            if let parent = entity.parentName, !seen.contains(parent) {
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
        }
        for entity in stored where model.entity(named: entity.name) == nil {
            throw CoreDataError(
                .badModel,
                "\(path): Z_PRIMARYKEY lists the entity '\(entity.name)' (number \(entity.number)), "
                    + "which the model cache does not describe")
        }
        let byName = Dictionary(modelEntities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var children: [String: [String]] = [:]
        for entity in modelEntities {
            if let parent = entity.parentName { children[parent, default: []].append(entity.name) }
        }
        for key in children.keys { children[key]?.sort() }
        let roots = modelEntities.filter { $0.parentName == nil }.map(\.name).sorted()
        func preorder(_ name: String) -> [String] { [name] + (children[name] ?? []).flatMap(preorder) }
        let order = roots.flatMap(preorder)
        guard order.count == modelEntities.count else {
            throw CoreDataError(.badModel, "\(path): the model cache's entities inherit in a cycle")
        }

        // Deck names: entities across the schema, properties within an entity with its ancestors'.
        var names = Names()
        var takenEntities = Set<String>()
        for name in order {
            let deck = Plan.unique(Plan.deckName(name), in: &takenEntities)
            if deck != name {
                notes.append(Plan.Note(entity: name, "named '\(deck)' in Deck (spec 5.7's naming rules)"))
            }
            names.entities[name] = deck
        }
        var takenProperties: [String: Set<String>] = [:]
        for name in order {
            guard let entity = byName[name] else { continue }
            var taken = entity.parentName.flatMap { takenProperties[$0] } ?? []
            var map = entity.parentName.flatMap { names.properties[$0] } ?? [:]
            let own = entity.attributes.map(\.name) + entity.relationships.map(\.name)
            for property in own {
                let deck = Plan.unique(Plan.deckName(property), in: &taken)
                if deck != property {
                    notes.append(
                        Plan.Note(
                            entity: name, property: property,
                            "named '\(deck)' in Deck (spec 5.7's naming rules)"))
                }
                map[property] = deck
            }
            takenProperties[name] = taken
            names.properties[name] = map
        }

        // Tables, and the columns of each hierarchy.
        var tableOf: [String: String] = [:]
        var columnsOf: [String: Set<String>] = [:]
        var assigned: [String: [String: String]] = [:]  // entity -> property -> column
        for root in roots {
            let expected = "Z" + root.uppercased()
            guard let table = table(expected) else {
                throw CoreDataError(
                    .badStoreTable,
                    "\(path): the store has no table \(expected) for the entity '\(root)' and its subentities"
                )
            }
            let columns = Set(try self.columns(of: table).map { $0.name.uppercased() })
            var counts: [String: Int] = [:]
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
                    assigned[name, default: [:]][property] = count == 0 ? base : base + String(count)
                }
            }
        }

        // Ordered to-many relationships whose inverse is a to-one: a generated order attribute on
        // the entity declaring the inverse.
        var generated: [String: [(attribute: StoreSchema.Attribute, column: Plan.AttributeColumn)]] = [:]
        for name in order {
            guard let entity = byName[name] else { continue }
            for relationship in entity.relationships where relationship.isOrdered && !relationship.isTransient
            {
                guard let inverseName = relationship.inverseName,
                    let destination = byName[relationship.destinationEntityName],
                    let inverse = destination.relationship(named: inverseName), !inverse.isToMany
                else { continue }
                guard let foreignKey = assigned[destination.name]?[inverse.name] else { continue }
                let column = "Z_FOK_" + foreignKey.dropFirst()
                guard columnsOf[destination.name]?.contains(column) == true else {
                    notes.append(
                        Plan.Note(
                            entity: name, property: relationship.name,
                            "ordered, but the store has no \(column) column: the order is not kept"))
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
                notes.append(
                    Plan.Note(
                        entity: name, property: relationship.name,
                        "ordered: Deck's to-many relationships are sets, so the position of each "
                            + "\(destination.name) is kept in the generated integer attribute "
                            + "\(names.entities[destination.name] ?? destination.name).\(attributeName) "
                            + "(Core Data's \(column) as stored; sort ascending for the order)"))
            }
        }

        // Entities.
        var schemaEntities: [StoreSchema.Entity] = []
        var plans: [Plan.EntityPlan] = []
        var joinTables: [Plan.JoinTable] = []
        var columnsByEntity: [String: [Plan.AttributeColumn]] = [:]
        for name in order {
            guard let entity = byName[name], let deckName = names.entities[name], let table = tableOf[name],
                let number = numbers[name]
            else { continue }
            let propertyNames = names.properties[name] ?? [:]
            let columns = columnsOf[name] ?? []
            var attributes: [StoreSchema.Attribute] = []
            var attributeColumns = entity.parentName.flatMap { columnsByEntity[$0] } ?? []
            for attribute in entity.attributes {
                let deck = propertyNames[attribute.name] ?? attribute.name
                if attribute.isTransient {
                    notes.append(
                        Plan.Note(
                            entity: name, property: attribute.name, "transient (not stored): not imported"))
                    continue
                }
                guard let type = mapType(attribute, entity: name) else { continue }
                guard let column = assigned[name]?[attribute.name], columns.contains(column) else {
                    throw CoreDataError(
                        .badStoreTable,
                        "\(path): the table \(table) has no column \(assigned[name]?[attribute.name] ?? "?") "
                            + "for the attribute \(name).\(attribute.name)")
                }
                var options: StoreSchema.Attribute.Options = []
                let external =
                    attribute.allowsExternalBinaryDataStorage
                    && (attribute.type == .binaryData || attribute.type == .transformable)
                if external && type == .data { options.insert(.externalStorage) }
                var result = StoreSchema.Attribute(
                    deck, type, isOptional: attribute.isOptional, options: options,
                    originalName: renamed(attribute.renamingIdentifier, from: attribute.name))
                if let value = attribute.defaultValue {
                    result.defaultValue = defaultValue(
                        value, type: type, entity: name, attribute: attribute.name)
                    if result.defaultValue != nil, let problem = result.defaultProblem {
                        notes.append(
                            Plan.Note(
                                entity: name, property: attribute.name,
                                "the default value is left out: \(problem)"))
                        result.defaultValue = nil
                    }
                }
                attributes.append(result)
                attributeColumns.append(
                    Plan.AttributeColumn(
                        name: deck, coreDataName: attribute.name, column: column,
                        coreDataType: attribute.type,
                        type: type, usesExternalStorageEncoding: external))
            }
            for (attribute, column) in generated[name] ?? [] {
                attributes.append(attribute)
                attributeColumns.append(column)
            }
            columnsByEntity[name] = attributeColumns

            var relationships: [StoreSchema.Relationship] = []
            var toOnes: [Plan.ToOneColumn] = []
            for relationship in entity.relationships {
                let deck = propertyNames[relationship.name] ?? relationship.name
                if relationship.isTransient {
                    notes.append(
                        Plan.Note(
                            entity: name, property: relationship.name, "transient (not stored): not imported")
                    )
                    continue
                }
                guard let destination = byName[relationship.destinationEntityName],
                    let destinationName = names.entities[destination.name]
                else {
                    throw CoreDataError(
                        .badModel,
                        "\(path): the relationship \(name).\(relationship.name) leads to the entity "
                            + "'\(relationship.destinationEntityName)', which the model does not describe")
                }
                // The inverse is declared by the destination or inherited from one of its ancestors.
                let inverseOwner = relationship.inverseName.flatMap { inverseName in
                    ancestry(destination.name, byName).last {
                        byName[$0]?.relationship(named: inverseName) != nil
                    }
                }
                let inverse = inverseOwner.flatMap { owner in
                    relationship.inverseName.flatMap { byName[owner]?.relationship(named: $0) }
                }
                if let inverseName = relationship.inverseName, inverse == nil {
                    throw CoreDataError(
                        .badModel,
                        "\(path): the relationship \(name).\(relationship.name) names the inverse "
                            + "'\(inverseName)', which \(destination.name) neither declares nor inherits")
                }
                if let inverse, inverse.name == relationship.name, destination.name == name {
                    notes.append(
                        Plan.Note(
                            entity: name, property: relationship.name,
                            "its own inverse (a symmetric relationship), which Deck cannot store: not imported"
                        ))
                    continue
                }
                let rule: StoreSchema.DeleteRule =
                    switch relationship.deleteRule {
                    case .noAction: .noAction
                    case .nullify: .nullify
                    case .cascade: .cascade
                    case .deny: .deny
                    }
                relationships.append(
                    StoreSchema.Relationship(
                        deck, to: destinationName, toMany: relationship.isToMany,
                        inverse: inverse.flatMap { names.properties[destination.name]?[$0.name] },
                        deleteRule: rule,
                        originalName: renamed(relationship.renamingIdentifier, from: relationship.name)))
                if relationship.minCount > 0 || (relationship.maxCount > 1 && relationship.isToMany) {
                    notes.append(
                        Plan.Note(
                            entity: name, property: relationship.name,
                            "the count limits (\(relationship.minCount)…\(relationship.maxCount == 0 ? "any" : String(relationship.maxCount))) are not enforced by Deck"
                        ))
                }
                if !relationship.isToMany {
                    guard let column = assigned[name]?[relationship.name], columns.contains(column) else {
                        if let inverse, !inverse.isToMany { continue }  // the other side holds the key
                        throw CoreDataError(
                            .badStoreTable,
                            "\(path): the table \(table) has no column \(assigned[name]?[relationship.name] ?? "?") "
                                + "for the to-one relationship \(name).\(relationship.name)")
                    }
                    // A one-to-one whose key Core Data keeps on both sides is read once, from the side
                    // Deck stores it on (spec 6.5: the smaller key, entity.relationship in byte order).
                    if let inverse, let owner = inverseOwner, !inverse.isToMany,
                        let other = assigned[owner]?[inverse.name], columnsOf[owner]?.contains(other) == true
                    {
                        let mine = Array("\(deckName).\(deck)".utf8)
                        let theirs = Array(
                            "\(names.entities[owner] ?? owner).\(names.properties[owner]?[inverse.name] ?? inverse.name)"
                                .utf8)
                        if !mine.lexicographicallyPrecedes(theirs) { continue }
                    }
                    toOnes.append(
                        Plan.ToOneColumn(
                            name: deck, coreDataName: relationship.name, column: column,
                            destination: destinationName))
                    if !relationship.isOptional {
                        notes.append(
                            Plan.Note(
                                entity: name, property: relationship.name,
                                "required in the model; Deck's to-one relationships are always optional"))
                    }
                } else if inverse == nil || inverse?.isToMany == true {
                    if let join = try joinTable(
                        entity: entity, relationship: relationship, inverse: inverse,
                        destination: destination,
                        names: names, numbers: numbers, children: children)
                    {
                        joinTables.append(join)
                    }
                    if relationship.isOrdered {
                        notes.append(
                            Plan.Note(
                                entity: name, property: relationship.name,
                                "ordered many-to-many: Deck keeps the links as a set, so the order is not kept"
                                    + " (the links are loaded in Core Data's order)"))
                    }
                }
            }

            func mapNames(_ list: [String], what: String) -> [String]? {
                var result: [String] = []
                for property in list {
                    let isAttribute =
                        columnsByEntity[name]?.contains {
                            $0.coreDataName == property && !$0.column.hasPrefix("Z_FOK_")
                        } ?? false
                    let isToOne = ancestry(name, byName).contains { owner in
                        guard let relationship = byName[owner]?.relationship(named: property) else {
                            return false
                        }
                        return !relationship.isToMany && !relationship.isTransient
                            && (assigned[owner]?[property]).map(columns.contains) == true
                    }
                    let isStored = isAttribute || isToOne
                    guard isStored, let deck = propertyNames[property] else {
                        notes.append(
                            Plan.Note(
                                entity: name,
                                "the \(what) on \(list.joined(separator: ", ")) is left out: '\(property)' is not "
                                    + "a stored attribute or to-one relationship of the entity"))
                        return nil
                    }
                    result.append(deck)
                }
                return result.isEmpty ? nil : result
            }
            let constraints = entity.uniquenessConstraints.compactMap {
                mapNames($0, what: "uniqueness constraint")
            }
            let indexes = entity.indexes.compactMap { mapNames($0.propertyNames, what: "index") }
            for other in entity.otherProperties {
                notes.append(
                    Plan.Note(
                        entity: name, property: other.name,
                        "a \(other.className) (not stored data): not imported"))
            }
            if entity.isAbstract {
                notes.append(
                    Plan.Note(
                        entity: name,
                        "abstract in the model; Deck has no abstract entities, so it is an entity with no records of its own"
                    ))
            }
            schemaEntities.append(
                StoreSchema.Entity(
                    deckName, superentity: entity.parentName.flatMap { names.entities[$0] },
                    attributes: attributes,
                    relationships: relationships, uniqueConstraints: constraints, indexes: indexes,
                    originalName: renamed(entity.renamingIdentifier, from: entity.name)))
            var all = [number]
            var queue = children[name] ?? []
            while let next = queue.popLast() {
                if let n = numbers[next] { all.append(n) }
                queue += children[next] ?? []
            }
            let root = ancestry(name, byName).first ?? name
            plans.append(
                Plan.EntityPlan(
                    name: deckName, coreDataName: name, root: names.entities[root] ?? root, table: table,
                    number: number, numbers: all.sorted(), isAbstract: entity.isAbstract,
                    attributes: attributeColumns, toOnes: toOnes))
        }

        var hierarchies: [Plan.Hierarchy] = []
        for root in roots {
            guard let table = tableOf[root] else { continue }
            let members = Set(preorder(root))
            let maximum =
                store.entities.filter { members.contains($0.name) }.map(\.maximumPrimaryKey).max() ?? 0
            hierarchies.append(
                Plan.Hierarchy(
                    root: names.entities[root] ?? root, coreDataRoot: root, table: table,
                    maximumPrimaryKey: max(
                        maximum, try scan(table, numbers: Set(members.compactMap { numbers[$0] })))))
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
            schema: schema, notes: notes, entities: plans, joinTables: joinTables, hierarchies: hierarchies,
            storeUUID: store.metadata.uuid ?? "")
    }

    func ancestry(_ name: String, _ byName: [String: CoreDataEntity]) -> [String] {
        var chain: [String] = []
        var next: String? = name
        while let current = next, !chain.contains(current) {
            chain.insert(current, at: 0)
            next = byName[current]?.parentName
        }
        return chain
    }

    /// The renaming identifier as Deck's `originalName`: nil when it is the name itself.
    func renamed(_ identifier: String?, from name: String) -> String? {
        guard let identifier, !identifier.isEmpty, identifier != name else { return nil }
        return Plan.deckName(identifier)
    }

    /// The Deck type of `attribute`, noting approximations; nil (noted) when it is not imported.
    mutating func mapType(_ attribute: CoreDataAttribute, entity: String) -> StoreSchema.AttributeType? {
        func note(_ reason: String) {
            notes.append(Plan.Note(entity: entity, property: attribute.name, reason))
        }
        switch attribute.type {
        case .integer16, .integer32:
            note(
                "a \(attribute.type == .integer16 ? 16 : 32)-bit integer, imported as a 64-bit integer: "
                    + "its range is not enforced")
            return .integer
        case .integer64: return .integer
        case .decimal:
            note(
                "a decimal: Core Data's SQLite store keeps it as a binary64, so it is imported as that number"
            )
            return .decimal
        case .double: return .double
        case .float:
            note("a 32-bit float, imported as a double (the value is unchanged)")
            return .double
        case .string: return .string
        case .boolean: return .bool
        case .date: return .date
        case .binaryData: return .data
        case .uuid: return .uuid
        case .uri: return .url
        case .transformable:
            note(
                "transformable (value transformer \(attribute.valueTransformerName ?? "the default, NSKeyedUnarchiveFromData")): "
                    + "kept as its archived bytes, a data attribute")
            return .data
        case .objectID:
            note("an object ID attribute: not imported (Deck has no such type)")
            return nil
        case .composite:
            note("a composite attribute: not imported (Deck has no such type)")
            return nil
        default:
            note("of type \(attribute.type), which Deck has no form for: not imported")
            return nil
        }
    }

    /// The model's default as a Deck value of `type`, or nil (noted).
    mutating func defaultValue(
        _ value: CoreDataDefaultValue, type: StoreSchema.AttributeType, entity: String, attribute: String
    ) -> Value? {
        let result: Value? =
            switch (value, type) {
            case (.integer(let v), .integer): .integer(v)
            case (.bool(let v), .integer): .integer(v ? 1 : 0)
            case (.real(let v), .integer) where v.rounded() == v && abs(v) < 9.2e18: .integer(Int64(v))
            case (.integer(let v), .double): .double(Double(v))
            case (.real(let v), .double): .double(v)
            case (.bool(let v), .bool): .bool(v)
            case (.integer(let v), .bool) where v == 0 || v == 1: .bool(v == 1)
            case (.integer(let v), .decimal): .decimal(Decimal(v))
            case (.real(let v), .decimal):
                Decimal(string: "\(v)", locale: Locale(identifier: "en_US_POSIX")).map(Value.decimal)
            case (.string(let v), .string): .string(v)
            case (.date(let v), .date): .date(v)
            case (.data(let v), .data): .data(v)
            case (.uuid(let v), .uuid): .uuid(v)
            case (.url(let v), .url): URL(string: v).map(Value.url)
            default: nil
            }
        if result == nil {
            notes.append(
                Plan.Note(
                    entity: entity, property: attribute,
                    "the default value (\(value)) has no Deck form for a \(type.rawValue) attribute: left out"
                ))
        }
        return result
    }

    /// The join table of many-to-many `relationship` (or a to-many without an inverse), or nil
    /// when the pair is read from the inverse's side.
    func joinTable(
        entity: CoreDataEntity, relationship: CoreDataRelationship, inverse: CoreDataRelationship?,
        destination: CoreDataEntity, names: Names, numbers: [String: Int64], children: [String: [String]]
    ) throws(CoreDataError) -> Plan.JoinTable? {
        func hierarchy(_ name: String) -> Set<Int64> {
            var result: Set<Int64> = []
            var queue = [name]
            while let next = queue.popLast() {
                if let number = numbers[next] { result.insert(number) }
                queue += children[next] ?? []
            }
            return result
        }
        guard let number = numbers[entity.name] else { return nil }
        let own = "Z_\(number)" + relationship.name.uppercased()
        guard let table = table(own) else {
            if let inverse, let other = numbers[destination.name],
                self.table("Z_\(other)" + inverse.name.uppercased()) != nil
            {
                return nil
            }
            throw CoreDataError(
                .badStoreTable,
                "\(path): the store has no join table \(own) for the to-many relationship "
                    + "\(entity.name).\(relationship.name)"
                    + (inverse.map {
                        " (nor Z_\(numbers[destination.name] ?? 0)\($0.name.uppercased()) for its inverse)"
                    }
                        ?? ""))
        }
        let columns = try self.columns(of: table).map { $0.name.uppercased() }
        func parse(_ column: String) -> (number: Int64, name: String)? {
            guard column.hasPrefix("Z_"), !column.hasPrefix("Z_FOK_") else { return nil }
            let rest = column.dropFirst(2)
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, let value = Int64(digits) else { return nil }
            var name = String(rest.dropFirst(digits.count))
            while let last = name.last, last.isASCII, last.isNumber { name.removeLast() }
            return (value, name)
        }
        let destinationNumbers = hierarchy(destination.name)
        let sourceNumbers = hierarchy(entity.name)
        let destinationColumn = columns.first { column in
            parse(column).map {
                $0.name == relationship.name.uppercased() && destinationNumbers.contains($0.number)
            }
                ?? false
        }
        let sourceColumn = columns.first { column in
            guard column != destinationColumn, let parsed = parse(column) else { return false }
            if let inverse {
                return parsed.name == inverse.name.uppercased() && sourceNumbers.contains(parsed.number)
            }
            return true
        }
        guard let destinationColumn, let sourceColumn else {
            throw CoreDataError(
                .badStoreTable,
                "\(path): the join table \(table) of \(entity.name).\(relationship.name) lacks the columns "
                    + "Core Data gives it (Z_<n>\(relationship.name.uppercased()) and "
                    + "Z_<n>\(inverse?.name.uppercased() ?? "…")); it has \(columns.joined(separator: ", "))")
        }
        var order: String?
        var orderBy = [sourceColumn, destinationColumn]
        if relationship.isOrdered {
            order = "Z_FOK_" + destinationColumn.dropFirst(2)
        } else if inverse?.isOrdered == true {
            order = "Z_FOK_" + sourceColumn.dropFirst(2)
            orderBy = [destinationColumn, sourceColumn]
        }
        if let candidate = order {
            if columns.contains(candidate) {
                orderBy.insert(candidate, at: 1)
            } else {
                order = nil
            }
        }
        return Plan.JoinTable(
            entity: names.entities[entity.name] ?? entity.name,
            relationship: names.properties[entity.name]?[relationship.name] ?? relationship.name,
            table: table, sourceColumn: sourceColumn, destinationColumn: destinationColumn,
            orderColumn: order,
            orderBy: orderBy)
    }

    // MARK: - Without a model

    mutating func buildFromTables() throws(CoreDataError) -> Plan {
        notes.append(
            Plan.Note(
                "the store has no model cache (Z_MODELCACHE): the schema is inferred from the tables. Every "
                    + "attribute is optional and has no default; an INTEGER column may have been a boolean, a "
                    + "16- or 32-bit integer or a to-one relationship, and is imported as an integer; "
                    + "relationships, join tables, constraints, indexes and renamings are not known and not "
                    + "imported; a subentity's columns are attributes of its hierarchy's root"))
        let stored = store.entities.filter { !$0.isPersistentHistory }
        var takenEntities = Set<String>()
        var names: [Int64: String] = [:]
        for entity in stored {
            names[entity.number] = Plan.unique(Plan.deckName(entity.name), in: &takenEntities)
        }
        var schemaEntities: [StoreSchema.Entity] = []
        var plans: [Plan.EntityPlan] = []
        var hierarchies: [Plan.Hierarchy] = []
        var rootColumns: [Int64: [Plan.AttributeColumn]] = [:]
        func root(_ entity: CoreDataStoreEntity) -> CoreDataStoreEntity {
            var current = entity
            var seen: Set<Int64> = []
            while current.parentNumber != 0, !seen.contains(current.number),
                let parent = store.entity(number: current.parentNumber)
            {
                seen.insert(current.number)
                current = parent
            }
            return current
        }
        // Parents before children.
        func depth(_ entity: CoreDataStoreEntity) -> Int {
            var count = 0
            var current = entity
            while current.parentNumber != 0, count < stored.count,
                let parent = store.entity(number: current.parentNumber)
            {
                count += 1
                current = parent
            }
            return count
        }
        for entity in stored.sorted(by: { (depth($0), $0.number) < (depth($1), $1.number) }) {
            guard let deckName = names[entity.number] else { continue }
            let rootEntity = root(entity)
            let expected = "Z" + rootEntity.name.uppercased()
            guard let table = table(expected) else {
                throw CoreDataError(
                    .badStoreTable,
                    "\(path): the store has no table \(expected) for the entity '\(rootEntity.name)'")
            }
            var attributes: [StoreSchema.Attribute] = []
            if entity.parentNumber == 0 {
                var taken = Set<String>()
                var columns: [Plan.AttributeColumn] = []
                for (column, declared) in try self.columns(of: table) {
                    let upper = column.uppercased()
                    guard upper.hasPrefix("Z"), !["Z_PK", "Z_ENT", "Z_OPT"].contains(upper),
                        !upper.hasPrefix("Z_FOK_")
                    else { continue }
                    let (coreType, type): (CoreDataAttributeType, StoreSchema.AttributeType) =
                        switch declared {
                        case "INTEGER": (.integer64, .integer)
                        case "FLOAT", "REAL", "DOUBLE": (.double, .double)
                        case "DECIMAL": (.decimal, .decimal)
                        case "TIMESTAMP": (.date, .date)
                        case "BLOB": (.binaryData, .data)
                        default: (.string, .string)
                        }
                    let name = Plan.unique(Plan.deckName(String(upper.dropFirst()).lowercased()), in: &taken)
                    attributes.append(StoreSchema.Attribute(name, type, isOptional: true))
                    columns.append(
                        Plan.AttributeColumn(
                            name: name, coreDataName: name, column: column, coreDataType: coreType,
                            type: type,
                            usesExternalStorageEncoding: false))
                }
                rootColumns[entity.number] = columns
                hierarchies.append(
                    Plan.Hierarchy(
                        root: deckName, coreDataRoot: entity.name, table: table,
                        maximumPrimaryKey: max(
                            stored.filter { root($0).number == entity.number }.map(\.maximumPrimaryKey).max()
                                ?? 0,
                            try scan(
                                table,
                                numbers: Set(stored.filter { root($0).number == entity.number }.map(\.number))
                            ))))
            }
            var all: [Int64] = []
            for other in stored {
                var current: CoreDataStoreEntity? = other
                var steps = 0
                while let c = current, steps <= stored.count {
                    if c.number == entity.number {
                        all.append(other.number)
                        break
                    }
                    current = c.parentNumber == 0 ? nil : store.entity(number: c.parentNumber)
                    steps += 1
                }
            }
            schemaEntities.append(
                StoreSchema.Entity(
                    deckName, superentity: entity.parentNumber == 0 ? nil : names[entity.parentNumber],
                    attributes: attributes))
            plans.append(
                Plan.EntityPlan(
                    name: deckName, coreDataName: entity.name,
                    root: names[rootEntity.number] ?? rootEntity.name,
                    table: table, number: entity.number, numbers: all.sorted(), isAbstract: false,
                    attributes: rootColumns[rootEntity.number] ?? [], toOnes: []))
        }
        let schema = StoreSchema(entities: schemaEntities)
        do {
            try schema.validate()
        } catch {
            throw CoreDataError(
                .badStoreTable, "\(path): the tables do not make a valid Deck schema: \(error.description)")
        }
        return Plan(
            schema: schema, notes: notes, entities: plans, joinTables: [], hierarchies: hierarchies,
            storeUUID: store.metadata.uuid ?? "")
    }
}
