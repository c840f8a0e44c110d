import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@Suite(.timed) struct ArchiveScanTests {
    @Test(arguments: ArchiveFormat.allCases)
    func reportsContents(format: ArchiveFormat) throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let archive = sandbox.appending("out.\(format.fileExtension)")
        try PackageArchive.pack(directory: package.url, to: archive, format: format)
        let storeCopy = sandbox.appending("store-copy.sqlite")
        let report = try PackageArchive.scan(archive: archive, storeTo: storeCopy)

        #expect(report.manifest == package.manifest)
        #expect(report.storeBytes == Int64(package.store.count))
        #expect(try Data(contentsOf: storeCopy) == package.store)
        let expectedBlobs = package.blobs.map { ArchivedBlob(digest: $0.key, size: Int64($0.value.count)) }
        #expect(report.blobs == expectedBlobs.sorted { $0.digest < $1.digest })
        let fanOuts = Set(package.blobs.keys.map { $0.hexDigest.prefix(2) }).count
        #expect(report.entryCount == 4 + fanOuts + package.blobs.count)
        let blobBytes = package.blobs.values.reduce(0) { $0 + $1.count }
        let expectedTotal =
            PackageArchive.mimeType.utf8.count + package.manifest.count + package.store.count + blobBytes
        #expect(report.totalBytes == Int64(expectedTotal))
        #expect(report.hasMimeType)
        #expect(report.topLevelFolder == nil)
        #expect(try sandbox.names() == ["Sample.deck", archive.lastPathComponent, "store-copy.sqlite"])
    }

    @Test func writesNothingWithoutStoreDestination() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let archive = sandbox.appending("out.zip")
        try PackageArchive.pack(directory: package.url, to: archive, format: .zip)
        let before = try treeSnapshot(sandbox.url)
        let report = try PackageArchive.scan(archive: archive)
        #expect(report.blobs.count == package.blobs.count)
        #expect(try treeSnapshot(sandbox.url) == before)
    }

    @Test func refusesExistingStoreDestination() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let archive = sandbox.appending("out.tar")
        try PackageArchive.pack(directory: package.url, to: archive, format: .tar)
        let existing = sandbox.appending("existing.sqlite")
        try Data("mine".utf8).write(to: existing)
        expectAlreadyExists(existing.path) {
            _ = try PackageArchive.scan(archive: archive, storeTo: existing)
        }
        #expect(try Data(contentsOf: existing) == Data("mine".utf8))
    }

    @Test func removesStoreCopyWhenALaterEntryIsRefused() throws {
        let sandbox = try ScratchDirectory()
        let archive = sandbox.appending("bad.tar")
        try RawArchive.write(
            [.file("manifest.json", "{}"), .store, .file("blobs/zz", "x")], format: .pax,
            to: archive)
        let storeCopy = sandbox.appending("store.sqlite")
        expectRefusal(.entryRefused(entry: "blobs/zz", reason: .unexpected)) {
            _ = try PackageArchive.scan(archive: archive, storeTo: storeCopy)
        }
        #expect(try sandbox.names() == ["bad.tar"])
    }

    @Test func reportsTopLevelFolderAndIgnoredEntries() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        var entries = [RawEntry.directory("Book.deck/")] + package.rawEntries(prefix: "Book.deck/")
        entries.append(.file("__MACOSX/Book.deck/._store.sqlite", "junk"))
        let archive = sandbox.appending("book.zip")
        try RawArchive.write(entries, format: .zip, to: archive)
        let report = try PackageArchive.scan(archive: archive)
        #expect(report.topLevelFolder == "Book.deck")
        #expect(!report.hasMimeType)
        #expect(report.entryCount == entries.count)
        #expect(report.blobs.count == package.blobs.count)
    }
}
