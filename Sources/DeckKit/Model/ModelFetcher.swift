import Foundation

/// How a context's fetches run: the store query of a descriptor (its predicate and sort
/// compiled over the models' metadata), run on the committed store or, with unsaved changes, in
/// a transaction that holds them (the context's flush) and is then rolled back; the models made
/// or found for its rows, ordered after the read when the store need not sort, and the batches
/// of an enumeration, each after the last row of the one before.
///
/// A view over the context that makes it (``ModelContext/fetcher``); no state of its own.
struct ModelFetcher {
    unowned(unsafe) let context: ModelContext

    /// Where a batch of an enumeration ended: the position of its last row in the order and, when
    /// that row was an unsaved model, the model and the models of its hierarchy inserted before it
    /// (see ``recordID(after:rowID:)``).
    struct BatchEnd {
        var position: RecordQuery.Position
        var unsaved: (model: AnyObject, insertedBefore: [AnyObject])?
    }

    /// The models of `descriptor`, only those after `after` in its order when it is given; the
    /// number of rows read (models of other types among them: a record the models of this context
    /// know only by an ancestor of `T`); and, with `readsEnd` and as many rows as the
    /// descriptor's limit, where they ended.
    ///
    /// With `lettingOrder`, a fetch of every model sorted by number properties of the model itself
    /// reads the rows unsorted and puts the models in order afterwards, by the values the store
    /// holds (``RowOrder``): SQLite's sorter copies whole rows, which costs more than making the
    /// models. The order is the one the store would give.
    func fetch<T: PersistentModel>(
        _ descriptor: FetchDescriptor<T>, after: BatchEnd?, readsEnd: Bool, lettingOrder: Bool = false
    ) throws(DeckError) -> (models: [AnyObject], rows: Int, end: BatchEnd?) {
        var models: [AnyObject] = []
        // Whether instances of the last class met are `T`s (a row's class is most often the
        // last row's): a dynamic cast per row is a lookup of `T`'s metadata.
        var lastClass: ObjectIdentifier?
        var lastIsT = false
        var rows = 0
        var end: BatchEnd?
        if let limit = descriptor.fetchLimit { models.reserveCapacity(min(limit, 100_000)) }
        let build = queryBuilder(for: descriptor)
        let query: QueryBuilder = { rowID, reader throws(DeckError) in
            var query = try build(rowID, reader)
            if let after {
                var position = after.position
                position.recordID = self.recordID(after: after, rowID: rowID)
                query.after = position
            }
            query.readsPositions = readsEnd
            query.lettingCallerOrder = lettingOrder
            return query
        }
        var order: RowOrder?
        var orderAsked = false
        try withRows(includingChanges: descriptor.includePendingChanges, query: query) {
            cursor, temporary throws(DeckError) in
            rows += 1
            if readsEnd, rows == descriptor.fetchLimit, let position = cursor.position {
                end = BatchEnd(position: position)
                if let model = temporary[cursor.id] {
                    let root = ModelBacking.of(model).metadata.rootKey
                    var before: [AnyObject] = []
                    for object in context.changes.insertedObjects
                    where ModelBacking.of(object).metadata.rootKey == root {
                        if object === model { break }
                        before.append(object)
                    }
                    end?.unsaved = (model, before)
                }
            }
            let object = try context.instance(at: cursor, temporary: temporary)
            let objectClass = ObjectIdentifier(type(of: object))
            if objectClass != lastClass {
                lastClass = objectClass
                lastIsT = object is T
            }
            if lastIsT {
                models.append(object)
                if lettingOrder {
                    if !orderAsked {
                        orderAsked = true
                        order = cursor.callerOrder()
                    }
                    order?.add(cursor)
                }
            }
        }
        if let order {
            // A value the order cannot compare (only a damaged or foreign store holds one): the
            // store sorts instead.
            guard let permutation = order.permutation() else {
                return try fetch(descriptor, after: after, readsEnd: readsEnd, lettingOrder: false)
            }
            models.permute(permutation)
        }
        context.faulting.noteFetched(models, metadata: ModelMetadata.of(T.self))
        // The prefetched models are the context's until its next fetch: relationships do not
        // hold them (see ModelReference.swift), and reads of the fetched models find them.
        var prefetched: [AnyObject] = []
        for keyPath in descriptor.relationshipKeyPathsForPrefetching {
            prefetched += try context.faulting.prefetch(
                keyPath, of: models, metadata: ModelMetadata.of(T.self))
        }
        context.prefetched = prefetched
        return (models, rows, end)
    }

