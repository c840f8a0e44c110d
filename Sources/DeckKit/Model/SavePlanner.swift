import Foundation

/// Builds the ``SavePlan`` of a context's tracked changes (``ChangeTracker``), and keeps which
/// model each planned write came from, so that the save can apply the outcome to the models
/// (``ModelContext/FlushResult``).
///
/// The inserted models' attribute values are read here, once each; a relationship's targets
/// become ``PlannedRecord``s (a model inserted here by its place in the inserts, another by its
/// record id), and a target that cannot be written (a model of another context, or one deleted
/// here whose record the plan deletes first) is refused here.
struct SavePlanner {
    /// The plan, and the models it came from.
    struct Planned {
        var plan = SavePlan()
        /// The inserted models, in the order of the plan's inserts. Not their backings: a backing
        /// that outlived its model here would unregister a model already freed.
        var inserted: [AnyObject] = []
        /// Each inserted model's place in ``inserted``.
        var insertIndex: [ObjectIdentifier: Int] = [:]
        /// The model and property of each read-back, in the plan's order.
        var fromFiles: [(object: AnyObject, index: Int)] = []
        /// The model and to-many relationship of each reread key.
        var rereadable: [(object: AnyObject, index: Int)] = []
    }

    private let context: ModelContext
    private let changes: ChangeTracker
    /// The flush of a fetch: a value to be read from a file is written as empty data (what a
    /// predicate can tell of it: that there is one), so that a fetch neither copies the file nor
    /// fails with it.
    private let forFetch: Bool
    private var planned = Planned()
    /// The inserted models with their backings, while the plan is built (the tracker holds them).
    private var inserted: [(object: AnyObject, backing: ModelBacking)] = []
    /// The models whose records the deletions that come first delete.
    private var deletedFirst: Set<ObjectIdentifier> = []
    /// The plan's entities by model metadata, and the last one met.
    private var entities: [ObjectIdentifier: Int] = [:]
    private var lastEntity: (metadata: ModelMetadata, index: Int)?
    private var linkKinds: [ObjectIdentifier: [LinkKind]] = [:]
    private var lastLinkKinds: (metadata: ModelMetadata, kinds: [LinkKind])?
    /// How many inserted models point at each model through a to-one relationship whose inverse
    /// is to-many, by that inverse's name: counted on first need.
    private var pointing: [LinkKey: Int]?

    init(context: ModelContext, changes: ChangeTracker, forFetch: Bool) {
        self.context = context
        self.changes = changes
        self.forFetch = forFetch
    }

    /// The plan of the tracked changes.
    static func plan(_ changes: ChangeTracker, of context: ModelContext, forFetch: Bool) throws(DeckError)
        -> Planned
    {
        var planner = SavePlanner(context: context, changes: changes, forFetch: forFetch)
        planner.planDeletions()
        try planner.planInserts()
        try planner.planLinks()
        try planner.planUpdates()
        return planner.planned
    }

    // MARK: Deletions

    /// The deletions run after every other write, so that their delete rules see the graph the
    /// models hold (a model moved away from a deleted one is not cascaded or denied by it), as a
    /// save of the other changes and then one of the deletions would. Only records of an entity
    /// with unique values whose hierarchy has models inserted here are deleted first: a new model
    /// takes a deleted one's unique value, not its record.
    private mutating func planDeletions() {
        var deletions = changes.deletedObjects
        if !deletions.isEmpty, !changes.inserted.isEmpty {
            var uniqueRoots = Set<ObjectIdentifier>()
            for object in changes.inserted.values {
                let metadata = ModelBacking.of(object).metadata
                if context.uniqueness.has(metadata, in: context.store) {
                    uniqueRoots.insert(metadata.rootKey)
                }
            }
            if !uniqueRoots.isEmpty {
                let first = deletions.filter { uniqueRoots.contains(ModelBacking.of($0).metadata.rootKey) }
                deletions.removeAll { uniqueRoots.contains(ModelBacking.of($0).metadata.rootKey) }
                planned.plan.deletionsFirst = first.compactMap(Self.deletion)
                for object in first where ModelBacking.of(object).rowID != nil {
                    deletedFirst.insert(ObjectIdentifier(object))
                }
            }
        }
        planned.plan.deletions = deletions.compactMap(Self.deletion)
    }

