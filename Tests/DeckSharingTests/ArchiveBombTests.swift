import DeckKit
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// Zip bombs are stopped by declared sizes, free space and the zip structure rules, never by a
/// compression ratio that Deck's own exports can exceed (spec 16.7).
@Suite(.timed) struct ArchiveBombTests {
    /// A flash-cards document of values that compress extremely well: a 128 MiB image of zeros
    /// (a blob) and 300 cards with 50 KB of the same letter (a store of some 15 MB).
    static func compressibleDocument(in sandbox: ScratchDirectory) throws -> URL {
        let url = sandbox.appending("Compressible.deck")
        let document = try PackageStore.create(
            at: url, contentType: SampleCards.contentType, schema: SampleCards.schema)
        try document.write { tx in
            let deck = try tx.insert("Deck", ["title": .string("Compressible"), "created": .date(.now)])
            try tx.insert(
                "Card",
                [
                    "front": .string("zeros"), "back": .string("image"), "creationDate": .date(.now),
                    "deck": .reference(deck), "image": .data(Data(count: 128 << 20)),
                ])
            let back = String(repeating: "a", count: 50_000)
            for index in 0..<300 {
                try tx.insert(
                    "Card",
                    [
                        "front": .string("card \(index)"), "back": .string(back), "creationDate": .date(.now),
                        "deck": .reference(deck),
                    ])
            }
        }
        try document.close()
        return url
    }

