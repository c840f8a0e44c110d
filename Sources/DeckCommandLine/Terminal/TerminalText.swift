/// Makes text safe to show on a terminal: characters that a terminal would act on instead of
/// showing are replaced by visible escapes.
///
/// Text from a package (values, names, the schema version, defaults, messages quoting stored text)
/// is untrusted: an escape character in it could clear the screen, set the window title or write
/// to the clipboard (OSC 52), and a bidirectional override could make text read differently from
/// what it is. Every text-output path of `deck` goes through ``escape(_:keepingNewlines:)``.
///
/// Escaped, in the notation of Python's `repr`:
///
/// | characters | shown as |
/// | --- | --- |
/// | tab, carriage return (and line feed where a line break is not allowed) | `\t`, `\r`, `\n` |
/// | other C0 controls U+0000–U+001F, DEL U+007F, C1 controls U+0080–U+009F | `\x1b`, `\x7f`, `\x9b` |
/// | bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), line and paragraph separators (U+2028, U+2029) | `\u202e` |
///
/// Everything else, printable non-ASCII included, is left as it is. Backslashes are not doubled:
/// the result is for reading, not for parsing back (`--json` and `--csv` are exact).
public enum TerminalText {
    /// `text` with every character of the table above escaped; line feeds are kept as line breaks
    /// when `keepingNewlines` is true, and shown as `\n` otherwise.
    public static func escape(_ text: String, keepingNewlines: Bool = true) -> String {
        var text = text
        return text.withUTF8 { bytes in
            guard let first = firstEscape(in: bytes, keepingNewlines: keepingNewlines) else { return nil }
            return escapeBytes(bytes, from: first, keepingNewlines: keepingNewlines)
        } ?? text
    }

    /// `text` as one line: ``escape(_:keepingNewlines:)`` with line feeds shown as `\n`. For
    /// values in a table cell or on a line of their own.
    public static func field(_ text: String) -> String {
        escape(text, keepingNewlines: false)
    }

    /// The length of the escape starting at `bytes[i]` (1–3 bytes), or 0 if that byte starts a
    /// character that stays as it is. `bytes` is valid UTF-8.
    private static func escapeLength(_ bytes: UnsafeBufferPointer<UInt8>, _ i: Int, keepingNewlines: Bool)
        -> Int
    {
        bytes[i] == 0x0A ? (keepingNewlines ? 0 : 1) : controlLength(bytes, i)
    }

    /// Whether `byte` can start a character of the table above (the bytes ``controlLength(_:_:)``
    /// needs to look at).
    @inline(__always)
    static func mayStartControl(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == 0x7F || byte == 0xC2 || byte == 0xD8 || byte == 0xE2
    }

    /// The length in bytes (1–3) of the character of the table above that starts at `bytes[i]`,
    /// line feed included, or 0 when the character there is not one. `bytes` is valid UTF-8. The
    /// JSON writer escapes the same characters (``JSON``).
    static func controlLength(_ bytes: UnsafeBufferPointer<UInt8>, _ i: Int) -> Int {
        let byte = bytes[i]
        switch byte {
        case ..<0x20, 0x7F: return 1
        case 0xC2:
            return i + 1 < bytes.count && (0x80...0x9F).contains(bytes[i + 1]) ? 2 : 0
        case 0xD8:
            return i + 1 < bytes.count && bytes[i + 1] == 0x9C ? 2 : 0
        case 0xE2:
            guard i + 2 < bytes.count else { return 0 }
            switch (bytes[i + 1], bytes[i + 2]) {
            case (0x80, 0x8E), (0x80, 0x8F), (0x80, 0xA8...0xAE), (0x81, 0xA6...0xA9): return 3
            default: return 0
            }
        default: return 0
        }
    }

    private static func firstEscape(in bytes: UnsafeBufferPointer<UInt8>, keepingNewlines: Bool) -> Int? {
        var i = 0
        while i < bytes.count {
            let byte = bytes[i]
            // Only these bytes can start an escaped character.
            if mayStartControl(byte),
                escapeLength(bytes, i, keepingNewlines: keepingNewlines) > 0
            {
                return i
            }
            i += 1
        }
        return nil
    }

    private static func escapeBytes(
        _ bytes: UnsafeBufferPointer<UInt8>, from first: Int, keepingNewlines: Bool
    ) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 16)
        out.append(contentsOf: bytes[0..<first])
        var i = first
        while i < bytes.count {
            let length = escapeLength(bytes, i, keepingNewlines: keepingNewlines)
            guard length > 0 else {
                out.append(bytes[i])
                i += 1
                continue
            }
            let scalar = scalar(bytes, i, length: length)
            out.append(UInt8(ascii: "\\"))
            switch scalar {
            case 0x09: out.append(UInt8(ascii: "t"))
            case 0x0A: out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "r"))
            case ..<0x100:
                out += [UInt8(ascii: "x"), hex[Int(scalar >> 4)], hex[Int(scalar & 0xF)]]
            default:
                out.append(UInt8(ascii: "u"))
                for shift in stride(from: 12, through: 0, by: -4) {
                    out.append(hex[Int((scalar >> UInt32(shift)) & 0xF)])
                }
            }
            i += length
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The scalar of the UTF-8 sequence of `length` bytes (1–3) at `bytes[i]`.
    static func scalar(_ bytes: UnsafeBufferPointer<UInt8>, _ i: Int, length: Int) -> UInt32 {
        switch length {
        case 1: UInt32(bytes[i])
        case 2: (UInt32(bytes[i] & 0x1F) << 6) | UInt32(bytes[i + 1] & 0x3F)
        default:
            (UInt32(bytes[i] & 0x0F) << 12) | (UInt32(bytes[i + 1] & 0x3F) << 6) | UInt32(bytes[i + 2] & 0x3F)
        }
    }
}

/// Text for a terminal built from pieces: each piece is escaped (``TerminalText``), then styled, so
/// that only the styles' own escape sequences reach the terminal.
public struct TerminalLine: Sendable, Hashable {
    /// The escaped, styled text.
    public private(set) var rendered = ""

    /// An empty line.
    public init() {}

    /// A line starting with `text`, escaped and then styled by `style`.
    public init(_ text: String, style: ((String) -> String)? = nil) {
        append(text, style: style)
    }

    /// Appends `text`, escaped (line feeds kept) and then styled by `style`.
    public mutating func append(_ text: String, style: ((String) -> String)? = nil) {
        let safe = TerminalText.escape(text)
        rendered += style.map { $0(safe) } ?? safe
    }
}
