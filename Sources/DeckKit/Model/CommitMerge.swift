import Foundation

/// One application of other writers' commits to a context's models
/// (``ModelContext/mergeCommittedChanges()``, ``ModelContext/reread(_:)``): the models of updated
/// records read their rows again (one statement per entity per 10,000 records, with the targets
/// of their loaded to-many relationships, in one snapshot) and take what differs, their observers
/// told; the models of deleted records are marked deleted and leave the relationships that hold
/// them. A property with an unsaved change keeps it (the local change wins at the next save); an
/// external value that changed is read again from its blob file when next read; a loaded
/// relationship whose records differ is loaded again when next read. See "Merging" in
/// ARCHITECTURE.md.
struct CommitMerge {
    unowned(unsafe) let context: ModelContext
    /// The registered models of updated records, by metadata and record id.
    var updated: [ObjectIdentifier: (metadata: ModelMetadata, objects: [Int64: AnyObject])] = [:]
    /// The models whose records are gone.
    var gone: [ObjectIdentifier: AnyObject] = [:]
    /// What differs in each updated model's row.
    var rows: [RowChange] = []
    /// The stored targets of the loaded, unchanged to-many relationships of updated models:
    /// by metadata and relationship name, by record id.
    var related: [ObjectIdentifier: [String: [Int64: [Int64]]]] = [:]

    mutating func noteUpdated(_ object: AnyObject) {
        let backing = ModelBacking.of(object)
        // A model deleted here and not saved yet stays as it is until its save.
        guard backing.status == .persisted, let id = backing.rowID, gone[ObjectIdentifier(object)] == nil
        else { return }
        updated[ObjectIdentifier(backing.metadata), default: (backing.metadata, [:])].objects[id] = object
    }

    mutating func noteGone(_ object: AnyObject) {
        let backing = ModelBacking.of(object)
        gone[ObjectIdentifier(object)] = object
        if let id = backing.rowID { updated[ObjectIdentifier(backing.metadata)]?.objects[id] = nil }
    }

    init(context: ModelContext) {
        self.context = context
    }

    /// Notes the models of the records that an inbox's `contents` name: every registered model
    /// for `everything`.
    mutating func note(_ contents: MergeInbox.Contents) {
        switch contents {
        case .everything:
            for model in context.registeredModels { noteUpdated(model) }
        case .changes(let sets):
            for changes in sets {
                for (entity, ids) in changes.deleted {
                    guard let metadata = context.metadata(forStored: entity) else { continue }
                    for id in ids {
                        if let object = context.registry.object(root: metadata.rootKey, id: id) {
                            noteGone(object)
                        }
                    }
                }
                for (entity, ids) in changes.updated {
                    guard let metadata = context.metadata(forStored: entity) else { continue }
                    for id in ids {
                        if let object = context.registry.object(root: metadata.rootKey, id: id) {
                            noteUpdated(object)
                        }
                    }
                }
            }
        }
    }

    /// Reads the rows of the updated models and applies what differs, and the deletions.
    mutating func run() {
        do {
            for group in updated.values {
                let ids = group.objects.keys.sorted()
                var start = 0
                // One statement per 10,000 records: far below SQLite's limit on bound values.
                while start < ids.count {
                    let chunk = Array(ids[start..<min(start + 10_000, ids.count)])
                    try readRows(of: group.metadata, ids: chunk, objects: group.objects)
                    start += chunk.count
                }
            }
        } catch {
            // A closed store (a main context whose container went away) has nothing to merge.
            if case .closed = error {} else { context.lastLoadError = error }
        }
        // The records gone, by root entity and id (their models forget their ids below).
        var goneRecords: Set<RecordKey> = []
        for object in gone.values {
            let backing = ModelBacking.of(object)
            if let id = backing.rowID {
                goneRecords.insert(RecordKey(root: backing.metadata.rootKey, id: id))
            }
        }
        for object in gone.values { markDeletedElsewhere(object) }
        for row in rows { apply(row, related: related) }
        if !gone.isEmpty { dropTargets(gone, records: goneRecords) }
    }

    /// A property's saved value, when it differs from the model's.
    enum NewValue {
        case value(Value)
        case blob(BlobReference)
    }

    /// What differs between an updated model and its row.
    struct RowChange {
        let object: AnyObject
        let id: Int64
        var attributes: [(index: Int, value: NewValue)] = []
        var toOne: [(index: Int, id: Int64?)] = []
    }

