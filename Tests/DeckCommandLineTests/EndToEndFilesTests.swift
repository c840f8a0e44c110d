import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `deck blob get -o` into every kind of destination, and `key=@FILE` from every kind of source.
@Suite("End to end: blob get destinations and @FILE sources", .timed)
struct EndToEndFilesTests {
    /// A sample package, one of its blobs (digest and bytes), and its directory.
    func sampleBlob() throws -> (TemporaryDirectory, String, String, Data) {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let (digest, blobPath) = try #require(try e2eBlobFiles(path).sorted { $0.key < $1.key }.first)
        return (directory, path, digest, try Data(contentsOf: URL(fileURLWithPath: blobPath)))
    }

    func fileType(_ path: String) -> mode_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : nil
    }

    @Test func devNullStaysADevice() throws {
        let (directory, path, digest, _) = try sampleBlob()
        defer { withExtendedLifetime(directory) {} }
        var before = stat()
        try #require(stat("/dev/null", &before) == 0)
        let result = try deck("blob", "get", path, digest, "-o", "/dev/null")
        e2eExpectSuccess(result)
        #expect(result.stdout.isEmpty)
        var after = stat()
        try #require(stat("/dev/null", &after) == 0)
        #expect(after.st_mode & S_IFMT == S_IFCHR && after.st_rdev == before.st_rdev)
        #expect(after.st_ino == before.st_ino)
    }

    @Test func aFIFOGetsTheBytesAndStaysAFIFO() throws {
        let (directory, path, digest, bytes) = try sampleBlob()
        let fifo = directory.appending("pipe")
        try #require(mkfifo(fifo, 0o644) == 0)
        let received = E2EReceived()
        let reader = Thread {
            let handle = FileHandle(forReadingAtPath: fifo)
            received.finish(with: handle?.readDataToEndOfFile() ?? Data())
        }
        reader.start()
        let result = try deck("blob", "get", path, digest, "-o", fifo)
        e2eExpectSuccess(result)
        if result.status != 0 {
            // Release the reader, still waiting in open, so the test ends.
            let writer = open(fifo, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
        }
        #expect(received.wait() == bytes)
        #expect(fileType(fifo) == S_IFIFO)
    }

    @Test func aDirectoryIsRefused() throws {
        let (directory, path, digest, _) = try sampleBlob()
        let folder = directory.appending("folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let result = try deck("blob", "get", path, digest, "-o", folder)
        e2eExpectFailure(result, status: 74, folder, "Is a directory")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
    }

    @Test func anExistingFileIsReplacedAndKeepsItsMode() throws {
        let (directory, path, digest, bytes) = try sampleBlob()
        let out = directory.appending("out.ppm")
        try Data("old".utf8).write(to: URL(fileURLWithPath: out))
        _ = chmod(out, 0o640)
        e2eExpectSuccess(try deck("blob", "get", path, digest, "-o", out))
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == bytes)
        #expect(try FileManager.default.attributesOfItem(atPath: out)[.posixPermissions] as? Int == 0o640)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [
                "Spanish.deck", "out.ppm",
            ])
    }

    @Test(.enabled(if: getuid() != 0, "root writes into read-only directories"))
    func aReadOnlyDirectoryIsReported() throws {
        let (directory, path, digest, _) = try sampleBlob()
        let locked = directory.appending("locked")
        try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false)
        _ = chmod(locked, 0o555)
        defer { _ = chmod(locked, 0o755) }
        let result = try deck("blob", "get", path, digest, "-o", locked + "/out.ppm")
        e2eExpectFailure(result, status: 66, locked + "/out.ppm", "permission denied")
        #expect(try FileManager.default.contentsOfDirectory(atPath: locked).isEmpty)
    }

    @Test func aCorruptBlobWritesNothing() throws {
        let (directory, path, digest, _) = try sampleBlob()
        let blobPath = path + "/blobs/\(digest.prefix(2))/\(digest)"
        try e2eFlipByte(blobPath, at: 1_000)
        let out = directory.appending("out.ppm")
        try Data("keep".utf8).write(to: URL(fileURLWithPath: out))
        e2eExpectFailure(try deck("blob", "get", path, digest, "-o", out), status: 65, digest, "corrupt")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data("keep".utf8))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [
                "Spanish.deck", "out.ppm",
            ])
        // To standard output: not a byte before the digest checked out.
        e2eExpectFailure(try deck("blob", "get", path, digest), status: 65, digest, "corrupt")
    }

    /// The bytes of the (inline or external) image of the card `front`.
    func image(_ path: String, front: String) throws -> Data {
        let result = try deck("query", path, "Card", "--where", "front = '\(front)'", "--json")
        e2eExpectSuccess(result)
        let card = try #require(try e2eJSONArray(result.stdout).first)
        if let text = card["image"] as? String { return try #require(Data(base64Encoded: text)) }
        let blob = try #require(card["image"] as? [String: Any])
        let digest = try #require(blob["blob"] as? String)
        return try Data(contentsOf: URL(fileURLWithPath: path + "/blobs/\(digest.prefix(2))/\(digest)"))
    }

    @Test func procFilesAreReadToTheirEnd() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        for (front, file, lastLine) in [
            ("status", "/proc/self/status", "nonvoluntary_ctxt_switches:"),
            ("smaps", "/proc/self/smaps", "VmFlags:"),
        ] {
            e2eExpectSuccess(
                try deck(
                    "insert", path, "Card", "front=\(front)", "back=b", "creationDate=2026-11-30",
                    "image=@" + file))
            let text = String(decoding: try image(path, front: front), as: UTF8.self)
            #expect(text.hasSuffix("\n"), "\(file)")
            #expect((text.dropLast().split(separator: "\n").last ?? "").hasPrefix(lastLine), "\(file)")
            if front == "smaps" { #expect(text.utf8.count > 3 * 4096) }
        }
        e2eExpectSuccess(try deck("verify", path))
    }

    @Test func directoriesFIFOsAndDevicesAreRefusedAtOnce() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let fifo = directory.appending("pipe")
        try #require(mkfifo(fifo, 0o644) == 0)
        for (source, kind) in [
            (directory.path, "a directory"), (fifo, "a FIFO"), ("/dev/zero", "a character device"),
        ] {
            let result = try deck(
                "insert", path, "Card", "front=x", "back=y", "creationDate=2026-11-30", "image=@" + source)
            e2eExpectFailure(result, status: 65, "Card.image", source, kind, "not a regular file")
        }
        #expect(try deck("query", path, "Card", "--count").stdout == "10\n")
    }

    @Test func anUnreadableFileIsReported() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        // Opens for anyone, root included, and fails on the first read.
        let result = try deck(
            "insert", path, "Card", "front=x", "back=y", "creationDate=2026-11-30", "image=@/proc/self/mem")
        e2eExpectFailure(result, status: 74, "/proc/self/mem", "read failed")
        #expect(try deck("query", path, "Card", "--count").stdout == "10\n")
    }
}

/// Bytes read by a thread, handed to the test once the thread is done.
final class E2EReceived: @unchecked Sendable {
    private let condition = NSCondition()
    private var data: Data?

    func finish(with bytes: Data) {
        condition.lock()
        data = bytes
        condition.broadcast()
        condition.unlock()
    }

    func wait() -> Data {
        condition.lock()
        defer { condition.unlock() }
        while data == nil { condition.wait() }
        return data ?? Data()
    }
}
