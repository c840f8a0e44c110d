import Foundation

// How long models live, and what they can still load.
//
// A loaded relationship holds its targets strongly, so two models that have loaded both sides of
// a pair hold each other, and neither the registry (which does not retain) nor anything else
// breaks that cycle by itself. It is broken by putting loaded relationships back to "not loaded"
// (``ModelBacking/unloadRelationship(_:_:)``): when the context goes away (``LeavingPass/leave(_:)``),
// after each batch of an enumeration (``CycleBreaker/unloadRelationships(reachedFrom:schema:)``), and when
// the user asks (``ModelContext/unloadRelationships()``). A relationship with an unsaved change
// stays loaded: its value is the change.
//
// A model keeps its context weakly. Once the context is gone, what the model has not loaded loads
// through the ``ModelLoader`` the context left it, into instances that have no context.

/// What a context's models load through once the context is gone: the document's store and the
/// models' schema, with which a load makes the instances it needs (``load(_:property:of:backing:)``).
///
/// Holding the store does not keep the document open: its container closes it when it goes away,
/// and a load after that stops the program (``documentClosed(path:property:of:)``). The context
/// hands its loader to its models as it goes away, rather than each model holding it from the
/// start: a fetch then pays for no reference per model.
final class ModelLoader {
    let store: PackageStore
    let schema: Schema

    init(store: PackageStore, schema: Schema) {
        self.store = store
        self.schema = schema
    }

    /// Loads property `accessor` of `object`, whose context is gone, as its context would have.
    /// The instances of related records it makes have no context and are registered nowhere; each
    /// such load makes its own (compare them by `persistentModelID`); they load through this
    /// loader too. A failure other than a closed document leaves the property at its default, with
    /// no context to report it to.
    func load(
        _ kind: ModelBacking.Pending, property accessor: PropertyAccessor, of object: AnyObject,
        backing: ModelBacking
    ) {
        // A context of no container, for the load only: the instances it makes lose it when it goes
        // away, at the end of this scope, and keep this loader.
        let context = ModelContext(loader: self)
        context.faulting.load(kind, property: accessor, of: object, backing: backing)
    }

    /// Stops the program: property `accessor` of the model of `backing` was read after its document
    /// closed, before it was loaded. It cannot be loaded any more, and its default would be a wrong
    /// value that looks right (no deck, no cards, no image). As in SwiftData and Core Data, this is
    /// a misuse: keep the container while its models are read.
    static func documentClosed(path: String, property accessor: PropertyAccessor, of backing: ModelBacking)
        -> Never
    {
        fatalError(
            "DeckKit: \(backing.metadata.entityName).\(accessor.name) was read after its document closed, "
                + "before it was loaded, so it cannot be loaded any more (\(path)): keep the ModelContainer "
                + "while you use its models")
    }
}

extension ModelBacking {
    /// Loads property `index`, waiting as `kind`, of an instance whose context is gone: through the
    /// loader its context left. Without one (a model whose deletion was saved, one that an
    /// insert's rollback took out of its context), a value to be read from a file is read from it,
    /// and anything else keeps its default: there is no record to read it from.
    func loadWithoutContext(_ kind: Pending, _ index: Int) {
        let accessor = metadata.properties[index]
        if let loader {
            loader.load(kind, property: accessor, of: object, backing: self)
        } else if case .file(let url) = kind {
            guard let data = try? InputFile.contents(of: url) else {
                // Still the value to save, as with a context.
                return setPending(index, kind)
            }
            _ = (accessor as? any AttributeValueAccess)?.load(.data(data), into: object)
        }
    }

    /// Whether relationship `accessor` can go back to not loaded: the model stands for a saved
    /// record (deleted or not: a deletion not saved yet keeps the record, and the model would
    /// otherwise keep a deck and its cards together after the context is gone), the relationship
    /// is loaded, holds models and has no unsaved change, and (to-one) its target has a record to
    /// load again.
    func canUnloadRelationship(_ accessor: PropertyAccessor, _ relationship: any RelationshipDescribing)
        -> Bool
    {
        guard status == .persisted || status == .deleted, rowID != nil, !needsLoading(accessor.index),
            !isChanged(accessor.index)
        else { return false }
        guard relationship.isToMany else {
            return accessor.toOneTarget(in: object).map { ModelBacking.of($0).rowID != nil } ?? false
        }
        return !relationship.targets(in: object).isEmpty
    }