    @Test(arguments: ArchiveFormat.allCases)
    func deckImportsWhatItExportsHoweverWellItCompresses(format: ArchiveFormat) throws {
        let sandbox = try ScratchDirectory()
        let original = try Self.compressibleDocument(in: sandbox)
        let archive = sandbox.appending("Compressible.\(format.fileExtension)")
        try DeckDocument.export(at: original, to: archive)
        let archiveSize = try #require(
            try FileManager.default.attributesOfItem(atPath: archive.path)[.size] as? NSNumber
        ).int64Value
        // Over 200 bytes out for every byte in, over the whole archive: the old ratio limit (200,
        // checked on the running totals) refused at the latest on the last chunk. Zip stores the
        // blob and deflates the store alone, so only tar.gz and tar.zst compress the whole.
        if format == .tarGzip || format == .tarZstd {
            let scan = try PackageArchive.scan(archive: archive)
            #expect(scan.totalBytes / archiveSize > 200, "\(scan.totalBytes) from \(archiveSize)")
        }
        #expect(try DeckDocument.verifyArchive(at: archive).isValid)
        let imported = try DeckDocument.importArchive(at: archive, to: sandbox.appending("Imported.deck"))
        #expect(try documentDump(imported) == documentDump(original))
    }

    /// A tar.gz whose `entry` holds 1 GiB of zeros (about 1 MiB compressed), after a manifest and
    /// a store when `entry` is a blob.
    static func gigabyteOfZeros(as entry: String, in sandbox: ScratchDirectory) throws -> URL {
        let url = sandbox.appending("zeros.tar.gz")
        var entries: [RawEntry] = [.mimeType, .file("manifest.json", "{}")]
        if entry != "store.sqlite" { entries.append(.store) }
        entries.append(RawEntry(name: entry, kind: .zeros(1 << 30)))
        try RawArchive.write(entries, format: .tarGzip, to: url)
        let size = try #require(
            try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)
        #expect(size.intValue < 16 << 20)
        return url
    }

    @Test func aGigabyteOfZerosAsTheStoreIsRefusedAtItsFirstBytes() throws {
        let sandbox = try ScratchDirectory()
        let archive = try Self.gigabyteOfZeros(as: "store.sqlite", in: sandbox)
        let refusal = ArchiveError.entryRefused(entry: "store.sqlite", reason: .notSQLite)
        expectRefusal(refusal) {
            try PackageArchive.unpack(archive: archive, to: sandbox.appending("Out.deck"))
        }
        expectRefusal(refusal) {
            _ = try PackageArchive.scan(archive: archive, storeTo: sandbox.appending("store"))
        }
        #expect(try sandbox.names() == ["zeros.tar.gz"])
        #expect(try !DeckDocument.verifyArchive(at: archive).isValid)
    }

    @Test func aGigabyteOfZerosAsAManifestIsRefusedAtOneMebibyte() throws {
        let sandbox = try ScratchDirectory()
        let url = sandbox.appending("zeros.tar.gz")
        try RawArchive.write(
            [.mimeType, RawEntry(name: "manifest.json", kind: .zeros(1 << 30)), .store], format: .tarGzip,
            to: url)
        expectRefusal(.limitExceeded(entry: "manifest.json", limit: .manifestBytes(1 << 20))) {
            try PackageArchive.unpack(archive: url, to: sandbox.appending("Out.deck"))
        }
        #expect(try sandbox.names() == ["zeros.tar.gz"])
    }

    @Test func aGigabyteOfZerosAsABlobIsRefusedBeforeItIsWrittenWhenTheDiskCannotTakeIt() throws {
        let sandbox = try ScratchDirectory()
        let hex = String(repeating: "ab", count: 32)
        let archive = try Self.gigabyteOfZeros(as: "blobs/ab/\(hex)", in: sandbox)
        // The file system pretends to have 512 MiB available; 64 MiB of it stay free.
        ArchiveSystem.freeSpaceOverride.withLock { $0 = (sandbox.url.path, 512 << 20) }
        defer { ArchiveSystem.freeSpaceOverride.withLock { $0 = nil } }
        #expect {
            try PackageArchive.unpack(archive: archive, to: sandbox.appending("Out.deck"))
        } throws: { error in
            guard case DeckError.io(let path, let operation, ENOSPC) = error else { return false }
            // The bytes it needs (over 1 GiB) and the 448 MiB it may use.
            return path == sandbox.appending("Out.deck").path && operation.hasPrefix("unpacking (it needs 1")
                && operation.hasSuffix(" bytes; \(448 << 20) may be used here)")
        }
        #expect(try sandbox.names() == ["zeros.tar.gz"])
        #expect {
            try DeckDocument.importArchive(at: archive, to: sandbox.appending("Imported.deck"))
        } throws: { error in
            guard case DeckError.io(_, _, ENOSPC) = error else { return false }
            return (error as? DeckError)?.kind == .io
        }
        #expect(try sandbox.names() == ["zeros.tar.gz"])
    }

    @Test func aGigabyteOfZerosGzippedWithoutAnArchiveInsideIsRefused() throws {
        let sandbox = try ScratchDirectory()
        let url = sandbox.appending("zeros.gz")
        try RawArchive.write([RawEntry(name: "data", kind: .zeros(1 << 30))], format: .gzipOnly, to: url)
        // Zeros read as a tar's end-of-archive marker: an archive with nothing in it.
        expectRefusal(.missingEntry("manifest.json")) {
            try PackageArchive.unpack(archive: url, to: sandbox.appending("Out.deck"))
        }
        #expect(try sandbox.names() == ["zeros.gz"])
    }

    @Test func aZipBombInsideAnArchiveIsJustABlob() throws {
        let sandbox = try ScratchDirectory()
        // 100 MiB of zeros, deflated to some 100 KB: the kind of file 42.zip nests.
        let inner = sandbox.appending("inner.zip")
        try RawArchive.write([RawEntry(name: "zeros", kind: .zeros(100 << 20))], format: .zip, to: inner)
        let bomb = try Data(contentsOf: inner)
        #expect(bomb.count < 1 << 20)
        let url = sandbox.appending("Nested.deck")
        let document = try PackageStore.create(
            at: url, contentType: SampleCards.contentType, schema: SampleCards.schema)
        try document.write { tx in
            let deck = try tx.insert("Deck", ["title": .string("Bombs"), "created": .date(.now)])
            try tx.insert(
                "Card",
                [
                    "front": .string("42"), "back": .string("zip"), "creationDate": .date(.now),
                    "deck": .reference(deck), "image": .data(bomb),
                ])
        }
        try document.close()
        for format in [ArchiveFormat.zip, .tarGzip] {
            let archive = sandbox.appending("nested.\(format.fileExtension)")
            try DeckDocument.export(at: url, to: archive)
            let imported = try DeckDocument.importArchive(
                at: archive, to: sandbox.appending("Imported-\(format.name).deck"))
            let blob = BlobStore(packagePath: imported.path).path(for: SHA256Hasher.hash(bomb))
            #expect(try Data(contentsOf: URL(fileURLWithPath: blob)) == bomb)
            let unpackedBytes = try FileManager.default.subpathsOfDirectory(atPath: imported.path).reduce(0) {
                sum, relative in
                let attributes = try FileManager.default.attributesOfItem(
                    atPath: imported.path + "/" + relative)
                return sum + ((attributes[.size] as? NSNumber)?.intValue ?? 0)
            }
            #expect(unpackedBytes < 2 << 20, "nothing inside the blob was expanded")
        }
    }

    @Test func anOverlappingZipBombIsRefusedBeforeAnythingIsExtracted() throws {
        let sandbox = try ScratchDirectory()
        // One 10 MiB entry of deflated zeros, listed 1,000 times in the central directory: each
        // record points at the same local header and data (a "better zip bomb" kernel).
        let kernel = sandbox.appending("kernel.zip")
        let hex = SHA256Hasher.hash(Data(count: 10 << 20)).hexDigest
        try RawArchive.write(
            [RawEntry(name: "blobs/\(hex.prefix(2))/\(hex)", kind: .zeros(10 << 20))], format: .zip,
            to: kernel)
        var bytes = [UInt8](try Data(contentsOf: kernel))
        let layout = try ArchiveZipStructureTests.Layout(bytes)
        let record = Array(bytes[layout.directory..<layout.end])
        var directory: [UInt8] = []
        for _ in 0..<1_000 { directory += record }
        var end = Array(bytes[layout.end...])
        ArchiveZipStructureTests.put16(&end, 8, 1_000)
        ArchiveZipStructureTests.put16(&end, 10, 1_000)
        ArchiveZipStructureTests.put32(&end, 12, directory.count)
        bytes = Array(bytes[..<layout.directory]) + directory + end
        let archive = sandbox.appending("overlap.zip")
        try Data(bytes).write(to: archive)
        #expect {
            try PackageArchive.unpack(archive: archive, to: sandbox.appending("Out.deck"))
        } throws: { error in
            guard case .entryRefused(_, .zipStructure(let detail))? = archiveRefusal(error) else {
                return false
            }
            return detail.contains("overlaps")
        }
        #expect(try sandbox.names() == ["kernel.zip", "overlap.zip"])
        #expect(try !DeckDocument.verifyArchive(at: archive).isValid)
    }
}
