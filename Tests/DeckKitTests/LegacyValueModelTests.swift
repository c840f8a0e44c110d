import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// The app whose document Tests/Fixtures/legacy/Legacy.deck is (written by the Deck of commit
/// 55eba36, holding legacy values, spec 7.7).
enum LegacyReadingsV1: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(1, 0, 0) }
    static var models: [any PersistentModel.Type] { [Reading.self] }

    struct Payload: Codable, Equatable {
        var ok: Bool?
    }

    final class Reading: ModelObject {
        @Attribute var label = ""
        @Attribute var taken: Date? = nil
        @Attribute var amount: Decimal? = nil
        @Attribute var extra: [String: String]? = nil
        @Attribute var payload = Payload()
        required init() {}
    }
}

/// The typed layer reads legacy values into the properties that hold them, and names the record
/// and attribute of one a property cannot hold, as a legacy value, not corruption.
@Suite(.timed) struct LegacyValueModelTests {
    static func fixture(in directory: ScratchDirectory) throws -> URL {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/legacy/Legacy.deck")
        let url = directory.appending("Legacy.deck")
        try FileManager.default.copyItem(at: source, to: url)
        return url
    }

    @Test func infiniteDatesAnd39DigitDecimalsReadExactly() throws {
        let directory = try ScratchDirectory()
        let container = try ModelContainer(
            for: LegacyReadingsV1.schema,
            configurations: [ModelConfiguration(url: try Self.fixture(in: directory))])
        let context = ModelContext(container)
        typealias Reading = LegacyReadingsV1.Reading
        let down = try context.fetch(FetchDescriptor<Reading>(predicate: #Predicate { $0.label == "down" }))
        try #require(down.count == 1)
        #expect(down[0].taken == Date(timeIntervalSince1970: -.infinity))
        #expect(down[0].amount == Decimal(string: "-1.23456789012345678901234567890123456789"))
        #expect(down[0].payload == LegacyReadingsV1.Payload(ok: true))
    }

    @Test func aSaveOfOtherPropertiesKeepsLegacyValues() throws {
        let directory = try ScratchDirectory()
        let url = try Self.fixture(in: directory)
        let container = try ModelContainer(
            for: LegacyReadingsV1.schema, configurations: [ModelConfiguration(url: url)])
        let context = ModelContext(container)
        typealias Reading = LegacyReadingsV1.Reading
        let down = try context.fetch(FetchDescriptor<Reading>(predicate: #Predicate { $0.label == "down" }))
        try #require(down.count == 1)
        down[0].label = "down again"
        try context.save()
        let again = ModelContext(container)
        let reread = try again.fetch(
            FetchDescriptor<Reading>(predicate: #Predicate { $0.label == "down again" }))
        #expect(reread.first?.taken == Date(timeIntervalSince1970: -.infinity))
        #expect(reread.first?.amount == Decimal(string: "-1.23456789012345678901234567890123456789"))
    }

    @Test func aLegacyValueAPropertyCannotHoldIsNamedNotCorruption() throws {
        let directory = try ScratchDirectory()
        let container = try ModelContainer(
            for: LegacyReadingsV1.schema,
            configurations: [ModelConfiguration(url: try Self.fixture(in: directory))])
        let context = ModelContext(container)
        typealias Reading = LegacyReadingsV1.Reading
        // Record #1's required payload is the JSON text null: no value, which a Payload cannot be.
        #expect {
            try context.fetch(FetchDescriptor<Reading>(predicate: #Predicate { $0.label == "up" }))
        } throws: { error in
            guard case .invalidValue(let entity, let property, let reason) = error as? DeckError else {
                return false
            }
            return entity == "Reading #1" && property == "payload" && reason.contains("legacy value")
        }
    }
}
