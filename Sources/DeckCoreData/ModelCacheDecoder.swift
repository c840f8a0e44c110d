import Foundation

extension CoreDataModel {
    /// Decodes a store's model cache: the `Z_CONTENT` of `Z_MODELCACHE`, raw DEFLATE of an
    /// `NSKeyedArchiver` binary property list of an `NSManagedObjectModel`.
    ///
    /// - Parameter maximumInflatedSize: the most bytes the cache may inflate to.
    /// - Throws: ``CoreDataError``: the inflate's, the property list's, the archive's, or
    ///   `badModel` when the archive is not a model Core Data could have written.
    public init(
        modelCache: Data, maximumInflatedSize: Int = RawDeflate.standardMaximumOutput,
        limits: BinaryPropertyList.Limits = .standard
    ) throws(CoreDataError) {
        let plist = try RawDeflate.inflate(modelCache, maximumOutput: maximumInflatedSize)
        try self.init(archive: KeyedArchive(data: plist, limits: limits))
    }

    /// Reads the `NSManagedObjectModel` at the archive's root.
    ///
    /// References between the model's objects (an entity's parent, a relationship's destination
    /// and inverse) are resolved by UID against the model's own entities and properties; one
    /// that names something else is a `badModel` error.
    public init(archive: KeyedArchive) throws(CoreDataError) {
        self = try ModelReader(archive: archive).model()
    }
}

/// Reads Core Data's archived model classes out of a ``KeyedArchive``.
private struct ModelReader {
    let archive: KeyedArchive

    func model() throws(CoreDataError) -> CoreDataModel {
        let root = try archive.topUID("root")
        guard try archive.classes(root).contains("NSManagedObjectModel") else {
            throw CoreDataError(
                .badModel,
                "keyed archive's root is a \(try archive.className(root)), not an NSManagedObjectModel")
        }
        let model = try archive.dictionary(root)
        let entityUIDs = try entityList(model)
        var names: [UInt64: String] = [:]
        var seen: Set<String> = []
        for uid in entityUIDs {
            guard try archive.classes(uid).contains("NSEntityDescription") else {
                throw CoreDataError(.badModel, "model's entity list holds a \(try archive.className(uid))")
            }
            let name = try requiredString(archive.dictionary(uid), "NSEntityName", of: uid)
            guard names.updateValue(name, forKey: uid) == nil, seen.insert(name).inserted else {
                throw CoreDataError(.badModel, "model lists the entity '\(name)' twice")
            }
        }
        var entities: [CoreDataEntity] = []
        for uid in entityUIDs { entities.append(try entity(uid, names: names)) }
        var versions: [String] = []
        if let uid = try optionalUID(model, "NSVersionIdentifiers") {
            for element in try archive.elements(uid) { versions.append(try archive.string(element)) }
        }
        return CoreDataModel(entities: entities, versionIdentifiers: versions.sorted())
    }

    /// The entities' UIDs: `NSEntities` is an `NSKnownKeysDictionary1` (its `values` array) or
    /// a plain dictionary.
    func entityList(_ model: [String: PropertyListValue]) throws(CoreDataError) -> [UInt64] {
        guard let uid = try optionalUID(model, "NSEntities") else { return [] }
        let entities = try archive.dictionary(uid)
        if let values = entities["values"]?.uid { return try archive.elements(values) }
        return try archive.entries(uid).map(\.value)
    }

    func entity(_ uid: UInt64, names: [UInt64: String]) throws(CoreDataError) -> CoreDataEntity {
        let object = try archive.dictionary(uid)
        let name = names[uid] ?? ""
        var entity = CoreDataEntity(name: name)
        entity.className = try optionalString(object, "NSClassNameForEntity")
        if let parent = try optionalUID(object, "NSSuperentity") {
            guard let parentName = names[parent] else {
                throw CoreDataError(
                    .badModel,
                    "entity '\(name)'s parent (object \(parent)) is not one of the model's entities")
            }
            entity.parentName = parentName
        }
        entity.isAbstract = try bool(object, "NSIsAbstract")
        entity.renamingIdentifier = try optionalString(object, "NSRenamingIdentifier")
        entity.versionHashModifier = try optionalString(object, "NSVersionHashModifier")
        var propertyNames: [UInt64: String] = [:]
        if let properties = try optionalUID(object, "NSProperties") {
            let uids: [UInt64]
            if try archive.dictionary(properties)["NS.keys"] != nil {
                uids = try archive.entries(properties).map(\.value)
            } else {
                uids = try archive.elements(properties)
            }
            for property in uids {
                let fields = try archive.dictionary(property)
                let propertyName = try requiredString(fields, "NSPropertyName", of: property)
                propertyNames[property] = propertyName
                let classes = try archive.classes(property)
                if classes.contains("NSAttributeDescription") {
                    entity.attributes.append(try attribute(property, fields, name: propertyName))
                } else if classes.contains("NSRelationshipDescription") {
                    entity.relationships.append(
                        try relationship(property, fields, name: propertyName, entity: name, names: names))
                } else {
                    entity.otherProperties.append(
                        CoreDataOtherProperty(name: propertyName, className: classes[0]))
                }
            }
        }
        entity.attributes.sort { $0.name < $1.name }
        entity.relationships.sort { $0.name < $1.name }
        entity.otherProperties.sort { $0.name < $1.name }
        entity.uniquenessConstraints = try nameLists(
            object, "NSUniquenessConstraints", properties: propertyNames)
        entity.indexes = try nameLists(object, "NSCompoundIndexes", properties: propertyNames).map {
            CoreDataIndex(name: nil, propertyNames: $0)
        }
        entity.indexes += try fetchIndexes(object, properties: propertyNames)
        return entity
    }

