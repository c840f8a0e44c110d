import DeckTestTiming
import Foundation
import Testing

/// `deck diff` end to end: copies that agree and differ, text and JSON, exit statuses, refusals.
@Suite("End to end: deck diff", .timed)
struct EndToEndDiffTests {
    @Test func copiesThatAgreeExitZeroAndEditsExitOne() throws {
        let directory = try TemporaryDirectory()
        let original = try e2eSample(in: directory)
        let copy = directory.appending("Copy.deck")
        try FileManager.default.copyItem(atPath: original, toPath: copy)
        let same = try deck("diff", original, copy)
        e2eExpectSuccess(same)
        #expect(same.stdout == "no differences\n")

        e2eExpectSuccess(try deck("update", copy, "Card", "back=hi there", "--where", "front == 'hola'"))
        e2eExpectSuccess(try deck("insert", copy, "Card", "front=perro", "back=dog"))
        let differ = try deck("diff", original, copy)
        #expect(differ.status == 1, "stderr: \(differ.stderr)")
        let lines = differ.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("    back: \"hello\" → \"hi there\""))
        #expect(lines.filter { $0.hasPrefix("+ Card ") }.count == 1)
        #expect(lines.filter { $0.hasPrefix("~ Card ") }.count == 1)
        #expect(lines.last == "2 records differ (- first only, + second only, ~ both, changed)")

        let json = try deck("diff", copy, original, "--json")
        #expect(json.status == 1)
        let object = try #require(
            JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["identical"] as? Bool == false)
        let records = try #require(object["records"] as? [[String: Any]])
        #expect(records.compactMap { $0["only"] as? String } == ["first"])
        let cells = try #require(records.compactMap { $0["cells"] as? [[String: Any]] }.first)
        #expect(
            cells.first?["first"] as? String == "hi there" && cells.first?["second"] as? String == "hello")
    }

    @Test func anotherDocumentAndWrongPathsAreRefused() throws {
        let directory = try TemporaryDirectory()
        let first = try e2eSample(in: directory)
        let second = try e2eSample(in: directory, name: "Other.deck")
        let refused = try deck("diff", first, second)
        #expect(refused.status != 0 && refused.status != 1)
        #expect(refused.stderr.contains("another document") && refused.stderr.contains("--any-document"))
        let asked = try deck("diff", first, second, "--any-document")
        #expect(asked.status == 1, "stderr: \(asked.stderr)")
        let missing = try deck("diff", first, directory.appending("missing.deck"))
        #expect(missing.status == 66 && missing.stderr.contains("no such file"))
    }

    @Test func conflictCopiesAreComparedWithTheStore() throws {
        let directory = try TemporaryDirectory()
        let package = try e2eSample(in: directory)
        let none = try deck("diff", package, "--conflicts")
        e2eExpectSuccess(none)
        #expect(none.stdout == "no conflict copies of the store\n")
        // The other device's version: the store before an edit made here.
        let copy = "store (conflicted copy 2026-12-03 101500).sqlite"
        try FileManager.default.copyItem(atPath: package + "/store.sqlite", toPath: package + "/" + copy)
        e2eExpectSuccess(try deck("update", package, "Card", "back=hi there", "--where", "front == 'hola'"))
        let result = try deck("diff", package, "--conflicts")
        #expect(result.status == 1, "stderr: \(result.stderr)")
        #expect(result.stdout.hasPrefix("== \(copy) (Nextcloud's conflict copy)\n~ Card "))
        #expect(result.stdout.contains("    back: \"hi there\" → \"hello\"\n"))
        let json = try deck("diff", package, "--conflicts", "--json")
        let object = try #require(
            JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let conflicts = try #require(object["conflicts"] as? [[String: Any]])
        #expect(conflicts.map { $0["service"] as? String } == ["Nextcloud"])
        let verify = try deck("verify", package)
        e2eExpectSuccess(verify)
        #expect(verify.stdout.contains("Nextcloud's conflict copy of store.sqlite"))
        let both = try deck("diff", package, package, "--conflicts")
        #expect(both.status == 64)
        let neither = try deck("diff", package)
        #expect(neither.status == 64 && neither.stderr.contains("--conflicts"))
    }

    @Test func archivesAreComparedAsTheirPackages() throws {
        let directory = try TemporaryDirectory()
        let original = try e2eSample(in: directory)
        let archive = directory.appending("Spanish.zip")
        e2eExpectSuccess(try deck("export", original, "-o", archive))
        let copy = directory.appending("Copy.deck")
        try FileManager.default.copyItem(atPath: original, toPath: copy)
        e2eExpectSuccess(try deck("diff", archive, copy))
        e2eExpectSuccess(try deck("insert", copy, "Card", "front=perro", "back=dog"))
        let differ = try deck("diff", copy, archive)
        #expect(differ.status == 1 && differ.stdout.hasPrefix("- Card "), "\(differ.stdout) \(differ.stderr)")
        // Another document's archive: the refusal names the archive, not a staging directory.
        let other = try e2eSample(in: directory, name: "Other.deck")
        let otherArchive = directory.appending("Other.zip")
        e2eExpectSuccess(try deck("export", other, "-o", otherArchive))
        let refused = try deck("diff", original, otherArchive)
        #expect(
            refused.stderr.contains(otherArchive + ": it is another document"),
            "\(refused.stderr)")
        // Something that is neither a package nor an archive.
        let junk = directory.appending("junk.zip")
        try Data("not an archive".utf8).write(to: URL(fileURLWithPath: junk))
        let bad = try deck("diff", original, junk)
        #expect(bad.status != 0 && bad.status != 1 && bad.stderr.contains(junk))
    }
}
