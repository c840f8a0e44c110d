import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The advisory writer lock: an exclusive `flock(2)` on the package's `lock` file, which holds
/// the holder's pid as decimal text. The kernel drops the lock when the holder exits, so a
/// crashed writer never blocks the next one.
package final class WriterLock {
    private var fd: Int32
    let path: String

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { release() }

    /// Takes the lock of the package at `packagePath`, or throws ``DeckError/locked(path:pid:)``.
    static func acquire(packagePath: String) throws(DeckError) -> WriterLock {
        let path = packagePath + "/" + PackageLayout.lockFile
        // A lock that is a FIFO or device would block or mislead: only a regular file will do.
        let fd = try FileSystem.openRegular(path, O_RDWR | O_CREAT, mode: 0o644)
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            let pid = readPID(fd)
            FileSystem.close(fd)
            if code == EWOULDBLOCK { throw DeckError.locked(path: packagePath, pid: pid) }
            throw FileSystem.failure(.open, path, code)
        }
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return WriterLock(fd: fd, path: path)
    }

    /// The pid of the process holding the writer lock of `packagePath`, or nil when nobody does.
    /// Never blocks: a `lock` that is not a regular file counts as held by nobody (opening refuses
    /// such a package anyway).
    package static func holder(packagePath: String) -> Int32? {
        let path = packagePath + "/" + PackageLayout.lockFile
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return nil
        }
        return readPID(fd) ?? -1
    }

    private static func readPID(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 31, 0) }
        guard n > 0 else { return nil }
        let text = String(decoding: buffer[0..<n], as: UTF8.self).trimmingCharacters(
            in: .whitespacesAndNewlines)
        return Int32(text)
    }

    /// Releases the lock. The pid is left in the file; it means nothing without the lock.
    package func release() {
        guard fd >= 0 else { return }
        flock(fd, LOCK_UN)
        Glibc.close(fd)
        fd = -1
    }
}
