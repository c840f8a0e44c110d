import Foundation

/// A schema checked for what its mapping to tables needs (spec section 5 and
/// ``StoreSchema/Limits``): entity and property names valid and distinct without regard to case,
/// inheritance a tree of bounded depth, sizes within the limits, attribute options that fit
/// their types, and relationships whose destinations exist and whose inverses pair up. It keeps
/// what the checks found out (positions, parents, roots, each relationship's inverse), which
/// ``SchemaMapping`` builds the tables from. Entities are referred to by their position in the
/// schema.
struct SchemaValidation {
    /// The entities, in schema order.
    let declared: [Entity]
    /// Each entity's position, by exact name.
    private(set) var position: [String: Int] = [:]
    /// Each entity's parent.
    private(set) var parent: [Int?]
    /// Each entity's depth in its hierarchy: 1 for a root.
    private(set) var depth: [Int]
    /// Every entity, parents before children (by depth, stably).
    private(set) var byDepth: [Int] = []
    /// The root of each entity's hierarchy (whose name is its table's).
    private(set) var rootOf: [Int]
    /// Each entity's declared attributes and relationships, by exact name.
    private(set) var declaredAttributes: [[String: Int]]
    private(set) var declaredRelationships: [[String: Int]]
    /// Each entity's declared relationships by the inverse they name.
    private(set) var namingInverse: [[String: [Int]]]
    /// The inverse of each declared relationship (by entity, then position): its declarer and
    /// position, or nil for none.
    private(set) var inverses: [[(entity: Int, offset: Int)?]]

    init(_ schema: StoreSchema) throws(DeckError) {
        declared = schema.entities
        let count = declared.count
        guard count <= StoreSchema.Limits.entities else {
            throw DeckError.invalidSchema(
                "the schema has \(count) entities; at most \(StoreSchema.Limits.entities) are allowed")
        }
        parent = [Int?](repeating: nil, count: count)
        depth = [Int](repeating: 0, count: count)  // 0: not known yet
        rootOf = [Int](repeating: 0, count: count)
        declaredAttributes = [[String: Int]](repeating: [:], count: count)
        declaredRelationships = [[String: Int]](repeating: [:], count: count)
        namingInverse = [[String: [Int]]](repeating: [:], count: count)
        inverses = [[(entity: Int, offset: Int)?]](repeating: [], count: count)
        try checkEntityNames()
        try resolveInheritance()
        try checkSizes()
        try checkPropertyNames()
        try checkAttributes()
        try resolveInverses()
        try checkInversesPairUp()
    }

    // MARK: Checks, in order

    /// Names: valid, and unique without regard to case. Positions by exact name.
    private mutating func checkEntityNames() throws(DeckError) {
        var lowercased: Set<String> = []
        for (index, entity) in declared.enumerated() {
            guard SchemaMapping.isValidName(entity.name) else {
                throw DeckError.invalidSchema(
                    "entity name '\(entity.name)' must be ASCII letters, digits and '_', start with a letter, "
                        + "and not start with 'deck_' or 'sqlite_'")
            }
            guard lowercased.insert(entity.name.lowercased()).inserted else {
                throw DeckError.invalidSchema(
                    "entity '\(entity.name)' is declared twice (names are case-insensitive)")
            }
            position[entity.name] = index
        }
    }

    /// Inheritance: each entity's parent and depth, refusing unknown parents and cycles. Every
    /// entity is walked once: a walk stops at the first entity whose depth is already known.
    private mutating func resolveInheritance() throws(DeckError) {
        let count = declared.count
        var onPath = [Bool](repeating: false, count: count)
        for start in 0..<count where depth[start] == 0 {
            var path: [Int] = []
            var current = start
            var base = 0
            while true {
                guard let parentName = declared[current].superentity else {
                    base = 0
                    path.append(current)
                    break
                }
                guard let parentIndex = position[parentName] else {
                    throw DeckError.invalidSchema(
                        "entity '\(declared[current].name)' inherits from unknown entity '\(parentName)'")
                }
                parent[current] = parentIndex
                path.append(current)
                onPath[current] = true
                if onPath[parentIndex] {
                    throw DeckError.invalidSchema(
                        "entity '\(parentName)' inherits from itself through '\(declared[current].name)'")
                }
                if depth[parentIndex] != 0 {
                    base = depth[parentIndex]
                    break
                }
                current = parentIndex
            }
            for (offset, index) in path.reversed().enumerated() {
                depth[index] = base + offset + 1
                onPath[index] = false
            }
        }
        if let deepest = depth.indices.max(by: { depth[$0] < depth[$1] }),
            depth[deepest] > StoreSchema.Limits.inheritanceDepth
        {
            throw DeckError.invalidSchema(
                "entity '\(declared[deepest].name)' is \(depth[deepest]) levels deep in the inheritance "
                    + "chain from '\(declared[root(of: deepest)].name)'; at most "
                    + "\(StoreSchema.Limits.inheritanceDepth) levels are allowed")
        }
        // Parents before children: by depth, stably.
        byDepth = (0..<count).sorted { depth[$0] < depth[$1] || (depth[$0] == depth[$1] && $0 < $1) }
        for index in byDepth { rootOf[index] = parent[index].map { rootOf[$0] } ?? index }
    }

