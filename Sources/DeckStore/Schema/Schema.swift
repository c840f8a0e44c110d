import Foundation

/// The description of a document's data: its entities, their attributes and relationships.
///
/// A schema is stored inside every package (see `spec/format.md`, "Schema"), so any tool can
/// read a document without the app that made it. It is plain data and `Codable`; the JSON form
/// is the schema file format that `deck new --schema` reads.
///
/// ```swift
/// let schema = StoreSchema(version: "1.0.0", entities: [
///     Entity("Card", attributes: [
///         Attribute("front", .string),
///         Attribute("image", .data, isOptional: true, options: [.externalStorage]),
///     ]),
/// ])
/// ```
public struct StoreSchema: Codable, Sendable, Equatable {
    /// The app's schema version (free text, conventionally semantic: "1.2.0").
    public var version: String
    /// The entities, in declaration order.
    public var entities: [Entity]

    public init(version: String = "1.0.0", entities: [Entity]) {
        self.version = version
        self.entities = entities
    }

    /// Decodes and validates a schema file (the JSON form in spec/format.md, "Schema").
    ///
    /// - Parameter source: names the file in error messages.
    /// The file is read with Deck's strict JSON rules (spec 7.5: no duplicate member names, no
    /// byte-order mark), and numbers with their exact text, so a default keeps every digit.
    public init(json data: Data, source: String) throws(DeckError) {
        let bytes = [UInt8](data)
        let tree: JSONText.Tree
        do {
            tree = try JSONText.parse(bytes)
        } catch {
            throw DeckError.invalidSchema("\(source): not valid JSON: \(error.located(in: bytes))")
        }
        do {
            let decoder = JSONDecoder()
            decoder.userInfo[JSONScalar.numberTextsKey] = JSONScalar.NumberTexts(tree)
            self = try decoder.decode(StoreSchema.self, from: data)
        } catch {
            throw DeckError.invalidSchema("\(source): \(describe(error))")
        }
        _ = try SchemaMapping(self)
    }

    /// The most bytes ``init(contentsOf:)`` reads: 64 MiB, far more than a schema within the
    /// format's limits (``Limits``) needs.
    public static let maximumFileBytes = 64 << 20

    /// Reads and validates the schema file at `url` (``init(json:source:)``, naming the file).
    ///
    /// Only a regular file is read (a link to one is followed); a directory, FIFO, socket or
    /// device is refused before anything blocks on it, and so is a file over
    /// ``maximumFileBytes``.
    ///
    /// - Throws: ``DeckError/notFound(path:)`` and ``DeckError/permissionDenied(path:operation:)``
    ///   when the file cannot be opened; ``DeckError/invalidSchema(_:)`` when it is not a regular
    ///   file, is too large, or is not a valid schema.
    public init(contentsOf url: URL) throws(DeckError) {
        let data = try InputFile.smallFile(
            at: url, limit: Self.maximumFileBytes, kind: "schema file", invalid: DeckError.invalidSchema)
        try self.init(json: data, source: url.path)
    }

    /// The entity called `name`.
    public func entity(named name: String) -> Entity? { entities.first { $0.name == name } }

    /// Checks the schema as creating a document does (names, types, inheritance, relationships
    /// and their inverses, constraints), and throws ``DeckError/invalidSchema(_:)`` saying what is
    /// wrong.
    public func validate() throws(DeckError) {
        _ = try SchemaMapping(self)
    }

    /// The entity called `name` and its ancestors, root first (empty for an unknown name; a
    /// cycle, which a valid schema cannot have, ends the chain).
    public func inheritanceChain(of name: String) -> [Entity] {
        var chain: [Entity] = []
        var next = entity(named: name)
        while let current = next, !chain.contains(where: { $0.name == current.name }) {
            chain.insert(current, at: 0)
            next = current.superentity.flatMap { entity(named: $0) }
        }
        return chain
    }

    /// Every attribute and relationship of the entity called `name`, inherited ones first, as a
    /// record of it has them.
    public func properties(of name: String) -> (attributes: [Attribute], relationships: [Relationship]) {
        let chain = inheritanceChain(of: name)
        return (chain.flatMap(\.attributes), chain.flatMap(\.relationships))
    }

    /// Whether `name` is `ancestor` or one of its descendants.
    public func entity(_ name: String, inheritsFrom ancestor: String) -> Bool {
        inheritanceChain(of: name).contains { $0.name == ancestor }
    }
}

