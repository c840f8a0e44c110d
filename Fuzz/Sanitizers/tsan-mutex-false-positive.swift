import Dispatch
import Glibc
// Shows the ThreadSanitizer false positive suppressed in tsan.supp: a contended
// Synchronization.Mutex on Linux. The count is always right; TSan still reports a race.
//   swiftc -sanitize=thread tsan-mutex-false-positive.swift -o /tmp/m && /tmp/m
import Synchronization

final class Box: Sendable {
    struct State { var n = 0 }
    let state = Mutex(State())
    func bump() {
        state.withLock {
            $0.n += 1
            usleep(50)
        }
    }
}
let box = Box()
DispatchQueue.concurrentPerform(iterations: 8) { _ in for _ in 0..<200 { box.bump() } }
print(box.state.withLock { $0.n })
