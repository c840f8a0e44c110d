import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// File-system failures injected into saves, garbage collection and creation.
///
/// A fault is armed for the test's own thread (`FaultInjection` keeps its plan in thread-local
/// storage), so these tests run in parallel with each other and with every other test; each
/// still arms it only for paths containing its own directory's unique name. The kill-mid-save
/// test with a child process lives elsewhere.
@Suite("Crash safety (fault injection)", .timed)
struct CrashTests {
    static let savingOperations: [FaultInjection.Operation] = [.write, .fsync, .rename, .mkdir, .open]
    static let errnos: [Int32] = [ENOSPC, EIO, EACCES]

    /// The faults to try, in order: the first matching call failing with each errno in turn,
    /// then every later matching call (rotating through the errnos). The errno does not change
    /// the code path (the fault is raised before the system call), so one sweep suffices.
    private static func schedule(_ attempt: Int) -> (skip: Int, errno: Int32) {
        (max(0, attempt - (errnos.count - 1)), errnos[attempt % errnos.count])
    }

    /// Arms a fault for the `skip`-th matching call, runs `body`, disarms (even when `body`
    /// throws) and says whether the fault fired and what `body` threw.
    private func withFault(
        _ operation: FaultInjection.Operation, in fragment: String, skip: Int, errno: Int32,
        _ body: () throws -> Void
    ) -> (fired: Bool, error: (any Error)?) {
        let outcome = FaultInjection.inject(operation, pathContains: fragment, skip: skip, errno: errno, body)
        return (outcome.fired, outcome.error)
    }

    /// A saved package with a deck and two cards, one with an external image.
    private func committedPackage(in dir: URL) throws -> PackageStore {
        let package = try makeTestStore(in: dir)
        try package.write { tx in
            let deck = try tx.insert("Deck", ["title": .string("Spanish")])
            try tx.insert(
                "Card",
                ["front": .string("hola"), "image": .data(testBytes(500, seed: 1)), "deck": .reference(deck)])
            try tx.insert("Card", ["front": .string("adiós"), "deck": .reference(deck)])
        }
        return package
    }

