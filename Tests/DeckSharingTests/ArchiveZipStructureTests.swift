import DeckKit
import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// A zip's central directory against its local headers (spec 16.7), and the rule that verifying
/// an archive and importing it always agree (spec 16.8).
@Suite(.timed) struct ArchiveZipStructureTests {
    /// Where the parts of a zip are, for patching them.
    struct Layout {
        struct Entry {
            var name: String
            /// Offset of the central-directory record.
            var record: Int
            var local: Int
            var localNameLength: Int
            var localExtraLength: Int
            var compressedSize: Int
            var flags: Int
            var dataStart: Int { local + 30 + localNameLength + localExtraLength }
            /// Offset of the data descriptor (after its signature), when the entry has one.
            var descriptor: Int? { flags & 8 != 0 ? dataStart + compressedSize + 4 : nil }
            /// Where the next entry's local header starts.
            var end: Int { dataStart + compressedSize + (flags & 8 != 0 ? 16 : 0) }
        }

        var entries: [Entry] = []
        var end: Int
        var directory: Int

        init(_ bytes: [UInt8]) throws {
            func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
            func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
            end = bytes.count - 22
            try #require(u32(end) == 0x0605_4B50)
            directory = u32(end + 16)
            var at = directory
            for _ in 0..<u16(end + 10) {
                let nameLength = u16(at + 28)
                let local = u32(at + 42)
                entries.append(
                    Entry(
                        name: String(decoding: bytes[(at + 46)..<(at + 46 + nameLength)], as: UTF8.self),
                        record: at, local: local, localNameLength: u16(local + 26),
                        localExtraLength: u16(local + 28), compressedSize: u32(at + 20), flags: u16(at + 8)))
                at += 46 + nameLength + u16(at + 30) + u16(at + 32)
            }
        }

        func entry(_ name: String) throws -> Entry {
            try #require(entries.first { $0.name == name })
        }
    }

    /// A Deck export of the flash-cards sample, as bytes, and the sandbox it lives in.
    static func exported() throws -> (ScratchDirectory, [UInt8]) {
        let sandbox = try ScratchDirectory()
        let url = sandbox.appending("Sample.deck")
        let document = try PackageStore.create(
            at: url, contentType: SampleCards.contentType, schema: SampleCards.schema)
        try SampleCards.populate(document)
        try document.close()
        try DeckDocument.export(at: url, to: sandbox.appending("good.zip"))
        return (sandbox, [UInt8](try Data(contentsOf: sandbox.appending("good.zip"))))
    }

    struct Mutation: Sendable, CustomTestStringConvertible {
        let label: String
        /// libarchive itself finds this damage (and says so first); for the others, only the
        /// check of the central directory against the local headers does.
        var libarchiveCatchesIt = false
        let apply: @Sendable (inout [UInt8], Layout) throws -> Void
        var testDescription: String { label }
    }

    static func put16(_ bytes: inout [UInt8], _ at: Int, _ value: Int) {
        bytes[at] = UInt8(value & 0xFF)
        bytes[at + 1] = UInt8((value >> 8) & 0xFF)
    }

    static func put32(_ bytes: inout [UInt8], _ at: Int, _ value: Int) {
        put16(&bytes, at, value & 0xFFFF)
        put16(&bytes, at + 2, (value >> 16) & 0xFFFF)
    }

    static func u32(_ bytes: [UInt8], _ at: Int) -> Int {
        Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
    }

    /// Inserts `gap` before the local header of entry `index`, moving everything after it.
    static func insert(_ gap: [UInt8], before index: Int, into bytes: inout [UInt8], _ layout: Layout) {
        let at = layout.entries[index].local
        bytes.insert(contentsOf: gap, at: at)
        for entry in layout.entries {
            let record = entry.record + gap.count
            if entry.local >= at { put32(&bytes, record + 42, entry.local + gap.count) }
        }
        put32(&bytes, layout.end + gap.count + 16, layout.directory + gap.count)
    }

