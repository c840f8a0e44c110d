import Foundation

// How a relationship holds the models it relates (issue 22, item 3): by identity, resolved
// through the context, so that related models never keep each other alive and nothing has to
// break cycles between them.
//
// A loaded relationship's state lives in its model's backing (``ModelBacking/Pending/one(_:held:)``
// and ``ModelBacking/Pending/many(_:)``) as ``ModelReference``s: a saved record of the model's own
// context by its record id, or a model that has no record there yet, held until the save that
// gives it one (it is held by the context's change tracker then too). A read resolves the ids
// through the context's identity map (``ModelRegistry``), and reads the records that have no
// instance there in one statement, as a fault would. A to-one relationship may also keep the
// instance it resolved (`held`), for reads of a few field accesses, where holding it cannot close a
// cycle (``ModelContext/holdsTargets(of:)``: no chain of such to-ones leads back); the id stays the
// source of truth, and a held instance that no longer stands for it is resolved again.

/// A related model as a relationship holds it.
@usableFromInline
enum ModelReference {
    /// A saved record of the holder's context, by its id (in the destination's root entity).
    case record(Int64)
    /// A model without a record in the holder's context (inserted and not saved, in no context,
    /// or of another context, which the save refuses): held until a save gives it its record.
    case model(AnyObject)
}

/// A record by its root entity (``ModelMetadata/rootKey``) and id.
struct RecordKey: Hashable {
    let root: ObjectIdentifier
    let id: Int64
}

extension ModelBacking {
    /// The reference by which this model's relationships hold `target`: its record id when it
    /// stands for a saved record of this model's context, else the model itself.
    func reference(to target: AnyObject) -> ModelReference {
        let other = ModelBacking.ofModel(target)
        if let id = other.rowID, other.status == .persisted || other.status == .deleted,
            let context, other.context === context
        {
            return .record(id)
        }
        return .model(target)
    }

    /// Whether `reference` (of a relationship whose destination has root entity `root`) names
    /// `target`.
    func refers(_ reference: ModelReference, to target: AnyObject, root: ObjectIdentifier) -> Bool {
        switch reference {
        case .model(let model): return model === target
        case .record(let id):
            let other = ModelBacking.ofModel(target)
            return other.rowID == id && other.status != .inserted && other.metadata.rootKey == root
                && context != nil && other.context === context
        }
    }

    /// The record id a reference names: its id, or the held model's record id if it has one.
    static func recordID(_ reference: ModelReference) -> Int64? {
        switch reference {
        case .record(let id): id
        case .model(let model): ModelBacking.of(model).rowID
        }
    }

    /// The references of relationship `index` as loaded (none when it is not loaded, or empty).
    func references(_ index: Int) -> [ModelReference] {
        guard let state = pendingValue(index) else { return [] }
        switch state {
        case .one(let reference, _): return reference.map { [$0] } ?? []
        case .many(let references): return references
        default: return []
        }
    }

    /// Sets relationship `accessor` (loaded) to `references`; a to-one keeps `held`, its target's
    /// instance, when its context may hold it (see ``ModelContext/holdsTargets(of:)``).
    func setReferences(
        _ references: [ModelReference], of accessor: PropertyAccessor, toMany: Bool, held: AnyObject? = nil
    ) {
        guard toMany else { return setToOne(references.first, of: accessor, held: held) }
        setPending(accessor.index, .many(references))
    }

    /// Sets to-one relationship `accessor` (loaded) to `reference`, keeping `held`, its target's
    /// instance, when its context may hold it: without an array (a batch sets a hundred).
    func setToOne(_ reference: ModelReference?, of accessor: PropertyAccessor, held: AnyObject?) {
        var kept: AnyObject?
        if case .record? = reference, let held, let context, context.holdsTargets(of: accessor) {
            kept = held
        }
        setPending(accessor.index, .one(reference, held: kept))
    }

