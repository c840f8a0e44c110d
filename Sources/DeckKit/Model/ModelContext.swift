import Foundation

/// Where models are made, fetched, changed and saved: SwiftData's `ModelContext`.
///
/// A context holds one instance per record (fetching a record twice gives the same instance) and
/// tracks each change until ``save()`` writes them, all in one store transaction, or
/// ``rollback()`` drops them. Contexts of one container are independent: each sees the others'
/// changes once they are saved, in what it fetches and in the models it holds, which take the
/// saved values at the context's next operation (a fetch, a count, a lookup, a save, a rollback,
/// ``processPendingChanges()``; the main context's also right away, on the main actor), their
/// observers told. A property changed here and not saved keeps its value until this context
/// saves it, and that save wins. A context and its models belong to one isolation domain (the
/// main actor for ``ModelContainer/mainContext``); other actors make their own context and
/// reach records through ``PersistentIdentifier``.
public final class ModelContext {
    /// The container whose document the context reads and writes.
    ///
    /// A context keeps its container's document open while the context lives, so
    /// `let context = try ModelContainer(…).mainContext` works across saves and fetches. Any other
    /// context keeps its container itself. The container's own ``ModelContainer/mainContext``,
    /// which the container holds, keeps only the document (else the two would keep each other
    /// for good): when its container has gone while the context is kept, this is a container
    /// again over the same open document, with this context as its main context.
    public var container: ModelContainer {
        if let container = strongContainer ?? weakContainer { return container }
        let container = ModelContainer(reopening: document, mainContext: self)
        weakContainer = container
        return container
    }
    private let strongContainer: ModelContainer?
    private weak var weakContainer: ModelContainer?
    /// What keeps the document open: the container's, held by every context.
    private let document: OpenDocument

    /// Whether the context saves by itself.
    ///
    /// True for a container's ``ModelContainer/mainContext``, which then saves on the main actor
    /// once ``autosaveDelay`` has passed without a new insert, delete or change of a saved model,
    /// and once more when it goes away with its container (both with the context's own
    /// ``save()``; a failure is kept in ``lastAutosaveError`` and the changes stay pending: the
    /// next change starts a new quiet interval and autosave, and without one the same changes are
    /// tried again after a pause that grows from a second to a minute). False
    /// for other contexts, as in SwiftData; setting it on one makes ``processPendingChanges()``
    /// save, which its owner calls where it wants a save.
    public var autosaveEnabled: Bool {
        didSet { if autosaveEnabled && hasChanges { Autosave.schedule(self) } }
    }

    /// How long the main context's autosave waits after the last change before it saves (one
    /// second unless set; a Deck addition to SwiftData's API).
    public var autosaveDelay: Duration = .seconds(1)

    /// The last autosave's failure, nil after one that succeeded (a Deck addition: SwiftData
    /// does not report autosave failures).
    public internal(set) var lastAutosaveError: DeckError?

    /// The store and the schema, held here too so that a main context can still save while its
    /// container goes away.
    let store: PackageStore
    let schema: Schema
    private let allowsSave: Bool
    /// The main context, which autosaves on the main actor.
    let isMainContext: Bool
    /// Where the main context's autosave stands (``Autosave``).
    var autosaving = Autosave()

    /// One entry per record that has an instance here (uniquing), not retaining it.
    @exclusivity(unchecked) var registry = ModelRegistry()
    /// While an enumerate batch runs, the backings that keep to-many values for it
    /// (``ModelBacking/batchValue(_:)``); nil otherwise.
    @exclusivity(unchecked) var batchValues: [ModelBacking]?
    /// Rows into models: the row layouts of the entities fetched so far.
    let materializer: RowMaterializer
    /// The models of the last fetch whose type has a to-one relationship, by record id (see
    /// Faulting+Batches.swift).
    var lastFetched: FetchedNeighbours?
    /// The models the last fetch prefetched (``FetchDescriptor/relationshipKeyPathsForPrefetching``),
    /// held until the next fetch so that the fetched models' reads find them.
    var prefetched: [AnyObject] = []
    /// Whether records of an entity have unique values, by model metadata.
    var uniqueness = UniqueEntities()
    /// Models with unsaved changes, strongly held until saved or rolled back.
    var changes = ChangeTracker()

