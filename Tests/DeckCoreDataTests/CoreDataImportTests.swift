import DeckCoreData
import DeckCoreDataTestSupport
import DeckSQLite
import DeckStore
import DeckSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// A synthetic store in Core Data's layout for the import tests: ``ModelCacheTests/richModel``
/// with a `Photo` sibling of `Note` (so `ratio` clashes and becomes `ZRATIO1`) and `Tag.notes`
/// ordered (so the join table has a `Z_FOK_` column), its tables as Core Data creates them, and
/// rows of every kind, written in WAL mode by a connection left open: the data lives only in
/// the `-wal` file.
enum ImportStore {
    static let model: CoreDataModel = {
        var model = ModelCacheTests.richModel
        model.entities.append(
            CoreDataEntity(
                name: "Photo", parentName: "Item",
                attributes: [CoreDataAttribute(name: "ratio", type: .double)]))
        if let tag = model.entities.firstIndex(where: { $0.name == "Tag" }) {
            model.entities[tag].relationships[0].isOrdered = true
        }
        return model
    }()

    /// Core Data numbers entities in the order of their names.
    static let entities = [
        CoreDataStoreEntity(number: 1, name: "Folder", parentNumber: 0, maximumPrimaryKey: 2),
        CoreDataStoreEntity(number: 2, name: "Item", parentNumber: 0, maximumPrimaryKey: 3),
        CoreDataStoreEntity(number: 3, name: "Note", parentNumber: 2, maximumPrimaryKey: 0),
        CoreDataStoreEntity(number: 4, name: "Photo", parentNumber: 2, maximumPrimaryKey: 0),
        CoreDataStoreEntity(number: 5, name: "Tag", parentNumber: 0, maximumPrimaryKey: 2),
        CoreDataStoreEntity(number: 16001, name: "ACHANGE", parentNumber: 0, maximumPrimaryKey: 4),
    ]

    static let tables = [
        "CREATE TABLE ZFOLDER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZOWNER INTEGER, ZNAME VARCHAR )",
        "CREATE INDEX ZFOLDER_ZOWNER_INDEX ON ZFOLDER (ZOWNER)",
        """
        CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCOUNT16 INTEGER,
        ZCOUNT32 INTEGER, ZCOUNT64 INTEGER, ZDONE INTEGER, ZFOLDER INTEGER, Z_FOK_FOLDER INTEGER,
        ZCREATED TIMESTAMP, ZRATIO FLOAT, ZSCORE FLOAT, ZRATIO1 FLOAT, ZAMOUNT DECIMAL, ZTITLE VARCHAR,
        ZLINK VARCHAR, ZATTACHMENT BLOB, ZBLOB BLOB, ZIDENTIFIER BLOB, ZSTYLE BLOB )
        """,
        "CREATE INDEX ZITEM_ZFOLDER_INDEX ON ZITEM (ZFOLDER)",
        "CREATE TABLE ZTAG ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER )",
        "CREATE TABLE Z_3TAGS ( Z_3NOTES INTEGER, Z_5TAGS INTEGER, Z_FOK_3NOTES INTEGER, PRIMARY KEY (Z_3NOTES, Z_5TAGS) )",
        "CREATE INDEX Z_3TAGS_Z_5TAGS_INDEX ON Z_3TAGS (Z_5TAGS, Z_3NOTES)",
        "CREATE TABLE ACHANGE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGETYPE INTEGER )",
    ]

    static let identifier = UUID(uuidString: "0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9")!
    static let externalName = "7A1C0F4E-2B3D-4E5F-8A9B-0C1D2E3F4A5B"
    static let externalBytes = Data("bytes kept beside the store".utf8)

    static var uuidBlob: Data { withUnsafeBytes(of: identifier.uuid) { Data($0) } }

    static func external(_ name: String) -> Data { Data([0x02]) + Data(name.utf8) + Data([0]) }

