import DeckStore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A single-line progress indicator on standard error, safe to update from any thread.
///
/// Draws `label [########............]  42%  12.3 MB/s  ETA 0:07` (bytes) or
/// `label [########............]  42%  420/1000  35/s  ETA 0:17` (items), redrawn in place with
/// `\r` at most once per `refreshInterval`. Nothing is drawn unless the output is a terminal and
/// `quiet` is false, nor before `delay` seconds have passed, so short operations print nothing.
/// ``finish()`` erases the line (if anything was drawn); later updates are ignored.
///
/// ```swift
/// let progress = ProgressBar(label: "Packing", total: totalBytes, unit: .bytes, quiet: quiet)
/// defer { progress.finish() }
/// for chunk in chunks {
///     try write(chunk)
///     progress.advance(by: Int64(chunk.count))
/// }
/// ```
public final class ProgressBar: Sendable {
    /// What the counts measure; decides how amounts and rates are shown.
    public enum Unit: Sendable, Hashable {
        /// Bytes: rates like `12.3 MB/s` (decimal units).
        case bytes
        /// Countable items: `420/1000` and rates like `35/s`.
        case items
    }

    private struct State {
        var completed: Int64 = 0
        var total: Int64?
        var lastDraw: Double?
        var hasDrawn = false
        var isFinished = false
    }

    /// The number of cells inside the brackets.
    static let barWidth = 20

    /// Whether the bar may draw at all (a terminal and not quiet).
    public let isEnabled: Bool
    private let label: String
    private let unit: Unit
    private let columns: Int
    private let delay: Double
    private let refreshInterval: Double
    private let startTime: Double
    private let clock: @Sendable () -> Double
    private let output: @Sendable (String) -> Void
    private let state: Locked<State>

    /// Creates a progress bar; the clock starts now.
    ///
    /// - Parameters:
    ///   - label: Text before the bar, e.g. `"Exporting"`.
    ///   - total: The expected final count, or `nil` if unknown (then no bar, percentage or ETA).
    ///   - unit: Bytes or items.
    ///   - quiet: If true, never draw (e.g. from `--quiet`).
    ///   - isTerminal: Whether the output is a terminal; defaults to `isatty(2)`.
    ///   - columns: Terminal width used to shorten long labels; defaults to the width of stderr or 80.
    ///   - delay: Seconds of work before the bar first appears.
    ///   - refreshInterval: Minimum seconds between redraws.
    ///   - clock: Monotonic seconds; injectable for tests.
    ///   - output: Receives the raw text to write; defaults to standard error.
    public init(
        label: String,
        total: Int64?,
        unit: Unit = .items,
        quiet: Bool = false,
        isTerminal: Bool = StandardStreams.isTerminal(StandardStreams.errorDescriptor),
        columns: Int? = nil,
        delay: Double = 1.0,
        refreshInterval: Double = 0.1,
        clock: @escaping @Sendable () -> Double = ProgressBar.monotonicSeconds,
        output: @escaping @Sendable (String) -> Void = { StandardStreams.writeError($0) }
    ) {
        self.isEnabled = isTerminal && !quiet
        self.label = label
        self.unit = unit
        self.columns = columns ?? StandardStreams.terminalWidth(StandardStreams.errorDescriptor) ?? 80
        self.delay = delay
        self.refreshInterval = refreshInterval
        self.clock = clock
        self.output = output
        self.startTime = clock()
        self.state = Locked(State(total: total))
    }

    /// Sets the completed count (absolute) and redraws if due.
    public func update(completed: Int64) {
        record { $0.completed = completed }
    }

    /// Adds `delta` to the completed count and redraws if due.
    public func advance(by delta: Int64 = 1) {
        record { $0.completed += delta }
    }

    /// Changes the expected total (e.g. once it becomes known) and redraws if due.
    public func setTotal(_ total: Int64?) {
        record { $0.total = total }
    }

    /// The completed count so far.
    public var completed: Int64 {
        state.withLock { $0.completed }
    }

