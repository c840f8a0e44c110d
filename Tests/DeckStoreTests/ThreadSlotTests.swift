import DeckStore
import DeckTestTiming
import Foundation
import Testing

/// The per-thread slot the model layer keeps its thread's state in (issue 22): each thread sees
/// its own object, and what a thread leaves in a slot is released when the thread ends.
@Suite("ThreadSlot", .timed)
struct ThreadSlotTests {
    final class Token: Sendable {
        let name: String
        /// Signalled when the token goes away.
        let gone: DispatchSemaphore?
        init(_ name: String, gone: DispatchSemaphore? = nil) {
            self.name = name
            self.gone = gone
        }
        deinit { gone?.signal() }
    }

    /// Slots are few (8 in a process): the tests share two.
    static let slot = ThreadSlot<Token>()
    static let other = ThreadSlot<Token>()

    @Test("Each thread sees its own object; a slot starts empty in a new thread")
    func perThread() {
        Self.slot.set(Token("main"))
        defer { Self.slot.set(nil) }
        let seen = Locked<[String?]>([])
        let done = DispatchSemaphore(value: 0)
        Thread {
            seen.withLock { $0.append(Self.slot.current?.name) }
            Self.slot.set(Token("other thread"))
            seen.withLock { $0.append(Self.slot.current?.name) }
            Self.other.set(Token("second slot"))
            seen.withLock { $0.append(Self.other.withCurrent { $0?.name }) }
            done.signal()
        }.start()
        done.wait()
        #expect(seen.withLock { $0 } == [nil, "other thread", "second slot"])
        #expect(Self.slot.current?.name == "main")
        #expect(Self.slot.withCurrent { $0?.name } == "main")
        #expect(Self.other.current == nil)
    }

    @Test("Setting a slot releases the object it held; a thread's objects are released when it ends")
    func release() {
        let firstGone = DispatchSemaphore(value: 0)
        let lastGone = DispatchSemaphore(value: 0)
        let replacedAtOnce = Locked<Bool?>(nil)
        Thread {
            Self.slot.set(Token("first", gone: firstGone))
            Self.slot.set(Token("second", gone: lastGone))
            replacedAtOnce.withLock { $0 = firstGone.wait(timeout: .now()) == .success }
        }.start()
        // The thread's end releases "second" (the bound only keeps a failure from hanging).
        #expect(lastGone.wait(timeout: .now() + 600) == .success)
        #expect(replacedAtOnce.withLock { $0 } == true)
    }
}
