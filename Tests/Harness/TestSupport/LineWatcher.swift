import Foundation

/// Collects the lines a child process writes to a pipe, on a thread of its own, so that a test
/// can wait for the line that says something happened (an event) instead of sleeping and hoping.
/// Reading continuously also keeps the child from blocking on a full pipe.
public final class LineWatcher: @unchecked Sendable {
    // Everything below is guarded by `condition`.
    private let condition = NSCondition()
    private var lines: [String] = []
    private var partial = Data()
    private var ended = false

    /// Starts reading `handle` (the read end of a pipe) until end of file.
    public init(_ handle: FileHandle) {
        let thread = Thread { [self] in
            while true {
                let chunk = handle.availableData
                condition.lock()
                if chunk.isEmpty {
                    if !partial.isEmpty { lines.append(String(decoding: partial, as: UTF8.self)) }
                    partial = Data()
                    ended = true
                } else {
                    partial.append(chunk)
                    while let newline = partial.firstIndex(of: UInt8(ascii: "\n")) {
                        lines.append(String(decoding: partial[partial.startIndex..<newline], as: UTF8.self))
                        partial = Data(partial[(newline + 1)...])
                    }
                }
                condition.broadcast()
                condition.unlock()
                if chunk.isEmpty { return }
            }
        }
        thread.name = "LineWatcher"
        thread.start()
    }

    /// The complete lines read so far (and, after the end, a last line without a newline).
    public var text: [String] {
        condition.lock()
        defer { condition.unlock() }
        return lines
    }

    /// Waits until `count` lines satisfying `matches` have been read (true), or the pipe ended or
    /// `timeout` seconds passed without that (false).
    public func wait(
        forLines count: Int = 1, timeout: TimeInterval, where matches: (String) -> Bool
    ) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while lines.filter(matches).count < count {
            if ended || !condition.wait(until: deadline) { return lines.filter(matches).count >= count }
        }
        return true
    }

    /// Waits until the pipe ends (every writer closed it, e.g. the child exited), or `timeout`
    /// seconds; returns the lines and whether it ended.
    @discardableResult
    public func waitForEnd(timeout: TimeInterval) -> (lines: [String], ended: Bool) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !ended {
            if !condition.wait(until: deadline) { break }
        }
        return (lines, ended)
    }
}
