import Foundation

// How long models live, and what they can still load.
//
// A loaded relationship holds its targets strongly, so two models that have loaded both sides of
// a pair hold each other, and neither the registry (which does not retain) nor anything else
// breaks that cycle by itself. It is broken by putting loaded relationships back to "not loaded"
// (``ModelBacking/unloadRelationship(_:_:)``): when the context goes away (``ModelContext/leaveModels()``),
// and after each batch of an enumeration (``ModelContext/unloadRelationships(reachedFrom:)``). A
// relationship with an unsaved change stays loaded: its value is the change.
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
        context.load(kind, property: accessor, of: object, backing: backing)
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
    /// record, the relationship is loaded, holds models and has no unsaved change, and (to-one) its
    /// target has a record to load again.
    func canUnloadRelationship(_ accessor: PropertyAccessor, _ relationship: any RelationshipDescribing)
        -> Bool
    {
        guard status == .persisted, rowID != nil, !needsLoading(accessor.index), !isChanged(accessor.index)
        else { return false }
        let targets = relationship.targets(in: object)
        guard let first = targets.first else { return false }
        return relationship.isToMany || ModelBacking.of(first).rowID != nil
    }

    /// Puts relationship `accessor` back to not loaded (``canUnloadRelationship(_:_:)`` said it can
    /// go): a to-one keeps its target's record id, a to-many reads the store again. The value does
    /// not change, so no observer is told: a to-one loads the same record again, a to-many what the
    /// store holds with the context's unsaved changes applied, as on its first read.
    func unloadRelationship(_ accessor: PropertyAccessor, _ relationship: any RelationshipDescribing) {
        if relationship.isToMany {
            setPending(accessor.index, .toMany)
        } else {
            let target = relationship.targets(in: object).first
            setPending(accessor.index, .toOne(target.flatMap { ModelBacking.of($0).rowID }))
        }
        relationship.setTargets([], in: object)
    }

    /// Whether a property is not loaded yet.
    var hasPendingProperty: Bool { pending.contains { $0 != nil } }

    /// Whether a relationship can go back to not loaded (``canUnloadRelationship(_:_:)``).
    var hasRelationshipToUnload: Bool {
        metadata.relationships.contains { canUnloadRelationship($0.accessor, $0.access) }
    }

    /// Puts every relationship that can go back to not loaded there.
    func unloadRelationships() {
        for (accessor, relationship) in metadata.relationships
        where canUnloadRelationship(accessor, relationship) {
            unloadRelationship(accessor, relationship)
        }
    }
}

extension ModelContext {
    /// Puts back to not loaded the relationships loaded on `models` (a batch of an enumeration)
    /// and on every model they lead to through loaded relationships, unless they have an unsaved
    /// change, so that none of them keeps the others alive: what the caller no longer holds goes
    /// away.
    func unloadRelationships(reachedFrom models: [AnyObject]) {
        var seen: Set<ObjectIdentifier> = []
        // Held until the end, so that no instance goes away (and gives its identity to another)
        // during the walk.
        var reached: [AnyObject] = []
        var waiting = models.filter { !ModelBacking.of($0).metadata.relationships.isEmpty }
        while let object = waiting.popLast() {
            guard seen.insert(ObjectIdentifier(object)).inserted else { continue }
            reached.append(object)
            let backing = ModelBacking.of(object)
            for (accessor, relationship) in backing.metadata.relationships
            where !backing.needsLoading(accessor.index) {
                let targets = relationship.targets(in: object)
                guard !targets.isEmpty else { continue }
                waiting.append(contentsOf: targets)
                if backing.canUnloadRelationship(accessor, relationship) {
                    backing.unloadRelationship(accessor, relationship)
                }
            }
        }
        withExtendedLifetime(reached) {}
    }

    /// As the context goes away: its models stop holding each other (their loaded relationships
    /// without unsaved changes go back to not loaded), and those that can still load something get
    /// the loader, so that a model still held loads what it has not loaded from the document as long
    /// as the document is open. Unsaved changes are lost with the context; the models keep them in
    /// memory (an unsaved relationship keeps holding its targets).
    func leaveModels() {
        let loader = self.loader ?? ModelLoader(store: store, schema: schema)
        // The context's weak references are nil now: no instance that goes away unregisters, so
        // the registry cannot change while it is read; those with relationships to unload are
        // collected, and unloaded once it has been read.
        var unloading: [AnyObject] = []
        func leave(_ object: AnyObject) {
            let backing = ModelBacking.of(object)
            let unloads = backing.hasRelationshipToUnload
            guard unloads || backing.hasPendingProperty else { return }
            backing.loader = loader
            if unloads { unloading.append(object) }
        }
        forEachRegisteredObject(leave)
        // Unsaved models (inserted ones are not registered): values still to read from a file.
        for object in inserted.values { leave(object) }
        for object in unloading { ModelBacking.of(object).unloadRelationships() }
    }
}
