import Foundation

/// Deck's one JSON parser, strict RFC 8259 with the rules of spec 7.5: the same rule decides
/// what a `json` attribute accepts on write, what `--json` output embeds and what verification
/// calls valid, and it reads schema files.
///
/// A text is valid when it is exactly one JSON value, optionally surrounded by JSON whitespace
/// (space, tab, line feed, carriage return), and: no byte-order mark; strings escape every
/// character below U+0020 and use only the escapes of RFC 8259, and a `\u` escape of a
/// surrogate is one half of a pair; no object has two members of the same name (compared after
/// unescaping, code point by code point); arrays and objects nest at most 512 deep. Numbers
/// follow the grammar and are kept as written, of any length and magnitude (`1e400` is valid).
enum JSONText {
    /// How deeply arrays and objects may nest.
    static let maximumDepth = 512

    /// A text that is not valid JSON: what is wrong and at which byte offset.
    struct SyntaxError: Error, CustomStringConvertible, Sendable {
        let message: String
        let offset: Int
        var description: String { "\(message) at byte \(offset + 1)" }

        /// The message with a 1-based line and column in `bytes`.
        func located(in bytes: [UInt8]) -> String {
            var line = 1
            var column = 1
            for byte in bytes.prefix(offset) {
                if byte == 0x0A {
                    line += 1
                    column = 1
                } else if byte & 0xC0 != 0x80 {
                    column += 1
                }
            }
            return "\(message) at line \(line), column \(column)"
        }
    }

    /// A parsed JSON value; numbers keep their text.
    indirect enum Tree: Equatable, Sendable {
        case null
        case bool(Bool)
        case number(String)
        case string(String)
        case array([Tree])
        case object([(String, Tree)])

        static func == (a: Tree, b: Tree) -> Bool {
            switch (a, b) {
            case (.null, .null): true
            case (.bool(let x), .bool(let y)): x == y
            case (.number(let x), .number(let y)): x == y
            case (.string(let x), .string(let y)): x == y
            case (.array(let x), .array(let y)): x == y
            case (.object(let x), .object(let y)):
                x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
            default: false
            }
        }
    }

    /// Checks `text` and returns it without insignificant whitespace (the form `--json` embeds).
    static func minified(_ text: String) throws(SyntaxError) -> String {
        var parser = Parser(bytes: Array(text.utf8), emit: true, build: false)
        _ = try parser.parseDocument()
        return String(decoding: parser.output, as: UTF8.self)
    }

    /// Checks `text`.
    static func validate(_ text: String) throws(SyntaxError) {
        var parser = Parser(bytes: Array(text.utf8), emit: false, build: false)
        _ = try parser.parseDocument()
    }

    /// Whether `text` is valid JSON.
    static func isValid(_ text: String) -> Bool {
        do {
            try validate(text)
            return true
        } catch {
            return false
        }
    }

    /// Whether `text` is a legacy JSON value (spec 7.7): not valid, but RFC 8259 JSON that breaks
    /// only the rule against lone surrogate escapes or the one against a member name twice in an
    /// object, as Deck before spec 7.5 accepted.
    static func isLegacy(_ text: String) -> Bool {
        guard !isValid(text) else { return false }
        var parser = Parser(bytes: Array(text.utf8), emit: false, build: false)
        parser.lenient = true
        do {
            _ = try parser.parseDocument()
            return true
        } catch {
            return false
        }
    }

    /// Whether `text` is the JSON value `null` (with any surrounding whitespace).
    static func isNull(_ text: String) -> Bool {
        text.utf8.count < 64 && text.utf8.filter { !Parser.isWhitespace($0) }.elementsEqual("null".utf8)
    }