    /// Erases the progress line if one was drawn. Idempotent; later updates are ignored.
    public func finish() {
        state.withLock { state in
            guard !state.isFinished else { return }
            state.isFinished = true
            if state.hasDrawn {
                output("\r\u{1B}[K")
            }
        }
    }

    /// Seconds from an arbitrary fixed point, from the monotonic system clock.
    @Sendable public static func monotonicSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }

    private func record(_ change: (inout State) -> Void) {
        state.withLock { state in
            guard !state.isFinished else { return }
            change(&state)
            guard isEnabled else { return }
            let now = clock()
            guard now - startTime >= delay else { return }
            if let last = state.lastDraw, now - last < refreshInterval { return }
            state.lastDraw = now
            state.hasDrawn = true
            let line = Self.render(
                label: label, completed: state.completed, total: state.total, unit: unit,
                elapsed: now - startTime, columns: columns)
            output("\r" + line + "\u{1B}[K")
        }
    }

    /// The progress line (without control characters), shortened to fit `columns - 1`.
    static func render(
        label: String, completed: Int64, total: Int64?, unit: Unit, elapsed: Double, columns: Int
    ) -> String {
        let rate = elapsed > 0 ? Double(max(completed, 0)) / elapsed : 0
        let rateText = unit == .bytes ? formatBytes(rate) + "/s" : formatCount(rate) + "/s"
        var fields: [String]
        if let total, total > 0 {
            let fraction = min(1, max(0, Double(completed) / Double(total)))
            let filled = Int(fraction * Double(barWidth))
            let bar =
                "[" + String(repeating: "#", count: filled)
                + String(repeating: ".", count: barWidth - filled) + "]"
            let percent = String(Int(fraction * 100))
            let paddedPercent = String(repeating: " ", count: max(0, 3 - percent.count)) + percent + "%"
            fields = [bar + " " + paddedPercent]
            if unit == .items {
                fields.append("\(completed)/\(total)")
            }
            fields.append(rateText)
            fields.append("ETA " + formatETA(remaining: Double(max(total - completed, 0)), rate: rate))
        } else {
            let amount = unit == .bytes ? formatBytes(Double(completed)) : "\(completed)"
            fields = [amount, rateText]
        }
        let rest = fields.joined(separator: "  ")
        let limit = max(columns - 1, 1)
        var line = label.isEmpty ? rest : label + " " + rest
        if line.count > limit {
            let room = limit - rest.count - 1
            line = room >= 4 ? String(label.prefix(room - 3)) + "... " + rest : rest
        }
        return String(line.prefix(limit))
    }

    /// `512 B`, `12.3 kB`, `4.0 MB`, ... (powers of 1000).
    static func formatBytes(_ bytes: Double) -> String {
        let units = ["B", "kB", "MB", "GB", "TB", "PB"]
        var value = bytes
        var index = 0
        while value >= 1000 && index < units.count - 1 {
            value /= 1000
            index += 1
        }
        if index == 0 {
            return "\(Int(value)) B"
        }
        return oneDecimal(value) + " " + units[index]
    }

    /// `35`, `3.5` or `0.2`.
    static func formatCount(_ value: Double) -> String {
        value >= 10 ? String(Int(value.rounded())) : oneDecimal(value)
    }

    /// `0:07`, `12:34` or `1:02:03`; `--:--` when the rate is unknown.
    static func formatETA(remaining: Double, rate: Double) -> String {
        guard rate > 0, remaining.isFinite else { return "--:--" }
        let seconds = min(Int((remaining / rate).rounded(.up)), 359_999)
        let (hours, minutes, secs) = (seconds / 3600, seconds / 60 % 60, seconds % 60)
        let paddedSeconds = secs < 10 ? "0\(secs)" : "\(secs)"
        if hours > 0 {
            let paddedMinutes = minutes < 10 ? "0\(minutes)" : "\(minutes)"
            return "\(hours):\(paddedMinutes):\(paddedSeconds)"
        }
        return "\(minutes):\(paddedSeconds)"
    }

    private static func oneDecimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
