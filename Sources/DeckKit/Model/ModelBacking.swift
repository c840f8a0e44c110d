import Foundation
import Observation

/// The state Deck keeps for one model instance: its identity, its context and record, what has
/// changed since the last save, and what is not loaded yet. Every wrapper of the instance holds it.
@usableFromInline
final class ModelBacking: PropertyOwner {
    enum Status {
        /// Not in any context.
        case detached
        /// Inserted into its context, not saved yet.
        case inserted
        /// Stands for a saved record.
        case persisted
        /// Deleted in its context (``rowID`` says whether the record is still in the store).
        case deleted
    }

    /// A property not loaded yet.
    enum Pending {
        /// An external data value, in a blob file.
        case blob(BlobReference)
        /// An external data value to be written from a file at the next save (read from the
        /// file if the property is read first).
        case file(URL)
        /// A to-one relationship: the target's record id, or nil for none.
        case toOne(Int64?)
        /// A to-many relationship.
        case toMany
        /// A loaded to-one relationship (not waiting): its target by identity, nil for none, and
        /// the target instance `held` for fast reads where holding it cannot close a cycle of
        /// models (see ``ModelReference``).
        case one(ModelReference?, held: AnyObject?)
        /// A loaded to-many relationship (not waiting): its targets by identity.
        case many([ModelReference])

        /// Whether the property waits to be loaded (not a loaded relationship's identities).
        var isWaiting: Bool {
            switch self {
            case .one, .many: false
            default: true
            }
        }
    }

    /// The model type's metadata, which lives as long as the program (``ModelMetadata/of(_:)``
    /// keeps every one): not counted, which saves two atomic operations per model.
    unowned(unsafe) let metadata: ModelMetadata
    /// The instance: its wrappers hold the backing, so the backing never outlives it (not
    /// counted: an unowned reference that counts costs two atomic operations per model).
    unowned(unsafe) let object: AnyObject
    /// The instance's identity, which can be compared while the instance is being destroyed.
    let objectID: ObjectIdentifier
    @exclusivity(unchecked) private(set) var identifier: PersistentIdentifier
    /// The context the model is in, or nil. Not held: a strong reference would keep the context,
    /// its container and the document's writer lock alive for as long as any of its models lives.
    var context: ModelContext? {
        get { link?.context }
        set { link = newValue?.link }
    }
    /// The context's link, which the context clears as it goes away (a weak reference per model
    /// cost a fetch three atomic operations on the context's side table per model).
    private var link: ModelContext.Link?
    /// The record's id, once it is in the store.
    @exclusivity(unchecked) var rowID: Int64?
    // (After the optional id, whose tag leaves it room in the same word.)
    @exclusivity(unchecked) var status: Status = .detached
    /// Whether the model is in no context: a new one, or one inserted into a context that went
    /// away before saving it (it has no record), which an insert takes as new.
    var isFree: Bool { status == .detached || (status == .inserted && rowID == nil && context == nil) }
    /// Which properties have changed since the last save: bit `index` (and, past 63, a set).
    @exclusivity(unchecked) private var changedMask: UInt64 = 0
    var changedCount: Int { changedMask.nonzeroBitCount + (extras?.changedBeyondMask.count ?? 0) }
    /// What few models need, apart, so that a fetched model's backing stays small (made on first
    /// need).
    private final class Extras {
        var changedBeyondMask: Set<Int> = []
        var storedTargets: [Int: Set<Int64>] = [:]
        /// The to-many values read during an enumerate batch, by property, with the registry's
        /// generation they were made at (``batchValue(_:)``).
        var batchValues: [Int: (generation: Int, value: Any)] = [:]
        /// What long loaded to-many relationships hold, by property (``ReferenceMembership``), or
        /// how many times they were scanned since they last changed other than by an append.
        var memberships: [Int: ReferenceMembership.State] = [:]
    }

    /// The membership sets of loaded to-many relationship `index`, which holds `references`, when
    /// they are kept or due (see ``ReferenceMembership``).
    func membership(_ index: Int, of references: [ModelReference]) -> ReferenceMembership? {
        guard references.count >= ReferenceMembership.threshold else { return nil }
        switch extras?.memberships[index] {
        case .kept(let kept)?:
            assert(kept.count == references.count, "DeckKit: a to-many changed without its membership sets")
            return kept
        case .scanned(let count)? where count + 1 < ReferenceMembership.scans:
            extras?.memberships[index] = .scanned(count + 1)
            return nil
        case nil:
            madeExtras.memberships[index] = .scanned(1)
            return nil
        default:
            let made = ReferenceMembership(references)
            madeExtras.memberships[index] = .kept(made)
            return made
        }
    }
    @exclusivity(unchecked) private var extras: Extras?

