import Foundation
import Synchronization

/// Makes chosen file-system calls fail, so tests can prove that every failure is reported and
/// loses nothing. Inactive (one atomic load per call) unless a test arms it.
@_spi(Testing)
public enum FaultInjection {
    /// The file-system operations that can be made to fail.
    public enum Operation: String, Sendable, CaseIterable {
        case open, read, write, fsync, rename, unlink, mkdir, stat
    }

    struct Plan {
        var operation: Operation?
        var pathContains: String?
        var skip: Int
        var errno: Int32
        var calls = 0
        var fired = false
    }

    private static let armed = Atomic<Bool>(false)
    private static let plan = Mutex<Plan?>(nil)

    /// Fails the `skip`-th later call (0 = the next one) of `operation` (any operation if nil)
    /// on a path containing `pathContains`, with `errno`.
    public static func arm(_ operation: Operation?, pathContains: String? = nil, skip: Int = 0, errno: Int32)
    {
        plan.withLock {
            $0 = Plan(operation: operation, pathContains: pathContains, skip: skip, errno: errno)
        }
        armed.store(true, ordering: .releasing)
    }

    /// Stops injecting; returns how many matching calls were seen and whether the fault fired.
    @discardableResult
    public static func disarm() -> (calls: Int, fired: Bool) {
        armed.store(false, ordering: .releasing)
        return plan.withLock { p in
            defer { p = nil }
            return (p?.calls ?? 0, p?.fired ?? false)
        }
    }

    static func shouldFail(_ operation: Operation, path: String) -> Int32? {
        guard armed.load(ordering: .acquiring) else { return nil }
        return plan.withLock { p -> Int32? in
            guard var current = p, !current.fired else { return nil }
            if let op = current.operation, op != operation { return nil }
            if let fragment = current.pathContains, !path.contains(fragment) { return nil }
            defer { p = current }
            current.calls += 1
            if current.calls > current.skip {
                current.fired = true
                return current.errno
            }
            return nil
        }
    }
}
