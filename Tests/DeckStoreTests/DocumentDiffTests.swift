import DeckSQLite
import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@Suite("Difference between copies of a document", .timed)
struct DocumentDiffTests {
    /// A file copy of the package at `url` (what a file manager or a sync service makes).
    func copy(_ url: URL, to name: String) throws -> URL {
        let copy = url.deletingLastPathComponent().appendingPathComponent(name)
        try FileManager.default.copyItem(at: url, to: copy)
        return copy
    }

    func globalID(_ url: URL, _ entity: String, _ id: Int64) throws -> UUID {
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        return try #require(try store.read { try $0.record(entity, id: id) }?.globalID)
    }

    @Test func copiesThatAgreeHaveNoDifference() throws {
        try withTestDirectory { dir in
            let original = dir.appendingPathComponent("a.deck")
            _ = try makeSmallFlashcards(at: original, contentType: "org.test")
            let copied = try copy(original, to: "b.deck")
            #expect(try DocumentDifference(between: original, and: copied).isEmpty)
            #expect(try DocumentDifference(between: original, and: original).isEmpty)
        }
    }

    @Test func editsInACopyAreEachReportedByGlobalID() throws {
        try withTestDirectory { dir in
            let original = dir.appendingPathComponent("a.deck")
            let ids = try makeSmallFlashcards(at: original, contentType: "org.test")
            let edited = try copy(original, to: "b.deck")
            let store = try PackageStore.open(at: edited)
            let added = try store.write { t in
                try t.update("Card", id: ids["hola"]!, ["back": .string("hi")])
                // Moved to the other deck; the tag taken off; a new image (a new blob).
                try t.update(
                    "Card", id: ids["merci"]!,
                    ["deck": .reference(ids["spanish"]!), "image": .data(Data(repeating: 9, count: 100))])
                try t.update("Card", id: ids["hola"]!, ["tags": .references([])])
                _ = try t.delete("Card", id: ids["adios"]!)
                return try t.insert(
                    "Card", ["front": .string("gracias"), "deck": .reference(ids["french"]!)])
            }.value
            try store.close()

            let difference = try DocumentDifference(between: original, and: edited)
            let hola = try globalID(original, "Card", ids["hola"]!)
            let merci = try globalID(original, "Card", ids["merci"]!)
            let adios = try globalID(original, "Card", ids["adios"]!)
            let gracias = try globalID(edited, "Card", added)
            let french = try globalID(original, "Deck", ids["french"]!)
            let spanish = try globalID(original, "Deck", ids["spanish"]!)
            let verbs = try globalID(original, "Tag", ids["verbs"]!)

            let byID = Dictionary(uniqueKeysWithValues: difference.records.map { ($0.globalID, $0) })
            #expect(difference.records.count == 4)
            #expect(byID[adios]?.change == .only(.first))
            #expect(byID[gracias]?.change == .only(.second))
            #expect(
                byID[hola]?.change
                    == .cells([
                        CellDifference(
                            name: "back", first: .value(.string("hello")), second: .value(.string("hi")))
                    ]))
            guard case .cells(let cells)? = byID[merci]?.change else {
                Issue.record("merci's cells are not reported")
                return
            }
            #expect(cells.map(\.name) == ["image", "deck"])
            // The new image is a blob file (over the schema's 16-byte threshold), read as the
            // record API reads it.
            guard case .value(.blob(let image)) = cells.first?.second else {
                Issue.record("merci's new image is not a blob: \(String(describing: cells.first))")
                return
            }
            #expect(cells.first?.first == .value(.null) && image.size == 100)
            #expect(
                cells.last
                    == CellDifference(
                        name: "deck", first: .record(entity: "Deck", globalID: french),
                        second: .record(entity: "Deck", globalID: spanish)))
            #expect(
                difference.links == [
                    LinkDifference(relationship: "Card.tags", source: hola, target: verbs, side: .first)
                ])
            #expect(difference.blobs.map(\.side) == [.second])
            // In global-id order (as SQLite orders the 16 bytes).
            let order = difference.records.map { withUnsafeBytes(of: $0.globalID.uuid) { Array($0) } }
            #expect(order == order.sorted { $0.lexicographicallyPrecedes($1) })

            // The other way round: the same differences, sides swapped.
            let back = try DocumentDifference(between: edited, and: original)
            #expect(back.records.count == 4)
            #expect(back.records.first { $0.globalID == adios }?.change == .only(.second))
            #expect(back.links.map(\.side) == [.second])
            #expect(
                back.records.first { $0.globalID == hola }?.change
                    == .cells([
                        CellDifference(
                            name: "back", first: .value(.string("hi")), second: .value(.string("hello")))
                    ]))
        }
    }

    @Test func aReferenceLeftDanglingIsReportedByItsKey() throws {
        // Deck.cards with noAction: deleting a deck leaves its cards pointing at it.
        try withTestDirectory { dir in
            let original = dir.appendingPathComponent("a.deck")
            let ids = try makeSmallFlashcards(
                at: original, contentType: "org.test", cardsDeleteRule: .noAction)
            let edited = try copy(original, to: "b.deck")
            let store = try PackageStore.open(at: edited)
            try store.write { t in _ = try t.delete("Deck", id: ids["french"]!) }
            try store.close()
            let difference = try DocumentDifference(between: original, and: edited)
            let french = try globalID(original, "Deck", ids["french"]!)
            let merci = try globalID(original, "Card", ids["merci"]!)
            #expect(difference.records.count == 2)
            #expect(difference.records.first { $0.globalID == french }?.change == .only(.first))
            #expect(
                difference.records.first { $0.globalID == merci }?.change
                    == .cells([
                        CellDifference(
                            name: "deck", first: .record(entity: "Deck", globalID: french),
                            second: .missingRecord(ids["french"]!))
                    ]))
        }
    }

    @Test func textIsComparedByItsBytes() throws {
        // "é" as one scalar and as "e" with a combining accent: equal Swift strings, different text.
        try withTestDirectory { dir in
            let original = dir.appendingPathComponent("a.deck")
            let ids = try makeSmallFlashcards(at: original, contentType: "org.test")
            let edited = try copy(original, to: "b.deck")
            let store = try PackageStore.open(at: edited)
            try store.write { t in
                try t.update("Card", id: ids["adios"]!, ["front": .string("adio\u{0301}s")])
            }
            try store.close()
            let difference = try DocumentDifference(between: original, and: edited)
            #expect(difference.records.count == 1)
            #expect(difference.records.first?.globalID == (try globalID(original, "Card", ids["adios"]!)))
        }
    }

    @Test func anotherDocumentIsRefusedUnlessAsked() throws {
        try withTestDirectory { dir in
            let first = dir.appendingPathComponent("a.deck")
            let second = dir.appendingPathComponent("b.deck")
            _ = try makeSmallFlashcards(at: first, contentType: "org.test")
            _ = try makeSmallFlashcards(at: second, contentType: "org.test")
            #expect {
                try DocumentDifference(between: first, and: second)
            } throws: { error in
                guard case DeckError.notComparable(let path, let reason) = error else { return false }
                return path == second.path && reason.contains("another document")
            }
            let difference = try DocumentDifference(
                between: first, and: second, differentDocuments: true)
            // Every record is new to the other (the ids are random), every link and no blob (the same image).
            #expect(difference.records.count == 12)
            #expect(difference.records.filter { $0.change == .only(.first) }.count == 6)
            #expect(difference.links.count == 2)
            #expect(difference.blobs.isEmpty)
        }
    }

    @Test func anotherSchemaIsRefused() throws {
        try withTestDirectory { dir in
            let first = dir.appendingPathComponent("a.deck")
            _ = try makeSmallFlashcards(at: first, contentType: "org.test")
            let second = dir.appendingPathComponent("b.deck")
            try PackageStore.create(
                at: second, contentType: "org.test", schema: flashCardsSchema(threshold: 32)
            ).close()
            #expect {
                try DocumentDifference(between: first, and: second, differentDocuments: true)
            } throws: { error in
                guard case DeckError.notComparable(let path, let reason) = error else { return false }
                return path == second.path && reason.contains("schema differs") && reason.contains("migrate")
            }
        }
    }

    @Test func wrongPathsGiveClearErrorsAndChangeNothing() throws {
        try withTestDirectory { dir in
            let original = dir.appendingPathComponent("a.deck")
            _ = try makeSmallFlashcards(at: original, contentType: "org.test")
            let store = original.appendingPathComponent("store.sqlite")
            let before = try Data(contentsOf: store)
            let missing = dir.appendingPathComponent("missing.deck")
            #expect {
                try DocumentDifference(between: original, and: missing)
            } throws: { error in
                guard case DeckError.notFound(let path) = error else { return false }
                return path == missing.path
            }
            let notAPackage = dir.appendingPathComponent("plain")
            try FileManager.default.createDirectory(at: notAPackage, withIntermediateDirectories: false)
            #expect(throws: DeckError.self) {
                try DocumentDifference(between: notAPackage, and: original)
            }
            // A truncated store is refused by its open.
            let truncated = try copy(original, to: "t.deck")
            let handle = try FileHandle(forWritingTo: truncated.appendingPathComponent("store.sqlite"))
            try handle.truncate(atOffset: 1_000)
            try handle.close()
            #expect(throws: DeckError.self) { try DocumentDifference(between: original, and: truncated) }
            #expect(try Data(contentsOf: store) == before)
        }
    }

    @Test func aStoreCarryingAnObjectOfItsOwnIsRefused() throws {
        // A view that lies about the cards (or a trigger): the open's check of the store's objects
        // refuses the package before anything is compared.
        try withTestDirectory { dir in
            let original = dir.appendingPathComponent("a.deck")
            _ = try makeSmallFlashcards(at: original, contentType: "org.test")
            let hostile = try copy(original, to: "b.deck")
            let database = try rawStore(hostile)
            try database.execute("CREATE VIEW lies AS SELECT 1")
            database.close()
            #expect {
                try DocumentDifference(between: original, and: hostile)
            } throws: { error in
                guard case DeckError.corrupt(_, let reason) = error else { return false }
                return reason.contains("lies")
            }
        }
    }

    @Test func aCopyBeingWrittenIsComparedAtOneState() throws {
        // A writer commits rounds to the second copy while it is compared: each round inserts ten
        // cards and writes its number on the first card. Every comparison sees whole rounds, the
        // same ones in every table it reads: as many new cards as the number on the first card says.
        try withTestDirectory { dir in
            let original = dir.appendingPathComponent("a.deck")
            let ids = try makeSmallFlashcards(at: original, contentType: "org.test")
            let edited = try copy(original, to: "b.deck")
            let store = try PackageStore.open(at: edited)
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                defer { done.signal() }
                for round in 0..<60 {
                    _ = try? store.write { t in
                        try t.update("Card", id: ids["hola"]!, ["back": .string("\(round)")])
                        for k in 0..<10 {
                            _ = try t.insert(
                                "Card",
                                ["front": .string("\(round)-\(k)"), "deck": .reference(ids["french"]!)])
                        }
                    }
                }
            }
            for _ in 0..<40 {
                let difference = try DocumentDifference(between: original, and: edited)
                let added = difference.records.filter { $0.change == .only(.second) }.count
                let rounds = difference.records.compactMap { record -> Int? in
                    guard case .cells(let cells) = record.change,
                        case .value(.string(let back))? = cells.first?.second
                    else { return nil }
                    return Int(back).map { $0 + 1 }
                }
                #expect(added == 10 * (rounds.first ?? 0), "\(added) cards added, rounds \(rounds)")
            }
            done.wait()
            try store.close()
            #expect(try DocumentDifference(between: original, and: edited).records.count == 601)
        }
    }

    @Test func subentitiesAndLinksWithinOneTableAreCompared() throws {
        // Person and its subentity Employee share a table; friends is a to-many from Person to
        // Person (a join table whose source and target are the same table).
        let schema = StoreSchema(entities: [
            StoreSchema.Entity(
                "Person", attributes: [StoreSchema.Attribute("name", .string)],
                relationships: [StoreSchema.Relationship("friends", to: "Person", toMany: true)]),
            StoreSchema.Entity(
                "Employee", superentity: "Person",
                attributes: [StoreSchema.Attribute("company", .string, isOptional: true)]),
        ])
        try withTestDirectory { dir in
            let original = dir.appendingPathComponent("a.deck")
            let store = try PackageStore.create(at: original, contentType: "org.test", schema: schema)
            let (ana, ben) = try store.write { t in
                let ana = try t.insert("Person", ["name": .string("Ana")])
                let ben = try t.insert("Employee", ["name": .string("Ben"), "company": .string("Acme")])
                return (ana, ben)
            }.value
            try store.close()
            let edited = try copy(original, to: "b.deck")
            let other = try PackageStore.open(at: edited)
            try other.write { t in
                try t.update("Employee", id: ben, ["company": .null])
                try t.update("Person", id: ana, ["friends": .references([ben])])
            }
            try other.close()
            let difference = try DocumentDifference(between: original, and: edited)
            let anaID = try globalID(original, "Person", ana)
            let benID = try globalID(original, "Person", ben)
            #expect(
                difference.records == [
                    RecordDifference(
                        entity: "Employee", globalID: benID,
                        change: .cells([
                            CellDifference(
                                name: "company", first: .value(.string("Acme")), second: .value(.null))
                        ]))
                ])
            #expect(
                difference.links == [
                    LinkDifference(
                        relationship: "Person.friends", source: anaID, target: benID, side: .second)
                ])
        }
    }
}
