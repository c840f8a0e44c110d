import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@_spi(Testing) @testable import DeckStore

/// What a merge does with a common ancestor that is not what it claims to be (spec 20.9, "A
/// common ancestor"): a path that is no package, a damaged or hostile store, a later schema,
/// one of the two copies themselves, one that a writer is changing meanwhile. Each is refused
/// with a clear error, or read as it is; the copy merged into keeps every record either way, and
/// the ancestor is never written.
@Suite(.timed) struct MergeAncestorInputTests {
    /// Every file of the package at `url` (relative path and bytes): what "never written" means.
    static func files(_ url: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let paths = FileManager.default.enumerator(atPath: url.path)?.allObjects as? [String] ?? []
        for path in paths {
            var isDirectory: ObjCBool = false
            let full = url.appendingPathComponent(path).path
            guard FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory),
                !isDirectory.boolValue
            else { continue }
            files[path] = try Data(contentsOf: URL(fileURLWithPath: full))
        }
        return files
    }

    /// Merges `b` into `a` with `ancestor`, expecting a refusal whose message contains
    /// `expected`; `a` must be as it was.
    static func expectRefused(_ b: URL, into a: URL, ancestor: URL, _ expected: String) throws {
        let before = try MergeTests.dump(a)
        let store = try PackageStore.open(at: a)
        defer { try? store.close() }
        do {
            try DocumentMerge.merge(from: b, into: store, ancestor: ancestor)
            Issue.record("merged with \(ancestor.lastPathComponent) as the ancestor")
        } catch {
            #expect("\(error)".contains(expected), "\(ancestor.lastPathComponent): \(error)")
            // The error names the path given, never a scratch copy's.
            #expect(!"\(error)".contains("deck-merge-"), "\(error)")
        }
        try store.close()
        #expect(try MergeTests.dump(a) == before, "\(ancestor.lastPathComponent)")
    }

    @Test func anAncestorThatIsNoPackageOrADamagedOneIsRefusedAndChangesNothing() throws {
        try withTestDirectory { dir in
            let (ancestor, a, b) = try MergeAncestorTests.copiesUpgradedApart(in: dir)
            let file = dir.appendingPathComponent("notes.txt")
            try Data("not a package".utf8).write(to: file)
            try Self.expectRefused(b, into: a, ancestor: file, "notes.txt: not a Deck package")
            let empty = dir.appendingPathComponent("empty.flashcards")
            try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: false)
            try Self.expectRefused(b, into: a, ancestor: empty, "empty.flashcards")

            // Its store cut in half, or overwritten with other bytes.
            let store = try Data(contentsOf: ancestor.appendingPathComponent(PackageLayout.store))
            for (name, bytes) in [
                ("truncated", store.prefix(store.count / 2)), ("garbage", testBytes(store.count, seed: 9)),
            ] {
                let damaged = try MergeTests.copy(ancestor, to: "\(name).flashcards")
                try bytes.write(to: damaged.appendingPathComponent(PackageLayout.store))
                try Self.expectRefused(b, into: a, ancestor: damaged, "\(name).flashcards")
            }
        }
    }

    @Test func anAncestorWithObjectsItsSchemaDoesNotDeriveIsRefusedBeforeAnyOfItRuns() throws {
        try withTestDirectory { dir in
            let (ancestor, a, b) = try MergeAncestorTests.copiesUpgradedApart(in: dir)
            // A trigger that an upgrade or a migration of its snapshot would fire, and a view.
            for (name, sql) in [
                ("trigger", "CREATE TRIGGER wipe AFTER UPDATE ON Card BEGIN DELETE FROM Deck; END"),
                ("view", "CREATE VIEW everything AS SELECT * FROM Card"),
            ] {
                let hostile = try MergeTests.copy(ancestor, to: "\(name).flashcards")
                let db = try rawStore(hostile)
                try db.execute(sql)
                db.close()
                let before = try Self.files(hostile)
                try Self.expectRefused(b, into: a, ancestor: hostile, "\(name).flashcards")
                #expect(try Self.files(hostile) == before, "\(name)")
            }
        }
    }

    @Test func anAncestorThatLiesAboutItsRecordsCostsOnlyWhatItClaimsWasDeleted() throws {
        try withTestDirectory { dir in
            let (ancestor, a, b) = try MergeAncestorTests.copiesUpgradedApart(in: dir)
            let honest = try MergeTests.copy(a, to: "honest.flashcards")
            try MergeAncestorTests.merge(b, into: honest, ancestor: ancestor)

            // A global id that no store may hold (written past the CHECK constraint and the
            // trigger that keeps global ids): refused, as the snapshot is checked.
            // A card claiming a deck's global id, and a value no store may hold (text that is
            // not UTF-8): read as they are. The ancestor "lacks" the card whose global id it
            // lied about, and holds a card that neither copy has (taken as deleted in both); its
            // values are only compared. The copies keep every card of the honest merge.
            for (name, sql, refusal) in [
                (
                    "short-id", "UPDATE Card SET _gid = x'0102' WHERE _pk = 4",
                    "CHECK constraint failed in Card"
                ),
                (
                    "shared-id", "UPDATE Card SET _gid = (SELECT _gid FROM Deck WHERE _pk = 1) WHERE _pk = 4",
                    nil
                ),
                ("bad-value", "UPDATE Card SET front = CAST(x'c328' AS TEXT) WHERE _pk = 5", nil),
            ] {
                let liar = try MergeTests.copy(ancestor, to: "\(name).flashcards")
                let db = try rawStore(liar)
                let keeper = "deck_gid:Card:update"
                let trigger =
                    try db.scalar("SELECT sql FROM sqlite_master WHERE name = '\(keeper)'")?.string ?? ""
                try db.execute(
                    "PRAGMA ignore_check_constraints = ON; DROP TRIGGER \"\(keeper)\"; \(sql); \(trigger)")
                db.close()
                let into = try MergeTests.copy(a, to: "into-\(name).flashcards")
                let before = try Self.files(liar)
                if let refusal {
                    try Self.expectRefused(
                        b, into: into, ancestor: liar, "cannot be the common ancestor: " + refusal)
                } else {
                    try MergeAncestorTests.merge(b, into: into, ancestor: liar)
                    #expect(try MergeTests.cards(into) == MergeTests.cards(honest), "\(name)")
                }
                #expect(try Self.files(liar) == before, "\(name)")
            }
        }
    }

    @Test func anAncestorAtALaterSchemaIsRefusedAndTheCopiesThemselvesOrOneBeingWrittenAreRead() throws {
        try withTestDirectory { dir in
            let ancestor = dir.appendingPathComponent("o.deck")
            let ids = try makeSmallFlashcards(at: ancestor)
            let a = try MergeTests.copy(ancestor, to: "a.deck")
            let b = try MergeTests.copy(ancestor, to: "b.deck")
            try MergeTests.write(a) { t in try t.update("Card", id: ids["hola"]!, ["back": .string("hi")]) }
            try MergeTests.write(b) { t in _ = try t.delete("Card", id: ids["merci"]!) }

            // A later schema than the copy's: an ancestor is never a newer app's copy.
            let later = try MergeTests.copy(ancestor, to: "later.deck")
            _ = try PackageStore.migrate(at: later, to: MergeSchemaVersionTests.laterSchema())
            try Self.expectRefused(b, into: a, ancestor: later, "later.deck")

            // Without an ancestor, with the true one, and with either copy as the ancestor (the
            // user's claim, read as it is): versioned copies merge alike, and neither the copy
            // given as ancestor nor the one merged in is written.
            let expected = try MergeTests.merged(a, b, as: "expected.deck")
            for (name, candidate) in [("o", ancestor), ("a", a), ("b", b)] {
                let into = try MergeTests.copy(a, to: "into-\(name).deck")
                let before = try Self.files(candidate)
                try MergeAncestorTests.merge(b, into: into, ancestor: candidate == a ? into : candidate)
                try MergeTests.expectSame(into, expected, "\(name)")
                #expect(try Self.files(candidate) == before, "\(name)")
            }

            // A writer changing the ancestor meanwhile: the merge reads its last commit, and
            // neither waits for the writer nor sees what it has not committed.
            let into = try MergeTests.copy(a, to: "into-written.deck")
            let writer = try PackageStore.open(at: ancestor)
            defer { try? writer.close() }
            try writer.write { t in
                try t.update("Card", id: ids["adios"]!, ["back": .string("uncommitted")])
                try MergeAncestorTests.merge(b, into: into, ancestor: ancestor)
            }
            try MergeTests.expectSame(into, expected, "written")
            #expect(try MergeTests.cards(into)["adiós"]?["back"] == .string(""))
        }
    }
}