extension StoreSchema {
    /// One kind of record: a table's worth of rows (or part of a table, under inheritance).
    public struct Entity: Codable, Sendable, Equatable {
        public var name: String
        /// The parent entity, for inheritance: a fetch of the parent returns this entity's records.
        public var superentity: String?
        /// Attributes declared by this entity (not those it inherits).
        public var attributes: [Attribute]
        /// Relationships declared by this entity (not those it inherits).
        public var relationships: [Relationship]
        /// Composite unique constraints: each is a list of attribute names whose values together are unique.
        public var uniqueConstraints: [[String]]
        /// Composite indexes: each is a list of attribute names.
        public var indexes: [[String]]
        /// The entity's name in the previous schema version, when renamed.
        public var originalName: String?

        public init(
            _ name: String, superentity: String? = nil, attributes: [Attribute] = [],
            relationships: [Relationship] = [], uniqueConstraints: [[String]] = [], indexes: [[String]] = [],
            originalName: String? = nil
        ) {
            self.name = name
            self.superentity = superentity
            self.attributes = attributes
            self.relationships = relationships
            self.uniqueConstraints = uniqueConstraints
            self.indexes = indexes
            self.originalName = originalName
        }

        enum CodingKeys: String, CodingKey {
            case name, superentity, attributes, relationships, uniqueConstraints, indexes, originalName
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decode(String.self, forKey: .name)
            superentity = try c.decodeIfPresent(String.self, forKey: .superentity)
            attributes = try c.decodeIfPresent([Attribute].self, forKey: .attributes) ?? []
            relationships = try c.decodeIfPresent([Relationship].self, forKey: .relationships) ?? []
            uniqueConstraints = try c.decodeIfPresent([[String]].self, forKey: .uniqueConstraints) ?? []
            indexes = try c.decodeIfPresent([[String]].self, forKey: .indexes) ?? []
            originalName = try c.decodeIfPresent(String.self, forKey: .originalName)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encodeIfPresent(superentity, forKey: .superentity)
            try c.encode(attributes, forKey: .attributes)
            try c.encode(relationships, forKey: .relationships)
            if !uniqueConstraints.isEmpty { try c.encode(uniqueConstraints, forKey: .uniqueConstraints) }
            if !indexes.isEmpty { try c.encode(indexes, forKey: .indexes) }
            try c.encodeIfPresent(originalName, forKey: .originalName)
        }
    }

    /// The type of an attribute's values, and so how they are stored (see the spec's "Values").
    public enum AttributeType: String, Codable, Sendable, CaseIterable {
        case string, integer, double, bool, date, data, uuid, url, decimal, json

        /// The SQLite column type the spec assigns.
        var columnType: String {
            switch self {
            case .string, .uuid, .url, .decimal, .json: "TEXT"
            case .integer, .bool: "INTEGER"
            case .double, .date: "REAL"
            case .data: "BLOB"
            }
        }
    }

    /// One stored property of an entity.
    public struct Attribute: Codable, Sendable, Equatable {
        /// Options on an attribute, named as SwiftData names them.
        public struct Options: OptionSet, Codable, Sendable, Hashable {
            public let rawValue: Int
            public init(rawValue: Int) { self.rawValue = rawValue }
            /// No two records of the entity (and its subentities) share a non-null value.
            public static let unique = Options(rawValue: 1)
            /// Values at or above the threshold are stored as blob files (data attributes only).
            public static let externalStorage = Options(rawValue: 2)
            /// The column gets an index.
            public static let indexed = Options(rawValue: 4)

            static let names: [(String, Options)] = [
                ("unique", .unique), ("externalStorage", .externalStorage), ("indexed", .indexed),
            ]

            public init(from decoder: any Decoder) throws {
                var c = try decoder.unkeyedContainer()
                var options: Options = []
                while !c.isAtEnd {
                    // The index of this element (decoding it moves the container to the next one).
                    let index = c.currentIndex
                    let name = try c.decode(String.self)
                    guard let option = Self.names.first(where: { $0.0 == name })?.1 else {
                        let known = Self.names.map(\.0).joined(separator: ", ")
                        throw DecodingError.dataCorrupted(
                            .init(
                                codingPath: c.codingPath + [IndexKey(intValue: index)],
                                debugDescription:
                                    "unknown attribute option '\(name)' (expected one of: \(known))"
                            ))
                    }
                    options.insert(option)
                }
                self = options
            }

