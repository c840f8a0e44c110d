import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// No blob file that a record references is ever deleted, whatever `deck_blob` says; and
/// `repairReferences` makes `deck_blob` agree with the cells again (issue 8; spec 8.2, 10, 13).
@Suite("Store trust: reference counts", .timed)
struct ReferenceTrustTests {
    static let shared = testBytes(100, seed: 1)  // cards a and b
    static let single = testBytes(200, seed: 2)  // card c
    var sharedDigest: String { SHA256Hasher.hash(Self.shared).hexDigest }
    var singleDigest: String { SHA256Hasher.hash(Self.single).hexDigest }

    /// A closed package: cards a and b share one image, card c has its own; one tag.
    func package(in dir: URL) throws -> URL {
        let package = try makeTestStore(in: dir)
        try package.write { tx in
            try tx.insert("Card", ["front": .string("a"), "image": .data(Self.shared)])
            try tx.insert("Card", ["front": .string("b"), "image": .data(Self.shared)])
            try tx.insert("Card", ["front": .string("c"), "image": .data(Self.single)])
            try tx.insert("Tag", ["name": .string("t")])
        }
        try package.close()
        return package.url
    }

    func blobExists(_ url: URL, _ data: Data) -> Bool {
        FileManager.default.fileExists(atPath: url.appendingPathComponent("blobs/" + blobName(data)).path)
    }