    /// The record id that stands for where a batch ended, in the store (or transaction) where
    /// `rowID` gives the models' ids. A saved record keeps its id. An unsaved model gets one in
    /// each transaction that holds the unsaved changes, after every saved record, in the order
    /// the models were inserted; so its id can change from one batch to the next (models inserted
    /// before it deleted, or saved), but not its place among the others: it is its id now, or, when
    /// it is gone, that of the last model inserted before it still there, or else the id before
    /// that of the first inserted after it.
    private func recordID(after end: BatchEnd, rowID: (AnyObject) -> Int64?) -> Int64 {
        guard let (model, insertedBefore) = end.unsaved else { return end.position.recordID }
        if let id = rowID(model) { return id }
        for object in insertedBefore.reversed() {
            if let id = rowID(object) { return id }
        }
        // Held by `end`, none of these objects can have given its identifier to another.
        let earlier = Set(insertedBefore.map(ObjectIdentifier.init) + [ObjectIdentifier(model)])
        let root = ModelBacking.of(model).metadata.rootKey
        var first: Int64?
        for object in context.changes.insertedObjects
        where ModelBacking.of(object).metadata.rootKey == root && !earlier.contains(ObjectIdentifier(object))
        {
            if let id = rowID(object) { first = min(first ?? id, id) }
        }
        return first.map { $0 - 1 } ?? end.position.recordID
    }

    // MARK: Queries

    typealias QueryBuilder = (@escaping (AnyObject) -> Int64?, StoreReader?) throws(DeckError) -> RecordQuery

    /// Builds the store query of `descriptor` (see ``recordQuery(for:rowID:reader:)``).
    func queryBuilder<T: PersistentModel>(for descriptor: FetchDescriptor<T>) -> QueryBuilder {
        { rowID, reader throws(DeckError) in
            try recordQuery(for: descriptor, rowID: rowID, reader: reader)
        }
    }

