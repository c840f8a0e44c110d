import DeckKit
import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Document-level sharing: export, import, pack and unpack.
@Suite(.timed) struct SharingTests {
    let scratch: ScratchDirectory
    var directory: URL { scratch.url }

    init() throws { scratch = try ScratchDirectory() }

    func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    func makeSample(_ name: String = "Sample.deck") throws -> URL {
        let document = try PackageStore.create(
            at: url(name), contentType: SampleCards.contentType, schema: SampleCards.schema)
        try SampleCards.populate(document)
        try document.close()
        return url(name)
    }

    /// Every record of every entity, with data values loaded, in id order.
    func contents(of url: URL) throws -> [String: [Record]] {
        let document = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? document.close() }
        return try document.read { reader throws in
            var result: [String: [Record]] = [:]
            for entity in document.schema.entities {
                var records = try reader.fetch(RecordQuery(entity.name, includesSubentities: false))
                for index in records.indices {
                    for (key, value) in records[index].values {
                        if case .blob = value {
                            records[index].values[key] = .data(try reader.data(of: value) ?? Data())
                        }
                    }
                    for relationship in entity.relationships where relationship.isToMany {
                        records[index].values[relationship.name] = .references(
                            try reader.related(entity.name, id: records[index].id, relationship.name))
                    }
                }
                result[entity.name] = records
            }
            return result
        }
    }

    @Test(arguments: [ArchiveFormat.zip, .tar, .tarGzip, .tarZstd])
    func exportThenImportGivesTheSameDocument(format: ArchiveFormat) throws {
        let original = try makeSample()
        let archive = url("Sample.\(format.fileExtension)")
        try DeckDocument.export(at: original, to: archive, format: format)
        let imported = try DeckDocument.importArchive(at: archive, to: url("Imported.deck"))
        #expect(try contents(of: imported) == contents(of: original))
        #expect(try PackageVerifier.verify(at: imported).findings.isEmpty)
    }

    @Test func exportIsReproducible() throws {
        let original = try makeSample()
        try DeckDocument.export(at: original, to: url("a.zip"))
        // Opening and closing for writing changes nothing committed, and file times are not
        // content (set a day back here, explicitly): the archive must not change.
        try PackageStore.open(at: original).close()
        try shiftModificationTimes(under: original, by: -86_400)
        try DeckDocument.export(at: original, to: url("b.zip"))
        #expect(try Data(contentsOf: url("a.zip")) == Data(contentsOf: url("b.zip")))
        // A different committed state gives a different archive.
        let document = try PackageStore.open(at: original)
        try document.write { tx in try tx.insert("Tag", ["name": .string("extra")]) }
        try document.close()
        try DeckDocument.export(at: original, to: url("c.zip"))
        #expect(try Data(contentsOf: url("a.zip")) != Data(contentsOf: url("c.zip")))
    }

    @Test func exportTakesOnlyCommittedChangesAndReferencedBlobs() throws {
        let original = try makeSample()
        let writer = try PackageStore.open(at: original)
        let unsaved = try writer.beginTransaction()
        try unsaved.insert(
            "Card",
            [
                "front": .string("unsaved"), "back": .string("x"), "creationDate": .date(.now),
                "image": .data(Data(repeating: 7, count: 100_000)),
            ])
        // The writer holds the lock and an open transaction; export still works and sees the
        // committed state only, without the unsaved card's blob file.
        let archive = url("snapshot.zip")
        try DeckDocument.export(at: original, to: archive)
        let imported = try DeckDocument.importArchive(at: archive, to: url("Snapshot.deck"))
        let copy = try PackageStore.open(at: imported, mode: .readOnly)
        #expect(try copy.read { try $0.count(RecordQuery("Card")) } == 10)
        #expect(try copy.info().blobCount == 6)
        try copy.close()
        let scan = try PackageArchive.scan(archive: archive)
        #expect(scan.blobs.count == 6)
        unsaved.rollback()
        try writer.close()
    }

    @Test func importRefusesAnInvalidPackageAndLeavesNothing() throws {
        let original = try makeSample()
        // Damage a copy: drop one blob file, then archive the raw directory.
        let damaged = url("Damaged.deck")
        try FileManager.default.copyItem(at: original, to: damaged)
        let blobs = try FileManager.default.subpathsOfDirectory(
            atPath: damaged.appendingPathComponent("blobs").path
        )
        .filter { $0.count > 3 }
        let victim = try #require(blobs.first)
        try FileManager.default.removeItem(
            at: damaged.appendingPathComponent("blobs").appendingPathComponent(victim))
        try DeckDocument.pack(directory: damaged, to: url("damaged.zip"))
        #expect {
            try DeckDocument.importArchive(at: url("damaged.zip"), to: url("Result.deck"))
        } throws: { error in
            guard case DeckError.corrupt(_, let reason) = error else { return false }
            // The same finding verify reports: the blob the store references is not archived.
            return reason.contains((victim as NSString).lastPathComponent) && reason.contains("holds no")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!left.contains("Result.deck"))
        #expect(!left.contains { $0.hasPrefix(".Result.deck") })
        // The archive itself is a valid archive of an invalid package: verifyArchive says so.
        let report = try DeckDocument.verifyArchive(at: url("damaged.zip"))
        #expect(!report.isValid)
        #expect(report.findings.contains { $0.code == "blob-missing" })
    }

    @Test func importNeverReplacesAnExistingPath() throws {
        let original = try makeSample()
        try DeckDocument.export(at: original, to: url("s.zip"))
        #expect(throws: DeckError.self) { try DeckDocument.importArchive(at: url("s.zip"), to: original) }
        #expect(try PackageVerifier.verify(at: original).isValid)
    }

    @Test func exportNeverReplacesAnArchiveUnlessForced() throws {
        let original = try makeSample()
        try Data("keep me".utf8).write(to: url("taken.zip"))
        #expect {
            try DeckDocument.export(at: original, to: url("taken.zip"))
        } throws: { error in
            if case DeckError.alreadyExists = error { return true }
            return false
        }
        #expect(try Data(contentsOf: url("taken.zip")) == Data("keep me".utf8))
        try DeckDocument.export(at: original, to: url("taken.zip"), overwrite: true)
        #expect(try DeckDocument.verifyArchive(at: url("taken.zip")).isValid)
    }

    @Test func packRefusesALiveDocument() throws {
        let original = try makeSample()
        let writer = try PackageStore.open(at: original)
        #expect {
            try DeckDocument.pack(directory: original, to: url("live.zip"))
        } throws: { error in
            if case DeckError.locked(_, let pid) = error { return pid == getpid() }
            return false
        }
        try writer.close()
        try DeckDocument.pack(directory: original, to: url("closed.zip"))
        try DeckDocument.unpack(at: url("closed.zip"), to: url("Unpacked.deck"))
        #expect(try contents(of: url("Unpacked.deck")) == contents(of: original))
    }

    @Test func verifyArchiveFindsTruncationAndGarbage() throws {
        let original = try makeSample()
        try DeckDocument.export(at: original, to: url("whole.zip"))
        let bytes = try Data(contentsOf: url("whole.zip"))
        for cut in [10, 100, bytes.count / 2, bytes.count - 10] {
            try bytes.prefix(cut).write(to: url("cut.zip"))
            let report = try DeckDocument.verifyArchive(at: url("cut.zip"))
            #expect(!report.isValid, "cut at \(cut)")
            #expect(throws: DeckError.self) {
                try DeckDocument.importArchive(at: url("cut.zip"), to: url("Cut.deck"))
            }
            #expect(!FileManager.default.fileExists(atPath: url("Cut.deck").path))
        }
        #expect(throws: DeckError.self) { try DeckDocument.verifyArchive(at: url("missing.zip")) }
        #expect(throws: DeckError.self) { try DeckDocument.verifyArchive(at: original) }
    }

    @Test func defaultImportNamesAreNeverTheInput() {
        let cases: [(String, String)] = [
            ("/x/Spanish.zip", "Spanish.deck"),
            ("Notes.flashcards.tar.gz", "Notes.flashcards"),
            ("a.TAR.ZST", "a.deck"),
            ("b.tgz", "b.deck"),
            ("c.Tzst", "c.deck"),
            ("d.tar", "d.deck"),
            ("Notes.flashcards", "Notes.deck"),
            ("notes.txt", "notes.deck"),
            ("backup", "backup.deck"),
            ("Spanish.deck", "Spanish-imported.deck"),
            ("Spanish.deck.zip", "Spanish.deck"),
            (".zip", "Imported.deck"),
            (".deck", ".deck.deck"),
        ]
        for (input, expected) in cases {
            let name = DeckDocument.defaultImportName(for: URL(fileURLWithPath: input))
            #expect(name == expected, "\(input)")
            #expect(name != URL(fileURLWithPath: input).lastPathComponent, "\(input)")
        }
        // A name of 255 bytes stays within 255 bytes, cut at a whole character.
        for input in [String(repeating: "n", count: 255), String(repeating: "\u{e9}", count: 125) + ".txt"] {
            let name = DeckDocument.defaultImportName(for: URL(fileURLWithPath: input))
            #expect(name.utf8.count <= 255 && name.hasSuffix(".deck") && name != input, "\(name)")
        }
    }

    // MARK: Names of up to 255 bytes

    /// Names of exactly 255 bytes: ASCII, and two-byte characters (cut at a character boundary).
    static let longNames: [String] = [
        String(repeating: "a", count: 251), String(repeating: "\u{e9}", count: 125) + "x",
    ]

    @Test(arguments: longNames)
    func everyCommandTakesA255ByteName(_ stem: String) throws {
        let original = try makeSample()
        let archiveName = stem + ".zip"
        let packageName = stem + ".abc"
        #expect(archiveName.utf8.count == 255 && packageName.utf8.count == 255)
        // export and pack
        try DeckDocument.export(at: original, to: url(archiveName))
        #expect(try DeckDocument.verifyArchive(at: url(archiveName)).isValid)
        try DeckDocument.export(at: original, to: url(archiveName), overwrite: true)
        let packed = stem + ".tar"
        try DeckDocument.pack(directory: original, to: url(packed))
        // import and unpack
        try DeckDocument.importArchive(at: url(archiveName), to: url(packageName))
        #expect(try contents(of: url(packageName)) == contents(of: original))
        let unpacked = stem + ".xyz"
        try DeckDocument.unpack(at: url(packed), to: url(unpacked))
        #expect(try PackageVerifier.verify(at: url(unpacked)).isValid)
        // new
        let created = stem + ".new"
        try PackageStore.create(
            at: url(created), contentType: "org.example.long", schema: SampleCards.schema
        )
        .close()
        #expect(try PackageVerifier.verify(at: url(created)).isValid)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.hasPrefix(".")
        }
        #expect(left.isEmpty, "\(left)")
    }

    @Test func stagingNamesFitAndStayDistinct() {
        for length in [1, 100, 200, 220, 221, 230, 254, 255] {
            let a = String(repeating: "a", count: length)
            let b = String(repeating: "a", count: length - 1) + "b"
            for kind in Staging.Kind.allCases {
                let name = Staging.name(for: a, kind: kind, suffix: Staging.randomSuffix())
                #expect(name.utf8.count <= 255, "\(length) \(kind)")
                #expect(
                    Staging.base(for: a, kind: kind) != Staging.base(for: b, kind: kind), "\(length) \(kind)")
            }
        }
        // Multi-byte characters are never cut in half.
        let wide = String(repeating: "\u{65e5}", count: 85)
        for kind in Staging.Kind.allCases {
            let base = Staging.base(for: wide, kind: kind)
            #expect(
                base.unicodeScalars.allSatisfy {
                    $0 == "\u{65e5}" || $0 == "~" || "0123456789abcdef".unicodeScalars.contains($0)
                })
        }
    }

    // MARK: Destinations that are not regular files

    /// A FIFO, a directory, a symbolic link, a socket and (as root) a character device in the
    /// test directory, each with a way to tell it is still what it was.
    func specialFiles() throws -> [(String, () -> Bool)] {
        var made: [(String, () -> Bool)] = []
        func kind(_ name: String) -> mode_t {
            var info = stat()
            return lstat(url(name).path, &info) == 0 ? info.st_mode & S_IFMT : 0
        }
        try #require(mkfifo(url("fifo.zip").path, 0o644) == 0)
        made.append(("fifo.zip", { kind("fifo.zip") == S_IFIFO }))
        try FileManager.default.createDirectory(at: url("directory.zip"), withIntermediateDirectories: false)
        made.append(("directory.zip", { kind("directory.zip") == S_IFDIR }))
        try Data("target".utf8).write(to: url("target"))
        try FileManager.default.createSymbolicLink(
            atPath: url("link.zip").path, withDestinationPath: "target")
        made.append(
            (
                "link.zip",
                {
                    kind("link.zip") == S_IFLNK
                        && (try? Data(contentsOf: self.url("target"))) == Data("target".utf8)
                }
            ))
        let socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let socketPath = url("socket.zip").path
        if socketPath.utf8.count < MemoryLayout.size(ofValue: address.sun_path) {
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in socketPath.utf8.enumerated() { raw[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            if bound == 0 { made.append(("socket.zip", { kind("socket.zip") == S_IFSOCK })) }
        }
        close(socket)
        if mknod(url("device.zip").path, S_IFCHR | 0o644, dev_t((1 << 8) | 3)) == 0 {
            made.append(("device.zip", { kind("device.zip") == S_IFCHR }))
        }
        return made
    }

    @Test func exportAndPackNeverReplaceASpecialFile() throws {
        let original = try makeSample()
        for (name, intact) in try specialFiles() {
            for overwrite in [false, true] {
                for pack in [false, true] {
                    #expect {
                        if pack {
                            try DeckDocument.pack(directory: original, to: url(name), overwrite: overwrite)
                        } else {
                            try DeckDocument.export(at: original, to: url(name), overwrite: overwrite)
                        }
                    } throws: { error in
                        guard case DeckError.notARegularFile(let path, _) = error else { return false }
                        return path == url(name).path && (error as? DeckError)?.kind == .alreadyExists
                    }
                    #expect(intact(), "\(name) was changed (overwrite \(overwrite), pack \(pack))")
                }
            }
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.hasPrefix(".")
        }
        #expect(left.isEmpty, "\(left)")
        // A regular file is still replaced when asked.
        try Data("old".utf8).write(to: url("regular.zip"))
        try DeckDocument.export(at: original, to: url("regular.zip"), overwrite: true)
        #expect(try DeckDocument.verifyArchive(at: url("regular.zip")).isValid)
    }

    @Test func archivesThatAreNotRegularFilesAreRefusedAsInput() throws {
        let original = try makeSample()
        try DeckDocument.export(at: original, to: url("real.zip"))
        try FileManager.default.createSymbolicLink(
            atPath: url("link.zip").path, withDestinationPath: "real.zip")
        try #require(mkfifo(url("fifo.zip").path, 0o644) == 0)
        for name in ["link.zip", "fifo.zip"] {
            #expect(throws: DeckError.self, "\(name)") {
                try DeckDocument.importArchive(at: url(name), to: url("Out.deck"))
            }
            #expect(throws: DeckError.self, "\(name)") { try DeckDocument.verifyArchive(at: url(name)) }
        }
        #expect(!FileManager.default.fileExists(atPath: url("Out.deck").path))
    }
}
