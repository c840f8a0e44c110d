/// What a thread that Deck starts for part of a job inherits from the thread that asked for the
/// job: the job's ``Cancellation`` flag, when it runs from an async form, and in debug builds the
/// fault-injection plan armed on the asking thread (see ``FaultInjection``), so that a test's
/// fault reaches, say, the threads `verify` hashes blob files on.
///
/// Every place that hands file-system work to another thread captures a context on the thread
/// that asked (``capture()``) and runs the work inside it on the worker (``run(_:)``). Threads
/// that only compute (the SHA-256 queues of `BackgroundSHA256Hasher`) need none.
package struct WorkerContext: Sendable {
    let cancellation: Cancellation?
    #if DEBUG
        let faults: FaultInjection.Plan?
    #endif

    /// The calling thread's context.
    @inline(__always)
    package static func capture() -> WorkerContext {
        #if DEBUG
            WorkerContext(cancellation: Cancellation.current, faults: FaultInjection.currentPlan)
        #else
            WorkerContext(cancellation: Cancellation.current)
        #endif
    }

    /// Runs `body` on the calling thread with this context installed, then puts back the
    /// thread's own (a pool thread carries nothing over to its next job).
    @inline(__always)
    package func run<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        guard let cancellation else { return try withFaults(body) }
        return try cancellation.installed { () throws(E) in try withFaults(body) }
    }

    @inline(__always)
    private func withFaults<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        #if DEBUG
            try FaultInjection.withPlan(faults, body)
        #else
            try body()
        #endif
    }
}
