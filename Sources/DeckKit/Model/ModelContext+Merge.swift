import Foundation

// How a context's models follow what other contexts (and other writers) save.
//
// Each context observes its store's commits (``PackageStore/observeCommits(_:)``). A commit that
// another writer of this process made lands, as its `ChangeSet`, in the context's inbox, on the
// committing thread; the context applies what its inbox holds at its next operation (a fetch, a
// count, a save, a lookup by identifier, `processPendingChanges()`), on its own isolation domain,
// and the main context also right away on the main actor. A context of a read-only container
// asks the store at each operation whether another process committed, and if so refreshes every
// model it holds.

/// What other writers committed that a context has not applied yet: filled on the committing
/// thread, emptied by the context (``ModelContext/mergeCommittedChanges()``).
final class MergeInbox: Sendable {
    enum Contents {
        /// The change sets of the commits, in the order they were made.
        case changes([ChangeSet])
        /// More changed in all than is worth listing: every registered model is read again.
        case everything
    }

    private struct State {
        var changes: [ChangeSet] = []
        /// How many updated and deleted records `changes` names.
        var records = 0
        var everything = false
        /// Whether the context was asked to apply the inbox since it last took it.
        var isApplyRequested = false
    }
    private let state = Locked(State())

    /// How many updated and deleted records an inbox lists before it stops listing them and asks
    /// for every registered model to be read again: its memory stays bounded however much other
    /// writers change while the context does nothing (the change sets themselves are shared by
    /// every inbox that holds them).
    static let recordLimit = 10_000

    /// Adds a commit's changes. Returns true when the context should now be asked to apply its
    /// inbox (once until it takes it). A commit that only inserted records changes nothing a
    /// context holds (a new record that relates to a held one marks that one updated), and is
    /// not kept.
    func deliver(_ changes: ChangeSet) -> Bool {
        let records =
            changes.updated.values.reduce(0) { $0 + $1.count }
            + changes.deleted.values.reduce(0) { $0 + $1.count }
        guard records > 0 else { return false }
        return state.withLock { state in
            if !state.everything {
                state.records += records
                if state.records > Self.recordLimit {
                    state.everything = true
                    state.changes = []
                } else {
                    state.changes.append(changes)
                }
            }
            defer { state.isApplyRequested = true }
            return !state.isApplyRequested
        }
    }

    /// Empties the inbox, returning what it held (nil when nothing).
    func take() -> Contents? {
        state.withLock { state in
            state.isApplyRequested = false
            guard state.everything || !state.changes.isEmpty else { return nil }
            defer { state = State() }
            return state.everything ? .everything : .changes(state.changes)
        }
    }
}

/// A context's part in merging: its inbox, its registration with the store, and (for a
/// read-only store) the store's data version it last saw.
struct MergeState {
    let inbox = MergeInbox()
    /// The store's registration of the inbox; the context's saves are made as it (``StoreTransaction/author``),
    /// so that the context does not hear of them. Goes away with the context.
    var observation: CommitObservation?
    var isApplying = false
    /// For a read-only store: ``PackageStore/dataVersion()`` when last checked.
    var dataVersion: Int64?
}

/// The main context, reached weakly from the task that applies its inbox on the main actor.
private final class WeakMainContext: @unchecked Sendable {
    weak let context: ModelContext?

    init(_ context: ModelContext) { self.context = context }
}

extension ModelContext {
    /// Starts hearing of other writers' commits (called once, at the end of `init`).
    func startMerging() {
        let inbox = merging.inbox
        let main = isMainContext ? WeakMainContext(self) : nil
        merging.observation = store.observeCommits { changes in
            guard inbox.deliver(changes), let main else { return }
            // The main context applies them on the main actor, where it lives, without waiting
            // for its next operation (and so the models' observers, the UI, hear of them).
            Task { @MainActor in main.context?.mergeCommittedChanges() }
        }
        if store.mode == .readOnly { merging.dataVersion = store.dataVersion() }
    }

