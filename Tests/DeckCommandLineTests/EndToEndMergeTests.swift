import DeckSQLite
import DeckStore
import DeckTestTiming
import Foundation
import Testing

/// `deck merge` end to end: in place, into a new package, conflict copies, JSON and the report
/// file, refusals that leave every package as it was.
@Suite("End to end: deck merge", .timed)
struct EndToEndMergeTests {
    /// Two copies of the sample edited apart: the first changes hola's back, the second too
    /// (later) and adds a card.
    func editedCopies(in directory: TemporaryDirectory) throws -> (String, String) {
        let first = try e2eSample(in: directory)
        let second = directory.appending("Copy.deck")
        try FileManager.default.copyItem(atPath: first, toPath: second)
        e2eExpectSuccess(try deck("update", first, "Card", "back=hi there", "--where", "front == 'hola'"))
        e2eExpectSuccess(try deck("update", second, "Card", "back=hey", "--where", "front == 'hola'"))
        e2eExpectSuccess(try deck("insert", second, "Card", "front=perro", "back=dog"))
        return (first, second)
    }

    @Test func aCopyIsMergedInPlaceWithItsConflictsReportedAndAgainChangesNothing() throws {
        let directory = try TemporaryDirectory()
        let (first, second) = try editedCopies(in: directory)
        let merged = try deck("merge", first, second)
        e2eExpectSuccess(merged)
        let lines = merged.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "merged \(second): 1 record inserted, 1 value changed")
        #expect(
            lines.contains {
                $0.hasPrefix("conflict: Card ")
                    && $0.hasSuffix(#"back: kept "hey", lost "hi there" (this copy's change)"#)
            })
        e2eExpectSuccess(try deck("verify", first))
        // The second copy lacks nothing of the first but its lost edit: no record differs.
        #expect(try deck("diff", first, second).stdout == "no differences\n")
        let again = try deck("merge", first, second, "--json")
        e2eExpectSuccess(again)
        let object = try #require(
            JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any])
        let reports = try #require(object["merged"] as? [[String: Any]])
        #expect(reports.count == 1 && reports[0]["insertedRecords"] as? Int == 0)
        #expect(
            reports[0]["changedValues"] as? Int == 0 && (reports[0]["conflicts"] as? [Any])?.isEmpty == true)
        // A copy may come as a package archive (a mail attachment): the same merge.
        let archive = directory.appending("Copy.zip")
        e2eExpectSuccess(try deck("export", second, "-o", archive))
        let fromArchive = try deck("merge", first, archive)
        e2eExpectSuccess(fromArchive)
        #expect(
            fromArchive.stdout.hasPrefix("merged \(archive): nothing changed here"), "\(fromArchive.stdout)")
        // The other way round gives the same document.
        e2eExpectSuccess(try deck("merge", second, first))
        let same = try deck("diff", first, second)
        e2eExpectSuccess(same)
        #expect(same.stdout == "no differences\n")
    }

    @Test func twoCopiesMergeIntoANewPackageAndTheReportIsWritten() throws {
        let directory = try TemporaryDirectory()
        let (first, second) = try editedCopies(in: directory)
        let target = directory.appending("Merged.deck")
        let reportFile = directory.appending("report.json")
        let before = try deck("query", first, "Card", "--json").stdout
        let merged = try deck("merge", first, second, "-o", target, "--report", reportFile)
        e2eExpectSuccess(merged)
        e2eExpectSuccess(try deck("verify", target))
        // The first copy is not changed.
        #expect(try deck("query", first, "Card", "--json").stdout == before)
        let hola = try deck("query", target, "Card", "--where", "front == 'hola'", "--json")
        #expect(hola.stdout.contains(#""back":"hey""#))
        let report = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: reportFile)))
                as? [String: Any])
        #expect((report["merged"] as? [[String: Any]])?.first?["insertedRecords"] as? Int == 1)
        // An existing target is refused and left alone.
        let again = try deck("merge", first, second, "-o", target)
        #expect(again.status != 0 && again.stderr.contains("exists"))
        e2eExpectSuccess(try deck("verify", target))
        let hidden = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.hasPrefix(".")
        }
        #expect(hidden.isEmpty)
    }

    @Test func conflictCopiesAreFoldedIntoTheStoreAndRemoved() throws {
        let directory = try TemporaryDirectory()
        let package = try e2eSample(in: directory)
        let none = try deck("merge", "--conflicts", package)
        e2eExpectSuccess(none)
        #expect(none.stdout == "no conflict copies of the store\n")
        // The other device's version: the store after an edit there, beside this one's edit.
        let other = directory.appending("Other.deck")
        try FileManager.default.copyItem(atPath: package, toPath: other)
        e2eExpectSuccess(try deck("update", other, "Card", "back=hey", "--where", "front == 'hola'"))
        e2eExpectSuccess(try deck("update", package, "Card", "back=bye", "--where", "front == 'adiós'"))
        let copy = "store.sync-conflict-20261203-101500-ABCDEFG.sqlite"
        try FileManager.default.copyItem(atPath: other + "/store.sqlite", toPath: package + "/" + copy)
        #expect(try deck("verify", package).stdout.contains("sync-conflict"))
        let merged = try deck("merge", package, "--conflicts")
        e2eExpectSuccess(merged)
        #expect(merged.stdout.hasPrefix("merged \(copy): 1 value changed"))
        #expect(!FileManager.default.fileExists(atPath: package + "/" + copy))
        let verified = try deck("verify", package)
        e2eExpectSuccess(verified)
        #expect(!verified.stdout.contains("sync-conflict"))
        let cards = try deck("query", package, "Card", "--where", "back == 'hey' or back == 'bye'")
        #expect(cards.stdout.contains("(2 records)"))
    }

    @Test func wrongArgumentsAndOtherDocumentsAreRefusedAndChangeNothing() throws {
        let directory = try TemporaryDirectory()
        let (first, second) = try editedCopies(in: directory)
        let stranger = try e2eSample(in: directory, name: "Other.deck")
        let before = try deck("query", first, "Card", "--json").stdout
        let refused = try deck("merge", first, stranger)
        #expect(refused.status != 0 && refused.stderr.contains("another document"))
        let missing = try deck("merge", first, directory.appending("missing.deck"))
        #expect(missing.status == 66 && missing.stderr.contains("no such file"))
        let usage = try deck("merge", first)
        #expect(usage.status == 64)
        let both = try deck("merge", first, second, "--conflicts")
        #expect(both.status == 64)
        #expect(try deck("merge", first, "--conflicts", "--any-document").status == 64)
        let notAPackage = directory.appending("file.txt")
        try Data("hello".utf8).write(to: URL(fileURLWithPath: notAPackage))
        #expect(try deck("merge", first, notAPackage).status != 0)
        #expect(try deck("query", first, "Card", "--json").stdout == before)
        e2eExpectSuccess(try deck("verify", first))
    }

    @Test func copiesAtDifferentSchemaVersionsMergeIntoTheLaterSchema() throws {
        let directory = try TemporaryDirectory()
        // The newer app renamed Card.back to answer and dropped Card.image (a removal: agreed
        // to in a plan); the older app's copy is edited on.
        let (old, _, schema) = try EndToEndMigrationTests.schemas(in: directory) { schema in
            EndToEndMigrationTests.attributes(&schema, of: "Card") { attributes in
                attributes = attributes.filter { $0["name"] as? String != "image" }
                for index in attributes.indices where attributes[index]["name"] as? String == "back" {
                    attributes[index]["originalName"] = "back"
                    attributes[index]["name"] = "answer"
                }
            }
        }
        let plan = directory.appending("plan.json")
        try Data(#"{"removals": ["Card.image"]}"#.utf8).write(to: URL(fileURLWithPath: plan))
        let new = directory.appending("New.deck")
        try FileManager.default.copyItem(atPath: old, toPath: new)
        e2eExpectSuccess(try deck("migrate", new, "--to", schema, "--plan", plan))
        e2eExpectSuccess(try deck("update", old, "Card", "back=hey", "--where", "front == 'hola'"))
        e2eExpectSuccess(try deck("insert", new, "Card", "front=perro", "answer=dog"))
        let oldBefore = try deck("query", old, "Card", "--json").stdout
        // In place into the earlier copy: refused (no merge changes a copy's schema).
        let later = try deck("merge", old, new)
        #expect(later.status == 65 && later.stderr.contains("later than"), "\(later.stderr)")
        // The earlier copy into the later one: refused without the plan that agrees to the removal.
        let newBefore = try deck("query", new, "Card", "--json").stdout
        let unplanned = try deck("merge", new, old)
        #expect(unplanned.status == 65 && unplanned.stderr.contains("Card.image"), "\(unplanned.stderr)")
        #expect(try deck("query", new, "Card", "--json").stdout == newBefore)
        // Into a new package, in either order: the later schema, the same document.
        let first = directory.appending("First.deck")
        let second = directory.appending("Second.deck")
        e2eExpectSuccess(try deck("merge", old, new, "-o", first, "--plan", plan))
        e2eExpectSuccess(try deck("merge", new, old, "-o", second, "--plan", plan))
        #expect(try deck("query", old, "Card", "--json").stdout == oldBefore)
        for merged in [first, second] {
            e2eExpectSuccess(try deck("verify", merged))
            let inspect = try e2eJSONObject(try deck("inspect", merged, "--json").stdout)
            #expect(inspect["schemaVersion"] as? String == "2.0.0")
            let cards = try deck("query", merged, "Card", "--where", "answer == 'hey' or front == 'perro'")
            #expect(cards.stdout.contains("(2 records)"), "\(cards.stdout)")
        }
        let same = try deck("diff", first, second)
        e2eExpectSuccess(same)
        #expect(same.stdout == "no differences\n")
        // In place into the later copy, with the plan.
        e2eExpectSuccess(try deck("merge", new, old, "--plan", plan))
        #expect(try deck("diff", new, first).stdout == "no differences\n")
    }

    @Test func anEditThatLostToADeleteIsListed() throws {
        let directory = try TemporaryDirectory()
        let first = try e2eSample(in: directory)
        let second = directory.appending("Copy.deck")
        try FileManager.default.copyItem(atPath: first, toPath: second)
        e2eExpectSuccess(try deck("delete", first, "Card", "--where", "front == 'hola'"))
        e2eExpectSuccess(try deck("update", second, "Card", "back=hey", "--where", "front == 'hola'"))
        let original = directory.appending("Original.deck")
        try FileManager.default.copyItem(atPath: first, toPath: original)
        let merged = try deck("merge", first, second)
        e2eExpectSuccess(merged)
        #expect(
            merged.stdout.split(separator: "\n").contains {
                $0.hasPrefix("lost to a delete: Card ")
                    && $0.hasSuffix(#"back: "hey" (the other copy's edit)"#)
            }, "\(merged.stdout)")
        // The other way round, from the first copy as it was: the merged one holds no version of
        // the edit's writer, which the report's estimate of what a copy has seen counts as seen.
        let json = try deck("merge", second, original, "--json")
        e2eExpectSuccess(json)
        let object = try e2eJSONObject(json.stdout)
        let report = try #require((object["merged"] as? [[String: Any]])?.first)
        let lost = try #require(report["lostToDeletes"] as? [[String: Any]])
        #expect(
            lost.count == 1 && lost.first?["lost"] as? String == "hey"
                && lost.first?["lostHere"] as? Bool == true)
    }

    @Test func copiesUpgradedApartMergeTheirEarlierChangesWithAnAncestor() throws {
        let directory = try TemporaryDirectory()
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/v4/Flashcards.flashcards")
        let ancestor = directory.appending("O.flashcards")
        try FileManager.default.copyItem(atPath: fixture.path, toPath: ancestor)
        // Two copies changed by a version 4 Deck (no bookkeeping), then upgraded apart.
        var copies: [String] = []
        for (name, sql) in [
            ("A.flashcards", "UPDATE Card SET back = 'A hello' WHERE _pk = 1"),
            ("B.flashcards", "DELETE FROM \"Card.tags\" WHERE source = 2; DELETE FROM Card WHERE _pk = 2"),
        ] {
            let copy = directory.appending(name)
            try FileManager.default.copyItem(atPath: fixture.path, toPath: copy)
            let db = try Database(path: copy + "/store.sqlite", mode: .readWrite)
            try db.execute(sql)
            db.close()
            try PackageStore.open(at: URL(fileURLWithPath: copy)).close()
            copies.append(copy)
        }
        let (a, b) = (copies[0], copies[1])
        let archive = directory.appending("O.zip")
        e2eExpectSuccess(try deck("export", ancestor, "-o", archive))

        // Into a new package, the ancestor given as an archive; A and B are not changed.
        let merged = directory.appending("M.flashcards")
        let result = try deck("merge", a, b, "-o", merged, "--ancestor", archive, "--json")
        e2eExpectSuccess(result)
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let report = (json?["merged"] as? [[String: Any]])?.first
        #expect(
            report?["deletedRecords"] as? Int == 1 && report?["changedValues"] as? Int == 0
                && report?["originDifferences"] as? Int == 0,
            "\(result.stdout)")
        e2eExpectSuccess(try deck("verify", merged))
        // Without the ancestor, the merge says what it could not decide: A's changed value.
        let undecided = try deck("merge", a, b, "-o", directory.appending("U.flashcards"))
        #expect(
            undecided.stdout.contains("note: 1 value or record differed under the origin's version"),
            "\(undecided.stdout)")
        #expect(try deck("query", merged, "Card", "--where", "front == 'hola'").stdout.contains("A hello"))
        #expect(try deck("query", merged, "Card", "--count").stdout == "8\n")
        #expect(try deck("query", a, "Card", "--count").stdout == "9\n")

        // In place, the other way round: the same document.
        e2eExpectSuccess(try deck("merge", b, a, "--ancestor", ancestor))
        #expect(try deck("diff", b, merged).stdout == "no differences\n")
        #expect(try deck("merge", b, a, "--ancestor", ancestor).stdout.hasSuffix("nothing changed here\n"))

        // Refused: with --conflicts, an ancestor of another document, a missing one.
        let before = try deck("query", a, "Card", "--json").stdout
        #expect(try deck("merge", a, "--conflicts", "--ancestor", ancestor).status == 64)
        let stranger = try e2eSample(in: directory, name: "Other.deck")
        let refused = try deck("merge", a, b, "--ancestor", stranger)
        #expect(refused.status != 0 && refused.stderr.contains("another document"), "\(refused.stderr)")
        let missing = try deck("merge", a, b, "--ancestor", directory.appending("none.deck"))
        #expect(missing.status == 66, "\(missing.stderr)")
        // An archive cut short, and a file that is no package: each named, nothing changed.
        let cut = directory.appending("cut.zip")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: cut))
        let notes = directory.appending("notes.txt")
        try Data("not a package".utf8).write(to: URL(fileURLWithPath: notes))
        for bad in [cut, notes] {
            let refusal = try deck("merge", a, b, "--ancestor", bad)
            #expect(
                refusal.status == 66 && refusal.stderr.contains("\(bad): not a Deck package"),
                "\(refusal.stderr)")
        }
        #expect(try deck("query", a, "Card", "--json").stdout == before)
    }

    /// Merges and a writer started at once on three copies: each copy takes one writer at a time,
    /// so a merge into a copy that another process writes is refused as locked (75) and changes
    /// nothing, and a merge reads the copy merged in at one state whoever writes it. Retried, then
    /// merged until nothing changes, the copies agree and hold every change.
    @Test func mergesStartedAtOnceTakeOneWriterACopyAndTheCopiesAgree() throws {
        let directory = try TemporaryDirectory()
        let a = try e2eSample(in: directory, name: "A.deck")
        let (b, c) = (directory.appending("B.deck"), directory.appending("C.deck"))
        try FileManager.default.copyItem(atPath: a, toPath: b)
        try FileManager.default.copyItem(atPath: a, toPath: c)
        e2eExpectSuccess(try deck("update", a, "Card", "back=hi there", "--where", "front == 'hola'"))
        e2eExpectSuccess(try deck("insert", b, "Card", "front=perro", "back=dog"))
        e2eExpectSuccess(try deck("insert", c, "Card", "front=gato", "back=cat"))
        // While this process holds A's writer: a merge into A is refused and changes nothing; a
        // merge from A reads it.
        let holder = try PackageStore.open(at: URL(fileURLWithPath: a))
        let before = try deck("query", a, "Card", "--json").stdout
        let locked = try deck("merge", a, b)
        #expect(locked.status == 75 && locked.stderr.contains("is locked by"), "\(locked.stderr)")
        #expect(try deck("query", a, "Card", "--json").stdout == before)
        e2eExpectSuccess(try deck("merge", c, a))
        try holder.close()
        // At once: merges both ways between each pair, two more into A, a writer of B.
        let jobs: [[String]] = [
            ["merge", a, b], ["merge", b, a], ["merge", a, c], ["merge", c, a], ["merge", b, c],
            ["merge", c, b], ["merge", a, b], ["merge", a, c],
            ["update", b, "Card", "back=bye", "--where", "front == 'adiós'"],
        ]
        let lock = NSLock()
        nonisolated(unsafe) var results: [Int: RunResult] = [:]
        DispatchQueue.concurrentPerform(iterations: jobs.count) { index in
            let result = Result { try runProduct("deck", jobs[index]) }
            lock.withLock { results[index] = try? result.get() }
        }
        var refused: [[String]] = []
        for (index, job) in jobs.enumerated() {
            let result = try #require(results[index], "\(job) did not run")
            if result.status == 75 {
                #expect(result.stderr.contains("is locked by"), "\(job): \(result.stderr)")
                refused.append(job)
            } else {
                #expect(result.status == 0, "\(job): status \(result.status), \(result.stderr)")
            }
        }
        for job in refused { e2eExpectSuccess(try runProduct("deck", job)) }
        for _ in 0..<2 {
            for (into, from) in [(a, b), (a, c), (b, a), (c, a)] {
                e2eExpectSuccess(try deck("merge", into, from))
            }
        }
        for copy in [b, c] { #expect(try deck("diff", a, copy).stdout == "no differences\n", "\(copy)") }
        for copy in [a, b, c] { e2eExpectSuccess(try deck("verify", copy)) }
        let cards = try deck("query", a, "Card", "--json").stdout
        for value in ["hi there", "perro", "gato", "bye"] { #expect(cards.contains(value), "\(value)") }
    }
}
