import Foundation

/// A number written in decimal, held exactly: the grammar every numeric value text uses
/// (spec 7.3): `[+-]? (D+ ("." D*)? | "." D+) ([eE] [+-]? D+)?`, where D is an ASCII digit.
struct DecimalNumber: Equatable, Sendable {
    var isNegative: Bool
    /// The significant digits (ASCII), without leading or trailing zeros; empty for zero.
    var digits: [UInt8]
    /// The value is `digits × 10^exponent`. Absurd exponents saturate at ±2^50.
    var exponent: Int

    private static let saturation = 1 << 50

    init(isNegative: Bool, digits: [UInt8], exponent: Int) {
        self.isNegative = isNegative
        self.digits = digits
        self.exponent = exponent
        normalize()
    }

    /// Parses `text`; nil when it does not follow the grammar.
    init?(_ text: some StringProtocol) {
        var bytes = Array(text.utf8)[...]
        let isDigit = { (byte: UInt8) in byte >= 0x30 && byte <= 0x39 }
        var negative = false
        if let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
            negative = first == UInt8(ascii: "-")
            bytes = bytes.dropFirst()
        }
        let integer = bytes.prefix(while: isDigit)
        bytes = bytes.dropFirst(integer.count)
        var fraction: ArraySlice<UInt8> = []
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            fraction = bytes.prefix(while: isDigit)
            bytes = bytes.dropFirst(fraction.count)
        }
        guard !integer.isEmpty || !fraction.isEmpty else { return nil }
        var written = 0
        if let e = bytes.first, e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            var exponentNegative = false
            if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                exponentNegative = sign == UInt8(ascii: "-")
                bytes = bytes.dropFirst()
            }
            let exponentDigits = bytes.prefix(while: isDigit)
            guard !exponentDigits.isEmpty else { return nil }
            bytes = bytes.dropFirst(exponentDigits.count)
            for digit in exponentDigits {
                written = min(written * 10 + Int(digit - 0x30), Self.saturation)
            }
            if exponentNegative { written = -written }
        }
        guard bytes.isEmpty else { return nil }
        self.init(
            isNegative: negative, digits: Array(integer) + Array(fraction),
            exponent: written - min(fraction.count, Self.saturation))
    }

    /// Strips leading and trailing zeros; zero is never negative.
    private mutating func normalize() {
        let leading = digits.prefix(while: { $0 == 0x30 }).count
        if leading > 0 { digits.removeFirst(leading) }
        var trailing = 0
        while trailing < digits.count && digits[digits.count - 1 - trailing] == 0x30 { trailing += 1 }
        if trailing > 0 { digits.removeLast(trailing) }
        exponent = max(-Self.saturation, min(Self.saturation, exponent + trailing))
        if digits.isEmpty {
            exponent = 0
            isNegative = false
        }
    }

    var isZero: Bool { digits.isEmpty }

    /// Digits before the decimal point in plain notation (0 for a number below 1).
    var integerDigits: Int { max(0, digits.count + exponent) }
    /// Digits after the decimal point in plain notation.
    var fractionDigits: Int { max(0, -exponent) }

    /// The text in scientific form, exact, for `Double(_:)`: `-12345e-3`.
    var scientificText: String {
        guard !isZero else { return "0" }
        return (isNegative ? "-" : "") + String(decoding: digits, as: UTF8.self) + "e" + String(exponent)
    }

    /// The nearest binary64 value (ties to even), which may be infinite or zero.
    var double: Double {
        // Swift's conversion from text is correctly rounded.
        Double(scientificText) ?? .nan
    }

    /// Plain notation, the canonical text of a decimal (spec 7.1): `-0.5`, `1200`, `0`. Only for
    /// numbers within ``DecimalNumber/decimalLimitViolation``'s limits (it writes every digit).
    var plainText: String {
        guard !isZero else { return "0" }
        var out: [UInt8] = isNegative ? [UInt8(ascii: "-")] : []
        if exponent >= 0 {
            out += digits
            out += repeatElement(UInt8(ascii: "0"), count: exponent)
        } else if digits.count > -exponent {
            out += digits[..<(digits.count + exponent)]
            out.append(UInt8(ascii: "."))
            out += digits[(digits.count + exponent)...]
        } else {
            out += [UInt8(ascii: "0"), UInt8(ascii: ".")]
            out += repeatElement(UInt8(ascii: "0"), count: -exponent - digits.count)
            out += digits
        }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: Decimals

    /// The limits of a decimal value (spec 7.1), what Foundation's `Decimal` holds exactly: a
    /// non-zero decimal is `m × 10^e` with `m` an integer of at most 38 digits, not divisible by
    /// 10, and `-128 ≤ e ≤ 127`.
    static let maximumSignificantDigits = 38
    static let maximumExponent = 127
    static let minimumExponent = -128

    /// Why this number cannot be a decimal value, or nil when it can.
    var decimalLimitViolation: String? {
        guard !isZero else { return nil }
        if digits.count > Self.maximumSignificantDigits {
            return "at most \(Self.maximumSignificantDigits) significant digits (this has \(digits.count))"
        }
        if exponent > Self.maximumExponent {
            return "its last significant digit at most \(Self.maximumExponent) places before the point"
        }
        if exponent < Self.minimumExponent {
            return "at most \(-Self.minimumExponent) digits after the point"
        }
        return nil
    }

    /// Whether this number is a legacy decimal (spec 7.7): beyond the limits only by having 39
    /// significant digits, below 2^128, as Deck before the 38-digit limit stored what Foundation's
    /// `Decimal` (a 128-bit significand) held.
    var isLegacyDecimal: Bool {
        digits.count == Self.maximumSignificantDigits + 1
            && (Self.minimumExponent...Self.maximumExponent).contains(exponent)
            && digits.lexicographicallyPrecedes(Array("340282366920938463463374607431768211456".utf8))
    }

    /// The same number as a Foundation `Decimal`, exactly; nil when it is beyond the limits.
    var decimal: Decimal? {
        guard decimalLimitViolation == nil else { return nil }
        return exactDecimal
    }

    /// A legacy decimal (``isLegacyDecimal``) as a Foundation `Decimal`, exactly.
    var legacyDecimal: Decimal? {
        guard isLegacyDecimal else { return nil }
        return exactDecimal
    }

    private var exactDecimal: Decimal? {
        guard !isZero else { return Decimal(0) }
        guard
            let significand = Decimal(
                string: String(decoding: digits, as: UTF8.self), locale: Locale(identifier: "en_US_POSIX"))
        else { return nil }
        let value = Decimal(sign: isNegative ? .minus : .plus, exponent: exponent, significand: significand)
        // Refuse rather than round: the result must read back as the same digits.
        guard DecimalNumber(value) == self else { return nil }
        return value
    }

    /// A Foundation `Decimal`, exactly; nil for NaN.
    init?(_ decimal: Decimal) {
        guard decimal.isFinite else { return nil }
        // The significand is a non-negative integer (exponent 0), which prints as plain digits.
        guard let magnitude = DecimalNumber(decimal.significand.description), !magnitude.isNegative,
            magnitude.exponent >= 0
        else { return nil }
        self.init(
            isNegative: decimal.sign == .minus, digits: magnitude.digits,
            exponent: magnitude.exponent + decimal.exponent)
    }

    /// The shortest decimal that converts back to `value` (Swift's description), exactly.
    init?(shortest value: Double) {
        guard value.isFinite else { return nil }
        self.init(value.description)
    }

    /// Splits a number into its floor and the fraction digits of `value - floor` (no trailing
    /// zeros), exactly; nil when the floor does not fit in 64 bits.
    var floorAndFraction: (floor: Int64, fraction: [UInt8])? {
        guard !isZero else { return (0, []) }
        guard integerDigits <= 18 else { return nil }
        var integer: Int64 = 0
        let integerPart = exponent >= 0 ? digits.count : max(0, digits.count + exponent)
        for digit in digits[..<integerPart] { integer = integer * 10 + Int64(digit - 0x30) }
        for _ in 0..<max(0, exponent) { integer *= 10 }
        var fraction: [UInt8] = []
        if exponent < 0 {
            fraction = Array(repeating: UInt8(ascii: "0"), count: max(0, -exponent - digits.count))
            fraction += digits[integerPart...]
        }
        guard isNegative else { return (integer, fraction) }
        guard !fraction.isEmpty else { return (-integer, []) }
        // -(i + 0.f) = -(i + 1) + (1 - 0.f); 1 - 0.f has as many digits, the last non-zero.
        var complement = fraction.map { UInt8(ascii: "9") - ($0 - 0x30) }
        complement[complement.count - 1] += 1
        return (-integer - 1, complement)
    }
}

