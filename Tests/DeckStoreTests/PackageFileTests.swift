import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` on its own thread and records an issue if it has not returned after two
/// minutes: an open that blocks on a FIFO would otherwise stop the whole test run. (A guard
/// against hanging, not a timing assertion: the body normally returns at once.)
func withoutHanging(
    _ what: String, unblocking fifo: String? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable () -> Void
) {
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        body()
        done.signal()
    }
    if done.wait(timeout: .now() + 120) == .timedOut {
        Issue.record("\(what) blocked", sourceLocation: sourceLocation)
        // Opening the other end releases a reader stuck in open(2).
        if let fifo { _ = Glibc.open(fifo, O_WRONLY | O_NONBLOCK) }
    }
}

/// What an operation on a package threw, as text, or "ok".
func outcome(_ body: () throws -> Void) -> String {
    do {
        try body()
        return "ok"
    } catch {
        return "\(error)"
    }
}

/// Every open of a package file refuses what is not a regular file, without blocking, naming
/// the path and what it is (issue 8; spec sections 2.2, 8.4, 15).
@Suite("Store trust: non-regular files", .timed)
struct NonRegularFileTests {
    func package(in dir: URL) throws -> URL {
        let package = try makeTestStore(in: dir)
        try package.write { tx in
            try tx.insert("Card", ["front": .string("a"), "image": .data(testBytes(100))])
        }
        try package.close()
        return package.url
    }

    func replaceWithFIFO(_ path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        try #require(mkfifo(path, 0o644) == 0, "mkfifo: \(String(cString: strerror(errno)))")
    }

    @Test(arguments: ["lock", "store.sqlite", "store.sqlite-wal", "store.sqlite-shm", "store.sqlite-journal"])
    func aFIFOInPlaceOfAStoreFileOrTheLockIsRefused(name: String) throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            let fifo = url.appendingPathComponent(name).path
            try replaceWithFIFO(fifo)
            let results = Locked<[String]>([])
            withoutHanging("opening a package whose \(name) is a FIFO", unblocking: fifo) {
                for mode in [PackageStore.Mode.readWrite, .readOnly] {
                    let text = outcome { try PackageStore.open(at: url, mode: mode).close() }
                    results.withLock { $0.append(text) }
                }
                let text = outcome { _ = try PackageVerifier.verify(at: url) }
                results.withLock { $0.append(text) }
            }
            for text in results.withLock({ $0 }) {
                #expect(text.contains(fifo) && text.contains("FIFO"), "\(text)")
            }
            #expect(results.withLock { $0.count } == 3)
        }
    }

    @Test func aFIFOInPlaceOfTheManifestIsNotAPackage() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            let fifo = url.appendingPathComponent("manifest.json").path
            try replaceWithFIFO(fifo)
            let result = Locked<DeckError?>(nil)
            withoutHanging("opening a package whose manifest is a FIFO", unblocking: fifo) {
                do {
                    _ = try PackageStore.open(at: url, mode: .readOnly)
                } catch let error as DeckError {
                    result.withLock { $0 = error }
                } catch {}
            }
            guard case .notAPackage(_, let reason) = result.withLock({ $0 }) else {
                Issue.record("expected notAPackage, got \(String(describing: result.withLock { $0 }))")
                return
            }
            #expect(reason.contains("FIFO"), "\(reason)")
        }
    }

    @Test func aFIFOInPlaceOfABlobFileIsUnreadableNotAHang() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            let fifo = url.appendingPathComponent("blobs/" + blobName(testBytes(100))).path
            try replaceWithFIFO(fifo)
            let read = Locked<String>("")
            let report = Locked<VerificationReport?>(nil)
            withoutHanging("reading a blob that is a FIFO", unblocking: fifo) {
                read.withLock { text in
                    text = outcome {
                        let package = try PackageStore.open(at: url, mode: .readOnly)
                        defer { try? package.close() }
                        try package.read { reader throws in
                            let value = try #require(reader.fetch(RecordQuery("Card")).first?["image"])
                            _ = try reader.data(of: value)
                        }
                    }
                }
                report.withLock { $0 = try? PackageVerifier.verify(at: url) }
            }
            #expect(read.withLock { $0 }.contains("FIFO"), "\(read.withLock { $0 })")
            let findings = try #require(report.withLock { $0 }).findings
            #expect(findings.map(\.code) == ["blob-unreadable"], "\(findings)")
            #expect(findings.first?.message.contains("FIFO") == true)
        }
    }

    @Test func writingTheBytesAgainReplacesAFIFOInPlaceOfABlob() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            let fifo = url.appendingPathComponent("blobs/" + blobName(testBytes(100))).path
            try replaceWithFIFO(fifo)
            withoutHanging("writing a blob whose file is a FIFO", unblocking: fifo) {
                _ = outcome {
                    let writer = try PackageStore.open(at: url)
                    try writer.write { tx in
                        try tx.insert("Card", ["front": .string("b"), "image": .data(testBytes(100))])
                    }
                    try writer.close()
                }
            }
            var st = stat()
            #expect(lstat(fifo, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG)
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }

    @Test(arguments: ["store.sqlite-wal", "store.sqlite-shm", "store.sqlite-journal"])
    func aLinkedStoreCompanionIsRefusedByName(name: String) throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            let target = dir.appendingPathComponent("elsewhere").path
            #expect(FileManager.default.createFile(atPath: target, contents: Data()))
            try FileManager.default.createSymbolicLink(
                atPath: url.appendingPathComponent(name).path, withDestinationPath: target)
            for mode in [PackageStore.Mode.readWrite, .readOnly] {
                let error = expectDeckError { _ = try PackageStore.open(at: url, mode: mode) }
                guard case .notAPackage(_, let reason) = error else {
                    Issue.record("expected notAPackage, got \(String(describing: error))")
                    continue
                }
                #expect(reason.contains("'\(name)' is a symbolic link"), "\(reason)")
            }
            #expect(throws: DeckError.self) { try PackageVerifier.verify(at: url) }
        }
    }

    @Test(arguments: ["tmp", "blobs"])
    func aFileInPlaceOfADirectoryIsRefused(name: String) throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            let path = url.appendingPathComponent(name).path
            try? FileManager.default.removeItem(atPath: path)
            #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
            let error = expectDeckError { _ = try PackageStore.open(at: url, mode: .readWrite) }
            guard case .corrupt(let named, let reason) = error else {
                Issue.record("expected corrupt, got \(String(describing: error))")
                return
            }
            #expect(named == path)
            #expect(reason.contains("not a directory"), "\(reason)")
        }
    }

    @Test func openRegularRefusesDirectoriesAndLinks() throws {
        try withTestDirectory { dir throws in
            for path in [dir.path, dir.appendingPathComponent("link").path] {
                if path != dir.path {
                    try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: dir.path)
                }
                let error = expectDeckError { _ = try FileSystem.openRegular(path, O_RDONLY) }
                guard case .corrupt(let named, let reason) = error else {
                    Issue.record("expected corrupt, got \(String(describing: error))")
                    continue
                }
                #expect(named == path)
                #expect(reason.contains("directory") || reason.contains("symbolic link"), "\(reason)")
            }
        }
    }
}

/// The manifest is strict JSON, checked in one order; deck_meta's keys have their types
/// (issue 8; spec sections 2.2, 3, 4.2).
@Suite("Store trust: manifest and deck_meta", .timed)
struct ManifestAndMetadataTests {
    func package(in dir: URL, manifest: [UInt8]? = nil) throws -> URL {
        let package = try makeTestStore(in: dir)
        try package.close()
        if let manifest { try Data(manifest).write(to: package.url.appendingPathComponent("manifest.json")) }
        return package.url
    }

    static let valid =
        #"{"contentType":"org.deck.test.flashcards","format":"org.deck.package","formatVersion":1,"minimumReaderVersion":1}"#

    enum Expected: Sendable {
        case opens
        case notAPackage(String)
        case corrupt(String)
        case tooNew
    }

    static let cases: [(String, [UInt8], Expected)] = [
        ("the canonical form", Array(valid.utf8), .opens),
        (
            "generator null", Array(valid.replacingOccurrences(of: "}", with: #","generator":null}"#).utf8),
            .opens
        ),
        (
            "unknown members of any type",
            Array(valid.replacingOccurrences(of: "}", with: #","x":{"y":[1e400,null]}}"#).utf8),
            .opens
        ),
        ("a byte-order mark", [0xEF, 0xBB, 0xBF] + Array(valid.utf8), .notAPackage("byte-order mark")),
        (
            "a duplicate member",
            Array(valid.replacingOccurrences(of: "}", with: #","formatVersion":1}"#).utf8),
            .notAPackage("appears twice")
        ),
        (
            "a duplicate spelled with an escape",
            Array(valid.replacingOccurrences(of: "}", with: #","form\u0061t":"org.deck.package"}"#).utf8),
            .notAPackage("appears twice")
        ),
        (
            "a duplicate in an unknown member",
            Array(valid.replacingOccurrences(of: "}", with: #","x":{"a":1,"a":2}}"#).utf8),
            .notAPackage("appears twice")
        ),
        (
            "formatVersion written 1.0",
            Array(valid.replacingOccurrences(of: #""formatVersion":1"#, with: #""formatVersion":1.0"#).utf8),
            .notAPackage("integer")
        ),
        (
            "formatVersion as a string",
            Array(valid.replacingOccurrences(of: #""formatVersion":1"#, with: #""formatVersion":"1""#).utf8),
            .notAPackage("must be an integer")
        ),
        (
            "formatVersion beyond 64 bits",
            Array(
                valid.replacingOccurrences(
                    of: #""formatVersion":1"#, with: #""formatVersion":99999999999999999999"#
                ).utf8),
            .notAPackage("64 bits")
        ),
        (
            "generator as a number",
            Array(valid.replacingOccurrences(of: "}", with: #","generator":5}"#).utf8),
            .notAPackage("'generator' must be a string")
        ),
        (
            "a missing member",
            Array(#"{"format":"org.deck.package","formatVersion":1,"minimumReaderVersion":1}"#.utf8),
            .notAPackage("contentType")
        ),
        (
            "invalid UTF-8", Array(valid.utf8).map { $0 == UInt8(ascii: "x") ? 0xFF : $0 } + [0xFF],
            .notAPackage("UTF-8")
        ),
        (
            "a lone surrogate", Array(valid.replacingOccurrences(of: "}", with: #","x":"\ud800"}"#).utf8),
            .notAPackage("surrogate")
        ),
        (
            "65 levels of nesting",
            Array(
                valid.replacingOccurrences(
                    of: "}",
                    with: #","x":"# + String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
                        + "}"
                ).utf8),
            .notAPackage("nested")
        ),
        (
            "a trailing comma", Array(valid.replacingOccurrences(of: "}", with: ",}").utf8),
            .notAPackage("member name")
        ),
        // The order of section 3.3: format, then the versions, then support, then contentType.
        (
            "another format and bad versions",
            Array(
                #"{"contentType":"","format":"org.other","formatVersion":0,"minimumReaderVersion":5}"#.utf8),
            .notAPackage("format")
        ),
        (
            "bad versions and a bad contentType",
            Array(
                #"{"contentType":"a b","format":"org.deck.package","formatVersion":1,"minimumReaderVersion":2}"#
                    .utf8),
            .corrupt("inconsistent")
        ),
        (
            "too new and a bad contentType",
            Array(
                #"{"contentType":"a b","format":"org.deck.package","formatVersion":7,"minimumReaderVersion":7}"#
                    .utf8),
            .tooNew
        ),
    ]

    @Test func manifestsAreReadStrictlyAndInOrder() throws {
        for (label, bytes, expected) in Self.cases {
            try withTestDirectory { dir throws in
                let url = try package(in: dir, manifest: bytes)
                let result = Result { () throws(DeckError) in
                    try PackageStore.open(at: url, mode: .readOnly)
                }
                switch (expected, result) {
                case (.opens, .success(let package)):
                    try package.close()
                    #expect(try PackageVerifier.verify(at: url).isValid, "\(label)")
                case (.notAPackage(let fragment), .failure(.notAPackage(_, let reason))):
                    #expect(reason.contains(fragment), "\(label): \(reason)")
                case (.corrupt(let fragment), .failure(.corrupt(_, let reason))):
                    #expect(reason.contains(fragment), "\(label): \(reason)")
                case (.tooNew, .failure(.tooNew)):
                    break
                default:
                    Issue.record("\(label): expected \(expected), got \(result)")
                }
            }
        }
    }

    /// Sets a deck_meta key (nil deletes it) in a closed package.
    func setMeta(_ url: URL, _ key: String, _ value: SQLValue?) throws {
        let db = try rawStore(url)
        defer { db.close() }
        if let value {
            try db.run(
                "INSERT INTO deck_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [.text(key), value])
        } else {
            try db.run("DELETE FROM deck_meta WHERE key = ?", [.text(key)])
        }
    }

    @Test(arguments: [
        ("format_version", SQLValue?.none, "holds no 'format_version'"),
        ("format_version", .text("1"), "not an integer"),
        ("format_version", .integer(1), "user_version is \(PackageLayout.formatVersion)"),
        ("schema_version", nil, "holds no 'schema_version'"),
        ("schema_version", .integer(1), "not text"),
        ("schema_version", .text("9.9"), "'9.9'"),
        ("content_type", .integer(5), "not text"),
        ("schema", .blob(Data("{}".utf8)), "not text"),
    ])
    func aReaderRefusesAWrongStructuralMetadataKey(key: String, value: SQLValue?, fragment: String) throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try setMeta(url, key, value)
            for mode in [PackageStore.Mode.readOnly, .readWrite] {
                let error = expectDeckError { _ = try PackageStore.open(at: url, mode: mode) }
                guard case .corrupt(_, let reason) = error else {
                    Issue.record("expected corrupt, got \(String(describing: error))")
                    continue
                }
                #expect(reason.contains(fragment), "\(reason)")
            }
            let report = try PackageVerifier.verify(at: url)
            #expect(!report.isValid)
            let codes: [String: String] = [
                "format_version": "store-metadata", "schema_version": "meta-invalid",
                "content_type": "content-type-mismatch", "schema": "store-metadata",
            ]
            #expect(report.codes.contains(codes[key] ?? "?"), "\(report.findings)")
        }
    }

    @Test(arguments: [
        ("created", SQLValue?.none), ("created", .integer(1_700_000_000)), ("created", .text("yesterday")),
        ("modified", .text("2026-02-30T10:00:00.000Z")), ("modified", .text("2026-11-30T10:00:00Z")),
        ("document_id", nil), ("document_id", .text("6F1C2A4E-0D8B-4B53-9A3E-2C1D0E9F8A7B")),
        ("document_id", .blob(Data(count: 16))),
    ])
    func aWrongTimeStampIsReportedButReadersOpen(key: String, value: SQLValue?) throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try setMeta(url, key, value)
            try PackageStore.open(at: url, mode: .readOnly).close()
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes == ["meta-invalid"], "\(report.findings)")
            #expect(report.finding("meta-invalid")?.message.contains("'\(key)'") == true)
            if key == "modified" {
                // The next save sets it, even when the row is missing or malformed.
                let writer = try PackageStore.open(at: url)
                try writer.write { tx in
                    try tx.insert("Tag", ["name": .string("t")])
                }
                try writer.close()
                #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
            }
        }
    }

    @Test func timeStampsAreCheckedExactly() {
        #expect(StoreMetadata.isTimestamp("2026-11-30T10:31:37.452Z"))
        #expect(StoreMetadata.isTimestamp("2024-02-29T23:59:59.999Z"))
        #expect(!StoreMetadata.isTimestamp("2023-02-29T00:00:00.000Z"))
        #expect(!StoreMetadata.isTimestamp("1900-02-29T00:00:00.000Z"))
        #expect(!StoreMetadata.isTimestamp("2026-11-30T24:00:00.000Z"))
        #expect(!StoreMetadata.isTimestamp("2026-11-30t10:31:37.452z"))
        #expect(!StoreMetadata.isTimestamp("2026-11-30T10:31:37.45Z"))
        #expect(!StoreMetadata.isTimestamp("2026-13-01T00:00:00.000Z"))
    }
}

/// A reader never creates, deletes or rewrites a file of the package, whatever state the
/// write-ahead log is in (issue 8; spec section 11.2).
@Suite("Store trust: readers write nothing", .timed)
struct ReaderWritesNothingTests {
    /// Names, sizes and, for the store and its log, contents.
    func state(_ url: URL) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: url.path) {
            let path = url.appendingPathComponent(name)
            result[name] =
                name == "store.sqlite" || name == "store.sqlite-wal" ? try Data(contentsOf: path) : Data()
        }
        return result
    }

    @Test func aWriterCreatesTheLogFilesBeforeItSwitchesToWAL() throws {
        try withTestDirectory { dir throws in
            let writer = try makeTestStore(in: dir)
            let names = try FileManager.default.contentsOfDirectory(atPath: writer.url.path)
            #expect(names.contains("store.sqlite-wal") && names.contains("store.sqlite-shm"), "\(names)")
            try writer.close()
            let after = try FileManager.default.contentsOfDirectory(atPath: writer.url.path)
            #expect(!after.contains("store.sqlite-wal") && !after.contains("store.sqlite-shm"), "\(after)")
        }
    }

    @Test func aReaderBesideALiveWriterCreatesNoFile() throws {
        try withTestDirectory { dir throws in
            let writer = try makeTestStore(in: dir)
            try writer.write { tx in
                try tx.insert("Tag", ["name": .string("one")])
            }
            let before = Set(try FileManager.default.contentsOfDirectory(atPath: writer.url.path))
            let reader = try PackageStore.open(at: writer.url, mode: .readOnly)
            #expect(try reader.read { try $0.count(RecordQuery("Tag")) } == 1)
            try reader.close()
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: writer.url.path)) == before)
            try writer.close()
        }
    }

    /// The files a writer killed mid-work leaves: the store in WAL mode, a log holding a commit.
    func crashedPackage(in dir: URL, keep: [String] = ["store.sqlite-wal", "store.sqlite-shm"]) throws -> URL
    {
        let live = dir.appendingPathComponent("Live.deck")
        let writer = try PackageStore.create(at: live, contentType: "org.test", schema: flashCardsSchema())
        try writer.write { tx in
            try tx.insert("Tag", ["name": .string("only in the log")])
        }
        let crashed = dir.appendingPathComponent("Crashed.deck")
        try FileManager.default.createDirectory(at: crashed, withIntermediateDirectories: false)
        for name in ["manifest.json", "store.sqlite", "blobs"] + keep {
            try FileManager.default.copyItem(
                at: live.appendingPathComponent(name), to: crashed.appendingPathComponent(name))
        }
        try writer.close()
        return crashed
    }

    @Test func aReaderOfADeadWritersLogOpensNoConnectionForWriting() throws {
        try withTestDirectory { dir throws in
            let url = try crashedPackage(in: dir)
            // A zeroed index: SQLite must rebuild it (in -shm, or privately in memory).
            try Data(count: 32_768).write(to: url.appendingPathComponent("store.sqlite-shm"))
            let before = try state(url)
            let reader = try PackageStore.open(at: url, mode: .readOnly)
            #expect(try reader.read { try $0.count(RecordQuery("Tag")) } == 1)
            try reader.close()
            #expect(try PackageVerifier.verify(at: url).isValid)
            #expect(try state(url) == before, "a reader created, removed or rewrote a file")
        }
    }

    /// SQLite's `readonly_shm=1` (the fallback of section 11.2, and what a reader that must
    /// write nothing at all uses) reads a dead writer's log without touching any byte, also from a
    /// path that needs escaping in a URI.
    @Test func aPrivateIndexWritesNothingAtAll() throws {
        try withTestDirectory { dir throws in
            let awkward = dir.appendingPathComponent("a?b#c%d e")
            try FileManager.default.createDirectory(at: awkward, withIntermediateDirectories: false)
            let url = try crashedPackage(in: awkward)
            try Data(count: 32_768).write(to: url.appendingPathComponent("store.sqlite-shm"))
            func everything() throws -> [String: Data] {
                var result: [String: Data] = [:]
                for name in try FileManager.default.contentsOfDirectory(atPath: url.path)
                where name.hasPrefix("store.sqlite") {
                    result[name] = try Data(contentsOf: url.appendingPathComponent(name))
                }
                return result
            }
            let before = try everything()
            let db = try Database(
                path: url.appendingPathComponent("store.sqlite").path, mode: .readOnly,
                uriParameters: [("readonly_shm", "1")])
            #expect(try db.scalar("SELECT count(*) FROM \"Tag\"")?.int64 == 1)
            db.close()
            #expect(try everything() == before)
        }
    }

    @Test(arguments: [["store.sqlite-wal"], [], ["store.sqlite-shm"]])
    func aLogWithoutItsIndexIsRefusedWithoutCreatingFiles(keep: [String]) throws {
        try withTestDirectory { dir throws in
            let url = try crashedPackage(in: dir, keep: keep)
            let before = try state(url)
            let error = expectDeckError { _ = try PackageStore.open(at: url, mode: .readOnly) }
            guard case .corrupt(_, let reason) = error else {
                Issue.record("expected corrupt, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("open the package for writing once"), "\(reason)")
            // Not corruption: a writer's open makes the log files again (spec 13, needs recovery).
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes == ["store-needs-recovery"], "\(report.findings)")
            #expect(report.needsRecovery && !report.isValid)
            #expect(try state(url) == before, "a reader created a file")
            // A writer recovers what it can and leaves a closed package.
            try PackageStore.open(at: url).close()
            #expect(try PackageVerifier.verify(at: url).isValid)
        }
    }

    /// A writer closing passes through the same state: SQLite deletes the checkpointed log, then
    /// rewrites the header, while the writer still holds the package's lock. A reader (and the
    /// verifier) that finds the state while the lock is held waits for the writer, and reads.
    @Test func aWriterSwitchingBackToRollbackModeIsWaitedFor() throws {
        try withTestDirectory { dir throws in
            let url = try crashedPackage(in: dir, keep: [])
            let store = url.appendingPathComponent("store.sqlite")
            let lock = try WriterLock.acquire(packagePath: url.path)
            // Still the lock holder's state after a short wait: reported.
            #expect(
                try PackageDirectory.missingLogFileAtRest(store.path, packagePath: url.path, timeout: 0.05)
                    == "store.sqlite-wal")
            let opened = Locked<String?>(nil)
            let finished = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                do {
                    try PackageStore.open(at: url, mode: .readOnly).close()
                    opened.withLock { $0 = "opened" }
                } catch {
                    opened.withLock { $0 = "\(error)" }
                }
                finished.signal()
            }
            usleep(200_000)
            #expect(opened.withLock { $0 } == nil, "the reader did not wait for the writer")
            // The writer's last step: the header says rollback mode (bytes 18 and 19); then the
            // lock goes.
            let handle = try FileHandle(forUpdating: store)
            try handle.seek(toOffset: 18)
            try handle.write(contentsOf: Data([1, 1]))
            try handle.close()
            lock.release()
            finished.wait()
            #expect(opened.withLock { $0 } == "opened")
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }

    /// A store shorter than SQLite's 100-byte header is truncated: corrupt for readers, writers and
    /// the verifier alike (spec 2.2, step 8), not "not a package" (SQLite reads an empty file as
    /// an empty database, whose application_id is 0), and nothing is written.
    @Test(arguments: [0, 50, 99])
    func aStoreShorterThanTheHeaderIsCorrupt(length: Int) throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            try package.close()
            let store = package.url.appendingPathComponent("store.sqlite")
            try Data(try Data(contentsOf: store).prefix(length)).write(to: store)
            for mode in [PackageStore.Mode.readOnly, .readWrite] {
                let error = expectDeckError { _ = try PackageStore.open(at: package.url, mode: mode) }
                guard case .corrupt(_, let reason) = error else {
                    Issue.record("expected corrupt, got \(String(describing: error))")
                    return
                }
                #expect(reason.contains("shorter than a SQLite database's 100-byte header"), "\(reason)")
            }
            #expect(try Data(contentsOf: store).count == length)
            let report = try PackageVerifier.verify(at: package.url)
            #expect(report.codes == ["store-unreadable"], "\(report.findings)")
        }
    }
}
