import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// Verification checks every cell against its attribute's encoding (spec 7.1, 13: `value-invalid`).
@Suite("Cell checks", .timed)
struct CellCheckTests {
    /// A closed package with one valid Sample record of every type; returns its URL and the id.
    private func package(in dir: URL, schema: StoreSchema = recordsSchema()) throws -> (URL, Int64) {
        let package = try makeTestStore(in: dir, schema: schema)
        let id = try package.write { tx in try tx.insert("Sample", RecordTests.sampleValues) }.value
        try package.close()
        return (package.url, id)
    }

    private func valueFindings(_ url: URL) throws -> [Finding] {
        try PackageVerifier.verify(at: url).findings.filter { $0.code == "value-invalid" }
    }

    @Test func validCellsOfEveryTypeVerifyClean() throws {
        try withTestDirectory { dir throws in
            let (url, _) = try package(in: dir)
            let report = try PackageVerifier.verify(at: url)
            #expect(report.findings.isEmpty, "\(report.findings)")
        }
    }

    @Test(arguments: [
        ("d", "9e999", "a double is finite"),
        ("u", "'E621E1F8-C36C-495A-93FC-0C247A3E6E5F'", "lowercase hex"),
        ("u", "'nope'", "lowercase hex"),
        ("link", "'not a url'", "not an absolute RFC 3986 URL"),
        ("link", "'http://x/a b'", "not an absolute RFC 3986 URL"),
        ("price", "'1.50'", "not the canonical form '1.5'"),
        ("price", "'-0'", "not the canonical form '0'"),
        ("price", "'1e3'", "not the canonical form '1000'"),
        ("price", "'٣'", "not a decimal number"),
        ("meta", #"'1,"admin":true'"#, "not valid JSON"),
        ("meta", #"'{"a":1,"a":}'"#, "not valid JSON"),
        ("price", "'340282366920938463463374607431768211456'", "at most 38 significant digits"),
        ("price", "'1234567890123456789012345678901234567891'", "at most 38 significant digits"),
    ])
    func aBadCellIsCorruption(column: String, sql: String, fragment: String) throws {
        try withTestDirectory { dir throws in
            let (url, id) = try package(in: dir)
            let db = try rawStore(url)
            try db.execute("PRAGMA ignore_check_constraints = ON")
            try db.run("UPDATE Sample SET \(quote(column)) = \(sql) WHERE _pk = ?", [.integer(id)])
            db.close()
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes == ["value-invalid"], "\(report.findings)")
            #expect(!report.isValid)
            let finding = try #require(report.finding("value-invalid"))
            #expect(finding.severity == .corruption)
            #expect(finding.object == "Sample #\(id).\(column)")
            #expect(finding.message.contains(fragment), "\(finding.message)")
        }
    }

    /// What an earlier Deck wrote under rules since tightened is a legacy value (spec 7.7): a
    /// note, the package valid, the cell read as its value.
    @Test(arguments: [
        ("t", "9e999", "the date +infinity", Value.date(Timestamp(timeIntervalSince1970: .infinity))),
        ("t", "-9e999", "the date -infinity", .date(Timestamp(timeIntervalSince1970: -.infinity))),
        // A new document counts its dates from 2001 (spec 7.1).
        (
            "t", "1e300", "outside the years 0000 to 9999",
            .date(Timestamp(timeIntervalSinceReferenceDate: 1e300))
        ),
        (
            "t", "-63145526401", "outside the years",
            .date(Timestamp(timeIntervalSinceReferenceDate: -63_145_526_401))
        ),
        (
            "t", "252423993600", "outside the years",
            .date(Timestamp(timeIntervalSinceReferenceDate: 252_423_993_600))
        ),
        (
            "price", "'123456789012345678901234567890123456789'", "a decimal of 39 significant digits",
            .decimal(Decimal(string: "123456789012345678901234567890123456789") ?? 0)
        ),
        ("meta", #"'{"a":1,"a":2}'"#, "a member name twice", .json(#"{"a":1,"a":2}"#)),
        ("meta", #"'["\udc00"]'"#, "a lone surrogate", .json(#"["\udc00"]"#)),
    ])
    func aLegacyCellIsANoteAndReadsAsItsValue(column: String, sql: String, fragment: String, value: Value)
        throws
    {
        try withTestDirectory { dir throws in
            let (url, id) = try package(in: dir)
            let db = try rawStore(url)
            try db.execute("PRAGMA ignore_check_constraints = ON")
            try db.run("UPDATE Sample SET \(quote(column)) = \(sql) WHERE _pk = ?", [.integer(id)])
            db.close()
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes == ["legacy-value"], "\(report.findings)")
            #expect(report.isValid)
            let finding = try #require(report.finding("legacy-value"))
            #expect(finding.severity == .legacy)
            #expect(finding.object == "Sample #\(id).\(column)")
            #expect(finding.message.contains(fragment), "\(finding.message)")
            let reopened = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? reopened.close() }
            #expect(try reopened.read { try $0.record("Sample", id: id) }?[column] == value)
        }
    }

    /// A table that is not STRICT can hold any storage class in any column (a hostile store).
    @Test func aWrongStorageClassIsCorruption() throws {
        try withTestDirectory { dir throws in
            let (url, id) = try package(in: dir)
            let db = try rawStore(url)
            let sql = try #require(
                try db.scalar("SELECT sql FROM sqlite_schema WHERE name = 'Sample'")?.string)
            try db.execute("PRAGMA foreign_keys = OFF; PRAGMA ignore_check_constraints = ON")
            try db.execute(
                "ALTER TABLE Sample RENAME TO old; "
                    + sql.replacingOccurrences(of: ") STRICT", with: ")")
                    + "; INSERT INTO Sample SELECT * FROM old; DROP TABLE old;")
            try db.run(
                "UPDATE Sample SET i = 'abc', s = x'00', d = 'x', t = 'soon', u = x'01', raw = 'text', b = 'yes' WHERE _pk = ?",
                [.integer(id)])
            db.close()
            // Storage classes are `cell-type`'s (one finding per column); no cell of the wrong
            // class is judged a second time as a value.
            let report = try PackageVerifier.verify(at: url)
            #expect(try valueFindings(url).isEmpty, "\(report.findings)")
            let columns = report.findings.filter { $0.code == "cell-type" }.map { finding in
                String(finding.message.split(separator: "'")[1])
            }
            #expect(Set(columns) == ["i", "s", "d", "t", "u", "raw", "b"], "\(report.findings)")
        }
    }

