import DeckKit
import DeckSQLite
import DeckStore
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// A fetch of every model sorted by number properties reads the rows unsorted and orders the
/// models afterwards (`RowOrder`): its order must be the store's, which a fetch with a limit still
/// gets from SQLite, for every kind of number, nulls, ties, subentities and unsaved changes.
@Suite("Fetch order", .timed)
struct FetchOrderTests {
    class Reading: ModelObject {
        @Attribute var count = 0
        @Attribute var level = 0.0
        @Attribute var when = Date(timeIntervalSince1970: 0)
        @Attribute var done = false
        @Attribute var maybe: Int? = nil
        @Attribute var seen: Date? = nil
        @Attribute var label = ""
        required init() {}
    }

    final class Alarm: Reading {
        @Attribute var loud = false
        required init() {}
    }

    static let seed = TestSeed("FetchOrderTests", filter: "FetchOrderTests")

    /// Gives `reading` random values from small ranges, so that many tie.
    static func randomize(_ reading: Reading, _ generator: inout SeededGenerator) {
        reading.count = [Int.min, -1, 0, 0, 1, 2, Int.max].randomElement(using: &generator)!
        reading.level = [-0.0, 0, 0.5, -2.25, 1e300, -1e-300].randomElement(using: &generator)!
        reading.when = Date(timeIntervalSince1970: Double(Int.random(in: -3...3, using: &generator)) * 0.5)
        reading.done = Bool.random(using: &generator)
        reading.maybe = Bool.random(using: &generator) ? nil : Int.random(in: -2...2, using: &generator)
        reading.seen =
            Bool.random(using: &generator)
            ? nil : Date(timeIntervalSince1970: Double(Int.random(in: 0...2, using: &generator)))
        reading.label = "reading \(Int.random(in: 0..<1000, using: &generator))"
    }

    /// The sort descriptors the test tries: each number property alone, each way, and some pairs
    /// and triples (a `Bool` is not `Comparable`, so no `SortDescriptor` sorts by one).
    static let sorts: [[SortDescriptor<Reading>]] = [
        [SortDescriptor(\.count)], [SortDescriptor(\.count, order: .reverse)],
        [SortDescriptor(\.level)], [SortDescriptor(\.level, order: .reverse)],
        [SortDescriptor(\.when)], [SortDescriptor(\.when, order: .reverse)],
        [SortDescriptor(\.maybe)], [SortDescriptor(\.maybe, order: .reverse)],
        [SortDescriptor(\.seen)], [SortDescriptor(\.seen, order: .reverse)],
        [SortDescriptor(\.seen), SortDescriptor(\.maybe, order: .reverse)],
        [SortDescriptor(\.when, order: .reverse), SortDescriptor(\.level), SortDescriptor(\.seen)],
        [SortDescriptor(\.maybe), SortDescriptor(\.count, order: .reverse), SortDescriptor(\.when)],
    ]

    /// Checks that every sort gives the store's order in `context`, for `Reading`s and `Alarm`s,
    /// with and without a predicate, with and without the unsaved changes.
    func checkOrders(in context: ModelContext) throws {
        for sort in Self.sorts {
            for predicate in [nil, #Predicate<Reading> { $0.count >= 0 }] {
                for includePendingChanges in [true, false] {
                    var descriptor = FetchDescriptor<Reading>(predicate: predicate, sortBy: sort)
                    descriptor.includePendingChanges = includePendingChanges
                    var sortedByStore = descriptor
                    sortedByStore.fetchLimit = 1_000_000
                    let fetched = try context.fetch(descriptor)
                    let expected = try context.fetch(sortedByStore)
                    #expect(fetched.count == expected.count)
                    #expect(
                        zip(fetched, expected).allSatisfy { $0 === $1 },
                        "\(Self.seed): \(sort.count) keys, predicate \(predicate != nil), pending \(includePendingChanges)"
                    )
                }
            }
        }
        var alarmsDescriptor = FetchDescriptor<Alarm>(
            sortBy: [SortDescriptor(\.level), SortDescriptor(\.count, order: .reverse)])
        let alarms = try context.fetch(alarmsDescriptor)
        alarmsDescriptor.fetchLimit = 1_000_000
        let alarmsByStore = try context.fetch(alarmsDescriptor)
        #expect(alarms.count == alarmsByStore.count)
        #expect(zip(alarms, alarmsByStore).allSatisfy { $0 === $1 })
    }

    @Test("Every number sort gives the store's order, saved and unsaved models alike")
    func ordersAgree() throws {
        var generator = Self.seed.generator()
        let container = try ModelContainer(
            for: Reading.self, Alarm.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        var saved: [Reading] = []
        for index in 0..<300 {
            let reading = index % 4 == 0 ? Alarm() : Reading()
            Self.randomize(reading, &generator)
            (reading as? Alarm)?.loud = Bool.random(using: &generator)
            context.insert(reading)
            saved.append(reading)
        }
        try context.save()
        // Fresh instances, made by the fetches themselves.
        try checkOrders(in: ModelContext(container))
        // Unsaved changes: new models, changed values (which move the changed models), deletions.
        for _ in 0..<30 {
            let reading = Reading()
            Self.randomize(reading, &generator)
            context.insert(reading)
        }
        for reading in saved.prefix(40) { Self.randomize(reading, &generator) }
        for reading in saved.suffix(20) { context.delete(reading) }
        try checkOrders(in: context)
    }

    @Test("The store sorts what the models cannot: text, a limit, an offset")
    func storeStillSorts() throws {
        let container = try ModelContainer(
            for: Reading.self, Alarm.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        for index in 0..<5 {
            let reading = Reading()
            reading.count = index % 2
            reading.label = "reading \(4 - index)"
            context.insert(reading)
        }
        try context.save()
        /// The SELECT statements this thread runs while `body` runs.
        func selects(_ body: () throws -> Void) rethrows -> [String] {
            try SQLTrace.statements(ofThisThreadDuring: body).1.filter { $0.hasPrefix("SELECT r._pk") }
        }
        let byCount = [SortDescriptor<Reading>(\.count, order: .reverse)]
        var fetched: [Reading] = []
        let unsorted = try selects { fetched = try context.fetch(FetchDescriptor(sortBy: byCount)) }
        #expect(unsorted.count == 1 && !unsorted[0].contains("ORDER BY r.\"count\""))
        #expect(fetched.map(\.count) == [1, 1, 0, 0, 0])
        #expect(fetched.map(\.label) == ["reading 3", "reading 1", "reading 4", "reading 2", "reading 0"])
        var limited = FetchDescriptor<Reading>(sortBy: byCount)
        limited.fetchLimit = 2
        var offset = FetchDescriptor<Reading>(sortBy: byCount)
        offset.fetchOffset = 1
        for descriptor in [FetchDescriptor<Reading>(sortBy: [SortDescriptor(\.label)]), limited, offset] {
            let sorted = try selects { _ = try context.fetch(descriptor) }
            #expect(sorted.count == 1 && sorted[0].contains("ORDER BY"))
        }
    }
}
