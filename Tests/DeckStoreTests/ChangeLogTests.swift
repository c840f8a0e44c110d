import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@_spi(Testing) @testable import DeckStore

/// The change log (spec section 20.10): each record, cell and link under the last transaction
/// that changed it, with the value it left.
@Suite("The change log", .timed) struct ChangeLogTests {
    static let seed = TestSeed("ChangeLogTests", filter: "ChangeLogTests")

    static func log(_ url: URL, after: Int64? = nil, last: Int? = nil) throws -> ChangeLog {
        try log(url, token: after.map { ChangeLog.Token(clock: $0) }, last: last)
    }

    static func log(_ url: URL, token: ChangeLog.Token?, last: Int? = nil) throws -> ChangeLog {
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        return try ChangeLog(of: store, after: token, last: last)
    }

    /// The changes of `log` as lines: kind, entity, record (by the key `names` gives its global
    /// id, else the id), cells or link target.
    static func lines(_ transaction: LoggedTransaction, _ names: [UUID: String]) -> [String] {
        transaction.changes.map { change in
            let name = { (id: UUID) in names[id] ?? id.uuidString }
            if let target = change.target {
                return "\(change.kind) \(change.relationship ?? "") \(name(change.globalID)) \(name(target))"
            }
            let cells = change.cells.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
            return "\(change.kind) \(change.entity) \(name(change.globalID)) \(cells)"
        }
    }

    /// The names of the small flash cards' records by global id (decks by title, cards by front,
    /// tags by name).
    static func names(_ url: URL) throws -> [UUID: String] {
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        var names: [UUID: String] = [:]
        try store.read { reader in
            for (entity, key) in [("Deck", "title"), ("Card", "front"), ("Tag", "name")] {
                for record in try reader.fetch(RecordQuery(entity)) {
                    if case .string(let name)? = record[key], let id = record.globalID { names[id] = name }
                }
            }
        }
        return names
    }

    @Test func eachChangeIsListedUnderTheLastTransactionThatMadeItWithItsValue() throws {
        try withTestDirectory { dir in
            let url = dir.appendingPathComponent("a.deck")
            let ids = try makeSmallFlashcards(at: url)
            var names = try Self.names(url)
            let created = try Self.log(url)
            #expect(created.transactions.count == 1)
            let first = try #require(created.transactions.first)
            #expect(first.writer != nil)
            #expect(abs(first.date?.timeIntervalSinceNow ?? 1_000) < 600, "about now")
            let spanish = Self.id(names, "Spanish")
            var lines = Set(Self.lines(first, names))
            let hola = try #require(lines.first { $0.hasPrefix("inserted Card hola ") })
            #expect(hola.hasPrefix("inserted Card hola front=hola back=hello image=<100 bytes, blob "))
            #expect(hola.hasSuffix(" deck=Deck \(spanish)"))
            lines.remove(hola)
            #expect(
                lines == [
                    "inserted Deck Spanish title=Spanish position=0",
                    "inserted Deck French title=French position=0",
                    "inserted Tag verbs name=verbs",
                    "inserted Card adiós front=adiós back= image=null deck=Deck \(spanish)",
                    "inserted Card merci front=merci back= image=null deck=Deck \(Self.id(names, "French"))",
                    "linked Card.tags hola verbs",
                ])

            // An update moves the cells it set to its own transaction; a delete lists the record
            // (by its table's entity) and the links it removed.
            try MergeTests.write(url) { t in
                try t.update("Card", id: ids["hola"]!, ["back": .string("hi")])
                try t.update(
                    "Card", id: ids["merci"]!,
                    ["back": .string("thanks"), "tags": .references([ids["verbs"]!])])
            }
            let adios = try #require(names.first { $0.value == "adiós" }?.key)
            try MergeTests.write(url) { t in _ = try t.delete("Card", id: ids["adios"]!) }
            try MergeTests.write(url) { t in _ = try t.delete("Card", id: ids["hola"]!) }
            names[adios] = "adiós"
            let log = try Self.log(url)
            #expect(log.transactions.count == 4)
            let changes = log.transactions.map { Self.lines($0, names) }
            #expect(
                Set(changes[0]) == [
                    "inserted Deck Spanish title=Spanish position=0",
                    "inserted Deck French title=French position=0",
                    "inserted Card merci front=merci image=null deck=Deck \(Self.id(names, "French"))",
                    "inserted Tag verbs name=verbs",
                ], "hola and adiós were deleted later, and hola's link removed; merci's back changed")
            // hola's update is gone with hola (deleted last): what stays is its delete.
            #expect(changes[1] == ["updated Card merci back=thanks", "linked Card.tags merci verbs"])
            #expect(changes[2] == ["deleted Card adiós "])
            #expect(changes[3] == ["deleted Card hola ", "unlinked Card.tags hola verbs"])
            // Clocks grow with the transactions; each has its own writer session.
            #expect(log.transactions.map(\.clock) == log.transactions.map(\.clock).sorted())
            #expect(Set(log.transactions.compactMap(\.writer)).count == 4)

