import CArchive
import DeckSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A streaming reader over libarchive: zip and tar, uncompressed or compressed with gzip, bzip2,
/// xz or zstd (only the compressors linked into libarchive; external programs are never run).
///
/// Must be used inside a ``UTF8LocaleScope`` so entry names come through as UTF-8.
package final class ArchiveReader {
    private let archive: OpaquePointer
    private let fileName: String
    private var entryName: String?

    /// The central directory, once libarchive has said the archive is a zip.
    private var zip: ZipDirectory?
    /// Entries returned so far.
    private var entryIndex = 0
    /// For the current entry when it is sparse (a tar entry with a map of holes): the size its
    /// header declares, the bytes of its data read so far, and whether libarchive has said its
    /// data ended. libarchive fills the holes between and after data blocks with zeros, but
    /// reads an entry that is one hole (a file of zero bytes only, as GNU `tar -S` stores it: a
    /// map with no data) as empty, and then, read again, as zeros: so once it has said the data
    /// ended, it is not asked again, and the rest up to the declared size is zeros.
    private var sparse: (declared: Int64, read: Int64, ended: Bool)?
    private let path: String
    private let maxEntries: Int

    /// Opens `url`; a zip with more than `maxEntries` entries is refused before they are read.
    package init(url: URL, maxEntries: Int = UnpackLimits.default.maxEntries) throws {
        fileName = url.lastPathComponent
        path = url.path
        self.maxEntries = maxEntries
        guard let archive = archive_read_new() else {
            throw DeckError.archive(.unreadable(entry: url.lastPathComponent, message: "out of memory"))
        }
        self.archive = archive
        // Only the seeking zip reader: it trusts the central directory, so a zip whose end is
        // missing is refused instead of being read entry by entry up to the cut.
        archive_read_support_format_zip_seekable(archive)
        archive_read_support_format_tar(archive)
        // Each of these would fall back to spawning an external program if the library were absent.
        if archive_zlib_version() != nil { archive_read_support_filter_gzip(archive) }
        if archive_bzlib_version() != nil { archive_read_support_filter_bzip2(archive) }
        if archive_liblzma_version() != nil { archive_read_support_filter_xz(archive) }
        if archive_libzstd_version() != nil { archive_read_support_filter_zstd(archive) }
        // Opened through FileSystem, so tests can make the open fail; libarchive reads and seeks
        // the descriptor itself.
        fd = try ArchiveSystem.openForReading(url.path)
        if archive_read_open_fd(archive, fd, ArchiveSystem.bufferSize) != ARCHIVE_OK {
            throw Self.openFailure(archive, fileName: fileName)
        }
    }

    private var fd: Int32 = -1

    deinit {
        archive_read_free(archive)
        if fd >= 0 { FileSystem.close(fd) }
    }

    /// Bytes read from the archive file so far.
    package var compressedBytesRead: Int64 { archive_filter_bytes(archive, -1) }

    /// The next entry's header, or nil at the end of the archive. Warnings are errors.
    package func nextEntry() throws -> ArchiveEntryFacts? {
        var entry: OpaquePointer?
        let status = archive_read_next_header(archive, &entry)
        if status == ARCHIVE_EOF {
            if let zip, entryIndex != zip.entries.count {
                throw DeckError.archive(
                    .entryRefused(
                        entry: fileName,
                        reason: .zipStructure(
                            "the central directory lists \(zip.entries.count) entries, but \(entryIndex) were read"
                        )))
            }
            return nil
        }
        let name = entry.flatMap(Self.pathname)
        guard status == ARCHIVE_OK, let entry else {
            // A warning still has a usable name; a fatal error means the header itself is broken.
            if status == ARCHIVE_WARN, let name {
                throw DeckError.archive(.unreadable(entry: name, message: Self.message(archive)))
            }
            if entryIndex == 0, entryName == nil { throw Self.openFailure(archive, fileName: fileName) }
            let context = entryName.map { " (after entry \($0))" } ?? ""
            throw DeckError.archive(.unreadable(entry: fileName, message: Self.message(archive) + context))
        }
        guard let name else {
            let lossy = archive_entry_pathname(entry).map { String(decoding: Self.bytes($0), as: UTF8.self) }
            throw DeckError.archive(
                .entryRefused(entry: lossy ?? "(unnamed entry)", reason: .invalidEncoding))
        }
        let declaredSize = archive_entry_size_is_set(entry) != 0 ? archive_entry_size(entry) : nil
        try checkZipEntry(
            name: name, declaredSize: archive_entry_filetype(entry) == 0o100000 ? declaredSize : nil)
        entryIndex += 1
        entryName = name
        sparse =
            archive_entry_filetype(entry) == 0o100000 && archive_entry_sparse_count(entry) > 0
            ? declaredSize.map { ($0, 0, false) } : nil
        let kind: ArchiveEntryFacts.Kind
        switch archive_entry_filetype(entry) {
        case 0o100000: kind = .regular
        case 0o040000: kind = .directory
        case 0o120000: kind = .symbolicLink
        case 0o020000, 0o060000: kind = .device
        case 0o010000: kind = .fifo
        case 0o140000: kind = .socket
        default: kind = .unknown
        }
        return ArchiveEntryFacts(
            name: name,
            kind: kind,
            isHardLink: archive_entry_hardlink(entry) != nil,
            isSymbolicLink: archive_entry_symlink(entry) != nil,
            declaredSize: declaredSize
        )
    }

    /// For a zip: reads and checks its central directory against its local headers (the first
    /// time), then checks that libarchive's entry is the next central-directory record, and
    /// refuses names that libarchive changed (it turns backslashes into slashes). `declaredSize`
    /// is compared for regular files only (a link's target is its data).
    private func checkZipEntry(name: String, declaredSize: Int64?) throws {
        guard archive_format(archive) & ARCHIVE_FORMAT_BASE_MASK == ARCHIVE_FORMAT_ZIP else { return }
        if zip == nil {
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                throw ArchiveSystem.failure("fstat", path: path, code: errno)
            }
            zip = try ZipDirectory(
                fd: fd, size: Int64(info.st_size), maxEntries: maxEntries, path: path, fileName: fileName)
        }
        guard let zip else { return }
        guard entryIndex < zip.entries.count else {
            throw DeckError.archive(
                .entryRefused(
                    entry: name, reason: .zipStructure("it is not in the central directory")))
        }
        let record = zip.entries[entryIndex]
        if record.name.contains(UInt8(ascii: "\\")) {
            throw DeckError.archive(.entryRefused(entry: record.displayName, reason: .backslash))
        }
        guard let stored = String(validating: record.name, as: UTF8.self) else {
            throw DeckError.archive(.entryRefused(entry: record.displayName, reason: .invalidEncoding))
        }
        // libarchive may normalise a UTF-8 name to NFC; anything more is a different name.
        guard
            stored.precomposedStringWithCanonicalMapping.utf8.elementsEqual(
                name.precomposedStringWithCanonicalMapping.utf8)
        else {
            throw DeckError.archive(
                .entryRefused(
                    entry: stored,
                    reason: .zipStructure("it is read as '\(name)' (an extra field renames it)")))
        }
        guard declaredSize.map({ UInt64(clamping: $0) == record.uncompressedSize }) ?? true else {
            throw DeckError.archive(
                .entryRefused(
                    entry: stored, reason: .zipStructure("its size is read as \(declaredSize ?? 0) bytes")))
        }
    }

    /// Reads the next block of the current entry's data; returns 0 at its end.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if var sparse, sparse.ended {
            // The data ended in a hole that libarchive did not fill: the rest is zeros.
            let zeros = Int(max(0, min(Int64(buffer.count), sparse.declared - sparse.read)))
            buffer.baseAddress?.initializeMemory(as: UInt8.self, repeating: 0, count: zeros)
            sparse.read += Int64(zeros)
            self.sparse = sparse
            return zeros
        }
        let count = archive_read_data(archive, buffer.baseAddress, buffer.count)
        if count < 0 {
            throw DeckError.archive(.unreadable(entry: entryName ?? fileName, message: Self.message(archive)))
        }
        guard var sparse else { return count }
        if count == 0 {
            sparse.ended = true
            self.sparse = sparse
            return try read(into: buffer)
        }
        sparse.read += Int64(count)
        self.sparse = sparse
        return count
    }

    /// Skips the rest of the current entry's data.
    package func skip() throws {
        if archive_read_data_skip(archive) != ARCHIVE_OK {
            throw DeckError.archive(.unreadable(entry: entryName ?? fileName, message: Self.message(archive)))
        }
    }

    private static func pathname(_ entry: OpaquePointer) -> String? {
        guard let raw = archive_entry_pathname(entry) ?? archive_entry_pathname_utf8(entry) else {
            return nil
        }
        return String(validating: bytes(raw), as: UTF8.self)
    }

    private static func bytes(_ string: UnsafePointer<CChar>) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(
            start: UnsafeRawPointer(string).assumingMemoryBound(to: UInt8.self), count: strlen(string))
    }

    /// The error for an archive that could not be opened or whose first header failed: when
    /// libarchive's bidders found no format they know, a case of its own, so that no caller has
    /// to read libarchive's message.
    private static func openFailure(_ archive: OpaquePointer, fileName: String) -> DeckError {
        let text = message(archive)
        return .archive(
            text.hasPrefix("Unrecognized archive format")
                ? .unrecognizedFormat(path: fileName) : .unreadable(entry: fileName, message: text))
    }

    package static func message(_ archive: OpaquePointer) -> String {
        archive_error_string(archive).map { String(cString: $0) } ?? "unknown libarchive error"
    }
}

@available(*, unavailable)
extension ArchiveReader: Sendable {}