    static let mutations: [Mutation] = [
        Mutation(label: "central directory renames an entry") { bytes, layout in
            let entry = try layout.entry("manifest.json")
            bytes[entry.record + 46 + 12] = UInt8(ascii: "x")
        },
        Mutation(label: "local header renames an entry") { bytes, layout in
            let entry = try layout.entry("store.sqlite")
            bytes[entry.local + 30 + 11] = UInt8(ascii: "x")
        },
        Mutation(label: "local header gives another size") { bytes, layout in
            let entry = try layout.entry("manifest.json")
            put32(&bytes, entry.local + 22, 5)
        },
        Mutation(label: "local header gives another method") { bytes, layout in
            let entry = try layout.entry("manifest.json")
            put16(&bytes, entry.local + 8, 0)
        },
        Mutation(label: "data descriptor gives another size") { bytes, layout in
            let entry = try layout.entry("store.sqlite")
            let descriptor = try #require(entry.descriptor)
            put32(&bytes, descriptor + 8, u32(bytes, descriptor + 8) + 1)
        },
        Mutation(label: "end record counts one entry fewer") { bytes, layout in
            let count = layout.entries.count - 1
            put16(&bytes, layout.end + 8, count)
            put16(&bytes, layout.end + 10, count)
        },
        Mutation(label: "central directory size is off", libarchiveCatchesIt: true) { bytes, layout in
            put32(&bytes, layout.end + 12, u32(bytes, layout.end + 12) - 46)
        },
        Mutation(label: "two entries share one local header (overlap)") { bytes, layout in
            put32(&bytes, layout.entries[3].record + 42, layout.entries[2].local)
        },
        Mutation(label: "an entry's data runs over the next header (overlap)") { bytes, layout in
            let entry = layout.entries[1]
            put32(&bytes, entry.record + 20, entry.compressedSize + 40)
        },
        Mutation(label: "an unlisted entry hides between two") { bytes, layout in
            // A whole local entry copied from the first one: a streaming reader would list it.
            let first = layout.entries[0]
            insert(Array(bytes[first.local..<first.end]), before: 3, into: &bytes, layout)
        },
        Mutation(label: "bytes before the first entry") { bytes, layout in
            insert([UInt8](repeating: 0x20, count: 64), before: 0, into: &bytes, layout)
        },
        Mutation(label: "bytes after the end record") { bytes, _ in
            bytes += Array("trailing".utf8)
        },
        Mutation(label: "another zip in front") { bytes, _ in
            bytes = bytes + bytes
        },
        Mutation(label: "encrypted entry") { bytes, layout in
            let entry = try layout.entry("manifest.json")
            bytes[entry.record + 8] |= 1
            bytes[entry.local + 6] |= 1
        },
    ]

