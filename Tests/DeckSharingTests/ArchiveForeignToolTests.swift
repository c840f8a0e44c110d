import DeckKit
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

#if canImport(Glibc)
    import Glibc
#endif

/// Every record of every entity (blob values loaded, to-many relationships listed), in id order:
/// what two copies of a document must agree on.
func documentDump(_ url: URL) throws -> [String: [String]] {
    let document = try PackageStore.open(at: url, mode: .readOnly)
    defer { try? document.close() }
    var result: [String: [String]] = [:]
    for entity in document.schema.entities {
        var lines: [String] = []
        for record in try document.read({ try $0.fetch(RecordQuery(entity.name, includesSubentities: false)) }
        ) {
            var fields: [String] = []
            for (key, value) in record.values.sorted(by: { $0.key < $1.key }) {
                if case .blob = value {
                    fields.append(
                        "\(key)=\(SHA256Hasher.hash(try document.read { try $0.data(of: value) } ?? Data()).hexDigest)"
                    )
                } else {
                    fields.append("\(key)=\(value)")
                }
            }
            for relationship in entity.relationships where relationship.isToMany {
                fields.append(
                    "\(relationship.name)=\(try document.read { try $0.related(entity.name, id: record.id, relationship.name) })"
                )
            }
            lines.append("#\(record.id) " + fields.joined(separator: " "))
        }
        result[entity.name] = lines
    }
    return result
}

/// Archives of real packages made by `zip -r`, GNU tar and bsdtar: a package that has been
/// written to has a `lock` and a `tmp/`, which are skipped; a raw copy of a store in use (a
/// non-empty `-wal` or `-journal`) is refused by import and verify alike, and unpacked as it is.
@Suite(.timed) struct ArchiveForeignToolTests {
    struct Tool: Sendable, CustomTestStringConvertible {
        let label: String
        let executable: String
        let arguments: [String]
        var testDescription: String { label }
        /// The archive's name (zip adds `.zip` to the one it is given).
        var output: String { executable.hasSuffix("/zip") ? "x.zip" : "x" }
    }

    /// Each archives `Name.deck` (in the sandbox) into `x`.
    static let tools: [Tool] = [
        Tool(label: "zip -r", executable: "/usr/bin/zip", arguments: ["-qr", "x", "Name.deck"]),
        Tool(label: "GNU tar", executable: "/usr/bin/tar", arguments: ["-cf", "x", "Name.deck"]),
        Tool(label: "GNU tar -z", executable: "/usr/bin/tar", arguments: ["-czf", "x", "Name.deck"]),
        Tool(
            label: "GNU tar posix", executable: "/usr/bin/tar",
            arguments: ["--format=posix", "-cf", "x", "Name.deck"]
        ),
        Tool(
            label: "GNU tar -C .", executable: "/usr/bin/tar",
            arguments: ["-cf", "x", "-C", "Name.deck", "."]),
        Tool(label: "bsdtar", executable: "/usr/bin/bsdtar", arguments: ["-cf", "x", "Name.deck"]),
        Tool(
            label: "bsdtar zip", executable: "/usr/bin/bsdtar",
            arguments: ["--format", "zip", "-cf", "x", "Name.deck"]),
        Tool(
            label: "bsdtar zstd", executable: "/usr/bin/bsdtar",
            arguments: ["--zstd", "-cf", "x", "Name.deck"]),
        Tool(
            label: "bsdtar -C .", executable: "/usr/bin/bsdtar",
            arguments: ["-cf", "x", "-C", "Name.deck", "."]),
    ]

    /// A flash-cards package that has been opened for writing, changed and saved twice, and
    /// closed: it has a `lock`, a `tmp/` (with a stray temporary in it) and blobs.
    static func writtenPackage(in sandbox: ScratchDirectory) throws -> URL {
        let url = sandbox.appending("Name.deck")
        let created = try PackageStore.create(
            at: url, contentType: SampleCards.contentType, schema: SampleCards.schema)
        try SampleCards.populate(created)
        try created.close()
        let document = try PackageStore.open(at: url)
        try document.write { tx in
            try tx.insert("Tag", ["name": .string("written later")])
        }
        try document.close()
        let tmp = url.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        try Data("half a blob".utf8).write(to: tmp.appendingPathComponent("blob-0123456789abcdef.part"))
        #expect(FileManager.default.fileExists(atPath: url.appendingPathComponent("lock").path))
        return url
    }

