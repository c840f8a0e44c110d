// Shared helpers for the archive tests (DeckStoreTests and DeckSharingTests): a package fixture, a raw libarchive writer that
// allows any entry at all (for hostile archives), and a runner for command-line archivers.

import CArchive
import DeckStore
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A package directory with a manifest, a store and a few correctly named blobs.
package struct PackageFixture {
    package let url: URL
    package let manifest: Data
    package let store: Data
    package let blobs: [Digest: Data]

    package static let defaultBlobs: [Data] = [
        Data("first blob".utf8),
        Data("second blob, a little longer".utf8),
        Data((0..<5000).map { UInt8($0 % 251) }),
        Data(),
    ]

    @discardableResult
    package static func make(in parent: URL, name: String = "Sample.deck", blobs: [Data] = defaultBlobs)
        throws
        -> PackageFixture
    {
        let url = parent.appendingPathComponent(name, isDirectory: true)
        let manager = FileManager.default
        try manager.createDirectory(
            at: url.appendingPathComponent("blobs"), withIntermediateDirectories: true)
        let manifest = Data(#"{"format":1,"title":"Sample"}"#.utf8)
        var store = Data("SQLite format 3\u{0}".utf8)
        store.append(Data((0..<20000).map { UInt8(($0 * 7) % 256) }))
        try manifest.write(to: url.appendingPathComponent("manifest.json"))
        try store.write(to: url.appendingPathComponent("store.sqlite"))
        var stored: [Digest: Data] = [:]
        for blob in blobs {
            let digest = SHA256Hasher.hash(blob)
            let hex = digest.hexDigest
            let fanOut = url.appendingPathComponent("blobs/\(hex.prefix(2))", isDirectory: true)
            try manager.createDirectory(at: fanOut, withIntermediateDirectories: true)
            try blob.write(to: fanOut.appendingPathComponent(hex))
            stored[digest] = blob
        }
        return PackageFixture(url: url, manifest: manifest, store: store, blobs: stored)
    }

    /// The entries of this package in archive layout (for building archives by hand).
    package func rawEntries(prefix: String = "") -> [RawEntry] {
        var entries: [RawEntry] = [
            .file("\(prefix)manifest.json", manifest),
            .file("\(prefix)store.sqlite", store),
            .directory("\(prefix)blobs/"),
        ]
        for (digest, data) in blobs.sorted(by: { $0.key < $1.key }) {
            let hex = digest.hexDigest
            entries.append(.file("\(prefix)blobs/\(hex.prefix(2))/\(hex)", data))
        }
        return entries
    }
}

/// One entry of a hand-made archive; anything goes.
package struct RawEntry: Sendable {
    package enum Kind: Sendable {
        case file(Data)
        /// A regular file of this many zero bytes, written in 1 MiB pieces (never held whole).
        case zeros(Int)
        case directory
        case symbolicLink(String)
        case hardLink(String)
        case fifo
        case characterDevice
    }

    package var name: String
    package var kind: Kind
    /// Sets a modification time on the entry (tar and zip).
    package var modificationTime: Int?

    package init(name: String, kind: Kind, modificationTime: Int? = nil) {
        self.name = name
        self.kind = kind
        self.modificationTime = modificationTime
    }

    package static func file(_ name: String, _ data: Data) -> RawEntry {
        RawEntry(name: name, kind: .file(data))
    }
    package static func file(_ name: String, _ text: String) -> RawEntry { .file(name, Data(text.utf8)) }
    package static func directory(_ name: String) -> RawEntry { RawEntry(name: name, kind: .directory) }

    package static let mimeType = RawEntry.file("mimetype", PackageArchive.mimeType)
    /// A `store.sqlite` entry that starts like a SQLite database (the pass checks the header).
    package static let store = RawEntry.file("store.sqlite", sqliteLike("db"))

    /// `text` after the 16-byte SQLite header.
    package static func sqliteLike(_ text: String) -> Data { Data("SQLite format 3\u{0}\(text)".utf8) }
}

package enum RawFormat: String, Sendable, CaseIterable {
    case zip
    case pax
    case gnutar
    case tarGzip
    /// No archive at all: the entries' data, one after the other, gzip-compressed.
    case gzipOnly
}

package struct RawArchiveError: Error, CustomStringConvertible {
    package let description: String

    package init(description: String) { self.description = description }
}

/// Writes archives straight through libarchive, with none of ArchiveWriter's checks.
package enum RawArchive {
    package static func write(_ entries: [RawEntry], format: RawFormat, to url: URL) throws {
        try UTF8LocaleScope().run {
            guard let archive = archive_write_new() else { throw RawArchiveError(description: "no memory") }
            defer { archive_write_free(archive) }
            func check(_ status: Int32, _ what: String) throws {
                if status != ARCHIVE_OK {
                    let message = archive_error_string(archive).map { String(cString: $0) } ?? "?"
                    throw RawArchiveError(description: "\(what): \(message)")
                }
            }
            switch format {
            case .zip: try check(archive_write_set_format_zip(archive), "format")
            case .pax: try check(archive_write_set_format_pax(archive), "format")
            case .gnutar: try check(archive_write_set_format_gnutar(archive), "format")
            case .tarGzip:
                try check(archive_write_set_format_pax_restricted(archive), "format")
                try check(archive_write_add_filter_gzip(archive), "filter")
                try check(archive_write_set_filter_option(archive, "gzip", "compression-level", "1"), "level")
            case .gzipOnly:
                try check(archive_write_set_format_raw(archive), "format")
                try check(archive_write_add_filter_gzip(archive), "filter")
                try check(archive_write_set_filter_option(archive, "gzip", "compression-level", "1"), "level")
            }
            try check(archive_write_open_filename(archive, url.path), "open")
            for raw in entries {
                guard let entry = archive_entry_new() else { throw RawArchiveError(description: "no memory") }
                defer { archive_entry_free(entry) }
                archive_entry_copy_pathname(entry, raw.name)
                if let time = raw.modificationTime { archive_entry_set_mtime(entry, time, 0) }
                var data = Data()
                var zeros = 0
                switch raw.kind {
                case .file(let content):
                    archive_entry_set_filetype(entry, 0o100000)
                    archive_entry_set_perm(entry, 0o644)
                    data = content
                case .zeros(let count):
                    archive_entry_set_filetype(entry, 0o100000)
                    archive_entry_set_perm(entry, 0o644)
                    zeros = count
                case .directory:
                    archive_entry_set_filetype(entry, 0o040000)
                    archive_entry_set_perm(entry, 0o755)
                case .symbolicLink(let target):
                    archive_entry_set_filetype(entry, 0o120000)
                    archive_entry_set_perm(entry, 0o777)
                    archive_entry_copy_symlink(entry, target)
                case .hardLink(let target):
                    archive_entry_set_filetype(entry, 0o100000)
                    archive_entry_set_perm(entry, 0o644)
                    archive_entry_copy_hardlink(entry, target)
                case .fifo:
                    archive_entry_set_filetype(entry, 0o010000)
                    archive_entry_set_perm(entry, 0o644)
                case .characterDevice:
                    archive_entry_set_filetype(entry, 0o020000)
                    archive_entry_set_perm(entry, 0o644)
                    archive_entry_set_rdev(entry, 0x0103)
                }
                archive_entry_set_size(entry, Int64(data.count + zeros))
                try check(archive_write_header(archive, entry), "header \(raw.name)")
                let block = [UInt8](repeating: 0, count: 1 << 20)
                while zeros > 0 {
                    let count = block.withUnsafeBytes {
                        archive_write_data(archive, $0.baseAddress, min(zeros, 1 << 20))
                    }
                    if count <= 0 { throw RawArchiveError(description: "data \(raw.name)") }
                    zeros -= count
                }
                try data.withUnsafeBytes { bytes in
                    guard let base = bytes.baseAddress else { return }
                    var offset = 0
                    while offset < bytes.count {
                        let count = archive_write_data(archive, base + offset, bytes.count - offset)
                        if count <= 0 { throw RawArchiveError(description: "data \(raw.name)") }
                        offset += count
                    }
                }
                try check(archive_write_finish_entry(archive), "finish \(raw.name)")
            }
            try check(archive_write_close(archive), "close")
        }
    }

    /// The entry names of an archive, in order, read with plain libarchive.
    package static func names(of url: URL) throws -> [String] {
        try listing(of: url).map(\.name)
    }

    package struct Listed: Equatable {
        package var name: String
        package var mode: UInt32
        package var uid: Int64
        package var gid: Int64
        package var userName: String?
        package var groupName: String?
        package var modificationTime: Int?
        package var hasAccessTime: Bool
        package var hasChangeTime: Bool
        package var size: Int64
    }

    package static func listing(of url: URL) throws -> [Listed] {
        try UTF8LocaleScope().run {
            guard let archive = archive_read_new() else { throw RawArchiveError(description: "no memory") }
            defer { archive_read_free(archive) }
            archive_read_support_format_all(archive)
            archive_read_support_filter_all(archive)
            if archive_read_open_filename(archive, url.path, 65536) != ARCHIVE_OK {
                throw RawArchiveError(description: "open \(url.lastPathComponent)")
            }
            var result: [Listed] = []
            var entry: OpaquePointer?
            while true {
                let status = archive_read_next_header(archive, &entry)
                if status == ARCHIVE_EOF { break }
                guard status == ARCHIVE_OK, let entry else {
                    throw RawArchiveError(description: "read \(url.lastPathComponent)")
                }
                result.append(
                    Listed(
                        name: String(cString: archive_entry_pathname(entry)),
                        mode: UInt32(archive_entry_mode(entry)),
                        uid: archive_entry_uid(entry),
                        gid: archive_entry_gid(entry),
                        userName: archive_entry_uname(entry).map { String(cString: $0) },
                        groupName: archive_entry_gname(entry).map { String(cString: $0) },
                        modificationTime: archive_entry_mtime_is_set(entry) != 0
                            ? archive_entry_mtime(entry) : nil,
                        hasAccessTime: archive_entry_atime_is_set(entry) != 0,
                        hasChangeTime: archive_entry_ctime_is_set(entry) != 0,
                        size: archive_entry_size(entry)))
                archive_read_data_skip(archive)
            }
            return result
        }
    }
}

/// The central directory of a zip, parsed by hand (no zip64, no comment).
package struct ZipCentralDirectory {
    package struct Record {
        package var name: String
        package var method: UInt16
        package var dosTime: UInt16
        package var dosDate: UInt16
        package var localHeaderOffset: UInt32
        package var extra: [UInt8]
    }

    package var records: [Record] = []

    package init(_ data: Data) throws {
        let bytes = [UInt8](data)
        func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> UInt32 { UInt32(u16(at)) | UInt32(u16(at + 2)) << 16 }
        let end = bytes.count - 22
        guard end >= 0, u32(end) == 0x0605_4b50 else { throw RawArchiveError(description: "no EOCD") }
        let count = Int(u16(end + 10))
        var offset = Int(u32(end + 16))
        for _ in 0..<count {
            guard u32(offset) == 0x0201_4b50 else { throw RawArchiveError(description: "bad CD record") }
            let nameLength = Int(u16(offset + 28))
            let extraLength = Int(u16(offset + 30))
            let commentLength = Int(u16(offset + 32))
            let name = String(decoding: bytes[(offset + 46)..<(offset + 46 + nameLength)], as: UTF8.self)
            records.append(
                Record(
                    name: name, method: u16(offset + 10), dosTime: u16(offset + 12),
                    dosDate: u16(offset + 14),
                    localHeaderOffset: u32(offset + 42),
                    extra: Array(bytes[(offset + 46 + nameLength)..<(offset + 46 + nameLength + extraLength)])
                ))
            offset += 46 + nameLength + extraLength + commentLength
        }
    }
}

/// Every file and directory under `root`: relative path → content (nil for a directory).
package func treeSnapshot(_ root: URL) throws -> [String: Data?] {
    var result: [String: Data?] = [:]
    let manager = FileManager.default
    guard let enumerator = manager.enumerator(atPath: root.path) else { return result }
    while let relative = enumerator.nextObject() as? String {
        let full = root.appendingPathComponent(relative).path
        var isDirectory: ObjCBool = false
        _ = manager.fileExists(atPath: full, isDirectory: &isDirectory)
        result[relative] =
            isDirectory.boolValue ? Data?.none : try Data(contentsOf: URL(fileURLWithPath: full))
    }
    return result
}

/// Runs a command-line tool and requires it to succeed.
package func runTool(
    _ tool: String, _ arguments: [String], in directory: URL, environment: [String: String] = [:]
)
    throws
{
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    process.currentDirectoryURL = directory
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    process.environment = env
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw RawArchiveError(description: "\(tool) \(arguments) exited with \(process.terminationStatus)")
    }
}

/// The mode bits of a file system object.
package func permissions(_ url: URL) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
    return (attributes[.posixPermissions] as? Int) ?? -1
}
