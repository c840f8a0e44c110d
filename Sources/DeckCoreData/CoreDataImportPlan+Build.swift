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
        try checkEntityTree()
        var builder = ImportPlanBuilder(store: self)
        return try builder.build()
    }

    /// Refuses, in time linear in its size and before anything costs more, a `Z_PRIMARYKEY` no
    /// Deck schema can follow: more entities than a schema may have, a parent that is not listed,
    /// a cycle of parents, or a chain deeper than a schema's inheritance may go (spec 5.9).
    func checkEntityTree() throws(CoreDataError) {
        let stored = entities.filter { !$0.isPersistentHistory }
        let limit = StoreSchema.Limits.entities
        guard stored.count <= limit else {
            throw CoreDataError(
                .badModel,
                "\(sourceURL.path): Z_PRIMARYKEY lists \(stored.count) entities; a schema has at most \(limit)"
            )
        }
        var parents: [Int64: Int64] = [:]
        for entity in stored { parents[entity.number] = entity.parentNumber }
        // Each entity's depth, found once: a walk up to an entity whose depth is known.
        var depths: [Int64: Int] = [:]
        for entity in stored where depths[entity.number] == nil {
            var chain: [Int64] = []
            var onChain: Set<Int64> = []
            var current = entity.number
            var base = 0
            while true {
                if let known = depths[current] {
                    base = known
                    break
                }
                guard onChain.insert(current).inserted else {
                    throw CoreDataError(
                        .badModel,
                        "\(sourceURL.path): Z_PRIMARYKEY's parents (Z_SUPER) form a cycle through entity \(current)"
                    )
                }
                chain.append(current)
                guard let parent = parents[current] else {
                    throw CoreDataError(
                        .badModel,
                        "\(sourceURL.path): Z_PRIMARYKEY names a parent (Z_SUPER) \(current) that it does not list"
                    )
                }
                if parent == 0 { break }
                current = parent
            }
            for (offset, number) in chain.reversed().enumerated() { depths[number] = base + offset + 1 }
            if let deepest = depths[entity.number], deepest > StoreSchema.Limits.inheritanceDepth {
                throw CoreDataError(
                    .badModel,
                    "\(sourceURL.path): the entity \(entity.name) is \(deepest) levels deep in its inheritance chain; "
                        + "a schema goes at most \(StoreSchema.Limits.inheritanceDepth) deep")
            }
        }
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
        // A table of an entity noted above is not noted again: SwiftData lists the history as the
        // entities CHANGE, TRANSACTION and TRANSACTIONSTRING, kept in the tables A<NAME>.
        let noted = Set(
            store.entities.filter(\.isPersistentHistory).flatMap {
                [$0.name.uppercased(), "A" + $0.name.uppercased()]
            })
        for name in ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"]
        where table(name) != nil && !noted.contains(name) {
            notes.append(Plan.Note("the table \(name) (SwiftData's persistent history) is not imported"))
        }
        if store.metadata.uuid?.isEmpty ?? true {
            notes.append(
                Plan.Note(
                    "the store has no Z_UUID: the records' global ids are derived from an empty store id, "
                        + "so another store without one gives its rows the same ids"))
        }
        if let model = store.model {
            var builder = ModelPlanBuilder(context: self, model: model)
            return try builder.build()
        }
        return try buildFromTables()
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
        destination: CoreDataEntity, names: ModelPlanBuilder.Names, numbers: [String: Int64],
        children: [String: [String]]
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
        // `Z_<entity number><NAME>`, where Core Data may add digits to tell clashing names apart
        // (`Z_4PARENTS1`): the name as written and without them, for a name that ends in digits.
        func parse(_ column: String) -> (number: Int64, names: Set<String>)? {
            guard column.hasPrefix("Z_"), !column.hasPrefix("Z_FOK_") else { return nil }
            let rest = column.dropFirst(2)
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, let value = Int64(digits) else { return nil }
            let written = String(rest.dropFirst(digits.count))
            var name = written
            while let last = name.last, last.isASCII, last.isNumber { name.removeLast() }
            return (value, [written, name])
        }
        let destinationNumbers = hierarchy(destination.name)
        let sourceNumbers = hierarchy(entity.name)
        let destinationColumn = columns.first { column in
            parse(column).map {
                $0.names.contains(relationship.name.uppercased()) && destinationNumbers.contains($0.number)
            }
                ?? false
        }
        let sourceColumn = columns.first { column in
            guard column != destinationColumn, let parsed = parse(column) else { return false }
            if let inverse {
                return parsed.names.contains(inverse.name.uppercased())
                    && sourceNumbers.contains(parsed.number)
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
            let name = Plan.unique(Plan.deckName(entity.name), in: &takenEntities)
            if name != entity.name {
                notes.append(
                    Plan.Note(entity: entity.name, "named '\(name)' in Deck (spec 5.7's naming rules)"))
            }
            names[entity.number] = name
        }
        var schemaEntities: [StoreSchema.Entity] = []
        var plans: [Plan.EntityPlan] = []
        var hierarchies: [Plan.Hierarchy] = []
        var rootColumns: [Int64: [Plan.AttributeColumn]] = [:]
        // Parents before children.
        let store = self.store
        let depth = { (entity: CoreDataStoreEntity) in Self.ancestors(of: entity, in: store).count }
        let root = { (entity: CoreDataStoreEntity) in Self.ancestors(of: entity, in: store).last ?? entity }
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
                let columns: [Plan.AttributeColumn]
                (attributes, columns) = try inferredAttributes(of: table)
                rootColumns[entity.number] = columns
                let members = stored.filter { root($0).number == entity.number }
                hierarchies.append(
                    Plan.Hierarchy(
                        root: deckName, coreDataRoot: entity.name, table: table,
                        maximumPrimaryKey: max(
                            members.map(\.maximumPrimaryKey).max() ?? 0,
                            try scan(table, numbers: Set(members.map(\.number))))))
            }
            let all = stored.filter { isBelow($0, entity, steps: stored.count) }.map(\.number)
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

    /// Whether `entity` is `ancestor` or below it (following at most `steps` parents).
    func isBelow(_ entity: CoreDataStoreEntity, _ ancestor: CoreDataStoreEntity, steps: Int) -> Bool {
        var current: CoreDataStoreEntity? = entity
        var count = 0
        while let c = current, count <= steps {
            if c.number == ancestor.number { return true }
            current = c.parentNumber == 0 ? nil : store.entity(number: c.parentNumber)
            count += 1
        }
        return false
    }

    /// Attributes inferred from a table's columns by their declared types, named by the column
    /// without its `Z`, lowercased (Core Data's columns keep no case).
    func inferredAttributes(of table: String) throws(CoreDataError)
        -> ([StoreSchema.Attribute], [Plan.AttributeColumn])
    {
        var taken = Set<String>()
        var attributes: [StoreSchema.Attribute] = []
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
                    name: name, coreDataName: name, column: column, coreDataType: coreType, type: type,
                    usesExternalStorageEncoding: false))
        }
        return (attributes, columns)
    }

    /// The parent of `entity`, its parent and so on, as `Z_PRIMARYKEY` gives them (stopping at
    /// a cycle, which a later check refuses).
    static func ancestors(of entity: CoreDataStoreEntity, in store: CoreDataStore) -> [CoreDataStoreEntity] {
        var result: [CoreDataStoreEntity] = []
        var current = entity
        while current.parentNumber != 0, result.count <= store.entities.count,
            let parent = store.entity(number: current.parentNumber), parent.number != entity.number
        {
            result.append(parent)
            current = parent
        }
        return result
    }
}