    /// Whether a to-one relationship may hold the instance of its target, by accessor: where no
    /// chain of held to-ones can lead back (``holdsTargets(of:)``).
    /// A short list (a schema has a few to-ones), searched in order: cheaper than hashing.
    @exclusivity(unchecked) private var holding: [(accessor: ObjectIdentifier, holds: Bool)] = []

    /// The last failure to load a property when it was first read (a blob file that cannot be
    /// read, a related record that is gone): the property then keeps its default.
    public internal(set) var lastLoadError: DeckError?
    /// What other writers committed, waiting to be applied to the models here (ModelContext+Merge).
    var merging = MergeState()

    /// A context of `container`.
    public convenience init(_ container: ModelContainer) {
        self.init(container, isMainContext: false)
    }

    /// The main context (`isMainContext`), which its container owns and so must not own back,
    /// and which autosaves; or another one.
    init(_ container: ModelContainer, isMainContext: Bool) {
        strongContainer = isMainContext ? nil : container
        weakContainer = isMainContext ? container : nil
        document = container.document
        store = container.store
        schema = container.schema
        materializer = RowMaterializer(store: container.store, schema: container.schema)
        allowsSave = container.access == .readWrite
        self.isMainContext = isMainContext
        autosaveEnabled = isMainContext
        link.context = self
        merging.start(for: self)
    }

    /// Its models have no context from here on: what they have not loaded cannot be loaded any
    /// more (``ModelBacking/notLoaded(_:)``). Related models hold each other only by identity, so
    /// nothing is left to undo.
    deinit {
        link.context = nil
    }

    /// Does nothing: related models hold each other by identity (their record ids), resolved
    /// through the context, so no relationship keeps a model alive and there is nothing to unload.
    /// Models that nothing else holds go as soon as they are let go of, while the context lives.
    @available(*, deprecated, message: "related models no longer keep each other alive: remove the call")
    public func unloadRelationships() {}

    /// Whether to-one relationship `accessor` may hold the instance of its target (beside its
    /// record id) for fast reads: when no model of its destination's hierarchy has a to-one
    /// relationship, so that no chain of held targets can lead back to a model that holds it
    /// (`card.deck` holds its deck; in a list linked both ways, `next` does not).
    func holdsTargets(of accessor: PropertyAccessor) -> Bool {
        let key = ObjectIdentifier(accessor)
        for entry in holding where entry.accessor == key { return entry.holds }
        var holds = false
        if let relationship = accessor.relationshipAccess, !relationship.isToMany {
            let destination = relationship.destinationMetadata
            let hierarchy =
                [destination] + schema.metadata.values.filter { $0.rootKey == destination.rootKey }
            holds = !hierarchy.contains { $0.relationships.contains { !$0.access.isToMany } }
        }
        holding.append((key, holds))
        return holds
    }

    /// How the models of a context reach it: one object per context, which each of its models
    /// holds, and which the context clears as it goes away. Models, like their context, stay in
    /// one isolation domain, so the reference is read and cleared in turn, never at once.
    final class Link {
        unowned(unsafe) var context: ModelContext?
    }

    /// This context's link (pointed at the context at the end of each initializer). A constant:
    /// a lazy one would check exclusive access on each read.
    let link = Link()

    // MARK: State

    /// True when there are inserted, changed or deleted models not saved yet.
    public var hasChanges: Bool { changes.hasChanges }

    /// The models inserted since the last save.
    public var insertedModelsArray: [any PersistentModel] {
        changes.insertedObjects.compactMap { $0 as? any PersistentModel }
    }

    /// The models changed since the last save (not inserted ones).
    public var changedModelsArray: [any PersistentModel] {
        changes.changed.values.compactMap { $0 as? any PersistentModel }
    }

    /// The models deleted since the last save.
    public var deletedModelsArray: [any PersistentModel] {
        changes.deleted.values.compactMap { $0 as? any PersistentModel }
    }

    // MARK: Changes