    /// Writes the store at `directory/Notes.sqlite` (with its external data file) and returns the
    /// writing connection, still open; `tweak` runs last, on that connection.
    static func write(
        in directory: ScratchDirectory, entities: [CoreDataStoreEntity] = entities,
        model: CoreDataModel? = model,
        tweak: (Database) throws -> Void = { _ in }
    ) throws -> Database {
        let database = try SyntheticStore.write(
            at: directory.appending("Notes.sqlite").path, entities: entities,
            metadata: SyntheticStore.metadata(hashes: [:]),
            modelCache: model.map(ModelArchiveWriter.modelCache))
        for sql in tables { try database.execute(sql) }
        try database.run(
            "INSERT INTO ZFOLDER VALUES (1, 1, 1, 2, 'Inbox'), (2, 1, 1, NULL, 'Archive')")
        try database.run(
            """
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZCOUNT16, ZCOUNT32, ZCOUNT64, ZDONE, ZFOLDER, Z_FOK_FOLDER,
                ZCREATED, ZRATIO, ZSCORE, ZAMOUNT, ZTITLE, ZLINK, ZATTACHMENT, ZBLOB, ZIDENTIFIER, ZSTYLE)
            VALUES (1, 3, 1, 5, -7, 9223372036854775807, 1, 1, 2048, 700000000.5, 0.25, 1.5, 12.5, 'First',
                'https://example.com/a', X'01090807', X'0102', ?, X'62706C697374')
            """, [.blob(uuidBlob)])
        try database.run(
            """
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZCOUNT16, ZDONE, ZFOLDER, Z_FOK_FOLDER, ZCREATED, ZATTACHMENT)
            VALUES (2, 3, 1, 0, 0, 1, 1024, 1, ?)
            """, [.blob(external(externalName))])
        try database.run(
            "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZCREATED, ZTITLE, ZRATIO1) VALUES (3, 4, 1, 0, 'Pic', 2)")
        try database.run("INSERT INTO ZTAG VALUES (1, 5, 1), (2, 5, 1)")
        try database.run("INSERT INTO Z_3TAGS VALUES (2, 1, 1024), (1, 1, 2048), (1, 2, 1024)")
        try database.run("INSERT INTO ACHANGE VALUES (1, 16001, 1, 0)")
        let external = directory.appending(".Notes_SUPPORT/_EXTERNAL_DATA")
        try FileManager.default.createDirectory(at: external, withIntermediateDirectories: true)
        try externalBytes.write(to: external.appendingPathComponent(externalName))
        try tweak(database)
        return database
    }

    /// The Deck schema a reader of the spec expects for ``model``.
    static let expectedSchema = StoreSchema(
        version: "2",
        entities: [
            StoreSchema.Entity(
                "Folder", attributes: [StoreSchema.Attribute("name", .string)],
                relationships: [
                    StoreSchema.Relationship(
                        "notes", to: "Note", toMany: true, inverse: "folder", deleteRule: .cascade),
                    StoreSchema.Relationship("owner", to: "Tag", deleteRule: .deny),
                ]),
            StoreSchema.Entity(
                "Item",
                attributes: [
                    StoreSchema.Attribute(
                        "created", .date, defaultValue: .date(Date(timeIntervalSinceReferenceDate: 86_400))),
                    StoreSchema.Attribute(
                        "title", .string, isOptional: true, defaultValue: .string("Untitled")),
                ],
                uniqueConstraints: [["title"], ["created", "title"]],
                indexes: [["created"], ["title", "created"]],
                originalName: "Thing"),
            StoreSchema.Entity(
                "Note", superentity: "Item",
                attributes: [
                    StoreSchema.Attribute("amount", .decimal, isOptional: true),
                    StoreSchema.Attribute("attachment", .data, isOptional: true, options: [.externalStorage]),
                    StoreSchema.Attribute(
                        "blob", .data, isOptional: true, defaultValue: .data(Data([1, 2]))),
                    StoreSchema.Attribute("count16", .integer, defaultValue: .integer(0)),
                    StoreSchema.Attribute("count32", .integer, isOptional: true, defaultValue: .integer(-7)),
                    StoreSchema.Attribute(
                        "count64", .integer, isOptional: true, defaultValue: .integer(.max)),
                    StoreSchema.Attribute("done", .bool, isOptional: true, defaultValue: .bool(true)),
                    StoreSchema.Attribute(
                        "identifier", .uuid, isOptional: true,
                        defaultValue: .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)),
                    StoreSchema.Attribute(
                        "link", .url, isOptional: true,
                        defaultValue: .url(URL(string: "https://example.com/a")!)),
                    StoreSchema.Attribute("ratio", .double, isOptional: true, defaultValue: .double(0.5)),
                    StoreSchema.Attribute("score", .double, isOptional: true, originalName: "points"),
                    StoreSchema.Attribute("style", .data, isOptional: true),
                    StoreSchema.Attribute("folderOrder", .integer, isOptional: true),
                ],
                relationships: [
                    StoreSchema.Relationship("folder", to: "Folder", inverse: "notes"),
                    StoreSchema.Relationship(
                        "tags", to: "Tag", toMany: true, inverse: "notes", deleteRule: .noAction),
                ]),
            StoreSchema.Entity(
                "Photo", superentity: "Item",
                attributes: [StoreSchema.Attribute("ratio", .double, isOptional: true)]),
            // Tag.notes is ordered (a many-to-many): its order is kept in the generated notesOrder.
            StoreSchema.Entity(
                "Tag", attributes: [StoreSchema.Attribute("notesOrder", .json, isOptional: true)],
                relationships: [StoreSchema.Relationship("notes", to: "Note", toMany: true, inverse: "tags")]),
        ])
}

/// Every row a reader gives, as text, for comparing.
struct ReadRows {
    var rows: [String] = []
    var toOne: [String] = []
    var toMany: [String] = []

