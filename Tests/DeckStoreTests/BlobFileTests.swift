import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

#if canImport(Glibc)
    import Glibc
#endif

/// A package holding one external blob, and the blob's bytes and digest.
private func packageWithBlob(in dir: URL, bytes: Data = testBytes(5_000, seed: 9)) throws -> (
    PackageStore, Data, Digest
) {
    let package = try makeTestStore(in: dir)
    try package.write { tx in
        try tx.insert("Card", ["front": .string("a"), "image": .data(bytes)])
    }
    return (package, bytes, SHA256Hasher.hash(bytes))
}

/// The file type bits of `path` (not following a link), or nil when nothing is there.
private func fileType(_ path: String) -> mode_t? {
    var st = stat()
    return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : nil
}

private func makeFIFO(_ path: String) throws {
    try #require(mkfifo(path, 0o644) == 0, "mkfifo: \(String(cString: strerror(errno)))")
}

/// Binds a Unix-domain socket at `path` (a socket file) and returns its descriptor.
private func makeSocket(_ path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    try #require(fd >= 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8) + [0]
    try #require(bytes.count <= MemoryLayout.size(ofValue: address.sun_path), "socket path too long")
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    try #require(bound == 0, "bind: \(String(cString: strerror(errno)))")
    return fd
}

/// Reads everything from `fd` until end of file.
private func readAll(_ fd: Int32) -> Data {
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        data.append(contentsOf: buffer[0..<n])
    }
    return data
}