    /// Puts relationship `accessor` back to not loaded (``canUnloadRelationship(_:_:)`` said it can
    /// go): a to-one keeps its target's record id, a to-many reads the store again (what the store
    /// holds with the context's unsaved changes applied, as on its first read). The observers of the
    /// property, if any, are told: what is not loaded changes without telling anyone (an inverse
    /// change here, a merge, a save's deletions skip it), so they read it again now, and load it.
    func unloadRelationship(_ accessor: PropertyAccessor, _ relationship: any RelationshipDescribing) {
        let unload = { [self] in
            if relationship.isToMany {
                setPending(accessor.index, .toMany)
            } else {
                let target = accessor.toOneTarget(in: object)
                setPending(accessor.index, .toOne(target.flatMap { ModelBacking.of($0).rowID }))
            }
            relationship.setTargets([], in: object)
        }
        guard observation != nil, let notify = accessor.observationNotifier else { return unload() }
        notify(object, self, unload)
    }

    /// Whether a property is not loaded yet.
    var hasPendingProperty: Bool { pending.contains { $0 != nil } }
}

/// Which loaded relationships go back to not loaded so that models stop holding each other: the
/// decisions of one pass over models, made once per model type.
///
/// Models hold each other through a cycle of loaded relationships. A cycle that goes through a
/// to-many relationship breaks when that relationship goes back to not loaded; one made of to-one
/// relationships only passes through to-ones whose destinations (or their subentities, or
/// ancestors) have a to-one relationship themselves. So every to-many relationship goes, and a
/// to-one only when it can be part of a cycle of to-ones: `deck.cards` goes, and `card.deck` stays
/// (a deck has no to-one), so a card keeps the deck instance it read, and what is reachable from a
/// model still held stays as it was. A pass may meet every model of a context: what it decides per
/// type is kept, the last type first.
final class CycleBreaker {
    /// What a pass does with the models of one type.
    struct Plan {
        /// Whether a property of the type can be not loaded (a relationship, a data attribute in a
        /// blob file or to be read from a file): whether a model of it can need a loader.
        let canWait: Bool
        /// The relationships that go back to not loaded when they can.
        let breaking: [(accessor: PropertyAccessor, access: any RelationshipDescribing)]
    }

    private let schema: Schema
    @exclusivity(unchecked) private var plans: [ObjectIdentifier: Plan] = [:]
    @exclusivity(unchecked) private var last: (metadata: ObjectIdentifier, plan: Plan)?
    /// The root entities (by ``ModelMetadata/rootKey``) with a model type whose models can wait
    /// for a property: the models of the others need nothing from a pass.
    let rootsThatWait: Set<ObjectIdentifier>

    init(schema: Schema) {
        self.schema = schema
        var roots: Set<ObjectIdentifier> = []
        for metadata in schema.metadata.values where Self.canWait(metadata) { roots.insert(metadata.rootKey) }
        rootsThatWait = roots
    }

    /// Whether a property of `metadata`'s type can be not loaded: a relationship, or a data
    /// attribute (in a blob file, or to be read from a file).
    static func canWait(_ metadata: ModelMetadata) -> Bool {
        !metadata.relationships.isEmpty
            || metadata.attributes.contains {
                ($0.accessor as? any AttributeDescribing)?.attributeType == .data
            }
    }

    /// The plan for models of `metadata`'s type.
    func plan(_ metadata: ModelMetadata) -> Plan {
        let key = ObjectIdentifier(metadata)
        if let last, last.metadata == key { return last.plan }
        let plan = plans[key] ?? makePlan(metadata)
        plans[key] = plan
        last = (key, plan)
        return plan
    }

    private func makePlan(_ metadata: ModelMetadata) -> Plan {
        let breaking = metadata.relationships.filter { _, relationship in
            guard !relationship.isToMany else { return true }
            let destination = ModelMetadata.of(relationship.destinationType)
            let hierarchy =
                [destination] + schema.metadata.values.filter { $0.rootKey == destination.rootKey }
            return hierarchy.contains { $0.relationships.contains { !$0.access.isToMany } }
        }
        return Plan(canWait: Self.canWait(metadata), breaking: breaking)
    }