    /// The deletion of `object`'s record, if it has one.
    private static func deletion(_ object: AnyObject) -> SavePlan.Deletion? {
        let backing = ModelBacking.of(object)
        guard let id = backing.rowID else { return nil }
        return SavePlan.Deletion(
            entity: backing.metadata.entityName, id: id,
            relationshipCount: backing.metadata.relationships.count)
    }

    // MARK: Inserts

    /// The inserted models' records, with their attribute values.
    private mutating func planInserts() throws(DeckError) {
        planned.inserted = changes.insertedObjects
        inserted = planned.inserted.map { ($0, ModelBacking.of($0)) }
        planned.insertIndex.reserveCapacity(inserted.count)
        for (index, (object, _)) in inserted.enumerated() {
            planned.insertIndex[ObjectIdentifier(object)] = index
        }
        planned.plan.inserts.reserveCapacity(inserted.count)
        for (index, (object, backing)) in inserted.enumerated() {
            let metadata = backing.metadata
            let entity = entityIndex(metadata)
            let start = planned.plan.values.count
            for (accessor, attribute) in metadata.attributes {
                if let value = fileValue(object, backing, accessor, record: .inserted(index)) {
                    planned.plan.values.append(value)
                    continue
                }
                planned.plan.values.append(try attribute.storeValue(in: object, entity: metadata.entityName))
            }
            planned.plan.inserts.append(
                SavePlan.Insert(entity: entity, globalID: backing.identifier.id, values: start, links: 0..<0))
        }
    }

    /// The plan's entity of `metadata`'s models.
    private mutating func entityIndex(_ metadata: ModelMetadata) -> Int {
        if let lastEntity, lastEntity.metadata === metadata { return lastEntity.index }
        let key = ObjectIdentifier(metadata)
        let index: Int
        if let known = entities[key] {
            index = known
        } else {
            var root = metadata
            while let parent = root.superMetadata { root = parent }
            index = planned.plan.entities.count
            planned.plan.entities.append(
                SavePlan.Entity(
                    name: metadata.entityName, root: root.entityName,
                    attributes: metadata.attributes.map(\.accessor.name),
                    isUpsert: context.uniqueness.has(metadata, in: context.store)))
            entities[key] = index
        }
        lastEntity = (metadata, index)
        return index
    }

    /// The value to write for an attribute still to be read from a file, or nil for one that is
    /// not: the file (noted, to read the stored value back after), or a fetch's stand-in.
    private mutating func fileValue(
        _ object: AnyObject, _ backing: ModelBacking, _ accessor: PropertyAccessor, record: PlannedRecord
    ) -> Value? {
        guard case .file(let url)? = backing.pendingValue(accessor.index) else { return nil }
        if forFetch { return .data(Data()) }
        planned.plan.readBacks.append(
            SavePlan.ReadBack(record: record, entity: backing.metadata.entityName, attribute: accessor.name))
        planned.fromFiles.append((object, accessor.index))
        return .file(url)
    }

    // MARK: Links

    /// The record that relationship `accessor` of `owner`'s model writes for `target`.
    private func record(of target: AnyObject, for accessor: PropertyAccessor, of owner: ModelBacking)
        throws(DeckError) -> PlannedRecord
    {
        let key = ObjectIdentifier(target)
        let backing = ModelBacking.of(target)
        // Only a model of this context: another's record id may be of another document, where it
        // names some other record (or none). A model deleted here whose record the plan deletes
        // last is still a target: its delete rules then apply to the link, as in a save after this.
        if backing.context === context, backing.status != .deleted || !deletedFirst.contains(key) {
            if let index = planned.insertIndex[key] { return .inserted(index) }
            if let id = backing.rowID { return .saved(id) }
        }
        let entity = backing.metadata.entityName
        throw DeckError.invalidValue(
            entity: owner.metadata.entityName, property: accessor.name,
            reason: backing.status == .deleted
                ? "refers to a deleted \(entity)"
                : "refers to a model of \(entity) that is not in this context (relate models of one context: "
                    + "reach its record here with model(for: persistentModelID))")
    }