@Suite("Blob bytes written out (BlobStore.copy)", .timed)
struct BlobCopyTests {
    @Test func toANewFileLeavesNoTemporaryBehind() throws {
        try withTestDirectory { dir in
            let (package, bytes, digest) = try packageWithBlob(in: dir)
            defer { try? package.close() }
            let out = dir.appendingPathComponent("out.bin").path
            try package.read { try $0.copyBlob(digest, toPath: out) }
            #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == bytes)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == [
                    "out.bin", "test.deck",
                ])
        }
    }

    @Test func anExistingRegularFileIsReplacedAtomicallyAndKeepsItsMode() throws {
        try withTestDirectory { dir in
            let (package, bytes, digest) = try packageWithBlob(in: dir)
            defer { try? package.close() }
            let out = dir.appendingPathComponent("out.bin").path
            try Data("old contents".utf8).write(to: URL(fileURLWithPath: out))
            _ = chmod(out, 0o600)
            var before = stat()
            _ = stat(out, &before)
            try package.read { try $0.copyBlob(digest, toPath: out) }
            var after = stat()
            _ = stat(out, &after)
            #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == bytes)
            #expect(after.st_mode & 0o777 == 0o600)
            // A new file renamed over the old one, not the old one rewritten in place.
            #expect(after.st_ino != before.st_ino)
        }
    }

    @Test func aLinkToARegularFileStaysALink() throws {
        try withTestDirectory { dir in
            let (package, bytes, digest) = try packageWithBlob(in: dir)
            defer { try? package.close() }
            let target = dir.appendingPathComponent("target.bin").path
            let link = dir.appendingPathComponent("link.bin").path
            try Data("old".utf8).write(to: URL(fileURLWithPath: target))
            try #require(symlink(target, link) == 0)
            try package.read { try $0.copyBlob(digest, toPath: link) }
            #expect(fileType(link) == S_IFLNK)
            #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == bytes)
        }
    }

    @Test func devNullIsWrittenNotReplaced() throws {
        try withTestDirectory { dir in
            let (package, _, digest) = try packageWithBlob(in: dir)
            defer { try? package.close() }
            var before = stat()
            try #require(stat("/dev/null", &before) == 0)
            try package.read { try $0.copyBlob(digest, toPath: "/dev/null") }
            var after = stat()
            try #require(stat("/dev/null", &after) == 0)
            #expect(after.st_mode & S_IFMT == S_IFCHR)
            #expect(after.st_rdev == before.st_rdev)
            #expect(after.st_ino == before.st_ino)
        }
    }

    @Test func aFIFOIsWrittenToItsReader() throws {
        try withTestDirectory { dir in
            let (package, bytes, digest) = try packageWithBlob(in: dir, bytes: testBytes(300_000, seed: 4))
            defer { try? package.close() }
            let fifo = dir.appendingPathComponent("pipe").path
            try makeFIFO(fifo)
            // The reader blocks in open until the writer opens; it reads to end of file.
            let received = ReceivedBytes()
            let reader = Thread {
                let fd = open(fifo, O_RDONLY)
                if fd >= 0 {
                    received.set(readAll(fd))
                    close(fd)
                }
                received.finish()
            }
            reader.start()
            try package.read { try $0.copyBlob(digest, toPath: fifo) }
            #expect(received.wait() == bytes)
            #expect(fileType(fifo) == S_IFIFO)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == [
                    "pipe", "test.deck",
                ])
        }
    }

    @Test func aDirectoryIsRefused() throws {
        try withTestDirectory { dir in
            let (package, _, digest) = try packageWithBlob(in: dir)
            defer { try? package.close() }
            let target = dir.appendingPathComponent("folder").path
            try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: false)
            let error = expectDeckError { try package.read { try $0.copyBlob(digest, toPath: target) } }
            guard case .io(let path, _, let code) = error else {
                Issue.record("expected an I/O error, got \(String(describing: error))")
                return
            }
            #expect(path == target)
            #expect(code == EISDIR)
            #expect(fileType(target) == S_IFDIR)
            #expect(try FileManager.default.contentsOfDirectory(atPath: target).isEmpty)
        }
    }

    @Test func aSocketIsRefused() throws {
        try withTestDirectory { dir in
            let (package, _, digest) = try packageWithBlob(in: dir)
            defer { try? package.close() }
            let path = dir.appendingPathComponent("sock").path
            let socket = try makeSocket(path)
            defer { close(socket) }
            let error = expectDeckError { try package.read { try $0.copyBlob(digest, toPath: path) } }
            guard case .io(let reported, _, let code) = error else {
                Issue.record("expected an I/O error, got \(String(describing: error))")
                return
            }
            #expect(reported == path && code == EOPNOTSUPP)
            #expect(fileType(path) == S_IFSOCK)
        }
    }

    @Test(.enabled(if: !runningAsRoot, "root writes into read-only directories"))
    func aReadOnlyDirectoryIsReportedAndGetsNoFile() throws {
        try withTestDirectory { dir in
            let (package, _, digest) = try packageWithBlob(in: dir)
            defer { try? package.close() }
            let locked = dir.appendingPathComponent("locked").path
            try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false)
            _ = chmod(locked, 0o555)
            let out = locked + "/out.bin"
            let error = expectDeckError { try package.read { try $0.copyBlob(digest, toPath: out) } }
            guard case .permissionDenied(let path, _) = error else {
                Issue.record("expected permission denied, got \(String(describing: error))")
                return
            }
            #expect(path == out)
            _ = chmod(locked, 0o755)
            #expect(try FileManager.default.contentsOfDirectory(atPath: locked).isEmpty)
        }
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/sys/kernel"), "needs sysfs"))
    func aDirectoryNobodyCanCreateFilesInIsReported() throws {
        // sysfs refuses new files even to root: the read-only directory case for every user.
        try withTestDirectory { dir in
            let (package, _, digest) = try packageWithBlob(in: dir)
            defer { try? package.close() }
            let out = "/sys/deck-test-\(UUID().uuidString).bin"
            let error = expectDeckError { try package.read { try $0.copyBlob(digest, toPath: out) } }
            #expect(error != nil)
            #expect(fileType(out) == nil)
        }
    }

    @Test func aCorruptBlobWritesNothingAnywhere() throws {
        try withTestDirectory { dir in
            let (package, _, digest) = try packageWithBlob(in: dir)
            defer { try? package.close() }
            let blobPath = BlobStore(packagePath: package.url.path).path(for: digest)
            _ = chmod(blobPath, 0o644)
            try flipByte(at: blobPath, offset: 100)

            // An existing regular file keeps its contents; no temporary is left.
            let out = dir.appendingPathComponent("out.bin").path
            try Data("keep me".utf8).write(to: URL(fileURLWithPath: out))
            let error = expectDeckError { try package.read { try $0.copyBlob(digest, toPath: out) } }
            guard case .blobUnavailable(let hex, let reason) = error else {
                Issue.record("expected blobUnavailable, got \(String(describing: error))")
                return
            }
            #expect(hex == digest.hexDigest)
            #expect(reason.contains("corrupt"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data("keep me".utf8))
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == [
                    "out.bin", "test.deck",
                ])

            // A FIFO gets no byte: its reader (opened first, so a writer would not block) sees none.
            let fifo = dir.appendingPathComponent("pipe").path
            try makeFIFO(fifo)
            let reader = open(fifo, O_RDONLY | O_NONBLOCK)
            try #require(reader >= 0)
            defer { close(reader) }
            expectDeckError { try package.read { try $0.copyBlob(digest, toPath: fifo) } }
            var byte: UInt8 = 0
            #expect(read(reader, &byte, 1) <= 0)
            #expect(fileType(fifo) == S_IFIFO)

            // A descriptor gets nothing either.
            var ends: [Int32] = [0, 0]
            try #require(pipe(&ends) == 0)
            expectDeckError { try package.read { try $0.copyBlob(digest, to: ends[1], name: "the pipe") } }
            close(ends[1])
            #expect(readAll(ends[0]).isEmpty)
            close(ends[0])
        }
    }

    @Test func aDescriptorReceivesTheCheckedBytes() throws {
        try withTestDirectory { dir in
            let (package, bytes, digest) = try packageWithBlob(in: dir, bytes: testBytes(40_000, seed: 2))
            defer { try? package.close() }
            var ends: [Int32] = [0, 0]
            try #require(pipe(&ends) == 0)
            // 40,000 bytes fit in a pipe's buffer: no reader thread needed.
            try package.read { try $0.copyBlob(digest, to: ends[1], name: "the pipe") }
            close(ends[1])
            #expect(readAll(ends[0]) == bytes)
            close(ends[0])
        }
    }

    @Test func aMissingBlobOrABlobThatIsAFIFOIsReportedWithoutBlocking() throws {
        try withTestDirectory { dir in
            let (package, _, digest) = try packageWithBlob(in: dir)
            defer { try? package.close() }
            let blobPath = BlobStore(packagePath: package.url.path).path(for: digest)
            _ = chmod(blobPath, 0o644)
            try FileManager.default.removeItem(atPath: blobPath)
            let out = dir.appendingPathComponent("out.bin").path
            let missing = expectDeckError { try package.read { try $0.copyBlob(digest, toPath: out) } }
            if case .blobUnavailable(_, let reason) = missing {
                #expect(reason.contains("missing"))
            } else {
                Issue.record("expected blobUnavailable, got \(String(describing: missing))")
            }
            try makeFIFO(blobPath)
            let fifo = expectDeckError { try package.read { try $0.copyBlob(digest, toPath: out) } }
            if case .blobUnavailable(_, let reason) = fifo {
                #expect(reason.contains("FIFO"))
            } else {
                Issue.record("expected blobUnavailable, got \(String(describing: fifo))")
            }
            #expect(fileType(out) == nil)
        }
    }

    @Test func aDestinationNameOfTheLongestLengthWorks() throws {
        try withTestDirectory { dir in
            let (package, bytes, digest) = try packageWithBlob(in: dir)
            defer { try? package.close() }
            let out = dir.appendingPathComponent(String(repeating: "n", count: 255)).path
            try package.read { try $0.copyBlob(digest, toPath: out) }
            #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == bytes)
        }
    }
}