    init(_ store: CoreDataStore, _ plan: CoreDataImportPlan, entities: [String]) throws {
        for entity in entities {
            let names = try #require(plan.entity(named: entity)).attributes.map(\.name)
            try store.forEachRow(of: entity, attributes: names, plan: plan) { key, concrete, values in
                let text = zip(names, values).map { "\($0)=\($1.map { "\($0)" } ?? "nil")" }
                rows.append("\(concrete) #\(key) " + text.joined(separator: " "))
            }
        }
        try store.forEachToOne(plan: plan) { toOne.append("\($0) #\($1) \($2) -> #\($3)") }
        try store.forEachToMany(plan: plan) { toMany.append("\($0) #\($1) \($2) -> #\($3)") }
    }
}

@Suite("Core Data import", .timed)
struct CoreDataImportTests {
    @Test func theRichStoreImportsWholeFromItsWAL() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        #expect(try directory.names().contains("Notes.sqlite-wal"))
        let files = ["Notes.sqlite", "Notes.sqlite-wal", "Notes.sqlite-shm"]
        func hashes() throws -> [String] {
            try (files + [".Notes_SUPPORT/_EXTERNAL_DATA/" + ImportStore.externalName]).map {
                SHA256Hasher.hash(try Data(contentsOf: directory.appending($0))).hexDigest
            }
        }
        let before = try hashes()

