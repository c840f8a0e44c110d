import DeckCoreData
import DeckCoreDataTestSupport
import DeckSQLite
import DeckSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

extension CoreDataFixtures {
    /// Skips a suite, saying why, when the folder is absent.
    static var required: ConditionTrait { .enabled(if: directory != nil, Comment(rawValue: absent)) }
}

/// The SHA-256 of every file in `directory`, by name.
func digests(of directory: URL) throws -> [String: String] {
    var result: [String: String] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
        result[name] =
            SHA256Hasher.hash(try Data(contentsOf: directory.appendingPathComponent(name))).hexDigest
    }
    return result
}

@Suite("Real Core Data stores", .timed, CoreDataFixtures.required)
struct RealCoreDataStoreTests {
    @Test func migrationV1() throws {
        let store = try CoreDataStore.open(at: CoreDataFixtures.store("migration-v1"))
        defer { store.close() }
        #expect(
            store.entities == [
                CoreDataStoreEntity(number: 1, name: "Post", parentNumber: 0, maximumPrimaryKey: 10)
            ])
        #expect(store.metadata.version == 1)
        #expect(store.metadata.uuid == "31029939-92C0-48F2-988A-A93D5B7CFFDB")
        #expect(store.metadata.storeType == "SQLite")
        #expect(store.metadata.frameworkVersion == 866)
        #expect(store.metadata.modelVersionIdentifiers == [""])
        #expect(store.metadata.versionHashes.keys.sorted() == ["Post"])
        #expect(store.metadata.versionHashes["Post"]?.count == 32)
        let model = try #require(store.model)
        #expect(model.versionIdentifiers == [""])
        let post = try #require(model.entity(named: "Post"))
        #expect(model.entities.count == 1)
        #expect(post.className == "Post")
        #expect(post.parentName == nil && !post.isAbstract)
        #expect(post.renamingIdentifier == "Post")
        #expect(
            post.attributes.map { "\($0.name):\($0.type):\($0.isOptional):\($0.renamingIdentifier ?? "-")" }
                == [
                    "color:string:true:color", "content:string:true:content", "date:date:true:date",
                    "postID:string:true:postID",
                ])
        #expect(post.attribute(named: "date")?.valueClassName == "NSDate")
        #expect(post.relationships.isEmpty && post.uniquenessConstraints.isEmpty && post.indexes.isEmpty)
    }

    @Test func migrationV2RenamesColorToHexColor() throws {
        let store = try CoreDataStore.open(at: CoreDataFixtures.store("migration-v2"))
        defer { store.close() }
        let post = try #require(store.model?.entity(named: "Post"))
        #expect(post.attributes.map(\.name) == ["content", "date", "hexColor", "postID"])
        #expect(post.attribute(named: "hexColor")?.renamingIdentifier == "color")
        #expect(post.attribute(named: "hexColor")?.type == .string)
        #expect(store.entities.map(\.name) == ["Post"])
    }

    @Test func migrationV3RelationshipPair() throws {
        let store = try CoreDataStore.open(at: CoreDataFixtures.store("migration-v3"))
        defer { store.close() }
        #expect(
            store.entities == [
                CoreDataStoreEntity(number: 1, name: "Post", parentNumber: 0, maximumPrimaryKey: 12),
                CoreDataStoreEntity(number: 2, name: "Section", parentNumber: 0, maximumPrimaryKey: 14),
            ])
        #expect(store.entity(named: "Section")?.number == 2)
        #expect(store.metadata.versionHashes.keys.sorted() == ["Post", "Section"])
        let model = try #require(store.model)
        #expect(model.entities.map(\.name) == ["Post", "Section"])
        let post = try #require(model.entity(named: "Post"))
        let section = try #require(model.entity(named: "Section"))
        #expect(post.attributes.map(\.name) == ["date", "hexColor", "postID"])
        #expect(
            section.attributes.map { "\($0.name):\($0.type)" } == [
                "body:string", "index:integer16", "title:string",
            ])
        #expect(section.attribute(named: "index")?.defaultValue == .integer(0))
        #expect(section.attribute(named: "index")?.valueClassName == "NSNumber")
        #expect(
            post.relationships == [
                CoreDataRelationship(
                    name: "sections", destinationEntityName: "Section", inverseName: "post", minCount: 0,
                    maxCount: 0,
                    deleteRule: .cascade, isOptional: false, renamingIdentifier: "sections")
            ])
        #expect(
            section.relationships == [
                CoreDataRelationship(
                    name: "post", destinationEntityName: "Post", inverseName: "sections", minCount: 0,
                    maxCount: 1,
                    deleteRule: .nullify, isOptional: true, renamingIdentifier: "post")
            ])
        #expect(post.relationship(named: "sections")?.isToMany == true)
        #expect(section.relationship(named: "post")?.isToMany == false)
    }

    @Test(arguments: [
        ("rename-v1.0.0", "v1_0_0_name", "v1_0_0_name"), ("rename-v1.1.0", "v1_1_0_name", "v1_0_0_name"),
        ("rename-v1.1.2", "v1_1_2_name", "v1_1_0_name"), ("rename-v1.2.0", "v1_2_0_name", "v1_1_2_name"),
        ("rename-v2.0.0", "v2_0_0_name", "v1_2_0_name"),
    ])
    func renameChain(folder: String, attribute: String, renamedFrom: String) throws {
        let store = try CoreDataStore.open(at: CoreDataFixtures.store(folder))
        defer { store.close() }
        #expect(
            store.entities == [
                CoreDataStoreEntity(number: 1, name: "BasicEntity", parentNumber: 0, maximumPrimaryKey: 1)
            ])
        #expect(store.metadata.frameworkVersion == 1048)
        let entity = try #require(store.model?.entity(named: "BasicEntity"))
        #expect(entity.renamingIdentifier == "BasicEntity")
        #expect(
            entity.attributes == [
                CoreDataAttribute(
                    name: attribute, type: .string, renamingIdentifier: renamedFrom,
                    valueClassName: "NSString")
            ])
    }

    @Test func renameChainVersionHashesAllDiffer() throws {
        var hashes: Set<Data> = []
        for version in ["v1.0.0", "v1.1.0", "v1.1.2", "v1.2.0", "v2.0.0"] {
            let store = try CoreDataStore.open(at: CoreDataFixtures.store("rename-" + version))
            hashes.insert(try #require(store.metadata.versionHashes["BasicEntity"]))
            store.close()
        }
        #expect(hashes.count == 5)
    }

    @Test func theFixturesAreNeitherOpenedNorChanged() throws {
        for folder in ["migration-v1", "migration-v3", "rename-v2.0.0"] {
            let url = try CoreDataFixtures.store(folder)
            let before = try digests(of: url.deletingLastPathComponent())
            let store = try CoreDataStore.open(at: url)
            #expect(store.model != nil)
            #expect(FileManager.default.fileExists(atPath: store.copyDirectory.path))
            store.close()
            #expect(!FileManager.default.fileExists(atPath: store.copyDirectory.path))
            #expect(try digests(of: url.deletingLastPathComponent()) == before)
        }
    }
}

