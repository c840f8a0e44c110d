import Foundation

/// Lazy and batch loading of a context's models: a property not loaded yet (a blob, a to-one
/// relationship's target, a to-many relationship) loads on its first read, a to-one target with
/// those of the models fetched after it (`Faulting+Batches.swift`), and a fetch's
/// `relationshipKeyPathsForPrefetching` load for all its models at once. The instances it needs
/// come from the context's registry, or are read in one statement and registered there.
///
/// A view over the context that makes it (``ModelContext/faulting``), which lives while it runs:
/// the only state of its own, the last fetch's record ids, is ``ModelContext/lastFetched``.
struct Faulting {
    unowned(unsafe) let context: ModelContext

    /// Loads a property that was not loaded yet (called from its getter).
    func load(
        _ kind: ModelBacking.Pending, property accessor: PropertyAccessor, of object: AnyObject,
        backing: ModelBacking
    ) {
        do {
            switch kind {
            case .blob(let reference):
                let data = try context.store.read { try $0.data(for: reference) }
                _ = (accessor as? any AttributeValueAccess)?.load(.data(data), into: object)
            case .file(let url):
                let data = try InputFile.contents(of: url)
                _ = (accessor as? any AttributeValueAccess)?.load(.data(data), into: object)
            // Read: the value is in memory now, and the save writes it from there.
            case .toOne(let id):
                guard let id, let relationship = accessor.relationshipAccess else { return }
                let destination = relationship.destinationMetadata
                // The common case, a target this context holds (the deck of the card before), in
                // a few dozen instructions.
                if let target = context.registry.object(root: destination.rootKey, id: id),
                    destination.admits(target)
                {
                    return accessor.setToOneTarget(target, in: object)
                }
                if let target = try loadToOneOfNeighbours(
                    accessor, destination: destination, around: backing, target: id)
                {
                    return accessor.setToOneTarget(target, in: object)
                }
                accessor.setToOneTarget(try instances(of: destination, ids: [id]).first, in: object)
            case .toMany:
                guard let relationship = accessor.relationshipAccess, let id = backing.rowID else { return }
                let destination = relationship.destinationMetadata
                let ids = try context.store.read {
                    try $0.related(backing.metadata.entityName, id: id, accessor.name)
                }
                let stored = try instances(of: destination, ids: ids)
                backing.storedTargets[accessor.index] = Set(ids)
                relationship.setTargets(
                    overlay(
                        stored, of: object, backing: backing, accessor: accessor,
                        destination: destination), in: object)
            }
        } catch {
            context.lastLoadError = DeckError.wrap(error)
            if case .closed(let path)? = context.lastLoadError {
                ModelLoader.documentClosed(path: path, property: accessor, of: backing)
            }
            // A file that cannot be read stays the value to save, so that the save fails rather
            // than write the default in its place.
            if case .file = kind { backing.setPending(accessor.index, kind) }
        }
    }

    /// The instances of records `ids` (registered ones, or fetched in one statement), in order.
    func instances(of destination: ModelMetadata, ids: [Int64]) throws(DeckError) -> [AnyObject] {
        var found: [Int64: AnyObject] = [:]
        var missing: [Int64] = []
        for id in ids {
            // An instance of a sibling entity (a damaged store's reference to a record of the
            // wrong entity) is not one of the destination's: the statement below leaves it out too.
            if let object = context.registry.object(root: destination.rootKey, id: id),
                destination.admits(object)
            {
                found[id] = object
            } else {
                missing.append(id)
            }
        }
        // One statement per 10,000 records: far below SQLite's limit on bound values.
        var start = 0
        while start < missing.count {
            let chunk = missing[start..<min(start + 10_000, missing.count)]
            let query = RecordQuery(
                destination.entityName, where: .recordID.isIn(chunk.map { .value(.integer($0)) }))
            try context.store.forEachRow(query) { cursor throws(DeckError) in
                found[cursor.id] = try context.instance(at: cursor)
            }
            start += chunk.count
        }
        return ids.compactMap { found[$0] }
    }