    /// Writes the context's changes into `transaction` for a save: as the context's own, which
    /// its observation does not hear of.
    func flushForSave(into transaction: StoreTransaction) throws(DeckError) -> FlushResult {
        transaction.author = merging.observation
        return try flush(into: transaction)
    }

    /// Brings the models this context holds in step with what other writers committed since it
    /// last did: called at the start of each of its operations.
    ///
    /// - A model whose record was deleted is deleted here (``PersistentModel/isDeleted``, no
    ///   context), with any unsaved change of it, and leaves the loaded relationships of the
    ///   others.
    /// - A model whose record was updated reads its row again (one statement per entity for all
    ///   of them), and each property that differs takes the saved value, its observers told; a
    ///   property with an unsaved change here keeps it (the local change wins at the next save).
    ///   An external value that changed is read again from its blob file when next read. A loaded
    ///   relationship whose records differ is loaded again when next read (new records appear in
    ///   it, deleted ones leave it).
    func mergeCommittedChanges() {
        guard !merging.isApplying else { return }
        var contents = merging.inbox.take()
        if store.mode == .readOnly, let version = store.dataVersion() {
            if let known = merging.dataVersion, known != version { contents = .everything }
            merging.dataVersion = version
        }
        guard let contents else { return }
        merging.isApplying = true
        defer { merging.isApplying = false }
        var merge = Merge()
        switch contents {
        case .everything:
            for model in registeredModels { merge.noteUpdated(model) }
        case .changes(let sets):
            for changes in sets {
                for (entity, ids) in changes.deleted {
                    guard let metadata = metadata(forStored: entity) else { continue }
                    for id in ids {
                        if let object = registeredObject(metadata, id: id) { merge.noteGone(object) }
                    }
                }
                for (entity, ids) in changes.updated {
                    guard let metadata = metadata(forStored: entity) else { continue }
                    for id in ids {
                        if let object = registeredObject(metadata, id: id) { merge.noteUpdated(object) }
                    }
                }
            }
        }
        apply(&merge)
    }

    /// Reads the records of `objects` (registered or not, persisted models) again, as a merge of
    /// updates does: each property that differs takes the saved value, its observers told.
    func reread(_ objects: [AnyObject]) {
        guard !objects.isEmpty else { return }
        var merge = Merge()
        for object in objects { merge.noteUpdated(object) }
        apply(&merge)
    }

    /// Reads the rows of `merge`'s updated models and applies what differs, and the deletions.
    private func apply(_ merge: inout Merge) {
        do {
            for group in merge.updated.values {
                let ids = group.objects.keys.sorted()
                var start = 0
                // One statement per 10,000 records: far below SQLite's limit on bound values.
                while start < ids.count {
                    let chunk = Array(ids[start..<min(start + 10_000, ids.count)])
                    try readRows(of: group.metadata, ids: chunk, objects: group.objects, into: &merge)
                    start += chunk.count
                }
            }
        } catch {
            // A closed store (a main context whose container went away) has nothing to merge.
            if case .closed = error {} else { lastLoadError = error }
        }
        for object in merge.gone.values { markDeletedElsewhere(object) }
        for row in merge.rows { apply(row, related: merge.related) }
        if !merge.gone.isEmpty { dropTargets(merge.gone) }
    }

    /// What one merge finds.
    private struct Merge {
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
    }

    /// A property's saved value, when it differs from the model's.
    private enum NewValue {
        case value(Value)
        case blob(BlobReference)
    }

    /// What differs between an updated model and its row.
    private struct RowChange {
        let object: AnyObject
        let id: Int64
        var attributes: [(index: Int, value: NewValue)] = []
        var toOne: [(index: Int, id: Int64?)] = []
    }