    /// The store query of `descriptor`. `rowID` gives the record id of a model a predicate
    /// captures (by default its saved one); `reader` is where the record ids of captured
    /// identifiers are looked up (by default a new read).
    func recordQuery<T: PersistentModel>(
        for descriptor: FetchDescriptor<T>,
        rowID: @escaping (AnyObject) -> Int64? = { ModelBacking.of($0).rowID },
        reader: StoreReader? = nil
    ) throws(DeckError) -> RecordQuery {
        let metadata = ModelMetadata.of(T.self)
        guard context.schema.metadata(named: metadata.entityName) === metadata else {
            throw DeckError.unknownEntity(metadata.entityName, known: context.schema.metadata.keys.sorted())
        }
        let resolver = ModelPredicateResolver(context: context, rowID: rowID, reader: reader)
        var condition: QueryExpression?
        if let predicate = descriptor.predicate {
            condition = try PredicateCompiler.compile(predicate, resolver: resolver)
        }
        let sort = try PredicateCompiler.sortKeys(descriptor.sortBy, resolver: resolver)
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

    /// Runs the query `makeQuery` builds and calls `body` with a cursor on each of its rows —
    /// with the unsaved changes applied, in a transaction then rolled back, when
    /// `includingChanges` and there are any — and the models that unsaved records stand for, by
    /// their record id in that transaction. `makeQuery` gets the record id of a model (an unsaved
    /// one's in that transaction) and the reader the query runs on.
    func withRows(
        includingChanges: Bool,
        query makeQuery: QueryBuilder,
        _ body: (RowCursor, [Int64: AnyObject]) throws(DeckError) -> Void
    ) throws(DeckError) {
        if includingChanges && context.hasChanges {
            let transaction: StoreTransaction
            do {
                transaction = try context.store.beginTransaction()
            } catch .readOnly(let path) {
                // "Read-only" alone puzzled a user who never asked to save.
                throw DeckError.misuse(
                    "a fetch with includePendingChanges applies this context's unsaved changes in a transaction "
                        + "it rolls back, and \(path) is open read-only (allowsSave is false, or the container's access "
                        + "lets this version of the app only read the document): fetch with "
                        + "includePendingChanges = false, or roll the changes back")
            }
            defer { transaction.rollback() }
            let flushed = try context.flush(into: transaction, forFetch: true)
            let query = try makeQuery(
                { flushed.rowID(of: $0) ?? ModelBacking.of($0).rowID }, transaction)
            // Record ids are unique per hierarchy's table only: only the queried hierarchy's
            // unsaved models can stand for its rows.
            let root = context.schema.metadata(named: query.entity)?.rootKey
            var temporary: [Int64: AnyObject] = [:]
            for object in context.changes.insertedObjects
            where ModelBacking.of(object).metadata.rootKey == root {
                guard let id = flushed.rowID(of: object) else { continue }
                temporary[id] = object
            }
            // Saved records that the unsaved changes altered in the transaction (a delete rule, an
            // inverse, an upsert): an instance made from such a row here would stand for the saved
            // record with values that are not saved, and keep them after a rollback. Those made
            // now are read again from the store once the transaction is gone.
            var altered: Set<Int64> = []
            for (entity, ids) in transaction.changes.updated
            where context.metadata(forStored: entity)?.rootKey == root {
                altered.formUnion(ids)
            }
            var madeFromAltered: [Int64] = []
            try context.store.forEachRow(query, in: transaction) { cursor throws(DeckError) in
                if let root, altered.contains(cursor.id),
                    context.registry.object(root: root, id: cursor.id) == nil
                {
                    madeFromAltered.append(cursor.id)
                }
                try body(cursor, temporary)
            }
            transaction.rollback()
            for id in madeFromAltered {
                guard let root, let object = context.registry.object(root: root, id: id) else { continue }
                context.faulting.reload(object, backing: ModelBacking.of(object))
            }
            return
        }
        let query = try makeQuery({ ModelBacking.of($0).rowID }, nil)
        try context.store.forEachRow(query) { cursor throws(DeckError) in try body(cursor, [:]) }
    }

    // MARK: Operations

    /// How many models `descriptor` selects (``ModelContext/fetchCount(_:)``).
    func count<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws(DeckError) -> Int {
        func query(_ rowID: @escaping (AnyObject) -> Int64?, _ reader: StoreReader?) throws(DeckError)
            -> RecordQuery
        {
            var query = try recordQuery(for: descriptor, rowID: rowID, reader: reader)
            query.sort = []
            return query
        }
        if descriptor.includePendingChanges && context.hasChanges {
            var count = 0
            try withRows(includingChanges: true, query: query) { _, _ in count += 1 }
            return count
        }
        let counted = try query({ ModelBacking.of($0).rowID }, nil)
        do {
            return try context.store.read { try $0.count(counted) }
        } catch {
            throw DeckError.wrap(error)
        }
    }

    /// The identifiers of the models `descriptor` selects (``ModelContext/fetchIdentifiers(_:)``).
    func identifiers<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws(DeckError)
        -> [PersistentIdentifier]
    {
        var identifiers: [PersistentIdentifier] = []
        try withRows(
            includingChanges: descriptor.includePendingChanges,
            query: queryBuilder(for: descriptor)
        ) { cursor, temporary in
            if let object = temporary[cursor.id] {
                identifiers.append(ModelBacking.of(object).identifier)
            } else if let globalID = cursor.globalID {
                identifiers.append(
                    PersistentIdentifier(
                        entityName: context.metadata(forStored: cursor.entity)?.entityName ?? cursor.entity,
                        id: globalID))
            }
        }
        return identifiers
    }

    /// Calls `block` with each model `descriptor` selects, `batchSize` at a time
    /// (``ModelContext/enumerate(_:batchSize:block:)``).
    func enumerate<T: PersistentModel>(
        _ descriptor: FetchDescriptor<T>, batchSize: Int, block: (T) throws -> Void
    )
        throws
    {
        var remaining = descriptor.fetchLimit ?? Int.max
        var batch = descriptor
        var end: BatchEnd?
        while remaining > 0 {
            let limit = min(batchSize, remaining)
            batch.fetchLimit = limit
            let fetched = try fetch(batch, after: end, readsEnd: true)
            // The batch's models go once the block is done with them, unless it kept them: they
            // hold each other only by identity. The to-many values the block reads are kept until
            // the batch ends (ModelBacking.batchValue), then dropped.
            let outer = context.batchValues
            context.batchValues = []
            defer {
                for backing in context.batchValues ?? [] { backing.dropBatchValues() }
                context.batchValues = outer
            }
            for model in fetched.models { try block(unsafeDowncast(model, to: T.self)) }
            guard fetched.rows == limit, let last = fetched.end else { break }
            remaining -= limit
            // The offset skipped rows before the first batch; the next starts after this one's end.
            batch.fetchOffset = nil
            end = last
        }
    }

    /// The model of `identifier` read from the store (``ModelContext/model(for:)``), for one the
    /// context has no instance of.
    func model(for identifier: PersistentIdentifier) throws(DeckError) -> any PersistentModel {
        guard let metadata = context.schema.metadata(named: identifier.entityName) else {
            throw DeckError.unknownEntity(identifier.entityName, known: context.schema.metadata.keys.sorted())
        }
        var found: AnyObject?
        do {
            try context.store.read { reader in
                guard let id = try reader.recordID(metadata.entityName, globalID: identifier.id) else {
                    return
                }
                try context.store.forEachRow(context.recordQuery(metadata.entityName, id: id), in: reader) {
                    cursor throws(DeckError) in found = try context.instance(at: cursor)
                }
            }
        } catch {
            throw DeckError.wrap(error)
        }
        guard let model = found as? any PersistentModel else {
            throw DeckError.globalIDNotFound(entity: identifier.entityName, globalID: identifier.id)
        }
        return model
    }

    /// Deletes the records of `model` that `predicate` selects, in one statement
    /// (``ModelContext/delete(model:where:includeSubclasses:)``, after its save).
    func delete<T: PersistentModel>(_ model: T.Type, where predicate: Predicate<T>?, includeSubclasses: Bool)
        throws(DeckError)
    {
        var query = try recordQuery(for: FetchDescriptor<T>(predicate: predicate))
        query.includesSubentities = includeSubclasses
        var queries = [query]
        if !includeSubclasses {
            // Records of entities of the document the models do not know are their nearest known
            // ancestor's (a later app's subentities): `model`'s own, here.
            for entity in context.store.schema.entities
            where entity.superentity == query.entity && context.schema.metadata(named: entity.name) == nil {
                var below = query
                below.entity = entity.name
                below.includesSubentities = true
                queries.append(below)
            }
        }
        let all = queries
        let changes: ChangeSet
        do {
            changes = try context.store.write { tx in
                // The context's own change, which it applies itself (below), not as another's.
                tx.author = context.merging.observation
                for query in all { try tx.delete(query) }
            }.changes
        } catch {
            throw DeckError.wrap(error)
        }
        SaveCompletion(context: context).forgetDeleted(changes)
    }
}
