extension Schema {
    /// What keeps the models from syncing through CloudKit, each violation named by entity and
    /// property: the check of ``StoreSchema/cloudKitFindings()`` on the models' store schema,
    /// with what only the types say.
    ///
    /// - ``SchemaFinding/Code/relationshipNotOptional``: a to-many relationship declared as a
    ///   non-optional array (`[Card]` rather than `[Card]?`), or with a `minimumModelCount` of
    ///   at least one. (A to-one relationship is always an optional model.)
    /// - ``SchemaFinding/Code/attributeWithoutDefault`` is never reported: every `@Attribute`
    ///   has a value before `init()` returns, which is the default SwiftData gives CloudKit.
    ///
    /// ```swift
    /// let findings = try Schema(Card.self, Deck.self).cloudKitFindings()
    /// // [Deck.title: the unique option is not supported by CloudKit; …]
    /// ```
    ///
    /// - Throws: ``DeckError/invalidSchema(_:)`` naming the ``problems`` when the models cannot be
    ///   stored at all.
    public func cloudKitFindings() throws(DeckError) -> [SchemaFinding] {
        guard let storeSchema else { throw DeckError.invalidSchema(problems.joined(separator: "; ")) }
        var findings = try storeSchema.cloudKitFindings().filter { $0.code != .attributeWithoutDefault }
        for entity in storeSchema.entities {
            guard let metadata = metadata(named: entity.name) else { continue }
            for accessor in metadata.properties
            where accessor.declaringType.map(ObjectIdentifier.init) == ObjectIdentifier(metadata.type) {
                guard let relationship = accessor as? any RelationshipDescribing & DeclaredOptionality,
                    relationship.isToMany
                else { continue }
                var reasons: [String] = []
                if !relationship.isDeclaredOptional {
                    reasons.append("is declared as a non-optional array; declare it as an optional one")
                }
                if let minimum = relationship.modelCountBounds.minimum, minimum > 0 {
                    reasons.append("has a minimumModelCount of \(minimum); drop it and check in the app")
                }
                guard !reasons.isEmpty else { continue }
                findings.append(
                    SchemaFinding(
                        code: .relationshipNotOptional, entity: entity.name, property: accessor.name,
                        message: "CloudKit needs every relationship to be optional, and this one "
                            + reasons.joined(separator: ", and ")))
            }
        }
        // In schema order, as the store's findings are: entity by entity.
        let order = Dictionary(
            storeSchema.entities.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        return findings.enumerated().sorted {
            (order[$0.element.entity] ?? 0, $0.offset) < (order[$1.element.entity] ?? 0, $1.offset)
        }.map(\.element)
    }
}

/// Whether a relationship property's type is optional (`[Card]?`), which only its accessor knows.
private protocol DeclaredOptionality {
    var isDeclaredOptional: Bool { get }
}

extension RelationshipAccessor: DeclaredOptionality {
    fileprivate var isDeclaredOptional: Bool { V.self is any OptionalType.Type }
}