    /// The records of `object`'s targets through to-many relationship `accessor`, less the models
    /// deleted here (they leave it with their records, which the plan deletes; they stay in a
    /// loaded list until the save). One whose deletion was saved (no record) is refused.
    private func records(
        of targets: [AnyObject], for accessor: PropertyAccessor, of owner: ModelBacking
    ) throws(DeckError) -> [PlannedRecord] {
        var records: [PlannedRecord] = []
        records.reserveCapacity(targets.count)
        for target in targets where !Self.isDeletionPending(target) {
            records.append(try record(of: target, for: accessor, of: owner))
        }
        return records
    }

    /// Whether `object` was deleted and its record is still stored: the plan deletes it.
    private static func isDeletionPending(_ object: AnyObject) -> Bool {
        let backing = ModelBacking.of(object)
        return backing.status == .deleted && backing.rowID != nil
    }

    /// Notes that to-many relationship `index` of `object` may be read again after the save.
    private mutating func rereadKey(_ object: AnyObject, _ index: Int) -> Int {
        planned.rereadable.append((object, index))
        return planned.rereadable.count - 1
    }

    /// The inserted models' relationships, now that every inserted model has a place.
    private mutating func planLinks() throws(DeckError) {
        for (index, (object, backing)) in inserted.enumerated()
        where !backing.metadata.relationships.isEmpty {
            let start = planned.plan.links.count
            let metadata = backing.metadata
            for (kind, (accessor, relationship)) in zip(linkKinds(metadata), metadata.relationships) {
                guard relationship.isToMany else {
                    let target = try accessor.toOneTarget(in: object).map { target throws(DeckError) in
                        try record(of: target, for: accessor, of: backing)
                    }
                    planned.plan.links.append(.toOne(name: accessor.name, target: target))
                    continue
                }
                let targets = relationship.targets(in: object)
                var writtenByTargets = false
                if case .toMany(let inverse?) = kind {
                    writtenByTargets = isWrittenByTargets(targets, of: object, accessor, inverse: inverse)
                }
                let (minimum, maximum) = relationship.modelCountBounds
                let toMany = SavePlan.ToMany(
                    name: accessor.name, targets: try records(of: targets, for: accessor, of: backing),
                    bounds: SavePlan.Bounds(minimum: minimum, maximum: maximum),
                    isWrittenByTargets: writtenByTargets, rereadKey: rereadKey(object, accessor.index))
                planned.plan.links.append(.toMany(toMany))
            }
            planned.plan.inserts[index].links = start..<planned.plan.links.count
        }
    }

    /// Whether `targets`, those of to-many relationship `accessor` of inserted `object`, are
    /// exactly the inserted models whose to-one inverse `inverse` points at `object`, each once,
    /// and no other inserted model points at it: those links write the list (when the executor
    /// finds them all new records).
    private mutating func isWrittenByTargets(
        _ targets: [AnyObject], of object: AnyObject, _ accessor: PropertyAccessor, inverse: String
    ) -> Bool {
        guard targets.count == pointingCount(at: object, through: accessor.name) else { return false }
        var seen = Set<ObjectIdentifier>(minimumCapacity: targets.count)
        for target in targets {
            guard planned.insertIndex[ObjectIdentifier(target)] != nil,
                seen.insert(ObjectIdentifier(target)).inserted,
                let other = ModelBacking.of(target).metadata.property(named: inverse),
                other.relationshipAccess?.isToMany == false, other.toOneTarget(in: target) === object
            else { return false }
        }
        return true
    }

    private mutating func pointingCount(at target: AnyObject, through inverse: String) -> Int {
        if pointing == nil {
            var counts: [LinkKey: Int] = [:]
            for (object, backing) in inserted {
                for (kind, (accessor, _)) in zip(linkKinds(backing.metadata), backing.metadata.relationships)
                {
                    guard case .toOne(let inverse?, true) = kind,
                        let pointed = accessor.toOneTarget(in: object)
                    else { continue }
                    counts[LinkKey(target: ObjectIdentifier(pointed), inverse: inverse), default: 0] += 1
                }
            }
            pointing = counts
        }
        return pointing?[LinkKey(target: ObjectIdentifier(target), inverse: inverse)] ?? 0
    }

    /// What the plan needs of a relationship of a model type: its side and its inverse.
    enum LinkKind {
        /// A to-one relationship, with its inverse's name and whether that inverse is to-many.
        case toOne(inverse: String?, inverseIsToMany: Bool)
        /// A to-many relationship, with the name of its inverse when that inverse is to-one.
        case toMany(toOneInverse: String?)
    }

