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
                guard let relationship = accessor.relationshipAccess else { return }
                guard let id else { return backing.setToOne(nil, of: accessor, held: nil) }
                let destination = relationship.destinationMetadata
                // The common case, a target this context holds (the deck of the card before), in
                // a few dozen instructions.
                var target = context.registry.object(root: destination.rootKey, id: id)
                if let found = target, !destination.admits(found) { target = nil }
                if target == nil {
                    target =
                        try loadToOneOfNeighbours(
                            accessor, destination: destination, around: backing, target: id)
                        ?? instances(of: destination, ids: [id]).first
                }
                // A record gone (or of another entity) relates nothing.
                backing.setToOne(target == nil ? nil : .record(id), of: accessor, held: target)
            case .toMany:
                guard let relationship = accessor.relationshipAccess, let id = backing.rowID else { return }
                let ids = try context.store.read {
                    try $0.related(backing.metadata.entityName, id: id, accessor.name)
                }
                backing.storedTargets[accessor.index] = Set(ids)
                backing.setReferences(
                    overlay(
                        ids, of: object, backing: backing, accessor: accessor,
                        destination: relationship.destinationMetadata), of: accessor, toMany: true)
            case .one, .many:
                return
            }
        } catch {
            context.lastLoadError = DeckError.wrap(error)
            if case .closed(let path)? = context.lastLoadError {
                Self.documentClosed(path: path, property: accessor, of: backing)
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

    /// The models `references` (of relationship `accessor` of the model of `backing`) name, in
    /// order (``ModelBacking/resolve(_:of:destination:)``): the records through the registry, those
    /// without an instance here read in one statement. A record that is gone is left out; a
    /// failure to read is the context's ``ModelContext/lastLoadError``.
    func resolve(
        _ references: [ModelReference], of accessor: PropertyAccessor, destination: ModelMetadata,
        backing: ModelBacking
    ) -> [AnyObject] {
        var result: [AnyObject] = []
        result.reserveCapacity(references.count)
        var missing: [Int64] = []
        for reference in references {
            switch reference {
            case .model(let model): result.append(model)
            case .record(let id):
                if let object = context.registry.object(root: destination.rootKey, id: id),
                    destination.admits(object)
                {
                    result.append(object)
                } else {
                    missing.append(id)
                }
            }
        }
        guard !missing.isEmpty else { return result }
        // Some records have no instance here: read in one statement, then the list in its order.
        var read: [Int64: AnyObject] = [:]
        do {
            for object in try instances(of: destination, ids: missing) {
                if let id = ModelBacking.of(object).rowID { read[id] = object }
            }
        } catch {
            context.lastLoadError = error
            if case .closed(let path) = error {
                Self.documentClosed(path: path, property: accessor, of: backing)
            }
        }
        result.removeAll(keepingCapacity: true)
        for reference in references {
            switch reference {
            case .model(let model): result.append(model)
            case .record(let id):
                if let object = read[id]
                    ?? context.registry.object(root: destination.rootKey, id: id).flatMap({
                        destination.admits($0) ? $0 : nil
                    })
                {
                    result.append(object)
                }
            }
        }
        return result
    }

    /// Stops the program: property `accessor` of the model of `backing` was read after its
    /// document closed, before it was loaded. It cannot be loaded any more, and its default would
    /// be a wrong value that looks right (no deck, no cards, no image).
    static func documentClosed(path: String, property accessor: PropertyAccessor, of backing: ModelBacking)
        -> Never
    {
        fatalError(
            "DeckKit: \(backing.metadata.entityName).\(accessor.name) was read after its document closed, "
                + "before it was loaded, so it cannot be loaded any more (\(path)): keep the ModelContainer "
                + "while you use its models")
    }

    /// Loads relationship `keyPath` of every model of `objects` (of `metadata`'s entity or its
    /// subentities) that has not loaded it: one statement for the related ids of a to-many
    /// relationship, and one (per 10,000) for the related records, however many models there are.
    /// Returns the related models it made or found, which the caller keeps.
    func prefetch(_ keyPath: AnyKeyPath, of objects: [AnyObject], metadata: ModelMetadata) throws(DeckError)
        -> [AnyObject]
    {
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
            if case .toOne(let target)? = backing.pendingValue(index) {
                targets[id] = target.map { [$0] } ?? []
            }
        }
        guard !waiting.isEmpty else { return [] }
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
        if relationship.isToMany {
            for (object, backing, id) in waiting {
                backing.storedTargets[index] = Set(targets[id] ?? [])
                backing.setReferences(
                    overlay(
                        targets[id] ?? [], of: object, backing: backing, accessor: accessor,
                        destination: destination), of: accessor, toMany: true)
            }
            return found
        }
        var instancesByID: [Int64: AnyObject] = [:]
        for object in found {
            if let id = ModelBacking.of(object).rowID { instancesByID[id] = object }
        }
        for (_, backing, id) in waiting {
            let target = targets[id]?.first.flatMap { instancesByID[$0] }
            let reference = target.flatMap { ModelBacking.of($0).rowID }.map { [ModelReference.record($0)] }
            backing.setReferences(reference ?? [], of: accessor, toMany: false, held: target)
        }
        return found
    }

    /// A to-many relationship's targets as the store holds them (`ids`), with this context's
    /// unsaved changes to the other side applied: a model whose inverse changed here belongs if
    /// its inverse now holds `object`; deleted models do not belong. Only models with changes
    /// (which the context holds) are looked at; the rest stay ids.
    private func overlay(
        _ ids: [Int64], of object: AnyObject, backing: ModelBacking, accessor: PropertyAccessor,
        destination: ModelMetadata
    ) -> [ModelReference] {
        guard context.hasChanges else { return ids.map(ModelReference.record) }
        let inverseName = backing.metadata.inverseName(of: accessor.index)
        func decided(_ candidate: AnyObject) -> Bool? {
            let other = ModelBacking.of(candidate)
            if other.status == .deleted { return false }
            guard let inverseName, let inverse = other.metadata.property(named: inverseName),
                let relationship = inverse.relationshipAccess,
                other.status == .inserted || other.isChanged(inverse.index),
                !other.needsLoading(inverse.index)
            else { return nil }
            return relationship.holdsTarget(object, in: candidate)
        }
        var result: [ModelReference] = []
        result.reserveCapacity(ids.count)
        for id in ids {
            if let candidate = context.registry.object(root: destination.rootKey, id: id),
                destination.admits(candidate), decided(candidate) == false
            {
                continue
            }
            result.append(.record(id))
        }
        guard inverseName != nil else { return result }
        let stored = Set(ids)
        for candidate in Array(context.changes.inserted.values) + Array(context.changes.changed.values) {
            let other = ModelBacking.of(candidate)
            guard other.metadata.inherits(from: destination) else { continue }
            if other.status != .inserted, let id = other.rowID, stored.contains(id) { continue }
            if decided(candidate) == true { result.append(backing.reference(to: candidate)) }
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
                    // The relationships load again (the materializer makes them wait).
                    for (accessor, relationship) in backing.metadata.relationships
                    where !backing.needsLoading(accessor.index) {
                        backing.setReferences([], of: accessor, toMany: relationship.isToMany)
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
