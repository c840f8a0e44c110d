// Debug builds only: a release build compiles nothing of this file.
#if DEBUG
    import Foundation

    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Musl)
        import Musl
    #endif

    /// Makes chosen file-system calls fail, so tests can prove that every failure is reported and
    /// loses nothing; and lets a test run code at chosen points of an operation. Compiled into
    /// debug builds only: a release build has neither the hooks nor the checks.
    ///
    /// A fault is armed for the calling thread only (the plan lives in thread-local storage, as
    /// swift-system's mocking driver keeps its own), so fault tests run in parallel: a call on
    /// another thread never sees it, except on the worker threads Deck starts for the armed
    /// thread's job, which inherit the plan through ``WorkerContext``. Unarmed, a check costs one
    /// `pthread_getspecific`.
    package enum FaultInjection {
        /// The file-system operations that can be made to fail.
        package typealias Operation = FileSystem.Operation

        /// One armed fault, shared by the thread that armed it and the workers it passes it to.
        package final class Plan: Sendable {
            package let operation: Operation?
            package let pathContains: String?
            package let skip: Int
            package let errno: Int32
            private let state = Locked<(calls: Int, fired: Bool)>((0, false))

            package init(operation: Operation?, pathContains: String?, skip: Int, errno: Int32) {
                self.operation = operation
                self.pathContains = pathContains
                self.skip = skip
                self.errno = errno
            }

            /// The errno to fail this call with, or nil to let it through.
            package func shouldFail(_ operation: Operation, path: String) -> Int32? {
                if let op = self.operation, op != operation { return nil }
                if let fragment = pathContains, !path.contains(fragment) { return nil }
                return state.withLock { state -> Int32? in
                    guard !state.fired else { return nil }
                    state.calls += 1
                    guard state.calls > skip else { return nil }
                    state.fired = true
                    return errno
                }
            }

            /// How many matching calls were seen, and whether the fault fired.
            package var outcome: (calls: Int, fired: Bool) { state.withLock { $0 } }
        }

        /// What one thread has armed. Only its own thread touches it.
        private final class ThreadState {
            package var plan: Plan?
            package var exportSnapshotHook: ((URL, Int) -> Void)?
        }

        /// The key of each thread's ``ThreadState`` (retained while it is set; released when the
        /// thread ends).
        private static let key: pthread_key_t = {
            var key = pthread_key_t()
            let status = pthread_key_create(&key) { pointer in
                if let pointer { Unmanaged<AnyObject>.fromOpaque(pointer).release() }
            }
            precondition(status == 0, "pthread_key_create failed: \(status)")
            return key
        }()

        private static var threadState: ThreadState? {
            pthread_getspecific(key).map { Unmanaged<ThreadState>.fromOpaque($0).takeUnretainedValue() }
        }

        private static var threadStateCreating: ThreadState {
            if let state = threadState { return state }
            let state = ThreadState()
            pthread_setspecific(key, Unmanaged.passRetained(state).toOpaque())
            return state
        }

        /// The plan armed on (or passed to) the calling thread.
        package static var currentPlan: Plan? { threadState?.plan }

        /// Runs `body` with `plan` as the calling thread's plan, then restores the one it had.
        package static func withPlan<R, E: Error>(_ plan: Plan?, _ body: () throws(E) -> R) throws(E) -> R {
            // Nothing to install, nothing to restore: a worker of an unarmed job allocates nothing.
            if plan == nil && threadState?.plan == nil { return try body() }
            let state = threadStateCreating
            let saved = state.plan
            state.plan = plan
            defer { state.plan = saved }
            return try body()
        }

        /// Fails the `skip`-th later call (0 = the next one) of `operation` (any operation if nil)
        /// on a path containing `pathContains`, with `errno` — made on the calling thread, or on a
        /// worker thread of a job it starts. Replaces the thread's previous plan.
        package static func arm(
            _ operation: Operation?, pathContains: String? = nil, skip: Int = 0, errno: Int32
        ) {
            threadStateCreating.plan = Plan(
                operation: operation, pathContains: pathContains, skip: skip, errno: errno)
        }

        /// Stops injecting on the calling thread; returns how many matching calls were seen and
        /// whether the fault fired.
        @discardableResult
        package static func disarm() -> (calls: Int, fired: Bool) {
            guard let state = threadState, let plan = state.plan else { return (0, false) }
            state.plan = nil
            return plan.outcome
        }

        /// Runs `body` with a fault armed (as ``arm(_:pathContains:skip:errno:)`` does), disarms
        /// whatever `body` does, and returns whether the fault fired, the matching calls seen, and
        /// what `body` threw. A plan the thread had before is put back afterwards.
        package static func inject(
            _ operation: Operation?, pathContains: String? = nil, skip: Int = 0, errno: Int32,
            _ body: () throws -> Void
        ) -> (fired: Bool, calls: Int, error: (any Error)?) {
            let plan = Plan(operation: operation, pathContains: pathContains, skip: skip, errno: errno)
            var thrown: (any Error)?
            withPlan(plan) {
                do { try body() } catch { thrown = error }
            }
            let (calls, fired) = plan.outcome
            return (fired, calls, thrown)
        }

        /// The errno the calling thread's plan fails this call with, or nil.
        @inline(__always)
        package static func shouldFail(_ operation: Operation, path: String) -> Int32? {
            guard let plan = currentPlan else { return nil }
            return plan.shouldFail(operation, path: path)
        }

        /// Runs `body` with `hook` called after each store snapshot that an export started on
        /// this thread takes, with the package and the attempt (1, 2, 3), on this thread and before
        /// the snapshot is archived: tests change the document there, as a concurrent writer would.
        package static func withExportSnapshotHook<R, E: Error>(
            _ hook: @escaping (URL, Int) -> Void, _ body: () throws(E) -> R
        ) throws(E) -> R {
            let state = threadStateCreating
            let saved = state.exportSnapshotHook
            state.exportSnapshotHook = hook
            defer { state.exportSnapshotHook = saved }
            return try body()
        }

        /// Called by export after each snapshot it takes.
        package static func exportSnapshotTaken(_ package: URL, attempt: Int) {
            threadState?.exportSnapshotHook?(package, attempt)
        }
    }
#endif