@Suite("Core Data stores", .timed)
struct CoreDataStoreTests {
    @Test func aStoreWhoseDataIsOnlyInTheWAL() throws {
        let directory = try ScratchDirectory()
        let path = directory.appending("Notes.sqlite").path
        let writer = try SyntheticStore.write(
            at: path, entities: SyntheticStore.entities,
            metadata: SyntheticStore.metadata(hashes: ["Note": Data(count: 32)]),
            modelCache: ModelArchiveWriter.modelCache(ModelCacheTests.richModel))
        defer { writer.close() }
        #expect(try directory.names() == ["Notes.sqlite", "Notes.sqlite-shm", "Notes.sqlite-wal"])
        let before = try digests(of: directory.url)
        // The main file alone has none of it.
        let mainOnly = try ScratchDirectory()
        try FileManager.default.copyItem(atPath: path, toPath: mainOnly.appending("Notes.sqlite").path)
        expectCoreDataError(.notACoreDataStore) {
            try CoreDataStore.open(at: mainOnly.appending("Notes.sqlite"))
        }

        let store = try CoreDataStore.open(at: directory.appending("Notes.sqlite"))
        #expect(store.entities == SyntheticStore.entities)
        #expect(store.entity(number: 3)?.name == "Note")
        #expect(store.entities.filter(\.isPersistentHistory).map(\.name) == ["ACHANGE"])
        #expect(store.metadata.uuid == "A5C7E1B0-0000-4000-8000-000000000001")
        #expect(store.metadata.versionHashes == ["Note": Data(count: 32)])
        #expect(store.model == ModelCacheTests.richModel)
        store.close()
        #expect(try digests(of: directory.url) == before)
    }

