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
/// Attribute values use the case matching the attribute's ``AttributeType``; `null` stands for a
/// missing optional value. Data attributes read back as `.data` when stored inline and `.blob`
/// when stored as a blob file (load it with ``DocumentPackage/data(for:)``); they accept `.data`,
/// `.blob` (an existing blob) and `.file` (bytes streamed from a file). Relationships use
/// `.reference` (to-one: the target's record id) and `.references` (to-many).
public enum Value: Sendable, Hashable, CustomStringConvertible {
    case null
    case string(String)
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    case date(Date)
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

    public var description: String {
        switch self {
        case .null: "null"
        case .string(let v): v
        case .integer(let v): String(v)
        case .double(let v): String(v)
        case .bool(let v): String(v)
        case .date(let v): Value.iso8601(v)
        case .data(let v): "<\(v.count) bytes>"
        case .uuid(let v): v.uuidString.lowercased()
        case .url(let v): v.absoluteString
        case .decimal(let v): v.description
        case .json(let v): v
        case .blob(let v): "<\(v.size) bytes, blob \(v.digest.hexDigest.prefix(12))…>"
        case .file(let v): "<file \(v.path)>"
        case .reference(let v): "#\(v)"
        case .references(let v): "[" + v.map { "#\($0)" }.joined(separator: ", ") + "]"
        }
    }

    /// Formats a date as the spec's canonical ISO 8601 UTC form with milliseconds.
    public static func iso8601(_ date: Date) -> String {
        // Years 1–9999 by arithmetic (this runs once per date a query prints); others by Foundation.
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds >= -62_135_596_800, seconds < 253_402_300_800 else {
            return date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
        }
        let milliseconds = Int64((seconds * 1000).rounded())  // to the nearest: 0.45 is 0.4499… in binary
        let (days, dayMilliseconds) = milliseconds.floorDivided(by: 86_400_000)
        // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        var out = [UInt8]()
        out.reserveCapacity(24)
        func digits(_ value: Int64, _ count: Int) {
            var divisor: Int64 = 1
            for _ in 1..<count { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(rest / divisor))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(year, 4)
        out.append(UInt8(ascii: "-"))
        digits(month, 2)
        out.append(UInt8(ascii: "-"))
        digits(day, 2)
        out.append(UInt8(ascii: "T"))
        digits(dayMilliseconds / 3_600_000, 2)
        out.append(UInt8(ascii: ":"))
        digits(dayMilliseconds / 60_000 % 60, 2)
        out.append(UInt8(ascii: ":"))
        digits(dayMilliseconds / 1_000 % 60, 2)
        out.append(UInt8(ascii: "."))
        digits(dayMilliseconds % 1_000, 3)
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses ISO 8601 dates: `2026-11-30`, `2026-11-30T10:00:00Z`, `2026-11-30T10:00:00+02:00`,
    /// with or without fractional seconds. A date or time without a zone is UTC.
    public static func parseDate(_ text: String) -> Date? {
        // By hand, in the proleptic Gregorian calendar that iso8601(_:) writes (Foundation's
        // parser switches to the Julian calendar before 1582-10-15; found by FuzzWhere).
        var bytes = Array(text.utf8)[...]
        func number(_ count: Int) -> Int64? {
            guard bytes.count >= count else { return nil }
            var value: Int64 = 0
            for byte in bytes.prefix(count) {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            bytes = bytes.dropFirst(count)
            return value
        }
        func take(_ ascii: Character) -> Bool {
            guard let first = bytes.first, first == ascii.asciiValue else { return false }
            bytes = bytes.dropFirst()
            return true
        }
        guard let year = number(4), take("-"), let month = number(2), take("-"), let day = number(2),
            (1...12).contains(month), day >= 1
        else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthDays: [Int64] = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day <= monthDays[Int(month) - 1] else { return nil }
        var seconds: Double = 0
        var offset: Int64 = 0
        if take("T") || take("t") || take(" ") {
            guard let hour = number(2), take(":"), let minute = number(2), hour < 24, minute < 60 else {
                return nil
            }
            seconds = Double(hour * 3600 + minute * 60)
            if take(":") {
                guard let second = number(2), second < 61 else { return nil }
                seconds += Double(second)
                if take(".") || take(",") {
                    var scale = 0.1
                    var digits = 0
                    while let byte = bytes.first, (0x30...0x39).contains(byte) {
                        seconds += Double(byte - 0x30) * scale
                        scale /= 10
                        digits += 1
                        bytes = bytes.dropFirst()
                    }
                    guard digits > 0 else { return nil }
                }
            }
            if take("Z") || take("z") {
                // UTC
            } else if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                bytes = bytes.dropFirst()
                guard let hours = number(2) else { return nil }
                _ = take(":")
                guard let minutes = number(2), hours < 24, minutes < 60 else { return nil }
                offset = (hours * 3600 + minutes * 60) * (sign == UInt8(ascii: "+") ? 1 : -1)
            }
        }
        guard bytes.isEmpty else { return nil }
        // Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: Double(days * 86_400 - offset) + seconds)
    }

    /// Parses `text` as a value of `type`, as the command line writes values.
    ///
    /// Integers and doubles in decimal, bools as `true`/`false`/`1`/`0`, dates in ISO 8601 or as
    /// seconds since 1970, data as base64, UUIDs and URLs in their usual text form, decimals as
    /// decimal numbers, JSON as any JSON document. The text `null` is not special here.
    public init(parsing text: String, as type: AttributeType) throws(ValueError) {
        func fail(_ expected: String) -> ValueError { ValueError(text: text, type: type, expected: expected) }
        switch type {
        case .string: self = .string(text)
        case .integer:
            guard let v = Int64(text) else { throw fail("an integer") }
            self = .integer(v)
        case .double:
            guard let v = Double(text), v.isFinite else { throw fail("a finite number") }
            self = .double(v)
        case .bool:
            switch text.lowercased() {
            case "true", "1", "yes": self = .bool(true)
            case "false", "0", "no": self = .bool(false)
            default: throw fail("true or false")
            }
        case .date:
            if let d = Value.parseDate(text) {
                self = .date(d)
            } else if let seconds = Double(text) {
                self = .date(Date(timeIntervalSince1970: seconds))
            } else {
                throw fail("an ISO 8601 date such as 2026-11-30T10:00:00Z")
            }
        case .data:
            guard let d = Data(base64Encoded: text) else { throw fail("base64 data (or @FILE)") }
            self = .data(d)
        case .uuid:
            guard let u = UUID(uuidString: text) else { throw fail("a UUID") }
            self = .uuid(u)
        case .url:
            guard let u = URL(string: text), u.scheme != nil else { throw fail("an absolute URL") }
            self = .url(u)
        case .decimal:
            guard let d = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")),
                text.allSatisfy({
                    $0.isNumber || $0 == "." || $0 == "-" || $0 == "+" || $0 == "e" || $0 == "E"
                })
            else { throw fail("a decimal number") }
            self = .decimal(d)
        case .json:
            guard
                (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]))
                    != nil
            else { throw fail("a JSON document") }
            self = .json(text)
        }
    }

