import DeckKit
import DeckSQLite
import DeckTestTiming
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the built `deck`, killing it if it has not finished after two minutes (a command that
/// blocks on a FIFO would otherwise stop the run); records an issue then. A guard against
/// hanging, not a timing assertion.
func e2eDeckWithoutHanging(_ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation) throws
    -> RunResult
{
    let process = Process()
    process.executableURL = productsDirectory.appendingPathComponent("deck")
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let killed = Atomic<Bool>(false)
    let watchdog = DispatchWorkItem {
        killed.store(true, ordering: .relaxed)
        kill(process.processIdentifier, SIGKILL)
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + 120, execute: watchdog)
    let errData = Locked(Data())
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async {
        let data = err.fileHandleForReading.readDataToEndOfFile()
        errData.withLock { $0 = data }
        group.leave()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    watchdog.cancel()
    if killed.load(ordering: .relaxed) {
        Issue.record("deck \(arguments.joined(separator: " ")) blocked", sourceLocation: sourceLocation)
    }
    return RunResult(
        status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData.withLock { $0 }, as: UTF8.self))
}

/// Issue 8, through the built `deck`: hostile stores are refused, referenced blobs are never
/// deleted and can be re-registered with `deck gc --repair`, special files never hang.
@Suite("End to end: store trust", .timed)
struct EndToEndStoreTrustTests {
    func sql(_ path: String, _ statements: String) throws {
        let db = try Database(path: path + "/store.sqlite", mode: .readWrite)
        defer { db.close() }
        try db.execute(statements)
    }

    /// The digest of the first card (by id) with an external image, and its blob file.
    func firstExternalImage(_ path: String) throws -> (digest: String, file: String) {
        let db = try Database(path: path + "/store.sqlite", mode: .readOnly)
        defer { db.close() }
        let digest = try #require(
            try db.scalar("SELECT image FROM Card WHERE typeof(image) = 'text' ORDER BY _pk LIMIT 1")?.string)
        return (digest, path + "/blobs/" + digest.prefix(2) + "/" + digest)
    }

    @Test func aPlantedTriggerIsRefusedByEveryCommandAndRunsNever() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let blobsBefore = try e2eBlobFiles(path)
        try sql(path, "CREATE TRIGGER wipe AFTER INSERT ON Tag BEGIN UPDATE deck_blob SET refs = 0; END")

        let verify = try deck("verify", path)
        #expect(verify.status == 65)
        #expect(verify.stdout.contains("corruption: wipe: this trigger is not derived"), "\(verify.stdout)")
        e2eExpectFailure(try deck("insert", path, "Tag", "name=x"), status: 65, "'wipe'", "deck verify")
        e2eExpectFailure(try deck("query", path, "Tag"), status: 65, "'wipe'")
        e2eExpectFailure(
            try deck("export", path, "-o", directory.appending("out.zip")), status: 65, "'wipe'")
        #expect(try e2eBlobFiles(path) == blobsBefore)

        try DeckDocument.pack(
            directory: URL(fileURLWithPath: path), to: URL(fileURLWithPath: directory.appending("raw.zip")))
        e2eExpectFailure(
            try deck("import", directory.appending("raw.zip"), "-o", directory.appending("Copy.deck")),
            status: 65, "wipe")
        #expect(!FileManager.default.fileExists(atPath: directory.appending("Copy.deck")))
    }

    @Test func aTableThatIsNotStrictIsRefusedInsteadOfPrintingText() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let db = try Database(path: path + "/store.sqlite", mode: .readWrite)
        // What a hostile tool does: a plain table in place of the STRICT one, text in an integer.
        try db.execute(
            """
            DROP TABLE "Card.tags";
            CREATE TABLE "Card.tags"(source INTEGER NOT NULL, target INTEGER NOT NULL, PRIMARY KEY (source, target));
            INSERT INTO "Card.tags" VALUES ('abc', 1);
            CREATE INDEX "Card.tags.target" ON "Card.tags"(target, source);
            """)
        db.close()
        e2eExpectFailure(try deck("query", path, "Tag", "--json"), status: 65, "'Card.tags'", "table-altered")
        let verify = try e2eJSONObject(try deck("verify", path, "--json").stdout)
        let codes = (verify["findings"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
        #expect(codes.contains("table-altered") && codes.contains("cell-type"), "\(codes)")
    }

    @Test func gcNeverDeletesAReferencedFileAndRepairRegistersIt() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let (digest, file) = try firstExternalImage(path)
        try sql(path, "DELETE FROM deck_blob WHERE digest = '\(digest)'")

        let verify = try deck("verify", path)
        #expect(verify.status == 65)
        #expect(verify.stdout.contains("blob-unregistered") || verify.stdout.contains("deck gc --repair"))
        #expect(
            !verify.stdout.contains("untidy: \(file)"),
            "the referenced file is not an orphan: \(verify.stdout)")

        let dry = try deck("gc", path, "--dry-run", "--json")
        e2eExpectSuccess(dry)
        let report = try e2eJSONObject(dry.stdout)
        #expect((report["orphanFiles"] as? [String])?.isEmpty == true, "\(dry.stdout)")
        #expect(report["uncountedReferences"] as? [String] == [digest])
        let gc = try deck("gc", path)
        e2eExpectSuccess(gc)
        #expect(gc.stdout.contains("kept \(digest)"), "\(gc.stdout)")
        #expect(FileManager.default.fileExists(atPath: file))
        // An unrelated save does not delete it either.
        e2eExpectSuccess(try deck("insert", path, "Tag", "name=unrelated"))
        #expect(FileManager.default.fileExists(atPath: file))

        let repair = try deck("gc", path, "--repair")
        e2eExpectSuccess(repair)
        #expect(repair.stdout.contains("registered blob \(digest)"), "\(repair.stdout)")
        e2eExpectSuccess(try deck("verify", path))
    }

    @Test func gcRepairExitsWithDataErrorForWhatItCannotRepair() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let (digest, file) = try firstExternalImage(path)
        try sql(path, "DELETE FROM deck_blob WHERE digest = '\(digest)'")
        try FileManager.default.removeItem(atPath: file)
        let result = try deck("gc", path, "--repair", "--json")
        #expect(result.status == 65, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix("deck: ") && result.stderr.contains("cannot be repaired"),
            "\(result.stderr)")
        let report = try e2eJSONObject(result.stdout)
        let unrepaired = (report["repair"] as? [String: Any])?["unrepaired"] as? [[String: Any]]
        #expect(unrepaired?.first?["object"] as? String == digest)
        #expect((unrepaired?.first?["reason"] as? String)?.contains("missing") == true)
    }

    @Test func aDeleteAgainstALowCountSaysToRepair() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let (digest, file) = try firstExternalImage(path)
        try sql(path, "UPDATE deck_blob SET refs = 0 WHERE digest = '\(digest)'")
        let delete = try deck("delete", path, "Card", "--all")
        e2eExpectFailure(delete, status: 65, "deck gc --repair")
        #expect(!delete.stderr.contains("CHECK constraint"), "\(delete.stderr)")
        #expect(FileManager.default.fileExists(atPath: file))
    }

    @Test func aFIFOLockOrBlobNeverHangs() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let (digest, file) = try firstExternalImage(path)
        try FileManager.default.removeItem(atPath: file)
        #expect(mkfifo(file, 0o644) == 0)
        let get = try e2eDeckWithoutHanging("blob", "get", path, digest, "-o", directory.appending("out"))
        e2eExpectFailure(get, status: 65, file, "FIFO")
        let verify = try e2eDeckWithoutHanging("verify", path)
        #expect(verify.status == 65)
        #expect(verify.stdout.contains("FIFO"), "\(verify.stdout)")

        try? FileManager.default.removeItem(atPath: path + "/lock")
        #expect(mkfifo(path + "/lock", 0o644) == 0)
        e2eExpectFailure(try e2eDeckWithoutHanging("open", path), status: 65, path + "/lock", "FIFO")
        e2eExpectFailure(
            try e2eDeckWithoutHanging("insert", path, "Tag", "name=x"), status: 65, path + "/lock", "FIFO")
        e2eExpectFailure(try e2eDeckWithoutHanging("verify", path), status: 65, path + "/lock", "FIFO")
    }

    @Test func aLinkedWriteAheadLogIsNamed() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let target = directory.appending("elsewhere")
        #expect(FileManager.default.createFile(atPath: target, contents: Data()))
        try FileManager.default.createSymbolicLink(
            atPath: path + "/store.sqlite-wal", withDestinationPath: target)
        e2eExpectFailure(
            try deck("insert", path, "Tag", "name=x"), status: 66, "'store.sqlite-wal' is a symbolic link")
        e2eExpectFailure(try deck("query", path, "Tag"), status: 66, "'store.sqlite-wal' is a symbolic link")
    }

    @Test func aManifestWithAByteOrderMarkOrADuplicateIsNotAPackage() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let manifest = try Data(contentsOf: URL(fileURLWithPath: path + "/manifest.json"))
        try (Data([0xEF, 0xBB, 0xBF]) + manifest).write(to: URL(fileURLWithPath: path + "/manifest.json"))
        e2eExpectFailure(try deck("open", path), status: 66, "not a Deck package", "byte-order mark")
        let duplicated = String(decoding: manifest, as: UTF8.self).replacingOccurrences(
            of: "\"formatVersion\" : \(PackageStore.formatVersion),",
            with: "\"formatVersion\" : \(PackageStore.formatVersion),\n  \"formatVersion\" : 1,")
        try Data(duplicated.utf8).write(to: URL(fileURLWithPath: path + "/manifest.json"))
        e2eExpectFailure(try deck("verify", path), status: 66, "'formatVersion' appears twice")
    }

    @Test func aWrongFormatVersionInDeckMetaIsRefused() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        try sql(path, "UPDATE deck_meta SET value = '1' WHERE key = 'format_version'")
        e2eExpectFailure(try deck("query", path, "Tag"), status: 65, "'format_version'", "not an integer")
        let verify = try deck("verify", path, "--json")
        #expect(verify.status == 65)
        #expect(verify.stdout.contains("store-metadata"), "\(verify.stdout)")
    }
}
