import Foundation

/// A value guarded by a mutex, for state that crosses threads (in the store, the CLI and tests).
///
/// Used instead of `Synchronization.Mutex`: on Linux that one locks with futexes inside a library
/// ThreadSanitizer does not instrument, so the sanitizer reports races between the critical
/// sections it guards. `NSLock` is a pthread mutex, which the sanitizer intercepts.
/// `Scripts/lint` refuses `Mutex`.
///
/// `@unchecked Sendable` because the value is only ever reached inside ``withLock(_:)``; values
/// that leave the closure (a reader connection taken from the pool) are owned by the one caller
/// that took them until they are put back.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result)
        throws(Failure)
        -> Result
    {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
