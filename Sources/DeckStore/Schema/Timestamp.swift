import Foundation

/// The instant from which a document counts its dates' seconds (spec 4.2 `date_epoch`, 7.1).
///
/// Format versions 1 to 3 count from 1970; a new version 4 document counts from 2001, Foundation's
/// reference date, so that every `Date` is stored as its own binary64, exactly. A document upgraded
/// to version 4 counts from 2001 only when every date it holds converts exactly (spec 12.8).
package enum DateEpoch: Int64, Sendable, CaseIterable {
    /// 1970-01-01T00:00:00Z.
    case unix = 0
    /// 2001-01-01T00:00:00Z, Foundation's reference date: 978,307,200 seconds after 1970.
    case reference = 978_307_200

    /// How messages name it.
    package var name: String { self == .unix ? "1970-01-01T00:00:00Z" : "2001-01-01T00:00:00Z" }
}

/// A date as a package stores it: a binary64 number of seconds since the document's epoch
/// (1970-01-01 or 2001-01-01, spec 4.2, 7.1, 7.4), exactly.
///
/// A `Timestamp` keeps the stored number and the epoch it counts from, so nothing is lost between
/// the store and memory: a Foundation `Date` (seconds since 2001) becomes one with ``init(_:)``
/// and comes back with ``date`` bit for bit, and a number a format-3 document holds (seconds since
/// 1970) stays that number. Two timestamps are equal when they stand for the same instant,
/// whatever their epochs. The text form (``description``) parses back (``init(parsing:)``) to the
/// identical number.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The stored binary64: seconds since ``epoch``.
    package let seconds: Double
    /// The instant ``seconds`` counts from.
    package let epoch: DateEpoch

    /// The number `seconds` as a document whose dates count from `epoch` stores it (`-0.0` is `0.0`).
    package init(seconds: Double, epoch: DateEpoch) {
        self.seconds = seconds == 0 ? 0 : seconds
        self.epoch = epoch
    }

    /// The instant `timeIntervalSince1970` seconds after 1970-01-01T00:00:00Z, as that number.
    public init(timeIntervalSince1970: Double) {
        self.init(seconds: timeIntervalSince1970, epoch: .unix)
    }

    /// The instant `timeIntervalSinceReferenceDate` seconds after 2001-01-01T00:00:00Z, as that
    /// number.
    public init(timeIntervalSinceReferenceDate: Double) {
        self.init(seconds: timeIntervalSinceReferenceDate, epoch: .reference)
    }

    /// The instant `date` stands for, exactly (a `Date` counts seconds since 2001).
    public init(_ date: Date) {
        self.init(seconds: date.timeIntervalSinceReferenceDate, epoch: .reference)
    }

    /// Seconds since 1970-01-01T00:00:00Z: the stored number when the timestamp counts from 1970,
    /// else the binary64 nearest to the instant.
    public var timeIntervalSince1970: Double { seconds(in: .unix) }

    /// Seconds since 2001-01-01T00:00:00Z: the stored number when the timestamp counts from 2001,
    /// else the binary64 nearest to the instant.
    public var timeIntervalSinceReferenceDate: Double { seconds(in: .reference) }

    /// The instant as a Foundation `Date`: exact for a timestamp that counts from 2001 (every date a
    /// version 4 document stores, unless it was upgraded with older dates), else the nearest `Date`.
    public var date: Date { Date(timeIntervalSinceReferenceDate: timeIntervalSinceReferenceDate) }

    /// The binary64 nearest to this instant in seconds since `target` (the number itself when it
    /// counts from `target`): one correctly rounded addition of two exact numbers.
    package func seconds(in target: DateEpoch) -> Double {
        guard target != epoch, seconds.isFinite else { return seconds }
        let converted = seconds + Double(epoch.rawValue - target.rawValue)
        return converted == 0 ? 0 : converted
    }

    /// Whether ``seconds(in:)`` is this very instant, with no rounding (always for its own epoch).
    package func isExact(in target: DateEpoch) -> Bool {
        guard target != epoch, seconds.isFinite else { return true }
        return Self.twoSum(seconds, Double(epoch.rawValue - target.rawValue)).error == 0
    }

    /// The same instant counted from `target`, when that epoch's binary64 holds it exactly.
    package func exactly(in target: DateEpoch) -> Timestamp? {
        isExact(in: target) ? Timestamp(seconds: seconds(in: target), epoch: target) : nil
    }

    /// `a + b` rounded, and what the rounding left out (Knuth's TwoSum: exact for finite sums).
    private static func twoSum(_ a: Double, _ b: Double) -> (sum: Double, error: Double) {
        let sum = a + b
        let bPart = sum - a
        let aPart = sum - bPart
        return (sum, (a - aPart) + (b - bPart))
    }

    /// The instant exactly, as seconds since 2001 in two binary64s (`high` the nearest, `low` the
    /// rest), so that timestamps of either epoch compare and hash by the instant alone.
    private var instant: (high: Double, low: Double) {
        guard epoch == .unix, seconds.isFinite else { return (seconds, 0) }
        let (sum, error) = Self.twoSum(seconds, -Double(DateEpoch.reference.rawValue))
        return (sum == 0 ? 0 : sum, error == 0 ? 0 : error)
    }

    public static func == (a: Timestamp, b: Timestamp) -> Bool {
        let (x, y) = (a.instant, b.instant)
        return x.high == y.high && x.low == y.low
    }

    public func hash(into hasher: inout Hasher) {
        let (high, low) = instant
        hasher.combine(high)
        hasher.combine(low)
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        let (x, y) = (a.instant, b.instant)
        return x.high < y.high || (x.high == y.high && x.low < y.low)
    }

    /// The first storable instant: 0000-01-01T00:00:00Z (proleptic Gregorian).
    public static let earliest = Timestamp(timeIntervalSince1970: -62_167_219_200)
    /// The end of the storable range, itself excluded: 10000-01-01T00:00:00Z.
    public static let end = Timestamp(timeIntervalSince1970: 253_402_300_800)

    /// The first storable instant and the end of the range in seconds since `epoch` (whole
    /// numbers, exact in binary64).
    package static func range(in epoch: DateEpoch) -> (earliest: Int64, end: Int64) {
        (-62_167_219_200 - epoch.rawValue, 253_402_300_800 - epoch.rawValue)
    }

    /// Whether a package can store this instant: finite, from 0000-01-01T00:00:00Z up to but
    /// excluding 10000-01-01T00:00:00Z.
    public var isStorable: Bool {
        let (earliest, end) = Self.range(in: epoch)
        return seconds >= Double(earliest) && seconds < Double(end)
    }

    /// Why this instant cannot be stored, or nil.
    var rangeProblem: String? {
        if seconds.isNaN { return "not a number" }
        if !seconds.isFinite { return "infinite" }
        if !isStorable { return "outside the years 0000 to 9999" }
        return nil
    }

    /// The canonical text (spec 7.4): ISO 8601 in UTC, `YYYY-MM-DDTHH:MM:SS.fffZ`, with at least
    /// three fractional digits and as many more as it takes to give back this exact number in its
    /// epoch. Outside the storable range it is the number of seconds since 1970, as Swift prints it.
    public var description: String {
        guard isStorable else { return timeIntervalSince1970.description }
        // Most dates are whole milliseconds: one multiplication and a check that it is exact.
        // (In range, one unit in the last place is below 0.1 ms, so at most one three-digit
        // fraction converts to this number, and it is the shortest one padded to three digits.)
        let milliseconds = (seconds * 1000).rounded()
        if milliseconds / 1000 == seconds {
            let (days, dayMilliseconds) = (Int64(milliseconds) + epoch.rawValue * 1000).floorDivided(
                by: 86_400_000)
            var fraction = [UInt8]()
            var rest = dayMilliseconds % 1000
            for _ in 0..<3 {
                fraction.insert(UInt8(ascii: "0") + UInt8(rest % 10), at: 0)
                rest /= 10
            }
            return Self.format(days: days, secondOfDay: dayMilliseconds / 1000, fraction: fraction)
        }
        // Otherwise the exact decimal of the shortest text that converts back to this number, moved
        // to 1970 by adding the epoch's whole seconds to its floor.
        guard let exact = DecimalNumber(shortest: seconds), let (floor, digits) = exact.floorAndFraction
        else { return timeIntervalSince1970.description }
        var fraction = digits
        while fraction.count < 3 { fraction.append(UInt8(ascii: "0")) }
        let (days, secondOfDay) = (floor + epoch.rawValue).floorDivided(by: 86_400)
        return Self.format(days: days, secondOfDay: secondOfDay, fraction: fraction)
    }

    /// `YYYY-MM-DDTHH:MM:SS.<fraction>Z` for a day count since 1970-01-01.
    static func format(days: Int64, secondOfDay: Int64, fraction: [UInt8]) -> String {
        let (year, month, day) = civil(fromDays: days)
        var out = [UInt8]()
        out.reserveCapacity(21 + fraction.count)
        func digits(_ value: Int64, _ count: Int) {
            var divisor: Int64 = 1
            for _ in 1..<count { divisor *= 10 }
            var rest = value
            if rest < 0 {
                out.append(UInt8(ascii: "-"))
                rest = -rest
            }
            while divisor > 10 && rest >= divisor * 10 { divisor *= 10 }
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
                divisor /= 10
            }
        }
        digits(year, 4)
        out.append(UInt8(ascii: "-"))
        digits(month, 2)
        out.append(UInt8(ascii: "-"))
        digits(day, 2)
        out.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3600, 2)
        out.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2)
        out.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2)
        if !fraction.isEmpty {
            out.append(UInt8(ascii: "."))
            out += fraction
        }
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The day count since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    // MARK: Parsing

    /// Why a date text was refused.
    enum ParseFailure: Error {
        /// Not the grammar of spec 7.4 at all.
        case syntax
        /// The grammar, but a field out of its range: the message says which.
        case field(String)
        /// A valid text for an instant a package cannot store.
        case range(String)
    }

    /// Parses a date in the text forms of spec 7.4: ISO 8601 (`2026-11-30`,
    /// `2026-11-30T10:00:00.25Z`, `2026-11-30 11:00+01:00`, …) or seconds since 1970 as a decimal
    /// number. The exact value the text denotes is converted once to the nearest binary64 of
    /// seconds since 2001, the epoch of a new document; it must be storable. Returns nil when the
    /// text is not a date.
    public init?(parsing text: String) {
        guard case .success(let timestamp) = Self.parse(text, epoch: .reference) else { return nil }
        self = timestamp
    }

    /// Parses `text` (spec 7.4) into the binary64 nearest to it in seconds since `epoch`: the
    /// exact instant the text denotes, rounded once.
    static func parse(_ text: String, epoch: DateEpoch) -> Result<Timestamp, ParseFailure> {
        let exact: (floor: Int64, fraction: [UInt8])
        switch parseISO8601(text) {
        case .success(let value): exact = value
        case .failure(.syntax):
            // Seconds since 1970, as a decimal number.
            guard let number = DecimalNumber(text) else { return .failure(.syntax) }
            guard epoch != .unix, let split = number.floorAndFraction else {
                // Counted from 1970, or far outside the range (the check below refuses it).
                return checked(number.double, epoch: epoch, text: text)
            }
            exact = split
        case .failure(let failure): return .failure(failure)
        }
        // The exact number of seconds since the epoch: the epoch's whole seconds off the floor.
        let floor = exact.floor - epoch.rawValue
        var decimal = String(floor)
        if !exact.fraction.isEmpty {
            // floor + 0.fraction, written as one decimal number.
            if floor >= 0 {
                decimal += "." + String(decoding: exact.fraction, as: UTF8.self)
            } else {
                let complement = Self.complement(exact.fraction)
                let number = DecimalNumber(
                    isNegative: false, digits: Array(String(-floor - 1).utf8) + complement,
                    exponent: -complement.count)
                decimal = "-" + number.scientificText
            }
        }
        guard let seconds = Double(decimal) else { return .failure(.syntax) }
        if seconds >= Double(range(in: epoch).end) {
            // 9999-12-31T23:59:59.99999999Z: in the calendar's range, but it rounds up to the end.
            return .failure(.range("rounds up to 10000-01-01T00:00:00Z, past the last storable instant"))
        }
        return checked(seconds, epoch: epoch, text: text)
    }

    /// `1 - 0.digits` as as many digits (the input has no trailing zeros).
    private static func complement(_ digits: [UInt8]) -> [UInt8] {
        var trimmed = digits
        while trimmed.last == UInt8(ascii: "0") { trimmed.removeLast() }
        guard !trimmed.isEmpty else { return [] }
        var out = trimmed.map { UInt8(ascii: "9") - ($0 - 0x30) }
        out[out.count - 1] += 1
        return out
    }

    private static func checked(_ seconds: Double, epoch: DateEpoch, text: String) -> Result<
        Timestamp, ParseFailure
    > {
        let timestamp = Timestamp(seconds: seconds, epoch: epoch)
        if let problem = timestamp.rangeProblem {
            return .failure(.range(problem))
        }
        return .success(timestamp)
    }

    /// The ISO 8601 grammar of spec 7.4, as an exact number of seconds: the floor and the digits
    /// of the fraction.
    private static func parseISO8601(_ text: String) -> Result<
        (floor: Int64, fraction: [UInt8]), ParseFailure
    > {
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
        func take(_ characters: String) -> Bool {
            guard let first = bytes.first, characters.utf8.contains(first) else { return false }
            bytes = bytes.dropFirst()
            return true
        }
        // Years before 0000 or after 9999 (ISO 8601's expanded form): valid text, not storable.
        let signed = bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+")
        let yearDigits = bytes.dropFirst(signed ? 1 : 0).prefix(while: { (0x30...0x39).contains($0) }).count
        if (signed || yearDigits > 4) && yearDigits >= 4
            && bytes.dropFirst((signed ? 1 : 0) + yearDigits).first == UInt8(ascii: "-")
        {
            return .failure(.range("outside the years 0000 to 9999"))
        }
        guard let year = number(4), take("-"), let month = number(2), take("-"), let day = number(2) else {
            return .failure(.syntax)
        }
        var secondOfDay: Int64 = 0
        var offset: Int64 = 0
        var fraction: [UInt8] = []
        var fields: [String] = []
        if take("Tt ") {
            guard let hour = number(2), take(":"), let minute = number(2) else { return .failure(.syntax) }
            if hour > 23 { fields.append("hour \(hour) is not 00–23") }
            if minute > 59 { fields.append("minute \(minute) is not 00–59") }
            secondOfDay = hour * 3600 + minute * 60
            if take(":") {
                guard let second = number(2) else { return .failure(.syntax) }
                if second == 60 {
                    fields.append("second 60 (a leap second) cannot be stored: the time scale has none")
                } else if second > 59 {
                    fields.append("second \(second) is not 00–59")
                }
                secondOfDay += second
                if take(".,") {
                    let digits = bytes.prefix(while: { (0x30...0x39).contains($0) })
                    guard !digits.isEmpty else { return .failure(.syntax) }
                    fraction = Array(digits)
                    bytes = bytes.dropFirst(digits.count)
                    while fraction.last == UInt8(ascii: "0") { fraction.removeLast() }
                }
            }
            if take("Zz") {
                // UTC
            } else if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                bytes = bytes.dropFirst()
                guard let hours = number(2) else { return .failure(.syntax) }
                _ = take(":")
                guard let minutes = number(2) else { return .failure(.syntax) }
                if hours > 23 { fields.append("offset hours \(hours) are not 00–23") }
                if minutes > 59 { fields.append("offset minutes \(minutes) are not 00–59") }
                offset = (hours * 3600 + minutes * 60) * (sign == UInt8(ascii: "+") ? 1 : -1)
            }
        }
        guard bytes.isEmpty else { return .failure(.syntax) }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthDays: [Int64] = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        if !(1...12).contains(month) {
            fields.insert("month \(month) is not 01–12", at: 0)
        } else if day < 1 || day > monthDays[Int(month) - 1] {
            fields.insert(
                "day \(day) is not 01–\(monthDays[Int(month) - 1]) in \(String(format: "%04d", year))-"
                    + String(format: "%02d", month),
                at: 0)
        }
        guard fields.isEmpty else { return .failure(.field(fields.joined(separator: "; "))) }
        let days = Self.days(year: year, month: month, day: day)
        return .success((days * 86_400 + secondOfDay - offset, fraction))
    }
}

extension Int64 {
    /// Quotient rounded towards minus infinity, and the non-negative remainder.
    func floorDivided(by divisor: Int64) -> (Int64, Int64) {
        let quotient = self / divisor
        let remainder = self % divisor
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }
}