    /// Reads the rows of records `ids` (models `objects` of `metadata`) and the targets of their
    /// loaded to-many relationships, in one snapshot; notes what differs, and the records gone.
    private func readRows(
        of metadata: ModelMetadata, ids: [Int64], objects: [Int64: AnyObject], into merge: inout Merge
    ) throws(DeckError) {
        var found: Set<Int64> = []
        var rows: [RowChange] = []
        var related: [String: [Int64: [Int64]]] = [:]
        var positions: (names: [String], of: [String: Int]) = ([], [:])
        do {
            try store.read { reader in
                let query = RecordQuery(
                    metadata.entityName, where: .recordID.isIn(ids.map { .value(.integer($0)) }))
                try forEachRow(query, in: reader) { cursor throws(DeckError) in
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
            if let object = objects[id] { merge.noteGone(object) }
        }
        merge.rows += rows
        merge.related[ObjectIdentifier(metadata), default: [:]].merge(related) { $1 }
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
                current = relationship.targets(in: object).first.flatMap { ModelBacking.of($0).rowID }
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
                let loaded = relationship.targets(in: object).map { ModelBacking.of($0).rowID }
                if loaded.count != saved.count || Set(loaded) != Set(saved.map { Optional($0) }) {
                    stale.append(index)
                }
            }
        }
        let indices = row.attributes.map(\.index) + row.toOne.map(\.index) + stale
        guard !indices.isEmpty else { return }
        var failure: DeckError?
        notifying(object, backing, properties: indices) {
            for (index, value) in row.attributes {
                switch value {
                case .blob(let reference):
                    backing.setPending(index, .blob(reference))
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
                            path: store.url.path,
                            reason:
                                "\(backing.metadata.entityName) #\(row.id): \(accessor.name) holds "
                                + "\(value.kindName), which is not a \(accessor.typeDescription)")
                    }
                }
            }
            for (index, id) in row.toOne {
                if let id {
                    backing.setRelationshipPending(index, .toOne(id))
                } else {
                    backing.setPending(index, nil)
                    (backing.metadata.properties[index] as? any RelationshipDescribing)?.setTargets(
                        [], in: object)
                }
            }
            for index in stale { backing.setRelationshipPending(index, .toMany) }
        }
        if let failure { lastLoadError = failure }
    }

    /// Marks a model whose record another writer deleted as deleted, forgetting it and its unsaved
    /// changes.
    private func markDeletedElsewhere(_ object: AnyObject) {
        let backing = ModelBacking.of(object)
        if let id = backing.rowID { unregister(backing.metadata.rootKey, id, backing) }
        forgetUnsavedChanges(of: object)
        backing.status = .deleted
        backing.rowID = nil
        backing.context = nil
        backing.clearChanges()
    }

    /// Takes the models of `gone` out of the loaded relationships that may still hold them: those
    /// of the models with unsaved changes (updated models' others load again), and those of
    /// relationships without an inverse, whose holders the store does not mark updated.
    private func dropTargets(_ gone: [ObjectIdentifier: AnyObject]) {
        // The gone models too: those that loaded each other (a deck and its cascaded cards) are
        // in no registry any more, and would hold each other for good.
        var holders = Array(changes.inserted.values) + Array(changes.changed.values) + Array(gone.values)
        let goneMetadata = gone.values.map { ModelBacking.of($0).metadata }
        var holderTypes: [ModelMetadata] = []
        for metadata in schema.metadata.values {
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
            holders += registeredModels.filter { model in
                holderTypes.contains { ModelBacking.of(model).metadata.inherits(from: $0) }
            }.map { $0 as AnyObject }
        }
        for object in holders {
            let backing = ModelBacking.of(object)
            for (accessor, relationship) in backing.metadata.relationships
            where !backing.needsLoading(accessor.index) {
                let targets = relationship.targets(in: object)
                let kept = targets.filter { gone[ObjectIdentifier($0)] == nil }
                guard kept.count != targets.count else { continue }
                notifying(object, backing, properties: [accessor.index]) {
                    relationship.setTargets(kept, in: object)
                }
            }
        }
    }
}