    /// Loads relationship `keyPath` of every model of `objects` (of `metadata`'s entity or its
    /// subentities) that has not loaded it: one statement for the related ids of a to-many
    /// relationship, and one (per 10,000) for the related records, however many models there are.
    func prefetch(_ keyPath: AnyKeyPath, of objects: [AnyObject], metadata: ModelMetadata) throws(DeckError) {
        let path = metadata.resolve(keyPath)
        guard path.count == 1, let accessor = path.first,
            let relationship = accessor as? any RelationshipDescribing
        else {
            throw DeckError.invalidQuery(
                "relationshipKeyPathsForPrefetching: \(keyPath) is not a relationship of \(metadata.type)")
        }
        let index = accessor.index
        var waiting: [(object: AnyObject, backing: ModelBacking, id: Int64)] = []
        var targets: [Int64: [Int64]] = [:]
        for object in objects {
            let backing = ModelBacking.of(object)
            guard backing.needsLoading(index), let id = backing.rowID else { continue }
            waiting.append((object, backing, id))
            if case .toOne(let target)? = backing.pending[index] { targets[id] = target.map { [$0] } ?? [] }
        }
        guard !waiting.isEmpty else { return }
        if relationship.isToMany {
            let owners = waiting.map(\.id)
            do {
                targets = try context.store.read {
                    try $0.related(metadata.entityName, ids: owners, accessor.name)
                }
            } catch {
                throw DeckError.wrap(error)
            }
        }
        let destination = ModelMetadata.of(relationship.destinationType)
        let all = Array(Set(targets.values.joined()))
        let found = try instances(of: destination, ids: all)
        var instancesByID: [Int64: AnyObject] = [:]
        for object in found {
            if let id = ModelBacking.of(object).rowID { instancesByID[id] = object }
        }
        for (object, backing, id) in waiting {
            let related = (targets[id] ?? []).compactMap { instancesByID[$0] }
            backing.setPending(index, nil)
            if relationship.isToMany {
                backing.storedTargets[index] = Set(targets[id] ?? [])
                relationship.setTargets(
                    overlay(
                        related, of: object, backing: backing, accessor: accessor, destination: destination),
                    in: object)
            } else {
                relationship.setTargets(related, in: object)
            }
        }
    }

    /// A to-many relationship loaded from the store, with this context's unsaved changes to the
    /// other side applied: a model whose inverse changed here belongs if its inverse now holds
    /// `object`; deleted models do not belong.
    private func overlay(
        _ stored: [AnyObject], of object: AnyObject, backing: ModelBacking, accessor: PropertyAccessor,
        destination: ModelMetadata
    ) -> [AnyObject] {
        guard context.hasChanges, let inverseName = backing.metadata.inverseName(of: accessor.index)
        else {
            return stored.filter { ModelBacking.of($0).status != .deleted }
        }
        func decided(_ candidate: AnyObject) -> Bool? {
            let other = ModelBacking.of(candidate)
            if other.status == .deleted { return false }
            guard let inverse = other.metadata.property(named: inverseName) as? any RelationshipDescribing,
                let index = other.metadata.property(named: inverseName)?.index,
                other.status == .inserted || other.isChanged(index), !other.needsLoading(index)
            else { return nil }
            return inverse.targets(in: candidate).contains { $0 === object }
        }
        var result = stored.filter { decided($0) ?? true }
        for candidate in Array(context.changes.inserted.values) + Array(context.changes.changed.values)
        where ModelBacking.of(candidate).metadata.inherits(from: destination)
            && !result.contains(where: { $0 === candidate }) && decided(candidate) == true
        {
            result.append(candidate)
        }
        return result
    }

    /// Reads `object`'s saved values again (after a rollback).
    /// Observers of the properties that change are told.
    func reload(_ object: AnyObject, backing: ModelBacking) {
        let changedProperties = backing.metadata.properties.indices.filter(backing.isChanged)
        // The loaded relationships go back to not loaded: their observers are told too, since what
        // is not loaded changes without telling anyone (inverse changes, merges skip it).
        let told =
            changedProperties
            + backing.metadata.relationships.map(\.accessor.index).filter {
                !backing.needsLoading($0) && !backing.isChanged($0)
            }
        backing.clearChanges()
        guard let id = backing.rowID else { return }
        do {
            var found = false
            try context.store.forEachRow(context.recordQuery(backing.metadata.entityName, id: id)) {
                cursor throws(DeckError) in
                found = true
                let layout = try context.materializer.layout(entity: cursor.entity, names: cursor.names)
                var failure: DeckError?
                ModelBacking.notifying(object, backing, properties: told) {
                    // The relationships load again: they let go of what they held (see
                    // ModelBacking.setRelationshipPending).
                    for (accessor, relationship) in backing.metadata.relationships
                    where !backing.needsLoading(accessor.index) {
                        relationship.setTargets([], in: object)
                    }
                    do throws(DeckError) {
                        try context.materializer.load(cursor, layout: layout, into: object, backing: backing)
                    } catch {
                        failure = error
                    }
                }
                if let failure { throw failure }
            }
            if !found { backing.status = .deleted }
        } catch {
            context.lastLoadError = DeckError.wrap(error)
        }
    }
}
