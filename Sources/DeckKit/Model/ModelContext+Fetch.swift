import Foundation

extension ModelContext {
    /// The models that `descriptor` selects, in its order.
    ///
    /// The predicate, sort, limit and offset run in the store, with one exception that gives the
    /// same order faster: a fetch with neither limit nor offset, sorted by number and date
    /// properties of the model itself only, reads its rows unsorted and orders the models by the
    /// values the store holds (as SQL's `ORDER BY` would, then by record, which breaks ties). With
    /// ``FetchDescriptor/includePendingChanges`` (the default) and unsaved changes in the context,
    /// the store runs the fetch inside a transaction that holds the changes and is then rolled
    /// back, so that unsaved models match exactly as saved ones would. A document open read-only
    /// (``ModelConfiguration/allowsSave`` false, or a ``ModelContainer/access`` of read-only for a
    /// newer document) has no such transaction: a fetch there with
    /// unsaved changes throws ``DeckError/misuse(_:)``, saying so; turn `includePendingChanges`
    /// off to fetch what is saved.
    @inlinable
    public func fetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws(DeckError) -> [T] {
        // The models come as objects each checked to be a `T` (a class), and their array is taken
        // as a `[T]` as it is: the two have the same layout, as the standard library's own casts
        // between arrays of classes rely on where it can skip copying them. Collecting a `[T]` in
        // this module's generic code looked up the array's type metadata for each model; copying
        // into a new array retained and released each one.
        unsafeBitCast(try fetchedObjects(descriptor), to: [T].self)
    }

    /// How this context's fetches run (``ModelFetcher``).
    var fetcher: ModelFetcher { ModelFetcher(context: self) }

    /// The models of ``fetch(_:)``, each one a `T`.
    @usableFromInline
    func fetchedObjects<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws(DeckError) -> [AnyObject]
    {
        mergeCommittedChanges()
        return try fetcher.fetch(descriptor, after: nil, readsEnd: false, lettingOrder: true).models
    }

    /// How many models `descriptor` selects (its limit and offset apply).
    public func fetchCount<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws(DeckError) -> Int {
        mergeCommittedChanges()
        return try fetcher.count(descriptor)
    }

    /// The identifiers of the models `descriptor` selects, without making the models.
    public func fetchIdentifiers<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws(DeckError)
        -> [PersistentIdentifier]
    {
        mergeCommittedChanges()
        return try fetcher.identifiers(descriptor)
    }

    /// Calls `block` with each model `descriptor` selects, in its order, fetching `batchSize` at a
    /// time, so that memory stays bounded however many there are (the models of earlier batches go
    /// away unless kept or changed).
    ///
    /// Each batch starts right after the last row of the batch before, in the descriptor's order
    /// (its sort descriptors, then the record, which breaks ties), not at an offset, so no batch
    /// reads again what came before it. The whole enumeration takes time linear in the number of
    /// models without sort descriptors, or when the first one is a property of the model itself
    /// with an index (`indexes`) — not a `Decimal`, a `String` only with the `.lexical`
    /// comparator, and if optional, in forward order. Otherwise each batch still reads every model
    /// after the end of the last one to find its first ones. Models the block deletes or inserts
    /// shift nothing: every model that stays selected is met once. The descriptor's `fetchOffset`
    /// skips models before the first batch; its `fetchLimit` bounds the models met in all.
    ///
    /// A batch ends where the store sorted its last row, by the values the store compared, whatever
    /// the models hold since. A change to a sort property moves a model once the store sees it —
    /// saved, or unsaved with ``FetchDescriptor/includePendingChanges`` (the default): a model that
    /// then sorts after the end of the last batch is met again, and one that then sorts before it,
    /// if not met yet, is not met. So a block that moves each model it meets further on (adding to
    /// the property the models are sorted by) meets them again and again: save such changes after
    /// the enumeration, turn `includePendingChanges` off, or select with a predicate that the
    /// changed models no longer match. A model inserted meanwhile, by the block or another writer,
    /// is met if it sorts after the current batch; unsaved models sort after the saved ones whose
    /// sort values they share.
    public func enumerate<T: PersistentModel>(
        _ descriptor: FetchDescriptor<T>, batchSize: Int = 5000, block: (T) throws -> Void
    ) throws {
        guard batchSize > 0 else { throw DeckError.misuse("enumerate: the batch size must be positive") }
        if let limit = descriptor.fetchLimit, limit < 0 {
            throw DeckError.misuse("fetchLimit must not be negative")
        }
        mergeCommittedChanges()
        try fetcher.enumerate(descriptor, batchSize: batchSize, block: block)
    }