/// Checks of the text forms of UUIDs and URLs (spec 7.1).
enum ValueSyntax {
    /// Whether `text` is a UUID in the canonical stored form: 36 characters, lowercase hex,
    /// 8-4-4-4-12.
    static func isCanonicalUUID(_ text: String) -> Bool {
        isUUID(text, allowUppercase: false)
    }

    /// Whether `text` is a UUID in 8-4-4-4-12 form, hex digits in either case.
    static func isUUID(_ text: String, allowUppercase: Bool) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                let lower = (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)
                let upper = allowUppercase && (0x41...0x46).contains(byte)
                guard lower || upper else { return false }
            }
        }
        return true
    }

    // MARK: RFC 3986

    private static func isAlpha(_ b: UInt8) -> Bool { (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) }
    private static func isDigit(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) }
    private static func isHex(_ b: UInt8) -> Bool {
        isDigit(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b)
    }
    private static func isUnreserved(_ b: UInt8) -> Bool {
        isAlpha(b) || isDigit(b) || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || b == UInt8(ascii: "_")
            || b == UInt8(ascii: "~")
    }
    private static func isSubDelim(_ b: UInt8) -> Bool { "!$&'()*+,;=".utf8.contains(b) }

    /// Whether `bytes` is a sequence of the given characters and percent-encoded octets.
    private static func isEncoded(_ bytes: ArraySlice<UInt8>, allowing allowed: (UInt8) -> Bool) -> Bool {
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == UInt8(ascii: "%") {
                guard i + 2 < bytes.endIndex, isHex(bytes[i + 1]), isHex(bytes[i + 2]) else { return false }
                i += 3
            } else {
                guard allowed(b) else { return false }
                i += 1
            }
        }
        return true
    }

    private static func isPathCharacter(_ b: UInt8) -> Bool {
        isUnreserved(b) || isSubDelim(b) || b == UInt8(ascii: ":") || b == UInt8(ascii: "@")
            || b == UInt8(ascii: "/")
    }

    /// Whether `text` is a URI by RFC 3986's `URI` rule (section 3): a scheme, `:`, a hierarchical
    /// part, an optional query and fragment; ASCII only, `%` only before two hex digits.
    static func isURI(_ text: String) -> Bool {
        let bytes = Array(text.utf8)[...]
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return false }
        let scheme = bytes[..<colon]
        guard let first = scheme.first, isAlpha(first),
            scheme.allSatisfy({
                isAlpha($0) || isDigit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-")
                    || $0 == UInt8(ascii: ".")
            })
        else { return false }
        var rest = bytes[(colon + 1)...]
        var fragment: ArraySlice<UInt8>?
        if let hash = rest.firstIndex(of: UInt8(ascii: "#")) {
            fragment = rest[(hash + 1)...]
            rest = rest[..<hash]
        }
        var query: ArraySlice<UInt8>?
        if let question = rest.firstIndex(of: UInt8(ascii: "?")) {
            query = rest[(question + 1)...]
            rest = rest[..<question]
        }
        let queryCharacter = { (b: UInt8) in isPathCharacter(b) || b == UInt8(ascii: "?") }
        if let fragment, !isEncoded(fragment, allowing: queryCharacter) { return false }
        if let query, !isEncoded(query, allowing: queryCharacter) { return false }
        var path = rest
        if rest.starts(with: "//".utf8) {
            let afterSlashes = rest.dropFirst(2)
            let end = afterSlashes.firstIndex(of: UInt8(ascii: "/")) ?? afterSlashes.endIndex
            guard isAuthority(afterSlashes[..<end]) else { return false }
            path = afterSlashes[end...]
        }
        // path-abempty, path-absolute, path-rootless and path-empty are all runs of pchar and
        // "/"; after the authority's absence, "//" cannot start the path (handled above).
        return isEncoded(path, allowing: isPathCharacter)
    }

    private static func isAuthority(_ authority: ArraySlice<UInt8>) -> Bool {
        var hostAndPort = authority
        if let at = authority.firstIndex(of: UInt8(ascii: "@")) {
            let userinfo = authority[..<at]
            guard
                isEncoded(
                    userinfo, allowing: { isUnreserved($0) || isSubDelim($0) || $0 == UInt8(ascii: ":") })
            else { return false }
            hostAndPort = authority[(at + 1)...]
        }
        var port: ArraySlice<UInt8> = []
        if hostAndPort.first == UInt8(ascii: "[") {
            guard let close = hostAndPort.firstIndex(of: UInt8(ascii: "]")) else { return false }
            guard isIPLiteral(hostAndPort[(hostAndPort.startIndex + 1)..<close]) else { return false }
            let after = hostAndPort[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return false }
                port = after.dropFirst()
            }
        } else {
            var host = hostAndPort
            if let colon = hostAndPort.firstIndex(of: UInt8(ascii: ":")) {
                host = hostAndPort[..<colon]
                port = hostAndPort[(colon + 1)...]
            }
            // reg-name (IPv4address is a special case of it).
            guard isEncoded(host, allowing: { isUnreserved($0) || isSubDelim($0) }) else { return false }
        }
        return port.allSatisfy(isDigit)
    }

    private static func isIPLiteral(_ text: ArraySlice<UInt8>) -> Bool {
        if let first = text.first, first == UInt8(ascii: "v") || first == UInt8(ascii: "V") {
            // IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
            let rest = text.dropFirst()
            guard let dot = rest.firstIndex(of: UInt8(ascii: ".")) else { return false }
            let version = rest[..<dot]
            let tail = rest[(dot + 1)...]
            return !version.isEmpty && version.allSatisfy(isHex) && !tail.isEmpty
                && tail.allSatisfy { isUnreserved($0) || isSubDelim($0) || $0 == UInt8(ascii: ":") }
        }
        return isIPv6(text)
    }

    private static func isIPv4(_ text: ArraySlice<UInt8>) -> Bool {
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(isDigit) else { return false }
            if part.count > 1 && part.first == UInt8(ascii: "0") { return false }
            guard let value = Int(String(decoding: part, as: UTF8.self)), value <= 255 else { return false }
        }
        return true
    }

    /// RFC 3986's IPv6address: eight groups of 1–4 hex digits, the last two of which may be an
    /// IPv4 address, with at most one `::` standing for one or more groups of zeros.
    private static func isIPv6(_ text: ArraySlice<UInt8>) -> Bool {
        func groups(_ part: ArraySlice<UInt8>, allowIPv4: Bool) -> Int? {
            guard !part.isEmpty else { return 0 }
            let pieces = part.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
            var count = 0
            for (index, piece) in pieces.enumerated() {
                if allowIPv4 && index == pieces.count - 1 && piece.contains(UInt8(ascii: ".")) {
                    guard isIPv4(piece) else { return nil }
                    count += 2
                } else {
                    guard (1...4).contains(piece.count), piece.allSatisfy(isHex) else { return nil }
                    count += 1
                }
            }
            return count
        }
        let bytes = Array(text)
        var doubleColon: Int?
        var i = 0
        while i + 1 < bytes.count {
            if bytes[i] == UInt8(ascii: ":") && bytes[i + 1] == UInt8(ascii: ":") {
                guard doubleColon == nil else { return false }
                doubleColon = i
                i += 2
            } else {
                i += 1
            }
        }
        guard let split = doubleColon else { return groups(text, allowIPv4: true) == 8 }
        let left = bytes[..<split]
        let right = bytes[(split + 2)...]
        guard let l = groups(left, allowIPv4: false), let r = groups(right, allowIPv4: true) else {
            return false
        }
        return l + r <= 7
    }

    /// Whether `text` would be a URI if each non-ASCII character were an unreserved one: an IRI
    /// (RFC 3987) whose ASCII part RFC 3986 allows.
    static func isIRI(_ text: String) -> Bool {
        var ascii = ""
        ascii.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars { ascii.unicodeScalars.append(scalar.isASCII ? scalar : "a") }
        return isURI(ascii)
    }

    /// The first character of `text` that no URI may contain (a space, a control character,
    /// `<>"{}|\^` and backquote, or a `%` not followed by two hex digits), for messages.
    static func firstForbiddenCharacter(in text: String) -> String? {
        let scalars = Array(text.unicodeScalars)
        for (index, scalar) in scalars.enumerated() where scalar.isASCII {
            let b = UInt8(scalar.value)
            if b == UInt8(ascii: "%") {
                let hex = { (i: Int) in
                    i < scalars.count && scalars[i].isASCII && isHex(UInt8(scalars[i].value))
                }
                if !hex(index + 1) || !hex(index + 2) { return "'%' not followed by two hex digits" }
                continue
            }
            if isUnreserved(b) || isSubDelim(b) || ":/?#[]@".utf8.contains(b) { continue }
            switch b {
            case 0x20: return "a space (write %20)"
            case ..<0x20, 0x7F: return String(format: "the control character U+%04X", b)
            default: return "'\(Character(scalar))' (write %\(String(format: "%02X", b)))"
            }
        }
        return nil
    }
}
