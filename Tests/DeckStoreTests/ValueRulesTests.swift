import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// The encoding, range and text form of each value type (spec 7.1, 7.3, 7.5), through the
/// parser, the store and the cells SQLite holds.
@Suite("Value rules", .timed)
struct ValueRulesTests {
    private func parse(_ text: String, _ type: AttributeType) -> Value? {
        try? Value(parsing: text, as: type)
    }

    /// Inserts `values` into a fresh Sample record and returns what the store holds for `column`
    /// (its storage class and its text) and what the record API reads back.
    private func stored(_ column: String, _ value: Value) throws -> (
        typeof: String, cell: SQLValue, read: Value?
    ) {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let id = try package.write { tx in try tx.insert("Sample", [column: value]) }.value
            let url = package.url
            try package.close()
            let db = try rawStore(url)
            defer { db.close() }
            let row = try #require(
                try db.rows(
                    "SELECT typeof(\(quote(column))), \(quote(column)) FROM Sample WHERE _pk = ?",
                    [.integer(id)]
                )
                .first)
            let reopened = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? reopened.close() }
            return (
                row[0].string ?? "", row[1], try reopened.read { try $0.record("Sample", id: id) }?[column]
            )
        }
    }

    private func insertError(_ column: String, _ value: Value, schema: StoreSchema = recordsSchema()) throws
        -> DeckError?
    {
        try withTestDirectory { dir throws -> DeckError? in
            let package = try makeTestStore(in: dir, schema: schema)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            do throws(DeckError) {
                try tx.insert("Sample", [column: value])
                return nil
            } catch {
                #expect(try tx.count(RecordQuery("Sample")) == 0)
                return error
            }
        }
    }

    // MARK: Decimals

    @Test(arguments: [
        ("12.50", "12.5"), ("-0", "0"), ("+0.000", "0"), ("00012.3400", "12.34"), ("1e3", "1000"),
        ("1E-3", "0.001"), ("-.5", "-0.5"), ("5.", "5"), ("-1.2345e2", "-123.45"),
        ("12345678901234567890123456789012345678", "12345678901234567890123456789012345678"),
        ("0.12345678901234567890123456789012345678", "0.12345678901234567890123456789012345678"),
        ("1234567890123456789012345678901234567800000", "1234567890123456789012345678901234567800000"),
        ("1e127", "1" + String(repeating: "0", count: 127)),
        (
            "99999999999999999999999999999999999999e127",
            String(repeating: "9", count: 38) + String(repeating: "0", count: 127)
        ),
        ("1e-128", "0." + String(repeating: "0", count: 127) + "1"),
        ("1.000000000000000000000000000000000000000000000000", "1"),
    ])
    func decimalsAreKeptExactlyInCanonicalForm(text: String, canonical: String) throws {
        let value = try Value(parsing: text, as: .decimal)
        #expect(value.description == canonical)
        let (typeof, cell, read) = try stored("price", value)
        #expect(typeof == "text")
        #expect(cell == .text(canonical))
        #expect(read == value)
        #expect(read?.description == canonical)
    }

    @Test(arguments: [
        ("123456789012345678901234567890123456789", "at most 38 significant digits (this has 39)"),
        ("1.23456789012345678901234567890123456789012", "at most 38 significant digits (this has 42)"),
        ("340282366920938463463374607431768211455", "at most 38 significant digits"),
        ("1e128", "127 places before the point"),
        ("1e-129", "at most 128 digits after the point"),
        ("1e99999999999999999999999", "127 places before the point"),
        ("٣", "a decimal number"), ("１２", "a decimal number"), ("1,5", "a decimal number"),
        ("0x10", "a decimal number"), ("nan", "a decimal number"), ("inf", "a decimal number"),
        (" 1", "a decimal number"), ("1 ", "a decimal number"), ("", "a decimal number"),
        ("-", "a decimal number"),
        (".", "a decimal number"), ("1e", "a decimal number"), ("1e+", "a decimal number"),
        ("--1", "a decimal number"),
    ])
    func decimalsThatCannotBeKeptAreRefused(text: String, reason: String) {
        #expect {
            try Value(parsing: text, as: .decimal)
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    @Test func aDecimalBeyondTheLimitsIsRefusedOnWriteNotRounded() throws {
        // Foundation's Decimal holds 39 digits when they fit 128 bits; the format holds 38.
        let wide = try #require(Decimal(string: "340282366920938463463374607431768211455"))
        let error = try #require(try insertError("price", .decimal(wide)))
        #expect(error.description.contains("at most 38 significant digits"))
        #expect(error.kind == .invalidData)
        #expect(try insertError("price", .decimal(.nan))?.description.contains("not NaN") == true)
        // A double for a decimal is the double's shortest text.
        #expect(try stored("price", .double(0.1)).cell == .text("0.1"))
        #expect(try stored("price", .double(1e20)).cell == .text("100000000000000000000"))
        #expect(try stored("price", .integer(-42)).cell == .text("-42"))
    }

    // MARK: Doubles

    @Test func negativeZeroIsStoredAsZero() throws {
        for value in [Value.double(-0.0), .string("-0"), .string("-0.0e5")] {
            let (typeof, cell, read) = try stored("d", value)
            #expect(typeof == "real")
            guard case .real(let v) = cell, case .double(let r)? = read else {
                Issue.record("\(cell), \(String(describing: read))")
                continue
            }
            #expect(v.sign == .plus && v == 0)
            #expect(r.sign == .plus && r == 0)
        }
        // And a date of -0.0.
        guard case .real(let t) = try stored("t", .date(Timestamp(timeIntervalSinceReferenceDate: -0.0))).cell
        else {
            Issue.record("not a REAL")
            return
        }
        #expect(t.sign == .plus)
    }

    /// Why -0.0 is not kept: SQLite itself gives back 0.0 for a -0.0 bound into a REAL column.
    @Test func sQLiteDoesNotKeepTheSignOfZero() throws {
        let db = try Database(path: ":memory:", mode: .create)
        defer { db.close() }
        try db.execute("CREATE TABLE t(x REAL) STRICT")
        try db.run("INSERT INTO t VALUES (?)", [.real(-0.0)])
        guard case .real(let back)? = try db.scalar("SELECT x FROM t") else {
            Issue.record("not a REAL")
            return
        }
        #expect(back == 0 && back.sign == .plus)
    }

    @Test func doublesAtTheEdgesRoundTrip() throws {
        for v in [
            Double.greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude,
            -.leastNormalMagnitude, Double.leastNormalMagnitude / 1024, 0.1, 2.0, 1e16, 123_456_789.125,
        ] {
            let (typeof, _, read) = try stored("d", .double(v))
            #expect(typeof == "real")
            guard case .double(let r)? = read else {
                Issue.record("\(v): \(String(describing: read))")
                continue
            }
            #expect(r.bitPattern == v.bitPattern, "\(v)")
            #expect(parse(String(v), .double) == .double(v))
        }
        #expect(parse("1e-400", .double) == .double(0))
        #expect(parse("1.7976931348623158e308", .double) == .double(.greatestFiniteMagnitude))
    }

    @Test(arguments: [
        "nan", "NaN", "inf", "-inf", "infinity", "1e400", "-1e309", "0x1p3", "1_0", "٣", "", " 1",
    ])
    func nonFiniteOrForeignNumbersAreRefused(text: String) {
        #expect(throws: ValueError.self) { try Value(parsing: text, as: .double) }
    }

    /// NaN into a required attribute was a raw SQLite NOT NULL error (exit 74).
    @Test func nanAndInfinityAreRefusedEvenWhenRequired() throws {
        let schema = StoreSchema(entities: [
            Entity("Sample", attributes: [Attribute("d", .double), Attribute("t", .date)])
        ])
        for (column, value) in [
            ("d", Value.double(.nan)), ("d", .double(.infinity)), ("d", .string("nan")),
            ("t", .date(Timestamp(timeIntervalSince1970: .nan))),
            ("t", .date(Timestamp(timeIntervalSince1970: -.infinity))),
            ("t", .double(.nan)), ("t", .string("nan")),
            ("t", .date(Date.distantFuture.addingTimeInterval(1e12))),
        ] {
            var values: [String: Value] = ["d": .double(1), "t": .date(Timestamp(timeIntervalSince1970: 0))]
            values[column] = value
            let error = try withTestDirectory { dir throws -> DeckError? in
                let package = try makeTestStore(in: dir, schema: schema)
                let tx = try package.beginTransaction()
                defer { tx.rollback() }
                do throws(DeckError) {
                    try tx.insert("Sample", values)
                    return nil
                } catch {
                    return error
                }
            }
            guard case .invalidValue(let entity, let property, let reason)? = error else {
                Issue.record("\(column) = \(value): \(String(describing: error))")
                continue
            }
            #expect(entity == "Sample" && property == column)
            #expect(!reason.contains("NOT NULL") && !reason.contains("SQLite"), "\(reason)")
            #expect(error?.kind == .invalidData)
        }
    }

    // MARK: Integers, bools, UUIDs, data

    @Test func otherScalarTextForms() throws {
        #expect(parse("-9223372036854775808", .integer) == .integer(.min))
        #expect(parse("+42", .integer) == .integer(42))
        #expect(parse("9223372036854775808", .integer) == nil)
        #expect(parse("٤٢", .integer) == nil)
        #expect(parse("4.0", .integer) == nil)
        for (text, value) in [
            ("TRUE", true), ("Yes", true), ("1", true), ("fAlSe", false), ("NO", false), ("0", false),
        ] {
            #expect(parse(text, .bool) == .bool(value), "\(text)")
        }
        for text in ["ｔｒｕｅ", "y", "2", "", "true "] { #expect(parse(text, .bool) == nil, "\(text)") }
        let uuid = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        #expect(parse("e621e1f8-c36c-495a-93fc-0c247a3e6e5f", .uuid) == .uuid(uuid))
        #expect(parse("E621E1F8-C36C-495A-93FC-0C247A3E6E5F", .uuid) == .uuid(uuid))
        for text in [
            "{E621E1F8-C36C-495A-93FC-0C247A3E6E5F}", "E621E1F8C36C495A93FC0C247A3E6E5F",
            "e621e1f8-c36c-495a-93fc-0c247a3e6e5",
        ] {
            #expect(parse(text, .uuid) == nil, "\(text)")
        }
        #expect(try stored("u", .uuid(uuid)).cell == .text("e621e1f8-c36c-495a-93fc-0c247a3e6e5f"))
        #expect(parse("AAEC/w==", .data) == .data(Data([0, 1, 2, 0xFF])))
    }

    // MARK: URLs

    @Test(arguments: [
        "https://example.org/a?b=c#d", "HTTP://EXAMPLE.com:80/a/../b/%7e?x#y", "urn:isbn:0451450523",
        "mailto:someone@example.org", "file:///tmp/x", "http://[::1]:8080/",
        "http://[2001:db8::7]/c=GB?objectClass?one",
        "http://[::ffff:192.0.2.1]/", "http://[v7.x:y]/", "a+b-c.d:x", "x:", "http:", "http://", "http:/x",
        "tel:+1-816-555-1212", "ldap://[2001:db8::7]/c=GB", "http://user:pw@host:99999/p", "http://%41/",
        "http://xn--mnchen-3ya.de/", "javascript:alert(1)", "news:comp.infosystems.www.servers.unix",
    ])
    func uRIsAreStoredExactlyAsWritten(text: String) throws {
        let value = try Value(parsing: text, as: .url)
        #expect(value.description == text)
        let (typeof, cell, read) = try stored("link", value)
        #expect(typeof == "text")
        #expect(cell == .text(text))
        #expect(read?.description == text)
        #expect(ValueSyntax.isURI(text))
    }

    @Test(arguments: [
        ("http://münchen.de/ä?ö#ü", "http://xn--mnchen-3ya.de/%C3%A4?%C3%B6#%C3%BC"),
        ("https://例え.jp/パス", "https://xn--r8jz45g.jp/%E3%83%91%E3%82%B9"),
        ("ja:日本", "ja:%E6%97%A5%E6%9C%AC"),
    ])
    func iRIsAreConvertedToURIs(text: String, stored: String) throws {
        let value = try Value(parsing: text, as: .url)
        #expect(value.description == stored)
        #expect(try self.stored("link", value).cell == .text(stored))
    }

    @Test(arguments: [
        ("http://x/a b", "a space"), ("http://x/<p>", "'<'"), ("http://x/\"q\"", "'\"'"),
        ("http://x/%zz", "'%'"),
        ("http://x/%", "'%'"), ("http://x/\n", "control character"), ("http://x/#a#b", "RFC 3986"),
        ("rel/path", "with a scheme"), ("/abs", "with a scheme"), ("1http://x", "with a scheme"),
        ("", "with a scheme"),
        ("http://[::1", "RFC 3986"), ("http://[::1]x/", "RFC 3986"),
        ("http://[1:2:3:4:5:6:7:8:9]/", "RFC 3986"),
        ("http://[1::2::3]/", "RFC 3986"), ("http://[12345::]/", "RFC 3986"),
        ("http://[::256.1.1.1]/", "RFC 3986"),
        ("http://x:8o/", "RFC 3986"), ("http://a@b@c/", "RFC 3986"), ("ht_tp://x", "RFC 3986"),
        ("http://ä b.de/", "a space"),
    ])
    func badURLsAreRefused(text: String, reason: String) {
        #expect {
            try Value(parsing: text, as: .url)
        } throws: { error in
            "\(error)".contains(reason) && "\(error)".contains("not a valid url")
        }
    }

    @Test func uRLValuesCompareByTheirExactText() throws {
        let lower = try Value(parsing: "http://example.org/", as: .url)
        let upper = try Value(parsing: "HTTP://example.org/", as: .url)
        #expect(lower != upper)
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            try tx.insert("Sample", ["link": lower])
            try tx.insert("Sample", ["link": upper])
            #expect(
                try tx.count(RecordQuery("Sample", where: .compare(.property("link"), .equal, .value(lower))))
                    == 1)
        }
    }

    @Test func aRelativeFoundationURLIsRefusedOnWrite() throws {
        let relative = try #require(URL(string: "a/b"))
        #expect(try insertError("link", .url(relative))?.description.contains("absolute URL") == true)
    }

    // MARK: JSON

    static let validJSON = [
        "0", "-0", "1.5e-7", "1e400", "-123456789012345678901234567890", "\"\"",
        "\"\\u00e9\\ud83c\\udccf\\/\"",
        "true", "false", "[]", "{}", " \t\r\n[1, 2] \n", "{\"a\":{\"b\":[null,true,{\"\":0}]}}", "\"é\"",
        "{\"a\":1,\"A\":2}", "{\"é\":1,\"e\\u0301\":2}",
        String(repeating: "[", count: 512) + String(repeating: "]", count: 512),
        "\"\u{7F}\u{FFFE}\"",
    ]

    static let invalidJSON: [(String, String)] = [
        ("1,\"admin\":true", "only one value"), ("", "expected a JSON value"), (" ", "expected a JSON value"),
        ("{", "member name"), ("[1,]", "expected a JSON value"), ("[1 2]", "expected ',' or ']'"),
        ("{\"a\":1,\"a\":2}", "duplicate member name 'a'"),
        ("{\"a\":1,\"\\u0061\":2}", "duplicate member name 'a'"),
        ("\"\\ud800\"", "lone surrogate"), ("\"\\udc00\"", "lone surrogate"),
        ("\"\\ud800\\u0041\"", "lone surrogate"),
        ("\"\\x41\"", "invalid escape"), ("\"a\nb\"", "control character"),
        ("\"\u{0}\"", "control character"),
        ("01", "leading zero"), ("+1", "expected a JSON value"), (".5", "expected a JSON value"),
        ("1.", "digit after '.'"),
        ("1e", "exponent"), ("NaN", "expected a JSON value"), ("Infinity", "expected a JSON value"),
        ("nul", "invalid literal"), ("True", "expected a JSON value"), ("'a'", "expected a JSON value"),
        ("\u{FEFF}1", "byte-order mark"), ("[1]x", "only one value"), ("\"abc", "unterminated string"),
        (String(repeating: "[", count: 513) + String(repeating: "]", count: 513), "nest more than 512"),
        ("{\"a\" 1}", "expected ':'"), ("{1:2}", "member name"), ("\u{A0}1", "expected a JSON value"),
    ]

    @Test func theJSONRules() throws {
        for text in Self.validJSON {
            #expect(JSONText.isValid(text), "\(text.prefix(40))")
            #expect((try? Value(parsing: text, as: .json)) == .json(text), "\(text.prefix(40))")
        }
        for (text, reason) in Self.invalidJSON {
            var message = ""
            do throws(JSONText.SyntaxError) {
                try JSONText.validate(text)
            } catch {
                message = error.message
            }
            #expect(
                message.contains(reason), "\(text.prefix(40)) should fail with '\(reason)', not '\(message)'")
            #expect(throws: ValueError.self) { try Value(parsing: text, as: .json) }
        }
        #expect(try JSONText.minified(" { \"a\" : [ 1 , \"x y\" ] }\n") == #"{"a":[1,"x y"]}"#)
        #expect(
            try JSONText.parse(Array(#"{"a":[1.50,"x"]}"#.utf8))
                == .object([("a", .array([.number("1.50"), .string("x")]))]))
        // Deep nesting is refused without exhausting the stack.
        #expect(!JSONText.isValid(String(repeating: "[", count: 1_000_000)))
    }

    @Test func jSONNullIsNoValue() throws {
        for text in ["null", " null\n"] {
            let (typeof, _, read) = try stored("meta", .json(text))
            #expect(typeof == "null")
            #expect(read == .null)
        }
        let required = StoreSchema(entities: [Entity("Sample", attributes: [Attribute("meta", .json)])])
        let error = try #require(try insertError("meta", .json("null"), schema: required))
        #expect(error.description.contains("JSON null is stored as no value"))
        #expect(error.kind == .invalidData)
        // Text is kept as given, whitespace included.
        #expect(try stored("meta", .json(" [1,\n 2] ")).cell == .text(" [1,\n 2] "))
        #expect(
            try insertError("meta", .json("1,\"admin\":true"))?.description.contains("only one value") == true
        )
    }

    @Test func compactJSONTextIsValidatedAndMinified() {
        #expect(Value.json(" [1, {\"a\": \"b c\"}] ").compactJSONText == #"[1,{"a":"b c"}]"#)
        #expect(Value.json("1,\"admin\":true").compactJSONText == nil)
        #expect(Value.string("1").compactJSONText == nil)
    }

    // MARK: Cells another writer damaged

    /// A cell that breaks its type's encoding reads as its storage class, unchanged.
    @Test func damagedCellsReadAsTheyAre() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let id = try package.write { tx in try tx.insert("Sample", ["s": .string("x")]) }.value
            let url = package.url
            try package.close()
            let db = try rawStore(url)
            try db.execute("PRAGMA ignore_check_constraints = ON")
            try db.run(
                """
                UPDATE Sample SET b = 2, t = 1e300, u = 'E621E1F8-C36C-495A-93FC-0C247A3E6E5F', link = 'not a url',
                price = '1.50', meta = '1,"admin":true', d = 9e999 WHERE _pk = ?
                """, [.integer(id)])
            db.close()
            let reopened = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? reopened.close() }
            let record = try #require(try reopened.read { try $0.record("Sample", id: id) })
            #expect(record["b"] == .integer(2))
            // A date out of range is a legacy value (spec 7.7), read as that date.
            #expect(record["t"] == .date(Timestamp(timeIntervalSinceReferenceDate: 1e300)))
            #expect(record["u"] == .string("E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
            #expect(record["link"] == .string("not a url"))
            #expect(record["price"] == .string("1.50"))
            #expect(record["meta"] == .string("1,\"admin\":true"))
            #expect(record["d"] == .double(.infinity))
        }
    }
}