    /// The models `references` of relationship `accessor` name, in order: the held ones, and the
    /// context's instances of the records (registered, or read in one statement); a record that
    /// is gone is left out. After the context has gone, a record cannot be found any more: that
    /// stops the program (``notLoaded(_:)``); a model that left its context has no records to
    /// name.
    func resolve(
        _ references: [ModelReference], of accessor: PropertyAccessor, destination: ModelMetadata
    ) -> [AnyObject] {
        guard let context else {
            if contextIsGone, references.contains(where: { if case .record = $0 { true } else { false } }) {
                notLoaded(accessor)
            }
            return references.compactMap { if case .model(let model) = $0 { model } else { nil } }
        }
        return context.faulting.resolve(references, of: accessor, destination: destination, backing: self)
    }

    /// Makes this model's references to records into the models, which it holds from then on:
    /// called as it leaves its context without a record (its insert rolled back or deleted), when
    /// it becomes a model in no context, which has no context to resolve ids through.
    func holdReferencedModels() {
        guard hasPending, context != nil else { return }
        for (accessor, relationship) in metadata.relationships where !needsLoading(accessor.index) {
            let references = self.references(accessor.index)
            guard references.contains(where: { if case .record = $0 { true } else { false } }) else {
                continue
            }
            let models = relationship.targets(in: object)
            setPending(
                accessor.index,
                relationship.isToMany
                    ? .many(models.map(ModelReference.model))
                    : .one(models.first.map(ModelReference.model), held: nil))
        }
    }

    /// Settles the references of this model's loaded relationships to models that now stand for
    /// saved records of its context into record ids (after a save), so that it stops holding
    /// them.
    func settleReferences() {
        guard hasPending, context != nil else { return }
        for (accessor, relationship) in metadata.relationships {
            guard let state = pendingValue(accessor.index) else { continue }
            switch state {
            case .one(.model(let target)?, _):
                let settled = reference(to: target)
                if case .record = settled { setToOne(settled, of: accessor, held: target) }
            case .many(let references):
                guard references.contains(where: { if case .model = $0 { true } else { false } }) else {
                    continue
                }
                setReferences(
                    references.map { if case .model(let target) = $0 { reference(to: target) } else { $0 } },
                    of: accessor, toMany: relationship.isToMany)
            default: continue
            }
        }
    }
}

extension ModelBacking {
    /// The value of relationship `index`, of type `V` (the wrapper's getter), or nil when the
    /// property is no relationship (a type the schema reports).
    @usableFromInline
    func relationshipValue<V>(_ index: Int, as _: V.Type) -> V? {
        let property = metadata.properties[index]
        guard property.isRelationship else { return nil }
        // The accessor that the wrapper of type `Relationship<V>` made in discovery.
        return unsafeDowncast(property, to: RelationshipAccessor<V>.self).value(of: self)
    }

    /// The target that loaded to-one relationship `index` holds, when it still stands for the
    /// record the relationship names (the common read, a few field accesses); nil otherwise
    /// (not loaded, not held, a model without a record, a to-many relationship), when the
    /// getter takes the general path.
    @usableFromInline
    func heldTarget(_ index: Int) -> AnyObject? {
        guard case .one(.record(let id)?, let held?)? = pendingValue(index),
            unsafeDowncast(held, to: ModelObject.self).backing?.rowID == id
        else { return nil }
        return held
    }

    /// A read of loaded to-many relationship `index` (loaded first if it is not yet), whose
    /// models the wrapper's getter finds one by one as it makes its array; nil when the property
    /// is no to-many relationship or the model has no context to find them through.
    @usableFromInline
    func toManyRead(_ index: Int) -> ToManyRead? {
        guard let relationship = metadata.properties[index].relationshipAccess, relationship.isToMany,
            let context
        else { return nil }
        if let waiting = pendingValue(index), waiting.isWaiting { load(index) }
        guard case .many(let references)? = pendingValue(index) else { return nil }
        let destination = relationship.destinationMetadata
        return ToManyRead(
            references: references, table: context.registry.table(root: destination.rootKey),
            destination: destination)
    }

