import DeckSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file-system calls of the archive layer: ``FileSystem`` (the one path to disk, which
/// tests can make fail), reporting its errors as they are.
package enum ArchiveSystem {
    /// The size of every streaming buffer.
    package static let bufferSize = 1 << 20

    /// What `lstat(2)` says a path is; symbolic links are never followed.
    package enum FileKind: Equatable {
        case missing
        case regular
        case directory
        case symbolicLink
        case other
    }

    package static func fileKind(_ path: String) throws(DeckError) -> FileKind {
        guard let info = try FileSystem.status(path) else {
            return .missing
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .directory
        case S_IFLNK: return .symbolicLink
        default: return .other
        }
    }

    /// `lstat(2)`, or nil when nothing is there.
    package static func status(_ path: String) throws(DeckError) -> stat? {
        try FileSystem.status(path)
    }

    /// "a directory", "a FIFO", … for anything `lstat` says is not a regular file; nil for one.
    package static func describeNonRegular(_ info: stat) -> String? {
        switch info.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFDIR: return "a directory"
        case S_IFLNK: return "a symbolic link"
        case S_IFIFO: return "a FIFO"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "a special file"
        }
    }

    /// The names in a directory (without `.` and `..`), sorted bytewise.
    package static func directoryNames(_ path: String) throws(DeckError) -> [String] {
        try FileSystem.list(path)
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Opens a regular file for reading without following a symbolic link in the last component
    /// and without blocking: anything else (a FIFO swapped in since it was checked, say) is
    /// refused once open.
    package static func openForReading(_ path: String) throws(DeckError) -> Int32 {
        try FileSystem.openRegular(path, O_RDONLY)
    }

    /// Creates a new file; fails with ``DeckError/alreadyExists(path:)`` if anything is there.
    package static func createExclusive(_ path: String, relativeTo directory: Int32 = AT_FDCWD)
        throws(DeckError)
        -> Int32
    {
        try FileSystem.open(
            path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o644, relativeTo: directory)
    }

    /// Opens an existing regular file for writing, emptying it, without following a symbolic link.
    package static func openExisting(_ path: String) throws(DeckError) -> Int32 {
        try FileSystem.open(path, O_WRONLY | O_TRUNC | O_NOFOLLOW)
    }

    /// Writes the whole buffer, retrying on partial writes and EINTR.
    package static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, path: String)
        throws(DeckError)
    {
        try FileSystem.write(fd, buffer, path: path)
    }

    /// Reads up to `count` bytes, retrying on EINTR; returns 0 at end of file.
    package static func readSome(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, count: Int, path: String
    )
        throws(DeckError) -> Int
    {
        guard let base = buffer.baseAddress else { return 0 }
        return try FileSystem.read(fd, into: base, count: min(count, buffer.count), path: path)
    }

    /// Reads exactly `count` bytes at `offset` (pread, which leaves the file offset alone).
    package static func read(_ fd: Int32, at offset: Int64, count: Int, path: String) throws(DeckError)
        -> [UInt8]
    {
        try FileSystem.check(.read, path)
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return pread(fd, base + done, count - done, off_t(offset) + off_t(done))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw ArchiveSystem.failure("read", path: path, code: errno)
            }
            if n == 0 {
                throw DeckError.archive(
                    .unreadable(
                        entry: (path as NSString).lastPathComponent, message: "unexpected end of file"))
            }
            done += n
        }
        return bytes
    }

    package static func sync(_ fd: Int32, path: String) throws(DeckError) {
        do {
            try FileSystem.fsync(fd, path: path)
        } catch .io(_, _, EINVAL) {
            // Some file systems cannot fsync directories; that is not a failure of ours.
        } catch {
            throw error
        }
    }

    package static func syncDirectory(_ path: String) throws(DeckError) {
        let fd = try FileSystem.open(path, O_RDONLY | O_DIRECTORY)
        defer { FileSystem.close(fd) }
        try sync(fd, path: path)
    }

    /// Tests set this to pretend the file systems whose paths contain `pathContains` have only
    /// `bytes` available.
    package static let freeSpaceOverride = Locked<(pathContains: String, bytes: Int64)?>(nil)

    /// The bytes an unprivileged process may still write on the file system holding `path`
    /// (`statvfs`: `f_bavail` blocks of `f_frsize` bytes), or nil when it cannot be told.
    package static func availableBytes(_ path: String) -> Int64? {
        if let override = freeSpaceOverride.withLock({ $0 }), path.contains(override.pathContains) {
            return override.bytes
        }
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        let (bytes, overflow) = Int64(clamping: info.f_bavail).multipliedReportingOverflow(
            by: Int64(clamping: info.f_frsize))
        return overflow ? Int64.max : bytes
    }

    /// Flushes the whole file system holding `path`.
    package static func syncFileSystem(_ path: String) throws(DeckError) {
        try FileSystem.syncFileSystem(containing: path)
    }

    /// A random suffix for temporary names.
    package static func randomSuffix() -> String { FileSystem.randomSuffix() }

    /// The parent directory and last component of a path, as the file system sees them.
    package static func split(_ url: URL) -> (parent: String, name: String) {
        let standardized = url.standardizedFileURL
        return (standardized.deletingLastPathComponent().path, standardized.lastPathComponent)
    }

    /// Removes a file or a directory tree; symbolic links are removed, never followed.
    package static func removeTree(_ path: String) {
        try? FileSystem.removeTree(path)
    }

    /// Makes a new directory; false when the name is taken.
    package static func makeDirectory(_ path: String) throws(DeckError) -> Bool {
        do {
            try FileSystem.mkdir(path, existingOK: false)
            return true
        } catch .alreadyExists {
            return false
        } catch {
            throw error
        }
    }

    /// Renames `source` to `destination` unless `destination` exists (`renameat2(RENAME_NOREPLACE)`;
    /// on file systems without it, by claiming the name first).
    package static func renameNoReplace(_ source: String, _ destination: String, isDirectory: Bool)
        throws(DeckError)
    {
        do {
            try FileSystem.renameNoReplace(source, destination)
            return
        } catch .alreadyExists {
            throw DeckError.alreadyExists(path: destination)
        } catch .io(_, _, let code) where code == EINVAL || code == ENOSYS || code == ENOTSUP {
            try renameNoReplaceFallback(source, destination, isDirectory: isDirectory)
        } catch .io(_, _, ENOTEMPTY) {
            throw DeckError.alreadyExists(path: destination)
        } catch {
            throw error
        }
    }

    /// For file systems without an exclusive rename: claim the name first, then rename over the claim.
    private static func renameNoReplaceFallback(_ source: String, _ destination: String, isDirectory: Bool)
        throws(DeckError)
    {
        if isDirectory {
            // mkdir is atomic; rename(2) then replaces only the empty directory we just made.
            guard try makeDirectory(destination) else {
                throw DeckError.alreadyExists(path: destination)
            }
            do {
                try FileSystem.rename(source, destination)
            } catch {
                rmdir(destination)
                throw error
            }
            return
        }
        if link(source, destination) == 0 {
            unlink(source)
            return
        }
        let code = errno
        if code == EEXIST { throw DeckError.alreadyExists(path: destination) }
        throw ArchiveSystem.failure("link", path: destination, code: code)
    }
}

