import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.timed) struct ArchivePackTests {
    @Test(arguments: ArchiveFormat.allCases)
    func entryOrderIsSignatureManifestStoreThenSortedBlobs(format: ArchiveFormat) throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let url = sandbox.appending("out.\(format.fileExtension)")
        try PackageArchive.pack(directory: package.url, to: url, format: format)

        var expected = ["mimetype", "manifest.json", "store.sqlite", "blobs/"]
        var blobPaths: [String] = []
        for digest in package.blobs.keys {
            let hex = digest.hexDigest
            blobPaths.append("blobs/\(hex.prefix(2))/")
            blobPaths.append("blobs/\(hex.prefix(2))/\(hex)")
        }
        expected += Set(blobPaths).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(try RawArchive.names(of: url) == expected)
    }

    @Test func zipStartsWithStoredMimetype() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let url = sandbox.appending("out.zip")
        try PackageArchive.pack(directory: package.url, to: url, format: .zip)
        let bytes = [UInt8](try Data(contentsOf: url))
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        #expect(Array(bytes[0..<4]) == [0x50, 0x4b, 0x03, 0x04])
        #expect(u16(8) == 0, "compression method must be stored")
        #expect(u16(26) == 8)
        #expect(String(decoding: bytes[30..<38], as: UTF8.self) == "mimetype")
        let mime = Array(PackageArchive.mimeType.utf8)
        let start = 38 + u16(28)
        #expect(Array(bytes[start..<(start + mime.count)]) == mime)
        // Sizes are in the local header even though a data descriptor follows.
        #expect(u16(18) == mime.count && u16(22) == mime.count)

        let directory = try ZipCentralDirectory(Data(contentsOf: url))
        let methods = Dictionary(uniqueKeysWithValues: directory.records.map { ($0.name, $0.method) })
        #expect(methods["mimetype"] == 0)
        #expect(methods["manifest.json"] == 8)
        #expect(methods["store.sqlite"] == 8)
        for record in directory.records where record.name.hasPrefix("blobs/") {
            #expect(record.method == 0, "\(record.name)")
        }
        // DOS date 1980-01-01, time 00:00:00 for every entry.
        #expect(directory.records.allSatisfy { $0.dosDate == 0x21 && $0.dosTime == 0 })
    }

    @Test func tarStartsWithMimetype() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let url = sandbox.appending("out.tar")
        try PackageArchive.pack(directory: package.url, to: url, format: .tar)
        let bytes = [UInt8](try Data(contentsOf: url))
        #expect(String(decoding: bytes[0..<8], as: UTF8.self) == "mimetype" && bytes[8] == 0)
        #expect(Array(bytes[257..<263]) == Array("ustar\u{0}".utf8))
        #expect(Array(bytes[512..<(512 + 28)]) == Array(PackageArchive.mimeType.utf8))
    }

    /// Packs twice, with different source metadata in between: the archives must be
    /// byte-identical, and hold no time from the clock. (That the time zone does not reach them
    /// either is tested through `deck pack` in child processes, EndToEndSharingTests: setting `TZ`
    /// here would change it for every test running in parallel.)
    @Test func packingIsReproducible() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        for format in ArchiveFormat.allCases {
            try PackageArchive.pack(
                directory: package.url, to: sandbox.appending("first.\(format.fileExtension)"), format: format
            )
        }
        // Different source metadata, set explicitly: times three days back, other permissions.
        for file in ["manifest.json", "store.sqlite"] {
            let path = package.url.appendingPathComponent(file).path
            try shiftModificationTime(of: path, by: -3 * 86_400)
            #expect(chmod(path, 0o600) == 0)
        }
        for format in ArchiveFormat.allCases {
            try PackageArchive.pack(
                directory: package.url, to: sandbox.appending("second.\(format.fileExtension)"),
                format: format)
        }
        for format in ArchiveFormat.allCases {
            let first = try Data(contentsOf: sandbox.appending("first.\(format.fileExtension)"))
            let second = try Data(contentsOf: sandbox.appending("second.\(format.fileExtension)"))
            #expect(first == second, "\(format) archives differ")
        }
        // Nor does the clock reach an archive (the packs above may fall within one second): the
        // only header with a time of its own, gzip's, has MTIME 0 ("no time stamp", RFC 1952).
        let gzip = [UInt8](
            try Data(contentsOf: sandbox.appending("first.\(ArchiveFormat.tarGzip.fileExtension)")))
        try #require(gzip.count > 10 && gzip[0] == 0x1F && gzip[1] == 0x8B)
        #expect(gzip[4..<8].allSatisfy { $0 == 0 }, "gzip MTIME \(Array(gzip[4..<8]))")
    }

    @Test(arguments: ArchiveFormat.allCases)
    func skipsLockTemporariesAndJournals(format: ArchiveFormat) throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let manager = FileManager.default
        try Data("pid".utf8).write(to: package.url.appendingPathComponent("lock"))
        try manager.createDirectory(
            at: package.url.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        try Data("t".utf8).write(to: package.url.appendingPathComponent("tmp/partial"))
        for suffix in ["-wal", "-shm", "-journal"] {
            try Data("j".utf8).write(to: package.url.appendingPathComponent("store.sqlite\(suffix)"))
        }
        // What `unzip` of an archive leaves: replaced by the archive's own, first.
        try Data("text/plain".utf8).write(to: package.url.appendingPathComponent("mimetype"))
        let url = sandbox.appending("out.\(format.fileExtension)")
        try PackageArchive.pack(directory: package.url, to: url, format: format)
        let names = try RawArchive.names(of: url)
        #expect(names.filter { $0 == "mimetype" }.count == 1 && names.first == "mimetype")
        #expect(try PackageArchive.scan(archive: url).hasMimeType)
        #expect(
            !names.contains { $0.hasPrefix("lock") || $0.hasPrefix("tmp") || $0.hasPrefix("store.sqlite-") })
        let fanOuts = Set(package.blobs.keys.map { $0.hexDigest.prefix(2) })
        #expect(names.count == 4 + fanOuts.count + package.blobs.count)
    }

    @Test func usesTheStoreSnapshot() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let snapshot = sandbox.appending("snapshot.sqlite")
        let contents = Data("SQLite format 3\u{0}snapshot contents".utf8)
        try contents.write(to: snapshot)
        let url = sandbox.appending("out.zip")
        try PackageArchive.pack(directory: package.url, to: url, format: .zip, storeSnapshot: snapshot)
        let report = try PackageArchive.scan(archive: url, storeTo: sandbox.appending("store.out"))
        #expect(try Data(contentsOf: sandbox.appending("store.out")) == contents)
        #expect(report.storeBytes == Int64(contents.count))
    }

    @Test func refusesAnExistingDestinationUnlessOverwriting() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let url = sandbox.appending("out.zip")
        try Data("old".utf8).write(to: url)
        expectAlreadyExists(url.path) {
            try PackageArchive.pack(directory: package.url, to: url, format: .zip)
        }
        #expect(try Data(contentsOf: url) == Data("old".utf8))
        try PackageArchive.pack(directory: package.url, to: url, format: .zip, overwrite: true)
        #expect(try RawArchive.names(of: url).first == "mimetype")
        #expect(try sandbox.names() == ["Sample.deck", "out.zip"])
    }

    @Test func packsAPackageWithoutBlobsDirectory() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url, blobs: [])
        try FileManager.default.removeItem(at: package.url.appendingPathComponent("blobs"))
        let url = sandbox.appending("out.tar")
        try PackageArchive.pack(directory: package.url, to: url, format: .tar)
        #expect(try RawArchive.names(of: url) == ["mimetype", "manifest.json", "store.sqlite", "blobs/"])
    }

    enum Damage: String, CaseIterable, Sendable {
        case symlinkAtRoot, symlinkedBlob, symlinkedFanOut, unexpectedFile, unexpectedBlobFile
        case wrongDigest, wrongFanOut, missingStore, missingManifest, manifestIsDirectory
    }

    @Test(arguments: Damage.allCases)
    func refusesDamagedPackages(damage: Damage) throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let root = package.url
        let manager = FileManager.default
        let digest = SHA256Hasher.hash(Data("first blob".utf8)).hexDigest
        let blob = "blobs/\(digest.prefix(2))/\(digest)"
        let expected: ArchiveError
        switch damage {
        case .symlinkAtRoot:
            try manager.createSymbolicLink(
                atPath: root.appendingPathComponent("link").path, withDestinationPath: "/")
            expected = .packageRefused(path: "link", reason: .symbolicLink)
        case .symlinkedBlob:
            try manager.removeItem(at: root.appendingPathComponent(blob))
            try manager.createSymbolicLink(
                atPath: root.appendingPathComponent(blob).path, withDestinationPath: "/etc/passwd")
            expected = .packageRefused(path: blob, reason: .symbolicLink)
        case .symlinkedFanOut:
            try manager.createSymbolicLink(
                atPath: root.appendingPathComponent("blobs/zz").path, withDestinationPath: "/")
            expected = .packageRefused(path: "blobs/zz", reason: .symbolicLink)
        case .unexpectedFile:
            try Data().write(to: root.appendingPathComponent("notes.txt"))
            expected = .packageRefused(path: "notes.txt", reason: .unexpected)
        case .unexpectedBlobFile:
            try Data().write(to: root.appendingPathComponent("blobs/\(digest.prefix(2))/.DS_Store"))
            expected = .packageRefused(path: "blobs/\(digest.prefix(2))/.DS_Store", reason: .unexpected)
        case .wrongDigest:
            try Data("tampered".utf8).write(to: root.appendingPathComponent(blob))
            expected = .packageRefused(
                path: blob, reason: .digestMismatch(actual: SHA256Hasher.hash(Data("tampered".utf8))))
        case .wrongFanOut:
            let wrong = "blobs/\(digest.prefix(2) == "00" ? "01" : "00")"
            try manager.createDirectory(
                at: root.appendingPathComponent(wrong), withIntermediateDirectories: true)
            try manager.moveItem(
                at: root.appendingPathComponent(blob), to: root.appendingPathComponent("\(wrong)/\(digest)"))
            expected = .packageRefused(path: "\(wrong)/\(digest)", reason: .unexpected)
        case .missingStore:
            try manager.removeItem(at: root.appendingPathComponent("store.sqlite"))
            expected = .packageRefused(path: "store.sqlite", reason: .missing)
        case .missingManifest:
            try manager.removeItem(at: root.appendingPathComponent("manifest.json"))
            expected = .packageRefused(path: "manifest.json", reason: .missing)
        case .manifestIsDirectory:
            try manager.removeItem(at: root.appendingPathComponent("manifest.json"))
            try manager.createDirectory(
                at: root.appendingPathComponent("manifest.json"), withIntermediateDirectories: true)
            expected = .packageRefused(path: "manifest.json", reason: .notARegularFile)
        }
        for format in ArchiveFormat.allCases {
            expectRefusal(expected) {
                try PackageArchive.pack(
                    directory: root, to: sandbox.appending("out.\(format.fileExtension)"), format: format)
            }
        }
        #expect(try sandbox.names() == ["Sample.deck"], "nothing may be left next to the destination")
    }
}
