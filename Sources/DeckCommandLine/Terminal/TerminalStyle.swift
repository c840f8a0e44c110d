import Foundation

/// Decides whether to use ANSI colours on a stream, and applies them.
///
/// Colour is enabled only if the stream is a terminal, the `NO_COLOR` environment variable is unset
/// or empty (<https://no-color.org>) and `TERM` is not `dumb`. When disabled, every styling method
/// returns its input unchanged, so callers can style unconditionally.
///
/// ```swift
/// let style = TerminalStyle.standardError
/// StandardStreams.printError(style.red("Error:") + " " + message)
/// ```
public struct TerminalStyle: Sendable, Hashable {
    /// Whether styling methods emit escape sequences.
    public let isEnabled: Bool

    /// A style with colour explicitly on or off (e.g. from a `--color`/`--no-color` option).
    public init(isEnabled: Bool) {
        self.isEnabled = isEnabled
    }

    /// A style for `fileDescriptor`, decided by
    /// ``isColorEnabled(fileDescriptor:environment:isTerminal:)``.
    public init(
        fileDescriptor: Int32,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        isTerminal: (Int32) -> Bool = StandardStreams.isTerminal
    ) {
        self.isEnabled = Self.isColorEnabled(
            fileDescriptor: fileDescriptor, environment: environment, isTerminal: isTerminal)
    }

    /// Never styles.
    public static let plain = TerminalStyle(isEnabled: false)

    /// The style for standard output in the current process.
    public static var standardOutput: TerminalStyle {
        TerminalStyle(fileDescriptor: StandardStreams.outputDescriptor)
    }

    /// The style for standard error in the current process.
    public static var standardError: TerminalStyle {
        TerminalStyle(fileDescriptor: StandardStreams.errorDescriptor)
    }

    /// The colour decision: `isTerminal(fd)`, `NO_COLOR` unset or empty, and `TERM` not `dumb`.
    public static func isColorEnabled(
        fileDescriptor: Int32, environment: [String: String], isTerminal: (Int32) -> Bool
    ) -> Bool {
        guard isTerminal(fileDescriptor) else { return false }
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
        if environment["TERM"] == "dumb" { return false }
        return true
    }

    /// `text` in bold.
    public func bold(_ text: String) -> String {
        wrap(text, "1", "22")
    }

    /// `text` dimmed (faint).
    public func dim(_ text: String) -> String {
        wrap(text, "2", "22")
    }

    /// `text` in red.
    public func red(_ text: String) -> String {
        wrap(text, "31", "39")
    }

    /// `text` in green.
    public func green(_ text: String) -> String {
        wrap(text, "32", "39")
    }

    /// `text` in yellow.
    public func yellow(_ text: String) -> String {
        wrap(text, "33", "39")
    }

    private func wrap(_ text: String, _ on: String, _ off: String) -> String {
        guard isEnabled else { return text }
        return "\u{1B}[\(on)m\(text)\u{1B}[\(off)m"
    }
}