    /// Sizes, before anything grows with them.
    private func checkSizes() throws(DeckError) {
        var hierarchyProperties: [Int: Int] = [:]
        var expanded = [Int](repeating: 0, count: declared.count)
        for index in byDepth {
            let entity = declared[index]
            let own = entity.attributes.count + entity.relationships.count
            hierarchyProperties[rootOf[index], default: 0] += own
            expanded[index] = (parent[index].map { expanded[$0] } ?? 0) + own + entity.uniqueConstraints.count
            let indexes = entity.uniqueConstraints.count + entity.indexes.count
            guard indexes <= StoreSchema.Limits.indexesPerEntity else {
                throw DeckError.invalidSchema(
                    "entity '\(entity.name)' declares \(indexes) unique constraints and indexes; at most "
                        + "\(StoreSchema.Limits.indexesPerEntity) are allowed")
            }
            for group in entity.uniqueConstraints + entity.indexes
            where group.count > StoreSchema.Limits.propertiesPerIndex {
                throw DeckError.invalidSchema(
                    "'\(entity.name)': a unique constraint or index names \(group.count) properties; at most "
                        + "\(StoreSchema.Limits.propertiesPerIndex) are allowed")
            }
        }
        for (rootIndex, properties) in hierarchyProperties.sorted(by: { $0.key < $1.key })
        where properties > StoreSchema.Limits.propertiesPerHierarchy {
            throw DeckError.invalidSchema(
                "the entities of hierarchy '\(declared[rootIndex].name)' (table '\(declared[rootIndex].name)') "
                    + "declare \(properties) properties; at most \(StoreSchema.Limits.propertiesPerHierarchy) are "
                    + "allowed in one hierarchy")
        }
        let expandedTotal = expanded.reduce(0, +)
        guard expandedTotal <= StoreSchema.Limits.expandedProperties else {
            throw DeckError.invalidSchema(
                "counting inherited ones, the entities have \(expandedTotal) properties and unique constraints "
                    + "in all; at most \(StoreSchema.Limits.expandedProperties) are allowed (subentities repeat what "
                    + "they inherit)")
        }
    }

    /// Declared properties by exact name, per entity; relationships also by the inverse they name.
    private mutating func checkPropertyNames() throws(DeckError) {
        var foldedNames = [Set<String>](repeating: [], count: declared.count)
        for index in byDepth {
            let entity = declared[index]
            for name in entity.attributes.map(\.name) + entity.relationships.map(\.name) {
                guard SchemaMapping.isValidName(name) else {
                    throw DeckError.invalidSchema(
                        "'\(entity.name).\(name)': property names must be ASCII letters, digits and '_', "
                            + "start with a letter, and not start with 'deck_'")
                }
                // Unique within the entity, inherited ones included, without regard to case.
                let folded = name.lowercased()
                var ancestor = parent[index]
                var inherited = false
                while let current = ancestor, !inherited {
                    inherited = foldedNames[current].contains(folded)
                    ancestor = parent[current]
                }
                guard !inherited, foldedNames[index].insert(folded).inserted else {
                    throw DeckError.invalidSchema("'\(entity.name).\(name)' is declared twice")
                }
            }
            for (offset, attribute) in entity.attributes.enumerated() {
                declaredAttributes[index][attribute.name] = offset
            }
            for (offset, relationship) in entity.relationships.enumerated() {
                declaredRelationships[index][relationship.name] = offset
                if let inverse = relationship.inverse {
                    namingInverse[index][inverse, default: []].append(offset)
                }
            }
        }
    }

