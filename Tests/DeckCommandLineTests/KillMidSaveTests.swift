import DeckKit
import DeckTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The schema `deck-crashtest` works on.
let crashSchema = StoreSchema(entities: [
    Entity(
        "Card",
        attributes: [
            Attribute("front", .string),
            Attribute(
                "image", .data, isOptional: true, options: [.externalStorage], externalThreshold: 4_096),
            Attribute("batch", .integer),
        ]),
    Entity("Commit", attributes: [Attribute("sequence", .integer, options: [.unique])]),
    Entity(
        "Stats",
        attributes: [
            Attribute("key", .integer, options: [.unique]), Attribute("cards", .integer),
            Attribute("sequence", .integer),
        ]),
])

/// Kills a writer with SIGKILL at random moments and checks that the package always verifies
/// and keeps every batch the writer reported as committed (DESIGN.md's first invariant).
///
/// One seed (``TestSeed``: `DECK_TEST_SEED`, or drawn and printed) decides every random choice:
/// each child's seed (its operations and data) and each kill moment (after how many reported
/// commits, then how long after). Every failure message names it with the command that replays
/// the same choices; where in the child's work a kill lands still depends on the machine's speed.
@Suite struct KillMidSaveTests {
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
            child.standardError = FileHandle.nullDevice
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
                Issue.record("\(context): the child reported no commit (\(why)): \(printed)")
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
}
