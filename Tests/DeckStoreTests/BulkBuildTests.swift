import DeckSQLite
import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// `PackageStore.build` and its `BulkLoader` (issue 24): a whole package built under a staging
/// name, loaded with given keys and global ids, linked by key, verified and only then renamed
/// into place; and every way it fails leaving nothing behind.
///
/// The schema: `Item` (no records of its own) with leaves `Book` and `Film` in one table, between
/// them every attribute type, external data among them; `Person` owns items (one-to-many, stored
/// in `Item.owner`), has a favourite (one-to-one, stored in `Item.fan`, the other side's column)
/// and watches films (many-to-many, join table `Film.watchers`).
@Suite("Bulk build", .timed)
struct BulkBuildTests {
    typealias Entity = StoreSchema.Entity
    typealias Attribute = StoreSchema.Attribute
    typealias Relationship = StoreSchema.Relationship

    static let contentType = "org.deck.test.bulk"

    static let schema = StoreSchema(entities: [
        Entity(
            "Person", attributes: [Attribute("name", .string)],
            relationships: [
                Relationship("items", to: "Item", toMany: true, inverse: "owner"),
                Relationship("favorite", to: "Item", inverse: "fan"),
                Relationship("watched", to: "Film", toMany: true, inverse: "watchers"),
            ]),
        Entity(
            "Item",
            attributes: [
                Attribute("title", .string, options: [.unique]),
                Attribute("added", .date),
            ],
            relationships: [
                Relationship("owner", to: "Person", inverse: "items"),
                Relationship("fan", to: "Person", inverse: "favorite"),
            ]),
        Entity(
            "Book", superentity: "Item",
            attributes: [
                Attribute("pages", .integer),
                Attribute("price", .decimal, isOptional: true),
                Attribute(
                    "cover", .data, isOptional: true, options: [.externalStorage], externalThreshold: 16),
            ]),
        Entity(
            "Film", superentity: "Item",
            attributes: [
                Attribute("rating", .double),
                Attribute("color", .bool, defaultValue: .bool(true)),
                Attribute("code", .uuid, isOptional: true),
                Attribute("link", .url, isOptional: true),
                Attribute("meta", .json, isOptional: true),
                Attribute(
                    "poster", .data, isOptional: true, options: [.externalStorage], externalThreshold: 16),
                Attribute("still", .data, isOptional: true),
            ],
            relationships: [Relationship("watchers", to: "Person", toMany: true, inverse: "watched")]),
    ])

    /// Global ids that tell the rows apart: the key in the last byte, the table in the one before.
    static func gid(_ table: UInt8, _ pk: Int64) -> UUID {
        UUID(uuid: (0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, table, UInt8(pk)))
    }

    static let added = Date(timeIntervalSinceReferenceDate: 700_000_000.25)
    static let cover = testBytes(100, seed: 1)