    private var madeExtras: Extras {
        if let extras { return extras }
        let made = Extras()
        extras = made
        return made
    }

    /// The value of to-many relationship `index` made earlier in the enumerate batch running
    /// now (``ModelFetcher/enumerate(_:batchSize:block:)``), when nothing it was made from has
    /// changed since: a block that reads `card.deck?.cards` for each card makes each deck's
    /// array once. The batch holds its models anyway, and drops these values as it ends, so
    /// the models they hold do not outlive it (see ``keepBatchValue(_:_:)``).
    @usableFromInline
    func batchValue(_ index: Int) -> Any? {
        guard let extras, let entry = extras.batchValues[index], let context, context.batchValues != nil,
            entry.generation == context.registry.generation
        else { return nil }
        return entry.value
    }

    /// Keeps `value`, just made from the registry, as relationship `index`'s value for the rest
    /// of the enumerate batch running now, if one is.
    @usableFromInline
    func keepBatchValue(_ value: Any, _ index: Int) {
        guard let context, context.batchValues != nil else { return }
        if extras?.batchValues.isEmpty ?? true { context.batchValues?.append(self) }
        madeExtras.batchValues[index] = (context.registry.generation, value)
    }

    /// Drops the values kept for the enumerate batch that ends.
    func dropBatchValues() {
        extras?.batchValues = [:]
    }

    /// Whether the model was in a context that has gone away (not one it left by a saved
    /// deletion or a rollback of its insert): what it has not loaded cannot be loaded any more.
    var contextIsGone: Bool { link != nil && link?.context == nil }
    /// For each loaded to-many relationship of a saved record, by property index, the records it
    /// held in the store when it was loaded or last saved: a save writes the links added and
    /// removed since, merged into what the store holds then (another context may have changed
    /// the relationship meanwhile).
    var storedTargets: [Int: Set<Int64>] {
        get { extras?.storedTargets ?? [:] }
        _modify { yield &madeExtras.storedTargets }
    }
    /// The properties not loaded yet and the loaded relationships' identities, by the property's
    /// slot (``ModelMetadata/pendingSlots``): empty until one is set.
    @exclusivity(unchecked) private var pending: [Pending?] = []
    /// Observation's registrar of the instance, made when something may observe it: on a read
    /// that Observation tracks (``ObservationGate``). Until then no one can observe the instance,
    /// and a change has no one to tell.
    @exclusivity(unchecked) @usableFromInline var observation: Observation?

    /// The registrar, boxed: `ObservationRegistrar` is a resilient type, whose optional is
    /// copied and tested through value witnesses, where a reference is one compare.
    @usableFromInline
    final class Observation {
        @usableFromInline let registrar = ObservationRegistrar()
    }

    /// The registrar, if the instance has one.
    @inlinable var registrar: ObservationRegistrar? { observation?.registrar }

    private init(
        metadata: ModelMetadata, object: AnyObject, globalID: UUID, context: ModelContext?, rowID: Int64?
    ) {
        self.metadata = metadata
        self.object = object
        self.objectID = ObjectIdentifier(object)
        self.identifier = PersistentIdentifier(entityName: metadata.entityName, id: globalID)
        self.link = context?.link
        self.rowID = rowID
        self.status = rowID == nil ? .detached : .persisted
        super.init(isMarker: false)
    }

    /// Tells Observation of a read of property `index` at `keyPath` (making the registrar if the
    /// read is tracked).
    @inlinable
    func access<Model: PersistentModel, Member>(
        _ instance: Model, keyPath: KeyPath<Model, Member>, index: Int
    ) {
        if observation == nil {
            guard ObservationGate.isTracking() else { return }
        }
        trackedAccess(instance, keyPath: keyPath, index: index)
    }

    /// A read that may be observed: told to the registrar, whose changes Deck makes (the other
    /// side of a relationship, a rollback) are then told through the key path recorded here.
    @usableFromInline
    func trackedAccess<Model: PersistentModel, Member>(
        _ instance: Model, keyPath: KeyPath<Model, Member>, index: Int
    ) {
        madeRegistrar().access(instance, keyPath: keyPath)
        metadata.properties[index].noteKeyPath(keyPath)
    }

