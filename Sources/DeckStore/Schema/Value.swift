import Foundation

/// A reference to a value stored as a blob file: its SHA-256 digest and its length.
public struct BlobReference: Hashable, Sendable, CustomStringConvertible {
    public let digest: Digest
    public let size: Int64

    public init(digest: Digest, size: Int64) {
        self.digest = digest
        self.size = size
    }

    public var description: String { "blob \(digest.hexDigest) (\(size) bytes)" }
}

/// One value of a record, as the generic record API reads and writes it.
///
/// Attribute values use the case matching the attribute's ``StoreSchema/AttributeType``; `null` stands for a
/// missing optional value. Data attributes read back as `.data` when stored inline and `.blob`
/// when stored as a blob file (load it with ``StoreReader/data(for:)``); they accept `.data`,
/// `.blob` (an existing blob) and `.file` (bytes streamed from a file). Relationships use
/// `.reference` (to-one: the target's record id) and `.references` (to-many).
///
/// A stored cell that does not follow its type's encoding (spec 7.1; another writer's damage)
/// reads back as the case of its storage class — `.string`, `.integer`, `.double` or `.data` —
/// holding the cell exactly, so nothing is misread; ``PackageVerifier`` reports it.
public enum Value: Sendable, Hashable, CustomStringConvertible {
    case null
    case string(String)
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    /// A date, as the exact number of seconds the store holds (`Value.date(someDate)` makes one
    /// from a Foundation `Date`).
    case date(Timestamp)
    case data(Data)
    case uuid(UUID)
    case url(URL)
    case decimal(Decimal)
    /// A JSON document, as its text.
    case json(String)
    /// A data value stored as a blob file.
    case blob(BlobReference)
    /// A data value to be read from a file (written values only).
    case file(URL)
    /// The record id a to-one relationship points at.
    case reference(Int64)
    /// The record ids a to-many relationship holds.
    case references([Int64])

    /// A date value for the instant `date` stands for.
    public static func date(_ date: Date) -> Value { .date(Timestamp(date)) }

    public var isNull: Bool { if case .null = self { true } else { false } }