    /// Deck once stored JSON null as the text `null`: it reads as no value, and is a legacy value
    /// in a required attribute (spec 7.7), never corruption.
    @Test func theJSONTextNullIsNoValue() throws {
        let schema = StoreSchema(entities: [
            Entity(
                "Sample", attributes: [Attribute("meta", .json, isOptional: true), Attribute("need", .json)])
        ])
        try withTestDirectory { dir throws in
            let document = try makeTestStore(in: dir, schema: schema)
            let id = try document.write { tx in
                try tx.insert("Sample", ["meta": .json("1"), "need": .json("2")])
            }.value
            try document.close()
            let db = try rawStore(document.url)
            try db.run("UPDATE Sample SET meta = ' null ', need = 'null'")
            db.close()
            let report = try PackageVerifier.verify(at: document.url)
            #expect(report.isValid && report.codes == ["legacy-value"], "\(report.findings)")
            #expect(report.findings.first?.object == "Sample #\(id).need")
            #expect(
                report.findings.first?.message.contains("the JSON text null in a required attribute") == true)
            let reopened = try PackageStore.open(at: document.url, mode: .readOnly)
            defer { try? reopened.close() }
            #expect(try reopened.read { try $0.record("Sample", id: id) }?["meta"] == .null)
        }
    }

    @Test func findingsPerColumnAreCapped() throws {
        try withTestDirectory { dir throws in
            let document = try makeTestStore(in: dir, schema: recordsSchema())
            try document.write { tx in
                for i in 0..<25 { try tx.insert("Sample", ["price": .integer(Int64(i))]) }
            }
            try document.close()
            let db = try rawStore(document.url)
            try db.run("UPDATE Sample SET price = price || '.0'")
            db.close()
            let findings = try valueFindings(document.url)
            #expect(findings.count == CellCheck.findingsPerColumn + 1)
            #expect(findings.last?.object == "Sample.price")
            #expect(findings.last?.message == "and 15 more invalid cell(s) in this column")
            #expect(findings.first?.object == "Sample #1.price")
        }
    }

    /// Required attributes that a subentity introduces have nullable columns (spec 6.3): the
    /// writer enforces them, and verification checks them; other entities' rows hold NULL.
    @Test func requiredSubentityAttributesAndForeignColumns() throws {
        let schema = StoreSchema(entities: [
            Entity("Item", attributes: [Attribute("title", .string)]),
            Entity("Book", superentity: "Item", attributes: [Attribute("isbn", .string)]),
            Entity(
                "Film", superentity: "Item", attributes: [Attribute("minutes", .integer, isOptional: true)]),
        ])
        try withTestDirectory { dir throws in
            let document = try makeTestStore(in: dir, schema: schema)
            let (book, film) = try document.write { tx in
                let book = try tx.insert("Book", ["title": .string("B"), "isbn": .string("1")])
                let film = try tx.insert("Film", ["title": .string("F"), "minutes": .integer(90)])
                return (book, film)
            }.value
            try document.close()
            #expect(try valueFindings(document.url).isEmpty)
            let db = try rawStore(document.url)
            try db.run("UPDATE Item SET isbn = NULL WHERE _pk = ?", [.integer(book)])
            try db.run("UPDATE Item SET isbn = 'x' WHERE _pk = ?", [.integer(film)])
            db.close()
            let findings = try valueFindings(document.url)
            #expect(findings.count == 2, "\(findings)")
            #expect(
                findings.contains {
                    $0.object == "Book #\(book).isbn"
                        && $0.message.contains("is null, but the attribute is required")
                })
            #expect(
                findings.contains {
                    $0.object == "Film #\(film).isbn"
                        && $0.message.contains("this entity has no attribute 'isbn'")
                })
        }
    }

    @Test func externalStorageCellsAreLeftToTheBlobChecks() throws {
        try withTestDirectory { dir throws in
            let document = try makeTestStore(in: dir)
            try document.write { tx in
                try tx.insert("Card", ["front": .string("a"), "image": .data(testBytes(100))])
            }
            try document.close()
            #expect(try PackageVerifier.verify(at: document.url).findings.isEmpty)
        }
    }
}