    /// A model and the name of a relationship that points at it.
    private struct LinkKey: Hashable {
        let target: ObjectIdentifier
        let inverse: String
    }

    /// The ``LinkKind`` of each of `metadata`'s relationships, in their order.
    private mutating func linkKinds(_ metadata: ModelMetadata) -> [LinkKind] {
        if let lastLinkKinds, lastLinkKinds.metadata === metadata { return lastLinkKinds.kinds }
        let kinds = linkKinds[ObjectIdentifier(metadata)] ?? Self.linkKinds(of: metadata)
        linkKinds[ObjectIdentifier(metadata)] = kinds
        lastLinkKinds = (metadata, kinds)
        return kinds
    }

    private static func linkKinds(of metadata: ModelMetadata) -> [LinkKind] {
        metadata.relationships.map { accessor, relationship in
            let inverse = metadata.inverseName(of: accessor.index)
            let inverseIsToMany = inverse.flatMap {
                relationship.destinationMetadata.property(named: $0)?.relationshipAccess?.isToMany
            }
            if relationship.isToMany {
                return .toMany(toOneInverse: inverseIsToMany == false ? inverse : nil)
            }
            return .toOne(inverse: inverse, inverseIsToMany: inverseIsToMany ?? false)
        }
    }

    // MARK: Updates

    /// The changed properties of saved models: attributes as they are, relationships as their
    /// targets' records; a loaded to-many relationship merged by link with the store's.
    private mutating func planUpdates() throws(DeckError) {
        for object in changes.changed.values {
            let backing = ModelBacking.of(object)
            guard let id = backing.rowID, backing.status == .persisted else { continue }
            let metadata = backing.metadata
            var values: [(name: String, value: PlannedValue)] = []
            for (accessor, attribute) in metadata.attributes where backing.isChanged(accessor.index) {
                if let value = fileValue(object, backing, accessor, record: .saved(id)) {
                    values.append((accessor.name, .value(value)))
                    continue
                }
                values.append(
                    (accessor.name, .value(try attribute.storeValue(in: object, entity: metadata.entityName)))
                )
            }
            for (accessor, relationship) in metadata.relationships
            where backing.isChanged(accessor.index) && !backing.needsLoading(accessor.index) {
                values.append(
                    (accessor.name, try relationshipValue(accessor, relationship, of: object, backing)))
            }
            guard !values.isEmpty else { continue }
            planned.plan.updates.append(SavePlan.Update(entity: metadata.entityName, id: id, values: values))
        }
    }

    /// What a saved model's changed relationship writes.
    private mutating func relationshipValue(
        _ accessor: PropertyAccessor, _ relationship: any RelationshipDescribing, of object: AnyObject,
        _ backing: ModelBacking
    ) throws(DeckError) -> PlannedValue {
        guard relationship.isToMany else {
            guard let target = relationship.targets(in: object).first else { return .value(.null) }
            return .record(try record(of: target, for: accessor, of: backing))
        }
        let (minimum, maximum) = relationship.modelCountBounds
        let bounds = SavePlan.Bounds(minimum: minimum, maximum: maximum)
        let targets = try records(of: relationship.targets(in: object), for: accessor, of: backing)
        guard let loaded = backing.storedTargets[accessor.index] else { return .records(targets, bounds) }
        return .merged(
            SavePlan.MergedToMany(
                current: targets, loaded: loaded, bounds: bounds, rereadKey: rereadKey(object, accessor.index)
            ))
    }
}

/// Whether records of an entity have unique values, by the document's rules (which a later
/// version of the app may have added to): their inserts are upserts. Found once per model type.
struct UniqueEntities {
    private var known: [ObjectIdentifier: Bool] = [:]

    mutating func has(_ metadata: ModelMetadata, in store: PackageStore) -> Bool {
        if let found = known[ObjectIdentifier(metadata)] { return found }
        let found = store.schema.inheritanceChain(of: metadata.entityName).contains { entity in
            !entity.uniqueConstraints.isEmpty || entity.attributes.contains { $0.options.contains(.unique) }
        }
        known[ObjectIdentifier(metadata)] = found
        return found
    }
}