    /// Reads the rows of records `ids` (models `objects` of `metadata`) and the targets of their
    /// loaded to-many relationships, in one snapshot; notes what differs, and the records gone.
    private mutating func readRows(of metadata: ModelMetadata, ids: [Int64], objects: [Int64: AnyObject])
        throws(DeckError)
    {
        var found: Set<Int64> = []
        var rows: [RowChange] = []
        var related: [String: [Int64: [Int64]]] = [:]
        var positions: (names: [String], of: [String: Int]) = ([], [:])
        do {
            try context.store.read { reader in
                let query = RecordQuery(
                    metadata.entityName, where: .recordID.isIn(ids.map { .value(.integer($0)) }))
                try context.store.forEachRow(query, in: reader) { cursor throws(DeckError) in
                    guard let object = objects[cursor.id] else { return }
                    let backing = ModelBacking.of(object)
                    // Another record under the same id is another record (ids are not reused
                    // since format 2; a format 1 store read-only might).
                    if let globalID = cursor.globalID, globalID != backing.identifier.id { return }
                    found.insert(cursor.id)
                    if positions.names != cursor.names {
                        positions = (
                            cursor.names,
                            Dictionary(
                                cursor.names.enumerated().map { ($1, $0) },
                                uniquingKeysWith: { first, _ in first })
                        )
                    }
                    rows.append(differences(of: object, backing, from: cursor, positions: positions.of))
                }
                // The stored targets of the to-many relationships that are loaded and unchanged here.
                for (accessor, relationship) in metadata.relationships where relationship.isToMany {
                    let owners = ids.filter { id in
                        guard found.contains(id), let object = objects[id] else { return false }
                        let backing = ModelBacking.of(object)
                        return !backing.needsLoading(accessor.index) && !backing.isChanged(accessor.index)
                    }
                    guard !owners.isEmpty else { continue }
                    related[accessor.name] = try reader.related(
                        metadata.entityName, ids: owners, accessor.name)
                }
            }
        } catch {
            throw DeckError.wrap(error)
        }
        for id in ids where !found.contains(id) {
            if let object = objects[id] { noteGone(object) }
        }
        self.rows += rows
        self.related[ObjectIdentifier(metadata), default: [:]].merge(related) { $1 }
    }

    /// The attributes and to-one relationships of `object` that its row holds otherwise, leaving
    /// out those with unsaved changes here.
    private func differences(
        of object: AnyObject, _ backing: ModelBacking, from cursor: RowCursor, positions: [String: Int]
    ) -> RowChange {
        var change = RowChange(object: object, id: cursor.id)
        let entity = backing.metadata.entityName
        for (accessor, access) in backing.metadata.attributes {
            let index = accessor.index
            guard !backing.isChanged(index), let cell = positions[accessor.name] else { continue }
            let saved = cursor.value(cell)
            let pending = backing.pendingValue(index)
            if case .blob(let reference) = saved {
                if case .blob(let old)? = pending, old.digest == reference.digest { continue }
                // A value read from its file already: the same bytes have the same digest.
                if pending == nil,
                    case .data(let bytes)? = try? access.storeValue(in: object, entity: entity),
                    Int64(bytes.count) == reference.size, SHA256Hasher.hash(bytes) == reference.digest
                {
                    continue
                }
                change.attributes.append((index, .blob(reference)))
            } else {
                if pending == nil, (try? access.storeValue(in: object, entity: entity)) == saved { continue }
                change.attributes.append((index, .value(saved)))
            }
        }
        for (accessor, relationship) in backing.metadata.relationships where !relationship.isToMany {
            let index = accessor.index
            guard !backing.isChanged(index) else { continue }
            var saved: Int64?
            if let cell = positions[accessor.name], case .reference(let id) = cursor.value(cell) {
                saved = id
            }
            let current: Int64?
            if case .toOne(let id)? = backing.pendingValue(index) {
                current = id
            } else {
                current = relationship.references(in: object).first.flatMap(ModelBacking.recordID)
            }
            if current != saved { change.toOne.append((index, saved)) }
        }
        return change
    }

