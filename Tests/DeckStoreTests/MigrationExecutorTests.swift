import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

#if canImport(Glibc)
    import Glibc
#endif

/// The migration executor (spec: section 18): every lightweight step kind on a real package,
/// the data checks, removals that must be agreed to, a custom stage that splits an attribute,
/// blob reference counts, refusals that leave the document as it was, and dry runs.
@Suite(.timed) struct MigrationExecutorTests {
    /// A flash-cards package with two decks, three cards (two with external images, one with an
    /// inline one), two tags and their links. Returns its URL (closed).
    static func makePackage(in dir: URL, schema: StoreSchema = flashCardsSchema()) throws -> URL {
        let url = dir.appendingPathComponent("cards.deck")
        let store = try PackageStore.create(at: url, contentType: flashCardsType, schema: schema)
        try store.write { tx in
            let spanish = try tx.insert("Deck", ["title": .string("Spanish")])
            let french = try tx.insert("Deck", ["title": .string("French"), "position": .integer(2)])
            let verbs = try tx.insert("Tag", ["name": .string("verbs")])
            let nouns = try tx.insert("Tag", ["name": .string("nouns")])
            try tx.insert(
                "Card",
                [
                    "front": .string("hola"), "back": .string("hello"),
                    "image": .data(testBytes(40, seed: 1)),
                    "deck": .reference(spanish), "tags": .references([nouns]),
                ])
            try tx.insert(
                "Card",
                [
                    "front": .string("comer"), "back": .string("to eat"),
                    "image": .data(testBytes(50, seed: 2)),
                    "deck": .reference(spanish), "tags": .references([verbs, nouns]),
                ])
            try tx.insert(
                "Card",
                ["front": .string("chat"), "image": .data(testBytes(4, seed: 3)), "deck": .reference(french)])
        }
        try store.close()
        return url
    }

    /// Every record of every entity, by entity name then id, with to-many links.
    static func records(_ url: URL) throws -> [String: [Int64: [String: Value]]] {
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        return try store.read { reader throws in
            var result: [String: [Int64: [String: Value]]] = [:]
            for entity in store.schema.entities {
                for record in try reader.fetch(RecordQuery(entity.name, includesSubentities: false)) {
                    var values = record.values
                    for relationship in entity.relationships where relationship.isToMany {
                        values[relationship.name] = .references(
                            try reader.related(entity.name, id: record.id, relationship.name).sorted())
                    }
                    // External values by their bytes, so that inline and external compare.
                    for (name, value) in values {
                        if case .blob(let reference) = value {
                            values[name] = .data(try reader.data(for: reference))
                        }
                    }
                    result[entity.name, default: [:]][record.id] = values
                }
            }
            return result
        }
    }

    static func expectValid(_ url: URL) throws {
        let report = try PackageVerifier.verify(at: url)
        #expect(report.findings.isEmpty, "\(report.findings)")
    }

    static func history(_ url: URL) throws -> [MigrationRecord] {
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        return try store.info().migrations
    }

