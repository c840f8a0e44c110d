import DeckKit
import DeckSQLite
import DeckStore
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The schema `deck-crashtest` works on.
let crashSchema = StoreSchema(entities: [
    StoreSchema.Entity(
        "Card",
        attributes: [
            StoreSchema.Attribute("front", .string),
            StoreSchema.Attribute(
                "image", .data, isOptional: true, options: [.externalStorage], externalThreshold: 4_096),
            StoreSchema.Attribute("batch", .integer),
        ]),
    StoreSchema.Entity(
        "Commit", attributes: [StoreSchema.Attribute("sequence", .integer, options: [.unique])]),
    StoreSchema.Entity(
        "Stats",
        attributes: [
            StoreSchema.Attribute("key", .integer, options: [.unique]),
            StoreSchema.Attribute("cards", .integer),
            StoreSchema.Attribute("sequence", .integer),
        ]),
])

/// Kills a writer with SIGKILL at random moments and checks that the package always verifies
/// and keeps every batch the writer reported as committed (DESIGN.md's first invariant).
///
/// One seed (``TestSeed``: `DECK_TEST_SEED`, or drawn and printed) decides every random choice:
/// each child's seed (its operations and data) and each kill moment (after how many reported
/// commits, then how long after). Every failure message names it with the command that replays
/// the same choices; where in the child's work a kill lands still depends on the machine's speed.
@Suite(.timed) struct KillMidSaveTests {
    /// How long a child may take to report a commit (a sanitizer-instrumented child on a loaded
    /// machine is slow). Only a hang reaches it; it is not a timing assertion.
    static let commitTimeout: TimeInterval = 300