    /// Sets what differs in an updated model, telling the observers of each property that changes;
    /// a loaded to-many relationship whose stored targets differ goes back to loading when read.
    private func apply(_ row: RowChange, related: [ObjectIdentifier: [String: [Int64: [Int64]]]]) {
        let object = row.object
        let backing = ModelBacking.of(object)
        guard backing.status == .persisted, backing.rowID == row.id else { return }
        var stale: [Int] = []
        if let targets = related[ObjectIdentifier(backing.metadata)] {
            for (accessor, relationship) in backing.metadata.relationships where relationship.isToMany {
                let index = accessor.index
                guard let byOwner = targets[accessor.name], !backing.needsLoading(index),
                    !backing.isChanged(index)
                else { continue }
                let saved = byOwner[row.id] ?? []
                let loaded = relationship.references(in: object).map(ModelBacking.recordID)
                if loaded.count != saved.count || Set(loaded) != Set(saved.map { Optional($0) }) {
                    stale.append(index)
                }
            }
        }
        let indices = row.attributes.map(\.index) + row.toOne.map(\.index) + stale
        guard !indices.isEmpty else { return }
        var failure: DeckError?
        ModelBacking.notifying(object, backing, properties: indices) {
            for (index, value) in row.attributes {
                switch value {
                case .blob(let reference) where backing.canWait(index):
                    backing.setPending(index, .blob(reference))
                case .blob:
                    let accessor = backing.metadata.properties[index]
                    failure = DeckError.invalidValue(
                        entity: backing.metadata.entityName, property: accessor.name,
                        reason:
                            "record #\(row.id) holds external data, which a \(accessor.typeDescription) cannot hold"
                    )
                case .value(let value):
                    backing.setPending(index, nil)
                    let accessor = backing.metadata.properties[index]
                    if (accessor as? any AttributeValueAccess)?.load(value, into: object) != true {
                        if let mismatch = (accessor as? any AttributeDescribing)?.mismatch(value) {
                            failure = DeckError.invalidValue(
                                entity: backing.metadata.entityName, property: accessor.name,
                                reason: "record #\(row.id) \(mismatch)")
                            continue
                        }
                        failure = DeckError.corrupt(
                            path: context.store.url.path,
                            reason:
                                "\(backing.metadata.entityName) #\(row.id): \(accessor.name) holds "
                                + "\(value.kindName), which is not a \(accessor.typeDescription)")
                    }
                }
            }
            for (index, id) in row.toOne {
                backing.setPending(index, .toOne(id))
            }
            for index in stale { backing.setPending(index, .toMany) }
        }
        if let failure { context.lastLoadError = failure }
    }

    /// Marks a model whose record another writer deleted as deleted, forgetting it and its unsaved
    /// changes.
    private func markDeletedElsewhere(_ object: AnyObject) {
        let backing = ModelBacking.of(object)
        if let id = backing.rowID {
            context.registry.remove(root: backing.metadata.rootKey, id: id, ifObject: backing.objectID)
        }
        context.changes.forget(ObjectIdentifier(object))
        backing.status = .deleted
        backing.rowID = nil
        backing.context = nil
        backing.clearChanges()
    }

    /// Takes the models of `gone` out of the loaded relationships that may still hold them: those
    /// of the models with unsaved changes (updated models' others load again), and those of
    /// relationships without an inverse, whose holders the store does not mark updated.
    private func dropTargets(_ gone: [ObjectIdentifier: AnyObject], records: Set<RecordKey>) {
        // The gone models too: those that hold each other as models (unsaved changes) are in
        // no registry any more.
        var holders =
            Array(context.changes.inserted.values) + Array(context.changes.changed.values)
            + Array(gone.values)
        let goneMetadata = gone.values.map { ModelBacking.of($0).metadata }
        var holderTypes: [ModelMetadata] = []
        for metadata in context.schema.metadata.values {
            for (accessor, relationship) in metadata.relationships
            where metadata.inverseName(of: accessor.index) == nil {
                let destination = ModelMetadata.of(relationship.destinationType)
                if goneMetadata.contains(where: { $0.inherits(from: destination) }) {
                    holderTypes.append(metadata)
                    break
                }
            }
        }
        if !holderTypes.isEmpty {
            holders += context.registeredModels.filter { model in
                holderTypes.contains { ModelBacking.of(model).metadata.inherits(from: $0) }
            }.map { $0 as AnyObject }
        }
        for object in holders {
            let backing = ModelBacking.of(object)
            for (accessor, relationship) in backing.metadata.relationships
            where !backing.needsLoading(accessor.index) {
                let root = relationship.destinationMetadata.rootKey
                let references = relationship.references(in: object)
                let kept = references.filter {
                    switch $0 {
                    case .model(let model): gone[ObjectIdentifier(model)] == nil
                    case .record(let id): !records.contains(RecordKey(root: root, id: id))
                    }
                }
                guard kept.count != references.count else { continue }
                ModelBacking.notifying(object, backing, properties: [accessor.index]) {
                    backing.setReferences(kept, of: accessor, toMany: relationship.isToMany)
                }
            }
        }
    }
}
