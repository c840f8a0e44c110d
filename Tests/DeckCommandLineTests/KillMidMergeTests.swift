import DeckStore
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Kills `deck merge` with SIGKILL at random moments: the package merged into is always either
/// as it was or fully merged, and verifies (spec 20.9: one transaction).
@Suite(.timed) struct KillMidMergeTests {
    /// Runs `deck` with `arguments` (and `environment` added to this process's) and kills it
    /// with SIGKILL `delay` microseconds after it started, or lets it end first.
    static func runDeck(_ arguments: [String], killedAfter delay: UInt32, environment: [String: String] = [:])
        throws
    {
        let child = Process()
        child.executableURL = productsDirectory.appendingPathComponent("deck")
        child.arguments = arguments
        child.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        // Not synchronisation: the randomly chosen moment of the kill.
        usleep(delay)
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
    }

    @Test func killedMergeLeavesTheCopyAsItWasOrFullyMerged() throws {
        let directory = try TemporaryDirectory()
        let pristine = try e2eSample(in: directory, name: "Pristine.deck")
        let other = directory.appending("Other.deck")
        try FileManager.default.copyItem(atPath: pristine, toPath: other)
        // Enough changes in the other copy that the merge takes a while: new cards, and edits.
        let store = try PackageStore.open(at: URL(fileURLWithPath: other))
        try store.write { t in
            for index in 0..<3_000 {
                _ = try t.insert(
                    "Card", ["front": .string("card \(index)"), "back": .string("back \(index)")])
            }
            _ = try t.update(
                RecordQuery("Card", where: .property("front").equals(.value(.string("hola")))),
                [
                    "back": .string("hey")
                ])
        }
        try store.close()
        e2eExpectSuccess(try deck("update", pristine, "Card", "back=bye", "--where", "front == 'adiós'"))
        let expected = directory.appending("Expected.deck")
        e2eExpectSuccess(try deck("merge", pristine, other, "-o", expected))

        let rounds = Int(ProcessInfo.processInfo.environment["DECK_CRASH_ROUNDS"] ?? "") ?? 8
        let seed = TestSeed(
            "KillMidMergeTests.killedMergeLeavesTheCopyAsItWasOrFullyMerged", filter: "KillMidMergeTests",
            environment: ["DECK_CRASH_ROUNDS=\(rounds)"])
        var generator = seed.generator()
        var outcomes: [String: Int] = [:]
        for round in 0..<rounds {
            let target = directory.appending("Target-\(round).deck")
            try FileManager.default.copyItem(atPath: pristine, toPath: target)
            let delay = UInt32.random(in: 0...300_000, using: &generator)
            let context = "round \(round) (kill \(delay) µs after start), \(seed)"
            try Self.runDeck(["merge", target, other], killedAfter: delay)

            let report = try PackageVerifier.verify(at: URL(fileURLWithPath: target))
            #expect(
                report.findings.filter { $0.severity == .corruption }.isEmpty,
                "\(context): \(report.findings)")
            // A writer killed while closing may leave the log to fold in: the next writer does.
            try PackageStore.open(at: URL(fileURLWithPath: target)).close()
            let first = try deck("diff", target, pristine)
            let second = try deck("diff", target, expected)
            let asItWas = first.stdout == "no differences\n"
            let merged = second.stdout == "no differences\n"
            #expect(
                asItWas || merged,
                "\(context): neither as it was nor merged: \(first.status) \(first.stderr) \(second.status) \(second.stderr)"
            )
            outcomes[asItWas ? "as it was" : "merged", default: 0] += 1
            // Merging again (after the kill) gives the merged document.
            e2eExpectSuccess(try deck("merge", target, other))
            #expect(try deck("diff", target, expected).stdout == "no differences\n", "\(context)")
            try FileManager.default.removeItem(atPath: target)
        }
        print("KillMidMergeTests: \(outcomes), \(seed)")
    }

    /// The same with a copy at an earlier schema version, migrated in a scratch copy first: a
    /// kill at any moment leaves the later copy as it was or merged, and the scratch copy is gone
    /// once the next merge has run.
    @Test func killedMergeOfAnOlderCopyLeavesTheCopyAsItWasOrFullyMerged() throws {
        let directory = try TemporaryDirectory()
        let (old, _, schema) = try EndToEndMigrationTests.schemas(in: directory) { schema in
            EndToEndMigrationTests.attributes(&schema, of: "Card") { attributes in
                attributes.append(["name": "hint", "type": "string", "optional": true])
            }
        }
        let pristine = directory.appending("Pristine.deck")
        try FileManager.default.copyItem(atPath: old, toPath: pristine)
        e2eExpectSuccess(try deck("migrate", pristine, "--to", schema))
        // The copy both were made from, at the earlier schema: every other round merges with it
        // as the ancestor (a snapshot of it migrated, besides the older copy's), which changes
        // nothing in the result of versioned copies.
        let ancestor = directory.appending("Ancestor.deck")
        try FileManager.default.copyItem(atPath: old, toPath: ancestor)
        let store = try PackageStore.open(at: URL(fileURLWithPath: old))
        try store.write { t in
            for index in 0..<3_000 {
                _ = try t.insert(
                    "Card", ["front": .string("card \(index)"), "back": .string("back \(index)")])
            }
        }
        try store.close()
        let expected = directory.appending("Expected.deck")
        try FileManager.default.copyItem(atPath: pristine, toPath: expected)
        e2eExpectSuccess(try deck("merge", expected, old))
        // The scratch copies go to a directory of the test's own.
        let scratch = directory.appending("tmp")
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false)
        let rounds = Int(ProcessInfo.processInfo.environment["DECK_CRASH_ROUNDS"] ?? "") ?? 8
        let seed = TestSeed(
            "KillMidMergeTests.killedMergeOfAnOlderCopyLeavesTheCopyAsItWasOrFullyMerged",
            filter: "KillMidMergeTests", environment: ["DECK_CRASH_ROUNDS=\(rounds)"])
        var generator = seed.generator()
        var outcomes: [String: Int] = [:]
        for round in 0..<rounds {
            let target = directory.appending("Target-\(round).deck")
            try FileManager.default.copyItem(atPath: pristine, toPath: target)
            let delay = UInt32.random(in: 100_000...500_000, using: &generator)
            let arguments = ["merge", target, old] + (round % 2 == 0 ? ["--ancestor", ancestor] : [])
            let context =
                "round \(round) (kill \(delay) µs after start, \(arguments.count > 3 ? "with" : "without") the ancestor), \(seed)"
            try Self.runDeck(arguments, killedAfter: delay, environment: ["TMPDIR": scratch])
            try PackageStore.open(at: URL(fileURLWithPath: target)).close()
            let report = try PackageVerifier.verify(at: URL(fileURLWithPath: target))
            #expect(
                report.findings.filter { $0.severity == .corruption }.isEmpty,
                "\(context): \(report.findings)")
            let asItWas = try deck("diff", target, pristine).stdout == "no differences\n"
            let merged = try deck("diff", target, expected).stdout == "no differences\n"
            #expect(asItWas || merged, "\(context): neither as it was nor merged")
            outcomes[asItWas ? "as it was" : "merged", default: 0] += 1
            e2eExpectSuccess(try runProduct("deck", arguments, environment: ["TMPDIR": scratch]))
            #expect(try deck("diff", target, expected).stdout == "no differences\n", "\(context)")
            let left = try FileManager.default.contentsOfDirectory(atPath: scratch).filter {
                $0.hasPrefix("deck-merge-")
            }
            #expect(left.isEmpty, "\(context): scratch copies left: \(left)")
            try FileManager.default.removeItem(atPath: target)
        }
        print("KillMidMergeTests (older copy): \(outcomes), \(seed)")
    }
}