    @Test func killedWriterLosesNothingCommitted() throws {
        let directory = try TemporaryDirectory()
        let url = URL(fileURLWithPath: directory.appending("crash.deck"))
        try PackageStore.create(at: url, contentType: "org.deck.crashtest", schema: crashSchema).close()
        let rounds = Int(ProcessInfo.processInfo.environment["DECK_CRASH_ROUNDS"] ?? "") ?? 12
        let seed = TestSeed(
            "KillMidSaveTests.killedWriterLosesNothingCommitted", filter: "KillMidSaveTests",
            environment: ["DECK_CRASH_ROUNDS=\(rounds)"])
        print("KillMidSaveTests: \(rounds) kills, \(seed)")
        var generator = seed.generator()
        var lastCommitted: Int64 = 0
        for round in 0..<rounds {
            let childSeed = generator.next()
            // The kill moment: once the child has reported `commits` saves of this run (the first
            // round waits for one, so that there is always something to lose), `delay` later.
            let commits = round == 0 ? 1 : Int.random(in: 0...1, using: &generator)
            let delay = UInt32.random(in: 0...250_000, using: &generator)
            let context =
                "round \(round) (child seed \(childSeed), kill \(delay) µs after commit \(commits)), \(seed)"

            let child = Process()
            child.executableURL = productsDirectory.appendingPathComponent("deck-crashtest")
            child.arguments = [url.path, String(childSeed)]
            let out = Pipe()
            child.standardOutput = out
            // What the child says when it fails goes into the test's message.
            let errorLog = directory.url.appendingPathComponent("child-\(round).stderr")
            _ = FileManager.default.createFile(atPath: errorLog.path, contents: nil)
            child.standardError = try FileHandle(forWritingTo: errorLog)
            try child.run()
            let output = LineWatcher(out.fileHandleForReading)
            let reached =
                commits == 0
                || output.wait(forLines: commits, timeout: Self.commitTimeout) { $0.hasPrefix("committed ") }
            if reached {
                // Not synchronisation: the randomly chosen moment of the kill.
                usleep(delay)
            }
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            let (printed, ended) = output.waitForEnd(timeout: Self.commitTimeout)
            #expect(ended, "\(context): the child's output never ended")
            guard reached else {
                let why =
                    "it exited with \(child.terminationStatus), or took over \(Int(Self.commitTimeout)) s"
                let said = (try? String(contentsOf: errorLog, encoding: .utf8)) ?? ""
                Issue.record("\(context): the child reported no commit (\(why)): \(printed); stderr: \(said)")
                break
            }
            for line in printed where line.hasPrefix("committed ") {
                lastCommitted = max(lastCommitted, Int64(line.dropFirst("committed ".count)) ?? 0)
            }

            let report = try PackageVerifier.verify(at: url)
            let corruption = report.findings.filter { $0.severity == .corruption }
            #expect(corruption.isEmpty, "\(context): \(corruption)")
            // An archive or imported package that exists is whole (export and import write under
            // temporary names and rename at the end).
            let archive = directory.url.appendingPathComponent("export.zip")
            if FileManager.default.fileExists(atPath: archive.path) {
                #expect(try DeckDocument.verifyArchive(at: archive).isValid, "\(context): export.zip")
            }
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
            where name.hasPrefix("imported-") {
                let imported = directory.url.appendingPathComponent(name)
                #expect(try PackageVerifier.verify(at: imported).isValid, "\(context): \(name)")
                try FileManager.default.removeItem(at: imported)
            }

            let document = try PackageStore.open(at: url, mode: .readOnly)
            let newest = try document.read {
                try $0.fetch(
                    RecordQuery("Commit", sort: [SortKey("sequence", ascending: false)], limit: 1))
            }
            let stored: Int64 = if case .integer(let n)? = newest.first?["sequence"] { n } else { 0 }
            // Every reported commit survives; at most the batch in flight may also have committed.
            #expect(
                stored >= lastCommitted, "\(context): committed \(lastCommitted) but store has \(stored)")
            #expect(
                stored <= lastCommitted + 1,
                "\(context): store has \(stored), child reported \(lastCommitted)")
            lastCommitted = stored
            // Every card's data is readable and intact.
            try document.read { reader in
                for record in try reader.fetch(RecordQuery("Card")) {
                    if let value = record["image"] { _ = try reader.data(of: value) }
                }
            }
            try document.close()
        }
        #expect(lastCommitted > 0, "the child never committed anything; the test proved nothing (\(seed))")
    }

    /// Kills a writer at random moments while it upgrades a version 1 or 2 package to the current
    /// version (the manifest first, then the store in one transaction): whatever the moment, the
    /// package is of the old version, an interrupted upgrade (the current manifest over an old
    /// store) or of the current version,
    /// it verifies, it holds every record, and the next writer finishes the upgrade.
    @Test(arguments: [1, 2])
    func killedUpgradeLeavesTheOldVersionOrVersion3(from version: Int) throws {
        let seed = TestSeed("killedUpgradeLeavesTheOldVersionOrVersion3", filter: "killedUpgrade")
        print("killedUpgradeLeavesTheOldVersionOrVersion3: \(seed)")
        var generator = seed.generator()
        let directory = try TemporaryDirectory()
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/v\(version)/Flashcards.flashcards")
        // The fixture, made big enough that an upgrade takes a while: its tables written by hand,
        // as the old version lays them out.
        let original = directory.url.appendingPathComponent("original.flashcards")
        try FileManager.default.copyItem(at: fixture, to: original)
        let db = try Database(path: original.path + "/store.sqlite", mode: .readWrite)
        let gid = version >= 2 ? (column: ", _gid", value: ", randomblob(16)") : (column: "", value: "")
        try db.execute(
            """
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
            INSERT INTO "Tag"(_entity, name\(gid.column)) SELECT 'Tag', 'tag ' || i\(gid.value) FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
            INSERT INTO "Card"(_entity, front, back, creationDate, reviewCount, deck\(gid.column))
                SELECT 'Card', 'front ' || i, 'back ' || i, 1795996800.0 + i, 0, 1\(gid.value) FROM n;
            INSERT INTO "Card.tags"(source, target)
                SELECT c._pk, t._pk FROM "Card" c JOIN "Tag" t ON t._pk = c._pk WHERE c._pk > 100;
            -- Legacy values (spec 7.7), which earlier Decks wrote: no kill makes them corruption.
            UPDATE "Card" SET creationDate = 9e999 WHERE _pk = 150;
            UPDATE "Card" SET creationDate = -9e999 WHERE _pk = 151;
            COMMIT;
            """)
        db.close()
        func counts(_ url: URL) throws -> [Int] {
            let store = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? store.close() }
            return try store.read { reader in
                try ["Card", "Tag", "Deck"].map { try reader.count(RecordQuery($0)) }
                    + [try reader.related("Card", id: 200, "tags").count]
            }
        }
        let expected = try counts(original)
        let current = PackageStore.formatVersion
        // How long a whole upgrade takes here (no assertion on it: it only sets the kill window).
        let timed = directory.url.appendingPathComponent("timed.flashcards")
        try FileManager.default.copyItem(at: original, to: timed)
        let start = Date()
        #expect(try runChild(timed, killAfter: nil) == "upgraded \(PackageStore.formatVersion)")
        let window = max(0.05, Date().timeIntervalSince(start))
        var seen: Set<String> = []
        let rounds = Int(ProcessInfo.processInfo.environment["DECK_CRASH_ROUNDS"] ?? "") ?? 8
        for round in 0..<rounds {
            let url = directory.url.appendingPathComponent("round-\(round).flashcards")
            try FileManager.default.copyItem(at: original, to: url)
            let delay = Double.random(in: 0...window, using: &generator)
            _ = try runChild(url, killAfter: delay)
            let report = try PackageVerifier.verify(at: url)
            // A kill while the opening writer switched the store from rollback to WAL mode (before
            // any upgrade step) leaves a hot rollback journal, which only a writer may roll back
            // (spec: section 11.2): readers refuse it until then, and verify says it needs
            // recovery, never that it is corrupt. That is the open's, not the upgrade's, and the
            // next writer below recovers it.
            // A kill in the switch back from WAL mode at close can also leave a store whose log
            // files SQLite removed before it rewrote the header: a writer's recovery too.
            let hotJournal = report.needsRecovery && report.findings.map(\.code) == ["store-needs-recovery"]
            let state =
                hotJournal
                ? FileManager.default.fileExists(atPath: url.path + "/store.sqlite-journal")
                    ? "hot journal (switch to WAL)" : "log files missing (switch back from WAL)"
                : "manifest \(report.manifestFormatVersion ?? 0), store \(report.formatVersion ?? 0)"
            seen.insert(state)
            if !hotJournal {
                #expect(report.isValid, "seed \(seed) round \(round): \(report.findings)")
                #expect(
                    [
                        "manifest \(version), store \(version)", "manifest \(current), store \(version)",
                        "manifest \(current), store \(current)",
                    ].contains(state),
                    "seed \(seed) round \(round): \(state)")
                #expect(try counts(url) == expected, "seed \(seed) round \(round)")
            }
            // The next writer finishes what the killed one began.
            #expect(try runChild(url, killAfter: nil) == "upgraded \(PackageStore.formatVersion)")
            let after = try PackageVerifier.verify(at: url)
            #expect(
                after.isValid && after.formatVersion == current,
                "seed \(seed) round \(round): \(after.findings)")
            #expect(try counts(url) == expected, "seed \(seed) round \(round)")
            try FileManager.default.removeItem(at: url)
        }
        print("killedUpgradeLeavesTheOldVersionOrVersion3: states seen: \(seen.sorted())")
    }

    /// Kills a writer at random moments while it migrates a package to a schema that renames one
    /// attribute and adds another (so the card table is rebuilt, in one transaction): whatever
    /// the moment, the package holds the old schema or the new one, it verifies, it holds every
    /// record and value, and a next run migrates it.
    @Test func killedMigrationLeavesTheOldOrTheNewSchema() throws {
        let seed = TestSeed("killedMigrationLeavesTheOldOrTheNewSchema", filter: "killedMigration")
        print("killedMigrationLeavesTheOldOrTheNewSchema: \(seed)")
        var generator = seed.generator()
        let directory = try TemporaryDirectory()
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/v2/Flashcards.flashcards")
        let original = directory.url.appendingPathComponent("original.flashcards")
        try FileManager.default.copyItem(at: fixture, to: original)
        #expect(try runChild(original, killAfter: nil) == "upgraded \(PackageStore.formatVersion)")
        let db = try Database(path: original.path + "/store.sqlite", mode: .readWrite)
        try db.execute(
            """
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
            INSERT INTO "Card"(_entity, front, back, creationDate, reviewCount, deck, _gid)
                SELECT 'Card', 'front ' || i, 'back ' || i, 1795996800.0 + i, 0, 1, randomblob(16) FROM n;
            COMMIT;
            """)
        db.close()
        let old = try PackageStore.open(at: original, mode: .readOnly)
        let oldSchema = old.schema
        try old.close()
        var newSchema = oldSchema
        newSchema.version = "2.0.0"
        guard let card = newSchema.entities.firstIndex(where: { $0.name == "Card" }),
            let back = newSchema.entities[card].attributes.firstIndex(where: { $0.name == "back" })
        else {
            Issue.record("the fixture has no Card.back")
            return
        }
        newSchema.entities[card].attributes[back].name = "answer"
        newSchema.entities[card].attributes[back].originalName = "back"
        newSchema.entities[card].attributes.append(.init("hint", .string, isOptional: true))
        let schemaFile = directory.url.appendingPathComponent("v2.json")
        try JSONEncoder().encode(newSchema).write(to: schemaFile)
        /// Counts, and the text of the back (or answer) of every card.
        func content(_ url: URL) throws -> (fingerprint: String, counts: [Int], backs: [String]) {
            let store = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? store.close() }
            let name = store.schema.fingerprint == newSchema.fingerprint ? "answer" : "back"
            return try store.read { reader in
                let counts = try ["Card", "Tag", "Deck"].map { try reader.count(RecordQuery($0)) }
                let backs = try reader.fetch(RecordQuery("Card")).map { $0[name]?.description ?? "" }
                return (store.schema.fingerprint, counts, backs)
            }
        }
        let expected = try content(original)
        let timed = directory.url.appendingPathComponent("timed.flashcards")
        try FileManager.default.copyItem(at: original, to: timed)
        let start = Date()
        #expect(
            try runChild(timed, killAfter: nil, mode: ["--migrate", schemaFile.path]) == "migrated 2.0.0")
        let window = max(0.05, Date().timeIntervalSince(start))
        var seen: Set<String> = []
        let rounds = Int(ProcessInfo.processInfo.environment["DECK_CRASH_ROUNDS"] ?? "") ?? 8
        for round in 0..<rounds {
            let url = directory.url.appendingPathComponent("round-\(round).flashcards")
            try FileManager.default.copyItem(at: original, to: url)
            let delay = Double.random(in: 0...window, using: &generator)
            _ = try runChild(url, killAfter: delay, mode: ["--migrate", schemaFile.path])
            // A writer that died leaves a log that only a writer recovers (as in the upgrade test).
            // A kill in the switch to or from WAL mode leaves a hot journal, or a store whose log
            // files SQLite removed before it rewrote the header: both need a writer's recovery.
            let needsRecovery = try PackageVerifier.verify(at: url).needsRecovery
            let hotJournal =
                FileManager.default.fileExists(atPath: url.path + "/store.sqlite-journal") || needsRecovery
            if !hotJournal {
                let report = try PackageVerifier.verify(at: url)
                #expect(report.isValid, "seed \(seed) round \(round): \(report.findings)")
                let now = try content(url)
                seen.insert(now.fingerprint == newSchema.fingerprint ? "new" : "old")
                #expect([oldSchema.fingerprint, newSchema.fingerprint].contains(now.fingerprint))
                #expect(
                    now.counts == expected.counts && now.backs == expected.backs,
                    "seed \(seed) round \(round)")
            } else {
                let report = try PackageVerifier.verify(at: url)
                #expect(
                    report.isValid || report.needsRecovery, "seed \(seed) round \(round): \(report.findings)")
                seen.insert("hot journal")
            }
            let finished = try runChild(url, killAfter: nil, mode: ["--migrate", schemaFile.path])
            #expect(finished == "migrated 2.0.0", "seed \(seed) round \(round): \(finished)")
            let after = try PackageVerifier.verify(at: url)
            #expect(after.isValid, "seed \(seed) round \(round): \(after.findings)")
            let final = try content(url)
            #expect(final.fingerprint == newSchema.fingerprint && final.backs == expected.backs)
            try FileManager.default.removeItem(at: url)
        }
        print("killedMigrationLeavesTheOldOrTheNewSchema: states seen: \(seen.sorted())")
    }

    /// Runs `deck-crashtest URL 1 --upgrade`, killed with SIGKILL after `killAfter` seconds (or
    /// run to its end); returns what it printed.
    private func runChild(_ url: URL, killAfter: Double?, mode: [String] = ["--upgrade"]) throws -> String {
        let child = Process()
        child.executableURL = productsDirectory.appendingPathComponent("deck-crashtest")
        child.arguments = [url.path, "1"] + mode
        let out = Pipe()
        child.standardOutput = out
        child.standardError = FileHandle.nullDevice
        try child.run()
        if let killAfter {
            usleep(UInt32(killAfter * 1_000_000))
            kill(child.processIdentifier, SIGKILL)
        }
        child.waitUntilExit()
        return String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