    /// Loads two people, two books and two films (keys 1, 2, 3 and 5 of table Item) and links
    /// them; the two covers are the same bytes, once as `.data` and once as `.file`.
    static func load(_ load: BulkLoader, coverFile: URL) throws {
        #expect(try load.attributeNames(of: "Book") == ["title", "added", "pages", "price", "cover"])
        try load.insert(entity: "Person", pk: 1, globalID: gid(1, 1), values: [.string("Ann")])
        try load.insert(entity: "Person", pk: 2, globalID: gid(1, 2), values: [.string("Bob")])
        try load.insert(
            entity: "Book", pk: 1, globalID: gid(2, 1),
            values: [
                .string("Dune"), .date(added), .integer(412), .decimal(Decimal(string: "9.95") ?? 0),
                .data(cover),
            ])
        try load.insert(
            entity: "Book", pk: 2, globalID: gid(2, 2),
            values: [.string("Emma"), .date(added), .integer(300), nil, .file(coverFile)])
        try load.insert(
            entity: "Film", pk: 3, globalID: gid(2, 3),
            values: [
                .string("Alien"), .date(added), .double(8.5), .bool(false), .uuid(gid(9, 9)),
                .url(URL(string: "https://example.org/alien") ?? URL(fileURLWithPath: "/")),
                .json("{\"a\":1}"),
                .data(Data([1, 2, 3])), .data(Data([4, 5])),
            ])
        try load.insert(
            entity: "Film", pk: 5, globalID: gid(2, 5),
            values: [
                .string("Heat"), .date(added), .double(7), nil, nil, nil, nil, .data(testBytes(40, seed: 2)),
                nil,
            ])
        try load.reserveKeys(entity: "Book", through: 10)
        try load.setToOne(entity: "Book", pk: 1, relationship: "owner", target: 1)
        try load.addToMany(entity: "Person", pk: 2, relationship: "items", targets: [2, 3])
        try load.setToOne(entity: "Person", pk: 1, relationship: "favorite", target: 3)
        try load.setToOne(entity: "Item", pk: 5, relationship: "fan", target: 2)
        try load.addToMany(entity: "Person", pk: 1, relationship: "watched", targets: [3, 5])
        try load.addToMany(entity: "Film", pk: 5, relationship: "watchers", targets: [2, 1])
    }

    /// The names in `dir`, sorted.
    static func names(_ dir: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
    }

