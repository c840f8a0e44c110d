import CDeckSystem
import Synchronization

/// A mutable per-thread reference: the current thread's object of a slot, read in about a
/// nanosecond (one C11 `_Thread_local` load; Swift has no mutable thread-local storage of its
/// own, `@TaskLocal` cannot be set outside a scope, and `Thread.current.threadDictionary` costs
/// about 170 ns).
///
/// The slot holds its object strongly; what a thread leaves in its slots is released when the
/// thread ends. The model layer keeps its per-thread state here (the init frame, the last
/// metadata looked up, Observation's probe), so that the layer itself uses no raw pointers and
/// no platform thread API. There are at most `DECK_THREAD_SLOT_COUNT` (8) slots in a process.
package struct ThreadSlot<Object: AnyObject>: Sendable {
    private let index: Int32

    /// A new slot, empty in every thread. Make each slot once (a `static let`).
    package init() {
        _ = ThreadSlotCounter.arrangeRelease
        let index = ThreadSlotCounter.made.add(1, ordering: .relaxed).oldValue
        precondition(
            index < Int32(DECK_THREAD_SLOT_COUNT), "more than \(DECK_THREAD_SLOT_COUNT) thread slots")
        self.index = index
    }

    /// The current thread's object, or nil.
    @inline(__always)
    package var current: Object? {
        guard let pointer = deck_thread_slot_get(index) else { return nil }
        return Unmanaged<Object>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Calls `body` with the current thread's object, not retained for the call (the slot holds
    /// it; `body` must not replace it).
    @inline(__always)
    package func withCurrent<Result>(_ body: (Object?) -> Result) -> Result {
        guard let pointer = deck_thread_slot_get(index) else { return body(nil) }
        return Unmanaged<Object>.fromOpaque(pointer)._withUnsafeGuaranteedRef { body($0) }
    }

    /// Whether the current thread's slot holds an object (no reference counting).
    @inline(__always)
    package var isSet: Bool { deck_thread_slot_get(index) != nil }

    /// Replaces the current thread's object (releasing the one it held).
    package func set(_ object: Object?) {
        let old = deck_thread_slot_get(index)
        deck_thread_slot_set(index, object.map { Unmanaged.passRetained($0).toOpaque() })
        if let old { Unmanaged<AnyObject>.fromOpaque(old).release() }
    }
}

/// The slots made so far, and the release of a thread's objects when it ends.
private enum ThreadSlotCounter {
    static let made = Atomic<Int32>(0)

    static let arrangeRelease: Void = {
        deck_thread_slot_set_release { value in
            guard let value else { return }
            Unmanaged<AnyObject>.fromOpaque(value).release()
        }
    }()
}