    /// The name of the case, for messages.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .string: "string"
        case .integer: "integer"
        case .double: "double"
        case .bool: "bool"
        case .date: "date"
        case .data: "data"
        case .uuid: "uuid"
        case .url: "url"
        case .decimal: "decimal"
        case .json: "json"
        case .blob: "blob"
        case .file: "file"
        case .reference: "reference"
        case .references: "references"
        }
    }

    /// The value's text form (spec 7.3–7.5): for every attribute type but data, the text that
    /// ``init(parsing:as:)`` reads back to the same value — dates in the canonical ISO 8601 form,
    /// decimals in plain notation, UUIDs in lowercase, JSON as its text. Data shows its size.
    public var description: String {
        switch self {
        case .null: "null"
        case .string(let v): v
        case .integer(let v): String(v)
        case .double(let v): String(v)
        case .bool(let v): String(v)
        case .date(let v): v.description
        case .data(let v): "<\(v.count) bytes>"
        case .uuid(let v): v.uuidString.lowercased()
        case .url(let v): v.absoluteString
        case .decimal(let v): Value.canonicalText(of: v) ?? v.description
        case .json(let v): v
        case .blob(let v): "<\(v.size) bytes, blob \(v.digest.hexDigest.prefix(12))…>"
        case .file(let v): "<file \(v.path)>"
        case .reference(let v): "#\(v)"
        case .references(let v): "[" + v.map { "#\($0)" }.joined(separator: ", ") + "]"
        }
    }

    /// For a `.json` value, its text without insignificant whitespace, checked to be exactly one
    /// valid JSON value by the rules of spec 7.5; nil for other values and for invalid text.
    /// (`deck query --json` embeds this, so a stored value can never add to the output.)
    package var compactJSONText: String? {
        guard case .json(let text) = self else { return nil }
        return try? JSONText.minified(text)
    }

    /// The canonical text of a decimal (spec 7.1), or nil when it is NaN or beyond the limits
    /// (a legacy decimal, spec 7.7, has one too).
    static func canonicalText(of decimal: Decimal) -> String? {
        guard let number = DecimalNumber(decimal),
            number.decimalLimitViolation == nil || number.isLegacyDecimal
        else { return nil }
        return number.plainText
    }

    /// Formats a date as ISO 8601 in UTC with exactly three fractional digits, rounded to the
    /// nearest millisecond: the form of `deck_meta`'s times (spec 4.2). Date values print with
    /// ``Timestamp/description``, which is exact.
    public static func iso8601(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        guard milliseconds.isFinite, abs(milliseconds) < 9e15 else {
            return date.timeIntervalSince1970.description
        }
        let (days, dayMilliseconds) = Int64(milliseconds).floorDivided(by: 86_400_000)
        let ms = dayMilliseconds % 1000
        let fraction = [ms / 100, ms / 10 % 10, ms % 10].map { UInt8(ascii: "0") + UInt8($0) }
        return Timestamp.format(days: days, secondOfDay: dayMilliseconds / 1000, fraction: fraction)
    }

    /// Parses `text` as a value of `type`, as the command line writes values (spec 7.3–7.5).
    ///
    /// Integers in decimal (64-bit); doubles and decimals as decimal numbers
    /// (`[+-]? (D+ (. D*)? | . D+) ([eE] [+-]? D+)?`, ASCII digits only); bools as
    /// `true`/`false`/`yes`/`no`/`1`/`0` in any ASCII case; dates in ISO 8601 or as seconds since
    /// 1970; data as base64; UUIDs as 8-4-4-4-12 hex; URLs as absolute RFC 3986 URLs (non-ASCII
    /// characters converted); JSON as one JSON value. Refused: NaN, infinities and numbers that
    /// round to them, dates outside the years 0000–9999, decimals beyond 38 significant digits.
    /// The text `null` is not special here.
    /// A date becomes the binary64 nearest to it in seconds since 2001, as a new document stores
    /// it.
    package init(parsing text: String, as type: StoreSchema.AttributeType) throws(ValueError) {
        try self.init(parsing: text, as: type, epoch: .reference)
    }

    /// Parses `text` as ``init(parsing:as:)`` does, a date into the binary64 nearest to it in
    /// seconds since `epoch` (the epoch of the document it is for, spec 7.4).
    package init(parsing text: String, as type: StoreSchema.AttributeType, epoch: DateEpoch)
        throws(ValueError)
    {
        func fail(_ expected: String) -> ValueError { ValueError(text: text, type: type, expected: expected) }
        switch type {
        case .string: self = .string(text)
        case .integer:
            guard let v = Int64(text) else {
                if let number = DecimalNumber(text), number.exponent >= 0 {
                    throw fail("an integer from \(Int64.min) to \(Int64.max)")
                }
                throw fail("an integer")
            }
            self = .integer(v)
        case .double:
            guard let number = DecimalNumber(text) else {
                throw fail(
                    "a decimal number such as 2.5 or -1e-3 (nan and inf are not numbers a package stores)")
            }
            let v = number.double
            guard v.isFinite else { throw fail("a finite number: this one is beyond ±1.8e308") }
            self = .double(v == 0 ? 0 : v)
        case .bool:
            switch String(
                text.utf8.map {
                    (0x41...0x5A).contains($0)
                        ? Character(Unicode.Scalar($0 + 32)) : Character(Unicode.Scalar($0))
                })
            {
            case "true", "1", "yes": self = .bool(true)
            case "false", "0", "no": self = .bool(false)
            default: throw fail("true or false")
            }
        case .date:
            switch Timestamp.parse(text, epoch: epoch) {
            case .success(let timestamp): self = .date(timestamp)
            case .failure(.syntax):
                throw fail(
                    "an ISO 8601 date such as 2026-11-30 or 2026-11-30T10:00:00Z, or seconds since 1970")
            case .failure(.field(let problem)): throw fail("a valid date: \(problem)")
            case .failure(.range(let problem)):
                throw fail(
                    "a date from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z (this one is \(problem))")
            }
        case .data:
            guard let d = Data(base64Encoded: text) else { throw fail("base64 data (or @FILE)") }
            self = .data(d)
        case .uuid:
            guard ValueSyntax.isUUID(text, allowUppercase: true), let u = UUID(uuidString: text) else {
                throw fail("a UUID: 32 hex digits in groups of 8-4-4-4-12")
            }
            self = .uuid(u)
        case .url:
            self = .url(try Value.parseURL(text, fail: fail))
        case .decimal:
            guard let number = DecimalNumber(text) else {
                throw fail("a decimal number such as -12.50 or 1e3")
            }
            if let problem = number.decimalLimitViolation { throw fail("a decimal with \(problem)") }
            guard let d = number.decimal else { throw fail("a decimal number that can be kept exactly") }
            self = .decimal(d)
        case .json:
            do {
                try JSONText.validate(text)
            } catch {
                throw fail("one JSON value (\(error))")
            }
            self = .json(text)
        }
    }

    /// An absolute RFC 3986 URL: a URI is taken exactly as written; an IRI (one with non-ASCII
    /// characters, whose ASCII part is a URI) is converted as Foundation converts it (IDNA for the
    /// host, UTF-8 percent-encoding elsewhere).
    private static func parseURL(_ text: String, fail: (String) -> ValueError) throws(ValueError) -> URL {
        if ValueSyntax.isURI(text) {
            guard let url = URL(string: text, encodingInvalidCharacters: false), url.absoluteString == text
            else {
                throw fail("an absolute URL that Foundation can represent exactly")
            }
            return url
        }
        if let problem = ValueSyntax.firstForbiddenCharacter(in: text) {
            throw fail("an absolute URL (RFC 3986): \(problem) is not allowed in a URL")
        }
        guard text.unicodeScalars.contains(where: { !$0.isASCII }), ValueSyntax.isIRI(text),
            let converted = URL(string: text), ValueSyntax.isURI(converted.absoluteString),
            let url = URL(string: converted.absoluteString, encodingInvalidCharacters: false)
        else {
            throw fail("an absolute URL (RFC 3986) with a scheme, such as https://example.org/a")
        }
        return url
    }

    /// Reads a JSON scalar (a schema file's default value) as a value of `type`.
    init(json: JSONScalar, type: AttributeType) throws(ValueError) {
        func fail(_ expected: String) -> ValueError {
            ValueError(text: json.jsonText, type: type, expected: expected)
        }
        switch (json, type) {
        case (.null, _): self = .null
        case (.bool(let b), .bool): self = .bool(b)
        case (.number(let text), .integer):
            guard let number = DecimalNumber(text) else { throw fail("an integer") }
            guard number.exponent >= 0 || number.isZero else { throw fail("an integer, without a fraction") }
            guard number.integerDigits <= 19, let v = Int64(number.plainText) else {
                throw fail("an integer from \(Int64.min) to \(Int64.max)")
            }
            self = .integer(v)
        case (.number(let text), .double), (.number(let text), .decimal), (.number(let text), .date):
            // The number's exact text: the same rules as text values (a date as seconds since 1970,
            // the schema's own form, spec 5.4).
            self = try Value(parsing: text, as: type, epoch: .unix)
        case (.string(let s), _): self = try Value(parsing: s, as: type, epoch: .unix)
        case (_, .json): self = .json(json.jsonText)
        default: throw fail("\(type.article) \(type.rawValue) value")
        }
    }

    /// The value as a JSON scalar, the form schema files store defaults in (spec 5.4).
    var jsonScalar: JSONScalar {
        switch self {
        case .null: .null
        case .string(let v): .string(v)
        case .integer(let v): .number(String(v))
        // The shortest text that converts back to the same binary64.
        case .double(let v): .number(v == 0 ? "0" : v.description)
        case .bool(let v): .bool(v)
        // Seconds since 1970 as a number: exact for the schema's dates (``StoreSchema/Attribute``
        // keeps them so).
        case .date(let v): .number(v.timeIntervalSince1970 == 0 ? "0" : v.timeIntervalSince1970.description)
        case .data(let v): .string(v.base64EncodedString())
        default: .string(description)
        }
    }
}

