import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// This process's writers queue for the one writer connection, first come, first served, whether
/// they block a thread or suspend a task; a cancelled task leaves the line and changes nothing.
@Suite(.timed) struct WriterQueueTests {
    nonisolated(nonsending) func withStore<T>(_ body: (PackageStore) async throws -> T) async throws -> T {
        let sandbox = try ScratchDirectory()
        let store = try PackageStore.create(
            at: sandbox.appending("Cards.deck"), contentType: SampleCards.contentType,
            schema: SampleCards.schema)
        defer { try? store.close(discardingChanges: true) }
        return try await body(store)
    }

    func titles(_ store: PackageStore) throws -> [String] {
        try store.read { reader throws in
            try reader.fetch(RecordQuery("Deck", sort: [SortKey("title")])).compactMap {
                if case .string(let title) = $0["title"] { return title }
                return nil
            }
        }
    }

    func isCancelled(_ error: DeckError) -> Bool {
        if case .cancelled = error { return true }
        return false
    }

    /// Waits until `count` writers are in line (they get there within milliseconds).
    nonisolated(nonsending) func waitForWaiters(_ store: PackageStore, _ count: Int) async throws {
        for _ in 0..<10_000 where store.writerQueue.waitingCount < count {
            try await Task.sleep(for: .milliseconds(1))
        }
        try #require(store.writerQueue.waitingCount == count)
    }

    @Test func anAsyncWriteCommitsAndReturnsItsChanges() async throws {
        try await withStore { store in
            let (id, changes) = try await store.write { tx in
                try tx.insert("Deck", ["title": .string("Spanish"), "created": .date(.now)])
            }
            #expect(changes.inserted["Deck"] == [id])
            #expect(try titles(store) == ["Spanish"])
        }
    }

