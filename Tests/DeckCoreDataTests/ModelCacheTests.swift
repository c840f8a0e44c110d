import DeckCoreData
import DeckCoreDataTestSupport
import DeckTestTiming
import Foundation
import Testing

@Suite("Core Data model caches", .timed)
struct ModelCacheTests {
    /// A model with every attribute type, inheritance under an abstract parent, to-one, to-many,
    /// ordered and many-to-many relationships with inverses, every delete rule, defaults of
    /// every archived kind, constraints and indexes.
    static let richModel = CoreDataModel(
        entities: [
            CoreDataEntity(
                name: "Item", className: "Item", isAbstract: true, renamingIdentifier: "Thing",
                attributes: [
                    CoreDataAttribute(
                        name: "created", type: .date, isOptional: false,
                        defaultValue: .date(Date(timeIntervalSinceReferenceDate: 86_400))),
                    CoreDataAttribute(name: "title", type: .string, defaultValue: .string("Untitled")),
                ],
                uniquenessConstraints: [["title"], ["created", "title"]],
                indexes: [
                    CoreDataIndex(name: nil, propertyNames: ["created"]),
                    CoreDataIndex(name: "byTitle", propertyNames: ["title", "created"]),
                ]),
            CoreDataEntity(
                name: "Note", parentName: "Item",
                attributes: [
                    CoreDataAttribute(
                        name: "amount", type: .decimal, defaultValue: .other(className: "NSDecimalNumber")),
                    CoreDataAttribute(
                        name: "attachment", type: .binaryData, allowsExternalBinaryDataStorage: true),
                    CoreDataAttribute(name: "blob", type: .binaryData, defaultValue: .data(Data([1, 2]))),
                    CoreDataAttribute(
                        name: "count16", type: .integer16, isOptional: false, defaultValue: .integer(0)),
                    CoreDataAttribute(name: "count32", type: .integer32, defaultValue: .integer(-7)),
                    CoreDataAttribute(name: "count64", type: .integer64, defaultValue: .integer(.max)),
                    CoreDataAttribute(name: "done", type: .boolean, defaultValue: .bool(true)),
                    CoreDataAttribute(
                        name: "identifier", type: .uuid,
                        defaultValue: .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)),
                    CoreDataAttribute(name: "link", type: .uri, defaultValue: .url("https://example.com/a")),
                    CoreDataAttribute(name: "ratio", type: .double, defaultValue: .real(0.5)),
                    CoreDataAttribute(name: "score", type: .float, renamingIdentifier: "points"),
                    CoreDataAttribute(name: "scratch", type: .string, isTransient: true),
                    CoreDataAttribute(
                        name: "style", type: .transformable, valueClassName: "NSColor",
                        valueTransformerName: "NSSecureUnarchiveFromData"),
                ],
                relationships: [
                    CoreDataRelationship(
                        name: "folder", destinationEntityName: "Folder", inverseName: "notes",
                        deleteRule: .nullify),
                    CoreDataRelationship(
                        name: "tags", destinationEntityName: "Tag", inverseName: "notes", maxCount: 0,
                        deleteRule: .noAction),
                ]),
            CoreDataEntity(
                name: "Folder",
                attributes: [CoreDataAttribute(name: "name", type: .string, isOptional: false)],
                relationships: [
                    CoreDataRelationship(
                        name: "notes", destinationEntityName: "Note", inverseName: "folder", minCount: 1,
                        maxCount: 0,
                        deleteRule: .cascade, isOptional: false, isOrdered: true),
                    CoreDataRelationship(name: "owner", destinationEntityName: "Tag", deleteRule: .deny),
                ]),
            CoreDataEntity(
                name: "Tag",
                relationships: [
                    CoreDataRelationship(
                        name: "notes", destinationEntityName: "Note", inverseName: "tags", maxCount: 0)
                ]),
        ],
        versionIdentifiers: ["", "2"])

    /// Attributes and relationships come back sorted by name, so the model above lists them so.
    @Test func aWrittenModelReadsBackWhole() throws {
        let cache = ModelArchiveWriter.modelCache(Self.richModel)
        let model = try CoreDataModel(modelCache: cache)
        #expect(model.entities.map(\.name) == Self.richModel.entities.map(\.name))
        for (read, written) in zip(model.entities, Self.richModel.entities) {
            for (a, b) in zip(read.attributes, written.attributes) { #expect(a == b) }
            for (a, b) in zip(read.relationships, written.relationships) { #expect(a == b) }
            #expect(read.uniquenessConstraints == written.uniquenessConstraints)
            #expect(read.indexes == written.indexes)
        }
        #expect(model.versionIdentifiers == Self.richModel.versionIdentifiers)
        #expect(model == Self.richModel)
        #expect(model.entity(named: "Note")?.relationship(named: "tags")?.isToMany == true)
        #expect(model.entity(named: "Note")?.relationship(named: "folder")?.isToMany == false)
        #expect(CoreDataAttributeType(rawValue: 1800).description == "transformable")
        #expect(CoreDataAttributeType(rawValue: 4242).description == "unknown(4242)")
        #expect(!CoreDataAttributeType(rawValue: 4242).isKnown)
    }

    @Test func unknownPropertyClassesAreKeptByName() throws {
        var builder = KeyedArchiveBuilder()
        let root = builder.reserve()
        let entity = builder.reserve()
        let fetched = builder.object(
            ["NSFetchedPropertyDescription", "NSPropertyDescription", "NSObject"],
            ["NSPropertyName": builder.string("recent"), "NSEntity": .uid(entity)])
        let properties = builder.dictionary([("recent", fetched)])
        builder.object(
            ModelArchiveWriter.entityClass,
            ["NSEntityName": builder.string("E"), "NSProperties": properties], at: entity)
        let list = builder.array([entity])
        builder.object(
            ["NSManagedObjectModel", "NSObject"],
            ["NSEntities": .uid(builder.object(["NSKnownKeysDictionary1"], ["values": list]))], at: root)
        let model = try CoreDataModel(archive: KeyedArchive(builder.archive(root: root)))
        #expect(
            model.entities.first?.otherProperties == [
                CoreDataOtherProperty(name: "recent", className: "NSFetchedPropertyDescription")
            ])
    }

    // MARK: Hostile archives

    /// The rich model's archive with object `uid`'s `key` replaced.
    static func archive(patching: (inout [PropertyListValue]) -> Void) -> PropertyListValue {
        guard case .dictionary(var archive) = ModelArchiveWriter.archive(richModel),
            case .array(var objects) = archive["$objects"]
        else { return .null }
        patching(&objects)
        archive["$objects"] = .array(objects)
        return .dictionary(archive)
    }

    static func decode(_ archive: PropertyListValue) throws -> CoreDataModel {
        try CoreDataModel(modelCache: TestDeflate.deflate(PropertyListWriter.encode(archive)))
    }

    static func patch(
        _ objects: inout [PropertyListValue], where matches: ([String: PropertyListValue]) -> Bool,
        _ key: String, _ value: PropertyListValue
    ) {
        for (index, object) in objects.enumerated() {
            guard case .dictionary(var fields) = object, matches(fields) else { continue }
            fields[key] = value
            objects[index] = .dictionary(fields)
            return
        }
    }

    @Test func danglingUIDs() {
        let entities = Self.archive {
            Self.patch(&$0, where: { $0["NSEntities"] != nil }, "NSEntities", .uid(99_999))
        }
        expectCoreDataError(.danglingUID) { try Self.decode(entities) }
        let superentity = Self.archive {
            Self.patch(
                &$0, where: { $0["NSSuperentity"]?.uid != 0 && $0["NSEntityName"] != nil }, "NSSuperentity",
                .uid(1 << 40))
        }
        expectCoreDataError(.danglingUID) { try Self.decode(superentity) }
        // The first plain array is the first uniqueness constraint's list of names.
        let element = Self.archive {
            Self.patch(
                &$0, where: { $0["NS.objects"] != nil && $0["NS.keys"] == nil }, "NS.objects",
                .array([.uid(70_000)]))
        }
        expectCoreDataError(.danglingUID) { try Self.decode(element) }
        let top: PropertyListValue = .dictionary([
            "$archiver": .string("NSKeyedArchiver"), "$top": .dictionary(["root": .uid(3)]),
            "$objects": .array([.string("$null")]),
        ])
        expectCoreDataError(.danglingUID) { try Self.decode(top) }
    }

    @Test func classCycles() {
        // An object that is its own class; two objects that are each other's class.
        let own = Self.archive { Self.patch(&$0, where: { $0["NSEntities"] != nil }, "$class", .uid(1)) }
        expectCoreDataError(.badClass) { try Self.decode(own) }
        let mutual: PropertyListValue = .dictionary([
            "$archiver": .string("NSKeyedArchiver"), "$top": .dictionary(["root": .uid(1)]),
            "$objects": .array([
                .string("$null"), .dictionary(["$class": .uid(2)]), .dictionary(["$class": .uid(1)]),
            ]),
        ])
        expectCoreDataError(.badClass) { try Self.decode(mutual) }
    }

    @Test func collectionsThatHoldThemselvesAreRefusedNotFollowed() {
        // The entity list's array lists itself: it is not an entity, and nothing loops.
        let selfList = Self.archive { objects in
            guard let list = objects.lazy.compactMap({ $0.dictionary?["values"]?.uid }).first,
                case .dictionary(var fields) = objects[Int(list)]
            else { return }
            fields["NS.objects"] = .array([.uid(list)])
            objects[Int(list)] = .dictionary(fields)
        }
        expectCoreDataError(.badModel) { try Self.decode(selfList) }
    }

    @Test func notAKeyedArchiveOrNotAModel() {
        expectCoreDataError(.notAKeyedArchive) { try Self.decode(.array([])) }
        expectCoreDataError(.notAKeyedArchive) {
            try Self.decode(
                .dictionary([
                    "$archiver": .string("NSArchiver"), "$top": .dictionary([:]), "$objects": .array([]),
                ]))
        }
        expectCoreDataError(.notAKeyedArchive) {
            try Self.decode(
                .dictionary([
                    "$archiver": .string("NSKeyedArchiver"), "$top": .dictionary([:]),
                    "$objects": .string("x"),
                ]))
        }
        var builder = KeyedArchiveBuilder()
        let root = builder.object(["NSPersistentStore", "NSObject"], [:])
        expectCoreDataError(.badModel) { try Self.decode(builder.archive(root: root)) }
        let badRule = Self.archive {
            Self.patch(&$0, where: { $0["NSDeleteRule"] != nil }, "NSDeleteRule", .integer(9))
        }
        expectCoreDataError(.badModel) { try Self.decode(badRule) }
        let noType = Self.archive {
            Self.patch(&$0, where: { $0["NSAttributeType"] != nil }, "NSAttributeType", .string("700"))
        }
        expectCoreDataError(.badModel) { try Self.decode(noType) }
        expectCoreDataError(.badDeflateStream) {
            try CoreDataModel(modelCache: Data("bplist00 not deflated".utf8))
        }
    }

    @Test func aModelCacheBombIsRefused() {
        let bomb = TestDeflate.deflate(Data("bplist00".utf8) + Data(count: 8 << 20))
        expectCoreDataError(.tooLarge) { try CoreDataModel(modelCache: bomb, maximumInflatedSize: 1 << 20) }
    }
}
