import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

@Suite("Blobs", .timed)
struct BlobTests {
    /// `deck_blob.refs` for the blob holding `data`, or nil when there is no row.
    private func refs(_ package: PackageStore, _ data: Data) throws -> Int64? {
        try package.database.scalar(
            "SELECT refs FROM deck_blob WHERE digest = ?", [.text(SHA256Hasher.hash(data).hexDigest)])?.int64
    }

    @Test func valuesBelowTheThresholdStayInline() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)  // threshold 16
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let small = testBytes(15)
            let id = try tx.insert("Card", ["front": .string("x"), "image": .data(small)])
            #expect(try tx.record("Card", id: id)?["image"] == .data(small))
            let empty = try tx.insert("Card", ["front": .string("y"), "image": .data(Data())])
            #expect(try tx.record("Card", id: empty)?["image"] == .data(Data()))
            try tx.commit()
            #expect(blobFiles(package.url).isEmpty)
            #expect(try package.database.scalar("SELECT count(*) FROM deck_blob")?.int64 == 0)
            #expect(
                try package.database.scalar("SELECT typeof(image) FROM Card WHERE _pk = ?", [.integer(id)])
                    == .text("blob"))
        }
    }

    @Test(arguments: [16, 17, 4_096])
    func valuesAtOrAboveTheThresholdGoToBlobFiles(size: Int) throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let data = testBytes(size)
            let id = try tx.insert("Card", ["front": .string("x"), "image": .data(data)])
            let digest = SHA256Hasher.hash(data)
            guard case .blob(let reference)? = try tx.record("Card", id: id)?["image"] else {
                Issue.record("expected a blob value")
                return
            }
            #expect(reference.digest == digest)
            #expect(reference.size == Int64(size))
            #expect(try tx.data(for: reference) == data)
            #expect(try tx.data(of: .blob(reference)) == data)
            let hex = digest.hexDigest
            let file = package.url.appendingPathComponent("blobs/\(hex.prefix(2))/\(hex)")
            #expect(try package.blobs.path(for: digest) == file.path)
            #expect(try Data(contentsOf: file) == data)
            #expect(blobFiles(package.url) == [blobName(data)])
            #expect(
                try package.database.scalar("SELECT image FROM Card WHERE _pk = ?", [.integer(id)])
                    == .text(hex))
            #expect(
                try package.database.rows("SELECT size, refs FROM deck_blob") == [
                    [.integer(Int64(size)), .integer(1)]
                ])
            try tx.commit()
            #expect(try Data(contentsOf: file) == data)
        }
    }

    @Test func theThresholdIsPerAttribute() throws {
        try withTestDirectory { dir throws in
            let schema = StoreSchema(entities: [
                Entity(
                    "File",
                    attributes: [
                        // The default threshold, 64 KiB.
                        Attribute("big", .data, isOptional: true, options: [.externalStorage]),
                        Attribute("plain", .data, isOptional: true),  // never external
                    ])
            ])
            let package = try makeTestStore(in: dir, schema: schema)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let id = try tx.insert(
                "File", ["big": .data(testBytes(65_535)), "plain": .data(testBytes(200_000))])
            let record = try #require(try tx.record("File", id: id))
            #expect(record["big"] == .data(testBytes(65_535)))
            #expect(record["plain"] == .data(testBytes(200_000)))
            try tx.update("File", id: id, ["big": .data(testBytes(65_536))])
            guard case .blob(let reference)? = try tx.record("File", id: id)?["big"] else {
                Issue.record("65536 bytes must be external")
                return
            }
            #expect(reference.size == 65_536)
        }
    }

    @Test func identicalBytesAreStoredOnce() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            var tx = try package.beginTransaction()
            defer { tx.rollback() }
            let data = testBytes(100, seed: 9)
            let a = try tx.insert("Card", ["front": .string("a"), "image": .data(data)])
            let b = try tx.insert("Card", ["front": .string("b"), "image": .data(data)])
            try tx.commit()
            tx = try package.beginTransaction()
            let url = package.url
            #expect(blobFiles(url) == [blobName(data)])
            #expect(try refs(package, data) == 2)

            try tx.delete("Card", id: a)
            #expect(try refs(package, data) == 1)
            try tx.commit()
            tx = try package.beginTransaction()
            #expect(blobFiles(url) == [blobName(data)], "still referenced by b")

            try tx.delete("Card", id: b)
            #expect(try refs(package, data) == 0)
            #expect(blobFiles(url) == [blobName(data)], "the file stays until the delete is saved")
            try tx.commit()
            #expect(blobFiles(url).isEmpty)
            #expect(try refs(package, data) == nil, "the row is gone too")
            tx.rollback()
            try package.close()
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }

    @Test func updatingAnExternalValueMovesItsReference() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            var tx = try package.beginTransaction()
            defer { tx.rollback() }
            let old = testBytes(50, seed: 1)
            let new = testBytes(50, seed: 2)
            let id = try tx.insert("Card", ["front": .string("a"), "image": .data(old)])
            try tx.commit()
            tx = try package.beginTransaction()
            try tx.update("Card", id: id, ["image": .data(new)])
            #expect(try refs(package, old) == 0)
            #expect(try refs(package, new) == 1)
            try tx.commit()
            tx = try package.beginTransaction()
            #expect(blobFiles(package.url) == [blobName(new)])
            // To inline, and to null.
            try tx.update("Card", id: id, ["image": .data(testBytes(3))])
            try tx.commit()
            tx = try package.beginTransaction()
            #expect(blobFiles(package.url).isEmpty)
            try tx.update("Card", id: id, ["image": .data(new)])
            try tx.update("Card", id: id, ["image": .null])
            try tx.commit()
            #expect(blobFiles(package.url).isEmpty)
            tx.rollback()
            try package.close()
            #expect(try PackageVerifier.verify(at: package.url).isValid)
        }
    }

    @Test func anExistingBlobReferenceCanBeReused() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let data = testBytes(40)
            let a = try tx.insert("Card", ["front": .string("a"), "image": .data(data)])
            guard case .blob(let reference)? = try tx.record("Card", id: a)?["image"] else {
                Issue.record("expected a blob")
                return
            }
            let b = try tx.insert("Card", ["front": .string("b"), "image": .blob(reference)])
            #expect(try tx.record("Card", id: b)?["image"] == .blob(reference))
            #expect(try refs(package, data) == 2)
            try tx.commit()
            tx.rollback()
            try package.close()
            #expect(try PackageVerifier.verify(at: package.url).findings.isEmpty)
        }
    }

    @Test func fileValuesAreStreamedIntoBlobs() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            var tx = try package.beginTransaction()
            defer { tx.rollback() }
            var big = Data(count: 5 * 1024 * 1024)
            big.withUnsafeMutableBytes { buffer in
                for i in stride(from: 0, to: buffer.count, by: 4_093) {
                    buffer[i] = UInt8(truncatingIfNeeded: i / 4_093)
                }
            }
            let source = dir.appendingPathComponent("picture.bin")
            try big.write(to: source)
            let id = try tx.insert("Card", ["front": .string("big"), "image": .file(source)])
            try tx.commit()
            tx = try package.beginTransaction()
            guard case .blob(let reference)? = try tx.record("Card", id: id)?["image"] else {
                Issue.record("a 5 MiB file must be external")
                return
            }
            #expect(reference.size == Int64(big.count))
            #expect(reference.digest == SHA256Hasher.hash(big))
            #expect(try tx.data(for: reference) == big)
            var streamed = 0
            var chunks = 0
            try package.blobs.stream(reference.digest) { chunk in
                streamed += chunk.count
                chunks += 1
                #expect(chunk.count <= 1 << 20)
            }
            #expect(streamed == big.count)
            #expect(chunks >= 5)
            #expect(temporaryFiles(package.url).isEmpty, "no .part files remain")
            #expect(try Data(contentsOf: source) == big, "the source file is untouched")

            // A small file stays inline.
            let small = dir.appendingPathComponent("small.bin")
            try testBytes(10).write(to: small)
            let inline = try tx.insert("Card", ["front": .string("small"), "image": .file(small)])
            #expect(try tx.record("Card", id: inline)?["image"] == .data(testBytes(10)))
        }
    }

    @Test func aMissingOrNonRegularSourceFileIsAnInvalidValue() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            for source in [dir.appendingPathComponent("missing.bin"), dir] {
                let error = expectDeckError {
                    try tx.insert("Card", ["front": .string("x"), "image": .file(source)])
                }
                if case .invalidValue("Card", "image", _) = error {
                } else {
                    Issue.record("expected invalidValue, got \(String(describing: error))")
                }
            }
            #expect(try tx.count(RecordQuery("Card")) == 0)
        }
    }

    @Test func aFlippedByteMakesTheBlobUnavailable() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            var tx = try package.beginTransaction()
            defer { tx.rollback() }
            let data = testBytes(300)
            let id = try tx.insert("Card", ["front": .string("x"), "image": .data(data)])
            try tx.commit()
            tx = try package.beginTransaction()
            guard case .blob(let reference)? = try tx.record("Card", id: id)?["image"] else {
                Issue.record("expected a blob")
                return
            }
            try flipByte(at: package.blobs.path(for: reference.digest), offset: 150)
            let error = expectDeckError { _ = try tx.data(for: reference) }
            guard case .blobUnavailable(let digest, let reason) = error else {
                Issue.record("expected blobUnavailable, got \(String(describing: error))")
                return
            }
            #expect(digest == reference.digest.hexDigest)
            #expect(reason.contains("corrupt"))
            #expect(error?.kind == .invalidData)
            // Records still read: only the bytes are refused.
            #expect(try tx.record("Card", id: id)?["image"] == .blob(reference))
        }
    }

    @Test func aMissingBlobFileIsUnavailable() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            var tx = try package.beginTransaction()
            defer { tx.rollback() }
            let id = try tx.insert("Card", ["front": .string("x"), "image": .data(testBytes(300))])
            try tx.commit()
            tx = try package.beginTransaction()
            guard case .blob(let reference)? = try tx.record("Card", id: id)?["image"] else {
                Issue.record("expected a blob")
                return
            }
            try FileManager.default.removeItem(atPath: package.blobs.path(for: reference.digest))
            #expect(try !package.blobs.contains(reference.digest))
            let error = expectDeckError { _ = try tx.data(for: reference) }
            guard case .blobUnavailable(let digest, let reason) = error else {
                Issue.record("expected blobUnavailable, got \(String(describing: error))")
                return
            }
            #expect(digest == reference.digest.hexDigest)
            #expect(reason.contains("missing"))
        }
    }

    @Test func rollbackRemovesNewBlobFilesButNotCommittedOnes() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            var tx = try package.beginTransaction()
            defer { tx.rollback() }
            let committed = testBytes(100, seed: 1)
            try tx.insert("Card", ["front": .string("a"), "image": .data(committed)])
            try tx.commit()
            tx = try package.beginTransaction()
            // New bytes, and the committed bytes again (a second reference to an existing file).
            try tx.insert("Card", ["front": .string("b"), "image": .data(testBytes(100, seed: 2))])
            try tx.insert("Card", ["front": .string("c"), "image": .data(committed)])
            let writer = try package.blobs.makeWriter()
            try Data(repeating: 1, count: 10).withUnsafeBytes { try writer.write($0) }
            writer.abandon()
            #expect(blobFiles(package.url).count == 2)
            tx.rollback()
            tx = try package.beginTransaction()
            #expect(blobFiles(package.url) == [blobName(committed)])
            #expect(temporaryFiles(package.url).isEmpty)
            #expect(
                try tx.data(of: try #require(tx.fetch(RecordQuery("Card")).first?["image"]))
                    == committed)
        }
    }

    @Test func closeWithoutSaveRemovesNewBlobFiles() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            try tx.insert("Card", ["front": .string("b"), "image": .data(testBytes(100, seed: 2))])
            let url = package.url
            tx.rollback()
            try package.close()
            #expect(blobFiles(url).isEmpty)
        }
    }

    @Test func aFailedInsertLeavesNoOrphanBlobAfterSave() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            try tx.insert("Deck", ["title": .string("A")])
            // The blob is written before the dangling deck reference is found.
            expectDeckError {
                try tx.insert(
                    "Card", ["front": .string("x"), "deck": .reference(999), "image": .data(testBytes(100))])
            }
            try tx.commit()
            #expect(blobFiles(package.url).isEmpty, "the failed change's blob file was left behind")
            tx.rollback()
            try package.close()
            let report = try PackageVerifier.verify(at: package.url)
            #expect(report.isValid)
            #expect(report.finding("blob-orphan") == nil)
        }
    }

    @Test func aUniqueViolationWithANewExternalValueLeavesNothingAfterSave() throws {
        try withTestDirectory { dir throws in
            let schema = StoreSchema(entities: [
                Entity(
                    "Photo",
                    attributes: [
                        Attribute("name", .string, options: [.unique]),
                        Attribute(
                            "image", .data, isOptional: true, options: [.externalStorage],
                            externalThreshold: 16),
                    ])
            ])
            let package = try makeTestStore(in: dir, schema: schema)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let kept = testBytes(100, seed: 1)
            try tx.insert("Photo", ["name": .string("a"), "image": .data(kept)])
            let error = expectDeckError {
                try tx.insert("Photo", ["name": .string("a"), "image": .data(testBytes(100, seed: 2))])
            }
            if case .uniqueViolation = error {
            } else {
                Issue.record("expected uniqueViolation, got \(String(describing: error))")
            }
            try tx.commit()
            #expect(blobFiles(package.url) == [blobName(kept)])
            #expect(try package.database.scalar("SELECT count(*) FROM deck_blob")?.int64 == 1)
            tx.rollback()
            try package.close()
            #expect(try PackageVerifier.verify(at: package.url).findings.isEmpty)
        }
    }

    // MARK: Garbage collection

    /// A package with one referenced blob, one orphan blob file, one unreferenced `deck_blob` row
    /// and two temporaries; returns the package and the referenced bytes.
    private func untidyPackage(in dir: URL) throws -> (PackageStore, Data, orphan: Data) {
        let package = try makeTestStore(in: dir)
        let kept = testBytes(200, seed: 1)
        try package.write { tx in try tx.insert("Card", ["front": .string("kept"), "image": .data(kept)]) }
        // An orphan: a well-named blob file nothing references.
        let orphan = testBytes(1_000, seed: 2)
        _ = try package.blobs.write(orphan)
        // An unreferenced row, as a crash between commit and unlink would leave.
        try package.database.run(
            "INSERT INTO deck_blob(digest, size, refs) VALUES (?, 5, 0)",
            [.text(String(repeating: "ab", count: 32))])
        let tmp = package.url.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        try Data(count: 300).write(to: tmp.appendingPathComponent("blob-dead.part"))
        try FileManager.default.createDirectory(
            at: tmp.appendingPathComponent("leftover"), withIntermediateDirectories: true)
        try Data(count: 7).write(to: tmp.appendingPathComponent("leftover/x"))
        return (package, kept, orphan)
    }

    @Test func collectGarbageRemovesOrphansAndTemporaries() throws {
        try withTestDirectory { dir throws in
            let (package, kept, orphan) = try untidyPackage(in: dir)
            let url = package.url
            #expect(blobFiles(url).count == 2)
            let report = try package.collectGarbage()
            #expect(try report.orphanFiles == [package.blobs.path(for: SHA256Hasher.hash(orphan))])
            #expect(report.orphanBytes == 1_000)
            #expect(report.unreferencedRows == 1)
            #expect(
                report.temporaries.map { URL(fileURLWithPath: $0).lastPathComponent }.sorted() == [
                    "blob-dead.part", "leftover",
                ])
            #expect(report.temporaryBytes >= 300)
            #expect(report.reclaimedBytes >= 1_300)
            #expect(report.storeBytesAfter > 0)

            #expect(blobFiles(url) == [blobName(kept)])
            #expect(temporaryFiles(url).isEmpty)
            #expect(try package.database.scalar("SELECT count(*) FROM deck_blob")?.int64 == 1)
            try package.read { reader throws in
                #expect(
                    try reader.data(of: try #require(reader.fetch(RecordQuery("Card")).first?["image"]))
                        == kept)
            }

            // A second run finds nothing.
            let again = try package.collectGarbage()
            #expect(again.orphanFiles.isEmpty && again.temporaries.isEmpty && again.unreferencedRows == 0)
            #expect(again.orphanBytes == 0 && again.temporaryBytes == 0)
            try package.close()
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }

    @Test func collectGarbageDryRunRemovesNothing() throws {
        try withTestDirectory { dir throws in
            let (package, _, _) = try untidyPackage(in: dir)
            let url = package.url
            let filesBefore = blobFiles(url)
            let tmpBefore = temporaryFiles(url)
            let report = try package.collectGarbage(dryRun: true)
            #expect(report.orphanFiles.count == 1)
            #expect(report.orphanBytes == 1_000)
            #expect(report.unreferencedRows == 1)
            #expect(report.temporaries.count == 2)
            #expect(report.storeBytesAfter == report.storeBytesBefore)
            #expect(blobFiles(url) == filesBefore)
            #expect(temporaryFiles(url) == tmpBefore)
            #expect(try package.database.scalar("SELECT count(*) FROM deck_blob")?.int64 == 2)
        }
    }

    @Test func collectGarbageRefusesUnsavedChanges() throws {
        try withTestDirectory { dir throws in
            let (package, _, _) = try untidyPackage(in: dir)
            // The writer that holds the unsaved change asks for maintenance: it would wait for
            // itself, and is told so.
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            try tx.insert("Card", ["front": .string("pending"), "image": .data(testBytes(64, seed: 5))])
            for body in [
                { _ = try package.collectGarbage() }, { _ = try package.repairReferences() },
            ]
                as [() throws -> Void]
            {
                let error = expectDeckError(body)
                #expect(error?.kind == .misuse, "\(String(describing: error))")
            }
            #expect(blobFiles(package.url).count == 3, "nothing removed, not even the pending blob")
            try tx.commit()
            #expect(try package.collectGarbage().orphanFiles.count == 1)
            #expect(blobFiles(package.url).count == 2)
        }
    }

    @Test func blobWriterHashesWhatItWrites() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let writer = try package.blobs.makeWriter()
            let parts = [testBytes(10, seed: 1), testBytes(0), testBytes(1_000, seed: 2)]
            for part in parts { try part.withUnsafeBytes { try writer.write($0) } }
            let reference = try writer.finish()
            writer.abandon()  // harmless after finish
            let whole = parts.reduce(Data(), +)
            #expect(reference.digest == SHA256Hasher.hash(whole))
            #expect(reference.size == Int64(whole.count))
            #expect(try package.blobs.read(reference.digest) == whole)
            #expect(try package.blobs.contains(reference.digest))
            #expect(temporaryFiles(package.url).isEmpty)
        }
    }

    @Test func sha256KnownAnswers() {
        #expect(
            SHA256Hasher.hash(Data()).hexDigest
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            SHA256Hasher.hash(Data("abc".utf8)).hexDigest
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let hex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        #expect(Digest(hex: hex)?.hexDigest == hex)
        #expect(Digest(hex: hex.uppercased()) == nil, "digests are lowercase")
        #expect(Digest(hex: String(hex.dropLast())) == nil)
        #expect(Digest(hex: String(hex.dropLast()) + "g") == nil)
    }
}