    @Test func aStoreWithoutAModelCacheOpensWithoutAModel() throws {
        let directory = try ScratchDirectory()
        let path = directory.appending("Old.sqlite").path
        let writer = try SyntheticStore.write(
            at: path, entities: Array(SyntheticStore.entities.prefix(2)),
            metadata: SyntheticStore.metadata(hashes: [:]),
            modelCache: nil)
        writer.close()
        let store = try CoreDataStore.open(at: URL(fileURLWithPath: path))
        #expect(store.model == nil)
        #expect(store.entities.map(\.name) == ["Folder", "Item"])
        #expect(store.metadata.storeType == "SQLite")
    }

    @Test func filesThatAreNotCoreDataStores() throws {
        let directory = try ScratchDirectory()
        let text = directory.appending("notes.txt")
        try Data("these are not the droids\n".utf8 + Data(count: 200)).write(to: text)
        let error = expectCoreDataError(.notACoreDataStore) { try CoreDataStore.open(at: text) }
        #expect(error?.message.contains("not a SQLite database") == true)
        let empty = directory.appending("empty.sqlite")
        try Data().write(to: empty)
        expectCoreDataError(.notACoreDataStore) { try CoreDataStore.open(at: empty) }
        let plain = directory.appending("plain.sqlite")
        let database = try Database(path: plain.path, mode: .create)
        try database.execute("CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER)")
        database.close()
        let missingTable = expectCoreDataError(.notACoreDataStore) { try CoreDataStore.open(at: plain) }
        #expect(missingTable?.message.contains("Z_METADATA") == true)
        expectCoreDataError(.unreadableStore) {
            try CoreDataStore.open(at: directory.appending("missing.sqlite"))
        }
    }

    @Test func badBookkeepingTables() throws {
        let directory = try ScratchDirectory()
        let badPlist = directory.appending("a.sqlite").path
        try SyntheticStore.write(at: badPlist, entities: [], metadata: Data("<plist/>".utf8), modelCache: nil)
            .close()
        let plistError = expectCoreDataError(.badMagic) {
            try CoreDataStore.open(at: URL(fileURLWithPath: badPlist))
        }
        #expect(plistError?.message.contains("Z_METADATA") == true)

        let bomb = directory.appending("b.sqlite").path
        try SyntheticStore.write(
            at: bomb, entities: [], metadata: SyntheticStore.metadata(hashes: [:]),
            modelCache: TestDeflate.deflate(Data(count: 8 << 20))
        ).close()
        let limits = CoreDataStore.Limits(maximumModelCacheSize: 1 << 20, propertyList: .standard)
        let bombError = expectCoreDataError(.tooLarge) {
            try CoreDataStore.open(at: URL(fileURLWithPath: bomb), limits: limits)
        }
        #expect(bombError?.message.contains("Z_MODELCACHE") == true)

        let orphan = directory.appending("c.sqlite").path
        try SyntheticStore.write(
            at: orphan,
            entities: [CoreDataStoreEntity(number: 2, name: "Child", parentNumber: 7, maximumPrimaryKey: 0)],
            metadata: SyntheticStore.metadata(hashes: [:]), modelCache: nil
        ).close()
        expectCoreDataError(.badStoreTable) { try CoreDataStore.open(at: URL(fileURLWithPath: orphan)) }
    }
}
