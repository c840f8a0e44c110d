import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Writes a byte to `path` through `FileSystem` (creating it) and says what that threw.
private func writeThroughFileSystem(_ path: String) -> (any Error)? {
    do {
        let fd = try FileSystem.open(path, O_WRONLY | O_CREAT | O_TRUNC)
        defer { FileSystem.close(fd) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1, alignment: 1)
        defer { buffer.deallocate() }
        buffer[0] = 1
        try FileSystem.write(fd, UnsafeRawBufferPointer(buffer), path: path)
        return nil
    } catch {
        return error
    }
}

/// Runs `body` on a new thread (not one of the test runner's) and waits for it.
private func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        body()
        done.signal()
    }
    done.wait()
}

/// The fault-injection harness itself: a fault is armed for one thread, reaches the worker
/// threads of that thread's job and nothing else, and nests.
@Suite("The fault-injection harness", .timed)
struct FaultInjectionTests {
    @Test func aFaultReachesOnlyTheThreadThatArmedIt() throws {
        try withTestDirectory { dir throws in
            let path = dir.appendingPathComponent("file").path
            let elsewhere = Locked<String?>(nil)
            let outcome = FaultInjection.inject(.write, pathContains: dir.lastPathComponent, errno: EIO) {
                // Another thread writes the same file while the fault is armed here: it succeeds.
                onAnotherThread {
                    let error = writeThroughFileSystem(path)
                    elsewhere.withLock { $0 = error.map { "\($0)" } }
                }
                if let error = writeThroughFileSystem(path) { throw error }
            }
            #expect(elsewhere.withLock { $0 } == nil, "the other thread saw this thread's fault")
            #expect(outcome.fired)
            #expect(outcome.calls == 1, "the other thread's call was counted")
            guard case .io(_, "write", EIO)? = outcome.error as? DeckError else {
                Issue.record("expected the injected write error, got \(String(describing: outcome.error))")
                return
            }
            // Disarmed once `inject` returns.
            #expect(writeThroughFileSystem(path) == nil)
            #expect(FaultInjection.currentPlan == nil)
        }
    }

    @Test func aWorkerRunsWithTheContextItWasGivenAndKeepsNoneAfterwards() throws {
        try withTestDirectory { dir throws in
            let path = dir.appendingPathComponent("file").path
            let seen = Locked<[String]>([])
            let outcome = FaultInjection.inject(.write, pathContains: dir.lastPathComponent, errno: ENOSPC) {
                let context = WorkerContext.capture()
                onAnotherThread {
                    let inside = context.run { writeThroughFileSystem(path) }
                    let after = writeThroughFileSystem(path)
                    seen.withLock {
                        $0 = [inside.map { "\($0)" } ?? "ok", after.map { "\($0)" } ?? "ok"]
                        if FaultInjection.currentPlan != nil { $0.append("kept the plan") }
                    }
                }
            }
            let results = seen.withLock { $0 }
            #expect(outcome.fired, "\(results)")
            #expect(results.count == 2, "\(results)")
            #expect(results.first?.contains("No space left") == true, "\(results)")
            #expect(results.last == "ok", "\(results)")
        }
    }

    @Test func anInnerFaultGivesTheOuterOneBack() throws {
        try withTestDirectory { dir throws in
            let path = dir.appendingPathComponent("file").path
            let outer = FaultInjection.inject(
                .write, pathContains: dir.lastPathComponent, skip: 1, errno: EIO
            ) {
                let inner = FaultInjection.inject(.write, pathContains: "no-such-path", errno: EACCES) {
                    if let error = writeThroughFileSystem(path) { throw error }
                }
                #expect(!inner.fired)
                #expect(inner.error == nil)
                // The outer plan counts from here: this is its first matching call, the next fails.
                #expect(writeThroughFileSystem(path) == nil)
                if let error = writeThroughFileSystem(path) { throw error }
            }
            #expect(outer.fired)
            #expect(outer.calls == 2)
            #expect(outer.error != nil)
        }
    }

    /// `verify` hashes blob files on a pool of threads; a fault armed on the verifying thread
    /// reaches whichever thread reads the file. Eight rounds, one victim each: without the
    /// propagation, a victim that a pool thread (not the caller) hashes would verify clean.
    @Test func verifyingThreadsInheritTheCallersFault() throws {
        try withTestDirectory { dir throws in
            let store = try makeTestStore(in: dir)
            var digests: [Digest] = []
            try store.write { tx in
                for seed in 0..<8 {
                    let bytes = testBytes(40_000 + seed * 1_000, seed: UInt8(seed + 1))
                    try tx.insert("Card", ["front": .string("card \(seed)"), "image": .data(bytes)])
                    digests.append(SHA256Hasher.hash(bytes))
                }
            }
            let url = store.url
            try store.close()
            for victim in digests {
                var report: VerificationReport?
                let outcome = FaultInjection.inject(.read, pathContains: victim.hexDigest, errno: EIO) {
                    report = try PackageVerifier.verify(at: url, options: .init(threads: 4))
                }
                #expect(outcome.error == nil, "\(String(describing: outcome.error))")
                #expect(outcome.fired, "no thread read blob \(victim.hexDigest)")
                let findings = report?.findings ?? []
                #expect(
                    findings.map(\.code) == ["blob-unreadable"] && findings.first?.object == victim.hexDigest,
                    "\(findings)")
            }
            #expect(try PackageVerifier.verify(at: url, options: .init(threads: 4)).findings.isEmpty)
        }
    }
}
