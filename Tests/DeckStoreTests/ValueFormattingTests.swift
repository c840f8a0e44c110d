import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// Dates (spec 7.4): the canonical text, the grammar the parser accepts, the range, and that
/// printing and parsing are exact inverses.
@Suite(.timed) struct ValueFormattingTests {
    /// The binary64 nearest to a date text in seconds since 1970 (the epoch of documents before
    /// format 4, and of the text's numbers).
    private func seconds(_ text: String) -> Double? {
        guard case .success(let timestamp) = Timestamp.parse(text, epoch: .unix) else { return nil }
        return timestamp.seconds
    }
    /// The same in seconds since 2001, the epoch of a new document.
    private func referenceSeconds(_ text: String) -> Double? {
        Timestamp(parsing: text).map { $0.epoch == .reference ? $0.seconds : .nan }
    }

    @Test func canonicalTextMatchesFoundationsCalendarFields() {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
        let seed = TestSeed("ValueFormattingTests.canonicalText", filter: "ValueFormattingTests")
        var generator = seed.generator()
        // Foundation switches to the Julian calendar before 1582; within 1600–2400 the calendar
        // fields (date, hours, minutes, seconds) must agree.
        var samples: [Double] = [0, -0.001, -1, 1_800_000_000, 951_782_400, 4_107_542_400, 1_795_996_800.25]
        for _ in 0..<TestSweep.count(5_000, sampled: 1_000) {
            samples.append(
                Double(Int64.random(in: -11_676_096_000_000...13_569_465_600_000, using: &generator)) / 1000)
        }
        for seconds in samples {
            let ours = Timestamp(timeIntervalSince1970: seconds).description
            let theirs = Date(timeIntervalSince1970: seconds).formatted(style)
            #expect(ours.prefix(19) == theirs.prefix(19), "\(seconds): \(ours) vs \(theirs), \(seed)")
        }
    }

    @Test func edgesOfTheRangeAndTheCalendar() {
        #expect(Timestamp.earliest.description == "0000-01-01T00:00:00.000Z")
        #expect(seconds("0000-01-01") == -62_167_219_200)
        #expect(seconds("10000-01-01") == nil)
        #expect(seconds("9999-12-31T23:59:59.999Z") == 253_402_300_799.999)
        let last = Timestamp.end.timeIntervalSince1970.nextDown
        #expect(Timestamp(timeIntervalSince1970: last).description == "9999-12-31T23:59:59.99997Z")
        #expect(Timestamp(timeIntervalSince1970: -62_135_596_800).description == "0001-01-01T00:00:00.000Z")
        // Date.distantPast is 0001-01-01 in the Julian calendar: two days earlier in Gregorian.
        #expect(Timestamp(Date.distantPast).description == "0000-12-30T00:00:00.000Z")
        #expect(Timestamp(Date.distantFuture).description == "4001-01-01T00:00:00.000Z")
        #expect(Timestamp(timeIntervalSince1970: 951_782_400).description == "2000-02-29T00:00:00.000Z")
        // Year 0 is a leap year (proleptic Gregorian, astronomical numbering); 1900 is not.
        #expect(seconds("0000-02-29") != nil)
        #expect(seconds("0000-03-01")! - seconds("0000-02-28")! == 2 * 86_400)
        #expect(seconds("1900-02-29") == nil)
        #expect(seconds("2000-02-29") != nil)
        #expect(seconds("-0001-12-31") == nil)
        #expect(seconds("+2026-11-30") == nil)
    }

