import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The content-addressed blob files of one package: `blobs/<first two hex digits>/<64 hex digits>`.
///
/// Files are written under `tmp/`, hashed in the same pass, and renamed into place; the
/// store remembers which files it wrote so that ``makeDurable()`` can flush them before the
/// transaction that references them commits (the spec's save protocol). Not thread-safe.
package final class BlobStore {
    /// The package directory.
    package let packagePath: String
    /// Digests written since the last ``makeDurable()``, whose files may not be on disk yet.
    private(set) var pendingDurability: Set<Digest> = []
    /// Digests whose files this store created since the last save (for rollback clean-up).
    var createdSinceSave: Set<Digest> = []
    /// Called while a file is streamed into a blob, with (bytes written, file size).
    package var progress: ((Int64, Int64) -> Void)?
    /// Whether the store already registers a digest (set by the package). A registered blob's
    /// file is never replaced: the committed file stays, the new copy is discarded.
    var isRegistered: (Digest) -> Bool = { _ in false }

    static let chunkSize = 1 << 20

    init(packagePath: String) {
        self.packagePath = packagePath
    }

    /// `blobs/`.
    var blobsPath: String { packagePath + "/" + PackageLayout.blobsDirectory }
    /// `tmp/`.
    var tmpPath: String { packagePath + "/" + PackageLayout.tmpDirectory }

    /// The path of the file that holds `digest`'s bytes.
    package func path(for digest: Digest) -> String {
        let hex = digest.hexDigest
        return blobsPath + "/" + hex.prefix(2) + "/" + hex
    }

    /// Writes `data` as a blob file and returns its reference. Bytes already stored and
    /// registered keep their committed file; the new copy is discarded.
    package func write(_ data: Data) throws(DeckError) -> BlobReference {
        let writer = try makeWriter()
        do {
            try data.withUnsafeBytes { buffer in try writer.write(buffer) }
            return try writer.finish()
        } catch {
            writer.abandon()
            throw DeckError.wrap(error)
        }
    }

    /// Streams the file at `source` into a blob, never holding it whole in memory.
    ///
    /// `source` must be a regular file (a symbolic link to one is followed); a directory, FIFO,
    /// socket or device is refused with ``DeckError/io(path:operation:errno:)`` before anything can
    /// block on it. The file is read to its end whatever size it reports (files in `/proc` report
    /// 0); ``progress`` receives the size `fstat` reported, or the bytes read when that is more.
    package func write(contentsOf source: String) throws(DeckError) -> BlobReference {
        let input = try InputFile(opening: source) { kind, code in
            DeckError.io(path: source, operation: "read (it is \(kind), not a regular file)", errno: code)
        }
        return try write(Data(), followedBy: input)
    }

    /// A writer for a blob whose bytes arrive in pieces.
    package func makeWriter() throws(DeckError) -> BlobWriter {
        try FileSystem.mkdir(tmpPath)
        let path = tmpPath + "/blob-" + FileSystem.randomSuffix() + ".part"
        let fd = try FileSystem.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o644)
        return BlobWriter(store: self, fd: fd, temporaryPath: path)
    }

    func didPlace(_ digest: Digest, existed: Bool) {
        pendingDurability.insert(digest)
        if !existed { createdSinceSave.insert(digest) }
    }

    /// Makes every blob written since the last call durable: the file contents and their
    /// directory entries. Many files are flushed with one `syncfs`, a few with `fsync` each.
    package func makeDurable() throws(DeckError) {
        guard !pendingDurability.isEmpty else { return }
        if pendingDurability.count >= 16 {
            try FileSystem.syncFileSystem(containing: packagePath)
        } else {
            var directories: Set<String> = [packagePath, blobsPath]
            for digest in pendingDurability {
                let path = path(for: digest)
                let fd = try FileSystem.openRegular(path, O_RDONLY)
                defer { FileSystem.close(fd) }
                try FileSystem.fsync(fd, path: path)
                directories.insert(String(path.prefix(path.count - 65)))
            }
            for directory in directories.sorted() { try FileSystem.fsyncDirectory(directory) }
        }
        pendingDurability.removeAll()
    }

    /// Forgets one blob written since the last save (its file was removed).
    func forget(_ digest: Digest) {
        pendingDurability.remove(digest)
        createdSinceSave.remove(digest)
    }

    /// Forgets what was written since the last save, once it has been committed or rolled back.
    func resetTracking() {
        pendingDurability.removeAll()
        createdSinceSave.removeAll()
    }

    /// Removes the file for `digest` (used once no committed row references it).
    func remove(_ digest: Digest) throws(DeckError) {
        try FileSystem.unlink(path(for: digest))
    }

    /// True when the file for `digest` exists as a regular file (a FIFO or device in its place
    /// is no blob: writing the same bytes again replaces it).
    package func contains(_ digest: Digest) -> Bool {
        guard let st = try? FileSystem.status(path(for: digest)) else { return false }
        return (st.st_mode & S_IFMT) == S_IFREG
    }

    /// Reads a whole blob into memory, checking that its bytes match its digest.
    package func read(_ digest: Digest) throws(DeckError) -> Data {
        var data = Data()
        try stream(digest) { chunk in data.append(contentsOf: chunk) }
        return data
    }

    /// Streams a blob in chunks of at most 1 MiB, checking its digest at the end.
    ///
    /// The check comes after the last chunk, so a consumer that must not act on bad bytes
    /// should stage them, or use ``copy(_:toPath:)``, which does.
    package func stream(_ digest: Digest, _ body: (UnsafeRawBufferPointer) throws -> Void) throws(DeckError) {
        let path = path(for: digest)
        let fd: Int32
        do {
            fd = try FileSystem.openRegular(path, O_RDONLY)
        } catch .notFound {
            throw DeckError.blobUnavailable(digest: digest.hexDigest, reason: "file \(path) is missing")
        } catch .corrupt(_, let reason) {
            // A FIFO or device in its place: refused without blocking.
            throw DeckError.blobUnavailable(digest: digest.hexDigest, reason: "file \(path): \(reason)")
        }
        defer { FileSystem.close(fd) }
        let hasher = SHA256Hasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = try FileSystem.read(fd, into: buffer.baseAddress!, count: buffer.count, path: path)
            if n == 0 { break }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
            hasher.update(chunk)
            do { try body(chunk) } catch { throw DeckError.wrap(error) }
        }
        let actual = hasher.finalize()
        guard actual == digest else {
            throw DeckError.blobUnavailable(
                digest: digest.hexDigest,
                reason: "file \(path) is corrupt: its bytes hash to \(actual.hexDigest)")
        }
    }

    /// Hashes a blob file and returns the digest of its bytes and its size.
    static func hashFile(at path: String) throws(DeckError) -> (Digest, Int64) {
        let fd = try FileSystem.openRegular(path, O_RDONLY)
        defer { FileSystem.close(fd) }
        let hasher = SHA256Hasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var size: Int64 = 0
        while true {
            let n = try FileSystem.read(fd, into: buffer.baseAddress!, count: buffer.count, path: path)
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            size += Int64(n)
        }
        return (hasher.finalize(), size)
    }

    /// Every file under `blobs/`: well-named blob files by digest, and anything else as a stray path.
    func inventory() throws(DeckError) -> (blobs: [Digest: String], strays: [String]) {
        var blobs: [Digest: String] = [:]
        var strays: [String] = []
        guard FileSystem.isDirectory(blobsPath) else { return ([:], []) }
        for fan in try FileSystem.list(blobsPath).sorted() {
            let fanPath = blobsPath + "/" + fan
            let isHex = fan.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
            guard fan.utf8.count == 2, isHex, FileSystem.isDirectory(fanPath) else {
                strays.append(fanPath)
                continue
            }
            for name in try FileSystem.list(fanPath).sorted() {
                let path = fanPath + "/" + name
                if let digest = Digest(hex: name), name.hasPrefix(fan),
                    let st = try FileSystem.status(path), (st.st_mode & S_IFMT) == S_IFREG
                {
                    blobs[digest] = path
                } else {
                    strays.append(path)
                }
            }
        }
        return (blobs, strays)
    }
}

