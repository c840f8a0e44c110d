import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Buffered standard output (large query results are written in 64 KiB pieces) and
/// unbuffered standard error.
final class Output: @unchecked Sendable {
    /// Standard output. Only the main thread writes to it.
    static let standard = Output(fd: 1)

    private let fd: Int32
    private var buffer: [UInt8] = []

    private init(fd: Int32) {
        self.fd = fd
        buffer.reserveCapacity(1 << 16)
    }

    func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    func write(bytes: UnsafeRawBufferPointer) {
        flush()
        Output.writeAll(fd, bytes)
    }

    func flush() {
        guard !buffer.isEmpty else { return }
        buffer.withUnsafeBytes { Output.writeAll(fd, $0) }
        buffer.removeAll(keepingCapacity: true)
    }

    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
        guard var base = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let n = Glibc.write(fd, base, remaining)
            if n < 0 {
                if errno == EINTR { continue }
                return  // EPIPE and friends: the reader went away; nothing useful to do.
            }
            base += n
            remaining -= n
        }
    }

    /// Writes a line to standard error at once.
    static func error(_ text: String) {
        let line = text.hasSuffix("\n") ? text : text + "\n"
        Array(line.utf8).withUnsafeBytes { writeAll(2, $0) }
    }
}

/// A minimal JSON writer with a fixed key order, so `--json` output is stable.
indirect enum JSON {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])
    /// Already-serialised JSON text (a json attribute's value), inserted as is.
    case raw(String)

    func render(pretty: Bool = true, indent: String = "") -> String {
        var out = ""
        write(into: &out, pretty: pretty, indent: indent)
        return out
    }

    func write(into out: inout String, pretty: Bool, indent: String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            out +=
                d.isFinite
                ? (d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) + ".0" : String(d)) : "null"
        case .string(let s): JSON.escape(s, into: &out)
        case .raw(let text): out += text
        case .array(let items):
            guard !items.isEmpty else {
                out += "[]"
                return
            }
            let inner = indent + "  "
            out += pretty ? "[\n" : "["
            for (i, item) in items.enumerated() {
                if pretty { out += inner }
                item.write(into: &out, pretty: pretty, indent: inner)
                if i < items.count - 1 { out += "," }
                if pretty { out += "\n" }
            }
            out += pretty ? indent + "]" : "]"
        case .object(let members):
            guard !members.isEmpty else {
                out += "{}"
                return
            }
            let inner = indent + "  "
            out += pretty ? "{\n" : "{"
            for (i, (key, value)) in members.enumerated() {
                if pretty { out += inner }
                JSON.escape(key, into: &out)
                out += pretty ? ": " : ":"
                value.write(into: &out, pretty: pretty, indent: inner)
                if i < members.count - 1 { out += "," }
                if pretty { out += "\n" }
            }
            out += pretty ? indent + "}" : "}"
        }
    }

    static func escape(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20:
                out +=
                    "\\u" + String(repeating: "0", count: 4 - String(c.value, radix: 16).count)
                    + String(c.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
