import Foundation

extension ModelContext {
    /// The models that `descriptor` selects, in its order.
    ///
    /// The predicate, sort, limit and offset run in the store. With
    /// ``FetchDescriptor/includePendingChanges`` (the default) and unsaved changes in the context,
    /// the store runs the fetch inside a transaction that holds the changes and is then rolled
    /// back, so that unsaved models match exactly as saved ones would.
    public func fetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws(DeckError) -> [T] {
        let query = try recordQuery(for: descriptor)
        return try withRecords(query, includingChanges: descriptor.includePendingChanges) {
            records, temporary throws(DeckError) in
            var models: [T] = []
            models.reserveCapacity(records.count)
            for record in records {
                guard let model = try instance(for: record, temporary: temporary) as? T else { continue }
                models.append(model)
            }
            return models
        }
    }

    /// How many models `descriptor` selects (its limit and offset apply).
    public func fetchCount<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws(DeckError) -> Int {
        var query = try recordQuery(for: descriptor)
        query.sort = []
        if descriptor.includePendingChanges && hasChanges {
            return try withRecords(query, includingChanges: true) { records, _ in records.count }
        }
        let counted = query
        do {
            return try store.read { try $0.count(counted) }
        } catch {
            throw DeckError.wrap(error)
        }
    }

    /// The identifiers of the models `descriptor` selects, without making the models.
    public func fetchIdentifiers<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws(DeckError)
        -> [PersistentIdentifier]
    {
        let query = try recordQuery(for: descriptor)
        return try withRecords(query, includingChanges: descriptor.includePendingChanges) {
            records, temporary in
            records.compactMap { record in
                if let object = temporary[record.id] { return ModelBacking.of(object).identifier }
                return record.globalID.map { PersistentIdentifier(entityName: record.entity, id: $0) }
            }
        }
    }

    /// Calls `block` with each model `descriptor` selects, fetching `batchSize` at a time, so that
    /// memory stays bounded however many there are (the models of earlier batches go away unless
    /// kept or changed).
    public func enumerate<T: PersistentModel>(
        _ descriptor: FetchDescriptor<T>, batchSize: Int = 5000, block: (T) throws -> Void
    ) throws {
        guard batchSize > 0 else { throw DeckError.misuse("enumerate: the batch size must be positive") }
        var offset = descriptor.fetchOffset ?? 0
        var remaining = descriptor.fetchLimit ?? Int.max
        while remaining > 0 {
            var batch = descriptor
            batch.fetchOffset = offset
            batch.fetchLimit = min(batchSize, remaining)
            let models = try autoreleasingFetch(batch)
            for model in models { try block(model) }
            if models.count < batch.fetchLimit! { break }
            offset += models.count
            remaining -= models.count
        }
    }

    private func autoreleasingFetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws(DeckError)
        -> [T]
    {
        try fetch(descriptor)
    }

    /// The model of `identifier`: the registered instance, or one read from the store.
    /// Throws ``DeckError/recordNotFound(entity:id:)`` when no record has it.
    public func model(for identifier: PersistentIdentifier) throws(DeckError) -> any PersistentModel {
        if let model = registeredModel(identifier) { return model }
        guard let metadata = schema.metadata(named: identifier.entityName) else {
            throw DeckError.unknownEntity(identifier.entityName, known: schema.metadata.keys.sorted())
        }
        let record: Record?
        do {
            record = try store.read { reader -> Record? in
                guard let id = try reader.recordID(metadata.entityName, globalID: identifier.id) else {
                    return nil
                }
                return try reader.record(metadata.entityName, id: id)
            }
        } catch {
            throw DeckError.wrap(error)
        }
        guard let record, let model = try instance(for: record) as? any PersistentModel else {
            throw DeckError.recordNotFound(entity: identifier.entityName, id: -1)
        }
        return model
    }

    /// The model of `identifier` if this context has an instance of it, else nil (no store read).
    public func registeredModel<T: PersistentModel>(for identifier: PersistentIdentifier) -> T? {
        registeredModel(identifier) as? T
    }

