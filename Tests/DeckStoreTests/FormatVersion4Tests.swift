import DeckQueryLanguage
import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@_spi(Testing) @testable import DeckStore

/// Format version 4 (spec: sections 4.2, 7.1, 7.4, 12.7 to 12.9): a new document counts its dates'
/// seconds from 2001-01-01, Foundation's reference date, so that every `Date` is stored as its own
/// binary64; the version 3 packages of Tests/Fixtures/v3 (made by the Deck of commit 5d7d109) read
/// as they are and upgrade without changing an instant.
@Suite(.timed) struct FormatVersion4Tests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/v3")

    static func copy(_ name: String, to dir: URL) throws -> URL {
        let url = dir.appendingPathComponent(name)
        try FileManager.default.copyItem(at: fixtures.appendingPathComponent(name), to: url)
        return url
    }

    /// The `name`/date pairs of a fixture's Event records, as the store reads them.
    static func events(_ url: URL) throws -> [String: [String: Value]] {
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        let records = try store.read { reader in try reader.fetch(RecordQuery("Event")) }
        var events: [String: [String: Value]] = [:]
        for record in records {
            guard case .string(let name)? = record["name"] else { continue }
            events[name] = record.values.filter { $0.key != "name" }
        }
        return events
    }

    /// What the Deck of 5d7d109 printed for each event's dates (`deck query --json`).
    static func expectedTexts(_ name: String) throws -> [String: [String: String]] {
        let data = try Data(contentsOf: fixtures.appendingPathComponent("\(name).expected.json"))
        let rows = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        var texts: [String: [String: String]] = [:]
        for row in rows {
            let name = try #require(row["name"] as? String)
            texts[name] = ["at", "stamp", "noted"].reduce(into: [:]) { $0[$1] = row[$1] as? String }
        }
        return texts
    }

    static func stored(_ url: URL, _ sql: String) throws -> [[SQLValue]] {
        let db = try Database(path: url.path + "/store.sqlite", mode: .readOnly)
        defer { db.close() }
        return try db.rows(sql)
    }

    // MARK: New documents

    @Test func aNewDocumentCountsFromTheReferenceDateAndStoresEveryDateExactly() throws {
        // The issue's finding: about half of Date.now values came back one unit in the last place
        // away, through the shift to 1970 and back.
        let seed = TestSeed("FormatVersion4Tests.roundTrip", filter: "FormatVersion4Tests")
        var generator = seed.generator()
        var dates: [Date] = [
            Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -0.1),
            Date(timeIntervalSinceReferenceDate: .leastNonzeroMagnitude),
            Date(timeIntervalSinceReferenceDate: -63_145_526_400),
            Date(timeIntervalSinceReferenceDate: Double(252_423_993_600).nextDown),
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1e-7), .distantPast, .distantFuture,
        ]
        var lost = 0
        for _ in 0..<2_000 {
            let now = Date(timeIntervalSinceReferenceDate: Double.random(in: 6e8..<1e9, using: &generator))
            dates.append(now)
            // What format 3 did: seconds since 1970, and back.
            let shifted = Date(timeIntervalSince1970: now.timeIntervalSince1970)
            if shifted != now { lost += 1 }
            dates.append(
                Date(timeIntervalSinceReferenceDate: Double.random(in: -6.3e10..<2.5e11, using: &generator)))
        }
        #expect(lost > 500, "the shift through 1970 loses a bit of about half of today's dates")
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            var ids: [(Int64, Date)] = []
            try package.write { tx in
                for date in dates { ids.append((try tx.insert("Sample", ["t": .date(date)]), date)) }
            }
            try package.close()
            #expect(
                try Self.stored(package.url, "SELECT value FROM deck_meta WHERE key = 'date_epoch'")
                    == [[.integer(978_307_200)]])
            let manifest = try Manifest.read(packagePath: package.url.path)
            #expect(
                manifest.formatVersion == PackageLayout.formatVersion && manifest.minimumReaderVersion == 4)
            let reopened = try PackageStore.open(at: package.url, mode: .readOnly)
            defer { try? reopened.close() }
            for (id, date) in ids {
                guard case .date(let read)? = try reopened.read({ try $0.record("Sample", id: id) })?["t"]
                else {
                    Issue.record("#\(id): no date, \(seed)")
                    continue
                }
                #expect(
                    read.date.timeIntervalSinceReferenceDate.bitPattern
                        == date.timeIntervalSinceReferenceDate.bitPattern, "\(date), \(seed)")
                // The store holds the Date's own number.
                #expect(read.seconds == date.timeIntervalSinceReferenceDate)
            }
            #expect(try PackageVerifier.verify(at: package.url).findings.isEmpty)
        }
    }

    @Test func textIsExactInTheReferenceEpoch() throws {
        func seconds(_ text: String) -> Double? {
            guard case .success(let t) = Timestamp.parse(text, epoch: .reference) else { return nil }
            return t.seconds
        }
        // The exact decimal less 978307200, rounded once: never fl(fl(text) − 978307200).
        #expect(seconds("2001-01-01T00:00:00.1Z") == 0.1)
        #expect(seconds("978307200.1") == 0.1)
        #expect(Double(978_307_200.1) - 978_307_200 != 0.1)
        #expect(seconds("2000-12-31T23:59:59.9Z") == -0.1)
        #expect(seconds("2026-11-30T10:00:00.123456789Z") == 817_725_600.123456789)
        #expect(seconds("1970-01-01T00:00:00Z") == -978_307_200)
        #expect(seconds("0000-01-01T00:00:00Z") == -63_145_526_400)
        #expect(seconds("-0.1") == -978_307_200.1)
        #expect(seconds("9999-12-31T23:59:59.99999999Z") == nil)
        #expect(seconds("-62167219201") == nil)
        #expect(Timestamp(timeIntervalSinceReferenceDate: 0.1).description == "2001-01-01T00:00:00.100Z")
        #expect(Timestamp(timeIntervalSinceReferenceDate: -0.1).description == "2000-12-31T23:59:59.900Z")
        #expect(Timestamp(timeIntervalSinceReferenceDate: 1e-7).description == "2001-01-01T00:00:00.0000001Z")
        #expect(
            Timestamp(timeIntervalSinceReferenceDate: -63_145_526_400).description
                == "0000-01-01T00:00:00.000Z")
        #expect(
            Timestamp(timeIntervalSinceReferenceDate: Double(252_423_993_600).nextDown).description
                == "9999-12-31T23:59:59.99997Z")
        // Equal instants are equal whatever the epoch; a 1970 number between two 2001 ones is neither.
        #expect(
            Timestamp(timeIntervalSince1970: 978_307_200.5) == Timestamp(timeIntervalSinceReferenceDate: 0.5))
        let y = 100_000_000.123456789
        let t = Timestamp(timeIntervalSince1970: y)
        #expect(!t.isExact(in: .reference))
        #expect(t != Timestamp(timeIntervalSinceReferenceDate: t.timeIntervalSinceReferenceDate))
        #expect(Set([t, Timestamp(timeIntervalSince1970: y)]).count == 1)
        #expect(
            Timestamp(timeIntervalSinceReferenceDate: t.timeIntervalSinceReferenceDate) < t
                || Timestamp(timeIntervalSinceReferenceDate: t.timeIntervalSinceReferenceDate) > t)

        // Printing and parsing are exact inverses over the whole range in this epoch too.
        let seed = TestSeed("FormatVersion4Tests.text", filter: "FormatVersion4Tests")
        var generator = seed.generator()
        let (low, high) = Timestamp.range(in: .reference)
        var samples: [Double] = [
            Double(low), Double(low).nextUp, Double(high).nextDown, 0, 0.1, -0.1, 1e-300,
        ]
        for _ in 0..<TestSweep.count(20_000, sampled: 2_000) {
            samples.append(Double.random(in: Double(low)..<Double(high), using: &generator))
            samples.append(Double(Int64.random(in: low * 1000..<high * 1000, using: &generator)) / 1000)
            let value =
                Double(bitPattern: UInt64.random(in: 0...0x4271_8000_0000_0000, using: &generator))
                * (Bool.random(using: &generator) ? 1 : -1)
            if value >= Double(low) && value < Double(high) { samples.append(value) }
        }
        for value in samples {
            let text = Timestamp(timeIntervalSinceReferenceDate: value).description
            let parsed = try #require(seconds(text), "\(value): \(text), \(seed)")
            #expect(parsed.bitPattern == value.bitPattern, "\(value): \(text) → \(parsed), \(seed)")
        }
    }

    @Test func queriesCompareDatesInTheDocumentsEpoch() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let (exact, id) = try package.write { tx in
                let exact = Date(timeIntervalSinceReferenceDate: 817_725_600.1234567)
                let id = try tx.insert("Sample", ["t": .date(exact)])
                _ = try tx.insert("Sample", ["t": .date(exact.addingTimeInterval(1e-6))])
                return (exact, id)
            }.value
            func ids(_ condition: String) throws -> [Int64] {
                try package.read {
                    try $0.fetchIDs(RecordQuery("Sample", where: try QueryParser.parse(condition)))
                }
            }
            let text = Timestamp(exact).description
            #expect(try ids("t = '\(text)'") == [id])
            #expect(try ids("t < '\(text)'").isEmpty)
            #expect(
                try package.read {
                    try $0.fetchIDs(
                        RecordQuery("Sample", where: .compare(.property("t"), .equal, .value(.date(exact)))))
                } == [
                    id
                ])
            try package.close()
        }
    }

    @Test func theVerifierChecksTheRangeInTheDocumentsEpoch() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let id = try package.write { tx in
                try tx.insert("Sample", ["t": .date(Date(timeIntervalSinceReferenceDate: 0))])
            }.value
            try package.close()
            let url = package.url
            for (cell, problem) in [
                ("-63145526400", nil), ("-63145526401", "outside the years 0000 to 9999"),
                ("252423993599.9", nil), ("252423993600", "outside the years 0000 to 9999"),
                // In range counted from 1970, not from 2001.
                ("253402300000", "outside the years 0000 to 9999"),
            ] as [(String, String?)] {
                let db = try rawStore(url)
                try db.execute("UPDATE Sample SET t = \(cell) WHERE _pk = \(id)")
                db.close()
                // Out of range is a legacy value (spec 7.7), counted in the document's epoch.
                let findings = try PackageVerifier.verify(at: url).findings.filter {
                    $0.code == "legacy-value"
                }
                if let problem {
                    #expect(
                        findings.count == 1 && findings[0].message.contains(problem), "\(cell): \(findings)")
                } else {
                    #expect(findings.isEmpty, "\(cell): \(findings)")
                }
            }
        }
    }

    @Test(arguments: [SQLValue?.none, .text("978307200"), .integer(1), .real(978_307_200)])
    func aVersion4StoreWithoutAValidEpochIsCorrupt(value: SQLValue?) throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            try package.close()
            let db = try rawStore(package.url)
            if let value {
                try db.run("UPDATE deck_meta SET value = ? WHERE key = 'date_epoch'", [value])
            } else {
                try db.execute("DELETE FROM deck_meta WHERE key = 'date_epoch'")
            }
            db.close()
            for mode in [PackageStore.Mode.readOnly, .readWrite] {
                let error = expectDeckError { _ = try PackageStore.open(at: package.url, mode: mode) }
                guard case .corrupt(_, let reason) = error else {
                    Issue.record("expected corrupt, got \(String(describing: error))")
                    continue
                }
                #expect(reason.contains("date_epoch"), "\(reason)")
            }
        }
    }

    // MARK: The version 3 fixtures

    @Test(arguments: ["Dates", "Legacy1970"])
    func aReaderReadsVersion3DatesAsTheyWere(name: String) throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy("\(name).deck", to: dir)
            let store = try PackageStore.open(at: url, mode: .readOnly)
            #expect(store.storeFormatVersion == 3 && store.dateEpoch == .unix)
            try store.close()
            let expected = try Self.expectedTexts(name)
            let events = try Self.events(url)
            #expect(events.count == expected.count)
            for (event, texts) in expected {
                for (attribute, text) in texts {
                    #expect(events[event]?[attribute]?.description == text, "\(event).\(attribute)")
                }
            }
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }

    @Test func anUpgradeCountsFromTheReferenceDateWhenEveryDateConvertsExactly() throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy("Dates.deck", to: dir)
            let before = try Self.events(url)
            let rawBefore = try Self.stored(url, "SELECT name, at, stamp, noted FROM Event ORDER BY _pk")
            try PackageStore.open(at: url).close()
            #expect(
                try Self.stored(url, "SELECT value FROM deck_meta WHERE key = 'date_epoch'")
                    == [[.integer(978_307_200)]])
            let manifest = try Manifest.read(packagePath: url.path)
            #expect(
                manifest.formatVersion == PackageLayout.formatVersion && manifest.minimumReaderVersion == 4)
            // Every instant is the one the version 3 store held.
            let after = try Self.events(url)
            #expect(after == before)
            let rawAfter = try Self.stored(url, "SELECT name, at, stamp, noted FROM Event ORDER BY _pk")
            for (old, new) in zip(rawBefore, rawAfter) {
                for column in 1...3 {
                    switch (old[column], new[column]) {
                    case (.null, .null): break
                    case (.real(let y), .real(let x)):
                        #expect(x + 978_307_200 == y && x == y - 978_307_200, "\(old[0]): \(y) → \(x)")
                    case (.integer(let y), let x):
                        #expect(x == .integer(y - 978_307_200) || x == .real(Double(y - 978_307_200)))
                    default: Issue.record("\(old) → \(new)")
                    }
                }
            }
            // The unique dates 978307200 s apart were each moved without meeting another.
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid && report.findings.isEmpty, "\(report.findings)")
            #expect(report.formatVersion == PackageLayout.formatVersion)
            // What a Date reads is what it read before (the same binary64 since 2001).
            for (event, values) in before {
                for (attribute, value) in values {
                    guard case .date(let old) = value, case .date(let new)? = after[event]?[attribute] else {
                        continue
                    }
                    #expect(old.date == new.date && new.epoch == .reference, "\(event).\(attribute)")
                }
            }
            // A Date written now round-trips.
            let now = Date(timeIntervalSinceReferenceDate: 817_725_600.123456789)
            let document = try PackageStore.open(at: url)
            let id = try document.write { tx in
                try tx.insert("Event", ["name": .string("new"), "at": .date(now)])
            }.value
            guard case .date(let read)? = try document.read({ try $0.record("Event", id: id) })?["at"] else {
                Issue.record("no date")
                return
            }
            #expect(read.date == now)
            try document.close()
        }
    }

    @Test func anUpgradeKeeps1970WhenADateWouldRound() throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy("Legacy1970.deck", to: dir)
            let rawBefore = try Self.stored(url, "SELECT * FROM Event ORDER BY _pk")
            try PackageStore.open(at: url).close()
            #expect(
                try Self.stored(url, "SELECT value FROM deck_meta WHERE key = 'date_epoch'") == [
                    [.integer(0)]
                ])
            #expect(try Self.stored(url, "SELECT * FROM Event ORDER BY _pk") == rawBefore)
            let expected = try Self.expectedTexts("Legacy1970")
            let events = try Self.events(url)
            for (event, texts) in expected {
                for (attribute, text) in texts {
                    #expect(events[event]?[attribute]?.description == text, "\(event).\(attribute)")
                }
            }
            let report = try PackageVerifier.verify(at: url)
            #expect(
                report.isValid && report.findings.isEmpty
                    && report.formatVersion == PackageLayout.formatVersion, "\(report.findings)")
            // Text written to it is rounded once, in its own epoch.
            let document = try PackageStore.open(at: url)
            #expect(document.dateEpoch == .unix)
            let id = try document.write { tx in
                try tx.insert(
                    "Event", ["name": .string("new"), "at": .string("1973-03-03T09:46:40.12345679Z")])
            }.value
            #expect(try document.read { try $0.record("Event", id: id) }?["at"] == events["y1973"]?["at"])
            try document.close()
        }
    }

    @Test func aMigrationFillsADateDefaultInTheDocumentsEpoch() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let id = try package.write { tx in try tx.insert("Sample", [:]) }.value
            try package.close()
            var next = recordsSchema()
            next.version = "2.0.0"
            let sample = try #require(next.entities.firstIndex { $0.name == "Sample" })
            next.entities[sample].attributes.append(
                Attribute(
                    "due", .date, defaultValue: .date(Timestamp(timeIntervalSince1970: 1_700_000_000.5))))
            _ = try PackageStore.migrate(at: package.url, to: next)
            #expect(
                try Self.stored(package.url, "SELECT due FROM Sample WHERE _pk = \(id)")
                    == [[.real(1_700_000_000.5 - 978_307_200)]])
            #expect(try PackageVerifier.verify(at: package.url).findings.isEmpty)
        }
    }
}
