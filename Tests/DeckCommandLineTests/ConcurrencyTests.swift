import DeckKit
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Several processes on one document: one writer, many readers, a refused second writer, and a
/// dead writer's lock.
@Suite(.timed) struct ConcurrencyTests {
    /// A running `deck-crashtest` writer and the lines it prints ("committed N" after each save).
    struct Writer {
        let process: Process
        let output: LineWatcher

        func stop() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Starts a writer on `url` whose operations follow from the test's seed.
    func startWriter(_ url: URL, seed: TestSeed) throws -> Writer {
        let child = Process()
        child.executableURL = productsDirectory.appendingPathComponent("deck-crashtest")
        child.arguments = [url.path, String(seed.value)]
        let out = Pipe()
        child.standardOutput = out
        child.standardError = FileHandle.nullDevice
        try child.run()
        return Writer(process: child, output: LineWatcher(out.fileHandleForReading))
    }

    /// Waits until the writer has reported its first commit. The timeout only catches a hang (a
    /// sanitizer-instrumented child on a loaded machine is slow); it is not a timing assertion.
    func waitForFirstCommit(_ writer: Writer, _ seed: TestSeed) throws {
        let committed = writer.output.wait(timeout: 300) { $0.hasPrefix("committed ") }
        try #require(committed, "the writer never committed: \(writer.output.text) (\(seed))")
    }

    @Test func readersSeeOnlyCommittedStatesWhileAWriterWorks() throws {
        let directory = try TemporaryDirectory()
        let url = URL(fileURLWithPath: directory.appending("shared.deck"))
        try PackageStore.create(at: url, contentType: "org.deck.crashtest", schema: crashSchema).close()
        let seed = TestSeed("ConcurrencyTests.readers", filter: "ConcurrencyTests")
        let writer = try startWriter(url, seed: seed)
        defer { writer.stop() }
        try waitForFirstCommit(writer, seed)
        // Three reader processes at once, each checking 150 snapshots against the writer's Stats.
        let readers = try (0..<3).map { _ in
            let reader = Process()
            reader.executableURL = productsDirectory.appendingPathComponent("deck-crashtest")
            reader.arguments = [url.path, "0", "--read", "150"]
            let err = Pipe()
            reader.standardError = err
            reader.standardOutput = FileHandle.nullDevice
            try reader.run()
            return (reader, err)
        }
        for (reader, err) in readers {
            let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            reader.waitUntilExit()
            #expect(reader.terminationStatus == 0, "reader: \(message) (\(seed))")
        }
        #expect(writer.process.isRunning, "the writer stopped early; the readers raced nothing (\(seed))")
    }

    @Test func aSecondWriterIsRefusedWithTheHoldersPid() throws {
        let directory = try TemporaryDirectory()
        let url = URL(fileURLWithPath: directory.appending("locked.deck"))
        try PackageStore.create(at: url, contentType: "org.deck.crashtest", schema: crashSchema).close()
        let seed = TestSeed("ConcurrencyTests.secondWriter", filter: "ConcurrencyTests")
        let writer = try startWriter(url, seed: seed)
        defer { writer.stop() }
        try waitForFirstCommit(writer, seed)
        #expect {
            try PackageStore.open(at: url, mode: .readWrite)
        } throws: { error in
            guard case DeckError.locked(_, let pid) = error else { return false }
            return pid == writer.process.processIdentifier
        }
        let cli = try deck("insert", url.path, "Commit", "sequence=999999")
        #expect(cli.status == 75)
        #expect(cli.stderr.contains("locked by pid \(writer.process.processIdentifier)"))
        // Readers are not blocked.
        let query = try deck("query", url.path, "Stats", "--count")
        #expect(query.status == 0)
    }

    @Test func aDeadWritersLockDoesNotBlockTheNext() throws {
        let directory = try TemporaryDirectory()
        let url = URL(fileURLWithPath: directory.appending("stale.deck"))
        try PackageStore.create(at: url, contentType: "org.deck.crashtest", schema: crashSchema).close()
        let seed = TestSeed("ConcurrencyTests.deadWriter", filter: "ConcurrencyTests")
        let writer = try startWriter(url, seed: seed)
        try waitForFirstCommit(writer, seed)
        writer.stop()
        // The lock file still names the dead pid, but the kernel released the lock with it.
        let lockText = try String(contentsOfFile: url.appendingPathComponent("lock").path, encoding: .utf8)
        #expect(
            lockText.trimmingCharacters(in: .whitespacesAndNewlines)
                == String(writer.process.processIdentifier))
        let next = try PackageStore.open(at: url, mode: .readWrite)
        try next.write { try $0.insert("Commit", ["sequence": .integer(1_000_000)]) }
        try next.close()
        #expect(try PackageVerifier.verify(at: url).isValid)
    }

    /// The model of the create race (`deck-crashtest --create-race` declares the same).
    final class RaceNote: ModelObject {
        @DeckKit.Attribute var title = ""
        required init() {}
    }

    /// Two processes create one new document at once (issue 21, item 6): each opens the one
    /// that now exists or finds it locked by the other; neither is told it "already exists" and
    /// to remove it, which would delete the other's document.
    @Test func twoProcessesCreatingOneDocumentEachOpenItOrFindItLocked() throws {
        let directory = try TemporaryDirectory()
        let child = Process()
        child.executableURL = productsDirectory.appendingPathComponent("deck-crashtest")
        child.arguments = [directory.path, "0", "--create-race"]
        let input = Pipe()
        let out = Pipe()
        child.standardInput = input
        child.standardOutput = out
        child.standardError = FileHandle.nullDevice
        try child.run()
        let output = LineWatcher(out.fileHandleForReading)
        defer {
            try? input.fileHandleForWriting.close()
            child.waitUntilExit()
        }
        var opened = 0
        for round in 0..<30 {
            let url = URL(fileURLWithPath: directory.appending("race-\(round).deck"))
            input.fileHandleForWriting.write(Data("go \(round)\n".utf8))
            var container: ModelContainer?
            var mine = "opened"
            do {
                container = try ModelContainer(
                    for: RaceNote.self, configurations: ModelConfiguration(url: url))
            } catch .locked {
                mine = "locked"
            } catch {
                mine = "failed: \(error)"
            }
            let answered = output.wait(timeout: 300) {
                $0.hasSuffix(" \(round)") || $0.contains(" \(round): ")
            }
            try #require(answered, "round \(round): the child did not answer: \(output.text)")
            let theirs = output.text.last { $0.hasSuffix(" \(round)") || $0.contains(" \(round): ") } ?? ""
            #expect(mine == "opened" || mine == "locked", "round \(round), this process: \(mine)")
            #expect(
                theirs == "opened \(round)" || theirs == "locked \(round)",
                "round \(round), the child: \(theirs)")
            if mine == "opened" || theirs == "opened \(round)" { opened += 1 }
            container = nil
            _ = container
        }
        #expect(opened == 30)
    }
}
