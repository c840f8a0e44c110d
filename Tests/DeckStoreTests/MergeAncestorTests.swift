import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@_spi(Testing) @testable import DeckStore

/// Merging with a common ancestor (spec 20.9, "A common ancestor"): two copies of the version 4
/// package of Tests/Fixtures/v4, changed apart while still version 4 and upgraded apart, hold
/// their changes of that time under the origin's version; the ancestor tells them apart.
@Suite(.timed) struct MergeAncestorTests {
    static let seed = TestSeed("MergeAncestorTests", filter: "MergeAncestorTests")

    /// Runs `sql` on the store of the package at `url` as a version 4 Deck would have written
    /// it: no version bookkeeping (the package is not upgraded).
    static func writeAsVersion4(_ url: URL, _ sql: String) throws {
        let db = try Database(path: url.path + "/store.sqlite", mode: .readWrite)
        defer { db.close() }
        #expect(try db.scalar("PRAGMA user_version")?.int64 == 4)
        try db.execute(sql)
    }

    /// Opens the package at `url` for writing once, which upgrades it to version 5.
    static func upgrade(_ url: URL) throws {
        let store = try PackageStore.open(at: url)
        try store.close()
    }

    /// Merges `from` into `into` with `ancestor`; `into` must verify afterwards with no finding.
    @discardableResult
    static func merge(_ from: URL, into: URL, ancestor: URL?) throws -> MergeReport {
        let store = try PackageStore.open(at: into)
        let report = try DocumentMerge.merge(from: from, into: store, ancestor: ancestor)
        try store.close()
        let verification = try PackageVerifier.verify(at: into)
        #expect(verification.findings.isEmpty, "\(verification.findings)")
        return report
    }

    /// The ancestor O (the version 4 fixture) and two copies of it, A and B, each changed as a
    /// version 4 Deck would, then upgraded; B then edited once more, as version 5.
    static func copiesUpgradedApart(in dir: URL) throws -> (ancestor: URL, a: URL, b: URL) {
        let ancestor = dir.appendingPathComponent("o.flashcards")
        try FileManager.default.copyItem(at: FormatVersion5Tests.fixture, to: ancestor)
        let a = try MergeTests.copy(ancestor, to: "a.flashcards")
        let b = try MergeTests.copy(ancestor, to: "b.flashcards")
        // Values chosen to sort before the ancestor's: without the ancestor, the kept value wins.
        try writeAsVersion4(
            a,
            """
            UPDATE Card SET back = 'A hello' WHERE _pk = 1;
            UPDATE Card SET back = 'A goodbye' WHERE _pk = 2;
            UPDATE Card SET front = 'gracias A' WHERE _pk = 3;
            UPDATE Card SET back = 'A hello again' WHERE _pk = 7;
            DELETE FROM "Card.tags" WHERE source = 7 AND target = 1;
            """)
        try writeAsVersion4(
            b,
            """
            DELETE FROM "Card.tags" WHERE source = 2;
            DELETE FROM Card WHERE _pk = 2;
            UPDATE Card SET front = 'gracias B' WHERE _pk = 3;
            UPDATE Card SET back = 'a big cat' WHERE _pk = 5;
            """)
        try upgrade(a)
        try upgrade(b)
        try MergeTests.write(b) { t in try t.update("Card", id: 7, ["back": .string("B hello")]) }
        return (ancestor, a, b)
    }