    /// Runs `mutation` of `keyPath`, telling Observation's observers of the instance, if any.
    @inlinable
    func withMutation<Model: PersistentModel, Member, T>(
        of instance: Model, keyPath: KeyPath<Model, Member>, _ mutation: () throws -> T
    ) rethrows -> T {
        guard let observation else { return try mutation() }
        return try observation.registrar.withMutation(of: instance, keyPath: keyPath, mutation)
    }

    /// The registrar, made now if there is none yet.
    @usableFromInline
    func madeRegistrar() -> ObservationRegistrar {
        if let observation { return observation.registrar }
        let made = Observation()
        observation = made
        return made.registrar
    }

    deinit {
        // The instance is going away: its context forgets the record's instance.
        if let rowID, let context { context.unregister(metadata.rootKey, rowID, self) }
    }

    /// The backing of `object`, made (with a new global id) on first use.
    @usableFromInline
    static func of(_ object: AnyObject) -> ModelBacking {
        guard let model = object as? ModelObject else {
            preconditionFailure(
                "\(Swift.type(of: object)) is not a model: a model class inherits from ModelObject")
        }
        if let backing = model.backing { return backing }
        // Known types skip the conformance cast, which costs more than the lookup.
        let metadata: ModelMetadata
        if let known = ModelMetadata.known(Swift.type(of: object)) {
            metadata = known
        } else {
            guard let type = Swift.type(of: object) as? any PersistentModel.Type else {
                preconditionFailure("\(Swift.type(of: object)) is not a PersistentModel")
            }
            metadata = ModelMetadata.of(type)
        }
        return attach(to: object, metadata: metadata, globalID: GlobalID.random())
    }

    /// The backing of `object`, which the caller knows to be a model (a relationship's target, a
    /// model of a context): without the checked cast of ``of(_:)`` unless it has none yet.
    @inline(__always)
    static func ofModel(_ object: AnyObject) -> ModelBacking {
        unsafeDowncast(object, to: ModelObject.self).backing ?? of(object)
    }

    /// Makes the backing of a fresh instance (from ``ModelMetadata/makeInstance()``): a detached
    /// one, or (with `context` and `rowID`) one that stands for record `rowID` in `context`.
    static func attach(
        to object: AnyObject, metadata: ModelMetadata, globalID: UUID, context: ModelContext? = nil,
        rowID: Int64? = nil
    ) -> ModelBacking {
        let backing = ModelBacking(
            metadata: metadata, object: object, globalID: globalID, context: context, rowID: rowID)
        // Metadata is only made for model types: the object is a ModelObject.
        unsafeDowncast(object, to: ModelObject.self).backing = backing
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
        for (index, offsets) in metadata.ownerAndIndexOffsets.enumerated() {
            // A fresh instance's wrappers mostly hold no owner, which needs no release.
            let owner = (base + offsets.owner).assumingMemoryBound(to: PropertyOwner?.self)
            if owner.pointee == nil {
                owner.initialize(to: backing)
            } else {
                owner.pointee = backing
            }
            (base + offsets.index).assumingMemoryBound(to: Int.self).pointee = index
        }
        return backing
    }

    var isDeleted: Bool { status == .deleted }

    var hasChanges: Bool {
        switch status {
        case .detached: false
        case .inserted: true
        // Until the deletion is saved (or merged from elsewhere), which takes the model out of
        // its context.
        case .deleted: context != nil
        case .persisted: changedCount > 0
        }
    }

    // MARK: Loading

    @usableFromInline
    func needsLoading(_ index: Int) -> Bool {
        guard !pending.isEmpty else { return false }
        let slot = metadata.pendingSlots[index]
        guard slot >= 0, let state = pending[slot] else { return false }
        return state.isWaiting
    }

    /// What property `index` waits for, or its identities (a loaded relationship), if anything.
    func pendingValue(_ index: Int) -> Pending? {
        guard !pending.isEmpty else { return nil }
        let slot = metadata.pendingSlots[index]
        return slot >= 0 ? pending[slot] : nil
    }

    /// Whether any property waits or holds identities (whether there is anything to look at).
    var hasPending: Bool { !pending.isEmpty }

    /// Whether property `index` can wait to be loaded (it has a slot): a relationship, or an
    /// attribute whose type is not one of the common ones.
    func canWait(_ index: Int) -> Bool { metadata.pendingSlots[index] >= 0 }

