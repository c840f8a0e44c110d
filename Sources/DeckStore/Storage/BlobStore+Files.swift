import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// Moving bytes between blob files and files outside the package: a source file streamed into a
// blob (read to its end, whatever size it reports), and a blob's checked bytes written out.

extension BlobStore {
    /// Writes `head`, then the rest of `input`, as one blob file; returns its reference. Bytes go
    /// out in writes of 1 MiB (the last one shorter), however short the reads are.
    func write(_ head: Data, followedBy input: InputFile) throws(DeckError) -> BlobReference {
        let writer = try makeWriter()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var written: Int64 = 0
        var pending = 0
        do throws(DeckError) {
            func flush() throws(DeckError) {
                guard pending > 0 else { return }
                try writer.write(UnsafeRawBufferPointer(rebasing: buffer[0..<pending]))
                written += Int64(pending)
                pending = 0
                // The size is a hint (0 for /proc files, stale for a growing file), never a limit.
                progress?(written, max(input.sizeHint, written))
            }
            if head.count > buffer.count {
                var failure: DeckError?
                head.withUnsafeBytes { bytes in
                    do throws(DeckError) { try writer.write(bytes) } catch { failure = error }
                }
                if let failure { throw failure }
                written = Int64(head.count)
            } else {
                head.copyBytes(to: buffer)
                pending = head.count
            }
            while true {
                let n = try input.read(into: buffer.baseAddress! + pending, count: buffer.count - pending)
                pending += n
                if n == 0 || pending == buffer.count { try flush() }
                if n == 0 { break }
            }
            return try writer.finish()
        } catch {
            writer.abandon()
            throw error
        }
    }

    /// Writes the bytes of blob `digest` to the file at `destination`, never letting a byte reach
    /// it before the bytes have hashed to `digest`.
    ///
    /// What happens depends on what `destination` is (a symbolic link is followed):
    ///
    /// - **Nothing, or a regular file**: the bytes go to a temporary file in the same directory,
    ///   hashed as they are written and flushed; only if they match does `rename(2)` replace the
    ///   destination, atomically. A corrupt blob leaves the destination as it was. An existing
    ///   file keeps its permission bits (not its owner); a link keeps pointing at the new file.
    /// - **A FIFO, character or block device** (a terminal, `/dev/null`, `/dev/stdout` on a pipe):
    ///   it cannot be replaced, so it is never unlinked, renamed over, created or truncated. A
    ///   first pass over the blob file checks the digest; then the destination is opened for
    ///   writing (a FIFO waits for its reader) and the bytes are written from the same open blob
    ///   file, checked again on the way (a file changed in between is reported, but what was
    ///   written by then stays written).
    /// - **A directory or socket**: refused (`DeckError.io` with `EISDIR` or `EOPNOTSUPP`).
    ///
    /// Errors name `destination`: ``DeckError/blobUnavailable(digest:reason:)`` for a missing
    /// or corrupt blob, and the file-system errors of creating, writing or renaming.
    package func copy(_ digest: Digest, toPath destination: String) throws(DeckError) {
        guard var st = try FileSystem.status(destination) else {
            return try replace(destination, with: digest, keepingMode: nil)
        }
        var target = destination
        if (st.st_mode & S_IFMT) == S_IFLNK {
            try FileSystem.check(.stat, destination)
            guard stat(destination, &st) == 0 else { throw FileSystem.failure(.stat, destination) }
            if (st.st_mode & S_IFMT) == S_IFREG {
                guard let resolved = realpath(destination, nil) else {
                    throw FileSystem.failure(.stat, destination)
                }
                target = String(cString: resolved)
                free(resolved)
            }
        }
        switch st.st_mode & S_IFMT {
        case S_IFREG:
            try replace(target, with: digest, keepingMode: st.st_mode & 0o777)
        case S_IFDIR:
            throw DeckError.io(path: destination, operation: "write", errno: EISDIR)
        case S_IFSOCK:
            throw DeckError.io(path: destination, operation: "write", errno: EOPNOTSUPP)
        default:
            try writeInPlace(destination, digest: digest)
        }
    }

    /// Writes the bytes of blob `digest` to an open file descriptor (standard output, a pipe,
    /// a socket), after a first pass over the blob file has checked its digest. The second pass
    /// reads the same open file and is checked again; a file changed in between is reported,
    /// though what was written by then stays written. `name` names the destination in errors.
    package func copy(_ digest: Digest, to fileDescriptor: Int32, name: String) throws(DeckError) {
        let (blob, path) = try openBlob(digest)
        defer { FileSystem.close(blob) }
        try pass(blob, path: path, digest: digest, into: nil)
        try rewind(blob, path: path)
        try pass(blob, path: path, digest: digest) { chunk throws(DeckError) in
            try FileSystem.write(fileDescriptor, chunk, path: name)
        }
    }

