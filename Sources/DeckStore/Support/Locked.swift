import Foundation

/// A value guarded by a mutex, for state that crosses threads inside the store.
///
/// `@unchecked Sendable` because the value is only ever reached inside ``withLock(_:)``; values
/// that leave the closure (a reader connection taken from the pool) are owned by the one caller
/// that took them until they are put back.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