@available(*, unavailable)
extension BlobStore: Sendable {}

/// Receives a blob's bytes in pieces, hashing them as they are written.
///
/// Call ``finish()`` to name and place the file, or ``abandon()`` to remove it.
package final class BlobWriter {
    private let store: BlobStore
    private var fd: Int32
    private let temporaryPath: String
    private let hasher = SHA256Hasher()
    private var size: Int64 = 0

    init(store: BlobStore, fd: Int32, temporaryPath: String) {
        self.store = store
        self.fd = fd
        self.temporaryPath = temporaryPath
    }

    deinit { abandon() }

    /// Appends bytes.
    package func write(_ buffer: UnsafeRawBufferPointer) throws(DeckError) {
        try FileSystem.write(fd, buffer, path: temporaryPath)
        hasher.update(buffer)
        size += Int64(buffer.count)
    }

    /// Closes the file, renames it to its digest and returns the reference.
    package func finish() throws(DeckError) -> BlobReference {
        FileSystem.close(fd)
        fd = -1
        let digest = hasher.finalize()
        let final = store.path(for: digest)
        let existed = store.contains(digest)
        if existed && store.isRegistered(digest) {
            // Same bytes, already stored and referenced: replacing the file with a copy that is
            // not yet durable could lose committed data on power loss.
            try? FileSystem.unlink(temporaryPath)
            return BlobReference(digest: digest, size: size)
        }
        do {
            try FileSystem.mkdir(store.blobsPath)
            try FileSystem.mkdir(String(final.prefix(final.count - 65)))
            try FileSystem.rename(temporaryPath, final)
        } catch {
            try? FileSystem.unlink(temporaryPath)
            throw error
        }
        store.didPlace(digest, existed: existed)
        return BlobReference(digest: digest, size: size)
    }

    /// Closes and removes the temporary file. Safe to call after ``finish()``.
    package func abandon() {
        guard fd >= 0 else { return }
        FileSystem.close(fd)
        fd = -1
        try? FileSystem.unlink(temporaryPath)
    }
}

@available(*, unavailable)
extension BlobWriter: Sendable {}