    /// Whether `backing` has a relationship that breaks cycles and can go back to not loaded.
    func hasRelationshipToUnload(_ backing: ModelBacking) -> Bool {
        plan(backing.metadata).breaking.contains { backing.canUnloadRelationship($0.accessor, $0.access) }
    }

    /// Whether relationship `accessor` of `backing` breaks cycles and can go back to not loaded.
    func unloads(_ accessor: PropertyAccessor, of backing: ModelBacking) -> Bool {
        plan(backing.metadata).breaking.contains {
            $0.accessor === accessor && backing.canUnloadRelationship($0.accessor, $0.access)
        }
    }

    /// Puts back to not loaded the relationships of `backing` that break cycles and can go.
    func unloadRelationships(of backing: ModelBacking) {
        for (accessor, relationship) in plan(backing.metadata).breaking
        where backing.canUnloadRelationship(accessor, relationship) {
            backing.unloadRelationship(accessor, relationship)
        }
    }

    /// Puts back to not loaded the relationships of every model `context` holds that break
    /// cycles (``ModelContext/unloadRelationships()``).
    static func unloadRelationships(in context: ModelContext) {
        // Collected first: unloading may end instances, and the registry with them.
        let breaker = CycleBreaker(schema: context.schema)
        var models: [AnyObject] = []
        context.registry.forEachObject(inRoots: breaker.rootsThatWait.contains) { object in
            if breaker.hasRelationshipToUnload(ModelBacking.of(object)) { models.append(object) }
        }
        for object in models { breaker.unloadRelationships(of: ModelBacking.of(object)) }
    }

    /// Puts back to not loaded the relationships loaded on `models` (a batch of an enumeration)
    /// and on every model they lead to through loaded relationships, unless they have an unsaved
    /// change, so that none of them keeps the others alive: what the caller no longer holds goes
    /// away.
    static func unloadRelationships(reachedFrom models: [AnyObject], schema: Schema) {
        let breaker = CycleBreaker(schema: schema)
        var seen: Set<ObjectIdentifier> = []
        // Held until the end, so that no instance goes away (and gives its identity to another)
        // during the walk.
        var reached: [AnyObject] = []
        // Models without relationships hold no model: passed over, by type (a batch is of one type
        // or a few), so that an enumeration of them pays next to nothing.
        var waiting: [AnyObject] = []
        var lastType: ObjectIdentifier?
        var related = false
        for model in models {
            let type = ObjectIdentifier(Swift.type(of: model))
            if type != lastType {
                lastType = type
                related = !ModelBacking.of(model).metadata.relationships.isEmpty
            }
            if related { waiting.append(model) }
        }
        while let object = waiting.popLast() {
            guard seen.insert(ObjectIdentifier(object)).inserted else { continue }
            reached.append(object)
            let backing = ModelBacking.of(object)
            for (accessor, relationship) in backing.metadata.relationships
            where !backing.needsLoading(accessor.index) {
                if relationship.isToMany {
                    let targets = relationship.targets(in: object)
                    guard !targets.isEmpty else { continue }
                    waiting.append(contentsOf: targets)
                } else {
                    guard let target = accessor.toOneTarget(in: object) else { continue }
                    waiting.append(target)
                }
                if breaker.unloads(accessor, of: backing) {
                    backing.unloadRelationship(accessor, relationship)
                }
            }
        }
        withExtendedLifetime(reached) {}
    }
}