    func attribute(
        _ uid: UInt64, _ fields: [String: PropertyListValue], name: String
    ) throws(CoreDataError) -> CoreDataAttribute {
        guard let code = fields["NSAttributeType"]?.integer, let type = Int(exactly: code) else {
            throw CoreDataError(
                .badModel, "attribute '\(name)' (object \(uid)) has no integer NSAttributeType")
        }
        var attribute = CoreDataAttribute(name: name, type: CoreDataAttributeType(rawValue: type))
        attribute.isOptional = try bool(fields, "NSIsOptional")
        attribute.isTransient = try bool(fields, "NSIsTransient")
        attribute.allowsExternalBinaryDataStorage = try bool(fields, "NSAllowsExternalBinaryDataStorage")
        attribute.renamingIdentifier = try optionalString(fields, "NSRenamingIdentifier")
        attribute.valueClassName = try optionalString(fields, "NSAttributeValueClassName")
        attribute.valueTransformerName = try optionalString(fields, "NSValueTransformerName")
        if let value = try optionalUID(fields, "NSDefaultValue") {
            attribute.defaultValue = try defaultValue(value)
        }
        return attribute
    }

    func relationship(
        _ uid: UInt64, _ fields: [String: PropertyListValue], name: String, entity: String,
        names: [UInt64: String]
    ) throws(CoreDataError) -> CoreDataRelationship {
        let what = "relationship '\(entity).\(name)'"
        let destination: String
        if let target = try optionalUID(fields, "NSDestinationEntity") {
            guard let targetName = names[target] else {
                throw CoreDataError(
                    .badModel, "\(what)'s destination (object \(target)) is not one of the model's entities")
            }
            destination = targetName
        } else if let targetName = try optionalString(fields, "_NSDestinationEntityName") {
            destination = targetName
        } else {
            throw CoreDataError(.badModel, "\(what) has no destination entity")
        }
        var relationship = CoreDataRelationship(name: name, destinationEntityName: destination)
        if let inverse = try optionalUID(fields, "NSInverseRelationship") {
            relationship.inverseName = try requiredString(
                archive.dictionary(inverse), "NSPropertyName", of: inverse)
        } else {
            relationship.inverseName = try optionalString(fields, "_NSInverseRelationshipName")
        }
        relationship.minCount = try count(fields, "NSMinCount", of: what)
        relationship.maxCount = try count(fields, "NSMaxCount", of: what)
        let rule = fields["NSDeleteRule"]?.integer ?? 0
        guard let deleteRule = CoreDataDeleteRule(rawValue: Int(clamping: rule)) else {
            throw CoreDataError(.badModel, "\(what) has the delete rule \(rule); Core Data's are 0 to 3")
        }
        relationship.deleteRule = deleteRule
        relationship.isOptional = try bool(fields, "NSIsOptional")
        relationship.isOrdered = try bool(fields, "NSIsOrdered")
        relationship.isTransient = try bool(fields, "NSIsTransient")
        relationship.renamingIdentifier = try optionalString(fields, "NSRenamingIdentifier")
        return relationship
    }

    func defaultValue(_ uid: UInt64) throws(CoreDataError) -> CoreDataDefaultValue {
        switch try archive.object(uid) {
        case .integer(let value): return .integer(value)
        case .real(let value): return .real(value)
        case .bool(let value): return .bool(value)
        case .string(let value): return .string(value)
        case .data(let value): return .data(value)
        case .date(let value): return .date(value)
        case .dictionary(let fields):
            let classes = try archive.classes(uid)
            if let text = fields["NS.string"]?.string { return .string(text) }
            if let seconds = fields["NS.time"], classes.contains("NSDate") {
                switch seconds {
                case .real(let value): return .date(Date(timeIntervalSinceReferenceDate: value))
                case .integer(let value): return .date(Date(timeIntervalSinceReferenceDate: Double(value)))
                default: break
                }
            }
            if let bytes = fields["NS.data"]?.data { return .data(bytes) }
            if let bytes = fields["NS.uuidbytes"]?.data, bytes.count == 16 {
                let b = [UInt8](bytes)
                return .uuid(
                    UUID(
                        uuid: (
                            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                            b[13], b[14], b[15]
                        )))
            }
            if classes.contains("NSURL"), let relative = fields["NS.relative"]?.uid {
                return .url(try archive.string(relative))
            }
            return .other(className: classes[0])
        default:
            throw CoreDataError(
                .unexpectedArchivedValue, "default value (object \(uid)) is not a value Core Data archives")
        }
    }

