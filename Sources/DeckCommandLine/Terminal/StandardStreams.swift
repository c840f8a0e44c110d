#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Unbuffered writes to standard output and standard error.
///
/// Every write first flushes C stdio buffers (which Swift's `print` uses), then writes the bytes
/// with `write(2)`, retrying on partial writes and `EINTR`. Output therefore appears immediately and
/// in program order, even when mixed with `print`. Write errors (e.g. a closed pipe) are ignored.
///
/// ```swift
/// StandardStreams.printOutput(table)
/// StandardStreams.printError(HelpFormatter.errorReport(for: error, root: spec))
/// ```
public enum StandardStreams {
    /// The file descriptor of standard output.
    public static let outputDescriptor: Int32 = 1
    /// The file descriptor of standard error.
    public static let errorDescriptor: Int32 = 2

    /// Writes `text` as UTF-8 to `fileDescriptor`, without adding a newline.
    public static func write(_ text: String, to fileDescriptor: Int32) {
        fflush(nil)
        var text = text
        text.withUTF8 { buffer in
            guard var address = buffer.baseAddress else { return }
            var remaining = buffer.count
            while remaining > 0 {
                #if canImport(Darwin)
                    let written = Darwin.write(fileDescriptor, address, remaining)
                #elseif canImport(Musl)
                    let written = Musl.write(fileDescriptor, address, remaining)
                #else
                    let written = Glibc.write(fileDescriptor, address, remaining)
                #endif
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                remaining -= written
                address += written
            }
        }
    }

    /// Writes `text` to standard output, without adding a newline.
    public static func writeOutput(_ text: String) {
        write(text, to: outputDescriptor)
    }

    /// Writes `text` to standard error, without adding a newline.
    public static func writeError(_ text: String) {
        write(text, to: errorDescriptor)
    }

    /// Writes `text` and a newline to standard output.
    public static func printOutput(_ text: String) {
        write(text + "\n", to: outputDescriptor)
    }

    /// Writes `text` and a newline to standard error.
    public static func printError(_ text: String) {
        write(text + "\n", to: errorDescriptor)
    }

    /// Whether `fileDescriptor` refers to a terminal (`isatty`).
    public static func isTerminal(_ fileDescriptor: Int32) -> Bool {
        isatty(fileDescriptor) == 1
    }

    /// The width in columns of the terminal behind `fileDescriptor`, or `nil` if it is not a terminal
    /// or the size is unknown.
    public static func terminalWidth(_ fileDescriptor: Int32) -> Int? {
        var size = winsize()
        #if canImport(Darwin)
            let result = ioctl(fileDescriptor, TIOCGWINSZ, &size)
        #else
            let result = ioctl(fileDescriptor, UInt(TIOCGWINSZ), &size)
        #endif
        guard result == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }
}
