import Foundation
import Observation

/// What ``Attribute`` and ``Relationship`` share: the layout their accessors rely on, and the
/// path of a read and a write through the model.
protocol ModelPropertyWrapper {
    associatedtype Value
    /// The model's backing (or, in a discovery instance, the marker).
    var owner: PropertyOwner? { get set }
    /// The property's index in its entity.
    var index: Int { get set }
    var value: Value { get set }
}

extension Attribute: ModelPropertyWrapper {}
extension Relationship: ModelPropertyWrapper {}

extension ModelPropertyWrapper {
    /// A read: tracked by Observation, loaded first when not loaded yet. In a discovery instance
    /// the read is recorded (key-path resolution) and `probeValue` may stand in for the value.
    @inline(__always)
    static func read<Model: PersistentModel>(
        _ instance: Model, _ wrapped: ReferenceWritableKeyPath<Model, Value>,
        _ storage: ReferenceWritableKeyPath<Model, Self>,
        probeValue: (DiscoveryMarker) -> Value? = { _ in nil }
    ) -> Value {
        let wrapper = instance[keyPath: storage]
        guard let owner = wrapper.owner else {
            let backing = ModelBacking.of(instance)
            backing.access(instance, keyPath: wrapped, index: instance[keyPath: storage].index)
            return instance[keyPath: storage].value
        }
        if owner.isMarker {
            let marker = unsafeDowncast(owner, to: DiscoveryMarker.self)
            Discovery.recordRead(marker.accessor)
            return probeValue(marker) ?? wrapper.value
        }
        let backing = unsafeDowncast(owner, to: ModelBacking.self)
        backing.access(instance, keyPath: wrapped, index: wrapper.index)
        if backing.needsLoading(wrapper.index) {
            backing.load(wrapper.index)
            return instance[keyPath: storage].value
        }
        return wrapper.value
    }

    /// A write: loads what it replaces if needed, tells Observation, records the change. The new
    /// value goes into the wrapper, unless `store` (inside the mutation) stores it elsewhere and
    /// says so (a relationship's, in the backing).
    @inline(__always)
    static func write<Model: PersistentModel>(
        _ newValue: Value, to instance: Model, _ wrapped: ReferenceWritableKeyPath<Model, Value>,
        _ storage: ReferenceWritableKeyPath<Model, Self>,
        store: ((ModelBacking, Int) -> Bool)? = nil
    ) {
        let owner = instance[keyPath: storage].owner
        if let owner, owner.isMarker {
            instance[keyPath: storage].value = newValue
            return
        }
        let backing = owner.map { unsafeDowncast($0, to: ModelBacking.self) } ?? ModelBacking.of(instance)
        let index = instance[keyPath: storage].index
        backing.withMutation(of: instance, keyPath: wrapped) {
            backing.willSet(index)
            if store?(backing, index) != true { instance[keyPath: storage].value = newValue }
        }
        backing.didSet(index)
    }
}