/// Bytes handed from a reader thread to the test, with a wait for the thread to finish.
private final class ReceivedBytes: @unchecked Sendable {
    private let condition = NSCondition()
    private var data = Data()
    private var done = false

    func set(_ bytes: Data) {
        condition.lock()
        data = bytes
        condition.unlock()
    }

    func finish() {
        condition.lock()
        done = true
        condition.broadcast()
        condition.unlock()
    }

    func wait() -> Data {
        condition.lock()
        while !done { condition.wait() }
        defer { condition.unlock() }
        return data
    }
}

@Suite("Values read from files (key=@FILE)", .timed)
struct InputFileTests {
    /// A package with an inline and an external data attribute (threshold 16 bytes).
    private func package(in dir: URL) throws -> PackageStore {
        let schema = StoreSchema(entities: [
            Entity(
                "F",
                attributes: [
                    Attribute("inline", .data, isOptional: true),
                    Attribute(
                        "external", .data, isOptional: true, options: [.externalStorage],
                        externalThreshold: 16),
                ])
        ])
        return try PackageStore.create(
            at: dir.appendingPathComponent("f.deck"), contentType: "org.example.f", schema: schema)
    }

    /// The bytes stored for `property` of record `id`.
    private func stored(_ reader: StoreReader, _ id: Int64, _ property: String) throws -> Data? {
        switch try reader.record("F", id: id)?[property] {
        case .data(let data): data
        case .blob(let reference): try reader.data(for: reference)
        default: nil
        }
    }

