import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// `deck gc`: dry runs report, real runs remove, and the package verifies clean afterwards.
@Suite("End to end: deck gc", .timed)
struct EndToEndGCTests {
    /// A sample with one orphan blob file and one file in tmp/ (what a crashed writer leaves).
    func untidySample(_ directory: TemporaryDirectory) throws -> (
        path: String, orphan: String, temporary: String
    ) {
        let path = try e2eSample(in: directory)
        let orphan = try e2eWriteOrphanBlob(path, Data("orphaned bytes".utf8))
        try FileManager.default.createDirectory(atPath: path + "/tmp", withIntermediateDirectories: true)
        let temporary = path + "/tmp/blob-crashed.part"
        try "half a blob".write(toFile: temporary, atomically: false, encoding: .utf8)
        return (path, orphan, temporary)
    }

    @Test func dryRunReportsTheOrphanBlobAndChangesNothing() throws {
        let directory = try TemporaryDirectory()
        let (path, orphan, _) = try untidySample(directory)
        let storeBefore = try Data(contentsOf: URL(fileURLWithPath: path + "/store.sqlite"))
        let result = try deck("gc", path, "--dry-run", "--json")
        e2eExpectSuccess(result)
        let report = try e2eJSONObject(result.stdout)
        #expect(report["dryRun"] as? Bool == true)
        #expect(report["orphanFiles"] as? [String] == [orphan])
        #expect(report["orphanBytes"] as? Int == "orphaned bytes".utf8.count)
        #expect(report["unreferencedRows"] as? Int == 0)
        #expect(report["storeBytesBefore"] as? Int == report["storeBytesAfter"] as? Int)
        #expect(FileManager.default.fileExists(atPath: orphan))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/store.sqlite")) == storeBefore)
        #expect(try e2eBlobFiles(path).count == 7)
    }

    /// A dry run must list the temporaries and leave them in place ("change nothing").
    @Test func dryRunReportsTemporariesAndKeepsThem() throws {
        let directory = try TemporaryDirectory()
        let (path, _, temporary) = try untidySample(directory)
        let result = try deck("gc", path, "--dry-run", "--json")
        e2eExpectSuccess(result)
        let report = try e2eJSONObject(result.stdout)
        #expect(
            report["temporaries"] as? [String] == [temporary], "dry run did not list tmp/: \(result.stdout)")
        #expect(report["temporaryBytes"] as? Int == "half a blob".utf8.count)
        #expect(FileManager.default.fileExists(atPath: temporary), "gc --dry-run removed \(temporary)")
    }

    @Test func dryRunText() throws {
        let directory = try TemporaryDirectory()
        let (path, orphan, _) = try untidySample(directory)
        let result = try deck("gc", path, "-n")
        e2eExpectSuccess(result)
        #expect(result.stdout.contains("would remove \(orphan)\n"))
        #expect(result.stdout.contains("would remove 1 orphan blob(s) (14 bytes)"))
        #expect(!result.stdout.contains("removed"))
        #expect(FileManager.default.fileExists(atPath: orphan))
    }

    @Test func gcRemovesGarbageAndVerifiesClean() throws {
        let directory = try TemporaryDirectory()
        let (path, orphan, temporary) = try untidySample(directory)
        let before = try deck("verify", path, "--json")
        e2eExpectSuccess(before)
        #expect((try e2eJSONObject(before.stdout)["findings"] as? [Any])?.count == 2)

        let result = try deck("gc", path)
        e2eExpectSuccess(result)
        #expect(result.stdout.contains("removed \(orphan)\n"))
        #expect(result.stdout.contains("removed 1 orphan blob(s) (14 bytes)"))
        #expect(result.stdout.contains("; store "))
        #expect(!FileManager.default.fileExists(atPath: orphan))
        #expect(!FileManager.default.fileExists(atPath: temporary))

        let after = try deck("verify", path)
        e2eExpectSuccess(after)
        #expect(after.stdout.hasSuffix("0 corruption, 0 untidy (format 6)\n"))
        // Nothing referenced was touched.
        #expect(try e2eBlobFiles(path).count == 6)
        #expect(try deck("query", path, "Card", "--count").stdout == "10\n")
        #expect(try PackageVerifier.verify(at: URL(fileURLWithPath: path)).findings.isEmpty)
    }

    @Test func gcJSONAfterARealRun() throws {
        let directory = try TemporaryDirectory()
        let (path, orphan, _) = try untidySample(directory)
        let result = try deck("gc", path, "--json")
        e2eExpectSuccess(result)
        let report = try e2eJSONObject(result.stdout)
        #expect(report["dryRun"] as? Bool == false)
        #expect(report["orphanFiles"] as? [String] == [orphan])
        #expect((report["reclaimedBytes"] as? Int ?? 0) >= 14)
        // A second run finds nothing.
        let again = try e2eJSONObject(try deck("gc", path, "--json").stdout)
        #expect((again["orphanFiles"] as? [Any])?.isEmpty == true)
        #expect((again["temporaries"] as? [Any])?.isEmpty == true)
    }

    @Test func gcOnACleanPackageRemovesNothing() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("gc", path)
        e2eExpectSuccess(result)
        #expect(
            result.stdout.hasPrefix(
                "removed 0 orphan blob(s) (0 bytes), 0 temporary file(s) (0 bytes); store "))
        #expect(try e2eBlobFiles(path).count == 6)
        e2eExpectSuccess(try deck("verify", path))
    }

    @Test func gcLeavesStrayFilesAlone() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        try "x".write(toFile: path + "/blobs/README", atomically: false, encoding: .utf8)
        e2eExpectSuccess(try deck("gc", path))
        #expect(FileManager.default.fileExists(atPath: path + "/blobs/README"))
    }

    @Test func blobOfADeletedRecordIsRemovedBySaveNotLeftForGC() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let hola = try e2eJSONArray(
            try deck("query", path, "Card", "--where", "front = hola", "--json").stdout)
        let digest = try #require((hola.first?["image"] as? [String: Any])?["blob"] as? String)
        e2eExpectSuccess(try deck("delete", path, "Card", "--where", "front = hola"))
        #expect(try e2eBlobFiles(path)[digest] == nil)
        let report = try e2eJSONObject(try deck("gc", path, "--dry-run", "--json").stdout)
        #expect((report["orphanFiles"] as? [Any])?.isEmpty == true)
    }

    @Test func gcOnAMissingPath() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("nowhere.deck")
        e2eExpectFailure(try deck("gc", path), status: 66, "no such file or directory")
    }
}