    @Test func aSaveKeepsAFileWhoseCountIsTooLow() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try rawStore(url).run("UPDATE deck_blob SET refs = 1 WHERE digest = ?", [.text(sharedDigest)])
            let writer = try PackageStore.open(at: url)
            try writer.write { tx in
                _ = try tx.delete(
                    RecordQuery("Card", where: .compare(.property("front"), .equal, .value(.string("a")))))
            }  // refs fell to 0, but card b still names the blob
            try writer.read { reader throws in
                #expect(
                    try reader.data(of: try #require(reader.fetch(RecordQuery("Card")).first?["image"]))
                        == Self.shared)
            }
            try writer.close()
            #expect(blobExists(url, Self.shared))
            // The save set refs to the true count, so the package is whole again.
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }

    @Test func anUnrelatedSaveNeverDeletesAReferencedFile() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try rawStore(url).run("UPDATE deck_blob SET refs = 0")
            let writer = try PackageStore.open(at: url)
            try writer.write { tx in
                try tx.insert("Tag", ["name": .string("unrelated")])
            }
            try writer.close()
            #expect(blobExists(url, Self.shared) && blobExists(url, Self.single))
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }

    @Test func aDeleteBelowZeroSaysToRepair() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try rawStore(url).run("UPDATE deck_blob SET refs = 0 WHERE digest = ?", [.text(singleDigest)])
            let writer = try PackageStore.open(at: url)
            let tx = try writer.beginTransaction()
            let error = expectDeckError {
                _ = try tx.delete(
                    RecordQuery("Card", where: .compare(.property("front"), .equal, .value(.string("c")))))
            }
            guard case .corrupt(_, let reason) = error else {
                Issue.record("expected corrupt, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("deck gc --repair"), "\(reason)")
            #expect(!reason.contains("CHECK"), "no raw constraint error: \(reason)")
            #expect(!tx.hasChanges)
            tx.rollback()
            try writer.close()
            #expect(blobExists(url, Self.single))
        }
    }

    @Test func verifyCallsAnUncountedFileUnregisteredNotAnOrphan() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try rawStore(url).run("DELETE FROM deck_blob WHERE digest = ?", [.text(singleDigest)])
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes == ["blob-unregistered"], "\(report.findings)")
            #expect(report.finding("blob-unregistered")?.message.contains("deck gc --repair") == true)
            #expect(!report.findings.contains { $0.message.contains("'deck gc' removes") })
            #expect(report.blobsChecked == 2, "the referenced file is still hashed")
        }
    }

    @Test func verifyCallsALowCountAMismatchNotUnreferenced() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try rawStore(url).run("UPDATE deck_blob SET refs = 0 WHERE digest = ?", [.text(singleDigest)])
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes == ["refcount-mismatch"], "\(report.findings)")
            #expect(report.finding("refcount-mismatch")?.message.contains("deck gc --repair") == true)
        }
    }

    @Test func gcKeepsWhatRecordsNameAndRepairFixesTheCounts() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            let db = try rawStore(url)
            try db.run("DELETE FROM deck_blob WHERE digest = ?", [.text(singleDigest)])
            try db.run("UPDATE deck_blob SET refs = 0 WHERE digest = ?", [.text(sharedDigest)])
            db.close()
            let orphan = testBytes(50, seed: 9)
            let orphanPath = url.appendingPathComponent("blobs/" + blobName(orphan)).path
            try FileManager.default.createDirectory(
                atPath: (orphanPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try orphan.write(to: URL(fileURLWithPath: orphanPath))

            let writer = try PackageStore.open(at: url)
            let dry = try writer.collectGarbage(dryRun: true)
            #expect(dry.orphanFiles == [orphanPath])
            #expect(dry.unreferencedRows == 0)
            #expect(dry.uncountedReferences == [sharedDigest, singleDigest].sorted())
            let report = try writer.collectGarbage()
            #expect(report.orphanFiles == [orphanPath])
            #expect(blobExists(url, Self.shared) && blobExists(url, Self.single))
            #expect(!FileManager.default.fileExists(atPath: orphanPath))

            let repaired = try writer.collectGarbage(repair: true)
            let repair = try #require(repaired.repair)
            #expect(repair.registered == [singleDigest])
            #expect(repair.recounted == [.init(digest: sharedDigest, from: 0, to: 2)])
            #expect(repair.isComplete)
            #expect(repaired.uncountedReferences.isEmpty)
            try writer.close()
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }

    @Test func repairReportsWhatItCannotRepair() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try rawStore(url).run("DELETE FROM deck_blob")
            // One referenced file gone, the other damaged.
            try FileManager.default.removeItem(
                at: url.appendingPathComponent("blobs/" + blobName(Self.single)))
            try flipByte(at: url.appendingPathComponent("blobs/" + blobName(Self.shared)).path)
            let writer = try PackageStore.open(at: url)
            let dry = try writer.repairReferences(dryRun: true)
            let report = try writer.repairReferences()
            #expect(dry.unrepaired == report.unrepaired)
            #expect(report.registered.isEmpty)
            #expect(Set(report.unrepaired.map(\.object)) == [sharedDigest, singleDigest])
            #expect(report.unrepaired.contains { $0.reason.contains("missing") })
            #expect(report.unrepaired.contains { $0.reason.contains("corrupt") })
            // Nothing referenced is removed, damaged or not.
            _ = try writer.collectGarbage()
            try writer.close()
            #expect(blobExists(url, Self.shared))
        }
    }

    @Test func repairCorrectsASizeAndSetsUnusedCountsToZero() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            let db = try rawStore(url)
            try db.run("UPDATE deck_blob SET size = 1, refs = 9 WHERE digest = ?", [.text(singleDigest)])
            try db.run(
                "INSERT INTO deck_blob(digest, size, refs) VALUES (?, 3, 4)",
                [.text(String(repeating: "a", count: 64))])
            db.close()
            let writer = try PackageStore.open(at: url)
            let report = try writer.collectGarbage(repair: true)
            #expect(report.repair?.resized == [singleDigest])
            #expect(report.repair?.recounted.count == 2)
            #expect(report.unreferencedRows == 1, "the row nothing names is collected after the repair")
            try writer.close()
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }

    /// A cell names a digest that deck_blob lacks and whose file is missing; the writer stores
    /// the same bytes again and rolls back: the file it wrote is what the cell needs, so it stays.
    @Test func rollbackKeepsAFileACellNames() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try rawStore(url).run("DELETE FROM deck_blob WHERE digest = ?", [.text(singleDigest)])
            try FileManager.default.removeItem(
                at: url.appendingPathComponent("blobs/" + blobName(Self.single)))
            let writer = try PackageStore.open(at: url)
            let tx = try writer.beginTransaction()
            try tx.insert("Card", ["front": .string("d"), "image": .data(Self.single)])
            tx.rollback()
            #expect(blobExists(url, Self.single))
            #expect(try writer.repairReferences().registered == [singleDigest])
            try writer.close()
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }

    @Test func rollbackStillRemovesWhatOnlyItsChangesNamed() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            let writer = try PackageStore.open(at: url)
            let fresh = testBytes(300, seed: 3)
            let tx = try writer.beginTransaction()
            try tx.insert("Card", ["front": .string("d"), "image": .data(fresh)])
            #expect(blobExists(url, fresh))
            tx.rollback()
            #expect(!blobExists(url, fresh))
            try writer.close()
        }
    }
}