        let store = try CoreDataStore.open(at: directory.appending("Notes.sqlite"))
        defer { store.close() }
        let plan = try store.importPlan()
        #expect(plan.schema == ImportStore.expectedSchema)
        try plan.schema.validate()
        #expect(plan.storeUUID == "A5C7E1B0-0000-4000-8000-000000000001")
        #expect(
            plan.entities.map { "\($0.name):\($0.number):\($0.numbers)" } == [
                "Folder:1:[1]", "Item:2:[2, 3, 4]", "Note:3:[3]", "Photo:4:[4]", "Tag:5:[5]",
            ])
        #expect(plan.entity(named: "Photo")?.attributes.last?.column == "ZRATIO1")
        #expect(plan.entity(named: "Note")?.attributes.first { $0.name == "ratio" }?.column == "ZRATIO")
        #expect(plan.entity(named: "Note")?.attributes.last?.column == "Z_FOK_FOLDER")
        #expect(
            plan.joinTables.map {
                "\($0.entity).\($0.relationship) \($0.table)(\($0.sourceColumn), \($0.destinationColumn)) "
                    + "\($0.orderColumn ?? "-") \($0.orderBy)"
            } == [
                #"Note.tags Z_3TAGS(Z_3NOTES, Z_5TAGS) Z_FOK_3NOTES ["Z_5TAGS", "Z_FOK_3NOTES", "Z_3NOTES"]"#
            ])
        #expect(
            plan.hierarchies.map { "\($0.root):\($0.table):\($0.maximumPrimaryKey)" } == [
                "Folder:ZFOLDER:2", "Item:ZITEM:3", "Tag:ZTAG:2",
            ])
        let notes = plan.notes.map(\.description)
        for expected in [
            "ACHANGE: SwiftData's persistent history (entity number 16001) is not imported",
            "Note.count16: a 16-bit integer, imported as a 64-bit integer: its range is not enforced",
            "Note.count32: a 32-bit integer, imported as a 64-bit integer: its range is not enforced",
            "Note.score: a 32-bit float, imported as a double (the value is unchanged)",
            "Note.scratch: transient (not stored): not imported",
        ] {
            #expect(notes.contains(expected), "\(notes)")
        }
        #expect(
            notes.contains {
                $0.hasPrefix("Note.style: transformable (value transformer NSSecureUnarchiveFromData)")
            })
        #expect(notes.contains { $0.hasPrefix("Folder.notes: ordered: ") && $0.contains("Note.folderOrder") })
        #expect(notes.contains { $0.hasPrefix("Tag.notes: ordered many-to-many") })
        #expect(notes.contains { $0.hasPrefix("Note.amount: the default value") })
        #expect(notes.contains { $0.hasPrefix("Item: abstract") })

        let read = try ReadRows(store, plan, entities: ["Folder", "Note", "Photo", "Tag"])
        let file = store.externalDataDirectory.appendingPathComponent(ImportStore.externalName)
        #expect(
            read.rows == [
                "Folder #1 name=Inbox", "Folder #2 name=Archive",
                "Note #1 created=2023-03-08T20:26:40.500Z title=First amount=12.5 attachment=<3 bytes> blob=<2 bytes> "
                    + "count16=5 count32=-7 count64=9223372036854775807 done=true "
                    + "identifier=0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9 link=https://example.com/a ratio=0.25 "
                    + "score=1.5 style=<6 bytes> folderOrder=2048",
                "Note #2 created=2001-01-01T00:00:01.000Z title=nil amount=nil attachment=<file \(file.path)> blob=nil "
                    + "count16=0 count32=nil count64=nil done=false identifier=nil link=nil ratio=nil score=nil "
                    + "style=nil folderOrder=1024",
                "Photo #3 created=2001-01-01T00:00:00.000Z title=Pic ratio=2.0",
                // Z_3TAGS: tag 1 has notes 2 (position 1024) and 1 (2048); tag 2 has note 1.
                "Tag #1 notesOrder=[2,1]", "Tag #2 notesOrder=[1]",
            ])
        #expect(read.toOne == ["Folder #1 owner -> #2", "Note #1 folder -> #1", "Note #2 folder -> #1"])
        #expect(read.toMany == ["Note #2 tags -> #1", "Note #1 tags -> #1", "Note #1 tags -> #2"])
        #expect(try Data(contentsOf: file) == ImportStore.externalBytes)

        // Exact values, not only their text.
        var first: [Value?] = []
        try store.forEachRow(
            of: "Note", attributes: ["attachment", "created", "identifier", "amount"], plan: plan
        ) {
            if $0 == 1 { first = $2 }
        }
        #expect(
            first == [
                .data(Data([9, 8, 7])), .date(Timestamp(timeIntervalSinceReferenceDate: 700_000_000.5)),
                .uuid(ImportStore.identifier), .decimal(Decimal(string: "12.5")!),
            ])
        // The root's reader gives every row of the hierarchy with its own entity.
        var items: [String] = []
        try store.forEachRow(of: "Item", attributes: ["title"], plan: plan) { key, entity, _ in
            items.append("\(entity) #\(key)")
        }
        #expect(items == ["Note #1", "Note #2", "Photo #3"])
        store.close()
        #expect(try hashes() == before)
    }

    @Test func globalIDsAreNameBasedAndStable() throws {
        let a = CoreDataImportPlan.globalID(storeUUID: "S", root: "Item", primaryKey: 1)
        #expect(a == CoreDataImportPlan.globalID(storeUUID: "S", root: "Item", primaryKey: 1))
        #expect(a != CoreDataImportPlan.globalID(storeUUID: "S", root: "Item", primaryKey: 2))
        #expect(a != CoreDataImportPlan.globalID(storeUUID: "S", root: "Folder", primaryKey: 1))
        #expect(a != CoreDataImportPlan.globalID(storeUUID: "T", root: "Item", primaryKey: 1))
        // "S" + "Item" + "1" must not read as "SI" + "tem" + "1".
        #expect(a != CoreDataImportPlan.globalID(storeUUID: "SI", root: "tem", primaryKey: 1))
        // Spec 6.10's bytes, worked out apart (Python's hashlib).
        #expect(a.uuidString == "4F82080B-C5F2-81D6-9C40-2CD8A8B11E41")
        #expect(
            CoreDataImportPlan.globalID(storeUUID: "S", root: "Item", primaryKey: .min).uuidString
                == "350A7B2B-CC87-8A4C-9731-340361FBC217")
        let text = a.uuidString
        #expect(Array(text)[14] == "8")
        #expect("89AB".contains(Array(text)[19]))

        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        var ids: [UUID] = []
        for _ in 0..<2 {
            let store = try CoreDataStore.open(at: directory.appending("Notes.sqlite"))
            let plan = try store.importPlan()
            ids.append(plan.globalID(root: "Item", primaryKey: 3))
            // One maker for many rows gives each the id it would get alone.
            let maker = plan.globalIDs(root: "Item")
            #expect(maker.id(12_345_678_901) == plan.globalID(root: "Item", primaryKey: 12_345_678_901))
            #expect(maker.id(3) == ids.last)
            #expect(
                plan.globalID(root: "Item", primaryKey: 3)
                    == CoreDataImportPlan.globalID(
                        storeUUID: "A5C7E1B0-0000-4000-8000-000000000001", root: "Item", primaryKey: 3))
            store.close()
        }
        #expect(ids[0] == ids[1])
    }

    /// Opens the store `ImportStore` writes with `tweak`, and makes its plan.
    func open(
        _ directory: ScratchDirectory, entities: [CoreDataStoreEntity] = ImportStore.entities,
        model: CoreDataModel? = ImportStore.model, tweak: (Database) throws -> Void = { _ in }
    ) throws -> CoreDataStore {
        let writer = try ImportStore.write(in: directory, entities: entities, model: model, tweak: tweak)
        defer { writer.close() }
        return try CoreDataStore.open(at: directory.appending("Notes.sqlite"))
    }

    func readAll(_ store: CoreDataStore) throws {
        let plan = try store.importPlan()
        _ = try ReadRows(store, plan, entities: ["Item", "Note", "Photo", "Folder", "Tag"])
    }

    @Test func aRowWhoseEntityNumberIsNotOfItsTableIsRefused() throws {
        for number in ["5", "NULL", "9"] {
            // The store's external data is read in place: its folder must outlive the reading.
            let directory = try ScratchDirectory()
            let store = try open(directory) {
                try $0.run("UPDATE ZITEM SET Z_ENT = \(number) WHERE Z_PK = 2")
            }
            let error = expectCoreDataError(.badRow) { try store.importPlan() }
            #expect(
                error?.message.contains("1 row(s) of ZITEM (the first Z_PK 2) have Z_ENT") == true,
                "\(String(describing: error))")
        }
        // The reader checks too, for a plan made before the row changed.
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        let store = try CoreDataStore.open(at: directory.appending("Notes.sqlite"))
        let plan = try store.importPlan()
        try store.database.run("UPDATE ZITEM SET Z_ENT = 5 WHERE Z_PK = 2")
        let error = expectCoreDataError(.badRow) {
            try store.forEachRow(of: "Item", attributes: [], plan: plan) { _, _, _ in }
        }
        #expect(error?.message.contains("the row Z_PK 2 of ZITEM has Z_ENT 5") == true)
    }

    @Test(arguments: [
        ("../escape", "'/' or '..'"), ("a/b", "'/' or '..'"), ("..", "'/' or '..'"), ("", "empty"),
    ])
    func externalFileNamesThatCouldLeaveTheFolderAreRefused(name: String, reason: String) throws {
        // The store's external data is read in place: its folder must outlive the reading.
        let directory = try ScratchDirectory()
        let store = try open(directory) {
            try $0.run("UPDATE ZITEM SET ZATTACHMENT = ? WHERE Z_PK = 2", [.blob(ImportStore.external(name))])
        }
        let error = expectCoreDataError(.badExternalData) { try readAll(store) }
        #expect(error?.message.contains("Note #2, attachment") == true)
        #expect(error?.message.contains(reason) == true, "\(String(describing: error))")
    }

    @Test func aMissingExternalFileIsNamed() throws {
        // The store's external data is read in place: its folder must outlive the reading.
        let directory = try ScratchDirectory()
        let store = try open(directory) {
            try $0.run(
                "UPDATE ZITEM SET ZATTACHMENT = ? WHERE Z_PK = 2", [.blob(ImportStore.external("GONE"))])
        }
        let error = expectCoreDataError(.badExternalData) { try readAll(store) }
        #expect(error?.message.contains("the external data file GONE is missing") == true)
    }

    @Test func anExternalFileThatIsNotARegularFileIsRefused() throws {
        let directory = try ScratchDirectory()
        let store = try open(directory) { _ in
            let folder = directory.appending(".Notes_SUPPORT/_EXTERNAL_DATA")
            let target = folder.appendingPathComponent(ImportStore.externalName)
            try FileManager.default.moveItem(at: target, to: directory.appending("elsewhere"))
            try FileManager.default.createSymbolicLink(
                at: target, withDestinationURL: directory.appending("elsewhere"))
        }
        #expect(store.refusedExternalFiles.keys.sorted() == [ImportStore.externalName])
        let error = expectCoreDataError(.badExternalData) { try readAll(store) }
        #expect(error?.message.contains("is not a regular file") == true)
    }

    @Test(arguments: [Data(), Data([0x00, 1]), Data([0x03, 1]), Data([0x02]) + Data("NONUL".utf8)])
    func externalValuesWithAnUnknownFirstByteAreRefused(value: Data) throws {
        // The store's external data is read in place: its folder must outlive the reading.
        let directory = try ScratchDirectory()
        let store = try open(directory) {
            try $0.run("UPDATE ZITEM SET ZATTACHMENT = ? WHERE Z_PK = 1", [.blob(value)])
        }
        expectCoreDataError(.badExternalData) { try readAll(store) }
    }

    @Test(arguments: [
        "UPDATE ZITEM SET ZCOUNT64 = 'many' WHERE Z_PK = 1", "UPDATE ZITEM SET ZDONE = 2 WHERE Z_PK = 1",
        "UPDATE ZITEM SET ZIDENTIFIER = X'0102' WHERE Z_PK = 1",
        "UPDATE ZITEM SET ZCREATED = X'00' WHERE Z_PK = 1",
        "UPDATE ZITEM SET ZTITLE = X'00' WHERE Z_PK = 1", "UPDATE ZFOLDER SET ZOWNER = 'x' WHERE Z_PK = 1",
        "UPDATE Z_3TAGS SET Z_5TAGS = 1.5 WHERE Z_3NOTES = 2",
    ])
    func valuesOfTheWrongStorageClassAreRefused(sql: String) throws {
        // The store's external data is read in place: its folder must outlive the reading.
        let directory = try ScratchDirectory()
        let store = try open(directory) { try $0.run(sql) }
        expectCoreDataError(.badRow) { try readAll(store) }
    }

    @Test(arguments: ["DROP TABLE ZTAG", "DROP TABLE Z_3TAGS", "ALTER TABLE ZITEM DROP COLUMN ZRATIO1"])
    func aTableOrColumnTheModelImpliesMustExist(sql: String) throws {
        // The store's external data is read in place: its folder must outlive the reading.
        let directory = try ScratchDirectory()
        let store = try open(directory) { try $0.execute(sql) }
        expectCoreDataError(.badStoreTable) { try store.importPlan() }
    }

    @Test func aModelNamingEntitiesTheTablesLackIsRefused() throws {
        // The store's external data is read in place: its folder must outlive the reading.
        let directory = try ScratchDirectory()
        let store = try open(directory, entities: ImportStore.entities.filter { $0.name != "Tag" })
        let error = expectCoreDataError(.badModel) { try store.importPlan() }
        #expect(error?.message.contains("'Tag', which Z_PRIMARYKEY does not list") == true)
        let other = try open(
            ScratchDirectory(),
            entities: ImportStore.entities + [
                CoreDataStoreEntity(number: 6, name: "Ghost", parentNumber: 0, maximumPrimaryKey: 0)
            ])
        expectCoreDataError(.badModel) { try other.importPlan() }
    }

    @Test func modelsThatDoNotHangTogetherAreRefused() throws {
        var orphan = ImportStore.model
        orphan.entities[orphan.entities.firstIndex { $0.name == "Photo" }!].parentName = "Picture"
        let error = expectCoreDataError(.badModel) {
            try open(ScratchDirectory(), model: orphan).importPlan()
        }
        // An archive cannot name a parent it lacks, so the parent reads as none: Z_PRIMARYKEY disagrees.
        #expect(
            error?.message.contains(
                "gives 'Photo' the parent 'none', but Z_PRIMARYKEY gives it the parent number 2")
                == true, "\(String(describing: error))")
        var twice = ImportStore.model
        twice.entities.append(CoreDataEntity(name: "Tag"))
        let second = expectCoreDataError(.badModel) {
            try open(ScratchDirectory(), model: twice).importPlan()
        }
        #expect(
            second?.message.contains("lists the entity 'Tag' twice") == true, "\(String(describing: second))")
        var cycle = ImportStore.model
        cycle.entities[cycle.entities.firstIndex { $0.name == "Item" }!].parentName = "Note"
        expectCoreDataError(.badModel) { try open(ScratchDirectory(), model: cycle).importPlan() }
    }

    @Test func aStoreWithoutAUUIDSaysItsGlobalIDsAreNotUnique() throws {
        // The store's external data is read in place: its folder must outlive the reading.
        let directory = try ScratchDirectory()
        let store = try open(directory) { try $0.run("UPDATE Z_METADATA SET Z_UUID = NULL") }
        let plan = try store.importPlan()
        #expect(plan.storeUUID == "")
        #expect(plan.notes.contains { $0.reason.hasPrefix("the store has no Z_UUID") })
        #expect(
            try open(ScratchDirectory()).importPlan().notes.contains { $0.reason.contains("Z_UUID") } == false
        )
    }

    @Test func withoutAModelCacheTheSchemaComesFromTheTables() throws {
        // The store's external data is read in place: its folder must outlive the reading.
        let directory = try ScratchDirectory()
        let store = try open(directory, model: nil)
        let plan = try store.importPlan()
        #expect(plan.notes.contains { $0.reason.hasPrefix("the store has no model cache") })
        #expect(plan.schema.entities.map(\.name) == ["Folder", "Item", "Tag", "Note", "Photo"])
        let item = try #require(plan.schema.entity(named: "Item"))
        #expect(item.attributes.first { $0.name == "created" }?.type == .date)
        #expect(item.attributes.first { $0.name == "amount" }?.type == .decimal)
        #expect(item.attributes.first { $0.name == "ratio1" }?.type == .double)
        #expect(item.attributes.first { $0.name == "folder" }?.type == .integer)
        let allOptional = item.attributes.allSatisfy { $0.isOptional }
        #expect(allOptional)
        var count = 0
        try store.forEachRow(of: "Item", attributes: ["title"], plan: plan) { _, _, _ in count += 1 }
        #expect(count == 3)
    }

    @Test func namesDeckCannotTakeAreChangedAndNoted() throws {
        #expect(CoreDataImportPlan.deckName("déjà vu") == "d_j__vu")
        #expect(CoreDataImportPlan.deckName("_private") == "x_private")
        #expect(CoreDataImportPlan.deckName("deck_x") == "cd_deck_x")
        #expect(CoreDataImportPlan.deckName(String(repeating: "a", count: 70)).count == 64)
        let model = CoreDataModel(entities: [
            CoreDataEntity(
                name: "Thing",
                attributes: [
                    CoreDataAttribute(name: "Name", type: .string),
                    CoreDataAttribute(name: "name", type: .string),
                ])
        ])
        let directory = try ScratchDirectory()
        let writer = try SyntheticStore.write(
            at: directory.appending("S.sqlite").path,
            entities: [CoreDataStoreEntity(number: 1, name: "Thing", parentNumber: 0, maximumPrimaryKey: 1)],
            metadata: SyntheticStore.metadata(hashes: [:]), modelCache: ModelArchiveWriter.modelCache(model))
        try writer.execute(
            "CREATE TABLE ZTHING ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR, ZNAME1 VARCHAR )"
        )
        try writer.run("INSERT INTO ZTHING VALUES (1, 1, 1, 'upper', 'lower')")
        defer { writer.close() }
        let store = try CoreDataStore.open(at: directory.appending("S.sqlite"))
        let plan = try store.importPlan()
        #expect(plan.schema.entities[0].attributes.map(\.name) == ["Name", "name_2"])
        #expect(
            plan.notes.map(\.description).contains(
                "Thing.name: named 'name_2' in Deck (spec 5.7's naming rules)"))
        var values: [Value?] = []
        try store.forEachRow(of: "Thing", attributes: ["Name", "name_2"], plan: plan) { values = $2 }
        #expect(values == [.string("upper"), .string("lower")])
    }

    /// Core Data may keep a one-to-one's key in both tables; the reader gives the link once, from
    /// the side Deck stores it on (spec 6.5: `Passport.person` < `Person.passport`), or from the
    /// only side that has a column.
    @Test(arguments: [true, false])
    func aOneToOneIsReadOnce(keyOnBothSides: Bool) throws {
        let model = CoreDataModel(entities: [
            CoreDataEntity(
                name: "Passport",
                relationships: [
                    CoreDataRelationship(
                        name: "person", destinationEntityName: "Person", inverseName: "passport")
                ]),
            CoreDataEntity(
                name: "Person",
                relationships: [
                    CoreDataRelationship(
                        name: "passport", destinationEntityName: "Passport", inverseName: "person")
                ]),
        ])
        let directory = try ScratchDirectory()
        let writer = try SyntheticStore.write(
            at: directory.appending("P.sqlite").path,
            entities: [
                CoreDataStoreEntity(number: 1, name: "Passport", parentNumber: 0, maximumPrimaryKey: 1),
                CoreDataStoreEntity(number: 2, name: "Person", parentNumber: 0, maximumPrimaryKey: 1),
            ],
            metadata: SyntheticStore.metadata(hashes: [:]), modelCache: ModelArchiveWriter.modelCache(model))
        defer { writer.close() }
        let personColumn = keyOnBothSides ? ", ZPERSON INTEGER" : ""
        try writer.execute(
            "CREATE TABLE ZPASSPORT ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER\(personColumn) )"
        )
        try writer.execute(
            "CREATE TABLE ZPERSON ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZPASSPORT INTEGER )"
        )
        try writer.run(
            keyOnBothSides
                ? "INSERT INTO ZPASSPORT VALUES (1, 1, 1, 1)" : "INSERT INTO ZPASSPORT VALUES (1, 1, 1)")
        try writer.run("INSERT INTO ZPERSON VALUES (1, 2, 1, 1)")
        let store = try CoreDataStore.open(at: directory.appending("P.sqlite"))
        let plan = try store.importPlan()
        var links: [String] = []
        try store.forEachToOne(plan: plan) { links.append("\($0) #\($1) \($2) -> #\($3)") }
        #expect(links == [keyOnBothSides ? "Passport #1 person -> #1" : "Person #1 passport -> #1"])
    }

    @Test func aCoreDataErrorBecomesADeckErrorNamingTheStore() {
        let error = CoreDataError(.badRow, "it is wrong").deckError(path: "/x/Notes.sqlite")
        guard case .invalidSource(let path, let reason) = error else {
            Issue.record("expected invalidSource, got \(error)")
            return
        }
        #expect(path == "/x/Notes.sqlite" && reason == "it is wrong")
        // The store's path is not said twice.
        let named = CoreDataError(.badRow, "/x/Notes.sqlite: Note #2 is wrong")
            .deckError(path: "/x/Notes.sqlite")
        #expect(named.description == "/x/Notes.sqlite: cannot be imported: Note #2 is wrong")
    }
}