    /// A table whose new columns come last in its derived SQL gets `ADD COLUMN`; one where they
    /// come before its to-one columns (section 6.1's order) is rebuilt.
    @Test func anOptionalAttributeIsAddedWithAlterTable() throws {
        try withTestDirectory { dir in
            let url = try Self.makePackage(in: dir)
            let before = try Self.records(url)
            var v2 = flashCardsSchema()
            v2.version = "1.1.0"
            v2.entities[1].attributes.append(Attribute("hint", .string, isOptional: true))
            v2.entities[1].attributes.append(
                Attribute("level", .integer, isOptional: true, defaultValue: .integer(3)))
            v2.entities[0].attributes.append(
                Attribute("color", .string, isOptional: true, defaultValue: .string("red")))
            let report = try PackageStore.migrate(at: url, to: v2)
            #expect(report.alteredTables == ["Deck"] && report.rebuiltTables == ["Card"])
            let after = try Self.records(url)
            for (id, values) in before["Card"] ?? [:] {
                var expected = values
                expected["hint"] = .null
                expected["level"] = .integer(3)
                #expect(after["Card"]?[id] == expected)
            }
            for (id, values) in before["Deck"] ?? [:] {
                var expected = values
                expected["color"] = .string("red")
                #expect(after["Deck"]?[id] == expected)
            }
            #expect(after["Tag"] == before["Tag"])
            try Self.expectValid(url)
            let history = try Self.history(url)
            #expect(history.count == 1)
            #expect(history.first?.toVersion == "1.1.0" && history.first?.toFingerprint == v2.fingerprint)
            #expect(
                history.first?.fromFingerprint == flashCardsSchema().fingerprint
                    && history.first?.stage == nil)
            let store = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? store.close() }
            #expect(store.schema == v2)
        }
    }

    @Test func everyLightweightStepKeepsEveryValue() throws {
        try withTestDirectory { dir in
            let url = try Self.makePackage(in: dir)
            let before = try Self.records(url)
            let blobsBefore = blobFiles(url)
            #expect(blobsBefore.count == 2)
            var v2 = flashCardsSchema()
            v2.version = "2.0.0"
            // Deck: position renamed rank (a plan's rename), title no longer unique but indexed,
            // a composite index; the delete rule of cards changes.
            v2.entities[0].attributes[1].name = "rank"
            v2.entities[0].attributes[0].options = [.indexed]
            v2.entities[0].indexes = [["rank", "title"]]
            v2.entities[0].relationships[0].deleteRule = .nullify
            // Card: front renamed question (originalName), back made required with a default
            // (already), image loses external storage, a new required attribute with a default,
            // an attribute added and one removed (agreed to), declared in another order.
            v2.entities[1].attributes = [
                Attribute("image", .data, isOptional: true),
                Attribute("question", .string, originalName: "front"),
                Attribute("back", .string, defaultValue: .string("")),
                Attribute("level", .integer, defaultValue: .integer(1)),
            ]
            v2.entities[1].uniqueConstraints = [["question", "back"]]
            // Tag renamed Label (originalName); its relationships follow.
            v2.entities[2].name = "Label"
            v2.entities[2].originalName = "Tag"
            v2.entities[1].relationships[1].destination = "Label"
            // A new entity with a relationship to an old one.
            v2.entities.append(
                Entity(
                    "Note", attributes: [Attribute("text", .string, isOptional: true)],
                    relationships: [Relationship("deck", to: "Deck", inverse: nil, deleteRule: .nullify)]))
            let plan = MigrationPlan(renames: ["Deck.rank": "position"])
            let report = try PackageStore.migrate(at: url, to: v2, plan: plan)
            #expect(Set(report.rebuiltTables) == ["Deck", "Card", "Label"])
            #expect(report.inlinedValues == 2)
            let after = try Self.records(url)
            #expect(after["Deck"]?.count == 2 && after["Card"]?.count == 3 && after["Label"]?.count == 2)
            for (id, old) in before["Deck"] ?? [:] {
                #expect(after["Deck"]?[id]?["rank"] == old["position"])
                #expect(after["Deck"]?[id]?["title"] == old["title"])
                #expect(after["Deck"]?[id]?["cards"] == old["cards"])
            }
            for (id, old) in before["Card"] ?? [:] {
                let new = after["Card"]?[id]
                #expect(new?["question"] == old["front"] && new?["back"] == old["back"])
                #expect(new?["image"] == old["image"] && new?["deck"] == old["deck"])
                #expect(new?["tags"] == old["tags"] && new?["level"] == .integer(1))
            }
            for (id, old) in before["Tag"] ?? [:] {
                #expect(
                    after["Label"]?[id]?["name"] == old["name"]
                        && after["Label"]?[id]?["cards"] == old["cards"])
            }
            // Every image is inline now: no cell names a blob, and the files are gone.
            #expect(blobFiles(url).isEmpty)
            try Self.expectValid(url)
            // Keys are never reused: a new record gets a key above every old one.
            let store = try PackageStore.open(at: url)
            let id = try store.write { try $0.insert("Card", ["question": .string("new")]) }.value
            #expect(id > (before["Card"]?.keys.max() ?? 0))
            try store.close()
            try Self.expectValid(url)
        }
    }

    @Test func aRenameChainGivesEachValueToThePropertyThatNamesIt() throws {
        try withTestDirectory { dir in
            let url = try Self.makePackage(in: dir)
            let before = try Self.records(url)
            var v2 = flashCardsSchema()
            v2.version = "1.1.0"
            // back → front while front → question.
            v2.entities[1].attributes[0] = Attribute("question", .string, originalName: "front")
            v2.entities[1].attributes[1] = Attribute(
                "front", .string, defaultValue: .string(""), originalName: "back")
            _ = try PackageStore.migrate(at: url, to: v2)
            let after = try Self.records(url)
            for (id, old) in before["Card"] ?? [:] {
                #expect(after["Card"]?[id]?["question"] == old["front"])
                #expect(after["Card"]?[id]?["front"] == old["back"])
            }
            try Self.expectValid(url)
        }
    }

    /// A refused migration: the error, and the document exactly as it was.
    static func expectRefused(
        _ url: URL, to schema: StoreSchema, plan: MigrationPlan = MigrationPlan(),
        stage: StoreMigrationStage? = nil,
        entity: String, property: String?, mentioning words: [String]
    ) throws {
        let before = try records(url)
        let history = try history(url)
        let files = try FormatUpgradeTests.snapshot(url)
        let result = Result { () throws(DeckError) in
            try PackageStore.migrate(at: url, to: schema, plan: plan, stage: stage)
        }
        // Not even the store's header (its change counter): the package was never opened for
        // writing.
        #expect(FormatUpgradeTests.same(files, try FormatUpgradeTests.snapshot(url)), "a refusal wrote")
        guard case .failure(let error) = result, case .migrationRefused(_, let e, let p, let reason) = error
        else {
            Issue.record("the migration was not refused: \(result)")
            return
        }
        #expect(e == entity && p == property)
        for word in words { #expect(reason.contains(word), "\(reason)") }
        #expect(try records(url) == before)
        #expect(try self.history(url) == history)
        let store = try PackageStore.open(at: url, mode: .readOnly)
        #expect(store.schema == flashCardsSchema())
        try store.close()
        try expectValid(url)
    }

    @Test func aNewUniqueConstraintOverDuplicatesIsRefusedNamingARecord() throws {
        try withTestDirectory { dir in
            let url = try Self.makePackage(in: dir)
            var dup = flashCardsSchema()
            dup.version = "1.1.0"
            dup.entities[1].uniqueConstraints = [["back"]]
            // Make a duplicate first.
            let store = try PackageStore.open(at: url)
            try store.write { tx in _ = try tx.update("Card", id: 3, ["back": .string("hello")]) }
            try store.close()
            try Self.expectRefused(
                url, to: dup, entity: "Card", property: "back", mentioning: ["Card.back", "#1", "#3"])
        }
    }

    @Test func requiredWithoutDefaultAndUnagreedRemovalsAreRefused() throws {
        try withTestDirectory { dir in
            let url = try Self.makePackage(in: dir)
            var required = flashCardsSchema()
            required.version = "1.1.0"
            required.entities[1].attributes[2].isOptional = false
            try Self.expectRefused(
                url, to: required, entity: "Card", property: "image", mentioning: ["custom stage"])
            var removed = flashCardsSchema()
            removed.version = "1.1.0"
            removed.entities[1].attributes.remove(at: 1)
            try Self.expectRefused(
                url, to: removed, entity: "Card", property: "back", mentioning: ["\"Card.back\"", "removals"])
            var older = flashCardsSchema()
            older.version = "0.9"
            older.entities[1].attributes.append(Attribute("hint", .string, isOptional: true))
            try Self.expectRefused(url, to: older, entity: "", property: nil, mentioning: ["higher version"])
            // Agreed to, the removal runs and the value is gone.
            _ = try PackageStore.migrate(at: url, to: removed, plan: MigrationPlan(removals: ["Card.back"]))
            #expect(try Self.records(url)["Card"]?[1]?["back"] == nil)
            try Self.expectValid(url)
        }
    }

    @Test func aCustomStageSplitsOneAttributeIntoTwo() throws {
        try withTestDirectory { dir in
            let url = dir.appendingPathComponent("people.deck")
            let v1 = StoreSchema(
                version: "1", entities: [Entity("Person", attributes: [Attribute("name", .string)])])
            let store = try PackageStore.create(at: url, contentType: "org.example.people", schema: v1)
            try store.write { tx in
                try tx.insert("Person", ["name": .string("Ada Lovelace")])
                try tx.insert("Person", ["name": .string("Grace Brewster Hopper")])
                try tx.insert("Person", ["name": .string("Plato")])
            }
            try store.close()
            let v2 = StoreSchema(
                version: "2",
                entities: [
                    Entity(
                        "Person",
                        attributes: [
                            Attribute("first", .string, defaultValue: .string("")),
                            Attribute("last", .string, defaultValue: .string("")),
                        ])
                ])
            var sawOldShape = false
            let stage = StoreMigrationStage(
                name: "split-name",
                willMigrate: { tx in sawOldShape = tx.schema == v1 },
                didMigrate: { context in
                    #expect(context.transaction.schema == v2)
                    for (id, name) in try context.oldValues(entity: "Person", attribute: "name") {
                        guard case .string(let text) = name else { continue }
                        let parts = text.split(separator: " ", maxSplits: 1).map(String.init)
                        try context.transaction.update(
                            "Person", id: id,
                            ["first": .string(parts[0]), "last": .string(parts.count > 1 ? parts[1] : "")])
                    }
                })
            let report = try PackageStore.migrate(
                at: url, to: v2, plan: MigrationPlan(removals: ["Person.name"], isBreaking: true),
                stage: stage)
            #expect(sawOldShape && report.stage == "split-name")
            let people = try Self.records(url)["Person"] ?? [:]
            #expect(people[1]?["first"] == .string("Ada") && people[1]?["last"] == .string("Lovelace"))
            #expect(
                people[2]?["first"] == .string("Grace") && people[2]?["last"] == .string("Brewster Hopper"))
            #expect(people[3]?["first"] == .string("Plato") && people[3]?["last"] == .string(""))
            let history = try Self.history(url)
            #expect(history.map(\.stage) == ["split-name"] && history.map(\.isBreaking) == [true])
            let reopened = try PackageStore.open(at: url, mode: .readOnly)
            #expect(try reopened.info().schemaFloor == "2")
            try reopened.close()
            try Self.expectValid(url)
        }
    }

    @Test func aStageThatThrowsLeavesTheDocumentAsItWas() throws {
        try withTestDirectory { dir in
            let url = try Self.makePackage(in: dir)
            var v2 = flashCardsSchema()
            v2.version = "1.1.0"
            v2.entities[1].attributes[2].options = []  // image inline: the blobs would go
            let before = try Self.records(url)
            let files = blobFiles(url)
            let stage = StoreMigrationStage(
                name: "fails",
                didMigrate: { context in
                    try context.transaction.insert(
                        "Card", ["front": .string("x"), "image": .data(testBytes(99))])
                    throw StorageTestError()
                })
            #expect(throws: DeckError.self) { try PackageStore.migrate(at: url, to: v2, stage: stage) }
            #expect(try Self.records(url) == before && blobFiles(url) == files)
            try Self.expectValid(url)
        }
    }

    /// A stage that calls `rollback()` on the transaction it is handed (in either closure) does not
    /// end the migration's transaction: the migration is abandoned whole, with a misuse error,
    /// and the document stays at the old version, valid, with every value and blob.
    @Test(arguments: ["willMigrate", "didMigrate"])
    func aStageThatRollsBackAbandonsTheWholeMigration(closure: String) throws {
        try withTestDirectory { dir in
            let url = try Self.makePackage(in: dir)
            var v2 = flashCardsSchema()
            v2.version = "1.1.0"
            v2.entities[1].attributes[2].options = []  // image inline: the blobs would go
            let before = try Self.records(url)
            let files = blobFiles(url)
            let historyBefore = try Self.history(url).count
            var useAfterRollback: (any Error)?
            let rollBack = { (tx: StoreTransaction) in
                try tx.insert("Deck", ["title": .string("stage")])
                tx.rollback()
                do {
                    try tx.insert("Deck", ["title": .string("after")])
                } catch {
                    useAfterRollback = error
                }
            }
            let stage =
                closure == "willMigrate"
                ? StoreMigrationStage(name: "rolls-back", willMigrate: rollBack)
                : StoreMigrationStage(name: "rolls-back", didMigrate: { try rollBack($0.transaction) })
            #expect {
                try PackageStore.migrate(at: url, to: v2, stage: stage)
            } throws: { error in
                guard case .misuse(let text) = error as? DeckError else { return false }
                return text.contains("'rolls-back' called rollback() in \(closure)") && text.contains("1.0.0")
            }
            if case .misuse = useAfterRollback as? DeckError {
            } else {
                Issue.record("a use after the rollback: \(String(describing: useAfterRollback))")
            }
            #expect(try Self.records(url) == before && blobFiles(url) == files)
            #expect(try Self.history(url).count == historyBefore)
            let reopened = try PackageStore.open(at: url, mode: .readOnly)
            #expect(reopened.schema.version == flashCardsSchema().version)
            try reopened.close()
            try Self.expectValid(url)
        }
    }

    @Test func aHostileStoreIsRefusedBeforeMigrating() throws {
        try withTestDirectory { dir in
            let url = try Self.makePackage(in: dir)
            let db = try rawStore(url)
            try db.execute(
                "CREATE TRIGGER planted AFTER INSERT ON Card BEGIN UPDATE deck_blob SET refs = 0; END")
            db.close()
            var v2 = flashCardsSchema()
            v2.version = "1.1.0"
            v2.entities[1].attributes.append(Attribute("hint", .string, isOptional: true))
            do {
                _ = try PackageStore.migrate(at: url, to: v2)
                Issue.record("a hostile store was migrated")
            } catch {
                guard let deck = error as? DeckError, case .corrupt(_, let reason) = deck else { throw error }
                #expect(reason.contains("planted"))
            }
            let check = try rawStore(url)
            defer { check.close() }
            #expect(try check.scalar("SELECT count(*) FROM deck_migration") == .integer(0))
        }
    }

    @Test func aReadOnlyPackageIsRefused() throws {
        try withTestDirectory { dir in
            let url = try Self.makePackage(in: dir)
            var v2 = flashCardsSchema()
            v2.version = "1.1.0"
            v2.entities[1].attributes.append(Attribute("hint", .string, isOptional: true))
            chmod(url.path, 0o555)
            defer { chmod(url.path, 0o755) }
            guard geteuid() != 0 else { return }  // root writes anyway
            #expect(throws: DeckError.self) { try PackageStore.migrate(at: url, to: v2) }
            chmod(url.path, 0o755)
            #expect(try Self.history(url).isEmpty)
        }
    }

    /// A migration to the schema the document has (same version and fingerprint) is no
    /// migration: it writes nothing, not even the store's header (its change counter), which
    /// opening the store for writing changes.
    @Test func aMigrationToTheSameSchemaWritesNothing() throws {
        try withTestDirectory { dir in
            let url = try Self.makePackage(in: dir)
            let snapshot = try FormatUpgradeTests.snapshot(url)
            let stage = StoreMigrationStage(name: "never", didMigrate: { _ in Issue.record("the stage ran") })
            let report = try PackageStore.migrate(at: url, to: flashCardsSchema(), stage: stage)
            #expect(report.isUnchanged && !report.isDryRun && report.steps.isEmpty)
            #expect(FormatUpgradeTests.same(snapshot, try FormatUpgradeTests.snapshot(url)))
        }
    }

    @Test func aDryRunChecksAndChangesNothing() throws {
        try withTestDirectory { dir in
            let url = try Self.makePackage(in: dir)
            let snapshot = try FormatUpgradeTests.snapshot(url)
            var v2 = flashCardsSchema()
            v2.version = "1.1.0"
            v2.entities[1].attributes.append(Attribute("hint", .string, isOptional: true))
            let report = try PackageStore.migrate(at: url, to: v2, dryRun: true)
            #expect(report.isDryRun && report.steps.map(\.kind) == [.addAttribute])
            #expect(FormatUpgradeTests.same(snapshot, try FormatUpgradeTests.snapshot(url)))
            var dup = flashCardsSchema()
            dup.version = "1.1.0"
            dup.entities[1].uniqueConstraints = [["back"]]
            let store = try PackageStore.open(at: url)
            try store.write { tx in _ = try tx.update("Card", id: 3, ["back": .string("hello")]) }
            try store.close()
            let snapshot2 = try FormatUpgradeTests.snapshot(url)
            #expect(throws: DeckError.self) { try PackageStore.migrate(at: url, to: dup, dryRun: true) }
            #expect(FormatUpgradeTests.same(snapshot2, try FormatUpgradeTests.snapshot(url)))
        }
    }

    @Test func removingAnExternalAttributeRemovesItsBlobsAndKeepsTheCountsExact() throws {
        try withTestDirectory { dir in
            let url = try Self.makePackage(in: dir)
            #expect(blobFiles(url).count == 2)
            var v2 = flashCardsSchema()
            v2.version = "1.1.0"
            v2.entities[1].attributes.remove(at: 2)
            _ = try PackageStore.migrate(at: url, to: v2, plan: MigrationPlan(removals: ["Card.image"]))
            #expect(blobFiles(url).isEmpty)
            try Self.expectValid(url)
            // A rename of an external attribute keeps its blobs, counted once each.
            let url2 = try Self.makePackage(
                in: dir.appendingPathComponent("second", isDirectory: true).creatingDirectory())
            var v3 = flashCardsSchema()
            v3.version = "1.1.0"
            v3.entities[1].attributes[2].name = "picture"
            v3.entities[1].attributes[2].originalName = "image"
            _ = try PackageStore.migrate(at: url2, to: v3)
            #expect(blobFiles(url2).count == 2)
            let db = try rawStore(url2)
            defer { db.close() }
            #expect(
                try db.rows("SELECT refs FROM deck_blob ORDER BY refs").map { $0[0] } == [
                    .integer(1), .integer(1),
                ])
            try Self.expectValid(url2)
        }
    }

    @Test func removingASubentityDeletesItsRecordsAndTheirLinks() throws {
        try withTestDirectory { dir in
            let url = dir.appendingPathComponent("library.deck")
            let v1 = StoreSchema(
                version: "1",
                entities: [
                    Entity(
                        "Shelf", attributes: [Attribute("label", .string)],
                        relationships: [Relationship("items", to: "Item", toMany: true, inverse: "shelves")]),
                    Entity(
                        "Item", attributes: [Attribute("title", .string)],
                        relationships: [Relationship("shelves", to: "Shelf", toMany: true, inverse: "items")]),
                    Entity(
                        "Book", superentity: "Item",
                        attributes: [Attribute("pages", .integer, isOptional: true)]),
                    Entity(
                        "Film", superentity: "Item",
                        attributes: [Attribute("minutes", .integer, isOptional: true)]),
                ])
            let store = try PackageStore.create(at: url, contentType: "org.example.library", schema: v1)
            try store.write { tx in
                let book = try tx.insert("Book", ["title": .string("Emma"), "pages": .integer(400)])
                let film = try tx.insert("Film", ["title": .string("Clueless"), "minutes": .integer(97)])
                try tx.insert("Shelf", ["label": .string("A"), "items": .references([book, film])])
            }
            try store.close()
            var v2 = v1
            v2.version = "2"
            v2.entities.remove(at: 3)
            _ = try PackageStore.migrate(at: url, to: v2, plan: MigrationPlan(removals: ["Film"]))
            let records = try Self.records(url)
            #expect(records["Book"]?.count == 1 && records["Book"]?[1]?["pages"] == .integer(400))
            let db = try rawStore(url)
            #expect(try db.scalar("SELECT count(*) FROM Item") == .integer(1))
            #expect(try db.scalar("SELECT count(*) FROM \"Item.shelves\"") == .integer(1))
            db.close()
            #expect(records["Shelf"]?[1]?["items"] == .references([1]))
            try Self.expectValid(url)
        }
    }

    /// A subentity listed before its parent, the parent declaring a to-one link: a rebuild keeps
    /// the links of every record; an optional attribute's nulls stay null; a required one's get
    /// the default.
    @Test func aRebuiltHierarchyKeepsInheritedLinksAndNulls() throws {
        try withTestDirectory { dir in
            let url = dir.appendingPathComponent("library.deck")
            let v1 = StoreSchema(
                version: "1",
                entities: [
                    Entity(
                        "Book", superentity: "Item",
                        attributes: [Attribute("pages", .integer, isOptional: true)]),
                    Entity(
                        "Item",
                        attributes: [
                            Attribute("title", .string),
                            Attribute("note", .string, isOptional: true, defaultValue: .string("none")),
                        ],
                        relationships: [Relationship("shelf", to: "Shelf", inverse: "items")]),
                    Entity(
                        "Shelf", attributes: [Attribute("label", .string)],
                        relationships: [Relationship("items", to: "Item", toMany: true, inverse: "shelf")]),
                ])
            let store = try PackageStore.create(at: url, contentType: "org.example.library", schema: v1)
            try store.write { tx in
                let shelf = try tx.insert("Shelf", ["label": .string("A")])
                try tx.insert("Book", ["title": .string("Emma"), "note": .null, "shelf": .reference(shelf)])
                try tx.insert("Item", ["title": .string("Lamp"), "shelf": .reference(shelf)])
                try tx.insert("Book", ["title": .string("Persuasion"), "note": .string("signed")])
            }
            try store.close()
            var v2 = v1
            v2.version = "2"
            v2.entities[1].attributes[0] = Attribute("name", .string, originalName: "title")
            v2.entities[0].attributes[0] = Attribute("pages", .integer, defaultValue: .integer(0))
            _ = try PackageStore.migrate(at: url, to: v2)
            let records = try Self.records(url)
            #expect(
                records["Book"]?[1]?["shelf"] == .reference(1)
                    && records["Item"]?[2]?["shelf"] == .reference(1))
            #expect(records["Book"]?[1]?["name"] == .string("Emma") && records["Book"]?[1]?["note"] == .null)
            #expect(
                records["Book"]?[3]?["note"] == .string("signed")
                    && records["Item"]?[2]?["note"] == .string("none"))
            #expect(records["Book"]?[1]?["pages"] == .integer(0) && records["Book"]?[3]?["shelf"] == .null)
            #expect(records["Shelf"]?[1]?["items"] == .references([1, 2]))
            try Self.expectValid(url)
        }
    }
}

extension URL {
    /// Creates the directory (for tests that need a second one).
    fileprivate func creatingDirectory() throws -> URL {
        try FileManager.default.createDirectory(at: self, withIntermediateDirectories: true)
        return self
    }
}
