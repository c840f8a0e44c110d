import DeckKit
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Several processes on one document: one writer, many readers, a refused second writer, and a
/// dead writer's lock.
@Suite struct ConcurrencyTests {
    func startWriter(_ url: URL, seed: Int) throws -> Process {
        let child = Process()
        child.executableURL = productsDirectory.appendingPathComponent("deck-crashtest")
        child.arguments = [url.path, String(seed)]
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        return child
    }

    /// Waits until the writer has committed at least once (Stats exists).
    func waitForFirstCommit(_ url: URL) throws {
        // Up to 30 s: under a sanitizer the child starts slowly.
        for _ in 0..<3_000 {
            let store = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? store.close() }
            if try store.read({ try $0.count(RecordQuery("Stats")) }) > 0 { return }
            usleep(10_000)
        }
        Issue.record("the writer never committed")
    }

    @Test func readersSeeOnlyCommittedStatesWhileAWriterWorks() throws {
        let directory = try TemporaryDirectory()
        let url = URL(fileURLWithPath: directory.appending("shared.deck"))
        try PackageStore.create(at: url, contentType: "org.deck.crashtest", schema: crashSchema).close()
        let writer = try startWriter(url, seed: 7)
        defer {
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
        }
        try waitForFirstCommit(url)
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
            #expect(reader.terminationStatus == 0, "reader: \(message)")
        }
        #expect(writer.isRunning, "the writer stopped early; the readers raced nothing")
    }

    @Test func aSecondWriterIsRefusedWithTheHoldersPid() throws {
        let directory = try TemporaryDirectory()
        let url = URL(fileURLWithPath: directory.appending("locked.deck"))
        try PackageStore.create(at: url, contentType: "org.deck.crashtest", schema: crashSchema).close()
        let writer = try startWriter(url, seed: 3)
        defer {
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
        }
        try waitForFirstCommit(url)
        #expect {
            try PackageStore.open(at: url, mode: .readWrite)
        } throws: { error in
            guard case DeckError.locked(_, let pid) = error else { return false }
            return pid == writer.processIdentifier
        }
        let cli = try deck("insert", url.path, "Commit", "sequence=999999")
        #expect(cli.status == 75)
        #expect(cli.stderr.contains("locked by pid \(writer.processIdentifier)"))
        // Readers are not blocked.
        let query = try deck("query", url.path, "Stats", "--count")
        #expect(query.status == 0)
    }

    @Test func aDeadWritersLockDoesNotBlockTheNext() throws {
        let directory = try TemporaryDirectory()
        let url = URL(fileURLWithPath: directory.appending("stale.deck"))
        try PackageStore.create(at: url, contentType: "org.deck.crashtest", schema: crashSchema).close()
        let writer = try startWriter(url, seed: 5)
        try waitForFirstCommit(url)
        kill(writer.processIdentifier, SIGKILL)
        writer.waitUntilExit()
        // The lock file still names the dead pid, but the kernel released the lock with it.
        let lockText = try String(contentsOfFile: url.appendingPathComponent("lock").path, encoding: .utf8)
        #expect(lockText.trimmingCharacters(in: .whitespacesAndNewlines) == String(writer.processIdentifier))
        let next = try PackageStore.open(at: url, mode: .readWrite)
        try next.write { try $0.insert("Commit", ["sequence": .integer(1_000_000)]) }
        try next.close()
        #expect(try PackageVerifier.verify(at: url).isValid)
    }
}
