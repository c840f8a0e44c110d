import DeckArguments
import DeckKit
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Buffered standard output (large query results are written in 64 KiB pieces) and
/// unbuffered standard error: one value, made by ``DeckCommandLine/run(_:)`` and passed to the
/// command it runs (`inout`; it cannot be copied, so no two buffers hold the same output).
///
/// Text output is escaped for the terminal here, in one place (``TerminalText``): every string
/// given to ``write(_:)-5jhun`` or ``error(_:)`` has its control characters and bidirectional
/// overrides made visible, on a terminal or not, so that no package can drive the terminal
/// that shows it (or the one a pipe ends in). Exact forms (`--json`, `--csv`, completion
/// scripts) switch that off with ``escapesText`` for their command; styled text is built as a
/// ``TerminalLine``, escaped piece by piece before its own escape sequences are added.
struct Output: ~Copyable {
    private let fd: Int32
    private var buffer: [UInt8] = []
    /// Whether ``write(_:)-5jhun`` escapes its text (true for text output, false for exact forms).
    var escapesText = true

    /// Output to standard output (and errors to standard error).
    init() {
        fd = StandardStreams.outputDescriptor
        buffer.reserveCapacity(1 << 16)
    }

    /// Appends text: escaped for the terminal unless ``escapesText`` is off.
    mutating func write(_ text: String) {
        buffer.append(contentsOf: (escapesText ? TerminalText.escape(text) : text).utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Appends a line whose pieces were escaped and styled already.
    mutating func write(_ line: TerminalLine) {
        buffer.append(contentsOf: line.rendered.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Appends UTF-8 bytes, or a JSON value written straight into the buffer.
    mutating func write(json: JSON, pretty: Bool) {
        json.write(into: &buffer, pretty: pretty)
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Writes what is buffered.
    mutating func flush() {
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

    /// Writes a line to standard error at once, escaped for the terminal.
    func error(_ text: String) {
        error(TerminalLine(text))
    }

    /// Writes a line whose pieces were escaped and styled already to standard error at once.
    func error(_ line: TerminalLine) {
        let text = line.rendered.hasSuffix("\n") ? line.rendered : line.rendered + "\n"
        Array(text.utf8).withUnsafeBytes { Output.writeAll(StandardStreams.errorDescriptor, $0) }
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
    /// JSON text from elsewhere (a json attribute's value, an encoded schema). It is checked
    /// when written: valid text (one JSON value by the rules of spec 7.5) is inserted without
    /// its insignificant whitespace, anything else as a JSON string holding the text, so the
    /// output is always valid and no stored text can add members or records to it.
    case raw(String)

    func render(pretty: Bool = true, indent: String = "") -> String {
        var out: [UInt8] = []
        write(into: &out, pretty: pretty, indent: Array(indent.utf8))
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the JSON text as UTF-8 (bytes, not `String`: this is the hot loop of
    /// `deck query --json`).
    func write(into out: inout [UInt8], pretty: Bool, indent: [UInt8] = []) {
        switch self {
        case .null: out += "null".utf8
        case .bool(let b): out += (b ? "true" : "false").utf8
        case .int(let i): out += String(i).utf8
        case .double(let d):
            if !d.isFinite {
                out += "null".utf8
            } else if d == d.rounded() && abs(d) < 1e15 {
                out += String(Int64(d)).utf8
                out += ".0".utf8
            } else {
                out += String(d).utf8
            }
        case .string(let s): JSON.escape(s, into: &out)
        case .raw(let text):
            if let compact = Value.json(text).compactJSONText {
                JSON.appendEscapingControls(compact, into: &out)
            } else {
                JSON.escape(text, into: &out)
            }
        case .array(let items):
            guard !items.isEmpty else {
                out += "[]".utf8
                return
            }
            let inner = indent + [0x20, 0x20]
            out += pretty ? "[\n".utf8 : "[".utf8
            for (i, item) in items.enumerated() {
                if pretty { out += inner }
                item.write(into: &out, pretty: pretty, indent: inner)
                if i < items.count - 1 { out.append(UInt8(ascii: ",")) }
                if pretty { out.append(0x0A) }
            }
            if pretty { out += indent }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            guard !members.isEmpty else {
                out += "{}".utf8
                return
            }
            let inner = indent + [0x20, 0x20]
            out += pretty ? "{\n".utf8 : "{".utf8
            for (i, (key, value)) in members.enumerated() {
                if pretty { out += inner }
                JSON.escape(key, into: &out)
                out += pretty ? ": ".utf8 : ":".utf8
                value.write(into: &out, pretty: pretty, indent: inner)
                if i < members.count - 1 { out.append(UInt8(ascii: ",")) }
                if pretty { out.append(0x0A) }
            }
            if pretty { out += indent }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `s` as a JSON string literal: quotes, backslashes and control characters escaped,
    /// and so are, as `\uXXXX`, the characters a terminal acts on that JSON allows raw (DEL, the C1
    /// controls U+0080–U+009F, the bidirectional controls and the line and paragraph separators:
    /// the table of ``TerminalText``), so that `--json` output shown on a terminal cannot drive
    /// it. The string decodes to `s` exactly.
    static func escape(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            // Most strings need no escaping: copy them whole.
            guard
                bytes.contains(where: {
                    TerminalText.mayStartControl($0) || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\")
                })
            else {
                out.append(contentsOf: bytes)
                return
            }
            var i = 0
            while i < bytes.count {
                let byte = bytes[i]
                switch byte {
                case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
                case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                default:
                    let length = TerminalText.mayStartControl(byte) ? TerminalText.controlLength(bytes, i) : 0
                    guard length > 0 else {
                        out.append(byte)
                        i += 1
                        continue
                    }
                    appendUnicodeEscape(TerminalText.scalar(bytes, i, length: length), into: &out)
                    i += length
                    continue
                }
                i += 1
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Appends valid JSON text with the characters ``escape(_:into:)`` escapes, which can only
    /// stand inside its strings there (none is JSON white space), written as `\uXXXX`.
    static func appendEscapingControls(_ text: String, into out: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            var i = 0
            while i < bytes.count {
                let length = TerminalText.mayStartControl(bytes[i]) ? TerminalText.controlLength(bytes, i) : 0
                guard length > 0 else {
                    out.append(bytes[i])
                    i += 1
                    continue
                }
                appendUnicodeEscape(TerminalText.scalar(bytes, i, length: length), into: &out)
                i += length
            }
        }
    }

    /// `\uXXXX` for a scalar of the Basic Multilingual Plane.
    private static func appendUnicodeEscape(_ scalar: UInt32, into out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        out += "\\u".utf8
        for shift in stride(from: 12, through: 0, by: -4) {
            out.append(hex[Int((scalar >> UInt32(shift)) & 0xF)])
        }
    }
}