extension AttributeType {
    /// "a" or "an", for messages.
    var article: String { self == .integer ? "an" : "a" }
}

/// A value that does not parse as its attribute's type.
package struct ValueError: Error, CustomStringConvertible, Sendable {
    package let text: String
    package let type: StoreSchema.AttributeType
    package let expected: String
    package var description: String {
        let shown = text.count > 80 ? String(text.prefix(60)) + "… (\(text.utf8.count) bytes)" : text
        return "'\(shown)' is not a valid \(type.rawValue): expected \(expected)"
    }
}

/// A JSON scalar: enough JSON to carry default values in schema files.
enum JSONScalar: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number, as its text: exactly as written when the decoder was given the document's
    /// number texts (``JSONScalar/numberTextsKey``), otherwise the shortest text of the value.
    case number(String)
    case string(String)

    /// The `userInfo` key under which a decoder finds ``NumberTexts``.
    static let numberTextsKey = CodingUserInfoKey(rawValue: "deck.numberTexts")!

    /// The text of every number in a JSON document, by coding path (`entities.0.attributes.1.default`).
    final class NumberTexts: Sendable {
        let texts: [String: String]
        init(_ tree: JSONText.Tree) {
            var texts: [String: String] = [:]
            func walk(_ tree: JSONText.Tree, _ path: String) {
                switch tree {
                case .number(let text): texts[path] = text
                case .array(let items):
                    for (index, item) in items.enumerated() {
                        walk(item, path.isEmpty ? "\(index)" : "\(path).\(index)")
                    }
                case .object(let members):
                    for (name, value) in members { walk(value, path.isEmpty ? name : "\(path).\(name)") }
                default: break
                }
            }
            walk(tree, "")
            self.texts = texts
        }

        static func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let texts = decoder.userInfo[Self.numberTextsKey] as? NumberTexts,
            let text = texts.texts[NumberTexts.path(decoder.codingPath)]
        {
            self = .number(text)
        } else if let i = try? c.decode(Int64.self) {
            self = .number(String(i))
        } else if let n = try? c.decode(Double.self) {
            self = .number(n.description)
        } else {
            throw DecodingError.dataCorruptedError(
                in: c,
                debugDescription: "expected a JSON string, number, boolean or null (a json attribute takes "
                    + "an array or object default as a string holding its JSON text)")
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .number(let text):
            if let i = Int64(text) {
                try c.encode(i)
            } else {
                try c.encode(Double(text) ?? 0)
            }
        case .string(let s): try c.encode(s)
        }
    }

    var jsonText: String {
        switch self {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .number(let text): text
        case .string(let s):
            String(decoding: (try? JSONEncoder().encode(s)) ?? Data("\"\"".utf8), as: UTF8.self)
        }
    }
}