    /// External storage, thresholds and defaults fit their attributes.
    private func checkAttributes() throws(DeckError) {
        for entity in declared {
            for attribute in entity.attributes {
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
        }
    }

    /// Each relationship's destination exists, and its inverse: the one it names, which must
    /// point back at it and not name another; or, when it names none, the first relationship of
    /// the destination (inherited ones first) that names it.
    private mutating func resolveInverses() throws(DeckError) {
        for owner in declared.indices {
            for relationship in declared[owner].relationships {
                let label = "'\(declared[owner].name).\(relationship.name)'"
                guard let destination = position[relationship.destination] else {
                    throw DeckError.invalidSchema(
                        "relationship \(label) points to unknown entity '\(relationship.destination)'")
                }
                var inverse: (entity: Int, offset: Int)?
                if let inverseName = relationship.inverse {
                    guard let (declarer, offset) = findRelationship(inverseName, on: destination) else {
                        throw DeckError.invalidSchema(
                            "relationship \(label) names inverse '\(inverseName)', "
                                + "which '\(relationship.destination)' does not have")
                    }
                    let found = declared[declarer].relationships[offset]
                    guard let target = position[found.destination], isAncestorOrSelf(target, of: owner) else {
                        throw DeckError.invalidSchema(
                            "'\(relationship.destination).\(inverseName)' points to '\(found.destination)', "
                                + "so it cannot be the inverse of \(label)")
                    }
                    if let back = found.inverse, back != relationship.name {
                        throw DeckError.invalidSchema(
                            "\(label) and '\(relationship.destination).\(inverseName)' disagree about their inverse"
                        )
                    }
                    inverse = (declarer, offset)
                } else {
                    inverse = inverseNaming(relationship.name, of: owner, on: destination)
                }
                if let (declarer, offset) = inverse,
                    declared[declarer].name + "." + declared[declarer].relationships[offset].name
                        == declared[owner].name + "." + relationship.name
                {
                    throw DeckError.invalidSchema("\(label) cannot be its own inverse")
                }
                inverses[owner].append(inverse)
            }
        }
    }

    /// The first relationship of `destination`, inherited ones first, that names relationship
    /// `name` of entity `owner` as its inverse.
    private func inverseNaming(_ name: String, of owner: Int, on destination: Int) -> (
        entity: Int, offset: Int
    )? {
        for entity in chain(destination) {
            for offset in namingInverse[entity][name] ?? [] {
                if let target = position[declared[entity].relationships[offset].destination],
                    isAncestorOrSelf(target, of: owner)
                {
                    return (entity, offset)
                }
            }
        }
        return nil
    }

    /// Inverses pair up: each relationship's inverse has it as its inverse, so no two relationships
    /// share one, and both sides read and write one storage.
    private func checkInversesPairUp() throws(DeckError) {
        var claimed: [String: String] = [:]
        for owner in declared.indices {
            for (offset, relationship) in declared[owner].relationships.enumerated() {
                guard let (declarer, inverseOffset) = inverses[owner][offset] else { continue }
                let ownKey = declared[owner].name + "." + relationship.name
                let inverseKey =
                    declared[declarer].name + "." + declared[declarer].relationships[inverseOffset].name
                if let first = claimed[inverseKey] {
                    throw DeckError.invalidSchema(
                        "'\(first)' and '\(ownKey)' both have '\(inverseKey)' as their inverse; a relationship "
                            + "is the inverse of at most one other")
                }
                claimed[inverseKey] = ownKey
                let back = inverses[declarer][inverseOffset]
                guard let back, back.entity == owner, back.offset == offset else {
                    let backName =
                        back.map {
                            "'\(declared[$0.entity].name).\(declared[$0.entity].relationships[$0.offset].name)'"
                        }
                        ?? "none"
                    throw DeckError.invalidSchema(
                        "'\(ownKey)' has '\(inverseKey)' as its inverse, but the inverse of '\(inverseKey)' is "
                            + "\(backName); inverses pair up only when each one's destination is the entity that "
                            + "declares the other (here '\(inverseKey)' would need destination "
                            + "'\(declared[owner].name)' and '\(ownKey)' destination '\(declared[declarer].name)')"
                    )
                }
            }
        }
    }

    // MARK: Looking things up

    /// The root of entity `index`'s hierarchy, walking its parents.
    func root(of index: Int) -> Int {
        var current = index
        while let next = parent[current] { current = next }
        return current
    }

    /// The relationship `name` of entity `index`, declared or inherited: (declarer, position).
    func findRelationship(_ name: String, on index: Int) -> (Int, Int)? {
        var current: Int? = index
        while let entity = current {
            if let offset = declaredRelationships[entity][name] { return (entity, offset) }
            current = parent[entity]
        }
        return nil
    }

    /// Whether entity `index` has attribute `name`, declared or inherited.
    func findAttribute(_ name: String, on index: Int) -> Bool {
        var current: Int? = index
        while let entity = current {
            if declaredAttributes[entity][name] != nil { return true }
            current = parent[entity]
        }
        return false
    }

    func isAncestorOrSelf(_ ancestor: Int, of index: Int) -> Bool {
        var current: Int? = index
        while let entity = current, depth[entity] >= depth[ancestor] {
            if entity == ancestor { return true }
            current = parent[entity]
        }
        return false
    }

    /// Root first, `index` last.
    func chain(_ index: Int) -> [Int] {
        var result: [Int] = []
        var current: Int? = index
        while let entity = current {
            result.append(entity)
            current = parent[entity]
        }
        return result.reversed()
    }
}
