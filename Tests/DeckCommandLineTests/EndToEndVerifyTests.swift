import DeckKit
import DeckSQLite
import DeckStore
import DeckTestTiming
import Foundation
import Testing

/// `deck verify`: clean packages, damaged blobs, leftovers, and `--quick`.
@Suite("End to end: deck verify", .timed)
struct EndToEndVerifyTests {
    /// The sample's first blob file (digest, path).
    func firstBlob(_ path: String) throws -> (digest: String, path: String) {
        let files = try e2eBlobFiles(path)
        let digest = try #require(files.keys.sorted().first)
        return (digest, files[digest]!)
    }

    @Test func cleanSampleIsValid() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("verify", path)
        e2eExpectSuccess(result)
        #expect(
            result.stdout
                == "\(path): valid: 17 records, 6 blobs hashed (527.4 KiB), 0 corruption, 0 untidy (format \(PackageStore.formatVersion))\n"
        )
    }

    @Test func cleanSampleJSON() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("verify", path, "--json")
        e2eExpectSuccess(result)
        let report = try e2eJSONObject(result.stdout)
        #expect(report["path"] as? String == path)
        #expect(report["valid"] as? Bool == true)
        #expect(report["records"] as? Int == 17)
        #expect(report["blobsChecked"] as? Int == 6)
        #expect(report["bytesChecked"] as? Int == 6 * 90_015)
        #expect((report["findings"] as? [Any])?.isEmpty == true)
    }

    /// A hot rollback journal (the store and its journal copied while a transaction that changed
    /// more pages than the cache holds was open, as a writer killed in the switch of journal
    /// modes leaves them) is no corruption: status 75, "NEEDS RECOVERY", what to run; after
    /// `deck gc` opened it for writing, the package is valid.
    @Test func aHotJournalNeedsRecovery() throws {
        let directory = try TemporaryDirectory()
        let original = try e2eSample(in: directory)
        let path = directory.appending("Hot.deck")
        try FileManager.default.copyItem(atPath: original, toPath: path)
        let db = try Database(path: original + "/store.sqlite", mode: .readWrite)
        try db.execute(
            "PRAGMA cache_size=1; BEGIN IMMEDIATE; UPDATE \"Card\" SET front = front || hex(zeroblob(20000))")
        for name in ["store.sqlite", "store.sqlite-journal"] {
            try? FileManager.default.removeItem(atPath: path + "/" + name)
            try FileManager.default.copyItem(atPath: original + "/" + name, toPath: path + "/" + name)
        }
        try db.execute("ROLLBACK")
        db.close()
        let text = try deck("verify", path)
        #expect(text.status == 75, "\(text.stdout) \(text.stderr)")
        #expect(text.stdout.contains("needs recovery: \(path)/store.sqlite-journal: "))
        #expect(text.stdout.contains("'deck gc \(path)'"))
        #expect(
            text.stdout.hasSuffix(
                "\(path): NEEDS RECOVERY: not checked; a writer must open it once (see above)\n"))
        let json = try deck("verify", path, "--json")
        #expect(json.status == 75)
        let report = try e2eJSONObject(json.stdout)
        #expect(report["valid"] as? Bool == false && report["needsRecovery"] as? Bool == true)
        let findings = try #require(report["findings"] as? [[String: Any]])
        #expect(findings.map { $0["severity"] as? String } == ["needsRecovery"])
        #expect(findings.map { $0["code"] as? String } == ["store-needs-recovery"])
        e2eExpectSuccess(try deck("gc", path))
        let after = try deck("verify", path)
        e2eExpectSuccess(after)
        #expect(after.stdout.contains(": valid: 17 records"))
    }

    @Test func flippedByteInABlobIsCorruption() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let blob = try firstBlob(path)
        try e2eFlipByte(blob.path, at: 1_000)

        let text = try deck("verify", path)
        #expect(text.status == 65)
        #expect(text.stderr.isEmpty)
        #expect(text.stdout.contains("corruption: \(blob.digest): file \(blob.path) hashes to "))
        #expect(text.stdout.contains("\(path): CORRUPT: "))
        #expect(text.stdout.contains("1 corruption, 0 untidy"))

        let json = try deck("verify", path, "--json")
        #expect(json.status == 65)
        #expect(json.stderr.isEmpty)
        let report = try e2eJSONObject(json.stdout)
        #expect(report["valid"] as? Bool == false)
        let findings = try #require(report["findings"] as? [[String: Any]])
        #expect(findings.count == 1)
        #expect(findings.first?["severity"] as? String == "corruption")
        #expect(findings.first?["code"] as? String == "blob-corrupt")
        #expect(findings.first?["object"] as? String == blob.digest)
        #expect((findings.first?["message"] as? String)?.contains("hashes to") == true)
    }

    @Test func missingBlobIsCorruption() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let blob = try firstBlob(path)
        try FileManager.default.removeItem(atPath: blob.path)

        let text = try deck("verify", path)
        #expect(text.status == 65)
        #expect(text.stderr.isEmpty)
        #expect(text.stdout.contains("corruption: \(blob.digest): file \(blob.path) is missing"))
        #expect(text.stdout.contains("5 blobs hashed"))

        let report = try e2eJSONObject(try deck("verify", path, "--json").stdout)
        let findings = try #require(report["findings"] as? [[String: Any]])
        #expect(findings.map { $0["code"] as? String } == ["blob-missing"])
        #expect(findings.first?["object"] as? String == blob.digest)
    }

    @Test func truncatedBlobIsCorruption() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let blob = try firstBlob(path)
        let data = try Data(contentsOf: URL(fileURLWithPath: blob.path))
        try data.prefix(100).write(to: URL(fileURLWithPath: blob.path))
        let result = try deck("verify", path, "--quick", "--json")
        #expect(result.status == 65)
        let findings = try #require(try e2eJSONObject(result.stdout)["findings"] as? [[String: Any]])
        #expect(
            findings.contains {
                $0["code"] as? String == "blob-size" && $0["object"] as? String == blob.digest
            })
    }

    @Test func orphanBlobIsUntidyNotCorrupt() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let orphan = try e2eWriteOrphanBlob(path, Data("nobody references me".utf8))

        let text = try deck("verify", path)
        e2eExpectSuccess(text)
        #expect(text.stdout.contains("untidy: \(orphan): no record references this file"))
        #expect(text.stdout.contains("\(path): valid: "))
        #expect(text.stdout.contains("0 corruption, 1 untidy"))

        let json = try deck("verify", path, "--json")
        e2eExpectSuccess(json)
        let report = try e2eJSONObject(json.stdout)
        #expect(report["valid"] as? Bool == true)
        let findings = try #require(report["findings"] as? [[String: Any]])
        #expect(findings.count == 1)
        #expect(findings.first?["severity"] as? String == "untidy")
        #expect(findings.first?["code"] as? String == "blob-orphan")
        #expect(findings.first?["object"] as? String == orphan)
    }

    @Test func strayFileIsUntidy() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        try "x".write(toFile: path + "/blobs/notes.txt", atomically: false, encoding: .utf8)
        let result = try deck("verify", path, "--json")
        e2eExpectSuccess(result)
        let findings = try #require(try e2eJSONObject(result.stdout)["findings"] as? [[String: Any]])
        #expect(findings.map { $0["code"] as? String } == ["stray-file"])
    }

    @Test func temporaryFileIsUntidy() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        try FileManager.default.createDirectory(atPath: path + "/tmp", withIntermediateDirectories: true)
        try "partial".write(toFile: path + "/tmp/blob-123.part", atomically: false, encoding: .utf8)
        let result = try deck("verify", path)
        e2eExpectSuccess(result)
        #expect(result.stdout.contains("untidy: \(path)/tmp/blob-123.part: left by an interrupted writer"))
        // verify changes nothing.
        #expect(FileManager.default.fileExists(atPath: path + "/tmp/blob-123.part"))
    }

    @Test func quickSkipsHashing() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let blob = try firstBlob(path)
        try e2eFlipByte(blob.path, at: 1_000)
        let result = try deck("verify", path, "--quick")
        e2eExpectSuccess(result)
        #expect(
            result.stdout
                == "\(path): valid: 17 records, 0 blobs hashed (0 bytes), 0 corruption, 0 untidy (format \(PackageStore.formatVersion))\n"
        )
        let json = try e2eJSONObject(try deck("verify", path, "--quick", "--json").stdout)
        #expect(json["blobsChecked"] as? Int == 0)
        #expect(json["bytesChecked"] as? Int == 0)
        #expect(json["valid"] as? Bool == true)
    }

    @Test func quickStillFindsAMissingBlob() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let blob = try firstBlob(path)
        try FileManager.default.removeItem(atPath: blob.path)
        let result = try deck("verify", path, "--quick")
        #expect(result.status == 65)
        #expect(result.stderr.isEmpty)
        #expect(result.stdout.contains("corruption: \(blob.digest): file \(blob.path) is missing"))
        #expect(result.stdout.contains("CORRUPT"))
    }

    @Test func verifyMatchesTheLibrary() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let blob = try firstBlob(path)
        try e2eFlipByte(blob.path, at: 10)
        try e2eWriteOrphanBlob(path, Data("orphan".utf8))
        let library = try PackageVerifier.verify(at: URL(fileURLWithPath: path))
        let json = try e2eJSONObject(try deck("verify", path, "--json").stdout)
        let findings = try #require(json["findings"] as? [[String: Any]])
        #expect(findings.map { $0["code"] as? String ?? "" } == library.findings.map(\.code))
        #expect(json["valid"] as? Bool == library.isValid)
    }

    @Test func verifyOnAMissingPath() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("nowhere.deck")
        e2eExpectFailure(try deck("verify", path), status: 66, path, "no such file or directory")
    }

    @Test func verifyOnARegularFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("file.deck")
        try "x".write(toFile: path, atomically: true, encoding: .utf8)
        e2eExpectFailure(try deck("verify", path), status: 66, "not a Deck package")
    }
}
