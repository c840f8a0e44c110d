import DeckKit
import DeckTestTiming
import Foundation
import Synchronization
import Testing

/// The async forms of export, import, pack, unpack, verify and gc: same results as the
/// synchronous ones, progress, and cancellation that leaves nothing behind. Public API only.
@Suite(.timed) struct LongOperationTests {
    static let schema = StoreSchema(entities: [
        StoreSchema.Entity(
            "Card",
            attributes: [
                StoreSchema.Attribute("front", .string),
                StoreSchema.Attribute(
                    "image", .data, isOptional: true, options: [.externalStorage], externalThreshold: 16),
            ])
    ])

    /// A directory with a package of `cards` cards, each with a 200 KiB external image.
    func withPackage<T>(cards: Int = 6, _ body: (URL, URL) async throws -> T) async throws -> T {
        let scratch = try ScratchDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let directory = scratch.url
        let url = directory.appendingPathComponent("Cards.deck")
        let store = try PackageStore.create(at: url, contentType: "org.example.cards", schema: Self.schema)
        try await store.write { tx in
            for n in 0..<cards {
                try tx.insert(
                    "Card",
                    [
                        "front": .string("card \(n)"),
                        "image": .data(Data(repeating: UInt8(n), count: 200_000)),
                    ])
            }
        }
        try store.close()
        return try await body(directory, url)
    }