    /// Closes the package (discarding what a failed change left in its transaction), verifies
    /// and reopens it, checking it holds exactly `expected`.
    private func checkIntact(
        _ package: PackageStore, expected: ContentSnapshot, blobFiles expectedFiles: [String],
        context: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> PackageStore {
        let url = package.url
        try package.close(discardingChanges: true)
        let report = try PackageVerifier.verify(at: url)
        #expect(report.isValid, "\(context): \(report.findings)", sourceLocation: sourceLocation)
        #expect(
            report.findings.filter { $0.code != "blob-orphan" && $0.code != "temporary" }.isEmpty,
            "\(context): \(report.findings)", sourceLocation: sourceLocation)
        let reopened = try PackageStore.open(at: url, mode: .readWrite)
        #expect(
            try contentSnapshot(reopened) == expected, "\(context): content changed",
            sourceLocation: sourceLocation)
        #expect(blobFiles(url) == expectedFiles, "\(context): blob files", sourceLocation: sourceLocation)
        #expect(temporaryFiles(url).isEmpty, "\(context): temporaries", sourceLocation: sourceLocation)
        return reopened
    }

    @Test(arguments: savingOperations)
    func aFailedInsertAndSaveKeepsTheCommittedState(operation: FaultInjection.Operation) throws {
        try withTestDirectory { dir throws in
            let fragment = dir.lastPathComponent
            var package = try committedPackage(in: dir)
            let url = package.url
            let before = try contentSnapshot(package)
            let filesBefore = blobFiles(url)
            let newImage = testBytes(700, seed: 42)
            var failures = 0

            for attempt in 0..<32 {
                let (skip, code) = Self.schedule(attempt)
                let (fired, error) = withFault(operation, in: fragment, skip: skip, errno: code) {
                    let tx = try package.beginTransaction()
                    try tx.insert("Card", ["front": .string("nuevo"), "image": .data(newImage)])
                    try tx.commit()
                }
                let context = "\(operation) failing with errno \(code) at matching call \(skip)"
                guard fired else {
                    // Past the last matching call: the change went through.
                    #expect(error == nil, "\(context): \(String(describing: error))")
                    try package.close()
                    #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
                    let reopened = try PackageStore.open(at: url, mode: .readOnly)
                    try reopened.read { reader throws in
                        #expect(try reader.count(RecordQuery("Card")) == 3)
                        let card = try reader.fetch(
                            RecordQuery(
                                "Card", where: .compare(.property("front"), .equal, .value(.string("nuevo"))))
                        ).first
                        #expect(try reader.data(of: try #require(card?["image"])) == newImage)
                    }
                    break
                }
                failures += 1
                #expect(error is DeckError, "\(context): threw \(String(describing: error))")
                if case .io(_, let op, let errno)? = error as? DeckError {
                    #expect(op == operation.rawValue)
                    #expect(errno == code)
                }
                package = try checkIntact(package, expected: before, blobFiles: filesBefore, context: context)
            }
            #expect(
                failures >= Self.errnos.count,
                "\(operation) was never called while inserting and saving an external value")
        }
    }

    @Test(arguments: errnos)
    func aFailedFileInsertKeepsTheCommittedState(errno code: Int32) throws {
        try withTestDirectory { dir throws in
            let fragment = dir.lastPathComponent
            var package = try committedPackage(in: dir)
            let url = package.url
            let before = try contentSnapshot(package)
            let filesBefore = blobFiles(url)
            // 2.5 MiB: several writes of 1 MiB chunks.
            let source = dir.appendingPathComponent("source.bin")
            try testBytes(5 * 512 * 1024, seed: 3).write(to: source)
            var failures = 0
            for skip in 0..<8 {
                let (fired, error) = withFault(.write, in: fragment, skip: skip, errno: code) {
                    let tx = try package.beginTransaction()
                    try tx.insert("Card", ["front": .string("file"), "image": .file(source)])
                    try tx.commit()
                }
                guard fired else { break }
                failures += 1
                #expect(error is DeckError)
                package = try checkIntact(
                    package, expected: before, blobFiles: filesBefore, context: "write #\(skip)")
            }
            #expect(failures == 3, "one failure per 1 MiB chunk written")
            try package.close()
        }
    }

    /// A saved package with one referenced blob, an orphan blob file, an unreferenced
    /// `deck_blob` row and a temporary.
    private func untidyPackage(in dir: URL) throws -> PackageStore {
        let package = try committedPackage(in: dir)
        _ = try package.blobs.write(testBytes(900, seed: 9))
        try package.database.run(
            "INSERT INTO deck_blob(digest, size, refs) VALUES (?, 5, 0)",
            [.text(String(repeating: "cd", count: 32))])
        let tmp = package.url.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        try Data(count: 100).write(to: tmp.appendingPathComponent("blob-left.part"))
        return package
    }

    @Test(arguments: savingOperations + [.unlink])
    func aFailedGarbageCollectionKeepsTheCommittedState(operation: FaultInjection.Operation) throws {
        try withTestDirectory { dir throws in
            let fragment = dir.lastPathComponent
            var package = try untidyPackage(in: dir)
            let url = package.url
            let before = try contentSnapshot(package)
            let referenced = try package.read { try $0.fetch(RecordQuery("Card")) }.compactMap {
                record -> String? in
                if case .blob(let reference)? = record["image"] {
                    let hex = reference.digest.hexDigest
                    return String(hex.prefix(2)) + "/" + hex
                }
                return nil
            }
            var failures = 0
            for attempt in 0..<16 {
                let (skip, code) = Self.schedule(attempt)
                let (fired, error) = withFault(operation, in: fragment, skip: skip, errno: code) {
                    _ = try package.collectGarbage()
                }
                let context = "gc with \(operation) failing with errno \(code) at matching call \(skip)"
                #expect(
                    fired == (error != nil), "\(context): fired \(fired), threw \(String(describing: error))")
                if fired {
                    failures += 1
                    #expect(error is DeckError, "\(context): threw \(String(describing: error))")
                }
                // Whatever gc managed to do, committed content is intact and nothing is corrupt.
                try package.close()
                let report = try PackageVerifier.verify(at: url)
                #expect(report.isValid, "\(context): \(report.findings)")
                package = try PackageStore.open(at: url, mode: .readWrite)
                #expect(try contentSnapshot(package) == before, "\(context): content changed")
                #expect(
                    Set(referenced).isSubset(of: Set(blobFiles(url))),
                    "\(context): a referenced blob was removed")
                guard fired else {
                    #expect(
                        blobFiles(url) == referenced.sorted(),
                        "\(context): gc finished, so the orphan is gone")
                    break
                }
            }
            if operation == .unlink {
                #expect(failures >= Self.errnos.count, "gc removes files, so an unlink failure must surface")
            }
            try package.close()
        }
    }

    @Test(arguments: savingOperations)
    func aFailedCreateLeavesNothingHalfMade(operation: FaultInjection.Operation) throws {
        try withTestDirectory { dir throws in
            let fragment = dir.lastPathComponent
            let url = dir.appendingPathComponent("new.deck")
            var failures = 0
            for skip in 0..<16 {
                let (fired, error) = withFault(operation, in: fragment, skip: skip, errno: EIO) {
                    let package = try PackageStore.create(
                        at: url, contentType: "org.test", schema: flashCardsSchema())
                    try package.close()
                }
                let context = "create with \(operation) failing at matching call \(skip)"
                let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
                    $0 != "new.deck"
                }
                #expect(leftovers.isEmpty, "\(context): \(leftovers)")
                if FileManager.default.fileExists(atPath: url.path) {
                    // Either no package, or a complete one.
                    #expect(try PackageVerifier.verify(at: url).isValid, "\(context)")
                    try FileManager.default.removeItem(at: url)
                }
                guard fired else {
                    #expect(error == nil, "\(context): \(String(describing: error))")
                    break
                }
                failures += 1
                #expect(error is DeckError, "\(context): threw \(String(describing: error))")
            }
            #expect(failures > 0)
        }
    }

    @Test func faultInjectionOnlyMatchesItsFragment() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let (fired, error) = withFault(
                .write, in: "no-such-fragment-" + UUID().uuidString, skip: 0, errno: EIO
            ) {
                try package.write { tx in
                    try tx.insert("Card", ["front": .string("x"), "image": .data(testBytes(100))])
                }
            }
            #expect(!fired)
            #expect(error == nil)
            try package.close()
        }
    }
}
