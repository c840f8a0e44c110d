import DeckSQLite
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@_spi(Testing) @testable import DeckStore

/// The format version 1 package of Tests/Fixtures/legacy (made by the Deck of commit 55eba36),
/// holding values that Deck accepted then and that later rules refuse: ±infinite and out-of-range
/// dates, 39-digit decimals, the JSON text null in a required attribute and JSON with a member
/// name twice. They are legacy values (spec 7.7): read exactly, valid, kept by an upgrade.
@Suite(.timed) struct LegacyValueTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/legacy/Legacy.deck")

    static func copy(to dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("Legacy.deck")
        try FileManager.default.copyItem(at: fixture, to: url)
        return url
    }

    /// Every cell of the Reading table, as SQLite quotes it (exact bytes and storage classes).
    static func cells(_ url: URL) throws -> [[SQLValue]] {
        let db = try Database(path: url.path + "/store.sqlite", mode: .readOnly)
        defer { db.close() }
        return try db.rows(
            "SELECT _pk, quote(label), quote(taken), quote(amount), quote(extra), quote(payload) FROM Reading ORDER BY _pk"
        )
    }

    @Test func verifyCallsThemLegacyValuesAndThePackageValid() throws {
        try withTestDirectory { dir in
            let url = try Self.copy(to: dir)
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid, "\(report.findings)")
            #expect(!report.findings.contains { $0.severity == .corruption })
            let legacy = report.findings.filter { $0.code == "legacy-value" }
            #expect(legacy.allSatisfy { $0.severity == .legacy })
            #expect(
                Set(legacy.map(\.object)) == [
                    "Reading #1.taken", "Reading #1.amount", "Reading #1.payload", "Reading #2.taken",
                    "Reading #2.amount", "Reading #2.extra", "Reading #3.taken",
                ])
        }
    }

    @Test func theyReadExactlyNeverAsNoValue() throws {
        try withTestDirectory { dir in
            let url = try Self.copy(to: dir)
            let store = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? store.close() }
            let records = try store.read { try $0.fetch(RecordQuery("Reading")) }.sorted { $0.id < $1.id }
            try #require(records.count == 4)
            #expect(records[0].values["taken"] == .date(Timestamp(timeIntervalSince1970: .infinity)))
            #expect(records[1].values["taken"] == .date(Timestamp(timeIntervalSince1970: -.infinity)))
            #expect(records[2].values["taken"] == .date(Timestamp(timeIntervalSince1970: 1e15)))
            let big = try #require(Decimal(string: "123456789012345678901234567890123456789"))
            #expect(records[0].values["amount"] == .decimal(big))
            #expect(records[0].values["amount"]?.description == "123456789012345678901234567890123456789")
            #expect(
                records[1].values["amount"]?.description == "-1.23456789012345678901234567890123456789")
            #expect(records[1].values["extra"] == .json(#"{"unit":"mm","unit":"cm"}"#))
            // The JSON text null is no value, in a required attribute too.
            #expect(records[0].values["payload"] == .null)
            #expect(records[3].values["taken"] == .date(Timestamp(timeIntervalSince1970: 1_796_032_800)))
        }
    }

    @Test func anUpgradeAndAnUpdateOfOtherAttributesKeepThemByteForByte() throws {
        try withTestDirectory { dir in
            let url = try Self.copy(to: dir)
            let before = try Self.cells(url)
            let store = try PackageStore.open(at: url)  // upgrades to the current format
            try store.write { tx in try tx.update("Reading", id: 1, ["label": .string("up again")]) }
            try store.close()
            var after = try Self.cells(url)
            #expect(after[0][1] == .text("'up again'"))
            after[0][1] = before[0][1]
            #expect(after == before)
            let report = try PackageVerifier.verify(at: url)
            #expect(
                report.isValid && report.formatVersion == PackageLayout.formatVersion, "\(report.findings)")
        }
    }

    @Test func writersStillRefuseNewLegacyValues() throws {
        try withTestDirectory { dir in
            let url = try Self.copy(to: dir)
            let store = try PackageStore.open(at: url)
            defer { try? store.close() }
            #expect(throws: DeckError.self) {
                try store.write { tx in
                    try tx.insert(
                        "Reading",
                        ["label": .string("x"), "payload": .json("1"), "taken": .double(.infinity)])
                }
            }
            #expect(throws: DeckError.self) {
                try store.write { tx in
                    try tx.insert(
                        "Reading",
                        [
                            "label": .string("x"), "payload": .json("1"),
                            "amount": .string("123456789012345678901234567890123456789"),
                        ])
                }
            }
            #expect(throws: DeckError.self) {
                try store.write { tx in
                    try tx.insert("Reading", ["label": .string("x"), "payload": .json(#"{"a":1,"a":2}"#)])
                }
            }
        }
    }

    @Test func theLegacyFormsAreExactlyThoseEarlierDeckWrote() {
        #expect(JSONText.isLegacy(#"{"a":1,"a":2}"#))
        #expect(JSONText.isLegacy(#"["\ud800"]"#) && JSONText.isLegacy(#""\udc00x""#))
        #expect(!JSONText.isLegacy(#"{"a":1}"#))  // valid: no legacy value
        #expect(!JSONText.isLegacy(#"{"a":1,"a":}"#) && !JSONText.isLegacy("nul"))
        // 39 digits below 2^128 (what Foundation's Decimal held); not 2^128 itself nor 40 digits.
        #expect(Value.legacyDecimal("340282366920938463463374607431768211455") != nil)
        #expect(Value.legacyDecimal("-3.40282366920938463463374607431768211455") != nil)
        #expect(Value.legacyDecimal("340282366920938463463374607431768211456") == nil)
        #expect(Value.legacyDecimal("1234567890123456789012345678901234567891") == nil)
        #expect(Value.legacyDecimal("12.5") == nil)  // within the limits: no legacy value
        let required = { (cell: SQLValue, type: StoreSchema.AttributeType) in
            Value.legacyValue(cell, type: type, isOptional: false, epoch: .unix)
        }
        #expect(required(.text("null"), .json) != nil && required(.real(-.infinity), .date) != nil)
        #expect(Value.legacyValue(.text("null"), type: .json, isOptional: true, epoch: .unix) == nil)
        #expect(required(.real(0), .date) == nil && required(.text("{}"), .json) == nil)
    }
}
