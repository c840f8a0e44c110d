import DeckCoreData
import Foundation

/// Builds `NSKeyedArchiver` archives for tests: `$objects` with `$null` at UID 0, classes
/// shared by name, objects that refer to each other by UID (reserve a UID first to refer to an
/// object before it is written).
package struct KeyedArchiveBuilder {
    package private(set) var objects: [PropertyListValue] = [.string("$null")]
    private var classes: [String: UInt64] = [:]

    /// An empty builder.
    package init() {}

    /// Adds `value` as an object of its own and returns its UID.
    package mutating func add(_ value: PropertyListValue) -> UInt64 {
        objects.append(value)
        return UInt64(objects.count - 1)
    }

    /// A UID to fill in later with ``set(_:_:)``.
    package mutating func reserve() -> UInt64 { add(.null) }

    /// Fills in (or replaces) object `uid`.
    package mutating func set(_ uid: UInt64, _ value: PropertyListValue) { objects[Int(uid)] = value }

    /// The class description with the chain `chain` (most derived first), added once.
    package mutating func classUID(_ chain: [String]) -> UInt64 {
        if let uid = classes[chain[0]] { return uid }
        let uid = add(
            .dictionary(["$classname": .string(chain[0]), "$classes": .array(chain.map { .string($0) })]))
        classes[chain[0]] = uid
        return uid
    }

    /// A keyed object of class `chain` with `fields`, at `uid` when given.
    @discardableResult
    package mutating func object(
        _ chain: [String], _ fields: [String: PropertyListValue], at uid: UInt64? = nil
    )
        -> UInt64
    {
        var fields = fields
        fields["$class"] = .uid(classUID(chain))
        guard let uid else { return add(.dictionary(fields)) }
        set(uid, .dictionary(fields))
        return uid
    }

    package mutating func string(_ text: String) -> PropertyListValue { .uid(add(.string(text))) }

    package mutating func array(_ uids: [UInt64], _ chain: [String] = ["NSArray", "NSObject"])
        -> PropertyListValue
    {
        .uid(object(chain, ["NS.objects": .array(uids.map { .uid($0) })]))
    }

    package mutating func dictionary(_ entries: [(String, UInt64)]) -> PropertyListValue {
        var keys: [PropertyListValue] = []
        for (key, _) in entries { keys.append(string(key)) }
        return .uid(
            object(
                ["NSMutableDictionary", "NSDictionary", "NSObject"],
                ["NS.keys": .array(keys), "NS.objects": .array(entries.map { .uid($0.1) })]))
    }

    /// The whole archive, with `root` as `$top`'s `root`.
    package func archive(root: UInt64) -> PropertyListValue {
        .dictionary([
            "$version": .integer(100_000), "$archiver": .string("NSKeyedArchiver"),
            "$top": .dictionary(["root": .uid(root)]), "$objects": .array(objects),
        ])
    }
}