            // After a clock: the transactions whose clock is greater; the last n.
            #expect(
                try Self.log(url, after: log.transactions[1].clock).transactions
                    == Array(log.transactions[2...]))
            #expect(try Self.log(url, after: log.transactions[3].clock).transactions.isEmpty)
            #expect(try Self.log(url, last: 2).transactions == Array(log.transactions[2...]))
            #expect(try Self.log(url, last: 10).transactions == log.transactions)
            #expect(
                try Self.log(url, after: log.transactions[0].clock, last: 1).transactions == [
                    log.transactions[3]
                ])
            let store = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? store.close() }
            #expect(throws: DeckError.self) { try ChangeLog(of: store, last: 0) }
        }
    }

    static func id(_ names: [UUID: String], _ name: String) -> String {
        names.first { $0.value == name }.map { $0.key.uuidString.lowercased() } ?? "?"
    }

    /// Over random edits and merges, the log is the store's state arranged by transaction:
    /// every value of every record held is listed exactly once, under the version its cell
    /// has (its record's when it has none of its own), every tombstone once, every link once.
    @Test func theLogHoldsEveryCurrentValueOnceUnderItsVersion() throws {
        var g = Self.seed.generator()
        try withTestDirectory { dir in
            for round in 0..<TestSweep.count(3, sampled: 1) {
                let a = dir.appendingPathComponent("a\(round).deck")
                _ = try makeSmallFlashcards(at: a)
                let b = try MergeTests.copy(a, to: "b\(round).deck")
                try MergeTests.randomEdits(a, &g, count: 8)
                try MergeTests.randomEdits(b, &g, count: 8)
                try MergeTests.merge(b, into: a)
                try MergeTests.randomEdits(a, &g, count: 4)
                let log = try Self.log(a)
                #expect(
                    try Self.log(a, token: log.token).transactions.isEmpty, "round \(round), \(Self.seed)")
                var listed: [String: [String: String]] = [:]
                var deleted: Set<String> = []
                var links: [String: Bool] = [:]
                for transaction in log.transactions {
                    for change in transaction.changes {
                        let key = change.globalID.uuidString
                        switch change.kind {
                        case .inserted, .updated:
                            for cell in change.cells {
                                #expect(listed[key, default: [:]][cell.name] == nil, "listed twice")
                                listed[key, default: [:]][cell.name] = "\(cell.value)"
                            }
                            if change.kind == .inserted { listed[key, default: [:]]["_inserted"] = "yes" }
                        case .deleted:
                            #expect(deleted.insert(key).inserted)
                        case .linked, .unlinked:
                            let link =
                                "\(change.relationship ?? "") \(key) \(change.target?.uuidString ?? "")"
                            #expect(links.updateValue(change.kind == .linked, forKey: link) == nil)
                        }
                    }
                }
                // Against the store: its records' current values, its tombstones, its links.
                let store = try PackageStore.open(at: a, mode: .readOnly)
                let cards = try store.read { try $0.fetch(RecordQuery("Card")) }
                try store.close()
                for card in cards {
                    let cells = try #require(listed[card.globalID!.uuidString], "card \(card.id)")
                    #expect(cells["_inserted"] == "yes", "each record held was inserted once")
                    #expect(cells["front"] == "\(DiffCell.value(card["front"] ?? .null))")
                    #expect(cells["back"] == "\(DiffCell.value(card["back"] ?? .null))")
                }
                let db = try Database(path: a.path + "/store.sqlite", mode: .readOnly)
                defer { db.close() }
                let tombstones = try db.rows(
                    "SELECT _gid FROM \"deck_rows:Card\" WHERE alive % 2 = 0 UNION ALL "
                        + "SELECT _gid FROM \"deck_rows:Deck\" WHERE alive % 2 = 0 UNION ALL "
                        + "SELECT _gid FROM \"deck_rows:Tag\" WHERE alive % 2 = 0")
                #expect(
                    Set(tombstones.compactMap { DocumentMerger.globalID($0[0])?.uuidString }) == deleted,
                    "round \(round), \(Self.seed)")
                let held = try db.scalar("SELECT count(*) FROM \"Card.tags\"")?.int64 ?? -1
                #expect(links.values.filter { $0 }.count == Int(held), "round \(round), \(Self.seed)")
                let linkRows = try db.scalar("SELECT count(*) FROM \"deck_links:Card.tags\"")?.int64 ?? -1
                #expect(links.count == Int(linkRows))
            }
        }
    }

    /// A merge keeps the other copy's versions, so its changes are listed under the other copy's
    /// transactions: the same clock and writer in both copies' logs.
    @Test func aMergedChangeIsListedUnderTheTransactionThatMadeItInTheOtherCopy() throws {
        try withTestDirectory { dir in
            let a = dir.appendingPathComponent("a.deck")
            let ids = try makeSmallFlashcards(at: a)
            let b = try MergeTests.copy(a, to: "b.deck")
            try MergeTests.write(b) { t in
                try t.update("Card", id: ids["merci"]!, ["back": .string("thanks")])
            }
            try MergeTests.write(a) { t in try t.update("Card", id: ids["hola"]!, ["back": .string("hi")]) }
            let there = try #require(try Self.log(b, last: 1).transactions.first)
            try MergeTests.merge(b, into: a)
            let here = try Self.log(a)
            #expect(here.transactions.contains(there))
            #expect(here.transactions.count == 3, "the creation, a's edit and b's edit: the merge adds none")
        }
    }

    /// A log's token leaves out what it saw, by writer: the next log lists what was changed
    /// since, the changes a merge brought with earlier clocks included (a clock alone would leave
    /// them out).
    @Test func aTokenListsWhatChangedSinceMergesIncluded() throws {
        try withTestDirectory { dir in
            let a = dir.appendingPathComponent("a.deck")
            let ids = try makeSmallFlashcards(at: a)
            let b = try MergeTests.copy(a, to: "b.deck")
            // b's edit is made first (an earlier clock); a's log is read after a's own edit.
            try MergeTests.write(b) { t in
                try t.update("Card", id: ids["merci"]!, ["back": .string("thanks")])
            }
            try MergeTests.write(a) { t in try t.update("Card", id: ids["hola"]!, ["back": .string("hi")]) }
            let read = try Self.log(a)
            let clock = try #require(read.transactions.last?.clock)
            #expect(try Self.log(a, token: read.token).transactions.isEmpty)
            try MergeTests.merge(b, into: a)
            let bEdit = try #require(try Self.log(b, last: 1).transactions.first)
            #expect(bEdit.clock < clock, "b's edit has the earlier clock")
            #expect(try Self.log(a, token: read.token).transactions == [bEdit])
            #expect(try Self.log(a, after: clock).transactions.isEmpty, "a clock leaves it out")
            // The token after that covers it too; a later edit is listed alone.
            let next = try Self.log(a, token: read.token).token
            try MergeTests.write(a) { t in _ = try t.delete("Card", id: ids["merci"]!) }
            let since = try Self.log(a, token: next)
            #expect(since.transactions.count == 1)
            #expect(since.transactions.first?.changes.map(\.kind) == [.deleted])

            // Its text form round-trips; text that is no token is refused.
            #expect(ChangeLog.Token(next.description) == next)
            #expect(ChangeLog.Token("42") == ChangeLog.Token(clock: 42))
            for bad in [
                "", "x", "-2", "1,", "1,ab:3", "1,\(String(repeating: "0", count: 32)):-1",
                "1,\(String(repeating: "g", count: 32)):1",
                "1,\(String(repeating: "0", count: 32)):1,\(String(repeating: "0", count: 32)):2",
            ] {
                #expect(ChangeLog.Token(bad) == nil, "\(bad)")
            }
        }
    }

    /// A package from elsewhere may lie in its bookkeeping: a version naming a writer the store
    /// does not number is refused (it would read as the origin's); rows of records the store
    /// does not hold are not listed; nothing is written.
    @Test func liesInTheBookkeepingAreRefusedOrLeftOut() throws {
        try withTestDirectory { dir in
            let url = dir.appendingPathComponent("a.deck")
            let ids = try makeSmallFlashcards(at: url)
            let honest = try Self.log(url)
            let orphan = try MergeTests.copy(url, to: "orphan.deck")
            var db = try rawStore(orphan)
            try db.execute(
                "INSERT INTO \"deck_cells:Card\"(_pk, property, clock, writer) VALUES (999, 'back', 5, 1)")
            db.close()
            #expect(try Self.log(orphan).transactions == honest.transactions)
            let stray = try MergeTests.copy(url, to: "stray.deck")
            db = try rawStore(stray)
            try db.run(
                "INSERT INTO \"deck_cells:Card\"(_pk, property, clock, writer) VALUES (?, 'back', 5, 77)",
                [.integer(ids["hola"]!)])
            db.close()
            let before = try Data(contentsOf: stray.appendingPathComponent("store.sqlite"))
            let error = try #require(throws: DeckError.self) { try Self.log(stray) }
            #expect("\(error)".contains("writer 77") && "\(error)".contains(stray.path), "\(error)")
            #expect(try Data(contentsOf: stray.appendingPathComponent("store.sqlite")) == before)
        }
    }

    @Test func aStoreOlderThanFormat5IsRefusedWithTheVersionToUpgradeTo() throws {
        try withTestDirectory { dir in
            let url = dir.appendingPathComponent("v4.flashcards")
            try FileManager.default.copyItem(at: FormatVersion5Tests.fixture, to: url)
            let store = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? store.close() }
            #expect(store.storeFormatVersion == 4)
            let error = try #require(throws: DeckError.self) { try ChangeLog(of: store) }
            #expect("\(error)".contains(url.path) && "\(error)".contains("format version 4"), "\(error)")
            // Upgraded, its records are the origin's: one transaction, clock 0, no writer.
            try store.close()
            try PackageStore.open(at: url).close()
            let log = try Self.log(url)
            #expect(log.transactions.first?.clock == 0)
            #expect(log.transactions.first?.writer == nil)
            #expect(log.transactions.first?.date == nil)
            #expect(try Self.log(url, token: log.token).transactions.isEmpty, "its token covers the origin")
        }
    }

    /// The log reads one snapshot: a writer's open transaction is not seen, and the log of a
    /// store written meanwhile is that of one commit.
    @Test func aWritersOpenTransactionIsNotSeen() throws {
        try withTestDirectory { dir in
            let url = dir.appendingPathComponent("a.deck")
            let ids = try makeSmallFlashcards(at: url)
            let before = try Self.log(url)
            let store = try PackageStore.open(at: url)
            defer { try? store.close() }
            try store.write { t in
                try t.update("Card", id: ids["hola"]!, ["back": .string("hi")])
                #expect(try Self.log(url) == before)
            }
            #expect(try Self.log(url).transactions.count == 2)
        }
    }
}
