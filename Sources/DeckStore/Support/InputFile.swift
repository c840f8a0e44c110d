import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A file a caller named as the source of a value (`deck insert … key=@FILE`, ``Value/file(_:)``),
/// opened so that it can neither hang nor be cut short.
///
/// Only regular files are read (symbolic links are followed). A directory, FIFO, socket or device
/// is refused before anything blocks on it: the path is checked with `stat(2)` before opening (so a
/// device is never opened), opened with `O_NONBLOCK` (so a FIFO swapped in meanwhile cannot block
/// the open), and checked again with `fstat(2)` on the open descriptor. The file is then read to
/// its end, whatever size it reports: files in `/proc` and `/sys` report 0 and return one page per
/// read, and a file that grows while it is read is read to its end at the time.
package final class InputFile {
    let path: String
    private var fd: Int32
    /// The size `fstat` reported when the file was opened: a hint for progress, not a limit.
    let sizeHint: Int64

    /// Opens `path`. `refusal` makes the error for a file that is not regular, from a description
    /// of what it is (e.g. "a FIFO") and the errno that best fits it.
    init(opening path: String, refusal: (_ kind: String, _ code: Int32) -> DeckError) throws(DeckError) {
        self.path = path
        var st = stat()
        try FileSystem.check(.stat, path)
        guard stat(path, &st) == 0 else { throw FileSystem.failure(.stat, path) }
        if let kind = Self.irregularKind(st) { throw refusal(kind, Self.refusalErrno(st)) }
        fd = try FileSystem.open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY)
        guard fstat(fd, &st) == 0 else {
            let error = FileSystem.failure(.stat, path)
            FileSystem.close(fd)
            throw error
        }
        if let kind = Self.irregularKind(st) {
            FileSystem.close(fd)
            throw refusal(kind, Self.refusalErrno(st))
        }
        // Regular files never block; clear the flag so reads behave in the ordinary way.
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
        sizeHint = Int64(st.st_size)
    }

    /// Opens the source of a value: a missing or irregular file is `invalid(reason)` (an invalid
    /// value of the attribute), other failures the file-system error.
    convenience init(value path: String, invalid: (String) -> DeckError) throws(DeckError) {
        do {
            try self.init(opening: path) { kind, _ in
                invalid("\(path) is \(kind), not a regular file; @FILE reads regular files only")
            }
        } catch .notFound {
            throw invalid("\(path) does not exist")
        }
    }

    deinit { FileSystem.close(fd) }

    /// The whole contents of the regular file at `url` (a directory, FIFO, socket or device is
    /// ``DeckError/notARegularFile(path:kind:)``).
    package static func contents(of url: URL) throws(DeckError) -> Data {
        try InputFile(opening: url.path) { kind, _ in .notARegularFile(path: url.path, kind: kind) }.read()
    }

    /// The contents of a small input file at `url` (a schema, a plan): only a regular file is
    /// read, and one larger than `limit` bytes is refused. `invalid` makes the error for either,
    /// given the reason (`is a directory, not a schema file`, `larger than 1 MiB, …`).
    package static func smallFile(
        at url: URL, limit: Int, kind what: String, invalid: (String) -> DeckError
    ) throws(DeckError) -> Data {
        let path = url.path
        let input = try InputFile(opening: path) { kind, _ in invalid("\(path): is \(kind), not a \(what)") }
        let data = try input.read(upTo: limit + 1)
        guard data.count <= limit else {
            throw invalid("\(path): larger than \(limit >> 20) MiB, the most a \(what) may be")
        }
        return data
    }

    /// Checks that `url` names a regular file that can be opened for reading.
    package static func checkReadable(_ url: URL) throws(DeckError) {
        _ = try InputFile(opening: url.path) { kind, _ in .notARegularFile(path: url.path, kind: kind) }
    }

    /// Reads up to `count` bytes into `buffer`; 0 means end of file.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(DeckError) -> Int {
        try FileSystem.read(fd, into: buffer, count: count, path: path)
    }

    /// Reads until end of file, or until `limit` bytes have been read (then more may follow).
    func read(upTo limit: Int = .max) throws(DeckError) -> Data {
        var data = Data()
        let chunk = Int(min(max(sizeHint, 0) + 1, Int64(BlobStore.chunkSize)))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(chunk, 4096), alignment: 16)
        defer { buffer.deallocate() }
        while data.count < limit {
            let n = try read(into: buffer.baseAddress!, count: min(buffer.count, limit - data.count))
            if n == 0 { break }
            data.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
        return data
    }

    /// What a file that is not regular is, for messages; nil for a regular file.
    static func irregularKind(_ st: stat) -> String? {
        switch st.st_mode & S_IFMT {
        case S_IFREG: nil
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        default: "an unknown kind of file"
        }
    }

    private static func refusalErrno(_ st: stat) -> Int32 {
        (st.st_mode & S_IFMT) == S_IFDIR ? EISDIR : EINVAL
    }
}

@available(*, unavailable)
extension InputFile: Sendable {}
