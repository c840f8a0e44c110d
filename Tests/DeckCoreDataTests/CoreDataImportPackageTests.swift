import DeckCoreData
import DeckCoreDataTestSupport
import DeckSQLite
import DeckStore
import DeckSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// `CoreDataImport.importStore`: a store in, a verified package out, or an error and nothing.
@Suite("Core Data import into a package", .timed)
struct CoreDataImportPackageTests {
    /// The store's files (with its WAL and external data) by name, hashed.
    static func hashes(_ directory: ScratchDirectory) throws -> [String: String] {
        var result: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(atPath: directory.path)
        while let name = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let url = directory.appending(name)
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                result[name] = SHA256Hasher.hash(try Data(contentsOf: url)).hexDigest
            }
        }
        return result
    }

    /// What is in `directory` besides the store's own files: a package, or staging left over.
    /// Imports `directory`'s Notes.sqlite (``ImportStore``) as Notes.deck beside it.
    @discardableResult
    static func importNotes(_ directory: ScratchDirectory) throws -> CoreDataImport.Report {
        try CoreDataImport.importStore(
            at: directory.appending("Notes.sqlite"), to: directory.appending("Notes.deck"))
    }

    static func leftovers(_ directory: ScratchDirectory) throws -> [String] {
        try directory.names().filter { !$0.hasPrefix("Notes.sqlite") && $0 != ".Notes_SUPPORT" }
    }

    @Test func theRichStoreBecomesAVerifiedPackageWithEveryValueAndLink() throws {
        let directory = try ScratchDirectory()
        // One external file over Deck's threshold (a blob file), one under it (kept inline).
        let large = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let writer = try ImportStore.write(in: directory) { database in
            try large.write(to: directory.appending(".Notes_SUPPORT/_EXTERNAL_DATA/LARGE"))
            try database.run(
                "UPDATE ZITEM SET ZATTACHMENT = ? WHERE Z_PK = 1", [.blob(ImportStore.external("LARGE"))])
        }
        defer { writer.close() }
        let before = try Self.hashes(directory)
        #expect(before.keys.contains("Notes.sqlite-wal"))
        let destination = directory.appending("Notes.deck")

        let report = try CoreDataImport.importStore(
            at: directory.appending("Notes.sqlite"), to: destination,
            options: CoreDataImport.Options(contentType: "org.example.notes"))

        #expect(try Self.hashes(directory).filter { !$0.key.hasPrefix("Notes.deck") } == before)
        #expect(report.schema == ImportStore.expectedSchema)
        #expect(
            report.entities.map { "\($0.name):\($0.rows)" } == [
                "Folder:2", "Item:0", "Note:2", "Photo:1", "Tag:2",
            ])
        #expect(report.rows == 7)
        // Folder.owner, Note.folder twice, three Note.tags pairs.
        #expect(report.links == 6)
        #expect(report.blobs == 1)
        #expect(report.blobBytes == Int64(large.count))
        #expect(report.notes.contains { $0.description.hasPrefix("ACHANGE: SwiftData's persistent history") })
        // Two properties named ratio in the Item hierarchy: which column each reads is said.
        #expect(
            report.notes.contains {
                $0.description.contains("read from the columns ZRATIO, ZRATIO1 in that order")
            },
            "\(report.notes)")
        #expect(try Self.leftovers(directory) == ["Notes.deck"])

        let verification = try PackageVerifier.verify(at: destination)
        #expect(verification.findings.isEmpty, "\(verification.findings)")
        let store = try PackageStore.open(at: destination, mode: .readOnly)
        defer { try? store.close() }
        #expect(store.manifest.contentType == "org.example.notes")
        let plan = try CoreDataStore.open(at: directory.appending("Notes.sqlite")).importPlan()
        #expect(store.documentID != nil && store.documentID == plan.documentID)
        try store.read { reader in
            let first = try #require(try reader.record("Note", id: 1))
            #expect(first["title"] == .string("First"))
            #expect(first["count64"] == .integer(.max))
            #expect(first["done"] == .bool(true))
            #expect(first["amount"] == .decimal(Decimal(string: "12.5")!))
            #expect(first["identifier"] == .uuid(ImportStore.identifier))
            #expect(first["created"] == .date(Timestamp(timeIntervalSinceReferenceDate: 700_000_000.5)))
            #expect(try reader.data(of: try #require(first["attachment"])) == large)
            #expect(first["folderOrder"] == .integer(2048))
            #expect(
                first.globalID
                    == CoreDataImportPlan.globalID(
                        storeUUID: "A5C7E1B0-0000-4000-8000-000000000001", root: "Item", primaryKey: 1))
            let second = try #require(try reader.record("Note", id: 2))
            #expect(second["attachment"] == .data(ImportStore.externalBytes))
            #expect(second["title"] == .null)
            #expect(try reader.record("Photo", id: 3)?["ratio"] == .double(2))
            #expect(try reader.related("Note", id: 1, "folder") == [1])
            #expect(try reader.related("Folder", id: 1, "notes").sorted() == [1, 2])
            #expect(try reader.related("Folder", id: 1, "owner") == [2])
            #expect(try reader.related("Note", id: 1, "tags").sorted() == [1, 2])
            #expect(try reader.related("Tag", id: 1, "notes").sorted() == [1, 2])
            #expect(try reader.count(RecordQuery("Item")) == 3)
        }
    }

    @Test func keysAreNeverGivenOutAgainAfterTheStoresHighWaterMark() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory) { database in
            try database.run("UPDATE Z_PRIMARYKEY SET Z_MAX = 40 WHERE Z_NAME = 'Item'")
        }
        defer { writer.close() }
        let destination = directory.appending("Notes.deck")
        _ = try CoreDataImport.importStore(at: directory.appending("Notes.sqlite"), to: destination)
        let store = try PackageStore.open(at: destination)
        defer { try? store.close() }
        let (id, _) = try store.write {
            try $0.insert("Photo", ["created": .date(Timestamp(timeIntervalSince1970: 0))])
        }
        #expect(id == 41)
    }

    @Test func importingOneStoreTwiceGivesCopiesOfOneDocument() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        var documents: [UUID?] = []
        var ids: [[UUID?]] = []
        for name in ["A.deck", "B.deck"] {
            _ = try CoreDataImport.importStore(
                at: directory.appending("Notes.sqlite"), to: directory.appending(name))
            let store = try PackageStore.open(at: directory.appending(name), mode: .readOnly)
            documents.append(store.documentID)
            ids.append(try store.read { try $0.fetch(RecordQuery("Item")).map(\.globalID) })
            try store.close()
        }
        #expect(documents[0] != nil && documents[0] == documents[1])
        #expect(ids[0].count == 3 && ids[0] == ids[1])
    }

    @Test func anExistingDestinationIsRefusedAndUntouched() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        let destination = directory.appending("Notes.deck")
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false)
        try Data("mine".utf8).write(to: destination.appendingPathComponent("keep.txt"))
        let error = #expect(throws: DeckError.self) {
            try CoreDataImport.importStore(at: directory.appending("Notes.sqlite"), to: destination)
        }
        guard case .alreadyExists(let path) = error else {
            Issue.record("expected alreadyExists, got \(String(describing: error))")
            return
        }
        #expect(path == destination.path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: destination.path) == ["keep.txt"])
        #expect(try Self.leftovers(directory) == ["Notes.deck"])
    }

    /// Each bad store: a `corrupt` error naming the store and saying what, and nothing left.
    @Test(arguments: [
        ("unknown entity number", "Z_ENT 9"),
        ("missing external file", "7A1C0F4E-2B3D-4E5F-8A9B-0C1D2E3F4A5B"),
        ("bad external byte", "the byte 0x07"),
        ("text where a key goes", "Z_PK"),
        ("an external file named '.'", "is not a plain file name"),
    ])
    func aBadStoreIsRefusedNamingItAndLeavesNothing(kind: String, mentions: String) throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory) { database in
            switch kind {
            case "unknown entity number": try database.run("UPDATE ZITEM SET Z_ENT = 9 WHERE Z_PK = 3")
            case "bad external byte":
                try database.run("UPDATE ZITEM SET ZATTACHMENT = X'0709' WHERE Z_PK = 2")
            case "text where a key goes": try database.run("UPDATE ZFOLDER SET ZOWNER = 'two' WHERE Z_PK = 1")
            case "an external file named '.'":
                try database.run("UPDATE ZITEM SET ZATTACHMENT = X'022E00' WHERE Z_PK = 2")
            default: break
            }
        }
        defer { writer.close() }
        if kind == "missing external file" {
            try FileManager.default.removeItem(
                at: directory.appending(".Notes_SUPPORT/_EXTERNAL_DATA/" + ImportStore.externalName))
        }
        let source = directory.appending("Notes.sqlite")
        let error = #expect(throws: DeckError.self) {
            try CoreDataImport.importStore(at: source, to: directory.appending("Notes.deck"))
        }
        guard case .invalidSource(let path, let reason) = error else {
            Issue.record("expected an invalidSource error, got \(String(describing: error))")
            return
        }
        #expect(path == source.path)
        #expect(reason.contains(mentions), "\(reason)")
        #expect(try Self.leftovers(directory) == [])
    }

    /// A to-one key that names no row (Core Data keeps no foreign key to stop one): the load
    /// fails when it checks the links it took with the rows, naming the record and the key, and
    /// leaves nothing.
    @Test func aToOneKeyThatNamesNoRowIsRefusedAndLeavesNothing() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory) { database in
            try database.run("UPDATE ZITEM SET ZFOLDER = 77 WHERE Z_PK = 2")
        }
        defer { writer.close() }
        let before = try Self.hashes(directory)
        let error = #expect(throws: DeckError.self) {
            try Self.importNotes(directory)
        }
        guard case .invalidSource(let path, let reason) = error else {
            Issue.record("expected an invalidSource error, got \(String(describing: error))")
            return
        }
        #expect(path == directory.appending("Notes.sqlite").path)
        #expect(
            reason.contains(".folder: the record with key 2 links to Folder key 77, which does not exist"),
            "\(reason)")
        #expect(try Self.leftovers(directory) == [])
        #expect(try Self.hashes(directory) == before)
    }

    /// A hot rollback journal beside the store (a transaction cut short) is refused: only rolling
    /// it back, which changes the store, gives what SQLite would read. A journal that is not hot
    /// (empty, or with its header zeroed) is ignored.
    @Test func aHotRollbackJournalIsRefusedAndAColdOneIgnored() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        let journal = directory.appending("Notes.sqlite-journal")
        try (Data([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]) + Data(count: 504)).write(to: journal)
        let before = try Self.hashes(directory)
        let error = #expect(throws: DeckError.self) {
            try Self.importNotes(directory)
        }
        guard case .invalidSource(_, let reason) = error else {
            Issue.record("expected invalidSource, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("hot rollback journal"), "\(reason)")
        #expect(try Self.hashes(directory) == before)
        #expect(try Self.leftovers(directory) == [])
        for cold in [Data(), Data(count: 512)] {
            try cold.write(to: journal)
            _ = try Self.importNotes(directory)
            try FileManager.default.removeItem(at: directory.appending("Notes.deck"))
        }
    }

    /// A destination named like one of the store's own files, or inside its external data
    /// folder, is refused before anything is written.
    @Test(arguments: [
        "Notes.sqlite-wal", "Notes.sqlite-shm", "Notes.sqlite-journal", ".Notes_SUPPORT/x.deck",
    ])
    func aDestinationAmongTheStoresFilesIsRefused(name: String) throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        let before = try Self.hashes(directory)
        let names = try directory.names()
        let error = #expect(throws: DeckError.self) {
            try CoreDataImport.importStore(
                at: directory.appending("Notes.sqlite"), to: directory.appending(name))
        }
        guard case .invalidSource(_, let reason) = error else {
            Issue.record("expected invalidSource, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("one of the store's own files"), "\(reason)")
        #expect(try Self.hashes(directory) == before)
        #expect(try directory.names() == names)
    }

    /// A store path that is a directory, and a log that is a symbolic link, are refused clearly.
    @Test func aDirectoryStoreAndALinkedLogAreRefused() throws {
        let directory = try ScratchDirectory()
        let folder = directory.appending("Folder.sqlite")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let error = #expect(throws: DeckError.self) {
            try CoreDataImport.importStore(at: folder, to: directory.appending("F.deck"))
        }
        guard case .invalidSource(_, let reason) = error else {
            Issue.record("expected invalidSource, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("is a directory, not a store file"), "\(reason)")

        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        _ = try writer.scalar("PRAGMA wal_checkpoint(TRUNCATE)")
        let log = directory.appending("Notes.sqlite-wal")
        try? FileManager.default.removeItem(at: log)
        try FileManager.default.createSymbolicLink(
            atPath: log.path, withDestinationPath: directory.appending("elsewhere").path)
        let linked = #expect(throws: DeckError.self) {
            try Self.importNotes(directory)
        }
        guard case .invalidSource(_, let message) = linked else {
            Issue.record("expected invalidSource, got \(String(describing: linked))")
            return
        }
        #expect(message.contains("is a symbolic link"), "\(message)")
        #expect(try Self.leftovers(directory).filter { $0 != "Folder.sqlite" && $0 != "elsewhere" } == [])
    }

    /// A store, or its log, that this user may not read is a permission error naming it.
    @Test(.enabled(if: geteuid() != 0, "root bypasses file permissions"))
    func anUnreadableStoreOrLogIsAPermissionError() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        for name in ["Notes.sqlite", "Notes.sqlite-wal"] {
            let path = directory.appending(name).path
            try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: path)
            defer { try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path) }
            let error = #expect(throws: DeckError.self) {
                try Self.importNotes(directory)
            }
            guard case .permissionDenied(path, "read") = error else {
                Issue.record("expected permissionDenied(\(path)), got \(String(describing: error))")
                return
            }
            #expect(try Self.leftovers(directory) == [])
        }
    }

    /// Text that is not UTF-8 (SQLite keeps what it is given; a truncated emoji is the classic
    /// case) is imported with U+FFFD for each bad sequence, and bytes after an external file
    /// name's NUL are ignored: neither silently, the report notes each with the first row.
    @Test func textThatIsNotUTF8AndBytesAfterAFileNameAreNoted() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory) { database in
            try database.run("UPDATE ZITEM SET ZTITLE = CAST(X'4869F09F98' AS TEXT) WHERE Z_PK = 1")
            try database.run("UPDATE ZITEM SET ZTITLE = CAST(X'4869FF21' AS TEXT) WHERE Z_PK = 3")
            try database.run(
                "UPDATE ZITEM SET ZATTACHMENT = ? WHERE Z_PK = 2",
                [.blob(Data([2]) + Data(ImportStore.externalName.utf8) + Data([0, 0xAB, 0xCD]))])
        }
        defer { writer.close() }
        let report = try Self.importNotes(directory)
        let notes = report.notes.map(\.description)
        #expect(
            notes.contains {
                $0.hasPrefix("Note.title: 1 value not valid UTF-8 (the first in the row Z_PK 1)")
            }, "\(notes)")
        #expect(
            notes.contains {
                $0.hasPrefix("Photo.title: 1 value not valid UTF-8 (the first in the row Z_PK 3)")
            }, "\(notes)")
        #expect(
            notes.contains {
                $0.hasPrefix("Note.attachment: 1 value with bytes after the external file name's NUL")
            },
            "\(notes)")
        let store = try PackageStore.open(at: directory.appending("Notes.deck"), mode: .readOnly)
        defer { try? store.close() }
        let titles = try store.read {
            try $0.fetch(RecordQuery("Item")).compactMap { $0["title"]?.description }
        }
        #expect(titles.filter { $0.contains("Hi\u{FFFD}") }.count == 2, "\(titles)")
        #expect(try PackageVerifier.verify(at: directory.appending("Notes.deck")).findings.isEmpty)
    }

    /// SwiftData lists its history as the entities CHANGE, TRANSACTION and TRANSACTIONSTRING, kept
    /// in the tables ACHANGE, ATRANSACTION and ATRANSACTIONSTRING: one note for each, not two.
    @Test func swiftDataHistoryIsNotedOnce() throws {
        let directory = try ScratchDirectory()
        let entities = ImportStore.entities.map { entity in
            var entity = entity
            if entity.name == "ACHANGE" { entity.name = "CHANGE" }
            return entity
        }
        try ImportStore.write(in: directory, entities: entities).close()
        let report = try Self.importNotes(directory)
        let history = report.notes.map(\.description).filter { $0.contains("persistent history") }
        #expect(
            history == ["CHANGE: SwiftData's persistent history (entity number 16001) is not imported"],
            "\(history)")
    }

    /// A pair a join table lists twice (Core Data's have a primary key; a hand-made store may
    /// not) is one link: counted once, and noted.
    @Test func aPairListedTwiceIsOneLinkAndNoted() throws {
        let directory = try ScratchDirectory()
        try ImportStore.write(in: directory) { database in
            try database.execute(
                """
                DROP TABLE Z_3TAGS;
                CREATE TABLE Z_3TAGS ( Z_3NOTES INTEGER, Z_5TAGS INTEGER, Z_FOK_3NOTES INTEGER );
                INSERT INTO Z_3TAGS VALUES (2, 1, 1024), (1, 1, 2048), (1, 2, 1024), (1, 2, 1024);
                """)
        }.close()
        let report = try Self.importNotes(directory)
        #expect(report.links == 6)
        let notes = report.notes.map(\.description)
        #expect(
            notes.contains {
                $0.hasSuffix(": 1 pair is listed more than once in the store; each is one link")
            }, "\(notes)")
    }

    /// Core Data adds digits to a join table's column name to tell clashing names apart (a
    /// public Shortcuts store has `Z_4SHORTCUTS(Z_4PARENTS1, Z_7SHORTCUTS, Z_FOK_7SHORTCUTS)`):
    /// the column is still found, and the links are the same.
    @Test func aJoinTableColumnWithAClashDigitIsFound() throws {
        let directory = try ScratchDirectory()
        try ImportStore.write(in: directory) { database in
            try database.execute(
                """
                ALTER TABLE Z_3TAGS RENAME COLUMN Z_3NOTES TO Z_3NOTES1;
                ALTER TABLE Z_3TAGS RENAME COLUMN Z_FOK_3NOTES TO Z_FOK_3NOTES1;
                """)
        }.close()
        let report = try Self.importNotes(directory)
        #expect(report.links == 6)
        #expect(try PackageVerifier.verify(at: directory.appending("Notes.deck")).findings.isEmpty)
    }

    /// Without a model cache, an entity whose name Deck must change (listed twice here) is
    /// noted with its new name, as with one.
    @Test func aRenamedEntityOfAStoreWithoutAModelIsNoted() throws {
        let directory = try ScratchDirectory()
        let database = try SyntheticStore.write(
            at: directory.appending("S.sqlite").path,
            entities: [
                CoreDataStoreEntity(number: 1, name: "Dog", parentNumber: 0, maximumPrimaryKey: 0),
                CoreDataStoreEntity(number: 2, name: "Dog", parentNumber: 0, maximumPrimaryKey: 0),
            ], metadata: SyntheticStore.metadata(hashes: [:]), modelCache: nil)
        try database.execute(
            "CREATE TABLE ZDOG ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR )")
        database.close()
        let report = try CoreDataImport.importStore(
            at: directory.appending("S.sqlite"), to: directory.appending("S.deck"))
        let renamed = report.notes.map(\.description).filter {
            $0.contains("in Deck (spec 5.7's naming rules)")
        }
        #expect(renamed.count == 1 && renamed[0].hasPrefix("Dog: named '"), "\(report.notes)")
    }

    /// An ordered many-to-many keeps its order in a generated json attribute of record ids (see
    /// ImportStore: Tag.notes); a join table without a position column keeps none, and says so.
    @Test func anOrderedManyToManyKeepsItsOrderWhenTheStoreHasOne() throws {
        for hasPositions in [true, false] {
            let directory = try ScratchDirectory()
            try ImportStore.write(in: directory) { database in
                guard !hasPositions else { return }
                try database.execute("ALTER TABLE Z_3TAGS DROP COLUMN Z_FOK_3NOTES")
            }.close()
            let report = try Self.importNotes(directory)
            let notes = report.notes.map(\.description).filter {
                $0.hasPrefix("Tag.notes: ordered many-to-many")
            }
            let store = try PackageStore.open(at: directory.appending("Notes.deck"), mode: .readOnly)
            defer { try? store.close() }
            let tags = try store.read { try $0.fetch(RecordQuery("Tag")) }
            if hasPositions {
                #expect(
                    notes.count == 1 && notes[0].contains("generated json attribute Tag.notesOrder"),
                    "\(notes)")
                #expect(tags.map { $0["notesOrder"] } == [.json("[2,1]"), .json("[1]")])
            } else {
                #expect(notes.count == 1 && notes[0].contains("the order is not kept"), "\(notes)")
                #expect(
                    !store.schema.entities.contains { $0.attributes.contains { $0.name == "notesOrder" } })
            }
            #expect(try PackageVerifier.verify(at: directory.appending("Notes.deck")).findings.isEmpty)
        }
    }

    /// A destination under a file (not a folder) says so, not "no such file".
    @Test func aDestinationUnderAFileSaysItIsNotAFolder() throws {
        let directory = try ScratchDirectory()
        try ImportStore.write(in: directory).close()
        let file = directory.appending("f")
        try Data("x".utf8).write(to: file)
        let error = #expect(throws: DeckError.self) {
            try CoreDataImport.importStore(
                at: directory.appending("Notes.sqlite"), to: file.appendingPathComponent("Notes.deck"))
        }
        guard case .io(file.path, "create Notes.deck in it", ENOTDIR) = error else {
            Issue.record("expected io(ENOTDIR), got \(String(describing: error))")
            return
        }
    }

    /// A `Z_PRIMARYKEY` no schema can follow (too many entities, a cycle of parents, a parent it
    /// does not list, a chain deeper than a schema's inheritance) is refused before any work that
    /// grows faster than the table: at once even for a hostile chain of a thousand levels.
    @Test func anEntityTreeNoSchemaCanFollowIsRefusedAtOnce() throws {
        func chain(_ count: Int) -> [CoreDataStoreEntity] {
            (1...count).map {
                CoreDataStoreEntity(
                    number: Int64($0), name: "E\($0)", parentNumber: Int64($0 - 1), maximumPrimaryKey: 0)
            }
        }
        let cycle = [
            CoreDataStoreEntity(number: 1, name: "A", parentNumber: 2, maximumPrimaryKey: 0),
            CoreDataStoreEntity(number: 2, name: "B", parentNumber: 1, maximumPrimaryKey: 0),
        ]
        let orphan = [CoreDataStoreEntity(number: 1, name: "A", parentNumber: 7, maximumPrimaryKey: 0)]
        let flat = (1...1_001).map {
            CoreDataStoreEntity(number: Int64($0), name: "E\($0)", parentNumber: 0, maximumPrimaryKey: 0)
        }
        for (entities, mentions) in [
            (chain(1_000), "is 101 levels deep"), (cycle, "form a cycle"),
            (orphan, "the parent 7, which it does not list"),
            (flat, "lists 1001 entities; a schema has at most 1000"),
        ] {
            let directory = try ScratchDirectory()
            try SyntheticStore.write(
                at: directory.appending("S.sqlite").path, entities: entities,
                metadata: SyntheticStore.metadata(hashes: [:]), modelCache: nil
            ).close()
            let error = #expect(throws: DeckError.self) {
                try CoreDataImport.importStore(
                    at: directory.appending("S.sqlite"), to: directory.appending("S.deck"))
            }
            guard case .invalidSource(_, let reason) = error else {
                Issue.record("expected invalidSource, got \(String(describing: error))")
                continue
            }
            #expect(reason.contains(mentions), "\(reason)")
        }
    }

    /// Two values of a unique attribute that differ only in bytes that are not UTF-8 read the
    /// same: the refusal says why.
    @Test func aUniqueCollisionMadeByUTF8RepairSaysSo() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory) { database in
            try database.run("UPDATE ZITEM SET ZTITLE = CAST(X'41FF' AS TEXT) WHERE Z_PK = 1")
            try database.run("UPDATE ZITEM SET ZTITLE = CAST(X'41FE' AS TEXT) WHERE Z_PK = 3")
        }
        defer { writer.close() }
        let error = #expect(throws: DeckError.self) {
            try Self.importNotes(directory)
        }
        guard case .invalidSource(_, let reason) = error else {
            Issue.record("expected invalidSource, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("same value") && reason.contains("not valid UTF-8"), "\(reason)")
        #expect(try Self.leftovers(directory) == [])
    }

    /// An external data folder this user may not enter is a permission error naming it, not
    /// "missing" files.
    @Test(.enabled(if: geteuid() != 0, "root bypasses file permissions"))
    func anExternalDataFolderThatCannotBeEnteredIsAPermissionError() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        let support = directory.appending(".Notes_SUPPORT").path
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: support)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: support) }
        let error = #expect(throws: DeckError.self) {
            try Self.importNotes(directory)
        }
        guard case .permissionDenied(support, _) = error else {
            Issue.record("expected permissionDenied(\(support)), got \(String(describing: error))")
            return
        }
    }

    /// An external data file this user may not read is a permission error naming the file and
    /// the row that refers to it.
    @Test(.enabled(if: geteuid() != 0, "root bypasses file permissions"))
    func anUnreadableExternalFileNamesTheRow() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        let file = directory.appending(".Notes_SUPPORT/_EXTERNAL_DATA/" + ImportStore.externalName).path
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: file)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file) }
        let error = #expect(throws: DeckError.self) {
            try Self.importNotes(directory)
        }
        guard case .permissionDenied(let path, let operation) = error else {
            Issue.record("expected permissionDenied, got \(String(describing: error))")
            return
        }
        #expect(path == file)
        #expect(
            operation.contains("Note Z_PK 2, attachment,") && operation.contains("Notes.sqlite"),
            "\(operation)")
        #expect(try Self.leftovers(directory) == [])
    }

    /// A destination in a folder this user may not write in is a permission error naming the
    /// folder, not the staging name the build would have made there.
    @Test(.enabled(if: geteuid() != 0, "root bypasses file permissions"))
    func aDestinationInAReadOnlyFolderNamesTheFolder() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        let folder = directory.appending("out")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        defer {
            try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        }
        let error = #expect(throws: DeckError.self) {
            try CoreDataImport.importStore(
                at: directory.appending("Notes.sqlite"), to: folder.appendingPathComponent("Notes.deck"))
        }
        guard case .permissionDenied(let path, let operation) = error else {
            Issue.record("expected permissionDenied, got \(String(describing: error))")
            return
        }
        #expect(path == folder.path && operation == "create Notes.deck in it", "\(path) \(operation)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [])
    }

    @Test func filesThatAreNotCoreDataStoresAreRefused() throws {
        let directory = try ScratchDirectory()
        let text = directory.appending("notes.txt")
        try Data("not a database".utf8).write(to: text)
        let empty = directory.appending("empty.sqlite")
        try Data().write(to: empty)
        let emptyError = #expect(throws: DeckError.self) {
            try CoreDataImport.importStore(at: empty, to: directory.appending("Out.deck"))
        }
        guard case .invalidSource(empty.path, let reason) = emptyError else {
            Issue.record("expected invalidSource, got \(String(describing: emptyError))")
            return
        }
        #expect(reason == "an empty file, not a Core Data store", "\(reason)")
        let sqlite = directory.appending("plain.sqlite")
        let database = try Database(path: sqlite.path, mode: .create)
        try database.execute("CREATE TABLE t (x)")
        database.close()
        for source in [text, sqlite] {
            #expect {
                try CoreDataImport.importStore(at: source, to: directory.appending("Out.deck"))
            } throws: { error in
                guard case .invalidSource(let path, _) = error as? DeckError else { return false }
                return path == source.path
            }
        }
        let missing = #expect(throws: DeckError.self) {
            try CoreDataImport.importStore(
                at: directory.appending("absent.sqlite"), to: directory.appending("Out.deck"))
        }
        guard case .notFound(let path) = missing else {
            Issue.record("expected notFound, got \(String(describing: missing))")
            return
        }
        #expect(path == directory.appending("absent.sqlite").path)
        #expect(try directory.names().sorted() == ["empty.sqlite", "notes.txt", "plain.sqlite"])
    }

    @Test func aTruncatedStoreIsRefused() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        try writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        writer.close()
        let store = directory.appending("Notes.sqlite")
        let bytes = try Data(contentsOf: store)
        let cut = directory.appending("Cut.sqlite")
        try bytes.prefix(bytes.count / 2).write(to: cut)
        #expect(throws: DeckError.self) {
            try CoreDataImport.importStore(at: cut, to: directory.appending("Cut.deck"))
        }
        #expect(!FileManager.default.fileExists(atPath: directory.appending("Cut.deck").path))
    }

    @Test func aWALFromAnotherStoreIsRefused() throws {
        // Store A: its rows in the main file, a later change in its log.
        let a = try ScratchDirectory()
        let writerA = try ImportStore.write(in: a)
        defer { writerA.close() }
        _ = try writerA.scalar("PRAGMA wal_checkpoint(TRUNCATE)")
        try writerA.run("INSERT INTO ZTAG VALUES (3, 5, 1)")
        // Store B: another store (another Z_UUID), everything in its log.
        let b = try ScratchDirectory()
        let writerB = try ImportStore.write(in: b) { database in
            try database.run("UPDATE Z_METADATA SET Z_UUID = 'B0000000-0000-4000-8000-00000000000B'")
        }
        defer { writerB.close() }
        // A's store with B's log beside it.
        let c = try ScratchDirectory()
        try FileManager.default.copyItem(at: a.appending("Notes.sqlite"), to: c.appending("Notes.sqlite"))
        for suffix in ["-wal", "-shm"] {
            try FileManager.default.copyItem(
                at: b.appending("Notes.sqlite" + suffix), to: c.appending("Notes.sqlite" + suffix))
        }
        let source = c.appending("Notes.sqlite")
        let error = #expect(throws: DeckError.self) {
            try CoreDataImport.importStore(at: source, to: c.appending("Notes.deck"))
        }
        guard case .invalidSource(let path, let reason) = error else {
            Issue.record("expected invalidSource, got \(String(describing: error))")
            return
        }
        #expect(path == source.path)
        #expect(reason.contains("-wal belongs to another store"), "\(reason)")
        #expect(reason.contains("B0000000-0000-4000-8000-00000000000B"), "\(reason)")
        #expect(try c.names().sorted() == ["Notes.sqlite", "Notes.sqlite-shm", "Notes.sqlite-wal"])

        // A's own log is A's: the store imports, with the change only the log holds.
        let report = try CoreDataImport.importStore(
            at: a.appending("Notes.sqlite"), to: a.appending("A.deck"))
        #expect(report.entities.first { $0.name == "Tag" }?.rows == 3)
    }

    @Test func aStoreThatFailsSQLitesIntegrityCheckIsRefused() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        _ = try writer.scalar("PRAGMA wal_checkpoint(TRUNCATE)")
        let pages = try #require(try writer.scalar("PRAGMA page_count")?.int64)
        let pageSize = try #require(try writer.scalar("PRAGMA page_size")?.int64)
        let root = try #require(
            try writer.scalar("SELECT rootpage FROM sqlite_schema WHERE name = 'ZITEM'")?.int64)
        writer.close()
        #expect(root > 1 && root <= pages)
        // Scramble the cell pointers of ZITEM's root page (past its 8-byte header): the file still
        // opens, the bookkeeping tables still read, the table's b-tree is broken.
        let store = directory.appending("Notes.sqlite")
        var bytes = try Data(contentsOf: store)
        let start = Int((root - 1) * pageSize) + 8
        for offset in start..<(start + 8) { bytes[offset] = 0xFF }
        try bytes.write(to: store)
        let error = #expect(throws: DeckError.self) {
            try CoreDataImport.importStore(at: store, to: directory.appending("Notes.deck"))
        }
        guard case .invalidSource(_, let reason) = error else {
            Issue.record("expected invalidSource, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("damaged"), "\(reason)")
        #expect(!FileManager.default.fileExists(atPath: directory.appending("Notes.deck").path))
    }

    @Test func thePrivateCopyIsOnlyTheUsersAndAStaleOneIsSweptAway() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        // What a killed import leaves: a copy nobody holds a lock on.
        let stale = FileManager.default.temporaryDirectory.appendingPathComponent(
            "deck-coredata-0123456789abcdef")
        try FileManager.default.createDirectory(at: stale, withIntermediateDirectories: true)
        try Data("a copy of someone's store".utf8).write(to: stale.appendingPathComponent("Notes.sqlite"))

        let store = try CoreDataStore.open(at: directory.appending("Notes.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: stale.path))
        let attributes = try FileManager.default.attributesOfItem(atPath: store.copyDirectory.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        #expect(store.copyDirectory.lastPathComponent.hasPrefix("deck-coredata-"))
        store.close()
        #expect(!FileManager.default.fileExists(atPath: store.copyDirectory.path))
    }

    @Test func anAppsSchemaIsCheckedAndUsed() throws {
        let directory = try ScratchDirectory()
        let writer = try ImportStore.write(in: directory)
        defer { writer.close() }
        let source = directory.appending("Notes.sqlite")
        var schema = ImportStore.expectedSchema
        schema.version = "7.0.0"
        _ = try CoreDataImport.importStore(
            at: source, to: directory.appending("App.deck"), options: CoreDataImport.Options(schema: schema))
        let store = try PackageStore.open(at: directory.appending("App.deck"), mode: .readOnly)
        #expect(store.schema.version == "7.0.0")
        try store.close()

        var other = ImportStore.expectedSchema
        other.entities[2].attributes[0].type = .double
        other.entities[4].relationships[0].deleteRule = .cascade
        let error = #expect(throws: DeckError.self) {
            try CoreDataImport.importStore(
                at: source, to: directory.appending("Other.deck"),
                options: CoreDataImport.Options(schema: other))
        }
        guard case .schemaMismatch(let path, let differences) = error else {
            Issue.record("expected schemaMismatch, got \(String(describing: error))")
            return
        }
        #expect(path == source.path)
        #expect(
            differences == [
                "Note.amount: decimal in the Core Data store, double in the models",
                "Tag.notes: delete rule nullify in the Core Data store, cascade in the models",
            ])
        #expect(!FileManager.default.fileExists(atPath: directory.appending("Other.deck").path))
    }
}