/// Writes a ``CoreDataModel`` the way Core Data archives an `NSManagedObjectModel` into a
/// store's model cache (the keys the fixtures show; for what they do not show — abstract
/// entities, constraints, indexes, external storage, ordered — the keys `DeckCoreData` reads).
package enum ModelArchiveWriter {
    package static let entityClass = ["NSEntityDescription", "NSObject"]
    package static let attributeClass = ["NSAttributeDescription", "NSPropertyDescription", "NSObject"]
    package static let relationshipClass = ["NSRelationshipDescription", "NSPropertyDescription", "NSObject"]

    /// The archive as a property list value.
    package static func archive(_ model: CoreDataModel) -> PropertyListValue {
        var builder = KeyedArchiveBuilder()
        let root = builder.reserve()
        var entityUIDs: [String: UInt64] = [:]
        var propertyUIDs: [String: UInt64] = [:]  // "Entity.property"
        for entity in model.entities {
            entityUIDs[entity.name] = builder.reserve()
            for property in entity.attributes.map(\.name) + entity.relationships.map(\.name) {
                propertyUIDs[entity.name + "." + property] = builder.reserve()
            }
        }
        for entity in model.entities {
            guard let uid = entityUIDs[entity.name] else { continue }
            var fields: [String: PropertyListValue] = [
                "NSEntityName": builder.string(entity.name), "NSManagedObjectModel": .uid(root),
                "NSSuperentity": .uid(entity.parentName.flatMap { entityUIDs[$0] } ?? 0),
                "NSClassNameForEntity": entity.className.map { builder.string($0) } ?? .uid(0),
                "NSRenamingIdentifier": entity.renamingIdentifier.map { builder.string($0) } ?? .uid(0),
                "NSVersionHashModifier": entity.versionHashModifier.map { builder.string($0) } ?? .uid(0),
            ]
            if entity.isAbstract { fields["NSIsAbstract"] = .bool(true) }
            let children = model.entities.filter { $0.parentName == entity.name }
            fields["NSSubentities"] = builder.dictionary(
                children.compactMap { c in entityUIDs[c.name].map { (c.name, $0) } })
            var properties: [(String, UInt64)] = []
            for attribute in entity.attributes {
                guard let propertyUID = propertyUIDs[entity.name + "." + attribute.name] else { continue }
                write(attribute, at: propertyUID, entity: uid, into: &builder)
                properties.append((attribute.name, propertyUID))
            }
            for relationship in entity.relationships {
                guard let propertyUID = propertyUIDs[entity.name + "." + relationship.name] else { continue }
                var r: [String: PropertyListValue] = [
                    "NSPropertyName": builder.string(relationship.name), "NSEntity": .uid(uid),
                    "NSDestinationEntity": .uid(entityUIDs[relationship.destinationEntityName] ?? 0),
                    "_NSDestinationEntityName": builder.string(relationship.destinationEntityName),
                    "NSMinCount": .integer(Int64(relationship.minCount)),
                    "NSMaxCount": .integer(Int64(relationship.maxCount)),
                    "NSDeleteRule": .integer(Int64(relationship.deleteRule.rawValue)),
                    "NSRenamingIdentifier": relationship.renamingIdentifier.map { builder.string($0) }
                        ?? .uid(0),
                    "_P": .integer(241),
                ]
                if let inverse = relationship.inverseName {
                    r["NSInverseRelationship"] = .uid(
                        propertyUIDs[relationship.destinationEntityName + "." + inverse] ?? 0)
                    r["_NSInverseRelationshipName"] = builder.string(inverse)
                }
                if relationship.isOptional { r["NSIsOptional"] = .bool(true) }
                if relationship.isOrdered { r["NSIsOrdered"] = .bool(true) }
                if relationship.isTransient { r["NSIsTransient"] = .bool(true) }
                builder.object(relationshipClass, r, at: propertyUID)
                properties.append((relationship.name, propertyUID))
            }
            fields["NSProperties"] = builder.dictionary(properties)
            var constraints: [UInt64] = []
            for constraint in entity.uniquenessConstraints {
                var names: [UInt64] = []
                for name in constraint { names.append(builder.add(.string(name))) }
                if case .uid(let list) = builder.array(names) { constraints.append(list) }
            }
            if !constraints.isEmpty { fields["NSUniquenessConstraints"] = builder.array(constraints) }
            var compound: [UInt64] = []
            var fetchIndexes: [UInt64] = []
            for index in entity.indexes {
                let members = index.propertyNames.map { propertyUIDs[entity.name + "." + $0] ?? 0 }
                if let name = index.name {
                    var elements: [UInt64] = []
                    for member in index.propertyNames {
                        elements.append(
                            builder.object(
                                ["NSFetchIndexElementDescription", "NSObject"],
                                ["NSPropertyName": builder.string(member)]))
                    }
                    fetchIndexes.append(
                        builder.object(
                            ["NSFetchIndexDescription", "NSObject"],
                            ["NSIndexName": builder.string(name), "NSIndexElements": builder.array(elements)])
                    )
                } else if case .uid(let list) = builder.array(members) {
                    compound.append(list)
                }
            }
            fields["NSCompoundIndexes"] = builder.array(compound, ["NSMutableArray", "NSArray", "NSObject"])
            fields["NSFetchIndexDescriptions"] = builder.array(
                fetchIndexes, ["NSMutableArray", "NSArray", "NSObject"])
            builder.object(entityClass, fields, at: uid)
        }
        let list = builder.array(model.entities.compactMap { entityUIDs[$0.name] })
        let known = builder.object(
            [
                "NSKnownKeysDictionary1", "NSKnownKeysDictionary", "NSMutableDictionary", "NSDictionary",
                "NSObject",
            ],
            ["values": list, "version": .integer(1)])
        var versions: [UInt64] = []
        for version in model.versionIdentifiers { versions.append(builder.add(.string(version))) }
        builder.object(
            ["NSManagedObjectModel", "NSObject"],
            [
                "NSEntities": .uid(known), "NSFetchRequestTemplates": .uid(0),
                "NSVersionIdentifiers": builder.array(versions, ["NSSet", "NSObject"]),
            ], at: root)
        return builder.archive(root: root)
    }

    private static func write(
        _ attribute: CoreDataAttribute, at uid: UInt64, entity: UInt64,
        into builder: inout KeyedArchiveBuilder
    ) {
        var a: [String: PropertyListValue] = [
            "NSPropertyName": builder.string(attribute.name), "NSEntity": .uid(entity),
            "NSAttributeType": .integer(Int64(attribute.type.rawValue)),
            "NSAttributeValueClassName": attribute.valueClassName.map { builder.string($0) } ?? .uid(0),
            "NSValueTransformerName": attribute.valueTransformerName.map { builder.string($0) } ?? .uid(0),
            "NSRenamingIdentifier": attribute.renamingIdentifier.map { builder.string($0) } ?? .uid(0),
            "NSDefaultValue": .uid(attribute.defaultValue.map { defaultValue($0, into: &builder) } ?? 0),
            "NSFlagsKey": .integer(0), "_P": .integer(243),
        ]
        if attribute.isOptional { a["NSIsOptional"] = .bool(true) }
        if attribute.isTransient { a["NSIsTransient"] = .bool(true) }
        if attribute.allowsExternalBinaryDataStorage { a["NSAllowsExternalBinaryDataStorage"] = .bool(true) }
        builder.object(attributeClass, a, at: uid)
    }

    private static func defaultValue(_ value: CoreDataDefaultValue, into builder: inout KeyedArchiveBuilder)
        -> UInt64
    {
        switch value {
        case .integer(let v): return builder.add(.integer(v))
        case .real(let v): return builder.add(.real(v))
        case .bool(let v): return builder.add(.bool(v))
        case .string(let v): return builder.add(.string(v))
        case .date(let v):
            return builder.object(
                ["NSDate", "NSObject"], ["NS.time": .real(v.timeIntervalSinceReferenceDate)])
        case .data(let v): return builder.object(["NSData", "NSObject"], ["NS.data": .data(v)])
        case .uuid(let v):
            let bytes = withUnsafeBytes(of: v.uuid) { Data($0) }
            return builder.object(["NSUUID", "NSObject"], ["NS.uuidbytes": .data(bytes)])
        case .url(let v):
            return builder.object(
                ["NSURL", "NSObject"], ["NS.base": .uid(0), "NS.relative": builder.string(v)])
        case .other(let className): return builder.object([className, "NSObject"], [:])
        }
    }

    /// The model cache's bytes: the archive, as a binary property list, raw-deflated.
    package static func modelCache(_ model: CoreDataModel) -> Data {
        TestDeflate.deflate(PropertyListWriter.encode(archive(model)))
    }
}
