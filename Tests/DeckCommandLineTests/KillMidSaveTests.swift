import DeckKit
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
@Suite struct KillMidSaveTests {
    @Test func killedWriterLosesNothingCommitted() throws {
        let directory = try TemporaryDirectory()
        let url = URL(fileURLWithPath: directory.appending("crash.deck"))
        try PackageStore.create(at: url, contentType: "org.deck.crashtest", schema: crashSchema).close()
        var generator = SystemRandomNumberGenerator()
        let rounds = Int(ProcessInfo.processInfo.environment["DECK_CRASH_ROUNDS"] ?? "") ?? 12
        var lastCommitted: Int64 = 0
        for round in 0..<rounds {
            let child = Process()
            child.executableURL = productsDirectory.appendingPathComponent("deck-crashtest")
            child.arguments = [url.path, String(round + 1)]
            let out = Pipe()
            child.standardOutput = out
            child.standardError = FileHandle.nullDevice
            try child.run()
            // Until something is committed, give a slow (e.g. sanitizer-instrumented) child time.
            usleep(lastCommitted == 0 ? 1_500_000 : UInt32.random(in: 20_000...250_000, using: &generator))
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            for line in printed.split(separator: "\n") where line.hasPrefix("committed ") {
                lastCommitted = max(lastCommitted, Int64(line.dropFirst("committed ".count)) ?? 0)
            }

            let report = try PackageVerifier.verify(at: url)
            let corruption = report.findings.filter { $0.severity == .corruption }
            #expect(corruption.isEmpty, "round \(round): \(corruption)")
            // An archive or imported package that exists is whole (export and import write under
            // temporary names and rename at the end).
            let archive = directory.url.appendingPathComponent("export.zip")
            if FileManager.default.fileExists(atPath: archive.path) {
                #expect(try DeckDocument.verifyArchive(at: archive).isValid, "round \(round): export.zip")
            }
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
            where name.hasPrefix("imported-") {
                let imported = directory.url.appendingPathComponent(name)
                #expect(try PackageVerifier.verify(at: imported).isValid, "round \(round): \(name)")
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
                stored >= lastCommitted, "round \(round): committed \(lastCommitted) but store has \(stored)")
            #expect(
                stored <= lastCommitted + 1,
                "round \(round): store has \(stored), child reported \(lastCommitted)")
            lastCommitted = stored
            // Every card's data is readable and intact.
            try document.read { reader in
                for record in try reader.fetch(RecordQuery("Card")) {
                    if let value = record["image"] { _ = try reader.data(of: value) }
                }
            }
            try document.close()
        }
        #expect(lastCommitted > 0, "the child never committed anything; the test proved nothing")
    }
}