    /// Parses `bytes` into a tree.
    static func parse(_ bytes: [UInt8]) throws(SyntaxError) -> Tree {
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw SyntaxError(message: "the text is not valid UTF-8", offset: 0)
        }
        var parser = Parser(bytes: bytes, emit: false, build: true)
        return try parser.parseDocument()
    }

    private struct Parser {
        let bytes: [UInt8]
        let emit: Bool
        let build: Bool
        var output: [UInt8] = []
        var position = 0
        var depth = 0
        /// Accepts lone surrogate escapes (as U+FFFD) and a member name twice (legacy values).
        var lenient = false

        init(bytes: [UInt8], emit: Bool, build: Bool) {
            self.bytes = bytes
            self.emit = emit
            self.build = build
            if emit { output.reserveCapacity(bytes.count) }
        }

        static func isWhitespace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
        }

        func fail(_ message: String, at offset: Int? = nil) -> SyntaxError {
            SyntaxError(message: message, offset: offset ?? position)
        }

        mutating func skipWhitespace() {
            while position < bytes.count && Self.isWhitespace(bytes[position]) { position += 1 }
        }

        mutating func parseDocument() throws(SyntaxError) -> Tree {
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
                throw fail("a byte-order mark is not allowed (save the text as UTF-8 without one)")
            }
            skipWhitespace()
            guard position < bytes.count else {
                throw fail("expected a JSON value, found the end of the text")
            }
            let tree = try parseValue()
            skipWhitespace()
            guard position == bytes.count else {
                throw fail(
                    "unexpected \(describe(position)) after the JSON value (only one value is allowed)")
            }
            return tree
        }

        func describe(_ offset: Int) -> String {
            guard offset < bytes.count else { return "end of the text" }
            let byte = bytes[offset]
            if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
            return String(format: "byte 0x%02X", byte)
        }

        mutating func literal(_ word: String, _ tree: Tree) throws(SyntaxError) -> Tree {
            let utf8 = Array(word.utf8)
            guard bytes.count - position >= utf8.count,
                Array(bytes[position..<(position + utf8.count)]) == utf8
            else { throw fail("invalid literal (expected \(word))") }
            if emit { output += utf8 }
            position += utf8.count
            return tree
        }

        mutating func parseValue() throws(SyntaxError) -> Tree {
            guard position < bytes.count else {
                throw fail("expected a JSON value, found the end of the text")
            }
            switch bytes[position] {
            case UInt8(ascii: "{"): return try parseObject()
            case UInt8(ascii: "["): return try parseArray()
            case UInt8(ascii: "\""):
                let start = position
                let text = try parseString()
                if emit { output += bytes[start..<position] }
                return build ? .string(text) : .null
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
            default: throw fail("expected a JSON value, found \(describe(position))")
            }
        }

        mutating func enter() throws(SyntaxError) {
            depth += 1
            if depth > JSONText.maximumDepth {
                throw fail("arrays and objects nest more than \(JSONText.maximumDepth) deep")
            }
        }

        mutating func parseArray() throws(SyntaxError) -> Tree {
            try enter()
            position += 1
            if emit { output.append(UInt8(ascii: "[")) }
            var items: [Tree] = []
            skipWhitespace()
            if position < bytes.count && bytes[position] == UInt8(ascii: "]") {
                position += 1
            } else {
                while true {
                    skipWhitespace()
                    let item = try parseValue()
                    if build { items.append(item) }
                    skipWhitespace()
                    guard position < bytes.count else {
                        throw fail("unterminated array: expected ',' or ']'")
                    }
                    if bytes[position] == UInt8(ascii: ",") {
                        position += 1
                        if emit { output.append(UInt8(ascii: ",")) }
                        continue
                    }
                    guard bytes[position] == UInt8(ascii: "]") else {
                        throw fail("expected ',' or ']' in an array, found \(describe(position))")
                    }
                    position += 1
                    break
                }
            }
            if emit { output.append(UInt8(ascii: "]")) }
            depth -= 1
            return .array(items)
        }

        mutating func parseObject() throws(SyntaxError) -> Tree {
            try enter()
            position += 1
            if emit { output.append(UInt8(ascii: "{")) }
            var members: [(String, Tree)] = []
            var names: Set<[UInt8]> = []
            skipWhitespace()
            if position < bytes.count && bytes[position] == UInt8(ascii: "}") {
                position += 1
            } else {
                while true {
                    skipWhitespace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                        throw fail(
                            "expected a member name (a string) in an object, found \(describe(position))")
                    }
                    let start = position
                    let name = try parseString()
                    // Compared as code points: Swift's == would equate canonically equivalent names.
                    guard names.insert(Array(name.utf8)).inserted || lenient else {
                        throw fail("duplicate member name \(Self.quoted(name)) in an object", at: start)
                    }
                    if emit { output += bytes[start..<position] }
                    skipWhitespace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                        throw fail("expected ':' after a member name, found \(describe(position))")
                    }
                    position += 1
                    if emit { output.append(UInt8(ascii: ":")) }
                    skipWhitespace()
                    let value = try parseValue()
                    if build { members.append((name, value)) }
                    skipWhitespace()
                    guard position < bytes.count else {
                        throw fail("unterminated object: expected ',' or '}'")
                    }
                    if bytes[position] == UInt8(ascii: ",") {
                        position += 1
                        if emit { output.append(UInt8(ascii: ",")) }
                        continue
                    }
                    guard bytes[position] == UInt8(ascii: "}") else {
                        throw fail("expected ',' or '}' in an object, found \(describe(position))")
                    }
                    position += 1
                    break
                }
            }
            if emit { output.append(UInt8(ascii: "}")) }
            depth -= 1
            return .object(members)
        }

        static func quoted(_ name: String) -> String {
            "'" + (name.count > 40 ? String(name.prefix(40)) + "…" : name) + "'"
        }

        /// Parses a string literal at `position` and returns its value.
        mutating func parseString() throws(SyntaxError) -> String {
            let start = position
            position += 1
            var value: [UInt8] = []
            var plainStart = position
            while true {
                guard position < bytes.count else { throw fail("unterminated string", at: start) }
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    value += bytes[plainStart..<position]
                    position += 1
                    return String(decoding: value, as: UTF8.self)
                }
                if byte < 0x20 {
                    throw fail(String(format: "unescaped control character U+%04X in a string", byte))
                }
                guard byte == UInt8(ascii: "\\") else {
                    position += 1
                    continue
                }
                value += bytes[plainStart..<position]
                guard position + 1 < bytes.count else { throw fail("unterminated string", at: start) }
                let escape = bytes[position + 1]
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"):
                    value.append(escape)
                    position += 2
                case UInt8(ascii: "b"):
                    value.append(0x08)
                    position += 2
                case UInt8(ascii: "f"):
                    value.append(0x0C)
                    position += 2
                case UInt8(ascii: "n"):
                    value.append(0x0A)
                    position += 2
                case UInt8(ascii: "r"):
                    value.append(0x0D)
                    position += 2
                case UInt8(ascii: "t"):
                    value.append(0x09)
                    position += 2
                case UInt8(ascii: "u"):
                    try parseUnicodeEscape(into: &value)
                default:
                    throw fail("invalid escape '\\\(Character(Unicode.Scalar(escape)))' in a string")
                }
                plainStart = position
            }
        }

        /// Parses the `\\u` escape at `position` (with the low surrogate that follows a high one)
        /// into `value`'s UTF-8, and moves past it. Leniently, a lone surrogate becomes U+FFFD.
        mutating func parseUnicodeEscape(into value: inout [UInt8]) throws(SyntaxError) {
            guard let unit = hex4(at: position + 2) else {
                throw fail("\\u must be followed by four hex digits")
            }
            var scalarValue = unit
            var length = 6
            if (0xD800...0xDBFF).contains(unit) {
                guard position + 7 < bytes.count, bytes[position + 6] == UInt8(ascii: "\\"),
                    bytes[position + 7] == UInt8(ascii: "u"), let low = hex4(at: position + 8),
                    (0xDC00...0xDFFF).contains(low)
                else {
                    if lenient {
                        value += Array("\u{FFFD}".utf8)
                        position += 6
                        return
                    }
                    throw fail(
                        String(
                            format:
                                "lone surrogate \\u%04X (a high surrogate needs a low one after it)",
                            unit))
                }
                scalarValue = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                length = 12
            } else if (0xDC00...0xDFFF).contains(unit) {
                guard !lenient else {
                    value += Array("\u{FFFD}".utf8)
                    position += 6
                    return
                }
                throw fail(String(format: "lone surrogate \\u%04X", unit))
            }
            guard let scalar = Unicode.Scalar(scalarValue) else { throw fail("invalid \\u escape") }
            value += Array(String(Character(scalar)).utf8)
            position += length
        }

        /// The value of the four hex digits at `at`, or nil.
        func hex4(at: Int) -> UInt32? {
            guard at + 4 <= bytes.count else { return nil }
            var result: UInt32 = 0
            for byte in bytes[at..<(at + 4)] {
                let digit: UInt32
                switch byte {
                case 0x30...0x39: digit = UInt32(byte - 0x30)
                case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
                default: return nil
                }
                result = result * 16 + digit
            }
            return result
        }

        mutating func parseNumber() throws(SyntaxError) -> Tree {
            let start = position
            func digits() -> Int {
                let from = position
                while position < bytes.count && (0x30...0x39).contains(bytes[position]) { position += 1 }
                return position - from
            }
            if bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard position < bytes.count, (0x30...0x39).contains(bytes[position]) else {
                throw fail("a number needs a digit after '-'")
            }
            if bytes[position] == UInt8(ascii: "0") {
                position += 1
                if position < bytes.count && (0x30...0x39).contains(bytes[position]) {
                    throw fail("a number must not have a leading zero", at: start)
                }
            } else {
                _ = digits()
            }
            if position < bytes.count && bytes[position] == UInt8(ascii: ".") {
                position += 1
                guard digits() > 0 else { throw fail("a number needs a digit after '.'") }
            }
            if position < bytes.count
                && (bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E"))
            {
                position += 1
                if position < bytes.count
                    && (bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-"))
                {
                    position += 1
                }
                guard digits() > 0 else { throw fail("a number needs a digit in its exponent") }
            }
            if emit { output += bytes[start..<position] }
            return build ? .number(String(decoding: bytes[start..<position], as: UTF8.self)) : .null
        }
    }
}