    @Test func fractionalSecondsAreExact() {
        // The text's exact decimal value, converted once: never a sum of rounded pieces.
        #expect(seconds("1970-01-01T00:00:00.1Z") == 0.1)
        #expect(seconds("1969-12-31T23:59:59.9Z") == -0.1)
        #expect(
            seconds("1970-01-01T00:00:00.1000000000000000055511151231257827021181583404541015625Z") == 0.1)
        #expect(seconds("2026-11-30T10:00:00.123456789Z") == 1_796_032_800.123456789)
        #expect(seconds("0000-01-01T00:00:00.1Z") == -62_167_219_199.9)
        #expect(seconds("1969-12-31T23:59:59.999999999999Z") == -1e-12)
        #expect(Timestamp(timeIntervalSince1970: 0.1).description == "1970-01-01T00:00:00.100Z")
        #expect(Timestamp(timeIntervalSince1970: -0.1).description == "1969-12-31T23:59:59.900Z")
        #expect(Timestamp(timeIntervalSince1970: 1e-7).description == "1970-01-01T00:00:00.0000001Z")
        #expect(
            Timestamp(timeIntervalSince1970: 1_796_032_800.123456789).description
                == "2026-11-30T10:00:00.1234567Z")
        // The value the tester saw: 0.1 through Foundation's Date, which counts from 2001.
        #expect(Timestamp(timeIntervalSince1970: 0.1).timeIntervalSince1970 == 0.1)
    }

    @Test(arguments: [
        ("2026-11-30", 1_795_996_800.0),
        ("2026-11-30T10:00", 1_796_032_800),
        ("2026-11-30T10:00:00", 1_796_032_800),
        ("2026-11-30T10:00:00Z", 1_796_032_800),
        ("2026-11-30t10:00:00z", 1_796_032_800),
        ("2026-11-30 10:00:00Z", 1_796_032_800),
        ("2026-11-30T12:00:00+02:00", 1_796_032_800),
        ("2026-11-30T12:00+0200", 1_796_032_800),
        ("2026-11-30T08:00:00-02:00", 1_796_032_800),
        ("2026-11-30T10:00:00-00:00", 1_796_032_800),
        ("2026-11-30T10:00:00.250Z", 1_796_032_800.25),
        ("2026-11-30T10:00:00,25Z", 1_796_032_800.25),
        ("1796032800.25", 1_796_032_800.25),
        ("-1.5e3", -1_500),
        ("0", 0),
        ("-0", 0),
    ])
    func acceptedForms(text: String, expected: Double) throws {
        let value = try #require(seconds(text), "\(text)")
        #expect(value.bitPattern == expected.bitPattern, "\(text)")
    }

    @Test(arguments: [
        "30/11/2026", "2026-02-29", "2026-11-30T25:00", "2026-11-30T24:00:00", "2026-11-30T10:60",
        "2026-11-30T23:59:60Z", "2026-11-31", "2026-13-01", "2026-00-10", "2026-11-30T10", "2026-11-30T",
        "2026-11-30Z", "2026-11-30T10:00:00.", "2026-11-30T10:00:00.5.5", "2026-11-30T10:00:00+2",
        "2026-11-30T10:00:00+24:00", "2026-11-30T10:00:00 Z", " 2026-11-30", "2026-11-30 ", "26-11-30",
        "２０２６-11-30", "nan", "inf", "-inf", "infinity", "1e400", "0x10", "1_000", "", "1e300",
        "-62167219201", "253402300800", "9999-12-31T23:59:59.99999999Z", "0000-01-01T00:00:00+00:01",
        "10000-01-01", "-0001-01-01T00:00:00Z",
    ])
    func refusedForms(text: String) {
        #expect(seconds(text) == nil, "\(text)")
        #expect(throws: ValueError.self, "\(text)") { try Value(parsing: text, as: .date) }
    }

    @Test func refusalsSayWhy() throws {
        func message(_ text: String) -> String {
            do {
                _ = try Value(parsing: text, as: .date)
                return ""
            } catch {
                return error.description
            }
        }
        #expect(message("2026-11-30T23:59:60Z").contains("leap second"))
        #expect(message("2026-02-29").contains("day 29 is not 01–28 in 2026-02"))
        #expect(message("10000-01-01").contains("outside the years 0000 to 9999"))
        #expect(message("1e300").contains("outside the years 0000 to 9999"))
        #expect(message("9999-12-31T23:59:59.99999999Z").contains("rounds up to 10000-01-01"))
        #expect(message("soon").contains("ISO 8601"))
    }

    /// Printing a stored date and parsing the text back gives the identical binary64, over the
    /// whole range: random bit patterns, whole milliseconds, and the edges.
    @Test func printAndParseAreExactInverses() throws {
        let seed = TestSeed("ValueFormattingTests.printAndParse", filter: "ValueFormattingTests")
        var generator = seed.generator()
        let low = Timestamp.earliest.timeIntervalSince1970
        let high = Timestamp.end.timeIntervalSince1970
        var samples: [Double] = [
            low, low.nextUp, high.nextDown, 0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude,
            .leastNormalMagnitude, 1e-300, -1e-300, 0.1, -0.1, 0.5, -0.5, 1e-7, -1e-7, 86_399.999_999_9,
            -86_400.000_000_1, -62_135_769_600, 64_092_211_200, 951_782_400, 4_107_542_400,
        ]
        for _ in 0..<TestSweep.count(20_000, sampled: 2_000) {
            samples.append(Double.random(in: low..<high, using: &generator))
            samples.append(
                Double(Int64.random(in: -62_167_219_200_000..<253_402_300_800_000, using: &generator)) / 1000)
            // Any bit pattern of the right magnitude: small values have many fractional digits.
            let bits = UInt64.random(in: 0...0x4271_8000_0000_0000, using: &generator)
            let value = Double(bitPattern: bits) * (Bool.random(using: &generator) ? 1 : -1)
            if value >= low && value < high { samples.append(value) }
        }
        for value in samples {
            let text = Timestamp(timeIntervalSince1970: value).description
            let parsed = try #require(seconds(text), "\(value): \(text), \(seed)")
            #expect(
                parsed.bitPattern == (value == 0 ? 0.0 : value).bitPattern,
                "\(value): \(text) → \(parsed), \(seed)")
            #expect(text.hasSuffix("Z") && text.count >= 24, "\(text), \(seed)")
        }
    }

    /// The parser against Foundation's calendar, where both use the Gregorian calendar.
    @Test func calendarArithmeticAgreesWithFoundation() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let seed = TestSeed("ValueFormattingTests.calendar", filter: "ValueFormattingTests")
        var generator = seed.generator()
        for _ in 0..<TestSweep.count(2_000, sampled: 400) {
            let year = Int.random(in: 1600...9999, using: &generator)
            let month = Int.random(in: 1...12, using: &generator)
            let day = Int.random(in: 1...28, using: &generator)
            let hour = Int.random(in: 0...23, using: &generator)
            let minute = Int.random(in: 0...59, using: &generator)
            let second = Int.random(in: 0...59, using: &generator)
            let components = DateComponents(
                year: year, month: month, day: day, hour: hour, minute: minute, second: second)
            let expected = try #require(calendar.date(from: components), "\(seed)").timeIntervalSince1970
            let text = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02dZ", year, month, day, hour, minute, second)
            #expect(seconds(text) == expected.rounded(), "\(text), \(seed)")
        }
    }

    @Test func metadataTimesKeepThreeDigits() {
        #expect(Value.iso8601(Date(timeIntervalSince1970: 1_796_032_800.1234)) == "2026-11-30T10:00:00.123Z")
        #expect(Value.iso8601(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
    }

    /// Found by FuzzSchema: a date default written as millisecond text came back different.
    @Test(arguments: [-62_135_596_800.0, -14_831_769_600.0, 0.1234, 1_795_996_800.000_25, 0.1, -0.1])
    func dateDefaultsSurviveTheSchemaJSON(seconds: Double) throws {
        let schema = StoreSchema(entities: [
            Entity(
                "A",
                attributes: [
                    Attribute("t", .date, defaultValue: .date(Timestamp(timeIntervalSince1970: seconds)))
                ])
        ])
        let data = try JSONEncoder().encode(schema)
        let decoded = try StoreSchema(json: data, source: "test")
        #expect(decoded == schema)
        #expect(try JSONDecoder().decode(StoreSchema.self, from: data) == schema)
    }
}