    /// Stages the blob's bytes next to `target` and renames them over it once they check out.
    ///
    /// The staging file is a staging item (``Staging``, spec 16.9: `.NAME.blob-<hex>`): removed
    /// on SIGINT, SIGTERM and SIGHUP, and, when a kill or crash left it, by the next copy to the
    /// same name.
    private func replace(_ target: String, with digest: Digest, keepingMode mode: mode_t?) throws(DeckError) {
        let (blob, path) = try openBlob(digest)
        defer { FileSystem.close(blob) }
        let staging: StagingItem
        do {
            staging = try Staging.make(beside: target, kind: .blob, isDirectory: false, mode: 0o666)
        } catch {
            switch error {
            case .permissionDenied: throw DeckError.permissionDenied(path: target, operation: "create")
            case .notFound:
                let slash = target.lastIndex(of: "/")
                throw DeckError.notFound(
                    path: slash.map { $0 == target.startIndex ? "/" : String(target[..<$0]) } ?? ".")
            case .io(_, _, let code): throw DeckError.io(path: target, operation: "create", errno: code)
            default: throw error
            }
        }
        // Discarded (removed) on any failure below, when `staging` goes away unreleased.
        let out = try FileSystem.open(staging.path, O_WRONLY | O_NOFOLLOW)
        var isOpen = true
        do {
            try pass(blob, path: path, digest: digest) { chunk throws(DeckError) in
                try FileSystem.write(out, chunk, path: target)
            }
            if let mode { _ = fchmod(out, mode) }
            try FileSystem.fsync(out, path: target)
            FileSystem.close(out)
            isOpen = false
            try FileSystem.rename(staging.path, target)
            staging.release()
        } catch {
            // Closed once only: a descriptor number closed twice may by then be another file's.
            if isOpen { FileSystem.close(out) }
            staging.discard()
            throw error
        }
    }

    /// Checks the blob, then opens the (non-regular) destination and writes to it.
    private func writeInPlace(_ destination: String, digest: Digest) throws(DeckError) {
        let (blob, path) = try openBlob(digest)
        defer { FileSystem.close(blob) }
        try pass(blob, path: path, digest: digest, into: nil)
        try rewind(blob, path: path)
        // No O_CREAT, no O_TRUNC: the file is written, never made or cut.
        let out = try FileSystem.open(destination, O_WRONLY | O_NOCTTY)
        defer { FileSystem.close(out) }
        var st = stat()
        if fstat(out, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG {
            // Replaced by a regular file since it was looked at: replace that one properly.
            return try replace(destination, with: digest, keepingMode: st.st_mode & 0o777)
        }
        try pass(blob, path: path, digest: digest) { chunk throws(DeckError) in
            try FileSystem.write(out, chunk, path: destination)
        }
    }

    /// Opens a blob file for reading: it must be a regular file (a FIFO planted in `blobs/` must
    /// not block the reader).
    private func openBlob(_ digest: Digest) throws(DeckError) -> (Int32, String) {
        let path = path(for: digest)
        let fd: Int32
        do {
            fd = try FileSystem.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        } catch .notFound {
            throw DeckError.blobUnavailable(digest: digest.hexDigest, reason: "file \(path) is missing")
        } catch {
            if case .io(_, _, let code) = error, code == ELOOP {
                throw DeckError.blobUnavailable(
                    digest: digest.hexDigest, reason: "file \(path) is a symbolic link, not a regular file")
            }
            throw error
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let error = FileSystem.failure(.stat, path)
            FileSystem.close(fd)
            throw error
        }
        if let kind = InputFile.irregularKind(st) {
            FileSystem.close(fd)
            throw DeckError.blobUnavailable(
                digest: digest.hexDigest, reason: "file \(path) is \(kind), not a regular file")
        }
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
        return (fd, path)
    }

    private func rewind(_ fd: Int32, path: String) throws(DeckError) {
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw FileSystem.failure(.read, path) }
    }

    /// Reads the open blob file to its end, handing each chunk to `body`, and checks the digest.
    private func pass(
        _ fd: Int32, path: String, digest: Digest,
        into body: ((UnsafeRawBufferPointer) throws(DeckError) -> Void)?
    ) throws(DeckError) {
        let hasher = SHA256Hasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = try FileSystem.read(fd, into: buffer.baseAddress!, count: buffer.count, path: path)
            if n == 0 { break }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
            hasher.update(chunk)
            try body?(chunk)
        }
        let actual = hasher.finalize()
        guard actual == digest else {
            throw DeckError.blobUnavailable(
                digest: digest.hexDigest,
                reason: "file \(path) is corrupt: its bytes hash to \(actual.hexDigest)")
        }
    }
}