    /// Inserts `model` (and the models it reaches through relationships that are not in a context
    /// yet); saved by the next ``save()``. A model already here is left as it is; one deleted here
    /// and not saved is undeleted; one inserted into a context that went away before saving it is
    /// taken as a new model.
    ///
    /// A model belongs to one context for its life. Inserting a model of another context, or a
    /// saved model of a context that has gone, stops the program with a message, as in SwiftData:
    /// its changes could be saved by neither context. To change its record here, change the model
    /// that ``model(for:)`` gives for its `persistentModelID`.
    public func insert<T: PersistentModel>(_ model: T) {
        insertModel(model)
    }

    func insertModel(_ object: AnyObject) {
        ChangeTracker.insert(object, into: self)
    }

    /// Deletes `model`; the next ``save()`` deletes its record, with the delete rules of its
    /// relationships (cascade, nullify, deny, no action) applied by the store. Deleting an
    /// inserted model that was never saved only forgets it.
    public func delete<T: PersistentModel>(_ model: T) {
        ChangeTracker.delete(model, from: self)
    }

    /// Called by a persisted model's backing when one of its properties changes.
    func noteChanged(_ backing: ModelBacking) {
        changes.change(backing.object)
        noteChangeForAutosave()
    }

    // MARK: Autosave

    /// Restarts the main context's quiet interval, scheduling its autosave if none is.
    @inline(__always)
    func noteChangeForAutosave() {
        guard isMainContext, autosaveEnabled else { return }
        autosaving.lastChange = .now
        autosaving.retry = nil
        if !autosaving.isScheduled { Autosave.schedule(self) }
    }

    /// Applies other contexts' saves to the models here (as every operation of the context does
    /// first), then saves the changes if ``autosaveEnabled`` is set.
    public func processPendingChanges() throws(DeckError) {
        mergeCommittedChanges()
        if autosaveEnabled { try save() }
    }

    /// Writes every change since the last save in one store transaction: the inserted models'
    /// records, the changed properties (only those), the deletions with their delete rules. On
    /// failure nothing is written and the context keeps its changes.
    public func save() throws(DeckError) {
        guard try isSaving() else { return }
        let saving = SaveNotification.begin(self)
        let result: (value: FlushResult, changes: ChangeSet)
        do {
            result = try store.write { transaction in try self.flushForSave(into: transaction) }
        } catch {
            throw DeckError.wrap(error)
        }
        let gone = SaveCompletion(context: self).finish(result.value, committed: result.changes)
        saving.end(self, alsoGone: gone)
        autosaving.lastChange = nil
    }

    /// ``save()``, waiting for this process's other writers by suspending the task rather than
    /// blocking its thread (the flush and the commit run without suspending, on the caller's
    /// executor).
    nonisolated(nonsending) func saveSuspending() async throws(DeckError) {
        guard try isSaving() else { return }
        let saving = SaveNotification.begin(self)
        let result: (value: FlushResult, changes: ChangeSet)
        do {
            result = try await store.write { transaction in try self.flushForSave(into: transaction) }
        } catch {
            throw DeckError.wrap(error)
        }
        let gone = SaveCompletion(context: self).finish(result.value, committed: result.changes)
        saving.end(self, alsoGone: gone)
        autosaving.lastChange = nil
    }

    /// Applies other writers' saves first; whether there is something to save (which a read-only
    /// document refuses).
    private func isSaving() throws(DeckError) -> Bool {
        mergeCommittedChanges()
        guard hasChanges else { return false }
        guard allowsSave else { throw DeckError.readOnly(path: store.url.path) }
        return true
    }

    /// Runs `block`, then saves; when `block` or the save throws, rolls back and rethrows.
    public func transaction(block: () throws -> Void) throws {
        do {
            try block()
            try save()
        } catch {
            rollback()
            throw error
        }
    }

    /// Drops every change since the last save: inserted models leave the context, deleted ones
    /// come back, changed ones read their saved values again.
    public func rollback() {
        mergeCommittedChanges()
        ChangeTracker.rollBack(in: self)
    }

    // MARK: Flushing changes into a transaction

    /// What a flush wrote, by model: the plan's models and the executor's outcome.
    struct FlushResult {
        let planned: SavePlanner.Planned
        let outcome: SaveExecutor.Outcome

