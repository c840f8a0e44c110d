import Foundation
import Observation

/// An option of an ``Attribute``, as SwiftData names them.
public enum AttributeOption: Hashable, Sendable {
    /// No two records of the entity (and its subentities) share a non-null value; inserting a
    /// model whose value an existing record has updates that record instead (an upsert).
    case unique
    /// Large values are stored as blob files beside the store (at or above 64 KiB; smaller ones
    /// inline), loaded when the property is first read. For `Data` and `Data?` properties.
    case externalStorage
}

/// A stored property of a ``PersistentModel``: SwiftData's `@Attribute`, for every stored
/// property (SwiftData stores unmarked properties too; Deck asks that each be marked).
///
/// ```swift
/// @Attribute var front = ""
/// @Attribute(.unique) var number = 0
/// @Attribute(.externalStorage) var image: Data? = nil
/// @Attribute(originalName: "text") var back = ""
/// ```
///
/// The value may be any type the store holds (`String`, the integers but `UInt` and `UInt64`,
/// `Double`, `Float`, `Bool`,
/// `Date`, `Data`, `UUID`, `URL`, `Decimal`), a `RawRepresentable` type whose raw value is one of
/// those (stored as the raw value), or another `Codable` type (stored as JSON), each optional or
/// not. An optional property's attribute may be null.
@propertyWrapper
public struct Attribute<Value> {
    // The layout matters: ModelMetadata finds `owner` in instances (see Discovery.swift).
    // Inlinable, with the subscript's common paths, so that the models' module reads and writes
    // the fields directly instead of through unspecialized generic code.
    @usableFromInline var owner: PropertyOwner?
    @usableFromInline var index: Int
    @usableFromInline var value: Value

    /// A stored property with `options`; `originalName` is its name in the previous schema version.
    @inlinable
    public init(wrappedValue: Value, _ options: AttributeOption..., originalName: String? = nil) {
        value = wrappedValue
        index = -1
        owner = Discovery.isActive ? Self.discoveryMarker(options, originalName) : nil
    }

    /// The marker of a discovery instance's wrapper.
    @usableFromInline
    static func discoveryMarker(_ options: [AttributeOption], _ originalName: String?) -> PropertyOwner? {
        Discovery.register { AttributeAccessor<Value>(options: Set(options), originalName: originalName) }
    }

    /// Not available: `@Attribute` is for the properties of ``ModelObject`` classes.
    @available(*, unavailable, message: "@Attribute is for the properties of ModelObject classes")
    public var wrappedValue: Value {
        get { fatalError("@Attribute is for the properties of ModelObject classes") }
        set { fatalError("@Attribute is for the properties of ModelObject classes") }
    }

    /// The property's value, read through the model: tracked by Observation, loaded when it is not
    /// yet (an external blob).
    public static subscript<Model: ModelObject>(
        _enclosingInstance instance: Model,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Model, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Model, Self>
    ) -> Value {
        // Inlined into each property's accessors, where the key paths are literals that the
        // optimizer turns into direct field accesses (a key path applied at run time costs about
        // a thousand instructions).
        @inlinable @inline(__always) get {
            // The common case: a model with a backing whose property is loaded.
            if let owner = instance[keyPath: storageKeyPath].owner, !owner.isMarker {
                let backing = unsafeDowncast(owner, to: ModelBacking.self)
                let index = instance[keyPath: storageKeyPath].index
                if !backing.needsLoading(index) {
                    backing.access(instance, keyPath: wrappedKeyPath, index: index)
                    return instance[keyPath: storageKeyPath].value
                }
            }
            return slowRead(instance, wrappedKeyPath, storageKeyPath)
        }
        @inlinable @inline(__always) set {
            // A new model's first write makes its backing (which numbers every wrapper).
            let owner = instance[keyPath: storageKeyPath].owner ?? ModelBacking.of(instance)
            if !owner.isMarker {
                let backing = unsafeDowncast(owner, to: ModelBacking.self)
                let index = instance[keyPath: storageKeyPath].index
                if !backing.needsLoading(index) {
                    backing.withMutation(of: instance, keyPath: wrappedKeyPath) {
                        instance[keyPath: storageKeyPath].value = newValue
                    }
                    backing.didSet(index)
                    return
                }
            }
            slowWrite(newValue, to: instance, wrappedKeyPath, storageKeyPath)
        }
    }

    @usableFromInline
    static func slowRead<Model: PersistentModel>(
        _ instance: Model, _ wrapped: ReferenceWritableKeyPath<Model, Value>,
        _ storage: ReferenceWritableKeyPath<Model, Self>
    ) -> Value {
        read(instance, wrapped, storage)
    }

    @usableFromInline
    static func slowWrite<Model: PersistentModel>(
        _ newValue: Value, to instance: Model, _ wrapped: ReferenceWritableKeyPath<Model, Value>,
        _ storage: ReferenceWritableKeyPath<Model, Self>
    ) {
        write(newValue, to: instance, wrapped, storage)
    }
}

/// A property of a ``PersistentModel`` that is not stored: SwiftData's `@Transient`. It keeps
/// its value in memory only; a fetched model has the default.
@propertyWrapper
public struct Transient<Value> {
    var marker: PropertyOwner?
    /// The property's value.
    public var wrappedValue: Value

    /// A property that is not stored, starting at `wrappedValue`.
    public init(wrappedValue: Value) {
        self.wrappedValue = wrappedValue
        marker = Discovery.register { TransientAccessor() }
    }
}