    func names(_ directory: URL) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: directory.path))
    }

    /// Runs `operation` in a task and cancels the task from inside its first progress report:
    /// the report blocks until the cancellation has been requested, so the operation is
    /// certainly under way, and certainly cancelled before its next check.
    func cancelledAtFirstProgress<T: Sendable>(
        _ operation: @escaping @Sendable (@escaping @Sendable (Int64, Int64) -> Void) async throws -> T
    ) async -> Result<T, any Error> {
        let started = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let first = Atomic<Bool>(true)
        let task = Task {
            try await operation { _, _ in
                if first.exchange(false, ordering: .relaxed) {
                    started.signal()
                    proceed.wait()
                }
            }
        }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                started.wait()
                continuation.resume()
            }
        }
        task.cancel()
        proceed.signal()
        return await task.result
    }

    func expectCancelled<T>(_ result: Result<T, any Error>, sourceLocation: SourceLocation = #_sourceLocation)
    {
        guard case .failure(let error) = result, case DeckError.cancelled = error else {
            Issue.record("expected DeckError.cancelled, got \(result)", sourceLocation: sourceLocation)
            return
        }
        #expect((error as? DeckError)?.kind == .cancelled, sourceLocation: sourceLocation)
    }

    @Test func asyncExportIsTheSameArchiveAndReportsProgress() async throws {
        try await withPackage { directory, url in
            let sync = directory.appendingPathComponent("sync.zip")
            let async = directory.appendingPathComponent("async.zip")
            try { () throws in try DeckDocument.export(at: url, to: sync) }()  // the synchronous form
            let reports = Locked<[(Int64, Int64)]>([])
            try await DeckDocument.export(at: url, to: async) { done, total in
                reports.withLock { $0.append((done, total)) }
            }
            #expect(try Data(contentsOf: sync) == Data(contentsOf: async))
            let seen = reports.withLock { $0 }
            #expect(!seen.isEmpty)
            #expect(seen.map(\.0) == seen.map(\.0).sorted())
            #expect(seen.last.map { $0.0 == $0.1 } == true)
        }
    }

    @Test func exportCancelledMidwayLeavesNoArchiveAndNoTemporary() async throws {
        try await withPackage { directory, url in
            let before = try names(directory)
            let archive = directory.appendingPathComponent("Cards.zip")
            let result = await cancelledAtFirstProgress { progress in
                try await DeckDocument.export(at: url, to: archive, progress: progress)
            }
            expectCancelled(result)
            #expect(try names(directory) == before)
            #expect(try await DeckDocument.verify(at: url).findings.isEmpty)
        }
    }

    @Test func aTaskCancelledBeforeStartingDoesNothing() async throws {
        try await withPackage { directory, url in
            let before = try names(directory)
            let archive = directory.appendingPathComponent("Cards.zip")
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                try await DeckDocument.export(at: url, to: archive)
            }
            expectCancelled(await task.result)
            #expect(try names(directory) == before)
        }
    }

    @Test func importCancelledMidwayLeavesNothingAtTheDestination() async throws {
        try await withPackage { directory, url in
            let archive = directory.appendingPathComponent("Cards.tar")
            try await DeckDocument.export(at: url, to: archive)
            let before = try names(directory)
            let destination = directory.appendingPathComponent("Copy.deck")
            let result = await cancelledAtFirstProgress { progress in
                try await DeckDocument.importArchive(at: archive, to: destination, progress: progress)
            }
            expectCancelled(result)
            #expect(try names(directory) == before)
            // Not cancelled, the same import works.
            let copy = try await DeckDocument.importArchive(at: archive, to: destination)
            #expect(try await DeckDocument.verify(at: copy).findings.isEmpty)
        }
    }

    @Test func packAndUnpackCancelledLeaveNothing() async throws {
        try await withPackage { directory, url in
            let before = try names(directory)
            let archive = directory.appendingPathComponent("Raw.tar")
            expectCancelled(
                await cancelledAtFirstProgress { progress in
                    try await DeckDocument.pack(directory: url, to: archive, progress: progress)
                })
            #expect(try names(directory) == before)
            try await DeckDocument.pack(directory: url, to: archive)
            let unpacked = directory.appendingPathComponent("Unpacked.deck")
            expectCancelled(
                await cancelledAtFirstProgress { progress in
                    try await DeckDocument.unpack(at: archive, to: unpacked, progress: progress)
                })
            #expect(try names(directory) == before.union(["Raw.tar"]))
        }
    }

    @Test func verifyCancelledWhileHashingGivesNoVerdict() async throws {
        try await withPackage { _, url in
            let result = await cancelledAtFirstProgress { progress in
                try await DeckDocument.verify(
                    at: url, options: PackageVerifier.Options(threads: 1, progress: progress))
            }
            expectCancelled(result)
            let report = try await DeckDocument.verify(at: url)
            #expect(report.findings.isEmpty && report.blobsChecked == 6)
        }
    }

    @Test func gcCancelledBetweenFilesKeepsEveryReferencedBlob() async throws {
        try await withPackage(cards: 8) { _, url in
            let store = try PackageStore.open(at: url)
            defer { try? store.close() }
            // Half the cards go: their blobs become orphans once the counts are dropped... by a
            // save, which removes them itself. Plant orphans instead: files no row names.
            let blobs = url.appendingPathComponent("blobs")
            for n in 0..<4 {
                let bytes = Data(repeating: UInt8(100 + n), count: 1000)
                let digest = sha256Hex(bytes)
                let fan = blobs.appendingPathComponent(String(digest.prefix(2)))
                try FileManager.default.createDirectory(at: fan, withIntermediateDirectories: true)
                try bytes.write(to: fan.appendingPathComponent(digest))
            }
            let result = await cancelledAtFirstProgress { progress in
                try await store.collectGarbage(progress: progress)
            }
            expectCancelled(result)
            // Every card's image is intact; what was not removed is only untidy.
            let images = try store.read { reader in
                try reader.fetch(RecordQuery("Card")).map { try reader.data(of: $0["image"] ?? .null) }
            }
            #expect(images.count == 8 && images.allSatisfy { $0?.count == 200_000 })
            let report = try await DeckDocument.verify(at: url)
            #expect(report.findings.allSatisfy { $0.severity == .untidy }, "\(report.findings)")
            #expect(
                report.findings.count == 3, "one orphan removed before the cancellation: \(report.findings)")
            let done = try await store.collectGarbage()
            #expect(done.orphanFiles.count == 3)
        }
    }
}

/// SHA-256 hex of `data`, by the system tool (the test must not trust Deck's own hashing).
func sha256Hex(_ data: Data) -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try? process.run()
    input.fileHandleForWriting.write(data)
    try? input.fileHandleForWriting.close()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return String(text.prefix(64))
}
