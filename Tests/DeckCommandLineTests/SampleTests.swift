import DeckTestTiming
import Foundation
import Testing

/// samples/Vocabulary.flashcards is what the code makes (`Scripts/make-sample --check`, run here so
/// that CI fails on a stale sample), and the check itself notices what it must notice.
@Suite("The bundled sample", .timed)
struct SampleTests {
    var script: String { e2eRepositoryRoot.appendingPathComponent("Scripts/make-sample").path }
    var sample: String { e2eRepositoryRoot.appendingPathComponent("samples/Vocabulary.flashcards").path }

    /// Runs `Scripts/make-sample --check` with the built deck, on `sample` (the checked-in one by
    /// default).
    func check(_ sample: String? = nil) throws -> RunResult {
        var environment = ["DECK": productsDirectory.appendingPathComponent("deck").path]
        if let sample { environment["SAMPLE"] = sample }
        return try runTool("bash", [script, "--check"], environment: environment)
    }

    /// A copy of the checked-in sample in `directory`.
    func copyOfTheSample(in directory: TemporaryDirectory) throws -> String {
        let copy = directory.appending("Vocabulary.flashcards")
        try FileManager.default.copyItem(atPath: sample, toPath: copy)
        return copy
    }

    @Test func theCheckedInSampleIsFreshAndVerifiesWithNoFinding() throws {
        let before = try FileManager.default.subpathsOfDirectory(atPath: sample).sorted()
        let result = try check()
        #expect(
            result.status == 0,
            "samples/Vocabulary.flashcards is stale: run Scripts/make-sample\n\(result.stdout)\(result.stderr)"
        )
        #expect(result.stdout.contains("is up to date"))
        // Checking writes nothing into the repository (no lock, tmp/ or -shm).
        #expect(try FileManager.default.subpathsOfDirectory(atPath: sample).sorted() == before)
    }

    @Test func theCheckIgnoresOnlyTheTimesAndTheGenerator() throws {
        let directory = try TemporaryDirectory()
        let copy = try copyOfTheSample(in: directory)
        let update = try runTool(
            "sqlite3",
            [
                copy + "/store.sqlite",
                "UPDATE deck_meta SET value = '2000-01-01T00:00:00.000Z' WHERE key IN ('created', 'modified')",
            ])
        try #require(update.status == 0, "\(update.stderr)")
        let manifest = copy + "/manifest.json"
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        try #require(text.contains("\"generator\" : \"DeckKit "))
        try text.replacingOccurrences(of: "\"generator\" : \"DeckKit ", with: "\"generator\" : \"DeckKit 99.")
            .write(toFile: manifest, atomically: true, encoding: .utf8)
        let result = try check(copy)
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func aChangedRecordFailsTheCheck() throws {
        let directory = try TemporaryDirectory()
        let copy = try copyOfTheSample(in: directory)
        e2eExpectSuccess(try deck("update", copy, "Card", "--where", "front = hola", "back=hi"))
        let result = try check(copy)
        #expect(result.status == 1)
        #expect(result.stderr.contains("differs from what FlashcardsSample makes"), "\(result.stderr)")
        #expect(result.stderr.contains("'hola','hi'"), "the diff shows the row: \(result.stderr)")
    }

    @Test func aChangedBlobFileFailsTheCheck() throws {
        let directory = try TemporaryDirectory()
        let copy = try copyOfTheSample(in: directory)
        // A well-named extra blob: verify calls it untidy (an orphan).
        try e2eWriteOrphanBlob(copy, Data("extra".utf8))
        let result = try check(copy)
        #expect(result.status == 1)
        #expect(result.stderr.contains("verifies with findings"), "\(result.stderr)")
    }

    @Test func anUntidyLeftoverFailsTheCheck() throws {
        let directory = try TemporaryDirectory()
        let copy = try copyOfTheSample(in: directory)
        try FileManager.default.createDirectory(atPath: copy + "/tmp", withIntermediateDirectories: false)
        try Data("partial".utf8).write(to: URL(fileURLWithPath: copy + "/tmp/blob-1.part"))
        let result = try check(copy)
        #expect(result.status == 1)
        #expect(result.stderr.contains("untidy"), "\(result.stderr)")
    }
}
