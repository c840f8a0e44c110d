import DeckKit
import DeckSQLite
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `deck import --from coredata`: the real stores of ../shared/fixtures/coredata, and stores
/// that are not, or are broken.
@Suite("End to end: importing Core Data stores", .timed, CoreDataFixtures.required)
struct EndToEndCoreDataImportTests {
    /// A copy of fixture `folder`'s store in `directory`, as `name`.
    func copy(_ folder: String, to directory: TemporaryDirectory, as name: String = "Blog.sqlite") throws
        -> String
    {
        let path = directory.appending(name)
        try FileManager.default.copyItem(
            at: try CoreDataFixtures.store(folder), to: URL(fileURLWithPath: path))
        return path
    }

    @Test func aRealStoreImportsWithItsReport() throws {
        let directory = try TemporaryDirectory()
        let source = try copy("migration-v3", to: directory)
        let before = e2eSHA256(try Data(contentsOf: URL(fileURLWithPath: source)))
        let package = directory.appending("Blog.deck")

        let result = try deck(
            "import", "--from", "coredata", source, "-o", package, "--content-type", "org.example.blog")
        e2eExpectSuccess(result)
        #expect(
            result.stdout == """
                Imported \(source) as \(package): 26 records of 2 entities, 14 links, 0 blob files (0 bytes)
                  Post: 12
                  Section: 14
                Approximated or left out:
                  Section.index: a 16-bit integer, imported as a 64-bit integer: its range is not enforced

                """)
        #expect(e2eSHA256(try Data(contentsOf: URL(fileURLWithPath: source))) == before)
        e2eExpectSuccess(try deck("verify", package))
        #expect(try deck("query", package, "Section", "--count").stdout == "14\n")
        let inspect = try e2eJSONObject(try deck("inspect", package, "--json").stdout)
        #expect(inspect["contentType"] as? String == "org.example.blog")
    }

    @Test func theJSONReportListsEntitiesAndNotes() throws {
        let directory = try TemporaryDirectory()
        let source = try copy("migration-v3", to: directory)
        let result = try deck(
            "import", "--from", "coredata", source, "-o", directory.appending("B.deck"), "--json")
        e2eExpectSuccess(result)
        let json = try e2eJSONObject(result.stdout)
        #expect(json["records"] as? Int == 26)
        #expect(json["links"] as? Int == 14)
        #expect((json["package"] as? String)?.hasSuffix("/B.deck") == true)
        let entities = try #require(json["entities"] as? [[String: Any]])
        #expect(entities.map { "\($0["name"] ?? ""):\($0["records"] ?? "")" } == ["Post:12", "Section:14"])
        let notes = try #require(json["notes"] as? [[String: Any]])
        #expect(notes.first?["property"] as? String == "index")
    }

    @Test func everyRenameVersionCarriesItsRename() throws {
        let directory = try TemporaryDirectory()
        for version in ["1.0.0", "1.1.0", "1.1.2", "1.2.0", "2.0.0"] {
            let source = try copy("rename-v\(version)", to: directory, as: "v\(version).sqlite")
            let package = directory.appending("v\(version).deck")
            e2eExpectSuccess(try deck("import", "--from", "coredata", source, "-o", package, "--quiet"))
            e2eExpectSuccess(try deck("verify", package))
        }
    }

    @Test func badSourcesFailClearlyAndLeaveNothing() throws {
        let directory = try TemporaryDirectory()
        let text = directory.appending("notes.txt")
        try Data("plain text".utf8).write(to: URL(fileURLWithPath: text))
        e2eExpectFailure(
            try deck("import", "--from", "coredata", text, "-o", directory.appending("T.deck")), status: 65,
            "\(text): cannot be imported: ", "not a SQLite database")
        e2eExpectFailure(
            try deck("import", "--from", "coredata", directory.appending("absent.sqlite")), status: 66,
            "absent.sqlite")

        // A row whose entity number is no entity of its table.
        let broken = try copy("migration-v3", to: directory, as: "Broken.sqlite")
        let database = try Database(path: broken, mode: .readWrite)
        try database.run("UPDATE ZPOST SET Z_ENT = 99 WHERE Z_PK = 1")
        database.close()
        e2eExpectFailure(
            try deck("import", "--from", "coredata", broken, "-o", directory.appending("Broken.deck")),
            status: 65,
            "\(broken): cannot be imported: ", "Z_ENT 99")

        // The destination exists: refused, untouched.
        let source = try copy("migration-v1", to: directory)
        let existing = directory.appending("Existing.deck")
        try FileManager.default.createDirectory(atPath: existing, withIntermediateDirectories: false)
        e2eExpectFailure(
            try deck("import", "--from", "coredata", source, "-o", existing), status: 73, "already exists")
        #expect(try FileManager.default.contentsOfDirectory(atPath: existing) == [])
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [
                "Blog.sqlite", "Broken.sqlite", "Existing.deck", "notes.txt",
            ])
    }

    #if DEBUG
        /// Paused after its first staging item (the store's private copy, in `TMPDIR`) or its
        /// second (the package being built, beside the destination), then signalled: nothing
        /// is left in either place, and the store is unchanged.
        @Test(arguments: [(1, SIGTERM), (2, SIGINT), (2, SIGHUP)])
        func anInterruptedImportLeavesNothing(pauseAt: Int, signal: Int32) throws {
            let directory = try TemporaryDirectory()
            let temporary = try TemporaryDirectory()
            let source = try copy("migration-v3", to: directory)
            let before = e2eSHA256(try Data(contentsOf: URL(fileURLWithPath: source)))
            let package = directory.appending("Blog.deck")
            let paused = try PausedDeck(
                ["import", "--from", "coredata", source, "-o", package], pauseAt: pauseAt,
                environment: ["TMPDIR": temporary.path])
            let place = pauseAt == 1 ? temporary.path + "/deck-coredata-" : directory.path + "/.Blog.deck."
            #expect(paused.staged.hasPrefix(place), "\(paused.staged)")
            let (reason, status) = paused.end(with: signal)
            #expect(reason == .uncaughtSignal && status == signal)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["Blog.sqlite"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path) == [])
            #expect(e2eSHA256(try Data(contentsOf: URL(fileURLWithPath: source))) == before)
        }

        @Test func aKilledImportLeavesStaleItemsThatTheNextImportRemoves() throws {
            let directory = try TemporaryDirectory()
            let temporary = try TemporaryDirectory()
            let source = try copy("migration-v3", to: directory)
            let package = directory.appending("Blog.deck")
            let paused = try PausedDeck(
                ["import", "--from", "coredata", source, "-o", package], pauseAt: 2,
                environment: ["TMPDIR": temporary.path])
            let (reason, status) = paused.end(with: SIGKILL)
            #expect(reason == .uncaughtSignal && status == SIGKILL)
            // The private copy and the half-built package stay behind, neither named Blog.deck...
            #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).count == 1)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).count == 2)
            #expect(!FileManager.default.fileExists(atPath: package))
            // ...until the next import, which finds them unlocked.
            let result = try e2eDeck(
                ["import", "--from", "coredata", source, "-o", package, "--json"],
                environment: ["TMPDIR": temporary.path])
            e2eExpectSuccess(result)
            #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path) == [])
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [
                    "Blog.deck", "Blog.sqlite",
                ])
            e2eExpectSuccess(try deck("verify", package))
        }
    #endif

    @Test func usageMistakesAreNamed() throws {
        let directory = try TemporaryDirectory()
        let source = try copy("migration-v1", to: directory)
        e2eExpectUsageError(try deck("import", source), command: "deck import", "--from coredata")
        e2eExpectUsageError(
            try deck("import", "--from", "coredata", source, "--content-type", "has space"),
            command: "deck import", "invalid content type")
        e2eExpectUsageError(
            try deck("import", "x.zip", "--content-type", "org.example.x"), command: "deck import",
            "--content-type")
        e2eExpectUsageError(try deck("import", "--from", "mdb", source), command: "deck import", "mdb")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["Blog.sqlite"])
    }
}

extension CoreDataFixtures {
    /// Skips a suite, saying why, when the folder is absent.
    static var required: ConditionTrait { .enabled(if: directory != nil, Comment(rawValue: absent)) }
}