    @Test func changesMadeBeforeVersioningAreFoundWithTheAncestorInEitherOrder() throws {
        try withTestDirectory { dir in
            let (ancestor, a, b) = try Self.copiesUpgradedApart(in: dir)
            let ab = try MergeTests.copy(a, to: "ab.flashcards")
            let report = try Self.merge(b, into: ab, ancestor: ancestor)
            let ba = try MergeTests.copy(b, to: "ba.flashcards")
            let reversed = try Self.merge(a, into: ba, ancestor: ancestor)
            try MergeTests.expectSame(ab, ba)

            let cards = try MergeTests.cards(ab)
            // A's change, B kept the ancestor's.
            #expect(cards["hola"]?["back"] == .string("A hello"))
            // B's change.
            #expect(cards["el gato"]?["back"] == .string("a big cat"))
            // B deleted it.
            #expect(cards["adiós"] == nil)
            // Both changed: the greater value.
            #expect(cards["gracias B"] != nil && cards["gracias A"] == nil)
            // A versioned change beats them.
            #expect(cards["bonjour"]?["back"] == .string("B hello"))
            let tags = try MergeTests.tags(ab)
            // A removed the link.
            #expect(!tags.contains("bonjour greeting") && tags.contains("hola greeting"))

            // Exactly the two cells both changed from the ancestor's value are conflicts.
            let conflicts = report.conflicts.map { "\($0.property) \($0.kept) \($0.lostHere)" }.sorted()
            #expect(conflicts == ["back B hello true", "front gracias B true"], "\(report.conflicts)")
            #expect(reversed.conflicts.count == 2 && reversed.conflicts.allSatisfy { !$0.lostHere })
            #expect(report.deletedRecords == 1 && report.removedLinks == 0)
            #expect(report.originDifferences == 0 && reversed.originDifferences == 0)
            // A's edit of the card B deleted, both before versioning, lost to the delete: reported
            // once each way, found by its value (the ancestor's was another).
            let lost = report.lostEdits.map { "\($0.property) \($0.lost) \($0.lostHere)" }
            #expect(lost == ["back A goodbye true"], "\(report.lostEdits)")
            #expect(
                reversed.lostEdits.map { "\($0.property) \($0.lost) \($0.lostHere)" } == [
                    "back A goodbye false"
                ])
            #expect(reversed.learnedTombstones == 0 && reversed.removedLinks == 1)

            // Merging again, with the ancestor or without, changes nothing; nor does a third copy
            // that kept everything as the ancestor had it: what the ancestor found is versioned.
            #expect(try Self.merge(b, into: ab, ancestor: ancestor).isEmpty)
            #expect(try Self.merge(b, into: ab, ancestor: nil).isEmpty)
            #expect(try Self.merge(a, into: ab, ancestor: nil).isEmpty)
            let c = try MergeTests.copy(ancestor, to: "c.flashcards")
            try Self.upgrade(c)
            #expect(try Self.merge(c, into: ab, ancestor: nil).isEmpty)
            try MergeTests.expectSame(ab, ba)
        }
    }

    @Test func withoutTheAncestorCopiesUpgradedApartMergeByValueAlone() throws {
        // What the ancestor is for: without it, a value one copy changed before versioning may
        // lose to the value the other kept, and a delete of that time is undone.
        try withTestDirectory { dir in
            let (_, a, b) = try Self.copiesUpgradedApart(in: dir)
            let ab = try MergeTests.copy(a, to: "ab.flashcards")
            let report = try Self.merge(b, into: ab, ancestor: nil)
            // The three values the copies changed before versioning differ under the origin's
            // version; merged the other way round, so does the card B deleted then.
            #expect(report.originDifferences == 3, "\(report)")
            let ba = try MergeTests.copy(b, to: "ba.flashcards")
            let reversed = try Self.merge(a, into: ba, ancestor: nil)
            #expect(reversed.originDifferences == 4 && reversed.insertedRecords == 1, "\(reversed)")
            let cards = try MergeTests.cards(ab)
            #expect(cards["hola"]?["back"] == .string("hello"))
            #expect(cards["adiós"] != nil)
        }
    }

    @Test func anAncestorOfVersionedCopiesChangesNoResult() throws {
        // Copies versioned since they parted: the versions already say everything; the ancestor
        // only makes the conflicts exact.
        try withTestDirectory { dir in
            let ancestor = dir.appendingPathComponent("o.deck")
            _ = try makeSmallFlashcards(at: ancestor)
            var g = SeededGenerator(seed: 0x0A_2025)
            // One round when the sweeps are sampled (the sanitizer passes).
            for round in 0..<TestSweep.count(3, sampled: 1) {
                let a = try MergeTests.copy(ancestor, to: "a.deck")
                let b = try MergeTests.copy(ancestor, to: "b.deck")
                try MergeTests.randomEdits(a, &g, count: 12)
                try MergeTests.randomEdits(b, &g, count: 12)
                let with = try MergeTests.copy(a, to: "with.deck")
                let without = try MergeTests.copy(a, to: "without.deck")
                let reportWith = try Self.merge(b, into: with, ancestor: ancestor)
                let reportWithout = try Self.merge(b, into: without, ancestor: nil)
                try MergeTests.expectSame(with, without, "round \(round)")
                var counts = (reportWith, reportWithout)
                (counts.0.conflicts, counts.1.conflicts) = ([], [])
                // Lost edits too: without the ancestor, an edit that put back the ancestor's value
                // (a card moved away and back) is one the other copy had not seen, so it is
                // listed; with it, the value is the ancestor's, so it is not.
                (counts.0.lostEdits, counts.1.lostEdits) = ([], [])
                #expect(counts.0 == counts.1, "round \(round)")
                #expect(
                    reportWith.lostEdits.allSatisfy { reportWithout.lostEdits.contains($0) }, "round \(round)"
                )
                // A conflict is a cell both changed from the ancestor's value.
                let original = try MergeTests.cards(ancestor).values.reduce(into: [UUID: Record]()) {
                    if let gid = try MergeTests.globalID(ancestor, "Card", $1.id) { $0[gid] = $1 }
                }
                for conflict in reportWith.conflicts where conflict.entity == "Card" {
                    let before = original[conflict.globalID ?? UUID()]?[conflict.property]
                    #expect(
                        conflict.kept != .value(before ?? .null) && conflict.lost != .value(before ?? .null))
                }
                // The ancestor is upgraded by no one: it was opened read-only.
                #expect(try PackageVerifier.verify(at: ancestor).findings.isEmpty)
            }
        }
    }

    @Test func aVersion3AncestorIsReadAsItIs() throws {
        // Tests/Fixtures/v3: a version 3 package (global ids, no bookkeeping); one copy renames an
        // event and the other deletes one, both before upgrading.
        try withTestDirectory { dir in
            let ancestor = dir.appendingPathComponent("o.deck")
            try FileManager.default.copyItem(
                at: FormatVersion5Tests.fixture.deletingLastPathComponent().deletingLastPathComponent()
                    .appendingPathComponent("v3/Dates.deck"), to: ancestor)
            let a = try MergeTests.copy(ancestor, to: "a.deck")
            let b = try MergeTests.copy(ancestor, to: "b.deck")
            for (copy, sql) in [
                (a, "UPDATE Event SET name = 'A renamed' WHERE _pk = 1"),
                (b, "DELETE FROM Event WHERE _pk = 2"),
            ] {
                let db = try Database(path: copy.path + "/store.sqlite", mode: .readWrite)
                #expect(try db.scalar("PRAGMA user_version")?.int64 == 3)
                try db.execute(sql)
                db.close()
                try Self.upgrade(copy)
            }
            let report = try Self.merge(b, into: a, ancestor: ancestor)
            #expect(report.deletedRecords == 1 && report.changedCells == 0 && report.conflicts.isEmpty)
            let again = try Self.merge(a, into: b, ancestor: ancestor)
            #expect(again.changedCells == 1 && again.deletedRecords == 0)
            try MergeTests.expectSame(a, b)
            let db = try Database(path: a.path + "/store.sqlite", mode: .readOnly)
            defer { db.close() }
            #expect(try db.scalar("SELECT name FROM Event WHERE _pk = 1")?.string == "A renamed")
            #expect(try db.scalar("SELECT count(*) FROM Event WHERE _pk = 2")?.int64 == 0)
            // Read, never upgraded.
            let o = try Database(path: ancestor.path + "/store.sqlite", mode: .readOnly)
            defer { o.close() }
            #expect(try o.scalar("PRAGMA user_version")?.int64 == 3)
        }
    }

    /// Random changes of the copy of the version 4 fixture at `url`, made as a version 4 Deck
    /// would (no bookkeeping): values, to-one references, deletes of cards (with their links;
    /// those without a blob file, which a delete would leave orphaned), links removed and made.
    static func randomVersion4Edits(_ url: URL, _ g: inout SeededGenerator, count: Int) throws {
        let db = try Database(path: url.path + "/store.sqlite", mode: .readWrite)
        defer { db.close() }
        for _ in 0..<count {
            let cards = try db.rows("SELECT _pk FROM Card ORDER BY _pk").compactMap { $0[0].int64 }
            let tags = try db.rows("SELECT _pk FROM Tag ORDER BY _pk").compactMap { $0[0].int64 }
            guard let card = cards.randomElement(using: &g), let tag = tags.randomElement(using: &g) else {
                return
            }
            let text = "v4 \(g.next() % 1000)"
            switch g.next() % 6 {
            case 0: try db.run("UPDATE Card SET back = ? WHERE _pk = ?", [.text(text), .integer(card)])
            case 1: try db.run("UPDATE Card SET front = ? WHERE _pk = ?", [.text(text), .integer(card)])
            case 2:
                try db.run(
                    "UPDATE Card SET deck = ? WHERE _pk = ?",
                    [.integer(Int64(1 + g.next() % 2)), .integer(card)])
            case 3:
                guard
                    try db.scalar("SELECT image IS NULL FROM Card WHERE _pk = ?", [.integer(card)])?.int64
                        == 1
                else { continue }
                try db.run("DELETE FROM \"Card.tags\" WHERE source = ?", [.integer(card)])
                try db.run("DELETE FROM Card WHERE _pk = ?", [.integer(card)])
            case 4:
                try db.run(
                    "DELETE FROM \"Card.tags\" WHERE source = ? AND target = ?",
                    [.integer(card), .integer(tag)])
            default:
                try db.run(
                    "INSERT OR IGNORE INTO \"Card.tags\"(source, target) VALUES (?, ?)",
                    [.integer(card), .integer(tag)])
            }
        }
    }

    /// Random changes of an upgraded copy of the fixture through the store: values, references,
    /// links, card deletes.
    static func randomEdits(_ url: URL, _ g: inout SeededGenerator, count: Int) throws {
        let store = try PackageStore.open(at: url)
        defer { try? store.close() }
        for _ in 0..<count {
            try store.write { t in
                let cards = try t.fetchIDs(RecordQuery("Card"))
                let tags = try t.fetchIDs(RecordQuery("Tag"))
                guard let card = cards.randomElement(using: &g) else { return }
                switch g.next() % 4 {
                case 0: try t.update("Card", id: card, ["back": .string("v5 \(g.next() % 1000)")])
                case 1: try t.update("Card", id: card, ["deck": .reference(Int64(1 + g.next() % 2))])
                case 2:
                    try t.update(
                        "Card", id: card, ["tags": .references(tags.filter { _ in g.next() % 2 == 0 })])
                default: _ = try t.delete("Card", id: card)
                }
            }
        }
    }

    @Test func mergesOfCopiesUpgradedApartWithTheAncestorAreCommutativeIdempotentAndAssociative() throws {
        var g = Self.seed.generator()
        try withTestDirectory { dir in
            // One round when the sweeps are sampled (the sanitizer passes).
            for round in 0..<TestSweep.count(3, sampled: 1) {
                let ancestor = dir.appendingPathComponent("o\(round).flashcards")
                try FileManager.default.copyItem(at: FormatVersion5Tests.fixture, to: ancestor)
                // Three copies changed apart as version 4, upgraded, then changed as version 5.
                var replicas: [URL] = []
                for name in ["a", "b", "c"] {
                    let copy = try MergeTests.copy(ancestor, to: "\(name)\(round).flashcards")
                    try Self.randomVersion4Edits(copy, &g, count: 8)
                    try Self.upgrade(copy)
                    try Self.randomEdits(copy, &g, count: 4)
                    replicas.append(copy)
                }
                let (a, b, c) = (replicas[0], replicas[1], replicas[2])
                func merged(_ x: URL, _ y: URL, _ name: String) throws -> URL {
                    let result = try MergeTests.copy(x, to: name)
                    try Self.merge(y, into: result, ancestor: ancestor)
                    return result
                }
                let comment = Comment(rawValue: "round \(round), \(Self.seed)")
                try MergeTests.keep([ancestor, a, b, c], round: round)
                let ab = try merged(a, b, "ab.flashcards")
                try MergeTests.expectSame(ab, try merged(b, a, "ba.flashcards"), comment)
                let abc = try merged(ab, c, "ab_c.flashcards")
                try MergeTests.expectSame(
                    abc, try merged(a, try merged(b, c, "bc.flashcards"), "a_bc.flashcards"), comment)
                try MergeTests.expectSame(abc, try merged(c, ab, "c_ab.flashcards"), comment)
                // Idempotent, with the ancestor or without.
                #expect(try Self.merge(a, into: abc, ancestor: ancestor).isEmpty, comment)
                #expect(try Self.merge(c, into: abc, ancestor: nil).isEmpty, comment)
            }
        }
    }

    @Test func anAncestorOfAnotherDocumentOrAMissingOneIsRefusedAndChangesNothing() throws {
        try withTestDirectory { dir in
            let (ancestor, a, b) = try Self.copiesUpgradedApart(in: dir)
            let other = dir.appendingPathComponent("other.deck")
            _ = try makeSmallFlashcards(at: other)
            let before = try MergeTests.dump(a)
            for (candidate, expected) in [
                (other, "is another document"), (dir.appendingPathComponent("none.deck"), ""),
            ] {
                let store = try PackageStore.open(at: a)
                defer { try? store.close() }
                do {
                    try DocumentMerge.merge(from: b, into: store, ancestor: candidate)
                    Issue.record("merged with \(candidate.lastPathComponent) as the ancestor")
                } catch {
                    #expect(expected.isEmpty || "\(error)".contains(expected), "\(error)")
                }
            }
            #expect(try MergeTests.dump(a) == before)
            _ = ancestor
        }
    }
}
