/// The models of a context with unsaved changes: inserted (in the order of their insertion),
/// changed (saved models with changed properties) and deleted (in the order of their deletion),
/// held strongly until a save or a rollback. Each model is in one set at most.
struct ChangeTracker {
    private(set) var inserted: [ObjectIdentifier: AnyObject] = [:]
    private var insertionOrder: [ObjectIdentifier] = []
    private(set) var changed: [ObjectIdentifier: AnyObject] = [:]
    private(set) var deleted: [ObjectIdentifier: AnyObject] = [:]
    private var deletionOrder: [ObjectIdentifier] = []

    /// True when a model is inserted, changed or deleted.
    var hasChanges: Bool { !inserted.isEmpty || !changed.isEmpty || !deleted.isEmpty }

    /// The inserted models, in the order they were inserted.
    var insertedObjects: [AnyObject] { insertionOrder.compactMap { inserted[$0] } }

    /// The deleted models, in the order they were deleted.
    var deletedObjects: [AnyObject] { deletionOrder.compactMap { deleted[$0] } }

    /// Every model with an unsaved change.
    var allObjects: [AnyObject] { Array(inserted.values) + Array(changed.values) + Array(deleted.values) }

    mutating func insert(_ object: AnyObject) {
        let key = ObjectIdentifier(object)
        inserted[key] = object
        insertionOrder.append(key)
    }

    /// Forgets inserted model `key` (deleted before it was saved).
    mutating func removeInserted(_ key: ObjectIdentifier) {
        inserted[key] = nil
        insertionOrder.removeAll { $0 == key }
    }

    @inline(__always)
    mutating func change(_ object: AnyObject) {
        changed[ObjectIdentifier(object)] = object
    }

    mutating func delete(_ object: AnyObject) {
        let key = ObjectIdentifier(object)
        changed[key] = nil
        deleted[key] = object
        deletionOrder.append(key)
    }

    /// Forgets deleted model `key` (undeleted, or its record deleted by another writer).
    mutating func removeDeleted(_ key: ObjectIdentifier) {
        if deleted.removeValue(forKey: key) != nil { deletionOrder.removeAll { $0 == key } }
    }

    /// Forgets what `key` changed or deleted (its record is gone).
    mutating func forget(_ key: ObjectIdentifier) {
        changed[key] = nil
        removeDeleted(key)
    }

    /// Forgets every change (after a save or a rollback).
    mutating func removeAll() {
        self = ChangeTracker()
    }
}

extension ChangeTracker {
    /// Inserts `object` into `context` (``ModelContext/insert(_:)``), and the models it reaches
    /// through loaded relationships that are in no context yet.
    static func insert(_ object: AnyObject, into context: ModelContext) {
        let backing = ModelBacking.of(object)
        let key = ObjectIdentifier(object)
        // One inserted into a context that went away before saving it has no record: it is as
        // free as a new model.
        if backing.isFree { backing.status = .detached }
        switch backing.status {
        case .detached:
            guard backing.context == nil || backing.context === context else { return }
            backing.context = context
            backing.status = .inserted
            context.changes.insert(object)
            context.noteChangeForAutosave()
            // A model in no context is held as a model, never by a record id.
            for (accessor, _) in backing.metadata.relationships {
                switch backing.pendingValue(accessor.index) {
                case .one(.model(let target)?, _)?:
                    if ModelBacking.of(target).isFree { insert(target, into: context) }
                case .many(let references)?:
                    for case .model(let target) in references where ModelBacking.of(target).isFree {
                        insert(target, into: context)
                    }
                default: continue
                }
            }
        case .deleted where backing.context === context:
            context.changes.removeDeleted(key)
            backing.status = backing.rowID == nil ? .inserted : .persisted
            if backing.rowID == nil {
                context.changes.insert(object)
            } else if backing.hasChanges {
                context.changes.change(object)
            }
        default:
            guard backing.context !== context else { return }
            insertedElsewhere(backing)
        }
    }

    /// Stops the program: a model of another context, or of one that has gone, was inserted into
    /// this one. Ignoring it, as Deck once did, lost its changes without a word (its context would
    /// never save them, and this one did not take it). As in SwiftData ("Illegal attempt to insert
    /// a model in to a different model context"), a model belongs to one context for its life;
    /// another context reaches the same record through its `persistentModelID`.
    static func insertedElsewhere(_ backing: ModelBacking) -> Never {
        let entity = backing.metadata.entityName
        let whose =
            backing.context == nil
            ? "a context that has gone (its changes since then cannot be saved)"
            : "another context (\(backing.status == .deleted ? "deleted there" : "still held there"))"
        fatalError(
            "DeckKit: a \(entity) of \(whose) was inserted into a context: a model belongs to one context "
                + "for its life; to change its record in this context, change the model that "
                + "context.model(for: model.persistentModelID) gives")
    }

    /// Deletes `model` in `context` (``ModelContext/delete(_:)``).
    static func delete(_ model: AnyObject, from context: ModelContext) {
        let backing = ModelBacking.of(model)
        guard backing.context === context, backing.status != .deleted else { return }
        let key = ObjectIdentifier(model)
        if backing.status == .inserted {
            // Its targets while it is still in the context, which resolves them.
            var related: [(inverse: String, targets: [AnyObject])] = []
            for (accessor, relationship) in backing.metadata.relationships
            where !backing.needsLoading(accessor.index) {
                guard let inverse = backing.metadata.inverseName(of: accessor.index) else { continue }
                related.append((inverse, relationship.targets(in: model)))
            }
            context.changes.removeInserted(key)
            backing.holdReferencedModels()
            backing.status = .detached
            backing.context = nil
            // It leaves the loaded relationships that hold it as the inverse of its own: a deck's
            // loaded cards would still hold a card that is in no context, and the save would fail.
            for (inverse, targets) in related {
                for target in targets { InverseUpdate.remove(model, from: target, inverse: inverse) }
            }
            return
        }
        context.changes.delete(model)
        backing.status = .deleted
        context.noteChangeForAutosave()
    }

    /// Drops every change of `context` (``ModelContext/rollback()``): inserted models leave the
    /// context, deleted ones come back, changed ones read their saved values again.
    static func rollBack(in context: ModelContext) {
        for object in context.changes.insertedObjects {
            let backing = ModelBacking.of(object)
            backing.holdReferencedModels()
            backing.status = .detached
            backing.context = nil
        }
        let refresh = Array(context.changes.changed.values) + Array(context.changes.deleted.values)
        context.changes.removeAll()
        for object in refresh {
            let backing = ModelBacking.of(object)
            backing.status = .persisted
            context.faulting.reload(object, backing: backing)
        }
    }
}