    /// The models of to-many relationship `index`, loaded first if it is not yet and resolved
    /// through the model's context (the wrapper's getter makes the value of them), or nil when
    /// the property is no to-many relationship.
    @usableFromInline
    func toManyObjects(_ index: Int) -> [AnyObject]? {
        guard let relationship = metadata.properties[index].relationshipAccess, relationship.isToMany else {
            return nil
        }
        return relationship.loadedTargets(of: self)
    }

    /// Sets relationship `index` to `value` (the wrapper's setter, inside the mutation, once what
    /// it replaces is loaded), keeping the inverses in step; false when the property is no
    /// relationship.
    @usableFromInline
    func setRelationship<V>(_ index: Int, to value: V) -> Bool {
        let property = metadata.properties[index]
        guard property.isRelationship else { return false }
        let accessor = unsafeDowncast(property, to: RelationshipAccessor<V>.self)
        let old = accessor.targets(in: object)
        let new = accessor.kind.models(value)
        accessor.setTargets(new, in: object)
        relationshipChanged(index, from: old, to: new)
        return true
    }
}

/// One read of a loaded to-many relationship: its references and where their models are (the
/// context's registry table of the destination's root entity). The wrapper's getter, inlined
/// where the element type is known, makes its array of ``object(_:)`` for each reference,
/// without an array of `AnyObject` between: a to-many read resolves its list each time (its
/// models are not kept, so that related models do not keep each other alive).
@usableFromInline
struct ToManyRead {
    @usableFromInline let references: [ModelReference]
    @usableFromInline let table: RowTable?
    /// The destination's class.
    @usableFromInline let expected: ObjectIdentifier
    let destination: ModelMetadata

    init(references: [ModelReference], table: RowTable?, destination: ModelMetadata) {
        self.references = references
        self.table = table
        self.expected = ObjectIdentifier(destination.type)
        self.destination = destination
    }

    /// The model `reference` names: the held model, or the registered instance of the record
    /// (of the destination's entity or a descendant); nil when the record has none (the getter
    /// then takes the general path, which reads it). Inlined into the getter, so that a list of
    /// a hundred costs a probe and a retain per model.
    @inlinable @inline(__always)
    func object(_ reference: ModelReference) -> AnyObject? {
        switch reference {
        case .model(let model): return model
        case .record(let id):
            // The destination's own class first: a type comparison rather than a walk.
            guard let object = table?.object(id),
                ObjectIdentifier(type(of: object)) == expected || admits(object)
            else { return nil }
            return object
        }
    }

    /// Whether `object` is of the destination's entity or a descendant.
    @usableFromInline
    func admits(_ object: AnyObject) -> Bool { destination.admits(object) }
}

/// The models and record ids a loaded to-many relationship's references name, as sets: a
/// cards-joining-a-deck loop asks whether each card is already among the deck's, which a scan of
/// the references answers in time linear in the deck's size (filling a deck took time quadratic
/// in its size). A backing keeps them (``ModelBacking/membership(_:of:)``) while the references
/// only grow by ``ModelBacking/appendReference(_:at:)``, which adds to them; any other change to
/// the property drops them. They are made only for a relationship of ``threshold`` references
/// or more, scanned ``scans`` times with nothing but appends in between: a loop that removes one
/// reference after another (each change drops the sets) keeps scanning, which costs less than
/// making sets each time.
struct ReferenceMembership {
    var models: Set<ObjectIdentifier> = []
    var records: Set<Int64> = []
    /// How many references were put in: the relationship's count while the sets are in step
    /// with it (checked in debug builds, so that a change that bypassed them is caught).
    private(set) var count = 0

    static let threshold = 64
    static let scans = 8

    /// A relationship's sets, or the scans made since it last changed.
    enum State {
        case scanned(Int)
        case kept(ReferenceMembership)
    }

    init(_ references: [ModelReference]) {
        for reference in references { insert(reference) }
    }

    mutating func insert(_ reference: ModelReference) {
        count += 1
        switch reference {
        case .model(let model): models.insert(ObjectIdentifier(model))
        case .record(let id): records.insert(id)
        }
    }
}