            public func encode(to encoder: any Encoder) throws {
                var c = encoder.unkeyedContainer()
                for (name, option) in Self.names where contains(option) { try c.encode(name) }
            }
        }

        /// A default computed when a record is inserted (spec 5.4).
        public enum DynamicDefault: String, Codable, Sendable, CaseIterable {
            /// The time of the insert (date attributes only).
            case now
        }

        public var name: String
        public var type: AttributeType
        /// Whether the attribute may be null.
        public var isOptional: Bool
        /// The value a new record gets when none is given. A date default is kept as the schema
        /// writes it, seconds since 1970 (spec 5.4): one given as another timestamp becomes the
        /// nearest such number.
        public var defaultValue: Value? {
            didSet { defaultValue = defaultValue.map(Self.schemaForm) }
        }
        /// A default computed at each insert instead of a fixed ``defaultValue`` (schema member
        /// `dynamicDefault`; a reader that predates it ignores it and has no default).
        public var dynamicDefault: DynamicDefault?
        public var options: Options
        /// For `.externalStorage`: values of at least this many bytes go to blob files.
        /// nil means the format's default, ``Attribute/defaultExternalThreshold``.
        public var externalThreshold: Int?
        /// The attribute's name in the previous schema version, when renamed.
        public var originalName: String?

        /// A default as the schema holds it: a date as seconds since 1970 (spec 5.4).
        private static func schemaForm(_ value: Value) -> Value {
            guard case .date(let timestamp) = value, timestamp.epoch != .unix else { return value }
            return .date(Timestamp(timeIntervalSince1970: timestamp.timeIntervalSince1970))
        }

        /// The spec's default threshold for external storage: 64 KiB.
        public static let defaultExternalThreshold = 65_536

        public init(
            _ name: String, _ type: AttributeType, isOptional: Bool = false, defaultValue: Value? = nil,
            dynamicDefault: DynamicDefault? = nil, options: Options = [], externalThreshold: Int? = nil,
            originalName: String? = nil
        ) {
            self.name = name
            self.type = type
            self.isOptional = isOptional
            self.defaultValue = defaultValue.map(Self.schemaForm)
            self.dynamicDefault = dynamicDefault
            self.options = options
            self.externalThreshold = externalThreshold
            self.originalName = originalName
        }

        /// The threshold in force for this attribute.
        public var effectiveExternalThreshold: Int { externalThreshold ?? Self.defaultExternalThreshold }

        /// The value a new record gets when none is given: the default, the time of the insert (to
        /// the millisecond) for `dynamicDefault` `now`, or null.
        func initialValue() -> Value {
            if let defaultValue { return defaultValue }
            if dynamicDefault == .now {
                // To the millisecond, like the package's own times: it prints as ….123Z (in a
                // document counting from 2001; one counting from 1970 stores the nearest number).
                let milliseconds = (Date().timeIntervalSinceReferenceDate * 1000).rounded()
                return .date(Timestamp(timeIntervalSinceReferenceDate: milliseconds / 1000))
            }
            return .null
        }

        /// Why the attribute's default is not valid (spec 5.4; 5.8 rule 4), or nil.
        package var defaultProblem: String? {
            let value = defaultValue ?? .null
            if let dynamicDefault {
                guard type == .date else {
                    return "dynamicDefault '\(dynamicDefault.rawValue)' applies to date attributes only"
                }
                guard value.isNull else { return "give either a default or a dynamicDefault, not both" }
            }
            guard !value.isNull else { return nil }
            if case .json(let text) = value, JSONText.isNull(text) {
                return "a json default of null would store no value; omit the default instead"
            }
            do {
                _ = try value.sqlValue(for: self, epoch: .unix)
            } catch {
                return "default value: \(error)"
            }
            return nil
        }

