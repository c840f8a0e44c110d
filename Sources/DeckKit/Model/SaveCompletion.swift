/// The models brought in step with what their context wrote: after a save, the record ids the
/// inserted models got (and the identity of records an upsert matched), the registry, the values
/// written from files, the saved to-many relationships' stored links, and the models of deleted
/// records (cascades included), taken out of the relationships that hold them; after a
/// store-side delete (``ModelContext/delete(model:where:includeSubclasses:)``), the models of the
/// records it removed.
struct SaveCompletion {
    unowned(unsafe) let context: ModelContext

    /// Brings the models in step with a committed save.
    /// Returns the models the save deleted, those of cascades included.
    @discardableResult
    func finish(_ result: ModelContext.FlushResult, committed: ChangeSet) -> [AnyObject] {
        // Values written from files are read from the store from now on.
        for (object, index, value) in result.storedFromFiles {
            let backing = ModelBacking.of(object)
            if case .blob(let reference) = value {
                backing.setPending(index, .blob(reference))
            } else {
                backing.setPending(index, nil)
                _ = (backing.metadata.properties[index] as? any AttributeValueAccess)?.load(
                    value, into: object)
            }
        }
        // Instances of records an inserted model took over (an upsert): they read the saved
        // record again once the save is done.
        var displaced: [AnyObject] = []
        let adopted = result.outcome.adopted
        for (index, object) in result.inserted.enumerated() {
            let backing = ModelBacking.of(object)
            backing.rowID = result.outcome.recordIDs[index]
            if let gid = result.outcome.identified[index] { backing.adopt(gid) }
            if !adopted.isEmpty, let gid = adopted[index] {
                backing.adopt(gid)
                if let id = backing.rowID,
                    let held = context.registry.object(root: backing.metadata.rootKey, id: id),
                    held !== object
                {
                    displaced.append(held)
                }
            }
            backing.status = .persisted
            backing.clearChanges()
            if let id = backing.rowID {
                context.registry.register(object, root: backing.metadata.rootKey, id: id)
            }
        }
        for object in context.changes.changed.values { ModelBacking.of(object).clearChanges() }
        settleReferences(result.inserted)
        // What the saved to-many relationships hold in the store now; those the save merged
        // with other contexts' changes are read again.
        for object in result.inserted { noteStoredTargets(of: object) }
        for object in context.changes.changed.values { noteStoredTargets(of: object) }
        for (object, index) in result.rereadToMany {
            let backing = ModelBacking.of(object)
            guard backing.status == .persisted, !backing.needsLoading(index) else { continue }
            backing.storedTargets[index] = nil
            ModelBacking.notifying(object, backing, properties: [index]) {
                backing.setPending(index, .toMany)
            }
        }
        var gone: [AnyObject] = Array(context.changes.deleted.values)
        // Records deleted by cascades, and so their models here.
        for (entity, ids) in committed.deleted {
            guard let metadata = context.metadata(forStored: entity) else { continue }
            for id in ids {
                if let object = context.registry.object(root: metadata.rootKey, id: id) {
                    gone.append(object)
                }
            }
        }
        for object in gone {
            let backing = ModelBacking.of(object)
            if let id = backing.rowID {
                context.registry.remove(root: backing.metadata.rootKey, id: id)
            }
            backing.status = .deleted
            backing.rowID = nil
            backing.context = nil
            backing.clearChanges()
        }
        context.changes.removeAll()
        context.reread(displaced)
        // The store nullified references to deleted records: so do the models here, the deleted
        // ones included, telling the observers of the relationships that change.
        if !gone.isEmpty {
            let deleted = deletedRecords(committed)
            for object in gone { dropDeletedTargets(of: object, deleted: deleted) }
            dropDeletedTargets(committed, deleted: deleted)
        }
        return gone
    }

