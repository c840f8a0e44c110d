import Foundation

/// A Core Data managed object model, as a store's model cache (`Z_MODELCACHE`) describes it.
public struct CoreDataModel: Sendable, Equatable {
    /// The entities, in the order the archive lists them.
    public var entities: [CoreDataEntity]
    /// The model's version identifiers (`NSVersionIdentifiers`; often one empty string).
    public var versionIdentifiers: [String]

    /// A model of your own (tests, or a model inferred from the tables).
    public init(entities: [CoreDataEntity], versionIdentifiers: [String] = []) {
        self.entities = entities
        self.versionIdentifiers = versionIdentifiers
    }

    /// The entity named `name`.
    public func entity(named name: String) -> CoreDataEntity? { entities.first { $0.name == name } }
}

/// An entity of a ``CoreDataModel``.
public struct CoreDataEntity: Sendable, Equatable {
    /// The entity's name (`NSEntityName`).
    public var name: String
    /// The managed object class's name, when the model names one.
    public var className: String?
    /// The parent entity's name, or nil for a root entity.
    public var parentName: String?
    /// Whether the entity is abstract (it has no instances of its own).
    public var isAbstract: Bool
    /// The entity's name in the model version it was renamed from, when the model says so
    /// (Core Data writes the entity's own name when nothing was renamed).
    public var renamingIdentifier: String?
    /// The version hash modifier, when the model sets one.
    public var versionHashModifier: String?
    /// The attributes the entity itself declares (not its parent's), by name.
    public var attributes: [CoreDataAttribute]
    /// The relationships the entity itself declares, by name.
    public var relationships: [CoreDataRelationship]
    /// Properties that are neither attributes nor relationships (fetched properties), by name.
    public var otherProperties: [CoreDataOtherProperty]
    /// Uniqueness constraints: each a list of property names that together are unique.
    public var uniquenessConstraints: [[String]]
    /// Indexes (fetch index descriptions and the older compound indexes).
    public var indexes: [CoreDataIndex]

    /// An entity of your own.
    public init(
        name: String, className: String? = nil, parentName: String? = nil, isAbstract: Bool = false,
        renamingIdentifier: String? = nil, versionHashModifier: String? = nil,
        attributes: [CoreDataAttribute] = [], relationships: [CoreDataRelationship] = [],
        otherProperties: [CoreDataOtherProperty] = [], uniquenessConstraints: [[String]] = [],
        indexes: [CoreDataIndex] = []
    ) {
        self.name = name
        self.className = className
        self.parentName = parentName
        self.isAbstract = isAbstract
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        self.attributes = attributes
        self.relationships = relationships
        self.otherProperties = otherProperties
        self.uniquenessConstraints = uniquenessConstraints
        self.indexes = indexes
    }

    /// The attribute named `name`, declared by this entity.
    public func attribute(named name: String) -> CoreDataAttribute? { attributes.first { $0.name == name } }
    /// The relationship named `name`, declared by this entity.
    public func relationship(named name: String) -> CoreDataRelationship? {
        relationships.first { $0.name == name }
    }
}

/// An attribute's type, as Core Data's `NSAttributeType` codes it.
///
/// A struct rather than an enum so a code this reader does not know survives to the report.
public struct CoreDataAttributeType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The `NSAttributeType` code.
    public var rawValue: Int
    /// The type with code `rawValue`.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// No type (0).
    public static let undefined = Self(rawValue: 0)
    /// A 16-bit integer (100).
    public static let integer16 = Self(rawValue: 100)
    /// A 32-bit integer (200).
    public static let integer32 = Self(rawValue: 200)
    /// A 64-bit integer (300).
    public static let integer64 = Self(rawValue: 300)
    /// A decimal number (400).
    public static let decimal = Self(rawValue: 400)
    /// A binary64 floating-point number (500).
    public static let double = Self(rawValue: 500)
    /// A binary32 floating-point number (600).
    public static let float = Self(rawValue: 600)
    /// Text (700).
    public static let string = Self(rawValue: 700)
    /// A boolean (800).
    public static let boolean = Self(rawValue: 800)
    /// A date (900).
    public static let date = Self(rawValue: 900)
    /// Bytes (1000).
    public static let binaryData = Self(rawValue: 1000)
    /// A UUID (1100).
    public static let uuid = Self(rawValue: 1100)
    /// A URI (1200).
    public static let uri = Self(rawValue: 1200)
    /// A value stored through a value transformer (1800).
    public static let transformable = Self(rawValue: 1800)
    /// A managed object ID (2000).
    public static let objectID = Self(rawValue: 2000)
    /// A composite attribute (2100).
    public static let composite = Self(rawValue: 2100)

    private static let names: [Int: String] = [
        0: "undefined", 100: "integer16", 200: "integer32", 300: "integer64", 400: "decimal", 500: "double",
        600: "float", 700: "string", 800: "boolean", 900: "date", 1000: "binaryData", 1100: "uuid",
        1200: "uri",
        1800: "transformable", 2000: "objectID", 2100: "composite",
    ]

    /// Whether Core Data defines this code (any other is reported, not guessed).
    public var isKnown: Bool { Self.names[rawValue] != nil }

    /// The type's name (`integer16`, `string`, …), or `unknown(CODE)`.
    public var description: String { Self.names[rawValue] ?? "unknown(\(rawValue))" }
}