    @Test func aBuiltPackageHoldsEveryValueAndLinkAndVerifies() throws {
        try withTestDirectory { dir throws in
            let coverFile = dir.appendingPathComponent("cover.bin")
            try Self.cover.write(to: coverFile)
            let url = dir.appendingPathComponent("built.deck")
            let documentID = Self.gid(7, 7)
            let built = try PackageStore.build(
                at: url, contentType: Self.contentType, schema: Self.schema, documentID: documentID
            ) { load in
                // Nothing is at `url` while it is built; the staging directory is beside it.
                #expect(!FileManager.default.fileExists(atPath: url.path))
                #expect(try Self.names(dir).contains { $0.hasPrefix(".built.deck.creating-") })
                try Self.load(load, coverFile: coverFile)
            }
            #expect(built.path == url.path)
            #expect(try Self.names(dir) == ["built.deck", "cover.bin"])
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)

            let store = try PackageStore.open(at: url)
            #expect(store.documentID == documentID)
            try store.read { reader in
                let dune = try #require(try reader.record("Book", id: 1))
                #expect(dune.entity == "Book" && dune.globalID == Self.gid(2, 1))
                #expect(dune["title"] == .string("Dune") && dune["added"] == .date(Self.added))
                #expect(
                    dune["pages"] == .integer(412) && dune["price"] == .decimal(Decimal(string: "9.95") ?? 0))
                guard case .blob(let first)? = dune["cover"],
                    case .blob(let second)? = try reader.record("Book", id: 2)?["cover"]
                else {
                    Issue.record("the covers are not external")
                    return
                }
                #expect(first == second)
                #expect(try reader.data(for: first) == Self.cover)
                let alien = try #require(try reader.record("Film", id: 3))
                #expect(alien["rating"] == .double(8.5) && alien["color"] == .bool(false))
                #expect(alien["code"] == .uuid(Self.gid(9, 9)) && alien["meta"] == .json("{\"a\":1}"))
                #expect(
                    alien["link"]
                        == .url(URL(string: "https://example.org/alien") ?? URL(fileURLWithPath: "/")))
                #expect(alien["poster"] == .data(Data([1, 2, 3])) && alien["still"] == .data(Data([4, 5])))
                let heat = try #require(try reader.record("Film", id: 5))
                #expect(heat["color"] == .bool(true) && heat["code"] == .null)
                guard case .blob(let poster)? = heat["poster"] else {
                    Issue.record("the large poster is not external")
                    return
                }
                #expect(try reader.data(for: poster) == testBytes(40, seed: 2))
                #expect(try reader.count(RecordQuery("Item")) == 4)
                #expect(try reader.count(RecordQuery("Person")) == 2)
                // Links, from both sides.
                #expect(try reader.related("Person", id: 1, "items") == [1])
                #expect(try reader.related("Person", id: 2, "items").sorted() == [2, 3])
                #expect(try reader.related("Film", id: 3, "owner") == [2])
                #expect(try reader.related("Person", id: 1, "favorite") == [3])
                #expect(try reader.related("Film", id: 3, "fan") == [1])
                #expect(try reader.related("Person", id: 2, "favorite") == [5])
                #expect(try reader.related("Person", id: 1, "watched").sorted() == [3, 5])
                #expect(try reader.related("Film", id: 5, "watchers").sorted() == [1, 2])
                #expect(try reader.related("Person", id: 2, "watched") == [5])
            }
            // Keys go on from the reserved one; the new record is an ordinary one.
            let (id, _) = try store.write {
                try $0.insert(
                    "Film", ["title": .string("Up"), "added": .date(Self.added), "rating": .double(1)])
            }
            #expect(id == 11)
            try store.close()
            let db = try rawStore(url)
            defer { db.close() }
            let refs = try db.rows("SELECT digest, refs FROM deck_blob ORDER BY refs")
            #expect(refs.map { $0[1] } == [.integer(1), .integer(2)])
            #expect(refs.last?[0] == .text((blobName(Self.cover) as NSString).lastPathComponent))
        }
    }

    /// Setting a link again replaces it as the record API would: a one-to-one's earlier partner
    /// lets go (from either side's storage), a to-one set to nil is cleared, an item given to
    /// another owner leaves the first, and a many-to-many link given from both sides is one link.
    @Test func relinkingReplacesAsTheRecordAPIWould() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("built.deck")
            _ = try PackageStore.build(at: url, contentType: Self.contentType, schema: Self.schema) { load in
                for pk in Int64(1)...3 {
                    try load.insert(
                        entity: "Person", pk: pk, globalID: Self.gid(1, pk), values: [.string("P\(pk)")])
                }
                for pk in Int64(1)...3 {
                    try load.insert(
                        entity: "Film", pk: pk, globalID: Self.gid(2, pk),
                        values: [
                            .string("F\(pk)"), .date(Self.added), .double(1), nil, nil, nil, nil, nil, nil,
                        ])
                }
                // Item.fan holds the one-to-one: set from the column's side, then from the other.
                try load.setToOne(entity: "Film", pk: 1, relationship: "fan", target: 1)
                try load.setToOne(entity: "Film", pk: 2, relationship: "fan", target: 1)
                try load.setToOne(entity: "Person", pk: 2, relationship: "favorite", target: 2)
                try load.setToOne(entity: "Person", pk: 3, relationship: "favorite", target: 3)
                try load.setToOne(entity: "Person", pk: 3, relationship: "favorite", target: nil)
                try load.addToMany(entity: "Person", pk: 1, relationship: "items", targets: [1, 2])
                try load.addToMany(entity: "Person", pk: 2, relationship: "items", targets: [2])
                try load.setToOne(entity: "Film", pk: 1, relationship: "owner", target: nil)
                try load.addToMany(entity: "Person", pk: 1, relationship: "watched", targets: [3])
                try load.addToMany(entity: "Film", pk: 3, relationship: "watchers", targets: [1])
            }
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
            let store = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? store.close() }
            try store.read { (reader: StoreReader) throws in
                #expect(try reader.related("Film", id: 1, "fan") == [])
                #expect(try reader.related("Film", id: 2, "fan") == [2])
                #expect(try reader.related("Person", id: 1, "favorite") == [])
                #expect(try reader.related("Person", id: 3, "favorite") == [])
                #expect(try reader.related("Film", id: 3, "fan") == [])
                #expect(try reader.related("Person", id: 1, "items") == [])
                #expect(try reader.related("Person", id: 2, "items") == [2])
                #expect(try reader.related("Film", id: 3, "watchers") == [1])
            }
        }
    }

    @Test func aThrowingBodyLeavesNothing() throws {
        struct Stop: Error {}
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("built.deck")
            let error = expectDeckError {
                _ = try PackageStore.build(at: url, contentType: Self.contentType, schema: Self.schema) {
                    load in
                    try load.insert(
                        entity: "Person", pk: 1, globalID: Self.gid(1, 1), values: [.string("Ann")])
                    try load.insert(
                        entity: "Book", pk: 1, globalID: Self.gid(2, 1),
                        values: [.string("Dune"), .date(Self.added), .integer(1), nil, .data(Self.cover)])
                    throw Stop()
                }
            }
            guard case .unexpected? = error else {
                Issue.record("expected the body's error, wrapped; got \(String(describing: error))")
                return
            }
            #expect(try Self.names(dir).isEmpty)
        }
    }

    @Test func anExistingPathIsRefusedAndUntouched() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("built.deck")
            try Data("mine".utf8).write(to: url)
            var ran = false
            expectAlreadyExists(url.path) {
                _ = try PackageStore.build(at: url, contentType: Self.contentType, schema: Self.schema) { _ in
                    ran = true
                }
            }
            #expect(!ran)
            #expect(try Data(contentsOf: url) == Data("mine".utf8))
            #expect(try Self.names(dir) == ["built.deck"])
        }
    }

    /// Builds with `body` after loading Ann (Person 1) and Dune (Book 1), expecting an
    /// `invalidValue` of `entity` and `property` whose reason has `key`; nothing may be left.
    static func expectRefused(
        entity: String, property: String, key: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: @escaping (BulkLoader) throws -> Void
    ) throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("built.deck")
            let error = expectDeckError(sourceLocation: sourceLocation) {
                _ = try PackageStore.build(at: url, contentType: Self.contentType, schema: Self.schema) {
                    load in
                    try load.insert(
                        entity: "Person", pk: 1, globalID: Self.gid(1, 1), values: [.string("Ann")])
                    try load.insert(
                        entity: "Book", pk: 1, globalID: Self.gid(2, 1),
                        values: [.string("Dune"), .date(Self.added), .integer(1), nil, .data(Self.cover)])
                    try body(load)
                }
            }
            guard case .invalidValue(entity, property, let reason)? = error else {
                Issue.record(
                    "expected invalidValue(\(entity), \(property)), got \(String(describing: error))",
                    sourceLocation: sourceLocation)
                return
            }
            #expect(reason.contains(key), "\(reason)", sourceLocation: sourceLocation)
            #expect(try Self.names(dir).isEmpty, sourceLocation: sourceLocation)
        }
    }

    @Test func aLinkToAMissingOrWrongRecordNamesIt() throws {
        try Self.expectRefused(entity: "Book", property: "owner", key: "key 1 links to Person key 9") {
            try $0.setToOne(entity: "Book", pk: 1, relationship: "owner", target: 9)
        }
        try Self.expectRefused(entity: "Person", property: "watched", key: "which is a Book, not a Film") {
            try $0.addToMany(entity: "Person", pk: 1, relationship: "watched", targets: [1])
        }
        try Self.expectRefused(entity: "Person", property: "items", key: "key 4") {
            try $0.addToMany(entity: "Person", pk: 4, relationship: "items", targets: [1])
        }
        try Self.expectRefused(entity: "Film", property: "owner", key: "key 1") {
            try $0.setToOne(entity: "Film", pk: 1, relationship: "owner", target: 1)
        }
    }

    /// A to-one link kept in the row (not a one-to-one) can come with the row, before its target
    /// is loaded; the links are checked once, when the load ends.
    @Test func toOneLinksGivenWithTheRows() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("built.deck")
            _ = try PackageStore.build(at: url, contentType: Self.contentType, schema: Self.schema) { load in
                // `fan` is one half of a one-to-one: set with setToOne, never with the row.
                #expect(try load.rowLinkNames(of: "Book") == ["owner"])
                #expect(try load.rowLinkNames(of: "Item") == ["owner"])
                #expect(try load.rowLinkNames(of: "Person") == [])
                try load.insert(
                    entity: "Book", pk: 1, globalID: Self.gid(2, 1),
                    values: [.string("Dune"), .date(Self.added), .integer(1), nil, nil], links: [2])
                try load.insert(
                    entity: "Book", pk: 2, globalID: Self.gid(2, 2),
                    values: [.string("Emma"), .date(Self.added), .integer(1), nil, nil], links: [nil])
                try load.insert(
                    entity: "Film", pk: 3, globalID: Self.gid(2, 3),
                    values: [.string("Up"), .date(Self.added), .double(1), nil, nil, nil, nil, nil, nil],
                    links: [2])
                try load.insert(entity: "Person", pk: 2, globalID: Self.gid(1, 2), values: [.string("Bob")])
            }
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
            let store = try PackageStore.open(at: url)
            try store.read { (reader: StoreReader) throws in
                #expect(try reader.related("Person", id: 2, "items").sorted() == [1, 3])
                #expect(try reader.related("Book", id: 2, "owner") == [])
            }
            try store.close()
        }
    }

    @Test func aLinkGivenWithARowToAMissingOrWrongRecordFailsTheLoad() throws {
        try Self.expectRefused(
            entity: "Book", property: "owner", key: "key 7 links to Person key 9, which does not exist"
        ) {
            try $0.insert(
                entity: "Book", pk: 7, globalID: Self.gid(2, 7),
                values: [.string("Emma"), .date(Self.added), .integer(1), nil, nil], links: [9])
        }
        // Person and Item are two tables: a key of the wrong table is simply not there.
        try Self.expectRefused(entity: "Film", property: "owner", key: "key 8 links to Person key 3") {
            try $0.insert(
                entity: "Film", pk: 8, globalID: Self.gid(2, 8),
                values: [.string("Up"), .date(Self.added), .double(1), nil, nil, nil, nil, nil, nil],
                links: [3])
        }
        let error = expectDeckError {
            try withTestDirectory { dir throws in
                _ = try PackageStore.build(
                    at: dir.appendingPathComponent("x.deck"), contentType: Self.contentType,
                    schema: Self.schema
                ) { load in
                    try load.insert(
                        entity: "Book", pk: 1, globalID: Self.gid(2, 1),
                        values: [.string("Dune"), .date(Self.added), .integer(1), nil, nil], links: [1, 2])
                }
            }
        }
        guard case .misuse(let message)? = error else {
            Issue.record("expected misuse, got \(String(describing: error))")
            return
        }
        #expect(message.contains("2 links for 1 to-one relationships"), "\(message)")
    }

    /// Blob files written by another thread through an intake: a row that names one takes it
    /// as is; one under its attribute's threshold, or for a column without external storage, is
    /// kept inline; one no row names is removed when the load ends.
    @Test func blobFilesWrittenOnAnotherThreadAreAdoptedByTheRowsThatNameThem() throws {
        try withTestDirectory { dir throws in
            let big = dir.appendingPathComponent("big.bin")
            let small = dir.appendingPathComponent("small.bin")
            let unused = dir.appendingPathComponent("unused.bin")
            try testBytes(5_000, seed: 3).write(to: big)
            try testBytes(10, seed: 4).write(to: small)
            try testBytes(3_000, seed: 5).write(to: unused)
            let url = dir.appendingPathComponent("built.deck")
            _ = try PackageStore.build(at: url, contentType: Self.contentType, schema: Self.schema) { load in
                let intake = try load.blobIntake()
                let references = Locked<[BlobReference]>([])
                let thread = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    defer { thread.signal() }
                    for file in [big, small, unused] {
                        if let reference = try? intake.write(contentsOf: file.path) {
                            references.withLock { $0.append(reference) }
                        }
                    }
                }
                thread.wait()
                try intake.finish()
                let written = references.withLock { $0 }
                #expect(written.count == 3)
                #expect(written.allSatisfy(intake.isWritten))
                try load.insert(
                    entity: "Book", pk: 1, globalID: Self.gid(2, 1),
                    values: [.string("Dune"), .date(Self.added), .integer(1), nil, .blob(written[0])])
                try load.insert(
                    entity: "Book", pk: 2, globalID: Self.gid(2, 2),
                    values: [.string("Emma"), .date(Self.added), .integer(1), nil, .blob(written[1])])
                try load.insert(
                    entity: "Film", pk: 3, globalID: Self.gid(2, 3),
                    values: [
                        .string("Up"), .date(Self.added), .double(1), nil, nil, nil, nil, nil,
                        .blob(written[0]),
                    ])
                #expect(load.blobFiles == (1, 5_000))
                #expect(throws: DeckError.self) { _ = try intake.write(contentsOf: big.path) }
            }
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
            let store = try PackageStore.open(at: url)
            try store.read { (reader: StoreReader) throws in
                guard case .blob(let cover)? = try reader.record("Book", id: 1)?["cover"] else {
                    Issue.record("the large cover is not a blob file")
                    return
                }
                #expect(try reader.data(for: cover) == testBytes(5_000, seed: 3))
                #expect(try reader.record("Book", id: 2)?["cover"] == .data(testBytes(10, seed: 4)))
                #expect(try reader.record("Film", id: 3)?["still"] == .data(testBytes(5_000, seed: 3)))
            }
            try store.close()
            let files = try FileManager.default.subpathsOfDirectory(atPath: url.path + "/blobs")
            #expect(files.filter { $0.count > 3 }.count == 1)
        }
    }

    @Test func aLoadWhoseBlobIntakeIsNotFinishedIsAMisuse() throws {
        try withTestDirectory { dir throws in
            let error = expectDeckError {
                _ = try PackageStore.build(
                    at: dir.appendingPathComponent("x.deck"), contentType: Self.contentType,
                    schema: Self.schema
                ) { load in _ = try load.blobIntake() }
            }
            guard case .misuse(let message)? = error else {
                Issue.record("expected misuse, got \(String(describing: error))")
                return
            }
            #expect(message.contains("not finished"), "\(message)")
            #expect(try Self.names(dir).isEmpty)
        }
    }

    @Test func aDuplicateKeyGlobalIDOrUniqueValueNamesIt() throws {
        try Self.expectRefused(
            entity: "Film", property: "_pk", key: "key 1 is taken in table Item (by a Book record)"
        ) {
            try $0.insert(
                entity: "Film", pk: 1, globalID: Self.gid(2, 9),
                values: [.string("Up"), .date(Self.added), .double(1), nil, nil, nil, nil, nil, nil])
        }
        try Self.expectRefused(
            entity: "Book", property: "_gid",
            key: "key 2: the record with key 1 of table Item has the same global id"
        ) {
            try $0.insert(
                entity: "Book", pk: 2, globalID: Self.gid(2, 1),
                values: [.string("Emma"), .date(Self.added), .integer(1), nil, nil])
        }
        try Self.expectRefused(
            entity: "Book", property: "title", key: "key 2: another record (key 1) has the same value"
        ) {
            try $0.insert(
                entity: "Book", pk: 2, globalID: Self.gid(2, 2),
                values: [.string("Dune"), .date(Self.added), .integer(1), nil, nil])
        }
    }

    @Test func aWrongValueNamesTheEntityPropertyAndKey() throws {
        try Self.expectRefused(entity: "Book", property: "pages", key: "the record with key 2") {
            try $0.insert(
                entity: "Book", pk: 2, globalID: Self.gid(2, 2),
                values: [.string("Emma"), .date(Self.added), .string("many"), nil, nil])
        }
        try Self.expectRefused(
            entity: "Book", property: "pages", key: "the record with key 2: a value is required"
        ) {
            try $0.insert(
                entity: "Book", pk: 2, globalID: Self.gid(2, 2),
                values: [.string("Emma"), .date(Self.added), nil, nil, nil])
        }
        try Self.expectRefused(entity: "Book", property: "cover", key: "the record with key 2") {
            try $0.insert(
                entity: "Book", pk: 2, globalID: Self.gid(2, 2),
                values: [.string("Emma"), .date(Self.added), .integer(1), nil, .string("bytes")])
        }
    }

    /// The verification after the load is a gate: a package that fails it (here a blob file
    /// cut short behind the loader's back, in the staging directory) is no document. The gate is
    /// quick verification (spec 10.7): the loader hashed each blob as it wrote it, and hashing
    /// again would read the same bytes back from the page cache, so sizes are what it compares.
    @Test func aPackageThatFailsVerificationIsNotRenamedIntoPlace() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("built.deck")
            let error = expectDeckError {
                _ = try PackageStore.build(at: url, contentType: Self.contentType, schema: Self.schema) {
                    load in
                    try load.insert(
                        entity: "Book", pk: 1, globalID: Self.gid(2, 1),
                        values: [.string("Dune"), .date(Self.added), .integer(1), nil, .data(Self.cover)])
                    let staging = try #require(
                        try Self.names(dir).first { $0.hasPrefix(".built.deck.creating-") })
                    let blob = dir.appendingPathComponent(staging + "/blobs/" + blobName(Self.cover))
                    try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: blob.path)
                    try testBytes(99, seed: 9).write(to: blob)
                }
            }
            guard case .corrupt(url.path, let reason)? = error else {
                Issue.record("expected corrupt(\(url.path)), got \(String(describing: error))")
                return
            }
            #expect(reason.contains("fails verification"), "\(reason)")
            #expect(try Self.names(dir).isEmpty)
        }
    }

    /// A build whose process died leaves only its staging directory, which is no document (a
    /// hidden name) and which the next build of the same name removes.
    @Test func anInterruptedBuildLeavesNoDocument() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("built.deck")
            // What a killed build leaves: its staging directory, half filled, no longer locked.
            let stale = dir.appendingPathComponent(".built.deck.creating-0123456789abcdef")
            try FileManager.default.createDirectory(
                at: stale.appendingPathComponent("blobs"), withIntermediateDirectories: true)
            try Data("{}".utf8).write(to: stale.appendingPathComponent("manifest.json"))
            #expect(throws: DeckError.self) { _ = try PackageStore.open(at: url) }
            _ = try PackageStore.build(at: url, contentType: Self.contentType, schema: Self.schema) { load in
                try load.insert(entity: "Person", pk: 1, globalID: Self.gid(1, 1), values: [.string("Ann")])
            }
            #expect(try Self.names(dir) == ["built.deck"])
            let store = try PackageStore.open(at: url, mode: .readOnly)
            #expect(try store.read { try $0.count(RecordQuery("Person")) } == 1)
            try store.close()
        }
    }

    @Test func aLoaderIsUnusableAfterItsBuild() throws {
        try withTestDirectory { dir throws in
            var kept: BulkLoader?
            _ = try PackageStore.build(
                at: dir.appendingPathComponent("built.deck"), contentType: Self.contentType,
                schema: Self.schema
            ) { kept = $0 }
            let error = expectDeckError {
                try kept?.insert(entity: "Person", pk: 1, globalID: Self.gid(1, 1), values: [.string("Ann")])
            }
            guard case .misuse? = error else {
                Issue.record("expected a misuse error, got \(String(describing: error))")
                return
            }
        }
    }
}