    /// Makes the references to the models the save gave records into record ids, so that no
    /// model holds them any more: in the saved models, and in the models their relationships
    /// reach (a loaded list of a deck that a new card joined, which the save did not change).
    private func settleReferences(_ inserted: [AnyObject]) {
        // First the saved records the inserted models name by id: their loaded lists may hold an
        // inserted model as a model (one loaded after it was related), though they did not change.
        var reached: [ObjectIdentifier: AnyObject] = [:]
        for object in inserted {
            let backing = ModelBacking.of(object)
            for (accessor, relationship) in backing.metadata.relationships {
                var ids: [Int64] = []
                switch backing.pendingValue(accessor.index) {
                case .one(.record(let id)?, _)?: ids = [id]
                case .many(let references)?:
                    for case .record(let id) in references { ids.append(id) }
                default: continue
                }
                guard !ids.isEmpty, backing.metadata.inverseName(of: accessor.index) != nil else { continue }
                let root = relationship.destinationMetadata.rootKey
                for id in ids {
                    if let target = context.registry.object(root: root, id: id) {
                        reached[ObjectIdentifier(target)] = target
                    }
                }
            }
        }
        for object in inserted { ModelBacking.of(object).settleReferences() }
        for object in context.changes.changed.values { ModelBacking.of(object).settleReferences() }
        for object in reached.values { ModelBacking.of(object).settleReferences() }
    }

    /// Records what `object`'s loaded to-many relationships hold, as the store now holds them
    /// (after its save): the base its next changes to them are merged onto.
    private func noteStoredTargets(of object: AnyObject) {
        let backing = ModelBacking.of(object)
        guard backing.status == .persisted else { return }
        for (accessor, relationship) in backing.metadata.relationships
        where relationship.isToMany && !backing.needsLoading(accessor.index) {
            backing.storedTargets[accessor.index] = Set(
                relationship.references(in: object).compactMap(ModelBacking.recordID))
        }
    }

    /// Takes the models of deleted records (`deleted`, and models marked deleted) out of
    /// `object`'s loaded relationships, telling their observers.
    private func dropDeletedTargets(of object: AnyObject, deleted: Set<RecordKey>) {
        let backing = ModelBacking.of(object)
        for (accessor, relationship) in backing.metadata.relationships
        where !backing.needsLoading(accessor.index) {
            let root = relationship.destinationMetadata.rootKey
            let references = relationship.references(in: object)
            let kept = references.filter {
                switch $0 {
                case .model(let model): ModelBacking.of(model).status != .deleted
                case .record(let id): !deleted.contains(RecordKey(root: root, id: id))
                }
            }
            guard kept.count != references.count else { continue }
            let drop = { backing.setReferences(kept, of: accessor, toMany: relationship.isToMany) }
            if let notify = accessor.observationNotifier {
                notify(object, backing, drop)
            } else {
                drop()
            }
        }
    }

    /// The records `changes` deleted, by root entity and id.
    private func deletedRecords(_ changes: ChangeSet) -> Set<RecordKey> {
        var keys: Set<RecordKey> = []
        for (entity, ids) in changes.deleted {
            guard let metadata = context.metadata(forStored: entity) else { continue }
            for id in ids { keys.insert(RecordKey(root: metadata.rootKey, id: id)) }
        }
        return keys
    }

    /// Marks the models of records a store-side delete removed as deleted.
    func forgetDeleted(_ changes: ChangeSet) {
        var gone: [AnyObject] = []
        for (entity, ids) in changes.deleted {
            guard let metadata = context.metadata(forStored: entity) else { continue }
            for id in ids {
                guard let object = context.registry.remove(root: metadata.rootKey, id: id) else { continue }
                let backing = ModelBacking.of(object)
                backing.status = .deleted
                backing.rowID = nil
                backing.context = nil
                gone.append(object)
            }
        }
        // The deleted models too, which are in no registry now (as in finish).
        let deleted = deletedRecords(changes)
        for object in gone { dropDeletedTargets(of: object, deleted: deleted) }
        dropDeletedTargets(changes, deleted: deleted)
    }

    /// Takes the deleted models out of the relationships of the models the store updated.
    private func dropDeletedTargets(_ changes: ChangeSet, deleted: Set<RecordKey>) {
        for (entity, ids) in changes.updated {
            guard let metadata = context.metadata(forStored: entity) else { continue }
            for id in ids {
                guard let object = context.registry.object(root: metadata.rootKey, id: id) else {
                    continue
                }
                dropDeletedTargets(of: object, deleted: deleted)
            }
        }
    }
}
