import Foundation

/// A JSON value read by the strict rules the manifest follows (spec: "Manifest"): RFC 8259 JSON
/// in UTF-8, with no byte-order mark, no member name twice in one object, and at most
/// ``maximumDepth`` levels of nesting. Numbers keep their literal text.
indirect enum StrictJSON: Equatable {
    case object([Member])
    case array([StrictJSON])
    case string(String)
    case number(String)
    case bool(Bool)
    case null

    /// One member of an object, in document order.
    struct Member: Equatable {
        let name: String
        let value: StrictJSON
    }

    /// Arrays and objects nest at most this deep.
    static let maximumDepth = 64

    /// Why a document is not strict JSON, with the byte offset where reading stopped.
    struct Failure: Error, CustomStringConvertible {
        let reason: String
        let offset: Int
        var description: String { "\(reason) at byte \(offset)" }
    }

    /// Parses a whole document: one value, surrounded only by JSON whitespace.
    static func parse(_ data: Data) throws(Failure) -> StrictJSON {
        let bytes = [UInt8](data)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            throw Failure(reason: "it begins with a byte-order mark", offset: 0)
        }
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw Failure(reason: "it is not valid UTF-8", offset: 0)
        }
        var parser = Parser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else {
            throw Failure(reason: "unexpected text after the JSON value", offset: parser.index)
        }
        return value
    }

    /// The type's name, for messages.
    var kindName: String {
        switch self {
        case .object: "an object"
        case .array: "an array"
        case .string: "a string"
        case .number: "a number"
        case .bool: "a boolean"
        case .null: "null"
        }
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        func fail(_ reason: String) -> Failure { Failure(reason: reason, offset: index) }

        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) throws(Failure) -> StrictJSON {
            guard index < bytes.count else { throw fail("unexpected end of the document") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw fail("unexpected character")
            }
        }

        mutating func literal(_ word: String, _ value: StrictJSON) throws(Failure) -> StrictJSON {
            let text = Array(word.utf8)
            guard bytes.count - index >= text.count, Array(bytes[index..<index + text.count]) == text else {
                throw fail("unexpected character")
            }
            index += text.count
            return value
        }

        mutating func object(depth: Int) throws(Failure) -> StrictJSON {
            guard depth <= StrictJSON.maximumDepth else {
                throw fail("nested more than \(StrictJSON.maximumDepth) levels deep")
            }
            index += 1
            var members: [Member] = []
            // Names compare by their code points (not Swift's canonical equivalence).
            var names: Set<[UInt8]> = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw fail("expected a member name")
                }
                let start = index
                let name = try string()
                guard names.insert(Array(name.utf8)).inserted else {
                    throw Failure(
                        reason: "the member name '\(name)' appears twice in one object", offset: start)
                }
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                    throw fail("expected ':'")
                }
                index += 1
                skipWhitespace()
                members.append(Member(name: name, value: try value(depth: depth)))
                skipWhitespace()
                guard index < bytes.count else { throw fail("unexpected end of the document") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
                index += 1
                return .object(members)
            }
        }

        mutating func array(depth: Int) throws(Failure) -> StrictJSON {
            guard depth <= StrictJSON.maximumDepth else {
                throw fail("nested more than \(StrictJSON.maximumDepth) levels deep")
            }
            index += 1
            var elements: [StrictJSON] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth))
                skipWhitespace()
                guard index < bytes.count else { throw fail("unexpected end of the document") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
                index += 1
                return .array(elements)
            }
        }

        /// A string token starting at the opening quote; escapes decoded.
        mutating func string() throws(Failure) -> String {
            index += 1
            var scalars = String.UnicodeScalarView()
            var run: [UInt8] = []
            func flush() {
                if !run.isEmpty {
                    scalars.append(contentsOf: String(decoding: run, as: UTF8.self).unicodeScalars)
                    run.removeAll()
                }
            }
            while true {
                guard index < bytes.count else { throw fail("unterminated string") }
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    flush()
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    flush()
                    index += 1
                    guard index < bytes.count else { throw fail("unterminated string") }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        var code = try hex4()
                        if (0xD800...0xDBFF).contains(code) {
                            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                                bytes[index + 1] == UInt8(ascii: "u")
                            else { throw fail("a lone surrogate escape") }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else {
                                throw fail("a lone surrogate escape")
                            }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00...0xDFFF).contains(code) {
                            throw fail("a lone surrogate escape")
                        }
                        guard let scalar = Unicode.Scalar(code) else { throw fail("an invalid escape") }
                        scalars.append(scalar)
                    default:
                        throw fail("an invalid escape")
                    }
                default:
                    guard byte >= 0x20 else { throw fail("a control character in a string") }
                    run.append(byte)
                    index += 1
                }
            }
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard bytes.count - index >= 4 else { throw fail("an invalid escape") }
            var code: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw fail("an invalid escape")
                }
                code = code << 4 | UInt32(digit)
                index += 1
            }
            return code
        }

        /// A number token, checked against RFC 8259's grammar; returned as written.
        mutating func number() throws(Failure) -> String {
            let start = index
            func digits() -> Int {
                let from = index
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                    index += 1
                }
                return index - from
            }
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { throw fail("an invalid number") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else if digits() == 0 {
                throw fail("an invalid number")
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { throw fail("an invalid number") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")
                {
                    index += 1
                }
                guard digits() > 0 else { throw fail("an invalid number") }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }
    }
}