    /// A copy of `url` made while a writer has saved a change and still has the package open:
    /// what a killed writer leaves (store, non-empty `-wal`, `-shm`, `lock`, `tmp/`).
    static func copyWithLog(of url: URL, to copy: URL) throws -> String {
        let writer = try PackageStore.open(at: url)
        try writer.write { tx in
            try tx.insert("Tag", ["name": .string("only in the log")])
        }
        try FileManager.default.copyItem(at: url, to: copy)
        try writer.close()
        let wal = copy.appendingPathComponent("store.sqlite-wal").path
        let size = (try FileManager.default.attributesOfItem(atPath: wal)[.size] as? NSNumber)?.intValue ?? 0
        try #require(size > 0, "the copy should hold a non-empty write-ahead log")
        return "only in the log"
    }

    @Test(arguments: tools)
    func aWrittenAndClosedPackageImports(tool: Tool) throws {
        let sandbox = try ScratchDirectory()
        let original = try Self.writtenPackage(in: sandbox)
        try runTool(tool.executable, tool.arguments, in: sandbox.url)
        let archive = sandbox.appending(tool.output)
        let report = try DeckDocument.verifyArchive(at: archive)
        #expect(report.isValid, "\(report.findings)")
        let imported = try DeckDocument.importArchive(at: archive, to: sandbox.appending("Imported.deck"))
        #expect(try documentDump(imported) == documentDump(original))
        // Nothing of `lock` or `tmp/` came along.
        let names = try FileManager.default.contentsOfDirectory(atPath: imported.path).sorted()
        #expect(names == ["blobs", "manifest.json", "store.sqlite"])
        #expect(try PackageVerifier.verify(at: imported).findings.isEmpty)
        // Reading commands take the archive too.
        let count = try DeckDocument.withArchive(at: archive) { store in
            try store.read { try $0.count(RecordQuery("Tag")) }
        }
        #expect(count == 6)
    }

    @Test(arguments: tools)
    func aCopyWithAWriteAheadLogIsRefusedByImportAndVerifyAndUnpackedAsItIs(tool: Tool) throws {
        let sandbox = try ScratchDirectory()
        let original = try Self.writtenPackage(in: sandbox)
        let live = sandbox.appending("Live")
        try FileManager.default.createDirectory(at: live, withIntermediateDirectories: false)
        let logged = try Self.copyWithLog(of: original, to: live.appendingPathComponent("Name.deck"))
        try runTool(tool.executable, tool.arguments, in: live)
        let archive = live.appendingPathComponent(tool.output)

        let report = try DeckDocument.verifyArchive(at: archive)
        #expect(!report.isValid)
        #expect(report.findings.map(\.code) == ["archive-store-log"])
        #expect(report.findings.first?.message.contains("deck export") == true)
        #expect {
            try DeckDocument.importArchive(at: archive, to: sandbox.appending("Imported.deck"))
        } throws: { error in
            guard case DeckError.corrupt(_, let reason) = error else { return false }
            return reason.contains("store.sqlite-wal") && reason.contains("deck export")
        }
        #expect(try sandbox.names() == ["Live", "Name.deck"])
        #expect(throws: DeckError.self) { try DeckDocument.withArchive(at: archive) { _ in } }

