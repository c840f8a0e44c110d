import CDeckSystem
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The one path from Deck to the file system for everything a save, gc, export or import
/// writes. In debug builds every call goes through ``FaultInjection`` so tests can make it fail
/// with a chosen errno, as swift-system does; release builds have no such check.
package enum FileSystem {
    /// The file-system operations, as named in ``DeckError/io(path:operation:errno:)``; in debug
    /// builds, the calls ``FaultInjection`` can fail.
    package enum Operation: String, Sendable, CaseIterable {
        case open, read, write, fsync, rename, unlink, mkdir, stat
    }

    /// Fails with the injected errno when a debug build's test armed a fault for this call on
    /// this thread; nothing at all in a release build.
    @inline(__always)
    package static func check(_ op: Operation, _ path: String) throws(DeckError) {
        #if DEBUG
            if let code = FaultInjection.shouldFail(op, path: path) {
                throw DeckError.io(path: path, operation: op.rawValue, errno: code)
            }
        #endif
    }

    package static func failure(_ op: Operation, _ path: String, _ code: Int32 = errno) -> DeckError {
        switch code {
        case EACCES, EPERM: .permissionDenied(path: path, operation: op.rawValue)
        case ENOENT: .notFound(path: path)
        case EEXIST: .alreadyExists(path: path)
        default: .io(path: path, operation: op.rawValue, errno: code)
        }
    }

    /// open(2), or openat(2) relative to the directory `relativeTo`.
    package static func open(
        _ path: String, _ flags: Int32, mode: mode_t = 0o644, relativeTo directory: Int32 = AT_FDCWD
    )
        throws(DeckError) -> Int32
    {
        try check(.open, path)
        let fd = openat(directory, path, flags | O_CLOEXEC, mode)
        guard fd >= 0 else { throw failure(.open, path) }
        return fd
    }

    /// Opens a file that must be a regular file (every file of a package is one): never blocks
    /// (a FIFO or a device is opened with `O_NONBLOCK`), never follows a symbolic link, and, by
    /// checking the opened descriptor with `fstat`, refuses anything but a regular file without a
    /// race between the check and the open. A wrong kind is ``DeckError/corrupt(path:reason:)``
    /// naming the path and what it is.
    package static func openRegular(_ path: String, _ flags: Int32, mode: mode_t = 0o644) throws(DeckError)
        -> Int32
    {
        try check(.open, path)
        let fd = Glibc.open(path, flags | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else {
            let code = errno
            // ELOOP: a symbolic link; ENXIO: a FIFO without a reader, opened for writing, or a
            // device without its driver; EISDIR: a directory opened for writing.
            if code == ELOOP || code == ENXIO || code == EISDIR || code == ENODEV,
                let st = try? status(path), (st.st_mode & S_IFMT) != S_IFREG
            {
                throw notRegular(path, st.st_mode)
            }
            throw failure(.open, path, code)
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let code = errno
            close(fd)
            throw failure(.stat, path, code)
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw notRegular(path, st.st_mode)
        }
        // Regular files ignore O_NONBLOCK; clear it all the same, for whoever reads the descriptor.
        let current = fcntl(fd, F_GETFL)
        if current >= 0 { _ = fcntl(fd, F_SETFL, current & ~O_NONBLOCK) }
        return fd
    }

    /// The error for a package file that is not a regular file.
    package static func notRegular(_ path: String, _ mode: mode_t) -> DeckError {
        .corrupt(
            path: path,
            reason: "it is \(kindName(mode)), not a regular file (a package holds only regular files and "
                + "directories)")
    }

    /// What a file is, for messages: "a FIFO (named pipe)", "a directory", …
    package static func kindName(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: "a regular file"
        case S_IFDIR: "a directory"
        case S_IFLNK: "a symbolic link"
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        default: "a special file"
        }
    }

    /// Reads the whole file open at `fd`, refusing more than `limit` bytes.
    package static func readAll(_ fd: Int32, path: String, limit: Int) throws(DeckError) -> Data? {
        var data = Data()
        let chunk = 1 << 16
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            // Reads until end of file, whatever size the file claims.
            let n = try read(fd, into: buffer.baseAddress!, count: chunk, path: path)
            if n == 0 { return data }
            data.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            if data.count > limit { return nil }
        }
    }

    package static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    /// Writes all of `buffer`, retrying short writes and EINTR.
    package static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, path: String) throws(DeckError) {
        try check(.write, path)
        guard var base = buffer.baseAddress else { return }
        var remaining = buffer.count
        while remaining > 0 {
            let n = Glibc.write(fd, base, remaining)
            if n < 0 {
                if errno == EINTR { continue }
                throw failure(.write, path)
            }
            remaining -= n
            base += n
        }
    }

    /// Reads up to `count` bytes; 0 means end of file.
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, path: String)
        throws(DeckError)
        -> Int
    {
        try check(.read, path)
        while true {
            let n = Glibc.read(fd, buffer, count)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw failure(.read, path)
        }
    }

    package static func fsync(_ fd: Int32, path: String) throws(DeckError) {
        try check(.fsync, path)
        guard Glibc.fsync(fd) == 0 else { throw failure(.fsync, path) }
    }

    /// Flushes the directory at `path`, making renames and creations in it durable.
    package static func fsyncDirectory(_ path: String) throws(DeckError) {
        let fd = try open(path, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try fsync(fd, path: path)
    }

    /// Flushes the whole file system holding `path` (one call instead of thousands of fsyncs).
    package static func syncFileSystem(containing path: String) throws(DeckError) {
        let fd = try open(path, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try check(.fsync, path)
        guard deck_syncfs(fd) == 0 else { throw failure(.fsync, path) }
    }

    package static func rename(_ from: String, _ to: String) throws(DeckError) {
        try check(.rename, to)
        guard Glibc.rename(from, to) == 0 else { throw failure(.rename, to) }
    }

    /// Renames `from` to `to` only if `to` does not exist (renameat2 RENAME_NOREPLACE).
    package static func renameNoReplace(_ from: String, _ to: String) throws(DeckError) {
        try check(.rename, to)
        guard deck_rename_noreplace(from, to) == 0 else { throw failure(.rename, to) }
    }

    package static func unlink(_ path: String) throws(DeckError) {
        try check(.unlink, path)
        guard Glibc.unlink(path) == 0 || errno == ENOENT else { throw failure(.unlink, path) }
    }

    package static func mkdir(_ path: String, mode: mode_t = 0o755, existingOK: Bool = true) throws(DeckError)
    {
        try check(.mkdir, path)
        if Glibc.mkdir(path, mode) == 0 { return }
        if errno == EEXIST && existingOK && isDirectory(path) { return }
        throw failure(.mkdir, path)
    }

    package static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// lstat(2): nil when the path does not exist.
    package static func status(_ path: String) throws(DeckError) -> stat? {
        try check(.stat, path)
        var st = stat()
        if lstat(path, &st) == 0 { return st }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw failure(.stat, path)
    }

    /// The names in a directory (not `.` or `..`), unsorted.
    package static func list(_ path: String) throws(DeckError) -> [String] {
        guard let dir = opendir(path) else { throw failure(.open, path) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            // Read the name in place, up to its NUL: a record can end before the full 256 bytes
            // of `d_name`, so copying the field out would read past it (found by ASan).
            let name = withUnsafePointer(to: &entry.pointee.d_name) { field in
                field.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes a directory tree without following links.
    package static func removeTree(_ path: String) throws(DeckError) {
        guard let st = try status(path) else { return }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            for name in try list(path) { try removeTree(path + "/" + name) }
            try check(.unlink, path)
            guard rmdir(path) == 0 else { throw failure(.unlink, path) }
        } else {
            try unlink(path)
        }
    }

    /// A random hexadecimal suffix for temporary names.
    package static func randomSuffix() -> String {
        String(UInt64.random(in: 0...UInt64.max), radix: 16)
    }
}
