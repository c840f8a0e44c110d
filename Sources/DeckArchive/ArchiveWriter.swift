import CArchive
import DeckSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a reproducible zip or tar archive to a new file, streaming file contents through a
/// 1 MiB buffer.
///
/// Every entry gets the same metadata whatever the host: owner and group 0 without names, mode
/// 0644 for files and 0755 for directories, no extended attributes, ACLs, access or change
/// times. Tar entries are dated 1980-01-01T00:00:00Z. Zip entries carry no Unix timestamp at all,
/// so their DOS date/time field is libarchive's minimum, 1980-01-01 00:00, whatever `TZ` says
/// (DOS times are local time; a set timestamp would be converted with the host's time zone).
/// gzip output has no timestamp.
///
/// ```swift
/// let writer = try ArchiveWriter(url: url, format: .zip)
/// try writer.addData(name: "hello.txt", data: Data("hi".utf8), compress: true)
/// try writer.finish()
/// ```
///
/// Entry names are UTF-8 paths relative to the archive root; `..`, empty or `.` components,
/// absolute paths, backslashes and control characters are refused. After an error the writer
/// cannot be used any more. Without ``finish()`` the file is left incomplete (the caller
/// removes it). Not thread-safe.
package final class ArchiveWriter {
    /// The container format being written.
    package let format: ArchiveFormat
    /// Where the archive is written.
    package let url: URL

    private let archive: OpaquePointer
    private var fd: Int32
    private var state = State.open
    private let locale = UTF8LocaleScope()
    private let buffer: UnsafeMutableRawBufferPointer
    /// Called with the running total of file bytes added, after every chunk.
    package var progress: ((Int64) -> Void)?
    private var bytesAdded: Int64 = 0
    /// The file-system failure behind a failed libarchive call (a full disk, say): reported as
    /// itself, naming the file, rather than as a failure of the entry being written.
    private var ioFailure: DeckError?

    private enum State {
        case open
        case finished
        case failed
    }

    /// 1980-01-01T00:00:00Z, the modification time of every tar entry.
    package static let fixedModificationTime: Int = 315_532_800

    /// Creates `url` (which must not exist) and prepares to write an archive of `format` to it.
    ///
    /// - Throws: ``DeckError/alreadyExists(path:)`` if something is at `url`,
    ///   ``ArchiveError/unsupportedFormat(format:reason:)`` (in ``DeckError/archive(_:)``) if this libarchive cannot write `format`.
    package convenience init(url: URL, format: ArchiveFormat) throws {
        try self.init(url: url, format: format, intoExistingFile: false)
    }

    /// Writes into the empty file at `url` that the caller created (a staging file) when
    /// `intoExistingFile` is set, never following a symbolic link; otherwise as the public init.
    package init(url: URL, format: ArchiveFormat, intoExistingFile: Bool) throws {
        guard format.isAvailable else {
            throw DeckError.archive(
                .unsupportedFormat(
                    format: format.name,
                    reason: "this libarchive build cannot write it (compressor not linked in)"))
        }
        let path = url.path
        guard let archive = archive_write_new() else {
            throw DeckError.archive(.writeFailed(entry: url.lastPathComponent, message: "out of memory"))
        }
        let fd: Int32
        do {
            fd = try intoExistingFile ? ArchiveSystem.openExisting(path) : ArchiveSystem.createExclusive(path)
        } catch {
            archive_write_free(archive)
            throw error
        }
        self.archive = archive
        self.fd = fd
        self.format = format
        self.url = url
        buffer = .allocate(byteCount: ArchiveSystem.bufferSize, alignment: 16)
        do {
            try configure()
        } catch {
            // deinit closes and frees; the half-made file is ours to remove.
            state = .failed
            if !intoExistingFile { unlink(path) }
            throw error
        }
    }

    deinit {
        if state != .finished { archive_write_fail(archive) }
        archive_write_free(archive)
        if fd >= 0 { close(fd) }
        buffer.deallocate()
    }

    private func configure() throws {
        try locale.run {
            switch format {
            case .zip:
                try check(archive_write_set_format_zip(archive), entry: url.lastPathComponent)
            case .tar, .tarGzip, .tarZstd:
                // ustar headers; a pax header only when ustar cannot express an entry (long or
                // non-ASCII names, sizes of 8 GiB and more).
                try check(archive_write_set_format_pax_restricted(archive), entry: url.lastPathComponent)
            }
            switch format {
            case .zip, .tar:
                break
            case .tarGzip:
                try check(archive_write_add_filter_gzip(archive), entry: url.lastPathComponent)
                try check(archive_write_set_options(archive, "gzip:!timestamp"), entry: url.lastPathComponent)
            case .tarZstd:
                // ARCHIVE_WARN here means "falling back to the external zstd program": refused.
                if archive_write_add_filter_zstd(archive) != ARCHIVE_OK {
                    throw DeckError.archive(
                        .unsupportedFormat(
                            format: format.name, reason: "this libarchive build has no built-in zstd support")
                    )
                }
            }
            // Write in 1 MiB blocks and never pad the last one (padding would follow a zip's
            // end-of-central-directory record or a compressed stream).
            try check(archive_write_set_bytes_per_block(archive, Int32(ArchiveSystem.bufferSize)), entry: "")
            try check(archive_write_set_bytes_in_last_block(archive, 1), entry: "")
            // Written through FileSystem (not libarchive's own fd writer), so tests can make the
            // writes fail like every other write of Deck's.
            let client = Unmanaged.passUnretained(self).toOpaque()
            try check(
                archive_write_open2(
                    archive, client, nil,
                    { archive, client, buffer, length in
                        guard let client else { return -1 }
                        return Unmanaged<ArchiveWriter>.fromOpaque(client).takeUnretainedValue()
                            .writeBlock(archive, buffer, length)
                    }, nil, nil),
                entry: url.lastPathComponent)
        }
    }

    /// Adds the regular file at `source` (a symbolic link is refused) under `name`.
    ///
    /// `compress` selects deflate (true) or stored (false) for zip; tar formats ignore it.
    /// - Throws: ``ArchiveError/writeFailed(entry:message:)`` also if the file changes size while
    ///   it is being copied.
    package func addFile(name: String, source: URL, compress: Bool) throws {
        try addFile(name: name, source: source, compress: compress, hasher: nil)
    }

    /// Adds a file, also feeding every byte written to `hasher`.
    package func addFile(name: String, source: URL, compress: Bool, hasher: BackgroundSHA256Hasher?) throws {
        try guarded(name) {
            let path = source.path
            let input = try ArchiveSystem.openForReading(path)
            defer { close(input) }
            var info = stat()
            if fstat(input, &info) != 0 {
                throw ArchiveSystem.failure("fstat", path: path, code: errno)
            }
            guard info.st_mode & S_IFMT == S_IFREG else {
                throw DeckError.archive(.writeFailed(entry: name, message: "\(path) is not a regular file"))
            }
            let size = Int64(info.st_size)
            try writeHeader(name: name, isDirectory: false, size: size, compress: compress)
            var remaining = size
            while remaining > 0 {
                let count = try ArchiveSystem.readSome(
                    input, into: buffer, count: Int(min(remaining, Int64(buffer.count))), path: path)
                if count == 0 { throw Self.changed(name) }
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                hasher?.update(chunk)
                try writeData(chunk, name: name)
                remaining -= Int64(count)
                bytesAdded += Int64(count)
                progress?(bytesAdded)
                try Cancellation.checkCurrent()
            }
            if fstat(input, &info) != 0 {
                throw ArchiveSystem.failure("fstat", path: path, code: errno)
            }
            if Int64(info.st_size) != size { throw Self.changed(name) }
            try check(archive_write_finish_entry(archive), entry: name)
        }
    }

    /// Adds `data` as a file named `name`; `compress` as in ``addFile(name:source:compress:)``.
    package func addData(name: String, data: Data, compress: Bool) throws {
        try guarded(name) {
            try writeHeader(name: name, isDirectory: false, size: Int64(data.count), compress: compress)
            try data.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let end = min(bytes.count, offset + ArchiveSystem.bufferSize)
                    try writeData(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]), name: name)
                    offset = end
                }
            }
            try check(archive_write_finish_entry(archive), entry: name)
        }
    }

    /// Adds a directory entry (a trailing `/` is added to the stored name if missing).
    package func addDirectory(name: String) throws {
        try guarded(name) {
            try writeHeader(name: name, isDirectory: true, size: 0, compress: false)
            try check(archive_write_finish_entry(archive), entry: name)
        }
    }

    /// libarchive's write callback's body: all of the block, through ``FileSystem``.
    private func writeBlock(_ archive: OpaquePointer?, _ buffer: UnsafeRawPointer?, _ length: Int) -> Int {
        guard let buffer else { return -1 }
        do {
            try ArchiveSystem.writeAll(
                fd, UnsafeRawBufferPointer(start: buffer, count: length), path: url.path)
            return length
        } catch {
            ioFailure = error
            deck_archive_set_error(archive, EIO, "\(error)")
            return -1
        }
    }

    /// Writes the archive trailer, flushes the file to disk and closes it.
    package func finish() throws {
        try guarded(url.lastPathComponent) {
            try check(archive_write_close(archive), entry: url.lastPathComponent)
            try ArchiveSystem.sync(fd, path: url.path)
            let result = close(fd)
            fd = -1
            if result != 0 { throw ArchiveSystem.failure("close", path: url.path, code: errno) }
            state = .finished
        }
    }

    /// Runs one public operation: only on an open writer, with the UTF-8 locale, and marking the
    /// writer failed if anything goes wrong.
    private func guarded(_ name: String, _ body: () throws -> Void) throws {
        switch state {
        case .open: break
        case .finished:
            throw DeckError.archive(.writeFailed(entry: name, message: "the archive is already finished"))
        case .failed: throw DeckError.archive(.writeFailed(entry: name, message: "an earlier write failed"))
        }
        do {
            try locale.run(body)
        } catch {
            state = .failed
            throw error
        }
    }

    private func writeHeader(name: String, isDirectory: Bool, size: Int64, compress: Bool) throws {
        let path = try ArchivePath.parse(name, allowLeadingDot: false)
        if path.hasTrailingSlash && !isDirectory {
            throw DeckError.archive(.entryRefused(entry: name, reason: .emptyComponent))
        }
        if format == .zip {
            let status =
                compress
                ? archive_write_zip_set_compression_deflate(archive)
                : archive_write_zip_set_compression_store(archive)
            try check(status, entry: name)
        }
        guard let entry = archive_entry_new() else {
            throw DeckError.archive(.writeFailed(entry: name, message: "out of memory"))
        }
        defer { archive_entry_free(entry) }
        archive_entry_copy_pathname(entry, path.joined + (isDirectory ? "/" : ""))
        archive_entry_set_filetype(entry, isDirectory ? 0o040000 : 0o100000)
        archive_entry_set_perm(entry, isDirectory ? 0o755 : 0o644)
        archive_entry_set_size(entry, size)
        archive_entry_set_uid(entry, 0)
        archive_entry_set_gid(entry, 0)
        if format != .zip {
            archive_entry_set_mtime(entry, Self.fixedModificationTime, 0)
        }
        try check(archive_write_header(archive, entry), entry: name)
    }

    private func writeData(_ chunk: UnsafeRawBufferPointer, name: String) throws {
        guard let base = chunk.baseAddress else { return }
        var offset = 0
        while offset < chunk.count {
            let written = archive_write_data(archive, base + offset, chunk.count - offset)
            if written <= 0 {
                if let ioFailure { throw ioFailure }
                throw DeckError.archive(.writeFailed(entry: name, message: ArchiveReader.message(archive)))
            }
            offset += written
        }
    }

    private func check(_ status: Int32, entry: String) throws {
        if status != ARCHIVE_OK {
            if let ioFailure { throw ioFailure }
            throw DeckError.archive(
                .writeFailed(
                    entry: entry.isEmpty ? url.lastPathComponent : entry,
                    message: ArchiveReader.message(archive)))
        }
    }

    private static func changed(_ name: String) -> DeckError {
        .archive(.writeFailed(entry: name, message: "the file changed while it was being archived"))
    }
}

@available(*, unavailable)
extension ArchiveWriter: Sendable {}