        // The archive layer unpacks the log beside the store, as the package had it (never the
        // -shm, lock or tmp/)...
        let raw = sandbox.appending("Raw.deck")
        try PackageArchive.unpack(archive: archive, to: raw)
        let rawNames = try FileManager.default.contentsOfDirectory(atPath: raw.path).sorted()
        #expect(rawNames == ["blobs", "manifest.json", "store.sqlite", "store.sqlite-wal"])
        // ...and the document layer's unpack applies it in its private copy: the change saved only
        // in the log is there, and the result is a tidy package.
        let unpacked = sandbox.appending("Unpacked.deck")
        try DeckDocument.unpack(at: archive, to: unpacked)
        let names = try FileManager.default.contentsOfDirectory(atPath: unpacked.path).sorted()
        #expect(names == ["blobs", "manifest.json", "store.sqlite"])
        let document = try PackageStore.open(at: unpacked, mode: .readOnly)
        #expect(
            try document.read {
                try $0.count(
                    RecordQuery("Tag", where: .compare(.property("name"), .equal, .value(.string(logged)))))
            } == 1)
        try document.close()
        #expect(try PackageVerifier.verify(at: unpacked).findings.isEmpty)
    }

    @Test func aCopyOfAPackageOpenButNotYetWrittenImports() throws {
        let sandbox = try ScratchDirectory()
        let original = try Self.writtenPackage(in: sandbox)
        let writer = try PackageStore.open(at: original)
        let copy = sandbox.appending("Copy")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: false)
        try FileManager.default.copyItem(at: original, to: copy.appendingPathComponent("Name.deck"))
        try writer.close()
        try runTool("/usr/bin/zip", ["-qr", "x.zip", "Name.deck"], in: copy)
        let archive = copy.appendingPathComponent("x.zip")
        // An empty (or absent) log holds nothing: the store alone is the committed state.
        #expect(try DeckDocument.verifyArchive(at: archive).isValid)
        let imported = try DeckDocument.importArchive(at: archive, to: sandbox.appending("Imported.deck"))
        #expect(try documentDump(imported) == documentDump(original))
        let names = try FileManager.default.contentsOfDirectory(atPath: imported.path).sorted()
        #expect(names == ["blobs", "manifest.json", "store.sqlite"])
        #expect(try PackageVerifier.verify(at: imported).findings.isEmpty)
    }

    @Test(arguments: [RawFormat.zip, .pax])
    func theStoreLogRulesOnHandMadeArchives(format: RawFormat) throws {
        let sandbox = try ScratchDirectory()
        let original = try Self.writtenPackage(in: sandbox)
        let exported = sandbox.appending("e.zip")
        try DeckDocument.export(at: original, to: exported)
        // The exported entries, plus the given extras.
        func archive(_ name: String, _ extras: [RawEntry]) throws -> URL {
            var entries: [RawEntry] = []
            let scratch = sandbox.appending("scratch-\(name)")
            try DeckDocument.unpack(at: exported, to: scratch)
            for item in ["manifest.json", "store.sqlite"] {
                entries.append(.file(item, try Data(contentsOf: scratch.appendingPathComponent(item))))
            }
            let blobs = scratch.appendingPathComponent("blobs")
            for fanOut in try FileManager.default.contentsOfDirectory(atPath: blobs.path).sorted() {
                for blob in try FileManager.default.contentsOfDirectory(
                    atPath: blobs.appendingPathComponent(fanOut).path
                ).sorted() {
                    entries.append(
                        .file(
                            "blobs/\(fanOut)/\(blob)",
                            try Data(
                                contentsOf: blobs.appendingPathComponent(fanOut).appendingPathComponent(blob))
                        ))
                }
            }
            let url = sandbox.appending("\(name).\(format == .zip ? "zip" : "tar")")
            try RawArchive.write(entries + extras, format: format, to: url)
            return url
        }
        let cases: [(String, [RawEntry], Bool)] = [
            ("empty-wal", [.file("store.sqlite-wal", Data())], true),
            ("empty-journal", [.file("store.sqlite-journal", Data())], true),
            ("shm", [.file("store.sqlite-shm", "any bytes at all")], true),
            (
                "lock-and-tmp", [.file("lock", "1234\n"), .directory("tmp/"), .file("tmp/blob-1.part", "x")],
                true
            ),
            ("wal", [.file("store.sqlite-wal", "not empty")], false),
            ("journal", [.file("store.sqlite-journal", "not empty")], false),
        ]
        for (name, extras, accepted) in cases {
            let url = try archive(name, extras)
            let verified = try DeckDocument.verifyArchive(at: url).isValid
            let destination = sandbox.appending("Imported-\(name).deck")
            let imported = (try? DeckDocument.importArchive(at: url, to: destination)) != nil
            #expect(verified == accepted, "\(name): verify")
            #expect(imported == accepted, "\(name): import")
            if imported {
                let names = try FileManager.default.contentsOfDirectory(atPath: destination.path).sorted()
                #expect(names == ["blobs", "manifest.json", "store.sqlite"], "\(name)")
            }
        }
    }

    // MARK: Sparse files

    /// A package with one card whose image is 8 KiB of data, a 64 MiB hole and 8 KiB of data,
    /// its blob stored as a sparse file.
    /// With `zerosOnly`, the image is 1 MiB of zero bytes, its blob file one hole.
    static func sparsePackage(in sandbox: ScratchDirectory, zerosOnly: Bool = false) throws -> (URL, Data) {
        // Incompressible bytes; any will do, so the same every run.
        var generator = SeededGenerator(seed: 0x5BA4_5E00)
        var value = Data((0..<8192).map { _ in UInt8.random(in: 0...255, using: &generator) })
        value.append(Data(count: 64 << 20))
        value.append(Data((0..<8192).map { _ in UInt8.random(in: 0...255, using: &generator) }))
        if zerosOnly { value = Data(count: 1 << 20) }
        let url = sandbox.appending("Name.deck")
        let document = try PackageStore.create(
            at: url, contentType: SampleCards.contentType, schema: SampleCards.schema)
        try document.write { tx in
            let deck = try tx.insert("Deck", ["title": .string("Holes"), "created": .date(.now)])
            try tx.insert(
                "Card",
                [
                    "front": .string("sparse"), "back": .string("holes"), "creationDate": .date(.now),
                    "deck": .reference(deck), "image": .data(value),
                ])
        }
        try document.close()
        // Rewrite the blob file with a hole where the zeros are (same bytes, fewer blocks).
        let path = BlobStore(packagePath: url.path).path(for: SHA256Hasher.hash(value))
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        try #require(fd >= 0)
        defer { close(fd) }
        if zerosOnly {
            try #require(ftruncate(fd, off_t(value.count)) == 0)
            return (url, value)
        }
        let tail = 8192 + (64 << 20)
        let head = value.prefix(8192).withUnsafeBytes { pwrite(fd, $0.baseAddress, 8192, 0) }
        let end = value.suffix(8192).withUnsafeBytes { pwrite(fd, $0.baseAddress, 8192, off_t(tail)) }
        try #require(head == 8192 && end == 8192)
        return (url, value)
    }

    @Test(arguments: [
        ["-S", "-cf", "x", "Name.deck"],
        ["-S", "-czf", "x", "Name.deck"],
        ["-S", "--format=posix", "-cf", "x", "Name.deck"],
        ["-S", "--format=posix", "--sparse-version=0.0", "-cf", "x", "Name.deck"],
        ["-S", "--format=posix", "--sparse-version=0.1", "-cf", "x", "Name.deck"],
    ])
    func gnuTarSparseEntriesExtractAsTheirBytes(arguments: [String]) throws {
        let sandbox = try ScratchDirectory()
        let (original, value) = try Self.sparsePackage(in: sandbox)
        try runTool("/usr/bin/tar", arguments, in: sandbox.url)
        let archive = sandbox.appending("x")
        let size =
            (try FileManager.default.attributesOfItem(atPath: archive.path)[.size] as? NSNumber)?.intValue
            ?? 0
        // Far more than 200 bytes out for every byte in: the old ratio limit refused this.
        #expect(size < value.count / 200, "tar -S should have stored the hole as a sparse map")
        #expect(try DeckDocument.verifyArchive(at: archive).isValid)
        let imported = try DeckDocument.importArchive(at: archive, to: sandbox.appending("Imported.deck"))
        let blob = BlobStore(packagePath: imported.path).path(for: SHA256Hasher.hash(value))
        #expect(try Data(contentsOf: URL(fileURLWithPath: blob)) == value)
        #expect(try documentDump(imported) == documentDump(original))
    }

    /// A blob of zero bytes only, stored as a file that is one hole: GNU `tar -S` stores it as a
    /// sparse map without data, which libarchive reads as empty; its bytes are the declared size
    /// of zeros (bsdtar restores it so too), and the archive verifies and imports.
    @Test(arguments: [
        ["-S", "-cf", "x", "Name.deck"],
        ["-S", "--format=posix", "-cf", "x", "Name.deck"],
        ["-S", "--format=posix", "--sparse-version=0.0", "-cf", "x", "Name.deck"],
    ])
    func aBlobThatIsOneHoleExtractsAsItsZeros(arguments: [String]) throws {
        let sandbox = try ScratchDirectory()
        let (original, value) = try Self.sparsePackage(in: sandbox, zerosOnly: true)
        try runTool("/usr/bin/tar", arguments, in: sandbox.url)
        let archive = sandbox.appending("x")
        let report = try DeckDocument.verifyArchive(at: archive)
        #expect(report.isValid, "\(report.findings)")
        let imported = try DeckDocument.importArchive(at: archive, to: sandbox.appending("Imported.deck"))
        let blob = BlobStore(packagePath: imported.path).path(for: SHA256Hasher.hash(value))
        #expect(try Data(contentsOf: URL(fileURLWithPath: blob)) == value)
        #expect(try documentDump(imported) == documentDump(original))
    }
}
