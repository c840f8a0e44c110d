import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// Random values of every type over its whole range, plus the edges, printed and parsed and
/// stored and fetched: each form gives back the identical value (spec 7). The generator is
/// seeded (``TestSeed``: `DECK_TEST_SEED`, or drawn for the run); a failure message names the
/// seed, the command that replays it, and the value.
@Suite("Value properties", .timed)
struct ValuePropertyTests {
    static let seed = TestSeed("ValuePropertyTests", filter: "ValuePropertyTests")
    static let perType = 300

    /// Random values of `type`, edges first.
    static func values(of type: AttributeType, _ g: inout SeededGenerator) -> [Value] {
        var out = edges(of: type)
        for _ in 0..<perType { out.append(random(type, &g)) }
        return out
    }

    static func edges(of type: AttributeType) -> [Value] {
        switch type {
        case .string:
            return [
                "", "\0", "a\0b", "\u{1}\u{1F}\u{7F}", "\n\r\t", "\"'\\", "é", "e\u{301}", "🃏", "\u{FEFF}x",
                "\u{10FFFF}", "null", " ",
            ]
            .map(Value.string)
        case .integer: return [.min, .max, 0, -1, 1, 1 << 53, (1 << 53) + 1].map(Value.integer)
        case .double:
            return [
                0, 1, -1, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude,
                -.leastNonzeroMagnitude, .leastNormalMagnitude, .leastNormalMagnitude.nextDown, 0.1, 1e16,
                1e-7, 9_007_199_254_740_992.0.nextUp,
            ].map(Value.double)
        case .bool: return [.bool(true), .bool(false)]
        case .date:
            // Seconds since 2001, as a new document stores them (spec 7.1).
            let low = Timestamp.earliest.timeIntervalSinceReferenceDate
            let high = Timestamp.end.timeIntervalSinceReferenceDate
            return [
                low, low.nextUp, high.nextDown, 0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, -0.1, 0.1,
                1e-7,
            ]
            .map { .date(Timestamp(timeIntervalSinceReferenceDate: $0)) }
        case .data: return [.data(Data()), .data(Data([0])), .data(Data((0...255).map { UInt8($0) }))]
        case .uuid:
            return ["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"]
                .compactMap { UUID(uuidString: $0) }.map(Value.uuid)
        case .url:
            return [
                "x:", "http://[::1]/", "http://[::ffff:1.2.3.4]:0/", "a:%00", "HTTP://A/%7e?%20#%23",
                "urn:a:b",
            ]
            .compactMap { URL(string: $0, encodingInvalidCharacters: false) }.map(Value.url)
        case .decimal:
            return [
                "0", "1", "-1", String(repeating: "9", count: 38),
                "-" + String(repeating: "9", count: 38) + "e127",
                "1e127", "1e-128", "-0.00000000000000000000000000000000000001",
                "12345678901234567890123456789012345678e-128",
            ].compactMap { DecimalNumber($0)?.decimal }.map(Value.decimal)
        case .json:
            return [
                "0", "-0", "1e400", "true", "false", "\"\"", "[]", "{}", "[null]", "{\"\":{}}",
                "\"\\ud83c\\udccf\\u0000\"",
                String(repeating: "[", count: 512) + String(repeating: "]", count: 512), " \n1\t",
            ].map(Value.json)
        }
    }