    /// The model of `identifier`: the registered instance, or one read from the store.
    /// Throws ``DeckError/globalIDNotFound(entity:globalID:)`` when no record has it.
    public func model(for identifier: PersistentIdentifier) throws(DeckError) -> any PersistentModel {
        mergeCommittedChanges()
        if let model = registeredModel(identifier) { return model }
        return try fetcher.model(for: identifier)
    }

    /// The model of `identifier` if this context has an instance of it, else nil. It does not read
    /// the record, but, as every operation of the context, first applies what other contexts
    /// saved to the models here (a model whose record they deleted is no longer here).
    public func registeredModel<T: PersistentModel>(for identifier: PersistentIdentifier) -> T? {
        mergeCommittedChanges()
        return registeredModel(identifier) as? T
    }

    func registeredModel(_ identifier: PersistentIdentifier) -> (any PersistentModel)? {
        for object in changes.allObjects
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
        try fetcher.delete(model, where: predicate, includeSubclasses: includeSubclasses)
    }
}

/// What the predicate compiler learns of the models: key paths by the model metadata, captured
/// models and identifiers by their record ids (`rowID` gives an unsaved model's id in the
/// transaction that holds it).
struct ModelPredicateResolver: PredicateSchemaResolver {
    let context: ModelContext
    let rowID: (AnyObject) -> Int64?
    let reader: StoreReader?

    func property(_ keyPath: AnyKeyPath) -> ResolvedProperty? {
        guard let path = path(keyPath), path.count == 1 else { return nil }
        return path[0]
    }

    func path(_ keyPath: AnyKeyPath) -> [ResolvedProperty]? {
        guard let root = type(of: keyPath).rootType as? any PersistentModel.Type else { return nil }
        if keyPath == Self.identifierKeyPath(root) { return [ResolvedProperty("_id", .toOne)] }
        let accessors = ModelMetadata.of(root).resolve(keyPath)
        guard !accessors.isEmpty,
            type(of: keyPath).valueType == accessors.last?.valueType(optional: true)
                || type(of: keyPath).valueType == accessors.last?.valueType(optional: false)
        else { return nil }
        return accessors.map { accessor in
            if let attribute = accessor as? any AttributeDescribing, let type = attribute.attributeType {
                return ResolvedProperty(accessor.name, .attribute(type))
            }
            let relationship = accessor as? any RelationshipDescribing
            return ResolvedProperty(accessor.name, relationship?.isToMany == true ? .toMany : .toOne)
        }
    }

    /// `\Model.persistentModelID`, which stands for the record itself.
    private static func identifierKeyPath(_ type: any PersistentModel.Type) -> AnyKeyPath {
        func make<M: PersistentModel>(_: M.Type) -> AnyKeyPath { \M.persistentModelID }
        return make(type)
    }

    func value(_ value: Any) throws(DeckError) -> Value {
        if let optional = value as? any OptionalType, optional.isNone { return .null }
        if let identifier = value as? PersistentIdentifier { return .reference(try recordID(of: identifier)) }
        if let object = unwrapped(value) as? any PersistentModel {
            guard let id = rowID(object) else {
                throw DeckError.invalidQuery(
                    "#Predicate: the captured \(type(of: object)) is neither saved nor inserted in this context"
                )
            }
            return .reference(id)
        }
        guard let stored = storeValue(of: value) else {
            throw DeckError.invalidQuery(
                "#Predicate: a captured \(type(of: value)) is not a value the store holds")
        }
        return stored
    }

    /// The record id of `identifier` (one no record has matches nothing: record ids are positive).
    private func recordID(of identifier: PersistentIdentifier) throws(DeckError) -> Int64 {
        if let model = context.registeredModel(identifier), let id = rowID(model) { return id }
        guard let metadata = context.schema.metadata(named: identifier.entityName) else { return -1 }
        do {
            if let reader { return try reader.recordID(metadata.entityName, globalID: identifier.id) ?? -1 }
            return try context.store.read { try $0.recordID(metadata.entityName, globalID: identifier.id) }
                ?? -1
        } catch {
            throw DeckError.wrap(error)
        }
    }

    private func unwrapped(_ value: Any) -> Any {
        guard let optional = value as? any OptionalType else { return value }
        return optional.wrappedValue ?? value
    }
}

extension Array where Element: AnyObject {
    /// Puts the elements in the order `permutation` gives: element `i` becomes the one that was at
    /// `permutation[i]`. Swapped in place, cycle by cycle (a cycle of n elements in n - 1 swaps,
    /// each moving one element to its place), so that no element is retained or released.
    mutating func permute(_ permutation: [Int]) {
        precondition(
            permutation.count == count, "a permutation of \(permutation.count) for \(count) elements")
        var placed = [Bool](repeating: false, count: count)
        for start in indices where !placed[start] {
            var index = start
            while permutation[index] != start {
                placed[index] = true
                swapAt(index, permutation[index])
                index = permutation[index]
            }
            placed[index] = true
        }
    }
}