/// The real stores, imported whole.
@Suite("Core Data import of the real stores into packages", .timed, CoreDataFixtures.required)
struct RealCoreDataPackageTests {
    @Test(arguments: [
        "migration-v1", "migration-v2", "migration-v3", "rename-v1.0.0", "rename-v1.1.0", "rename-v1.1.2",
        "rename-v1.2.0", "rename-v2.0.0",
    ])
    func everyRowOfTheRealStoreArrives(folder: String) throws {
        let source = try CoreDataFixtures.store(folder)
        let before = SHA256Hasher.hash(try Data(contentsOf: source)).hexDigest
        let directory = try ScratchDirectory()
        let destination = directory.appending("Imported.deck")
        let report = try CoreDataImport.importStore(at: source, to: destination)
        #expect(SHA256Hasher.hash(try Data(contentsOf: source)).hexDigest == before)
        #expect(try PackageVerifier.verify(at: destination).findings.isEmpty)

        // Count the source's rows per entity with SQLite, from a copy.
        let copy = directory.appending("copy.sqlite")
        try FileManager.default.copyItem(at: source, to: copy)
        let database = try Database(path: copy.path, mode: .readOnly)
        defer { database.close() }
        let store = try PackageStore.open(at: destination, mode: .readOnly)
        defer { try? store.close() }
        #expect(report.rows > 0)
        for entity in report.entities {
            let table = "Z" + entity.coreDataName.uppercased()
            let number = try #require(
                try database.scalar(
                    "SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = ?", [.text(entity.coreDataName)]))
            let expected = try database.scalar(
                "SELECT count(*) FROM \"\(table)\" WHERE Z_ENT = ?", [number])
            #expect(SQLValue.integer(Int64(entity.rows)) == expected, "\(folder) \(entity.name)")
            let records = try store.read { try $0.fetch(RecordQuery(entity.name)) }
            #expect(records.filter { $0.entity == entity.name }.count == entity.rows)
        }
    }
}