    /// Lists of property names (uniqueness constraints, compound indexes): an array of arrays
    /// whose elements are names or property descriptions.
    func nameLists(
        _ fields: [String: PropertyListValue], _ key: String, properties: [UInt64: String]
    ) throws(CoreDataError) -> [[String]] {
        guard let uid = try optionalUID(fields, key) else { return [] }
        var lists: [[String]] = []
        for list in try archive.elements(uid) {
            var names: [String] = []
            for element in try archive.elements(list) {
                names.append(try propertyName(element, properties: properties))
            }
            lists.append(names)
        }
        return lists
    }

    /// A name, a property description, or a fetch index element naming one.
    func propertyName(_ uid: UInt64, properties: [UInt64: String]) throws(CoreDataError) -> String {
        if let name = properties[uid] { return name }
        if let text = try? archive.string(uid) { return text }
        let fields = try archive.dictionary(uid)
        if let name = try optionalString(fields, "NSPropertyName") { return name }
        for key in ["NSProperty", "NSPropertyDescription", "NSPropertyNameForIndex"] {
            if let inner = try optionalUID(fields, key), inner != uid {
                if let name = properties[inner] { return name }
                if let text = try? archive.string(inner) { return text }
            }
        }
        throw CoreDataError(.badModel, "index or constraint element (object \(uid)) names no property")
    }

    /// `NSFetchIndexDescriptions`: each a name and a list of elements naming properties.
    func fetchIndexes(
        _ fields: [String: PropertyListValue], properties: [UInt64: String]
    ) throws(CoreDataError) -> [CoreDataIndex] {
        guard let uid = try optionalUID(fields, "NSFetchIndexDescriptions") else { return [] }
        var indexes: [CoreDataIndex] = []
        for index in try archive.elements(uid) {
            let description = try archive.dictionary(index)
            var name = try optionalString(description, "NSIndexName")
            if name == nil { name = try optionalString(description, "NSName") }
            var elementList = try optionalUID(description, "NSIndexElements")
            if elementList == nil { elementList = try optionalUID(description, "NSElements") }
            var names: [String] = []
            if let elements = elementList {
                for element in try archive.elements(elements) {
                    names.append(try propertyName(element, properties: properties))
                }
            }
            indexes.append(CoreDataIndex(name: name, propertyNames: names))
        }
        return indexes
    }

    // MARK: Fields

    /// The UID under `key`, or nil when the key is absent or the UID is `$null`.
    func optionalUID(_ fields: [String: PropertyListValue], _ key: String) throws(CoreDataError) -> UInt64? {
        guard let value = fields[key] else { return nil }
        guard let uid = value.uid else {
            throw CoreDataError(
                .unexpectedArchivedValue, "archived key '\(key)' holds a \(value) rather than a UID")
        }
        _ = try archive.object(uid)
        return archive.isNull(uid) ? nil : uid
    }

    func optionalString(_ fields: [String: PropertyListValue], _ key: String) throws(CoreDataError) -> String?
    {
        guard let uid = try optionalUID(fields, key) else { return nil }
        return try archive.string(uid)
    }

    func requiredString(
        _ fields: [String: PropertyListValue], _ key: String, of uid: UInt64
    ) throws(CoreDataError) -> String {
        guard let text = try optionalString(fields, key) else {
            throw CoreDataError(.badModel, "archived object \(uid) has no '\(key)'")
        }
        return text
    }

    /// A boolean flag; absent is false (Core Data leaves out false flags).
    func bool(_ fields: [String: PropertyListValue], _ key: String) throws(CoreDataError) -> Bool {
        switch fields[key] {
        case nil: return false
        case .bool(let value): return value
        case .integer(let value): return value != 0
        case let value?:
            throw CoreDataError(
                .unexpectedArchivedValue, "archived flag '\(key)' holds \(value), not a boolean")
        }
    }

    func count(_ fields: [String: PropertyListValue], _ key: String, of what: String) throws(CoreDataError)
        -> Int
    {
        let value = fields[key]?.integer ?? 0
        guard value >= 0, value <= Int64(Int32.max) else {
            throw CoreDataError(.badModel, "\(what) has \(key) \(value)")
        }
        return Int(value)
    }
}