        enum CodingKeys: String, CodingKey {
            case name, type, optional
            case defaultValue = "default"
            case dynamicDefault, options, externalThreshold, originalName
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decode(String.self, forKey: .name)
            type = try c.decode(AttributeType.self, forKey: .type)
            isOptional = try c.decodeIfPresent(Bool.self, forKey: .optional) ?? false
            options = try c.decodeIfPresent(Options.self, forKey: .options) ?? []
            originalName = try c.decodeIfPresent(String.self, forKey: .originalName)
            let name = name
            func invalid(_ key: CodingKeys, _ message: String) -> DecodingError {
                .dataCorruptedError(forKey: key, in: c, debugDescription: "attribute '\(name)': \(message)")
            }
            // Read as a JSON scalar, so that 1.5 or 1e400 gets a message rather than "not valid JSON".
            switch try c.decodeIfPresent(JSONScalar.self, forKey: .externalThreshold) {
            case nil, .null?: externalThreshold = nil
            case .number(let text)?:
                guard let number = DecimalNumber(text), number.exponent >= 0 || number.isZero,
                    number.integerDigits <= 19, let value = Int(number.plainText)
                else {
                    throw invalid(
                        .externalThreshold, "externalThreshold must be a whole number of bytes, not \(text)")
                }
                externalThreshold = value
            case let other?:
                throw invalid(
                    .externalThreshold, "externalThreshold must be a number of bytes, not \(other.jsonText)")
            }
            if let text = try c.decodeIfPresent(String.self, forKey: .dynamicDefault) {
                guard let value = DynamicDefault(rawValue: text) else {
                    let known = DynamicDefault.allCases.map(\.rawValue).joined(separator: ", ")
                    throw invalid(
                        .dynamicDefault, "unknown dynamicDefault '\(text)' (expected one of: \(known))")
                }
                dynamicDefault = value
            } else {
                dynamicDefault = nil
            }
            if let json = try c.decodeIfPresent(JSONScalar.self, forKey: .defaultValue) {
                do {
                    let value = try Value(json: json, type: type)
                    defaultValue = value.isNull ? nil : value
                } catch {
                    throw invalid(.defaultValue, "invalid default: \(error)")
                }
            } else {
                defaultValue = nil
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encode(type, forKey: .type)
            if isOptional { try c.encode(true, forKey: .optional) }
            if let defaultValue, !defaultValue.isNull {
                try c.encode(defaultValue.jsonScalar, forKey: .defaultValue)
            }
            try c.encodeIfPresent(dynamicDefault, forKey: .dynamicDefault)
            if !options.isEmpty { try c.encode(options, forKey: .options) }
            try c.encodeIfPresent(externalThreshold, forKey: .externalThreshold)
            try c.encodeIfPresent(originalName, forKey: .originalName)
        }
    }

    /// What happens to related records when a record is deleted.
    public enum DeleteRule: String, Codable, Sendable, CaseIterable {
        /// Delete the related records too.
        case cascade
        /// Clear the related records' references to the deleted one (the default).
        case nullify
        /// Refuse to delete while related records exist.
        case deny
        /// Do nothing: related records keep a dangling reference (``PackageVerifier`` reports it).
        case noAction
    }

    /// A reference from one entity to another.
    public struct Relationship: Codable, Sendable, Equatable {
        public var name: String
        /// The target entity.
        public var destination: String
        /// A to-many relationship holds a set of records; a to-one holds at most one.
        public var isToMany: Bool
        /// The relationship on `destination` that points back, if any.
        public var inverse: String?
        public var deleteRule: DeleteRule
        /// The relationship's name in the previous schema version, when renamed.
        public var originalName: String?

        public init(
            _ name: String, to destination: String, toMany: Bool = false, inverse: String? = nil,
            deleteRule: DeleteRule = .nullify, originalName: String? = nil
        ) {
            self.name = name
            self.destination = destination
            self.isToMany = toMany
            self.inverse = inverse
            self.deleteRule = deleteRule
            self.originalName = originalName
        }

        enum CodingKeys: String, CodingKey {
            case name, destination, toMany, inverse, deleteRule, originalName
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decode(String.self, forKey: .name)
            destination = try c.decode(String.self, forKey: .destination)
            isToMany = try c.decodeIfPresent(Bool.self, forKey: .toMany) ?? false
            inverse = try c.decodeIfPresent(String.self, forKey: .inverse)
            deleteRule = try c.decodeIfPresent(DeleteRule.self, forKey: .deleteRule) ?? .nullify
            originalName = try c.decodeIfPresent(String.self, forKey: .originalName)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encode(destination, forKey: .destination)
            if isToMany { try c.encode(true, forKey: .toMany) }
            try c.encodeIfPresent(inverse, forKey: .inverse)
            try c.encode(deleteRule, forKey: .deleteRule)
            try c.encodeIfPresent(originalName, forKey: .originalName)
        }
    }

}

/// A coding key for an array element, for error paths.
struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { String(intValue ?? 0) }
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}