@Suite("Core Data import of the real stores", .timed, CoreDataFixtures.required)
struct RealCoreDataImportTests {
    /// Every row of `entity` read by the plan and, independently, straight from the copy.
    func expectEveryRow(_ store: CoreDataStore, _ plan: CoreDataImportPlan, _ entity: String) throws {
        let entityPlan = try #require(plan.entity(named: entity))
        let names = entityPlan.attributes.map(\.name)
        var read: [[Value?]] = []
        try store.forEachRow(of: entity, attributes: names, plan: plan) { key, concrete, values in
            #expect(concrete == entity)
            read.append([.integer(key)] + values)
        }
        let columns = entityPlan.attributes.map(\.column).joined(separator: ", ")
        let raw = try store.database.rows("SELECT Z_PK, \(columns) FROM \(entityPlan.table) ORDER BY Z_PK")
        let expected: [[Value?]] = raw.map { row in
            zip([CoreDataAttributeType.integer64] + entityPlan.attributes.map(\.coreDataType), row).map {
                type, cell in
                switch (type, cell) {
                case (_, .null): nil
                case (.date, .real(let v)): .date(Timestamp(timeIntervalSinceReferenceDate: v))
                case (_, .text(let v)): .string(v)
                case (_, .integer(let v)): .integer(v)
                default: .json("unexpected \(cell)")
                }
            }
        }
        #expect(read == expected)
        #expect(!read.isEmpty)
    }