    func setPending(_ index: Int, _ value: Pending?) {
        let slot = metadata.pendingSlots[index]
        guard slot >= 0 else {
            precondition(value == nil, "DeckKit: \(metadata.entityName).\(index) cannot wait to be loaded")
            return
        }
        context?.registry.generation &+= 1
        if let extras, !extras.memberships.isEmpty { extras.memberships[index] = nil }
        if pending.isEmpty {
            guard value != nil else { return }
            pending = Array(repeating: nil, count: metadata.pendingSlotCount)
        }
        pending[slot] = value
    }

    /// Appends `reference` to loaded to-many relationship `index` in place (no copy of the
    /// references before it).
    func appendReference(_ reference: ModelReference, at index: Int) {
        let slot = metadata.pendingSlots[index]
        guard !pending.isEmpty, slot >= 0, case .many(var references)? = pending[slot] else {
            return setPending(index, .many([reference]))
        }
        pending[slot] = nil  // so that `references` is the array's only owner
        context?.registry.generation &+= 1
        references.append(reference)
        pending[slot] = .many(references)
        if let extras, case .kept(var membership)? = extras.memberships[index] {
            extras.memberships[index] = nil  // so that `membership` is the sets' only owner
            membership.insert(reference)
            extras.memberships[index] = .kept(membership)
        }
    }

    /// Loads property `index` through the context. Once the context is gone, only a value still
    /// to be read from a file loads; anything else stops the program (``notLoaded(_:)``).
    @usableFromInline
    func load(_ index: Int) {
        guard let kind = pendingValue(index), kind.isWaiting else { return }
        setPending(index, nil)
        guard let context else { return loadWithoutContext(kind, index) }
        context.faulting.load(kind, property: metadata.properties[index], of: object, backing: self)
    }

    /// Loads property `index`, waiting as `kind`, of a model in no context. A value to be read
    /// from a file is read from it. After its context has gone, anything else stops the program
    /// (``notLoaded(_:)``); a model that left its context (a saved deletion, a rolled-back
    /// insert) has no record to read it from, and keeps its default.
    func loadWithoutContext(_ kind: Pending, _ index: Int) {
        let accessor = metadata.properties[index]
        if case .file(let url) = kind {
            guard let data = try? InputFile.contents(of: url) else {
                // Still the value to save, as with a context.
                return setPending(index, kind)
            }
            _ = (accessor as? any AttributeValueAccess)?.load(.data(data), into: object)
            return
        }
        // A to-one the record left empty needs nothing from the store.
        if case .toOne(nil) = kind { return setPending(index, .one(nil, held: nil)) }
        if contextIsGone { notLoaded(accessor) }
    }

    /// Stops the program: property `accessor` of this model was read after its context went
    /// away, before it was loaded (or, for a relationship, while it names records the context
    /// would have found). It cannot be loaded any more, and its default would be a wrong value
    /// that looks right (no deck, no cards, no image). As in SwiftData, a model is used while
    /// its context lives: keep the context (and so its container) while you read its models.
    func notLoaded(_ accessor: PropertyAccessor) -> Never {
        fatalError(
            "DeckKit: \(metadata.entityName).\(accessor.name) was read after its ModelContext went away, "
                + "before it was loaded, so it cannot be loaded any more: keep the ModelContext (and its "
                + "ModelContainer) while you use its models")
    }

    /// Replaces the identity: the record an upsert matched already had one.
    func adopt(_ globalID: UUID) {
        identifier = PersistentIdentifier(entityName: metadata.entityName, id: globalID)
    }

    // MARK: Changes

    func willSet(_ index: Int) {
        guard needsLoading(index) else { return }
        switch pendingValue(index) {
        case .blob, .file:
            setPending(index, nil)  // Replaced whole: no need to read it.
        default: load(index)
        }
    }

    @usableFromInline
    func didSet(_ index: Int) {
        markChanged(index)
    }

    func markChanged(_ index: Int) {
        if index < 64 {
            changedMask |= 1 << UInt64(index)
        } else {
            madeExtras.changedBeyondMask.insert(index)
        }
        if status == .persisted, let context { context.noteChanged(self) }
    }

    func clearChanges() {
        changedMask = 0
        if let extras, !extras.changedBeyondMask.isEmpty { extras.changedBeyondMask = [] }
    }

    func isChanged(_ index: Int) -> Bool {
        index < 64
            ? changedMask & (1 << UInt64(index)) != 0 : extras?.changedBeyondMask.contains(index) ?? false
    }

