import DeckKit
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// A `Date` saved reads back equal, bit for bit, as in Core Data and SwiftData (issue 21, item 9):
/// a new document stores seconds since 2001, the `Date`'s own number (spec 7.1).
@Suite(.timed) struct DateRoundTripTests {
    final class Event: ModelObject {
        @Attribute var name = ""
        @Attribute var at = Date(timeIntervalSinceReferenceDate: 0)
        @Attribute var until: Date? = nil
        required init() {}
        init(name: String, at: Date, until: Date?) {
            self.name = name
            self.at = at
            self.until = until
        }
    }

    static let seed = TestSeed("DateRoundTripTests", filter: "DateRoundTripTests")

    /// Today's dates (like `Date.now`), any date in the range, and the range's edges.
    static func dates() -> [Date] {
        var generator = seed.generator()
        var dates: [Date] = [
            Date(timeIntervalSinceReferenceDate: -63_145_526_400),
            Date(timeIntervalSinceReferenceDate: Double(252_423_993_600).nextDown),
            Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -0.1),
            Date(timeIntervalSinceReferenceDate: .leastNonzeroMagnitude), Date(timeIntervalSince1970: 0),
            Date(timeIntervalSince1970: -0.1), .distantPast, .distantFuture, Date(),
        ]
        for _ in 0..<300 {
            dates.append(
                Date(timeIntervalSinceReferenceDate: Double.random(in: 7e8..<9e8, using: &generator)))
            dates.append(
                Date(timeIntervalSinceReferenceDate: Double.random(in: -6.3e10..<2.5e11, using: &generator)))
        }
        return dates
    }

    static func check(_ read: [Event], _ dates: [Date]) {
        #expect(read.count == dates.count)
        for event in read {
            guard let index = Int(event.name) else { continue }
            let date = dates[index]
            #expect(
                event.at.timeIntervalSinceReferenceDate.bitPattern
                    == date.timeIntervalSinceReferenceDate.bitPattern,
                "\(date.timeIntervalSinceReferenceDate) read as \(event.at.timeIntervalSinceReferenceDate), \(seed)"
            )
            #expect(event.at == date && event.until == date, "\(seed)")
        }
    }

    @Test func datesRoundTripThroughASavedDocument() throws {
        let dates = Self.dates()
        let directory = try ScratchDirectory()
        let url = directory.appending("events.deck")
        do {
            let container = try ModelContainer(for: Event.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            for (index, date) in dates.enumerated() {
                context.insert(Event(name: String(index), at: date, until: date))
            }
            try context.save()
        }
        // A fresh container reads the store, nothing cached.
        let container = try ModelContainer(
            for: Event.self, configurations: ModelConfiguration(url: url, allowsSave: false))
        let context = ModelContext(container)
        Self.check(try context.fetch(FetchDescriptor<Event>()), dates)
        // A predicate finds a date by equality, exactly.
        for date in dates.prefix(40) {
            let found = try context.fetch(FetchDescriptor<Event>(predicate: #Predicate { $0.at == date }))
            #expect(found.count == dates.filter { $0 == date }.count, "\(date), \(Self.seed)")
        }
    }

    @Test func datesRoundTripInMemory() throws {
        let dates = Self.dates()
        let container = try ModelContainer(
            for: Event.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        do {
            let context = ModelContext(container)
            for (index, date) in dates.enumerated() {
                context.insert(Event(name: String(index), at: date, until: date))
            }
            try context.save()
        }
        Self.check(try ModelContext(container).fetch(FetchDescriptor<Event>()), dates)
    }
}