extension ModelContext {
    /// Puts every loaded relationship of the context's saved models back to not loaded, unless it
    /// has an unsaved change, so that related models stop holding each other: those that nothing
    /// else holds go away, and a later read loads them again from the store (a Deck addition, like
    /// Core Data's `refreshAllObjects()` for relationships).
    ///
    /// A model's relationships hold their targets strongly, so two models that have loaded both
    /// sides of a relationship (`card.deck` and `deck.cards`) keep each other alive until the
    /// context goes away, or until this call. A long-lived context that reads many related models,
    /// such as the main context of an app that browses thousands of decks, can call it where it
    /// leaves a screen, or when memory is short:
    ///
    /// ```swift
    /// context.unloadRelationships()  // decks and cards not shown any more can go
    /// ```
    ///
    /// A to-one relationship loads the same record again, a to-many one what the store holds, with
    /// the context's unsaved changes applied. The observers of a relationship that goes are told,
    /// so that they read it again (what is not loaded changes without telling anyone, until it is
    /// read): a view still shown loads its models again. Attributes stay as they are. ``enumerate(_:batchSize:block:)`` does this for each batch's models by
    /// itself.
    public func unloadRelationships() {
        CycleBreaker.unloadRelationships(in: self)
    }
}

/// The state of ``LeavingPass/leave(_:)``, reached from the registry's walk without
/// capturing variables.
final class LeavingPass {
    let breaker: CycleBreaker
    private let given: ModelLoader?
    private let store: PackageStore
    private let schema: Schema
    @exclusivity(unchecked) private var made: ModelLoader?
    @exclusivity(unchecked) private var unloading: [AnyObject] = []
    /// The type of the model met last, and what its models need: whether they can wait for
    /// anything, and the relationships that may go.
    @exclusivity(unchecked) private var lastType: ObjectIdentifier?
    @exclusivity(unchecked) private var canWait = false
    @exclusivity(unchecked) private var breaking:
        [(accessor: PropertyAccessor, access: any RelationshipDescribing)] =
            []

    init(breaker: CycleBreaker, loader: ModelLoader?, store: PackageStore, schema: Schema) {
        self.breaker = breaker
        given = loader
        self.store = store
        self.schema = schema
    }

    /// As the context goes away: its models stop holding each other (their loaded relationships
    /// without unsaved changes go back to not loaded), and those that can still load something get
    /// the loader, so that a model still held loads what it has not loaded from the document as long
    /// as the document is open. Unsaved changes are lost with the context; the models keep them in
    /// memory (an unsaved relationship keeps holding its targets).
    ///
    /// It costs nothing for models that can wait for nothing (no relationship, no data attribute),
    /// and little for the others, each read once: a context often goes before the models it
    /// fetched.
    static func leave(_ context: ModelContext) {
        let pass = LeavingPass(
            breaker: CycleBreaker(schema: context.schema), loader: context.loader, store: context.store,
            schema: context.schema)
        // The context's weak references are nil now: no instance that goes away unregisters, so
        // the registry cannot change while it is read; the models with relationships to unload are
        // collected, and unloaded once it has been read.
        context.registry.forEachObject(inRoots: pass.breaker.rootsThatWait.contains) { pass.leave($0) }
        // Unsaved models (inserted ones are not registered): values still to read from a file.
        for object in context.changes.inserted.values { pass.leave(object) }
        pass.unload()
    }

    /// The context's loader, made on first need.
    private var loader: ModelLoader {
        if let loader = given ?? made { return loader }
        let loader = ModelLoader(store: store, schema: schema)
        made = loader
        return loader
    }

    /// Gives `object` the loader if it can still load something, and notes it if it has
    /// relationships to unload. Most of a context's models are of a few types, met in runs (the
    /// registry keeps a table per root entity): what a type needs is found once per run.
    func leave(_ object: AnyObject) {
        let type = ObjectIdentifier(Swift.type(of: object))
        if type != lastType {
            let metadata = ModelBacking.of(object).metadata
            let plan = breaker.plan(metadata)
            lastType = type
            canWait = plan.canWait
            breaking = plan.breaking
        }
        guard canWait else { return }
        // The backing, without looking the type up again (a registered model is a ModelObject
        // with its backing).
        guard let backing = unsafeDowncast(object, to: ModelObject.self).backing else { return }
        let unloads =
            !breaking.isEmpty && breaking.contains { backing.canUnloadRelationship($0.accessor, $0.access) }
        guard unloads || backing.hasPendingProperty else { return }
        backing.loader = loader
        if unloads { unloading.append(object) }
    }

    /// Unloads what ``leave(_:)`` noted.
    func unload() {
        for object in unloading { breaker.unloadRelationships(of: ModelBacking.of(object)) }
        unloading = []
    }
}
