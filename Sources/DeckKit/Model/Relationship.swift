import Foundation
import Observation

/// A reference from a ``PersistentModel`` to others: SwiftData's `@Relationship`. An optional
/// model is a to-one relationship, an array of models (optional or not, as CloudKit wants) a
/// to-many one.
///
/// ```swift
/// @Relationship(deleteRule: .cascade, inverse: \Card.deck) var cards: [Card] = []
/// @Relationship var deck: Deck? = nil
/// ```
///
/// Name the inverse on one side (or both, the same pair): Deck keeps both sides in step, in
/// memory and in the store. The property holds the related models' identities (their records),
/// and a read finds them through the model's context (its instances, or read from the store),
/// so related models never keep each other alive: keep the context while you read. Setting a
/// relationship to a model not yet in a context inserts that model with this one.
@propertyWrapper
public struct Relationship<Value> {
    // The layout matters: ModelMetadata finds `owner` in instances (see Discovery.swift).
    // Inlinable, with the getter's common path, as Attribute's. `value` is the declared default
    // (nil, or empty), which a discovery instance keeps: a model's related models are held by
    // identity in its backing (see ModelReference.swift), never here.
    @usableFromInline var owner: PropertyOwner?
    @usableFromInline var index: Int
    @usableFromInline var value: Value

    /// A relationship. `deleteRule` says what deleting this model does to the related ones (as
    /// the store does it: cascade, nullify, deny or no action). `inverse` is the property of the
    /// destination that points back;
    /// `minimumModelCount` and `maximumModelCount` bound a to-many relationship's size, checked at
    /// save; `originalName` is the property's name in the previous schema version.
    @inlinable
    public init(
        wrappedValue: Value, deleteRule: StoreSchema.DeleteRule = .nullify, inverse: AnyKeyPath? = nil,
        minimumModelCount: Int? = nil, maximumModelCount: Int? = nil, originalName: String? = nil
    ) {
        value = wrappedValue
        index = -1
        owner =
            Discovery.isActive
            ? Self.discoveryMarker(
                deleteRule: deleteRule, inverse: inverse, minimumModelCount: minimumModelCount,
                maximumModelCount: maximumModelCount, originalName: originalName) : nil
    }

    /// The marker of a discovery instance's wrapper.
    @usableFromInline
    static func discoveryMarker(
        deleteRule: StoreSchema.DeleteRule, inverse: AnyKeyPath?, minimumModelCount: Int?,
        maximumModelCount: Int?, originalName: String?
    ) -> PropertyOwner? {
        Discovery.register {
            guard let kind = RelationshipKind<Value>.of(Value.self) else {
                return InvalidRelationshipAccessor(type: Value.self)
            }
            return RelationshipAccessor<Value>(
                kind: kind, deleteRule: deleteRule, inverse: inverse, minimumModelCount: minimumModelCount,
                maximumModelCount: maximumModelCount, originalName: originalName)
        }
    }

    /// Not available: `@Relationship` is for the properties of ``ModelObject`` classes.
    @available(*, unavailable, message: "@Relationship is for the properties of ModelObject classes")
    public var wrappedValue: Value {
        get { fatalError("@Relationship is for the properties of ModelObject classes") }
        set { fatalError("@Relationship is for the properties of ModelObject classes") }
    }