extension ArchiveSystem {
    /// A system call's failure that ``FileSystem`` did not make (`operation` names the call):
    /// as ``FileSystem/failure(_:_:_:)`` reports one, with the call's own name.
    package static func failure(_ operation: String, path: String, code: Int32) -> DeckError {
        switch code {
        case EACCES, EPERM: .permissionDenied(path: path, operation: operation)
        case ENOENT: .notFound(path: path)
        case EEXIST: .alreadyExists(path: path)
        default: .io(path: path, operation: operation, errno: code)
        }
    }
}

/// Makes libarchive see a UTF-8 locale on the current thread only, so that entry names are
/// passed through as UTF-8 instead of failing conversion under the process's "C" locale.
package final class UTF8LocaleScope {
    private let locale: locale_t?

    package init() {
        // Only the character type matters to libarchive's name conversions.
        #if os(Linux)
            let mask = Int32(1) << LC_CTYPE
        #else
            let mask = LC_CTYPE_MASK
        #endif
        var found: locale_t?
        for name in ["C.UTF-8", "C.utf8", "en_US.UTF-8", "UTF-8"] {
            if let candidate = newlocale(mask, name, nil) {
                found = candidate
                break
            }
        }
        locale = found
    }

    deinit {
        if let locale { freelocale(locale) }
    }

    /// Runs `body` with the UTF-8 locale installed on this thread, restoring the previous one after.
    package func run<T>(_ body: () throws -> T) rethrows -> T {
        guard let locale else { return try body() }
        let previous = uselocale(locale)
        defer {
            if let previous { uselocale(previous) }
        }
        return try body()
    }
}

@available(*, unavailable)
extension UTF8LocaleScope: Sendable {}

/// A file being written by extraction; closed (and optionally synced) by ``finish()``.
package final class OutputFile {
    package let path: String
    private var fd: Int32
    private let syncOnFinish: Bool

    package init(fd: Int32, path: String, syncOnFinish: Bool) {
        self.fd = fd
        self.path = path
        self.syncOnFinish = syncOnFinish
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    package func write(_ buffer: UnsafeRawBufferPointer) throws {
        try ArchiveSystem.writeAll(fd, buffer, path: path)
    }

    package func finish() throws {
        if syncOnFinish { try ArchiveSystem.sync(fd, path: path) }
        let result = close(fd)
        fd = -1
        if result != 0 { throw ArchiveSystem.failure("close", path: path, code: errno) }
    }
}

@available(*, unavailable)
extension OutputFile: Sendable {}
