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
    var owner: PropertyOwner?
    var index: Int
    var value: Value

    /// A stored property with `options`; `originalName` is its name in the previous schema version.
    public init(wrappedValue: Value, _ options: AttributeOption..., originalName: String? = nil) {
        value = wrappedValue
        index = -1
        owner = Discovery.register {
            AttributeAccessor<Value>(options: Set(options), originalName: originalName)
        }
    }

    /// Not available: `@Attribute` is for the properties of ``PersistentModel`` classes.
    @available(*, unavailable, message: "@Attribute is for the properties of PersistentModel classes")
    public var wrappedValue: Value {
        get { fatalError("@Attribute is for the properties of PersistentModel classes") }
        set { fatalError("@Attribute is for the properties of PersistentModel classes") }
    }

    /// The property's value, read through the model: tracked by Observation, loaded when it is not
    /// yet (an external blob).
    public static subscript<Model: PersistentModel>(
        _enclosingInstance instance: Model,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Model, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Model, Self>
    ) -> Value {
        get { read(instance, wrappedKeyPath, storageKeyPath) }
        set { write(newValue, to: instance, wrappedKeyPath, storageKeyPath) }
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
