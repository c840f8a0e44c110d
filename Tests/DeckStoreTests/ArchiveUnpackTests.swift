import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.timed) struct ArchiveUnpackTests {
    /// The tree an unpacked package must have: the fixture minus anything never archived.
    private func expectedTree(_ package: PackageFixture) throws -> [String: Data?] {
        try treeSnapshot(package.url).filter { !$0.key.hasPrefix("lock") && !$0.key.hasPrefix("tmp") }
    }

    @Test(arguments: ArchiveFormat.allCases)
    func roundTrip(format: ArchiveFormat) throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        try Data("pid".utf8).write(to: package.url.appendingPathComponent("lock"))
        let archive = sandbox.appending("out.\(format.fileExtension)")
        try PackageArchive.pack(directory: package.url, to: archive, format: format)
        let destination = sandbox.appending("Unpacked.deck")
        var validated: URL?
        let report = try PackageArchive.unpack(archive: archive, to: destination) { directory in
            validated = directory
            // The package is complete when validation sees it, in a hidden sibling directory.
            #expect(
                FileManager.default.fileExists(atPath: directory.appendingPathComponent("manifest.json").path)
            )
            #expect(
                directory.deletingLastPathComponent().standardizedFileURL == sandbox.url.standardizedFileURL)
            #expect(directory.lastPathComponent.hasPrefix("."))
        }
        #expect(validated != nil)
        #expect(try treeSnapshot(destination) == expectedTree(package))
        #expect(try permissions(destination.appendingPathComponent("manifest.json")) == 0o644)
        #expect(try permissions(destination.appendingPathComponent("blobs")) == 0o755)
        #expect(report.manifest == package.manifest)
        #expect(report.hasMimeType)
        #expect(report.topLevelFolder == nil)
        #expect(try sandbox.names() == ["Sample.deck", "Unpacked.deck", archive.lastPathComponent])
    }

    @Test func refusesAnExistingDestination() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let archive = sandbox.appending("out.zip")
        try PackageArchive.pack(directory: package.url, to: archive, format: .zip)
        let destination = sandbox.appending("Existing.deck")
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false)
        expectAlreadyExists(destination.path) {
            try PackageArchive.unpack(archive: archive, to: destination)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: destination.path).isEmpty)
        #expect(try sandbox.names() == ["Existing.deck", "Sample.deck", "out.zip"])
    }

    struct ValidationFailed: Error {}

    @Test func validationFailureLeavesNothing() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let archive = sandbox.appending("out.tar.gz")
        try PackageArchive.pack(directory: package.url, to: archive, format: .tarGzip)
        #expect(throws: ValidationFailed.self) {
            try PackageArchive.unpack(archive: archive, to: sandbox.appending("New.deck")) { _ in
                throw ValidationFailed()
            }
        }
        #expect(try sandbox.names() == ["Sample.deck", "out.tar.gz"])
    }

    // MARK: Refusals

    struct Hostile: Sendable, CustomTestStringConvertible {
        let label: String
        let format: RawFormat
        let entries: [RawEntry]
        let expected: ArchiveError
        var testDescription: String { label }
    }

    static let blobData = Data("blob content".utf8)
    static let blobHex = SHA256Hasher.hash(blobData).hexDigest
    static let blobPath = "blobs/\(blobHex.prefix(2))/\(blobHex)"
    static let base: [RawEntry] = [.mimeType, .file("manifest.json", "{}"), .store]

    static let hostile: [Hostile] = {
        let nfc = "Caf\u{e9}.deck"
        let nfd = "Cafe\u{301}.deck"
        let otherHex = String(repeating: "ab", count: 32)
        let wrongFanOut = "blobs/cd/\(otherHex)"
        var cases: [Hostile] = [
            Hostile(
                label: "dot-dot", format: .pax, entries: base + [.file("../evil", "x")],
                expected: .entryRefused(entry: "../evil", reason: .escapesPackage)),
            Hostile(
                label: "dot-dot inside", format: .zip, entries: base + [.file("blobs/../../evil", "x")],
                expected: .entryRefused(entry: "blobs/../../evil", reason: .escapesPackage)),
            Hostile(
                label: "absolute", format: .pax, entries: base + [.file("/tmp/evil", "x")],
                expected: .entryRefused(entry: "/tmp/evil", reason: .absolutePath)),
            Hostile(
                label: "absolute zip", format: .zip, entries: [.file("/etc/evil", "x")] + base,
                expected: .entryRefused(entry: "/etc/evil", reason: .absolutePath)),
            Hostile(
                label: "symlink", format: .pax,
                entries: base + [RawEntry(name: "link", kind: .symbolicLink("/etc/passwd"))],
                expected: .entryRefused(entry: "link", reason: .symbolicLink)),
            Hostile(
                label: "symlink zip", format: .zip,
                entries: [RawEntry(name: "manifest.json", kind: .symbolicLink("/etc/passwd"))],
                expected: .entryRefused(entry: "manifest.json", reason: .symbolicLink)),
            Hostile(
                label: "hard link outside", format: .pax,
                entries: base + [RawEntry(name: blobPath, kind: .hardLink("/etc/passwd"))],
                expected: .entryRefused(entry: blobPath, reason: .hardLink)),
            Hostile(
                label: "hard link to earlier entry", format: .gnutar,
                entries: [
                    .file("manifest.json", "{}"),
                    RawEntry(name: "store.sqlite", kind: .hardLink("manifest.json")),
                ],
                expected: .entryRefused(entry: "store.sqlite", reason: .hardLink)),
            Hostile(
                label: "fifo", format: .pax, entries: [RawEntry(name: "store.sqlite", kind: .fifo)],
                expected: .entryRefused(entry: "store.sqlite", reason: .fifo)),
            Hostile(
                label: "character device", format: .gnutar,
                entries: base + [RawEntry(name: "blobs/null", kind: .characterDevice)],
                expected: .entryRefused(entry: "blobs/null", reason: .device)),
            Hostile(
                label: "duplicate", format: .pax, entries: base + [.file("manifest.json", "{\"again\":1}")],
                expected: .entryRefused(entry: "manifest.json", reason: .duplicate)),
            Hostile(
                label: "duplicate zip", format: .zip,
                entries: base + [.file("store.sqlite", RawEntry.sqliteLike("x"))],
                expected: .entryRefused(entry: "store.sqlite", reason: .duplicate)),
            Hostile(
                label: "case-only duplicate", format: .zip, entries: base + [.file("Manifest.JSON", "{}")],
                expected: .entryRefused(entry: "Manifest.JSON", reason: .caseCollision(with: "manifest.json"))
            ),
            // ustar/GNU names are raw bytes; libarchive turns pax and UTF-8-flagged zip names
            // into NFC itself, so there the same pair is an exact duplicate.
            Hostile(
                label: "NFD vs NFC duplicate", format: .gnutar,
                entries: [.file("\(nfc)/manifest.json", "{}"), .file("\(nfd)/manifest.json", "{}")],
                expected: .entryRefused(
                    entry: "\(nfd)/manifest.json",
                    reason: .normalizationCollision(with: "\(nfc)/manifest.json"))),
            Hostile(
                label: "NFD vs NFC duplicate, pax", format: .pax,
                entries: [.file("\(nfc)/manifest.json", "{}"), .file("\(nfd)/manifest.json", "{}")],
                expected: .entryRefused(entry: "\(nfc)/manifest.json", reason: .duplicate)),
            Hostile(
                label: "NFD vs NFC and case, ustar", format: .gnutar,
                entries: [
                    .file("\(nfc)/manifest.json", "{}"), .file("\(nfd.uppercased())/manifest.json", "{}"),
                ],
                expected: .entryRefused(
                    entry: "\(nfd.uppercased())/manifest.json",
                    reason: .normalizationCollision(with: "\(nfc)/manifest.json"))),
            Hostile(
                label: "unknown file", format: .pax, entries: base + [.file("notes.txt", "hello")],
                expected: .entryRefused(entry: "notes.txt", reason: .unexpected)),
            Hostile(
                label: "another SQLite file", format: .zip, entries: base + [.file("store.sqlite-old", "x")],
                expected: .entryRefused(entry: "store.sqlite-old", reason: .unexpected)),
            Hostile(
                label: "log as a directory", format: .pax, entries: base + [.directory("store.sqlite-wal/")],
                expected: .entryRefused(entry: "store.sqlite-wal/", reason: .notARegularFile)),
            Hostile(
                label: "symlink named lock", format: .pax,
                entries: base + [RawEntry(name: "lock", kind: .symbolicLink("/etc/passwd"))],
                expected: .entryRefused(entry: "lock", reason: .symbolicLink)),
            // `lock` is a file and `tmp` a directory in a package: only those shapes are ignored.
            Hostile(
                label: "a file under lock", format: .pax, entries: base + [.file("lock/x", "x")],
                expected: .entryRefused(entry: "lock/x", reason: .unexpected)),
            Hostile(
                label: "lock as a directory", format: .zip, entries: base + [.directory("lock/")],
                expected: .entryRefused(entry: "lock/", reason: .notARegularFile)),
            Hostile(
                label: "a file under the shared-memory index", format: .pax,
                entries: base + [.file("store.sqlite-shm/x", "x")],
                expected: .entryRefused(entry: "store.sqlite-shm/x", reason: .unexpected)),
            Hostile(
                label: "tmp as a file", format: .zip, entries: base + [.file("tmp", "x")],
                expected: .entryRefused(entry: "tmp", reason: .notADirectory)),
            Hostile(
                label: "device under tmp", format: .gnutar,
                entries: base + [RawEntry(name: "tmp/null", kind: .characterDevice)],
                expected: .entryRefused(entry: "tmp/null", reason: .device)),
            Hostile(
                label: "dot-dot under tmp", format: .pax, entries: base + [.file("tmp/../../evil", "x")],
                expected: .entryRefused(entry: "tmp/../../evil", reason: .escapesPackage)),
            Hostile(
                label: "store not SQLite", format: .pax,
                entries: [.mimeType, .file("manifest.json", "{}"), .file("store.sqlite", "SQLite format 2")],
                expected: .entryRefused(entry: "store.sqlite", reason: .notSQLite)),
            Hostile(
                label: "store too short", format: .zip,
                entries: [.mimeType, .file("manifest.json", "{}"), .file("store.sqlite", "SQLite")],
                expected: .entryRefused(entry: "store.sqlite", reason: .notSQLite)),
            Hostile(
                label: "lone root file first", format: .zip, entries: [.file("README", "hi")] + base,
                expected: .entryRefused(entry: "README", reason: .unexpected)),
            Hostile(
                label: "wrong digest", format: .pax,
                entries: base + [.file(blobPath, "not the blob content")],
                expected: .entryRefused(
                    entry: blobPath,
                    reason: .digestMismatch(actual: SHA256Hasher.hash(Data("not the blob content".utf8))))
            ),
            Hostile(
                label: "wrong fan-out", format: .zip, entries: base + [.file(wrongFanOut, "x")],
                expected: .entryRefused(
                    entry: wrongFanOut, reason: .wrongFanOutDirectory(expected: "blobs/ab/"))),
            Hostile(
                label: "blob name not a digest", format: .pax, entries: base + [.file("blobs/ab/abc", "x")],
                expected: .entryRefused(entry: "blobs/ab/abc", reason: .unexpected)),
            Hostile(
                label: "uppercase digest", format: .pax,
                entries: base + [.file("blobs/\(blobHex.prefix(2))/\(blobHex.uppercased())", blobData)],
                expected: .entryRefused(
                    entry: "blobs/\(blobHex.prefix(2))/\(blobHex.uppercased())", reason: .unexpected)),
            Hostile(
                label: "wrong mimetype", format: .zip,
                entries: [.file("mimetype", "text/plain")] + base.dropFirst(),
                expected: .entryRefused(entry: "mimetype", reason: .wrongMimeType)),
            Hostile(
                label: "mimetype with newline", format: .zip,
                entries: [.file("mimetype", PackageArchive.mimeType + "\n")] + base.dropFirst(),
                expected: .entryRefused(entry: "mimetype", reason: .wrongMimeType)),
            Hostile(
                label: "backslash", format: .pax, entries: base + [.file("blobs\\evil", "x")],
                expected: .entryRefused(entry: "blobs\\evil", reason: .backslash)),
            // libarchive's zip reader turns backslashes into slashes; the central directory's
            // name is checked as stored.
            Hostile(
                label: "backslash dot-dot zip", format: .zip, entries: base + [.file("..\\..\\evil", "x")],
                expected: .entryRefused(entry: "..\\..\\evil", reason: .backslash)),
            Hostile(
                label: "backslash zip", format: .zip, entries: base + [.file("blobs\\ab", "x")],
                expected: .entryRefused(entry: "blobs\\ab", reason: .backslash)),
            Hostile(
                label: "control character", format: .pax, entries: base + [.file("bad\u{1}name", "x")],
                expected: .entryRefused(entry: "bad\u{1}name", reason: .controlCharacter)),
            Hostile(
                label: "empty component", format: .pax, entries: base + [.directory("blobs//ab/")],
                expected: .entryRefused(entry: "blobs//ab/", reason: .emptyComponent)),
            Hostile(
                label: "dot component", format: .pax, entries: base + [.directory("blobs/./ab/")],
                expected: .entryRefused(entry: "blobs/./ab/", reason: .dotComponent)),
            Hostile(
                label: "outside top-level folder", format: .zip,
                entries: [
                    .directory("Name.deck/"), .file("Name.deck/manifest.json", "{}"),
                    .file("Other/store.sqlite", "x"),
                ],
                expected: .entryRefused(
                    entry: "Other/store.sqlite", reason: .outsideTopLevelFolder("Name.deck"))),
            Hostile(
                label: "root entry after a top-level folder", format: .pax,
                entries: [.file("Name.deck/manifest.json", "{}"), .file("store.sqlite", "x")],
                expected: .entryRefused(entry: "store.sqlite", reason: .outsideTopLevelFolder("Name.deck"))),
            Hostile(
                label: "manifest is a directory", format: .pax, entries: [.directory("manifest.json/")],
                expected: .entryRefused(entry: "manifest.json/", reason: .notARegularFile)),
            Hostile(
                label: "blobs is a file", format: .zip, entries: base + [.file("blobs", "x")],
                expected: .entryRefused(entry: "blobs", reason: .notADirectory)),
            Hostile(
                label: "nested too deep", format: .pax,
                entries: base + [.file("blobs/ab/cd/\(otherHex)", "x")],
                expected: .entryRefused(entry: "blobs/ab/cd/\(otherHex)", reason: .unexpected)),
            Hostile(
                label: "missing store", format: .zip, entries: [.mimeType, .file("manifest.json", "{}")],
                expected: .missingEntry("store.sqlite")),
            Hostile(
                label: "missing manifest", format: .pax, entries: [.store],
                expected: .missingEntry("manifest.json")),
            Hostile(
                label: "only junk", format: .zip,
                entries: [.file("__MACOSX/._x", "x"), .file(".DS_Store", "x")],
                expected: .missingEntry("manifest.json")),
        ]
        cases.append(
            Hostile(
                label: "dot-dot in gzip tar", format: .tarGzip,
                entries: base + [.file("x/../../../evil", "x")],
                expected: .entryRefused(entry: "x/../../../evil", reason: .escapesPackage)))
        return cases
    }()

    @Test(arguments: hostile)
    func refusesHostileArchive(_ hostile: Hostile) throws {
        let sandbox = try ScratchDirectory()
        let archive = sandbox.appending("hostile.\(hostile.format == .zip ? "zip" : "tar")")
        try RawArchive.write(hostile.entries, format: hostile.format, to: archive)
        let destination = sandbox.appending("Result.deck")
        var validated = false
        expectRefusal(hostile.expected) {
            try PackageArchive.unpack(archive: archive, to: destination) { _ in validated = true }
        }
        #expect(!validated)
        #expect(try sandbox.names() == [archive.lastPathComponent], "leftovers after refusal")
        expectRefusal(hostile.expected) {
            _ = try PackageArchive.scan(archive: archive, storeTo: sandbox.appending("store.out"))
        }
        #expect(try sandbox.names() == [archive.lastPathComponent], "scan left something")
        #expect(FileManager.default.fileExists(atPath: "/tmp/evil") == false)
    }

    @Test func errorMessagesNameTheEntry() {
        #expect(
            "\(ArchiveError.entryRefused(entry: "../evil", reason: .escapesPackage))"
                == "../evil: path escapes the package")
        #expect(
            "\(ArchiveError.entryRefused(entry: "link", reason: .symbolicLink))"
                == "link: symbolic links are not allowed in a package archive")
        let digest = SHA256Hasher.hash(Data("test".utf8))
        #expect(
            "\(ArchiveError.entryRefused(entry: "blobs/ab/x", reason: .digestMismatch(actual: digest)))"
                == "blobs/ab/x: content does not match its digest (got \(digest.hexDigest))")
        #expect(digest.hexDigest.hasPrefix("9f86"))
    }

    // MARK: Archives made by other tools

    @Test func finderStyleZip() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        var entries: [RawEntry] = [.directory("Name.deck/")]
        entries += package.rawEntries(prefix: "Name.deck/")
        entries += [
            .file("Name.deck/.DS_Store", "finder"),
            .file("Name.deck/blobs/.DS_Store", "finder"),
            .directory("__MACOSX/"),
            .directory("__MACOSX/Name.deck/"),
            .file("__MACOSX/Name.deck/._manifest.json", "appledouble"),
            .file("__MACOSX/Name.deck/blobs/._.DS_Store", "appledouble"),
            .file("Name.deck/._store.sqlite", "appledouble"),
        ]
        let archive = sandbox.appending("Name.zip")
        try RawArchive.write(entries, format: .zip, to: archive)
        let destination = sandbox.appending("Name.deck")
        let report = try PackageArchive.unpack(archive: archive, to: destination)
        #expect(report.topLevelFolder == "Name.deck")
        #expect(!report.hasMimeType)
        #expect(try treeSnapshot(destination) == expectedTree(package))
    }

    /// Accepted layouts a reader would otherwise have to guess about (spec 16.5).
    @Test(arguments: [RawFormat.zip, .pax])
    func rootEntryMimetypeAnywhereAndImpliedDirectories(format: RawFormat) throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let entries = package.rawEntries()
        let layouts: [(String, [RawEntry])] = [
            ("a ./ root entry and ./ names", [.directory("./")] + package.rawEntries(prefix: "./")),
            ("a . root entry", [.directory(".")] + entries),
            ("mimetype last", entries + [.mimeType]),
            ("mimetype in the middle", Array(entries.prefix(2)) + [.mimeType] + entries.dropFirst(2)),
            ("no directory entries", entries.filter { !$0.name.hasSuffix("/") }),
            (
                "mimetype inside a top-level folder",
                [.file("Name.deck/mimetype", PackageArchive.mimeType)]
                    + package.rawEntries(prefix: "Name.deck/")
            ),
        ]
        for (label, layout) in layouts {
            let archive = sandbox.appending("layout.\(format == .zip ? "zip" : "tar")")
            try? FileManager.default.removeItem(at: archive)
            try RawArchive.write(layout, format: format, to: archive)
            let destination = sandbox.appending("Out-\(UUID().uuidString).deck")
            let report = try PackageArchive.unpack(archive: archive, to: destination)
            #expect(try treeSnapshot(destination) == expectedTree(package), "\(label)")
            #expect(report.hasMimeType == label.contains("mimetype"), "\(label)")
        }
        // Inconsistent ones are refused.
        let refused: [(String, [RawEntry], ArchiveError)] = [
            (
                "./ after a top-level folder", package.rawEntries(prefix: "Name.deck/") + [.directory("./")],
                .entryRefused(entry: "./", reason: .outsideTopLevelFolder("Name.deck"))
            ),
            (
                "the same name with and without ./", entries + [.file("./manifest.json", "{}")],
                .entryRefused(entry: "./manifest.json", reason: .duplicate)
            ),
            (
                "two mimetype entries", [.mimeType] + entries + [.mimeType],
                .entryRefused(entry: "mimetype", reason: .duplicate)
            ),
            (
                "mimetype as a directory", [.directory("mimetype/")] + entries,
                .entryRefused(entry: "mimetype/", reason: .notARegularFile)
            ),
        ]
        for (label, layout, expected) in refused {
            let archive = sandbox.appending("refused.\(format == .zip ? "zip" : "tar")")
            try? FileManager.default.removeItem(at: archive)
            try RawArchive.write(layout, format: format, to: archive)
            expectRefusal(expected, "\(label)") { _ = try PackageArchive.scan(archive: archive) }
        }
    }

    @Test func zipDashR() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url, name: "Name.deck")
        try runTool("/usr/bin/zip", ["-qr", "Name.zip", "Name.deck"], in: sandbox.url)
        let report = try PackageArchive.unpack(
            archive: sandbox.appending("Name.zip"), to: sandbox.appending("Out.deck"))
        #expect(report.topLevelFolder == "Name.deck")
        #expect(try treeSnapshot(sandbox.appending("Out.deck")) == expectedTree(package))
    }

    @Test(arguments: [
        ["-cf", "x.tar", "Name.deck"],
        ["-czf", "x.tar", "Name.deck"],
        ["--format=posix", "-cf", "x.tar", "Name.deck"],
        ["-cf", "x.tar", "-C", "Name.deck", "."],
    ])
    func gnuTar(arguments: [String]) throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url, name: "Name.deck")
        try runTool("/usr/bin/tar", arguments, in: sandbox.url)
        try PackageArchive.unpack(archive: sandbox.appending("x.tar"), to: sandbox.appending("Out.deck"))
        #expect(try treeSnapshot(sandbox.appending("Out.deck")) == expectedTree(package))
    }

    @Test(arguments: [
        ["-cf", "x.tar", "Name.deck"],
        ["--zstd", "-cf", "x.tar", "Name.deck"],
        ["--format", "zip", "-cf", "x.tar", "Name.deck"],
        ["-cf", "x.tar", "-C", "Name.deck", "."],
    ])
    func bsdtar(arguments: [String]) throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url, name: "Name.deck")
        try runTool("/usr/bin/bsdtar", arguments, in: sandbox.url)
        try PackageArchive.unpack(archive: sandbox.appending("x.tar"), to: sandbox.appending("Out.deck"))
        #expect(try treeSnapshot(sandbox.appending("Out.deck")) == expectedTree(package))
    }

    @Test func nonASCIITopLevelFolder() throws {
        let sandbox = try ScratchDirectory()
        let name = "Caf\u{e9} \u{65e5}\u{672c}.deck"
        let package = try PackageFixture.make(in: sandbox.url, name: name)
        let utf8 = ["LC_ALL": "C.UTF-8"]
        try runTool("/usr/bin/tar", ["-cf", "gnu.tar", name], in: sandbox.url, environment: utf8)
        try runTool("/usr/bin/zip", ["-qr", "info.zip", name], in: sandbox.url, environment: utf8)
        try runTool(
            "/usr/bin/bsdtar", ["--format", "zip", "-cf", "bsd.zip", name], in: sandbox.url, environment: utf8
        )
        for archive in ["gnu.tar", "info.zip", "bsd.zip"] {
            let destination = sandbox.appending("out-\(archive).deck")
            let report = try PackageArchive.unpack(archive: sandbox.appending(archive), to: destination)
            #expect(report.topLevelFolder == name, "\(archive)")
            #expect(try treeSnapshot(destination) == expectedTree(package), "\(archive)")
        }
    }

    // MARK: Limits

    @Test(arguments: [ArchiveFormat.zip, .tar])
    func tooManyEntries(format: ArchiveFormat) throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let archive = sandbox.appending("out.\(format.fileExtension)")
        try PackageArchive.pack(directory: package.url, to: archive, format: format)
        let names = try RawArchive.names(of: archive)
        let limits = UnpackLimits(maxEntries: 5)
        // A zip's central directory gives the count before any entry is read; a tar's entries
        // are counted as they come.
        let entry = format == .zip ? "out.zip" : names[5]
        expectRefusal(.limitExceeded(entry: entry, limit: .entries(5))) {
            try PackageArchive.unpack(archive: archive, to: sandbox.appending("Out.deck"), limits: limits)
        }
        #expect(try sandbox.names() == ["Sample.deck", archive.lastPathComponent])
        try PackageArchive.unpack(
            archive: archive, to: sandbox.appending("Out.deck"), limits: UnpackLimits(maxEntries: names.count)
        )
    }

    @Test(arguments: [ArchiveFormat.zip, .tar])
    func entryAndTotalSizeLimits(format: ArchiveFormat) throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let archive = sandbox.appending("out.\(format.fileExtension)")
        try PackageArchive.pack(directory: package.url, to: archive, format: format)
        let storeSize = Int64(package.store.count)
        expectRefusal(.limitExceeded(entry: "store.sqlite", limit: .entryBytes(storeSize - 1))) {
            _ = try PackageArchive.scan(archive: archive, limits: UnpackLimits(maxEntryBytes: storeSize - 1))
        }
        let upToStore = Int64(PackageArchive.mimeType.utf8.count + package.manifest.count) + storeSize
        expectRefusal(.limitExceeded(entry: "store.sqlite", limit: .totalBytes(upToStore - 1))) {
            try PackageArchive.unpack(
                archive: archive, to: sandbox.appending("Out.deck"),
                limits: UnpackLimits(maxTotalBytes: upToStore - 1))
        }
        expectRefusal(.limitExceeded(entry: "manifest.json", limit: .manifestBytes(3))) {
            _ = try PackageArchive.scan(archive: archive, limits: UnpackLimits(maxManifestBytes: 3))
        }
        #expect(try sandbox.names() == ["Sample.deck", archive.lastPathComponent])
        let exact = UnpackLimits(maxTotalBytes: try PackageArchive.scan(archive: archive).totalBytes)
        try PackageArchive.unpack(archive: archive, to: sandbox.appending("Out.deck"), limits: exact)
    }

    // MARK: Damaged input

    @Test(arguments: ArchiveFormat.allCases)
    func truncatedArchives(format: ArchiveFormat) throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let archive = sandbox.appending("out.\(format.fileExtension)")
        try PackageArchive.pack(directory: package.url, to: archive, format: format)
        let data = try Data(contentsOf: archive)
        // A plain tar cut exactly between two entries looks complete to any reader, so tar cuts
        // fall inside the entries (the last 1024 bytes are the end-of-archive marker).
        let span = format == .tar ? data.count - 1024 : data.count
        var cuts = [0.1, 0.3, 0.5, 0.7, 0.9].map { Int(Double(span) * $0) }
        cuts += [1, 10, 100, span - 1]
        for cut in cuts {
            let adjusted = format == .tar && cut % 512 == 0 ? cut + 7 : cut
            let truncated = sandbox.appending("cut-\(adjusted).\(format.fileExtension)")
            try data.prefix(adjusted).write(to: truncated)
            expectRefusal(nil, "cut at \(adjusted) of \(data.count)") {
                try PackageArchive.unpack(archive: truncated, to: sandbox.appending("Out.deck"))
            }
            expectRefusal(nil, "cut at \(adjusted) of \(data.count)") {
                _ = try PackageArchive.scan(archive: truncated)
            }
            try FileManager.default.removeItem(at: truncated)
        }
        #expect(try sandbox.names() == ["Sample.deck", archive.lastPathComponent])
    }

    @Test func garbageAndEmptyFiles() throws {
        let sandbox = try ScratchDirectory()
        let seed = TestSeed("ArchiveUnpackTests.garbage", filter: "ArchiveUnpackTests")
        var generator = seed.generator()
        let garbage = sandbox.appending("garbage.zip")
        try Data((0..<100_000).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: garbage)
        let empty = sandbox.appending("empty.tar")
        try Data().write(to: empty)
        let zipLike = sandbox.appending("ziplike.zip")
        try Data([0x50, 0x4b, 0x03, 0x04] + [UInt8](repeating: 0xff, count: 200)).write(to: zipLike)
        for archive in [garbage, empty, zipLike] {
            expectRefusal(nil, "\(archive.lastPathComponent), \(seed)") {
                try PackageArchive.unpack(archive: archive, to: sandbox.appending("Out.deck"))
            }
        }
        let missing = expectDeckError {
            try PackageArchive.unpack(
                archive: sandbox.appending("missing.zip"), to: sandbox.appending("Out.deck"))
        }
        #expect(missing?.kind == .cannotOpen, "\(String(describing: missing))")
        #expect(try sandbox.names() == ["empty.tar", "garbage.zip", "ziplike.zip"])
    }

    @Test func corruptBlobDataIsCaughtByCRCOrDigest() throws {
        let sandbox = try ScratchDirectory()
        let package = try PackageFixture.make(in: sandbox.url)
        let archive = sandbox.appending("out.zip")
        try PackageArchive.pack(directory: package.url, to: archive, format: .zip)
        var bytes = [UInt8](try Data(contentsOf: archive))
        // Flip a byte inside the stored 5000-byte blob.
        let needle = Array((0..<5000).map { UInt8($0 % 251) }.prefix(300))
        guard
            let start = (0..<(bytes.count - needle.count)).first(where: {
                Array(bytes[$0..<($0 + 300)]) == needle
            })
        else {
            Issue.record("blob not found in archive")
            return
        }
        bytes[start + 100] ^= 0xff
        try Data(bytes).write(to: archive)
        expectRefusal(nil) {
            try PackageArchive.unpack(archive: archive, to: sandbox.appending("Out.deck"))
        }
        #expect(try sandbox.names() == ["Sample.deck", "out.zip"])
    }
}