    /// The related models, read through the model: tracked by Observation, resolved through the
    /// model's context (the relationship holds their identities: see ModelReference.swift).
    public static subscript<Model: ModelObject>(
        _enclosingInstance instance: Model,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Model, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Model, Self>
    ) -> Value {
        @inlinable @inline(__always) get {
            if let owner = instance[keyPath: storageKeyPath].owner, !owner.isMarker {
                let backing = unsafeDowncast(owner, to: ModelBacking.self)
                let index = instance[keyPath: storageKeyPath].index
                backing.access(instance, keyPath: wrappedKeyPath, index: index)
                // A loaded to-one that holds its target (`card.deck`): the value made here, where
                // its type is known, as a read of the wrapper's value was before relationships
                // held identities.
                if let held = backing.heldTarget(index),
                    let one = Value.self as? any ToOneRelationshipValue.Type,
                    let value = one.make(held) as? Value
                {
                    return value
                }
                // A to-many relationship: its models resolved in DeckKit, the array of the
                // element type made here, where that type is known (specialized, a copy of
                // pointers), rather than in code generic over it.
                if let read = backing.toManyRead(index),
                    let many = Value.self as? any ToManyRelationshipValue.Type
                {
                    // Made earlier in the enumerate batch running now, and nothing changed since.
                    if let kept = backing.batchValue(index), let value = kept as? Value { return value }
                    // Unwrapped before the cast: nil cast to an optional `Value` would succeed.
                    if let made = many.make(read), let value = made as? Value {
                        backing.keepBatchValue(value, index)
                        return value
                    }
                    if let objects = backing.toManyObjects(index), let value = many.make(objects) as? Value {
                        return value
                    }
                }
                return backing.relationshipValue(index, as: Value.self)
                    ?? instance[keyPath: storageKeyPath].value
            }
            return slowRead(instance, wrappedKeyPath, storageKeyPath)
        }
        set {
            // Into the backing, as references (a type that is no relationship, which the schema
            // reports, stays in the wrapper).
            write(newValue, to: instance, wrappedKeyPath, storageKeyPath) { backing, index in
                backing.setRelationship(index, to: newValue)
            }
        }
    }

    @usableFromInline
    static func slowRead<Model: PersistentModel>(
        _ instance: Model, _ wrapped: ReferenceWritableKeyPath<Model, Value>,
        _ storage: ReferenceWritableKeyPath<Model, Self>
    ) -> Value {
        // In a discovery instance, a to-one relationship gives the destination's discovery
        // instance, so that a key path can go on through it (`\Card.deck?.title`).
        read(instance, wrapped, storage) { $0.destinationProbe as? Value }
    }
}

/// The value type of a to-many relationship (an array of models, optional or not): made from its
/// models in the wrapper's getter, which is inlined where the element type is known.
@usableFromInline
protocol ToManyRelationshipValue {
    /// The value of `objects`, instances of the element type or of its subclasses.
    static func make(_ objects: [AnyObject]) -> Self
    /// The value of the models `read` finds, or nil as soon as it finds none for a reference.
    static func make(_ read: ToManyRead) -> Self?
}

extension Array: ToManyRelationshipValue where Element: PersistentModel {
    @inlinable
    static func make(_ objects: [AnyObject]) -> Self {
        var models: [Element] = []
        models.reserveCapacity(objects.count)
        for object in objects { models.append(unsafeDowncast(object, to: Element.self)) }
        return models
    }

    @inlinable
    static func make(_ read: ToManyRead) -> Self? {
        var models: [Element] = []
        models.reserveCapacity(read.references.count)
        for reference in read.references {
            guard let object = read.object(reference) else { return nil }
            models.append(unsafeDowncast(object, to: Element.self))
        }
        return models
    }
}

extension Optional: ToManyRelationshipValue where Wrapped: ToManyRelationshipValue {
    @inlinable
    static func make(_ objects: [AnyObject]) -> Self { .some(Wrapped.make(objects)) }

    @inlinable
    static func make(_ read: ToManyRead) -> Self? { Wrapped.make(read).map { .some($0) } }
}

/// The value type of a to-one relationship (an optional model): made from its target in the
/// wrapper's getter, which is inlined where the model type is known.
@usableFromInline
protocol ToOneRelationshipValue {
    /// The value of `object`, an instance of the model type or of a subclass.
    static func make(_ object: AnyObject) -> Self
}

extension Optional: ToOneRelationshipValue where Wrapped: PersistentModel {
    @inlinable
    static func make(_ object: AnyObject) -> Self { .some(unsafeDowncast(object, to: Wrapped.self)) }
}