    @Test func migrationV1() throws {
        let store = try CoreDataStore.open(at: CoreDataFixtures.store("migration-v1"))
        defer { store.close() }
        let plan = try store.importPlan()
        #expect(
            plan.schema
                == StoreSchema(entities: [
                    StoreSchema.Entity(
                        "Post",
                        attributes: [
                            StoreSchema.Attribute("color", .string, isOptional: true),
                            StoreSchema.Attribute("content", .string, isOptional: true),
                            StoreSchema.Attribute("date", .date, isOptional: true),
                            StoreSchema.Attribute("postID", .string, isOptional: true),
                        ])
                ]))
        #expect(plan.notes.isEmpty)
        #expect(plan.hierarchies.map(\.maximumPrimaryKey) == [10])
        try expectEveryRow(store, plan, "Post")
    }

    @Test func migrationV2CarriesTheRename() throws {
        let store = try CoreDataStore.open(at: CoreDataFixtures.store("migration-v2"))
        defer { store.close() }
        let plan = try store.importPlan()
        let post = try #require(plan.schema.entity(named: "Post"))
        #expect(
            post.attributes.map { "\($0.name)<-\($0.originalName ?? "")" } == [
                "content<-", "date<-", "hexColor<-color", "postID<-",
            ])
        try expectEveryRow(store, plan, "Post")
    }

    @Test func migrationV3RowsAndLinks() throws {
        let store = try CoreDataStore.open(at: CoreDataFixtures.store("migration-v3"))
        defer { store.close() }
        let plan = try store.importPlan()
        #expect(
            plan.schema.entities.map { entity in
                entity.name + ": "
                    + entity.relationships.map {
                        "\($0.name)->\($0.destination)\($0.isToMany ? "*" : "") inverse \($0.inverse ?? "-") \($0.deleteRule)"
                    }.joined()
            } == [
                "Post: sections->Section* inverse post cascade",
                "Section: post->Post inverse sections nullify",
            ])
        #expect(
            plan.schema.entity(named: "Section")?.attributes.map { "\($0.name):\($0.type)" } == [
                "body:string", "index:integer", "title:string",
            ])
        #expect(plan.schema.entity(named: "Section")?.attributes[1].defaultValue == .integer(0))
        #expect(
            plan.notes.map(\.description) == [
                "Section.index: a 16-bit integer, imported as a 64-bit integer: its range is not enforced"
            ])
        try expectEveryRow(store, plan, "Post")
        try expectEveryRow(store, plan, "Section")
        var links: [String] = []
        try store.forEachToOne(plan: plan) { links.append("\($0) #\($1) \($2) -> #\($3)") }
        let raw = try store.database.rows(
            "SELECT Z_PK, ZPOST FROM ZSECTION WHERE ZPOST IS NOT NULL ORDER BY Z_PK")
        #expect(links == raw.map { "Section #\($0[0]) post -> #\($0[1])" })
        #expect(links.count == 14)
        #expect(links.last == "Section #14 post -> #12")
        var none = 0
        try store.forEachToMany(plan: plan) { _, _, _, _ in none += 1 }
        #expect(none == 0)
    }

    @Test(arguments: [
        ("rename-v1.0.0", "v1_0_0_name", nil), ("rename-v1.1.0", "v1_1_0_name", "v1_0_0_name"),
        ("rename-v1.1.2", "v1_1_2_name", "v1_1_0_name"), ("rename-v1.2.0", "v1_2_0_name", "v1_1_2_name"),
        ("rename-v2.0.0", "v2_0_0_name", "v1_2_0_name"),
    ])
    func renameChain(folder: String, attribute: String, renamedFrom: String?) throws {
        let store = try CoreDataStore.open(at: CoreDataFixtures.store(folder))
        defer { store.close() }
        let plan = try store.importPlan()
        #expect(
            plan.schema.entities == [
                StoreSchema.Entity(
                    "BasicEntity",
                    attributes: [
                        StoreSchema.Attribute(attribute, .string, isOptional: true, originalName: renamedFrom)
                    ])
            ])
        var values: [Value?] = []
        try store.forEachRow(of: "BasicEntity", attributes: [attribute], plan: plan) { key, _, row in
            #expect(key == 1)
            values += row
        }
        #expect(values == [.string("A Known Value")])
    }
}