    @Test func procFilesThatReportSizeZeroAreReadToTheirEnd() throws {
        try withTestDirectory { dir in
            let package = try package(in: dir)
            defer { try? package.close() }
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            // smaps spans many pages and procfs returns one page per read: the old code kept one.
            for property in ["inline", "external"] {
                for file in ["/proc/self/status", "/proc/self/smaps"] {
                    let id = try tx.insert("F", [property: .file(URL(fileURLWithPath: file))])
                    let data = try #require(try stored(tx, id, property), "\(file) → \(property)")
                    let text = String(decoding: data, as: UTF8.self)
                    #expect(text.hasSuffix("\n"), "\(file) → \(property)")
                    let lastLine = text.dropLast().split(separator: "\n").last ?? ""
                    if file.hasSuffix("status") {
                        #expect(text.hasPrefix("Name:"))
                        #expect(lastLine.hasPrefix("nonvoluntary_ctxt_switches:"), "\(lastLine)")
                    } else {
                        #expect(data.count > 3 * 4096, "\(file) → \(property): \(data.count) bytes")
                        #expect(lastLine.hasPrefix("VmFlags:"), "\(lastLine)")
                    }
                }
            }
            try tx.commit()
        }
    }

    @Test func directoriesFIFOsAndDevicesAreRefusedWithoutBlocking() throws {
        try withTestDirectory { dir in
            let package = try package(in: dir)
            defer { try? package.close() }
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let fifo = dir.appendingPathComponent("pipe").path
            try makeFIFO(fifo)
            let socketPath = dir.appendingPathComponent("sock").path
            let socket = try makeSocket(socketPath)
            defer { close(socket) }
            let cases = [
                (dir.path, "a directory"), (fifo, "a FIFO"), ("/dev/null", "a character device"),
                (socketPath, "a socket"),
            ]
            for (path, kind) in cases {
                for property in ["inline", "external"] {
                    let error = expectDeckError {
                        try tx.insert("F", [property: .file(URL(fileURLWithPath: path))])
                    }
                    guard case .invalidValue(let entity, let name, let reason) = error else {
                        Issue.record("\(path): expected invalidValue, got \(String(describing: error))")
                        continue
                    }
                    #expect(entity == "F" && name == property)
                    #expect(reason.contains(path) && reason.contains(kind), "\(reason)")
                }
                // The streaming API refuses them the same way.
                let error = expectDeckError { _ = try tx.live().blobs.write(contentsOf: path) }
                if case .io(let reported, let operation, _) = error {
                    #expect(reported == path && operation.contains(kind), "\(operation)")
                } else {
                    Issue.record("\(path): expected an I/O error, got \(String(describing: error))")
                }
            }
            #expect(try tx.count(RecordQuery("F")) == 0)
        }
    }

    @Test func aLinkToARegularFileIsFollowed() throws {
        try withTestDirectory { dir in
            let package = try package(in: dir)
            defer { try? package.close() }
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let target = dir.appendingPathComponent("real.bin").path
            let link = dir.appendingPathComponent("link.bin").path
            let bytes = testBytes(1_000)
            try bytes.write(to: URL(fileURLWithPath: target))
            try #require(symlink(target, link) == 0)
            let id = try tx.insert("F", ["external": .file(URL(fileURLWithPath: link))])
            #expect(try stored(tx, id, "external") == bytes)
        }
    }