    @Test(arguments: mutations)
    func refusesAZipWhoseDirectoryAndLocalHeadersDisagree(_ mutation: Mutation) throws {
        let (sandbox, good) = try Self.exported()
        var bytes = good
        try mutation.apply(&bytes, try Layout(good))
        let archive = sandbox.appending("bad.zip")
        try Data(bytes).write(to: archive)
        var refusal: ArchiveError?
        do {
            try PackageArchive.unpack(archive: archive, to: sandbox.appending("Out.deck"))
        } catch DeckError.archive(let error) {
            refusal = error
        }
        switch refusal {
        case .entryRefused(_, .zipStructure)?, .entryRefused(_, .encrypted)?: break
        case .unreadable? where mutation.libarchiveCatchesIt: break
        default: Issue.record("\(mutation.label): \(String(describing: refusal))")
        }
        #expect(try sandbox.names() == ["Sample.deck", "bad.zip", "good.zip"])
        #expect(try !DeckDocument.verifyArchive(at: archive).isValid)
        #expect(throws: DeckError.self) {
            try DeckDocument.importArchive(at: archive, to: sandbox.appending("Imported.deck"))
        }
    }

    @Test func acceptsAZipWithAComment() throws {
        let (sandbox, good) = try Self.exported()
        let layout = try Layout(good)
        var bytes = good
        let comment = Array("a comment after the end record".utf8)
        Self.put16(&bytes, layout.end + 20, comment.count)
        bytes += comment
        let archive = sandbox.appending("commented.zip")
        try Data(bytes).write(to: archive)
        #expect(try DeckDocument.verifyArchive(at: archive).isValid)
        try DeckDocument.importArchive(at: archive, to: sandbox.appending("Imported.deck"))
    }

    @Test func aDeclaredSizeSmallerThanTheDataIsRefused() throws {
        let (sandbox, good) = try Self.exported()
        let layout = try Layout(good)
        var bytes = good
        // Every copy of the size (directory, local header, descriptor) agrees, and is short.
        let entry = try layout.entry("store.sqlite")
        let size = Self.u32(bytes, entry.record + 24)
        Self.put32(&bytes, entry.record + 24, size - 100)
        Self.put32(&bytes, entry.local + 22, size - 100)
        Self.put32(&bytes, try #require(entry.descriptor) + 8, size - 100)
        let archive = sandbox.appending("short.zip")
        try Data(bytes).write(to: archive)
        // Refused at the first byte past the declared size, or by libarchive's zip reader,
        // which notices at the end of the entry.
        #expect {
            try PackageArchive.scan(archive: archive)
        } throws: { error in
            switch archiveRefusal(error) {
            case .entryRefused("store.sqlite", .sizeMismatch(Int64(size - 100), Int64(size)))?: true
            case .unreadable("store.sqlite", let message)?: message.contains("wrong size")
            default: false
            }
        }
        #expect(try !DeckDocument.verifyArchive(at: archive).isValid)
    }

    // MARK: Verify and import agree

    /// An archive that verify and import must judge alike, and whether it is acceptable.
    struct Case: Sendable, CustomTestStringConvertible {
        let label: String
        let acceptable: Bool
        let make: @Sendable (ScratchDirectory, URL) throws -> URL
        var testDescription: String { label }
    }

    /// The sample's export, unpacked: entries to rebuild archives from.
    static func entries(of archive: URL, in sandbox: ScratchDirectory) throws -> [RawEntry] {
        let scratch = sandbox.appending("entries-\(UUID().uuidString)")
        try DeckDocument.unpack(at: archive, to: scratch)
        defer { try? FileManager.default.removeItem(at: scratch) }
        var entries: [RawEntry] = [.mimeType]
        for item in ["manifest.json", "store.sqlite"] {
            entries.append(.file(item, try Data(contentsOf: scratch.appendingPathComponent(item))))
        }
        let enumerator = FileManager.default.enumerator(atPath: scratch.appendingPathComponent("blobs").path)
        while let relative = enumerator?.nextObject() as? String {
            let url = scratch.appendingPathComponent("blobs").appendingPathComponent(relative)
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
            if !isDirectory.boolValue {
                entries.append(.file("blobs/\(relative)", try Data(contentsOf: url)))
            }
        }
        return entries
    }

    static let cases: [Case] = [
        Case(label: "as exported", acceptable: true) { _, good in good },
        Case(label: "manifest padded to 2 MiB (valid JSON)", acceptable: false) { sandbox, good in
            var entries = try entries(of: good, in: sandbox)
            guard case .file(let manifest) = entries[1].kind else { throw RawArchiveError(description: "?") }
            var padded = manifest
            padded.append(Data(repeating: 0x20, count: 2 << 20))
            entries[1] = .file("manifest.json", padded)
            let url = sandbox.appending("big-manifest.tar")
            try RawArchive.write(entries, format: .pax, to: url)
            return url
        },
        Case(label: "manifest padded to just under 1 MiB", acceptable: true) { sandbox, good in
            var entries = try entries(of: good, in: sandbox)
            guard case .file(let manifest) = entries[1].kind else { throw RawArchiveError(description: "?") }
            var padded = manifest
            padded.append(Data(repeating: 0x20, count: (1 << 20) - manifest.count))
            entries[1] = .file("manifest.json", padded)
            let url = sandbox.appending("full-manifest.tar")
            try RawArchive.write(entries, format: .pax, to: url)
            return url
        },
        Case(label: "manifest not JSON", acceptable: false) { sandbox, good in
            var entries = try entries(of: good, in: sandbox)
            entries[1] = .file("manifest.json", "not json")
            let url = sandbox.appending("bad-manifest.zip")
            try RawArchive.write(entries, format: .zip, to: url)
            return url
        },
        Case(label: "a referenced blob left out", acceptable: false) { sandbox, good in
            let entries = try entries(of: good, in: sandbox)
            let url = sandbox.appending("no-blob.zip")
            try RawArchive.write(Array(entries.dropLast()), format: .zip, to: url)
            return url
        },
        Case(label: "an orphan blob added", acceptable: true) { sandbox, good in
            let extra = Data("nobody references me".utf8)
            let hex = SHA256Hasher.hash(extra).hexDigest
            let url = sandbox.appending("orphan.zip")
            try RawArchive.write(
                try entries(of: good, in: sandbox) + [.file("blobs/\(hex.prefix(2))/\(hex)", extra)],
                format: .zip,
                to: url)
            return url
        },
        Case(label: "a non-empty write-ahead log", acceptable: false) { sandbox, good in
            let url = sandbox.appending("wal.tar")
            try RawArchive.write(
                try entries(of: good, in: sandbox) + [.file("store.sqlite-wal", "frames")], format: .pax,
                to: url)
            return url
        },
        Case(label: "lock, tmp and shm of a used package", acceptable: true) { sandbox, good in
            let url = sandbox.appending("used.tar")
            let extras: [RawEntry] = [
                .file("lock", "123\n"), .directory("tmp/"), .file("tmp/blob-1.part", "x"),
                .file("store.sqlite-shm", "index"),
            ]
            try RawArchive.write(try entries(of: good, in: sandbox) + extras, format: .pax, to: url)
            return url
        },
        Case(label: "store damaged inside", acceptable: false) { sandbox, good in
            var entries = try entries(of: good, in: sandbox)
            guard case .file(var store) = entries[2].kind else { throw RawArchiveError(description: "?") }
            store.replaceSubrange(4096..<8192, with: Data(repeating: 0xA5, count: 4096))
            entries[2] = .file("store.sqlite", store)
            let url = sandbox.appending("damaged.zip")
            try RawArchive.write(entries, format: .zip, to: url)
            return url
        },
        Case(label: "truncated", acceptable: false) { sandbox, good in
            let url = sandbox.appending("cut.zip")
            try Data(contentsOf: good).prefix(5000).write(to: url)
            return url
        },
    ]

    @Test(arguments: cases)
    func verifyAndImportAgree(_ item: Case) throws {
        let (sandbox, _) = try Self.exported()
        let archive = try item.make(sandbox, sandbox.appending("good.zip"))
        let report = try DeckDocument.verifyArchive(at: archive)
        var imported = true
        do {
            try DeckDocument.importArchive(at: archive, to: sandbox.appending("Imported.deck"))
        } catch {
            imported = false
            #expect(error.kind == .invalidData, "\(error)")
        }
        #expect(report.isValid == imported, "\(item.label): verify \(report.findings), import \(imported)")
        #expect(imported == item.acceptable, "\(item.label)")
        // Also with limits that would let a larger manifest through the pass: the rule of the
        // format (1 MiB) still decides, for both.
        let generous = UnpackLimits(maxManifestBytes: 16 << 20)
        let scan = try? PackageArchive.scan(archive: archive, limits: generous)
        if let scan, !item.acceptable, scan.manifest.count > 1 << 20 {
            #expect(throws: DeckError.self) {
                try DeckDocument.importArchive(
                    at: archive, to: sandbox.appending("Generous.deck"), limits: generous)
            }
        }
    }
}