    @Test func aThrowingAsyncWriteKeepsNothingAndFreesTheWriter() async throws {
        struct Stop: Error {}
        try await withStore { store in
            await #expect(throws: Stop.self) {
                try await store.write { tx in
                    try tx.insert("Deck", ["title": .string("gone"), "created": .date(.now)])
                    throw Stop()
                }
            }
            try await store.write {
                try $0.insert("Deck", ["title": .string("kept"), "created": .date(.now)])
            }
            #expect(try titles(store) == ["kept"])
        }
    }

    @Test func manyTasksWritingAtOnceAllLand() async throws {
        try await withStore { store in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        for n in 0..<25 {
                            try await store.write { tx in
                                try tx.insert(
                                    "Deck", ["title": .string("w\(worker)-\(n)"), "created": .date(.now)])
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try titles(store).count == 200)
        }
    }

    @Test func blockedThreadsGoFirstThenTasksInTheOrderTheyCame() async throws {
        try await withStore { store in
            let transaction = try store.beginTransaction()
            let order = Locked<[String]>([])
            // A task, then a thread, then a task, each queued behind the open transaction.
            let first = Task {
                try await store.write { tx in
                    order.withLock { $0.append("task 1") }
                    try tx.insert("Deck", ["title": .string("task 1"), "created": .date(.now)])
                }
            }
            try await waitForWaiters(store, 1)
            let threadDone = DispatchSemaphore(value: 0)
            Thread {
                _ = try? store.write { tx in
                    order.withLock { $0.append("thread") }
                    try tx.insert("Deck", ["title": .string("thread"), "created": .date(.now)])
                }
                threadDone.signal()
            }.start()
            try await waitForWaiters(store, 2)
            let third = Task {
                try await store.write { tx in
                    order.withLock { $0.append("task 2") }
                    try tx.insert("Deck", ["title": .string("task 2"), "created": .date(.now)])
                }
            }
            try await waitForWaiters(store, 3)
            try transaction.commit()
            _ = try await first.value
            _ = try await third.value
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    threadDone.wait()
                    continuation.resume()
                }
            }
            #expect(order.withLock { $0 } == ["thread", "task 1", "task 2"])
            #expect(try titles(store) == ["task 1", "task 2", "thread"])
        }
    }

    /// How long a test here may take before its watchdog stops the process. Generous: under the
    /// sanitizers, on two cores, long synchronous tests can hold Swift concurrency's few threads
    /// for minutes, and a test's continuation waits for one of them.
    static let watchdogSeconds = 900.0

    /// Stops the test process if `body` has not returned after `seconds`: what these tests guard
    /// against is a wait that never ends, which would otherwise hang the run.
    nonisolated(nonsending) func withWatchdog<T>(
        _ seconds: Double, _ what: String, _ body: () async throws -> T
    ) async rethrows -> T {
        let done = DispatchSemaphore(value: 0)
        Thread {
            if done.wait(timeout: .now() + seconds) == .timedOut {
                fatalError("WriterQueueTests: \(what) did not finish in \(seconds) s")
            }
        }.start()
        defer { done.signal() }
        return try await body()
    }

    /// A task waiting ahead of as many blocked writers as Swift concurrency has threads: the turn
    /// must go to the blocked writers first (the task cannot resume until one of them is done).
    @Test func aTaskAheadOfBlockedWritersOnEveryThreadDoesNotDeadlock() async throws {
        let threads = ProcessInfo.processInfo.activeProcessorCount
        try await withStore { store in
            try await withWatchdog(Self.watchdogSeconds, "a task ahead of blocked writers") {
                let transaction = try store.beginTransaction()
                let waiting = Task {
                    try await store.write { tx in
                        try tx.insert("Deck", ["title": .string("task"), "created": .date(.now)])
                    }
                }
                try await waitForWaiters(store, 1)
                let blocked = (0..<threads).map { n in
                    Task.detached {
                        try store.write { tx in
                            try tx.insert("Deck", ["title": .string("blocked \(n)"), "created": .date(.now)])
                        }
                    }
                }
                // The shared threads may all be blocked now: a thread of its own ends the transaction
                // (which may be ended from any thread, one at a time).
                struct Handoff: @unchecked Sendable { let transaction: StoreTransaction }
                let handoff = Handoff(transaction: transaction)
                // It waits for the blocked writers to be in line, or for two seconds: other tests
                // running at the same time may hold some of the shared threads, and then fewer of
                // the blocked writers have started.
                Thread {
                    let deadline = Date(timeIntervalSinceNow: 2)
                    while store.writerQueue.waitingCount < threads + 1, Date() < deadline { usleep(1000) }
                    _ = try? handoff.transaction.commit()
                }.start()
                _ = try await waiting.value
                for task in blocked { _ = try await task.value }
                #expect(try titles(store).count == threads + 1)
            }
        }
    }

    /// An actor on an executor of its own, as a model actor is.
    actor QueueActor {
        final class Executor: SerialExecutor, @unchecked Sendable {
            let queue = DispatchQueue(label: "deck.tests.queue-actor")
            func enqueue(_ job: consuming ExecutorJob) {
                let job = UnownedJob(job)
                let executor = asUnownedSerialExecutor()
                queue.async { job.runSynchronously(on: executor) }
            }
            func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }
        }
        let executor = Executor()
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

        /// A blocking write inside an async one: refused, not waited for.
        func nestedWrite(_ store: PackageStore) async throws {
            try await store.write { _ in try store.write { _ in } }
        }
    }

    nonisolated(nonsending) func expectMisuse(_ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("expected misuse, got no error")
        } catch let error as DeckError {
            guard case .misuse = error else {
                Issue.record("expected misuse, got \(error)")
                return
            }
        } catch {
            Issue.record("expected misuse, got \(error)")
        }
    }

    @Test func aWriteInsideAnAsyncWriteOnAnActorOfItsOwnIsRefused() async throws {
        try await withStore { store in
            try await withWatchdog(Self.watchdogSeconds, "a write inside an async write") {
                await expectMisuse { try await QueueActor().nestedWrite(store) }
                // The refusal left the writer free.
                try await store.write {
                    try $0.insert("Deck", ["title": .string("after"), "created": .date(.now)])
                }
            }
        }
    }

    @MainActor @Test func aWriteInsideAnAsyncWriteOnTheMainActorIsRefused() async throws {
        try await withStore { store in
            await withWatchdog(Self.watchdogSeconds, "a write inside an async write on the main actor") {
                await expectMisuse { try await store.write { _ in try store.write { _ in } } }
            }
        }
    }

    /// Other writers are not taken for the async writer's nested ones: a blocking writer on another
    /// thread waits its turn while a main-actor async write runs.
    @MainActor @Test func anAsyncWriteOnTheMainActorDoesNotRefuseOtherThreads() async throws {
        try await withStore { store in
            try await withWatchdog(Self.watchdogSeconds, "writers beside a main-actor async write") {
                let others = (0..<4).map { n in
                    Task.detached {
                        try store.write { tx in
                            try tx.insert("Deck", ["title": .string("other \(n)"), "created": .date(.now)])
                        }
                    }
                }
                for n in 0..<20 {
                    try await store.write { tx in
                        try tx.insert("Deck", ["title": .string("main \(n)"), "created": .date(.now)])
                    }
                }
                for task in others { _ = try await task.value }
                #expect(try titles(store).count == 24)
            }
        }
    }

    @Test func aTaskCancelledWhileItWaitsLeavesTheLineAndChangesNothing() async throws {
        try await withStore { store in
            let transaction = try store.beginTransaction()
            let ran = Locked(false)
            let waiting = Task {
                try await store.write { tx in
                    ran.withLock { $0 = true }
                    try tx.insert("Deck", ["title": .string("cancelled"), "created": .date(.now)])
                }
            }
            try await waitForWaiters(store, 1)
            waiting.cancel()
            let error = await #expect(throws: DeckError.self) { _ = try await waiting.value }
            #expect(error.map(isCancelled) == true)
            #expect(store.writerQueue.waitingCount == 0)
            try transaction.insert("Deck", ["title": .string("open"), "created": .date(.now)])
            try transaction.commit()
            // The line is not stuck: the next writer gets its turn at once.
            try await store.write {
                try $0.insert("Deck", ["title": .string("next"), "created": .date(.now)])
            }
            #expect(ran.withLock { $0 } == false)
            #expect(try titles(store) == ["next", "open"])
        }
    }

    @Test func aTaskCancelledBeforeItAsksDoesNotWrite() async throws {
        try await withStore { (store: PackageStore) async throws -> Void in
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await store.write { tx in
                    try tx.insert("Deck", ["title": .string("never"), "created": .date(.now)])
                }
            }
            let error = await #expect(throws: DeckError.self) { _ = try await task.value }
            #expect(error.map(isCancelled) == true)
            #expect(try titles(store).isEmpty)
        }
    }

    @Test func aTaskHoldingAnOpenTransactionCannotWaitForItself() async throws {
        try await withStore { store in
            let transaction = try store.beginTransaction()
            defer { transaction.rollback() }
            await #expect {
                try await store.write { tx in
                    try tx.insert("Deck", ["title": .string("self"), "created": .date(.now)])
                }
            } throws: { error in
                guard case .misuse = error as? DeckError else { return false }
                return true
            }
        }
    }

    @Test func writersWaitingWhenTheStoreClosesFindItClosed() async throws {
        try await withStore { store in
            let transaction = try store.beginTransaction()
            let waiting = Task {
                try await store.write { tx in
                    try tx.insert("Deck", ["title": .string("late"), "created": .date(.now)])
                }
            }
            try await waitForWaiters(store, 1)
            transaction.rollback()
            // The waiter may get its turn before the close; either way it must not hang.
            try store.close()
            do {
                _ = try await waiting.value
            } catch let error as DeckError {
                guard case .closed = error else { throw error }
            }
            await #expect(throws: DeckError.self) {
                try await store.write { tx in
                    try tx.insert("Deck", ["title": .string("after"), "created": .date(.now)])
                }
            }
        }
    }

    @Test func aReadOnlyStoreRefusesAnAsyncWrite() async throws {
        let sandbox = try ScratchDirectory()
        let url = sandbox.appending("Cards.deck")
        try PackageStore.create(
            at: url, contentType: SampleCards.contentType, schema: SampleCards.schema
        ).close()
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        let error = await #expect(throws: DeckError.self) {
            try await store.write { tx in
                try tx.insert("Deck", ["title": .string("x"), "created": .date(.now)])
            }
        }
        guard case .readOnly = error else {
            Issue.record("expected readOnly, got \(String(describing: error))")
            return
        }
    }
}