    @Test func aReadErrorIsReportedNotTruncated() throws {
        try withTestDirectory { dir in
            let package = try package(in: dir)
            defer { try? package.close() }
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            // /proc/self/mem opens for anyone but fails to read at offset 0 (nothing is mapped there).
            for property in ["inline", "external"] {
                let error = expectDeckError {
                    try tx.insert("F", [property: .file(URL(fileURLWithPath: "/proc/self/mem"))])
                }
                guard case .io(let path, let operation, _) = error else {
                    Issue.record("expected an I/O error, got \(String(describing: error))")
                    continue
                }
                #expect(path == "/proc/self/mem" && operation == "read")
            }
            #expect(try tx.count(RecordQuery("F")) == 0)
            #expect(temporaryFiles(package.url).isEmpty)
        }
    }

    @Test(.enabled(if: !runningAsRoot, "root reads unreadable files"))
    func anUnreadableFileIsReported() throws {
        try withTestDirectory { dir in
            let package = try package(in: dir)
            defer { try? package.close() }
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let path = dir.appendingPathComponent("secret.bin").path
            try testBytes(100).write(to: URL(fileURLWithPath: path))
            _ = chmod(path, 0o000)
            let error = expectDeckError {
                try tx.insert("F", ["inline": .file(URL(fileURLWithPath: path))])
            }
            guard case .permissionDenied(let reported, _) = error else {
                Issue.record("expected permission denied, got \(String(describing: error))")
                return
            }
            #expect(reported == path)
        }
    }

    @Test func aFileThatGrowsWhileItIsReadIsReadToItsEnd() throws {
        try withTestDirectory { dir in
            let package = try package(in: dir)
            defer { try? package.close() }
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let path = dir.appendingPathComponent("growing.bin").path
            let first = testBytes(BlobStore.chunkSize + BlobStore.chunkSize / 2, seed: 1)
            let more = testBytes(BlobStore.chunkSize, seed: 2)
            try first.write(to: URL(fileURLWithPath: path))
            // The first progress call comes after the first chunk: the file grows then.
            var totals: [(Int64, Int64)] = []
            let blobs = try tx.live().blobs
            blobs.progress = { done, total in
                if totals.isEmpty, let handle = FileHandle(forWritingAtPath: path) {
                    handle.seekToEndOfFile()
                    handle.write(more)
                    handle.closeFile()
                }
                totals.append((done, total))
            }
            defer { blobs.progress = nil }
            let reference = try blobs.write(contentsOf: path)
            #expect(reference.size == Int64(first.count + more.count))
            #expect(reference.digest == SHA256Hasher.hash(first + more))
            #expect(totals.allSatisfy { $0.0 <= $0.1 })
            #expect(totals.last.map { $0.0 == $0.1 } == true)

            // The record path reads to the end too.
            try first.write(to: URL(fileURLWithPath: path))
            totals = []
            let id = try tx.insert("F", ["external": .file(URL(fileURLWithPath: path))])
            #expect(try stored(tx, id, "external") == first + more)
        }
    }
}

/// A failed write of a blob's bytes.
@Suite("A failed write of a blob's bytes", .timed)
struct BlobWriteFaultTests {
    @Test func aFailedWriteLeavesTheDestinationAndNoTemporary() throws {
        try withTestDirectory { dir in
            let (package, _, digest) = try packageWithBlob(in: dir)
            defer { try? package.close() }
            let out = dir.appendingPathComponent("out.bin").path
            try Data("old".utf8).write(to: URL(fileURLWithPath: out))
            for operation in [FaultInjection.Operation.write, .fsync, .rename] {
                var error: DeckError?
                let fired = FaultInjection.inject(operation, pathContains: dir.path, errno: ENOSPC) {
                    error = expectDeckError { try package.read { try $0.copyBlob(digest, toPath: out) } }
                }.fired
                #expect(fired, "\(operation)")
                #expect(error != nil, "\(operation)")
                #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data("old".utf8), "\(operation)")
                #expect(
                    try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == [
                        "out.bin", "test.deck",
                    ], "\(operation)")
            }
        }
    }
}