        /// The inserted models, in the order of their insertion.
        var inserted: [AnyObject] { planned.inserted }

        /// The record id inserted model `object` got, or nil for a model not inserted.
        func rowID(of object: AnyObject) -> Int64? {
            planned.insertIndex[ObjectIdentifier(object)].map { outcome.recordIDs[$0] }
        }

        /// What the store holds for each value written from a file, after the writes.
        var storedFromFiles: [(object: AnyObject, index: Int, value: Value)] {
            outcome.readBacks.map {
                (planned.fromFiles[$0.index].object, planned.fromFiles[$0.index].index, $0.value)
            }
        }

        /// To-many relationships whose saved links differ from the models here: read again after
        /// the save.
        var rereadToMany: [(object: AnyObject, index: Int)] { outcome.reread.map { planned.rereadable[$0] } }
    }

    /// Writes the context's changes into `transaction`: plans them (``SavePlanner``), then applies
    /// the plan (``SaveExecutor``).
    /// `forFetch`: the flush of a fetch with pending changes, whose transaction is rolled back (see
    /// ``SaveExecutor``).
    func flush(into transaction: StoreTransaction, forFetch: Bool = false) throws(DeckError) -> FlushResult {
        let planned = try SavePlanner.plan(changes, of: self, forFetch: forFetch)
        let outcome = try SaveExecutor.run(planned.plan, in: transaction, forFetch: forFetch)
        return FlushResult(planned: planned, outcome: outcome)
    }

    // MARK: Records and instances

    /// The models of the records this context has instances of (live ones).
    var registeredModels: [any PersistentModel] {
        registry.objects.compactMap { $0 as? any PersistentModel }
    }

    /// Called by a backing whose instance is going away.
    func unregister(_ root: ObjectIdentifier, _ id: Int64, _ backing: ModelBacking) {
        registry.remove(root: root, id: id, ifObject: backing.objectID)
    }

    /// The instance for the cursor's row: the registered one, or a new one with the row's values.
    func instance(at cursor: RowCursor, temporary: [Int64: AnyObject] = [:]) throws(DeckError) -> AnyObject {
        let layout = try materializer.layout(entity: cursor.entity, names: cursor.names)
        if let object = temporary[cursor.id] { return object }
        let root = layout.metadata.rootKey
        if let object = registry.object(root: root, id: cursor.id) { return object }
        let object = layout.metadata.makeInstance()
        let backing = ModelBacking.attach(
            to: object, metadata: layout.metadata, globalID: cursor.globalID ?? GlobalID.random(),
            context: self,
            rowID: cursor.id)
        try materializer.load(cursor, layout: layout, into: object, backing: backing)
        registry.register(object, root: root, id: cursor.id)
        return object
    }

    /// The models' metadata for records of `entity` (see ``RowMaterializer/metadata(forStored:)``).
    func metadata(forStored entity: String) -> ModelMetadata? {
        materializer.metadata(forStored: entity)
    }

    /// The query for record `id` of `entity`.
    func recordQuery(_ entity: String, id: Int64) -> RecordQuery {
        RecordQuery(entity, where: .recordID.equals(.value(.integer(id))), limit: 1)
    }

    /// Lazy and batch loading of this context's models.
    var faulting: Faulting { Faulting(context: self) }
}

/// Attribute access without the value type.
protocol AttributeValueAccess: AnyObject {
    /// How a fetch reads the property's cells.
    var cellKind: CellKind { get }
    func storeValue(in object: AnyObject, entity: String) throws(DeckError) -> Value
    func load(_ cell: Value, into object: AnyObject) -> Bool
    /// Sets the property from cell `cell` of a fetch's cursor; false when it does not hold one.
    func load(_ cursor: RowCursor, _ cell: Int, into object: AnyObject) -> Bool
}

extension AttributeAccessor: AttributeValueAccess {
    func storeValue(in object: AnyObject, entity: String) throws(DeckError) -> Value {
        do {
            return try storeValue(in: object)
        } catch {
            if case .invalidValue(_, _, let reason) = error {
                throw DeckError.invalidValue(entity: entity, property: name, reason: reason)
            }
            throw error
        }
    }
}