    static func random(_ type: AttributeType, _ g: inout SeededGenerator) -> Value {
        switch type {
        case .string:
            let count = Int.random(in: 0...24, using: &g)
            var scalars = String.UnicodeScalarView()
            for _ in 0..<count {
                let pick = Int.random(in: 0..<4, using: &g)
                let value: UInt32 =
                    pick == 0
                    ? UInt32.random(in: 0...0x7F, using: &g)
                    : pick == 1
                        ? UInt32.random(in: 0x80...0xD7FF, using: &g)
                        : pick == 2
                            ? UInt32.random(in: 0xE000...0xFFFF, using: &g)
                            : UInt32.random(in: 0x10000...0x10FFFF, using: &g)
                if let scalar = Unicode.Scalar(value) { scalars.append(scalar) }
            }
            return .string(String(scalars))
        case .integer: return .integer(Int64.random(in: .min ... .max, using: &g))
        case .double:
            while true {
                let v = Double(bitPattern: UInt64.random(in: .min ... .max, using: &g))
                if v.isFinite { return .double(v) }
            }
        case .bool: return .bool(Bool.random(using: &g))
        case .date:
            let low = Timestamp.earliest.timeIntervalSinceReferenceDate
            let high = Timestamp.end.timeIntervalSinceReferenceDate
            switch Int.random(in: 0..<3, using: &g) {
            case 0:
                return .date(
                    Timestamp(timeIntervalSinceReferenceDate: Double.random(in: low..<high, using: &g)))
            case 1:
                return .date(
                    Timestamp(
                        timeIntervalSinceReferenceDate: Double(
                            Int64.random(in: -63_145_526_400_000..<252_423_993_600_000, using: &g)) / 1000))
            default:
                let v =
                    Double(bitPattern: UInt64.random(in: 0...0x4271_8000_0000_0000, using: &g))
                    * (Bool.random(using: &g) ? 1 : -1)
                return .date(Timestamp(timeIntervalSinceReferenceDate: v >= low && v < high ? v : 0))
            }
        case .data:
            return .data(
                Data(
                    (0..<Int.random(in: 0...64, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) })
            )
        case .uuid:
            var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &g) }
            let uuid = UUID(
                uuid: (
                    bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                    bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
                ))
            bytes.removeAll()
            return .uuid(uuid)
        case .url: return .url(randomURL(&g))
        case .decimal:
            let count = Int.random(in: 1...38, using: &g)
            var digits = (0..<count).map { _ in UInt8(ascii: "0") + UInt8.random(in: 0...9, using: &g) }
            digits[0] = UInt8(ascii: "1") + UInt8.random(in: 0...8, using: &g)
            digits[count - 1] = UInt8(ascii: "1") + UInt8.random(in: 0...8, using: &g)
            let number = DecimalNumber(
                isNegative: Bool.random(using: &g), digits: digits,
                exponent: Int.random(in: -128...127, using: &g))
            return number.decimal.map(Value.decimal) ?? .decimal(0)
        case .json:
            var text = ""
            randomJSON(depth: 0, into: &text, &g)
            return .json(text)
        }
    }

    static func randomURL(_ g: inout SeededGenerator) -> URL {
        let unreserved = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        let pathExtra = Array("!$&'()*+,;=:@")
        func piece(_ extra: [Character], _ g: inout SeededGenerator) -> String {
            var s = ""
            for _ in 0..<Int.random(in: 0...8, using: &g) {
                switch Int.random(in: 0..<4, using: &g) {
                case 0: s += String(format: "%%%02X", UInt8.random(in: 0...255, using: &g))
                case 1 where !extra.isEmpty: s.append(extra.randomElement(using: &g)!)
                default: s.append(unreserved.randomElement(using: &g)!)
                }
            }
            return s
        }
        let schemes = ["http", "https", "ftp", "x-y.z+w", "urn", "mailto", "file"]
        var text = schemes.randomElement(using: &g)! + ":"
        if Bool.random(using: &g) {
            text += "//"
            if Bool.random(using: &g) { text += piece(Array("!$&'()*+,;=:"), &g) + "@" }
            text +=
                Bool.random(using: &g)
                ? piece(Array("!$&'()*+,;="), &g)
                : "[2001:db8::\(String(Int.random(in: 0...0xFFFF, using: &g), radix: 16))]"
            if Bool.random(using: &g) { text += ":" + String(Int.random(in: 0...65535, using: &g)) }
            for _ in 0..<Int.random(in: 0...3, using: &g) { text += "/" + piece(pathExtra, &g) }
        } else {
            text += "a" + piece(pathExtra, &g)
        }
        if Bool.random(using: &g) { text += "?" + piece(pathExtra + ["/", "?"], &g) }
        if Bool.random(using: &g) { text += "#" + piece(pathExtra + ["/", "?"], &g) }
        return URL(string: text, encodingInvalidCharacters: false) ?? URL(string: "x:")!
    }

    static func randomJSON(depth: Int, into out: inout String, _ g: inout SeededGenerator) {
        let whitespace = ["", " ", "\n", "\t", "\r\n "]
        func ws(_ g: inout SeededGenerator) -> String {
            Int.random(in: 0..<3, using: &g) == 0 ? whitespace.randomElement(using: &g)! : ""
        }
        func string(_ g: inout SeededGenerator) -> String {
            var s = "\""
            for _ in 0..<Int.random(in: 0...6, using: &g) {
                switch Int.random(in: 0..<6, using: &g) {
                case 0:
                    s += ["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"].randomElement(using: &g)!
                case 1: s += String(format: "\\u%04x", UInt16.random(in: 0...0xD7FF, using: &g))
                case 2: s += String(format: "\\uD83C\\uDC%02X", UInt8.random(in: 0...0xFF, using: &g))
                case 3: s += ["é", "日", "🃏", "\u{7F}"].randomElement(using: &g)!
                default:
                    let byte = UInt8.random(in: 0x20...0x7E, using: &g)
                    s.append(byte == 0x22 || byte == 0x5C ? "x" : Character(Unicode.Scalar(byte)))
                }
            }
            return s + "\""
        }
        out += ws(&g)
        let kind = depth >= 4 ? Int.random(in: 0..<5, using: &g) : Int.random(in: 0..<7, using: &g)
        switch kind {
        case 0: out += "null"
        case 1: out += Bool.random(using: &g) ? "true" : "false"
        case 2:
            out += Bool.random(using: &g) ? "-" : ""
            out += Bool.random(using: &g) ? "0" : String(UInt64.random(in: 1...UInt64.max, using: &g))
            if Bool.random(using: &g) { out += "." + String(UInt32.random(in: 0...UInt32.max, using: &g)) }
            if Bool.random(using: &g) {
                out +=
                    ["e", "E"].randomElement(using: &g)! + ["", "+", "-"].randomElement(using: &g)!
                    + String(Int.random(in: 0...999, using: &g))
            }
        case 3, 4: out += string(&g)
        case 5:
            out += "["
            let count = Int.random(in: 0...4, using: &g)
            for i in 0..<count {
                if i > 0 { out += "," }
                randomJSON(depth: depth + 1, into: &out, &g)
            }
            out += ws(&g) + "]"
        default:
            out += "{"
            let count = Int.random(in: 0...4, using: &g)
            for i in 0..<count {
                if i > 0 { out += "," }
                out += ws(&g) + "\"k\(i)\"" + ws(&g) + ":"
                randomJSON(depth: depth + 1, into: &out, &g)
            }
            out += ws(&g) + "}"
        }
        out += ws(&g)
    }

    /// Two values are the same: for doubles and dates, the same bits (with -0.0 stored as 0.0).
    static func same(_ a: Value?, _ b: Value) -> Bool {
        switch (a, b) {
        case (.double(let x)?, .double(let y)): return x.bitPattern == (y == 0 ? 0.0 : y).bitPattern
        // Timestamps are equal when they are the same instant, exactly, whatever their epochs.
        case (.date(let x)?, .date(let y)): return x == y
        case (.url(let x)?, .url(let y)): return x.absoluteString == y.absoluteString
        // JSON null is no value (spec 7.5).
        case (let read, .json(let text)) where JSONText.isNull(text): return read == .null || read == b
        default: return a == b
        }
    }

    /// The text form a person writes for `value` (description, or base64 for data).
    static func text(_ value: Value) -> String {
        if case .data(let d) = value { return d.base64EncodedString() }
        return value.description
    }

    @Test func everyTypePrintsAndParsesBack() throws {
        print("Value properties: seed \(Self.seed)")
        var g = SeededGenerator(seed: Self.seed.value)
        for type in AttributeType.allCases {
            for value in Self.values(of: type, &g) {
                let printed = Self.text(value)
                let parsed = try? Value(parsing: printed, as: type)
                #expect(
                    Self.same(parsed, value),
                    "\(Self.seed), \(type): \(value) printed as \(printed.debugDescription)")
                // The JSON scalar of a schema default, through the exact reader and the plain one.
                // (A schema keeps a date default as seconds since 1970, spec 5.4: the nearest such.)
                let scalar = value.jsonScalar
                var schemaForm = value
                if case .date(let t) = value {
                    schemaForm = .date(Timestamp(timeIntervalSince1970: t.timeIntervalSince1970))
                }
                #expect(
                    Self.same(try? Value(json: scalar, type: type), schemaForm),
                    "\(Self.seed), \(type): \(value) as \(scalar)")
            }
        }
    }

    @Test func everyTypeStoresAndFetchesBack() throws {
        var g = SeededGenerator(seed: Self.seed.value &+ 1)
        let schema = recordsSchema()
        let columns: [AttributeType: String] = [
            .string: "s", .integer: "i", .double: "d", .bool: "b", .date: "t", .data: "raw", .uuid: "u",
            .url: "link",
            .decimal: "price", .json: "meta",
        ]
        try withTestDirectory { dir throws in
            let store = try makeTestStore(in: dir, schema: schema)
            var expected: [(Int64, String, Value)] = []
            try store.write { tx in
                for type in AttributeType.allCases {
                    let column = try #require(columns[type])
                    for value in Self.values(of: type, &g) {
                        let id = try tx.insert("Sample", [column: value])
                        expected.append((id, column, value))
                    }
                }
            }
            let url = store.url
            try store.close()
            let reopened = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? reopened.close() }
            for (id, column, value) in expected {
                let read = try reopened.read { try $0.record("Sample", id: id)?[column] }
                #expect(
                    Self.same(read, value),
                    "\(Self.seed), \(column) #\(id): wrote \(value), read \(String(describing: read))"
                )
            }
            // And the store verifies clean: every cell is in canonical form.
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }

    @Test func schemaDefaultsOfEveryTypeSurviveTheSchemaFile() throws {
        var g = SeededGenerator(seed: Self.seed.value &+ 2)
        for type in AttributeType.allCases where type != .data {
            var attributes: [Attribute] = []
            for (index, value) in Self.values(of: type, &g).prefix(60).enumerated() {
                if case .json(let text) = value, JSONText.isNull(text) { continue }
                attributes.append(Attribute("a\(index)", type, defaultValue: value))
            }
            let schema = StoreSchema(entities: [Entity("A", attributes: attributes)])
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let data = try encoder.encode(schema)
            for decoded in [
                try StoreSchema(json: data, source: "t"),
                try JSONDecoder().decode(StoreSchema.self, from: data),
            ] {
                for (a, b) in zip(decoded.entities[0].attributes, attributes) {
                    #expect(
                        Self.same(a.defaultValue, b.defaultValue ?? .null),
                        "\(Self.seed), \(type): \(String(describing: b.defaultValue))")
                }
            }
        }
    }
}