    /// Keeps the other side of relationship `index` in step after it changed from `old` to `new`,
    /// and inserts new targets into this model's context.
    func relationshipChanged(_ index: Int, from old: [AnyObject], to new: [AnyObject]) {
        let removed = old.filter { target in !new.contains { $0 === target } }
        let added = new.filter { target in !old.contains { $0 === target } }
        // Relating models joins them in a context: this model's, or a new target's.
        let context = self.context ?? added.lazy.compactMap { ModelBacking.ofModel($0).context }.first
        if let context, status != .deleted {
            if status == .detached { context.insertModel(object) }
            for target in added where ModelBacking.ofModel(target).status == .detached {
                context.insertModel(target)
            }
        }
        guard let inverseName = metadata.inverseName(of: index) else { return }
        for target in removed { InverseUpdate.remove(object, from: target, inverse: inverseName) }
        for target in added { InverseUpdate.add(object, to: target, inverse: inverseName) }
    }
}

/// Changes the other side of a relationship in memory, where it is loaded (what is not loaded
/// loads from the store, which the save keeps in step).
enum InverseUpdate {
    static func remove(_ source: AnyObject, from target: AnyObject, inverse name: String) {
        let backing = ModelBacking.ofModel(target)
        guard
            let accessor = backing.metadata.property(named: name),
            let relationship = accessor.relationshipAccess
        else { return }
        if backing.needsLoading(accessor.index) {
            // A to-one not loaded yet that points at `source` leaves it too: it would load the
            // record it pointed at, before the save and after it (the store changes it; the
            // model's pending id does not).
            guard case .toOne(let id?)? = backing.pendingValue(accessor.index),
                id == ModelBacking.of(source).rowID
            else { return }
            backing.notifyingChange(of: accessor) {
                backing.setReferences([], of: accessor, toMany: false)
            }
            return
        }
        guard relationship.holdsTarget(source, in: target) else { return }
        backing.notifyingChange(of: accessor) { relationship.removeTarget(source, in: target) }
    }

    static func add(_ source: AnyObject, to target: AnyObject, inverse name: String) {
        let backing = ModelBacking.ofModel(target)
        // The property's relationship side without a cast to the protocol composition, which
        // costs as much as the rest of adding a card to a deck.
        guard let property = backing.metadata.property(named: name),
            let accessor = property.relationshipAccess
        else { return }
        let index = property.index
        if accessor.isToMany {
            guard !backing.needsLoading(index) else { return }
            // In place, by reference: nothing is resolved (a deck's hundredth card does not read
            // the ninety-nine before it).
            guard !accessor.holdsTarget(source, in: target) else { return }
            backing.notifyingChange(of: property) { accessor.appendTarget(source, in: target) }
        } else {
            // A to-one inverse: the target leaves whatever it pointed at before.
            if backing.needsLoading(index) { backing.load(index) }
            if accessor.holdsTarget(source, in: target) { return }
            let previous = accessor.targets(in: target)
            if let previous = previous.first, let ownName = backing.metadata.inverseName(of: index) {
                remove(target, from: previous, inverse: ownName)
            }
            backing.notifyingChange(of: property) { accessor.setTargets([source], in: target) }
        }
    }
}

extension ModelBacking {
    /// Runs `change` (a change Deck makes to property `accessor`, not the user) and records it,
    /// telling Observation's observers of the property.
    func notifyingChange(of accessor: PropertyAccessor, _ change: () -> Void) {
        if let notify = accessor.observationNotifier {
            notify(object, self, change)
        } else {
            change()
        }
        markChanged(accessor.index)
    }
}

extension RelationshipDescribing where Self: PropertyAccessor {
    /// The name of this relationship's inverse, as the schema paired them.
    func inverseName(in backing: ModelBacking) -> String? {
        backing.metadata.inverseName(of: index)
    }
}

extension ModelBacking {
    /// Runs `change` (one Deck makes to `object`), telling the observers of properties `indices`
    /// that they change.
    static func notifying(
        _ object: AnyObject, _ backing: ModelBacking, properties indices: [Int], _ change: () -> Void
    ) {
        guard backing.observation != nil, let index = indices.last else { return change() }
        let rest = Array(indices.dropLast())
        guard let notify = backing.metadata.properties[index].observationNotifier else {
            return notifying(object, backing, properties: rest, change)
        }
        notify(object, backing) { notifying(object, backing, properties: rest, change) }
    }
}
