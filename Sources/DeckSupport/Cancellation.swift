import Foundation
import Synchronization

/// Cooperative cancellation for the long operations (export, import, pack, unpack, verify, gc)
/// when they run from their `async` forms.
///
/// The work runs synchronously on a thread of its own, with a flag installed in that thread's
/// local storage; the async caller's cancellation handler sets the flag. The operations check it
/// at their progress points — between chunks of a file, between blob files — where stopping
/// leaves nothing behind: what they were building is still under a temporary name, which the
/// ordinary failure path removes, and the document itself has not been touched. Worker threads an
/// operation starts check the flag it captured on its own thread.
package final class Cancellation: Sendable {
    private let flag = Atomic<Bool>(false)

    package init() {}

    package var isCancelled: Bool { flag.load(ordering: .relaxed) }

    package func cancel() { flag.store(true, ordering: .relaxed) }

    /// Throws ``DeckError/cancelled`` once cancelled.
    package func check() throws(DeckError) {
        if isCancelled { throw DeckError.cancelled }
    }

    /// The flag of the operation running on this thread, if it runs from an async form.
    package static var current: Cancellation? {
        guard let raw = pthread_getspecific(key.value) else { return nil }
        return Unmanaged<Cancellation>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Throws ``DeckError/cancelled`` when the operation running on this thread was cancelled.
    @inline(__always)
    package static func checkCurrent() throws(DeckError) {
        if let current, current.isCancelled { throw DeckError.cancelled }
    }

    private struct Key: @unchecked Sendable {
        package let value: pthread_key_t
    }

    private static let key: Key = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return Key(value: key)
    }()

    /// Runs `body` with this flag installed on the calling thread.
    package func installed<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let previous = pthread_getspecific(Self.key.value)
        pthread_setspecific(Self.key.value, Unmanaged.passUnretained(self).toOpaque())
        defer { pthread_setspecific(Self.key.value, previous) }
        return try body()
    }

    /// Runs `body` on a thread of its own (the work blocks on I/O, so it must not hold one of
    /// Swift concurrency's few threads) and resumes the caller with its result. Cancelling the
    /// calling task makes the work stop at its next check with ``DeckError/cancelled``; a task
    /// cancelled before the work starts gets that error at once.
    package static func run<T: Sendable>(_ body: @escaping @Sendable () throws(DeckError) -> T)
        async throws(DeckError)
        -> T
    {
        let cancellation = Cancellation()
        // The calling thread's context (in test builds, its fault-injection plan) goes along.
        let context = WorkerContext.capture()
        let result: Result<T, DeckError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let thread = Thread {
                    let outcome: Result<T, DeckError>
                    do {
                        try cancellation.check()
                        let value = try context.run {
                            try cancellation.installed { () throws(DeckError) in try body() }
                        }
                        outcome = .success(value)
                    } catch {
                        outcome = .failure(DeckError.wrap(error))
                    }
                    continuation.resume(returning: outcome)
                }
                thread.stackSize = 1 << 23
                thread.start()
            }
        } onCancel: {
            cancellation.cancel()
        }
        return try result.get()
    }
}