    /// Reads a JSON scalar (a schema file's default value, or `--json` input) as a value of `type`.
    init(json: JSONScalar, type: AttributeType, attribute: String) throws(ValueError) {
        switch (json, type) {
        case (.null, _): self = .null
        case (.bool(let b), .bool): self = .bool(b)
        case (.integer(let i), .integer): self = .integer(i)
        case (.integer(let i), .double): self = .double(Double(i))
        case (.integer(let i), .date): self = .date(Date(timeIntervalSince1970: Double(i)))
        case (.integer(let i), .decimal): self = .decimal(Decimal(i))
        case (.number(let n), .integer):
            throw ValueError(text: String(n), type: type, expected: "an integer")
        case (.number(let n), .double): self = .double(n)
        case (.number(let n), .date): self = .date(Date(timeIntervalSince1970: n))
        case (.number(let n), .decimal):
            // Through the number's shortest text, so 0.1 stays 0.1 (a string keeps every digit).
            guard let d = Decimal(string: String(n), locale: Locale(identifier: "en_US_POSIX")) else {
                throw ValueError(text: json.jsonText, type: type, expected: "a decimal number")
            }
            self = .decimal(d)
        case (.string(let s), _): self = try Value(parsing: s, as: type)
        case (_, .json): self = .json(json.jsonText)
        default: throw ValueError(text: json.jsonText, type: type, expected: "a \(type.rawValue) value")
        }
    }

    /// The value as a JSON scalar, the form `--json` output and schema files use.
    var jsonScalar: JSONScalar {
        switch self {
        case .null: .null
        case .string(let v): .string(v)
        case .integer(let v): .integer(v)
        case .double(let v): .number(v)
        case .bool(let v): .bool(v)
        // Seconds since 1970 as a number: exact, unlike text rounded to milliseconds.
        case .date(let v): .number(v.timeIntervalSince1970)
        case .data(let v): .string(v.base64EncodedString())
        case .decimal(let v): .string(v.description)
        default: .string(description)
        }
    }
}

/// A value that does not parse as its attribute's type.
public struct ValueError: Error, CustomStringConvertible, Sendable {
    public let text: String
    public let type: AttributeType
    public let expected: String
    public var description: String { "'\(text)' is not a valid \(type.rawValue): expected \(expected)" }
}

/// A JSON scalar: enough JSON to carry default values in schema files.
enum JSONScalar: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    /// A JSON number written without fraction or exponent that fits 64 bits, kept exact.
    case integer(Int64)
    case number(Double)
    case string(String)

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .integer(i)
        } else if let n = try? c.decode(Double.self) {
            self = .number(n)
        } else {
            self = .string(try c.decode(String.self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .integer(let i): try c.encode(i)
        case .number(let n): try c.encode(n)
        case .string(let s): try c.encode(s)
        }
    }

    var jsonText: String {
        switch self {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .integer(let i): String(i)
        case .number(let n): String(n)
        case .string(let s): "\"\(s)\""
        }
    }
}

extension Int64 {
    /// Quotient rounded towards minus infinity, and the non-negative remainder.
    fileprivate func floorDivided(by divisor: Int64) -> (Int64, Int64) {
        let quotient = self / divisor
        let remainder = self % divisor
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }
}
