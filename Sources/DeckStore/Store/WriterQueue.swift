import Dispatch

/// The writer's turn in one process: one holder at a time, and the writers waiting for it served
/// first come, first served, whether they block a thread (``acquire()``) or suspend a task
/// (``acquireSuspending()``).
///
/// A release hands the turn straight to the first waiter, so a writer that keeps coming back
/// cannot overtake one that has waited. A task waiting here holds no thread, and cancelling it
/// takes it out of the line.
final class WriterQueue: Sendable {
    private enum Waiter {
        /// A blocked thread, woken by its semaphore.
        case thread(DispatchSemaphore)
        /// A suspended task; `id` finds it again when it is cancelled.
        case task(id: UInt64, UnsafeContinuation<Bool, Never>)
    }

    private struct State {
        var isHeld = false
        var waiters: [Waiter] = []
        var nextTaskID: UInt64 = 0
    }

    private let state = Locked(State())

    /// Waits, blocking the calling thread, until this caller holds the turn.
    func acquire() {
        let semaphore: DispatchSemaphore? = state.withLock { state in
            if !state.isHeld {
                state.isHeld = true
                return nil
            }
            let semaphore = DispatchSemaphore(value: 0)
            state.waiters.append(.thread(semaphore))
            return semaphore
        }
        // The releaser hands the turn over before it signals: `isHeld` stays true.
        semaphore?.wait()
    }

    /// Waits, suspending the calling task, until it holds the turn. Throws
    /// ``DeckError/cancelled`` (not holding the turn) when the task is or gets cancelled first.
    func acquireSuspending() async throws(DeckError) {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextTaskID &+= 1 }
            return state.nextTaskID
        }
        let granted = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
                let now: Bool? = state.withLock { state in
                    // Checked under the lock: a cancellation handler that ran before this found
                    // nothing to take out, and the flag it follows is already set.
                    if Task.isCancelled { return false }
                    if !state.isHeld {
                        state.isHeld = true
                        return true
                    }
                    state.waiters.append(.task(id: id, continuation))
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let removed: UnsafeContinuation<Bool, Never>? = state.withLock { state in
                guard
                    let index = state.waiters.firstIndex(where: {
                        if case .task(id, _) = $0 { return true }
                        return false
                    }), case .task(_, let continuation) = state.waiters.remove(at: index)
                else { return nil }
                return continuation
            }
            removed?.resume(returning: false)
        }
        if !granted { throw DeckError.cancelled }
    }

    /// How many writers wait (for tests that need one to be in line before they go on).
    var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// Gives the turn to the first waiter, or frees it.
    func release() {
        let next: Waiter? = state.withLock { state in
            precondition(state.isHeld, "WriterQueue.release() without the turn")
            if state.waiters.isEmpty {
                state.isHeld = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        switch next {
        case .thread(let semaphore): semaphore.signal()
        case .task(_, let continuation): continuation.resume(returning: true)
        case nil: break
        }
    }
}
