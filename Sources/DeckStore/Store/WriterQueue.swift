import Dispatch

/// The writer's turn in one process: one holder at a time, and the writers waiting for it, whether
/// they block a thread (``acquire()``) or suspend a task (``acquireSuspending()``).
///
/// The turn is handed only to a writer that is sure to be running to take it: a blocked thread.
/// A task is not given the turn while it is suspended, for the thread it needs to resume on may be
/// one of those blocked behind it (Swift concurrency has few), which would wait forever; a release
/// with only tasks waiting frees the turn and wakes the first of them, which takes it when it runs
/// if it is still free and otherwise goes back to the head of the line. So blocked threads go
/// before tasks, threads among themselves and tasks among themselves in the order they came, and a
/// task waiting here holds no thread. Cancelling a waiting task takes it out of the line; a task
/// cancelled by the time it would take the turn does not take it.
final class WriterQueue: Sendable {
    /// How a suspended task is resumed.
    private enum Wake {
        /// It holds the turn now (it found the turn free while running).
        case granted
        /// The turn was freed: try to take it.
        case retry
        /// The task was cancelled: it does not hold the turn.
        case cancelled
    }

    private struct TaskWaiter {
        let id: UInt64
        let continuation: UnsafeContinuation<Wake, Never>
    }

    private struct State {
        var isHeld = false
        /// Blocked threads, first come first.
        var threads: [DispatchSemaphore] = []
        /// Suspended tasks, first come first.
        var tasks: [TaskWaiter] = []
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
            state.threads.append(semaphore)
            return semaphore
        }
        // The releaser hands the turn over before it signals: `isHeld` stays true.
        semaphore?.wait()
    }

    /// Waits, suspending the calling task, until it holds the turn. Throws
    /// ``DeckError/cancelled`` (not holding the turn) when the task is or gets cancelled first.
    /// Runs on the caller's executor, so the caller holds the turn on the thread it goes on with.
    nonisolated(nonsending) func acquireSuspending() async throws(DeckError) {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextTaskID &+= 1 }
            return state.nextTaskID
        }
        var atHead = false
        while true {
            let wake = await withTaskCancellationHandler {
                await withUnsafeContinuation { (continuation: UnsafeContinuation<Wake, Never>) in
                    let now: Wake? = state.withLock { state in
                        // Checked under the lock: a cancellation handler that ran before this found
                        // nothing to take out, and the flag it follows is already set.
                        if Task.isCancelled { return .cancelled }
                        if !state.isHeld {
                            state.isHeld = true
                            return .granted
                        }
                        let waiter = TaskWaiter(id: id, continuation: continuation)
                        if atHead { state.tasks.insert(waiter, at: 0) } else { state.tasks.append(waiter) }
                        return nil
                    }
                    if let now { continuation.resume(returning: now) }
                }
            } onCancel: {
                let removed: UnsafeContinuation<Wake, Never>? = state.withLock { state in
                    guard let index = state.tasks.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.tasks.remove(at: index).continuation
                }
                removed?.resume(returning: .cancelled)
            }
            switch wake {
            case .granted: return
            case .cancelled: throw DeckError.cancelled
            case .retry: atHead = true
            }
        }
    }

    /// How many writers wait (for tests that need one to be in line before they go on).
    var waitingCount: Int { state.withLock { $0.threads.count + $0.tasks.count } }

    /// Gives the turn to the first blocked thread; or, with only tasks waiting, frees it and wakes
    /// the first task to take it.
    func release() {
        enum Next {
            case thread(DispatchSemaphore)
            case task(UnsafeContinuation<Wake, Never>)
        }
        let next: Next? = state.withLock { state in
            precondition(state.isHeld, "WriterQueue.release() without the turn")
            if !state.threads.isEmpty { return .thread(state.threads.removeFirst()) }
            state.isHeld = false
            if !state.tasks.isEmpty { return .task(state.tasks.removeFirst().continuation) }
            return nil
        }
        switch next {
        case .thread(let semaphore): semaphore.signal()
        case .task(let continuation): continuation.resume(returning: .retry)
        case nil: break
        }
    }
}
