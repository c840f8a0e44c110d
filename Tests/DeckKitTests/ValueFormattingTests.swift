import Foundation
import Testing

@testable import DeckKit

/// The hand-written ISO 8601 formatter agrees with Foundation's everywhere it is used.
@Suite struct ValueFormattingTests {
    @Test func iso8601MatchesFoundation() {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
        var generator = SystemRandomNumberGenerator()
        // Foundation switches to the Julian calendar before 1582 and loses milliseconds to
        // floating point far from 1970; within 1600–2400 both must agree to the millisecond.
        var samples: [Double] = [0, -0.001, -1, 1_800_000_000, 951_782_400, 4_107_542_400, 1_795_996_800.25]
        for _ in 0..<5_000 {
            samples.append(
                Double(Int64.random(in: -11_676_096_000_000...13_569_465_600_000, using: &generator)) / 1000)
        }
        for seconds in samples {
            let date = Date(timeIntervalSince1970: seconds)
            let ours = Value.iso8601(date)
            // Same calendar fields; milliseconds exact (Foundation's own output can be 1 ms low,
            // truncating 0.45 stored as 0.4499…).
            let theirs = date.formatted(style)
            #expect(ours.prefix(20) == theirs.prefix(20), "\(seconds): \(ours) vs \(theirs)")
            let parsed = try? style.parse(ours)
            #expect(
                parsed.map { abs($0.timeIntervalSince1970 - seconds) < 0.000_6 } == true,
                "\(seconds): \(ours)")
        }
    }

    @Test func iso8601IsProlepticGregorianAtTheEdges() {
        #expect(Value.iso8601(Date(timeIntervalSince1970: -62_135_596_800)) == "0001-01-01T00:00:00.000Z")
        #expect(Value.iso8601(Date(timeIntervalSince1970: 253_402_300_799)) == "9999-12-31T23:59:59.000Z")
        #expect(Value.iso8601(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00.000Z")
    }

    @Test func datesWithoutAZoneAreUTC() throws {
        #expect(Value.parseDate("2026-11-30") == Date(timeIntervalSince1970: 1_795_996_800))
        #expect(Value.parseDate("2026-11-30T10:00:00") == Date(timeIntervalSince1970: 1_796_032_800))
        #expect(Value.parseDate("2026-11-30T12:00:00+02:00") == Date(timeIntervalSince1970: 1_796_032_800))
        #expect(Value.parseDate("2026-11-30T10:00:00.250Z") == Date(timeIntervalSince1970: 1_796_032_800.25))
        #expect(Value.parseDate("30/11/2026") == nil)
        #expect(Value.parseDate("2026-02-29") == nil)
        #expect(Value.parseDate("2026-11-30T25:00") == nil)
        #expect(Value.parseDate("2026-11-30T10:00:00+0200") == Date(timeIntervalSince1970: 1_796_025_600))
    }

    /// Found by FuzzWhere: dates before 1582 moved by days between printing and parsing.
    @Test(arguments: [
        "1500-01-01", "0003-01-03", "1582-10-14", "0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z",
    ])
    func datesRoundTripThroughText(text: String) throws {
        let date = try #require(Value.parseDate(text))
        let printed = Value.iso8601(date)
        #expect(
            Value.parseDate(printed) == date
                || abs((Value.parseDate(printed)?.timeIntervalSince1970 ?? 0) - date.timeIntervalSince1970)
                    < 0.000_5
        )
        #expect(printed.hasPrefix(String(text.prefix(10))))
    }

    /// Found by FuzzSchema: a date default written as millisecond text came back different.
    @Test(arguments: [-62_135_596_800.0, -14_831_769_600.0, 0.1234, 1_795_996_800.000_25])
    func dateDefaultsSurviveTheSchemaJSON(seconds: Double) throws {
        let schema = Schema(entities: [
            Entity(
                "A",
                attributes: [Attribute("t", .date, defaultValue: .date(Date(timeIntervalSince1970: seconds)))]
            )
        ])
        let data = try JSONEncoder().encode(schema)
        let decoded = try Schema(json: data, source: "test")
        #expect(decoded == schema)
    }
}