    func registeredModel(_ identifier: PersistentIdentifier) -> (any PersistentModel)? {
        for object in Array(inserted.values) + Array(changed.values) + Array(deleted.values)
        where ModelBacking.of(object).identifier == identifier {
            return object as? any PersistentModel
        }
        return registeredModels.first { ModelBacking.of($0).identifier == identifier }
    }

    /// Deletes every model of `model` (and, with `includeSubclasses`, of its subclasses) that
    /// matches `predicate`, in one statement in the store, with the delete rules applied. Unsaved
    /// changes are saved first.
    public func delete<T: PersistentModel>(
        model: T.Type, where predicate: Predicate<T>? = nil, includeSubclasses: Bool = true
    ) throws(DeckError) {
        try save()
        var query = try recordQuery(for: FetchDescriptor<T>(predicate: predicate))
        query.includesSubentities = includeSubclasses
        let counted = query
        let changes: ChangeSet
        do {
            changes = try store.write { try $0.delete(counted) }.changes
        } catch {
            throw DeckError.wrap(error)
        }
        forgetDeleted(changes)
    }

    // MARK: Queries

    /// The store query of `descriptor`.
    func recordQuery<T: PersistentModel>(for descriptor: FetchDescriptor<T>) throws(DeckError) -> RecordQuery
    {
        let metadata = ModelMetadata.of(T.self)
        guard schema.metadata(named: metadata.entityName) === metadata else {
            throw DeckError.unknownEntity(metadata.entityName, known: schema.metadata.keys.sorted())
        }
        var condition: QueryExpression?
        if let predicate = descriptor.predicate {
            condition = try PredicateTranslation.condition(predicate, metadata: metadata)
        }
        let sort = try PredicateTranslation.sortKeys(descriptor.sortBy, metadata: metadata)
        if let limit = descriptor.fetchLimit, limit < 0 {
            throw DeckError.misuse("fetchLimit must not be negative")
        }
        if let offset = descriptor.fetchOffset, offset < 0 {
            throw DeckError.misuse("fetchOffset must not be negative")
        }
        return RecordQuery(
            metadata.entityName, where: condition, sort: sort, limit: descriptor.fetchLimit,
            offset: descriptor.fetchOffset ?? 0)
    }

    /// Runs `query` and gives `body` its records — with the unsaved changes applied, in a
    /// transaction then rolled back, when `includingChanges` and there are any — and the models
    /// that unsaved records stand for, by their record id in that transaction.
    func withRecords<R>(
        _ query: RecordQuery, includingChanges: Bool,
        _ body: ([Record], [Int64: AnyObject]) throws(DeckError) -> R
    ) throws(DeckError) -> R {
        if includingChanges && hasChanges {
            let transaction = try store.beginTransaction()
            defer { transaction.rollback() }
            let flushed = try flush(into: transaction)
            let records = try transaction.fetch(query)
            var temporary: [Int64: AnyObject] = [:]
            for object in insertedObjects {
                guard let id = flushed.rowIDs[ObjectIdentifier(object)] else { continue }
                temporary[id] = object
            }
            return try body(records, temporary)
        }
        let records: [Record]
        do {
            records = try store.read { try $0.fetch(query) }
        } catch {
            throw DeckError.wrap(error)
        }
        return try body(records, [:])
    }
}

/// Foundation's `Predicate` and `SortDescriptor` in the store's expression language.
enum PredicateTranslation {
    static func condition<T: PersistentModel>(_ predicate: Predicate<T>, metadata: ModelMetadata)
        throws(DeckError)
        -> QueryExpression
    {
        throw DeckError.invalidQuery("#Predicate is not supported yet")
    }

    static func sortKeys<T: PersistentModel>(_ descriptors: [SortDescriptor<T>], metadata: ModelMetadata)
        throws(DeckError) -> [SortKey]
    {
        try descriptors.map { descriptor throws(DeckError) in
            guard let keyPath = descriptor.keyPath else {
                throw DeckError.invalidQuery("a SortDescriptor without a key path cannot run in the store")
            }
            let path = metadata.resolve(keyPath)
            guard !path.isEmpty else {
                throw DeckError.invalidQuery("\(keyPath) is not a stored property of \(T.self)")
            }
            return SortKey(.path(.init(path.map(\.name))), ascending: descriptor.order == .forward)
        }
    }
}