/// A default value from the model.
public enum CoreDataDefaultValue: Sendable, Equatable {
    /// An integer (an archived `NSNumber`).
    case integer(Int64)
    /// A floating-point number (an archived `NSNumber`).
    case real(Double)
    /// A boolean (an archived `NSNumber`).
    case bool(Bool)
    /// Text.
    case string(String)
    /// A date.
    case date(Date)
    /// Bytes.
    case data(Data)
    /// A UUID.
    case uuid(UUID)
    /// A URL, as its text.
    case url(String)
    /// A value of a class this reader does not decode (e.g. `NSDecimalNumber`), by class name.
    case other(className: String)
}

/// An attribute of a ``CoreDataEntity``.
public struct CoreDataAttribute: Sendable, Equatable {
    /// The attribute's name.
    public var name: String
    /// Its type.
    public var type: CoreDataAttributeType
    /// Whether it may be nil.
    public var isOptional: Bool
    /// Whether it is transient (not stored).
    public var isTransient: Bool
    /// The default value, when the model has one.
    public var defaultValue: CoreDataDefaultValue?
    /// Whether binary data may live in a file beside the store (`_EXTERNAL_DATA`).
    public var allowsExternalBinaryDataStorage: Bool
    /// The attribute's name in the model version it was renamed from, when the model says so
    /// (Core Data writes the attribute's own name when nothing was renamed).
    public var renamingIdentifier: String?
    /// The value class's name (`NSString`, `NSDate`, …), when the model names one.
    public var valueClassName: String?
    /// The value transformer's name, for a transformable attribute that names one.
    public var valueTransformerName: String?

    /// An attribute of your own.
    public init(
        name: String, type: CoreDataAttributeType, isOptional: Bool = true, isTransient: Bool = false,
        defaultValue: CoreDataDefaultValue? = nil, allowsExternalBinaryDataStorage: Bool = false,
        renamingIdentifier: String? = nil, valueClassName: String? = nil, valueTransformerName: String? = nil
    ) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.isTransient = isTransient
        self.defaultValue = defaultValue
        self.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
        self.renamingIdentifier = renamingIdentifier
        self.valueClassName = valueClassName
        self.valueTransformerName = valueTransformerName
    }
}

/// What happens to a relationship's destination when its source is deleted (`NSDeleteRule`).
public enum CoreDataDeleteRule: Int, Sendable, Equatable {
    /// Nothing (0): the destination keeps a reference to a deleted object.
    case noAction = 0
    /// The destination's inverse is cleared (1).
    case nullify = 1
    /// The destination is deleted too (2).
    case cascade = 2
    /// The source cannot be deleted while it has destinations (3).
    case deny = 3
}

/// A relationship of a ``CoreDataEntity``.
public struct CoreDataRelationship: Sendable, Equatable {
    /// The relationship's name.
    public var name: String
    /// The destination entity's name.
    public var destinationEntityName: String
    /// The inverse relationship's name (on the destination entity), when there is one.
    public var inverseName: String?
    /// The fewest destinations (`NSMinCount`).
    public var minCount: Int
    /// The most destinations (`NSMaxCount`); 0 means no limit.
    public var maxCount: Int
    /// The delete rule.
    public var deleteRule: CoreDataDeleteRule
    /// Whether it may be empty (nil for a to-one).
    public var isOptional: Bool
    /// Whether a to-many keeps its destinations in order.
    public var isOrdered: Bool
    /// Whether it is transient (not stored).
    public var isTransient: Bool
    /// The relationship's name in the model version it was renamed from, when the model says so.
    public var renamingIdentifier: String?

    /// A to-many relationship has a `maxCount` other than 1 (0 is "no limit").
    public var isToMany: Bool { maxCount != 1 }

    /// A relationship of your own.
    public init(
        name: String, destinationEntityName: String, inverseName: String? = nil, minCount: Int = 0,
        maxCount: Int = 1, deleteRule: CoreDataDeleteRule = .nullify, isOptional: Bool = true,
        isOrdered: Bool = false, isTransient: Bool = false, renamingIdentifier: String? = nil
    ) {
        self.name = name
        self.destinationEntityName = destinationEntityName
        self.inverseName = inverseName
        self.minCount = minCount
        self.maxCount = maxCount
        self.deleteRule = deleteRule
        self.isOptional = isOptional
        self.isOrdered = isOrdered
        self.isTransient = isTransient
        self.renamingIdentifier = renamingIdentifier
    }
}

/// A property that is neither an attribute nor a relationship (a fetched property), kept so an
/// importer can say it left it out.
public struct CoreDataOtherProperty: Sendable, Equatable {
    /// The property's name.
    public var name: String
    /// Its archived class (`NSFetchedPropertyDescription`, …).
    public var className: String

    /// A property of your own.
    public init(name: String, className: String) {
        self.name = name
        self.className = className
    }
}

/// An index of an entity: a fetch index description, or one of the older compound indexes.
public struct CoreDataIndex: Sendable, Equatable {
    /// The index's name (fetch index descriptions have one; compound indexes do not).
    public var name: String?
    /// The indexed properties' names, in order.
    public var propertyNames: [String]

    /// An index of your own.
    public init(name: String?, propertyNames: [String]) {
        self.name = name
        self.propertyNames = propertyNames
    }
}
