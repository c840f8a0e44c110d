import DeckSQLite
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// Values through the built `deck`: the text forms `insert` reads, the forms `query` prints as
/// text, CSV and JSON, and the refusals (spec 7).
@Suite("End to end: values", .timed)
struct EndToEndValueTests {
    static let schema = #"""
        {"version":"1","entities":[{"name":"S","attributes":[
        {"name":"s","type":"string","optional":true},{"name":"i","type":"integer","optional":true},
        {"name":"d","type":"double","optional":true},{"name":"b","type":"bool","optional":true},
        {"name":"t","type":"date","optional":true},{"name":"raw","type":"data","optional":true},
        {"name":"u","type":"uuid","optional":true},{"name":"l","type":"url","optional":true},
        {"name":"m","type":"decimal","optional":true},{"name":"j","type":"json","optional":true},
        {"name":"req","type":"double","default":0},{"name":"when","type":"date","dynamicDefault":"now"}]}]}
        """#

    private func makePackage(_ dir: TemporaryDirectory) throws -> String {
        let schemaPath = dir.appending("s.json")
        try Self.schema.write(toFile: schemaPath, atomically: true, encoding: .utf8)
        let path = dir.appending("S.deck")
        e2eExpectSuccess(try deck("new", path, "--schema", schemaPath))
        return path
    }

    /// The records of `deck query --json`, parsed exactly (numbers keep their text).
    private func records(_ path: String) throws -> [[(String, JSONText.Tree)]] {
        let result = try deck("query", path, "S", "--sort", "_id", "--json")
        e2eExpectSuccess(result)
        // One record per line, always.
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "[" && lines.last == "]")
        for line in lines.dropFirst().dropLast() {
            #expect(line.hasPrefix("{\"_id\":"), "\(line)")
            let record = line.hasSuffix(",") ? String(line.dropLast()) : line
            #expect(JSONText.isValid(record), "\(record)")
        }
        guard case .array(let items) = try JSONText.parse(Array(result.stdout.utf8)) else {
            Issue.record("not an array: \(result.stdout)")
            return []
        }
        return items.map { if case .object(let members) = $0 { members } else { [] } }
    }

    private func member(_ record: [(String, JSONText.Tree)], _ name: String) -> JSONText.Tree? {
        record.first { $0.0 == name }?.1
    }

    @Test func theSampleInsertsACardWithoutACreationDate() throws {
        let dir = try TemporaryDirectory()
        let path = try e2eSample(in: dir)
        let inserted = try deck("insert", path, "Card", "front=a", "back=b", "--json")
        e2eExpectSuccess(inserted)
        let id = try #require(try e2eJSONObject(inserted.stdout)["id"] as? Int)
        let query = try deck("query", path, "Card", "--where", "_id = \(id)", "--json")
        e2eExpectSuccess(query)
        let card = try #require(try e2eJSONArray(query.stdout).first)
        let created = try #require(card["creationDate"] as? String)
        let seconds = try #require(Timestamp(parsing: created)).timeIntervalSince1970
        #expect(abs(seconds - Date().timeIntervalSince1970) < 600, "\(created)")
        #expect(try deck("verify", path).status == 0)
        let inspect = try deck("inspect", path)
        #expect(inspect.stdout.contains("creationDate: date  (default now)"), "\(inspect.stdout)")
    }

    /// Values written with `deck insert` come back from `deck query` in the canonical forms,
    /// identical after a second trip through their own printed text.
    @Test func textFormsRoundTripThroughTheTool() throws {
        let dir = try TemporaryDirectory()
        let path = try makePackage(dir)
        let rows: [[String]] = [
            [
                "s=héllo \"q\" \u{1}", "i=-9223372036854775808", "d=-0", "b=YES", "t=1970-01-01T00:00:00.1Z",
                "raw=AAEC/w==", "u=E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "l=http://münchen.de/ä?x#y",
                "m=00012.3400", "j= {\"a\" : [1, 1e400, \"x\\ny\"]}\n",
            ],
            [
                "i=9223372036854775807", "d=1.7976931348623157e308", "b=0", "t=1969-12-31T23:59:59.9Z",
                "l=HTTP://EXAMPLE.com:80/a/../%7e", "m=-1e-128", "j=\"\\ud83c\\udccf\"", "s=",
            ],
            [
                "d=5e-324", "t=0000-01-01", "m=12345678901234567890123456789012345678e127", "j=null",
                "t=9999-12-31T23:59:59.999Z",
            ],
            ["d=0.1", "t=2026-11-30T12:00+02:00", "m=-.5", "j=[[[]]]", "t=1796032800.123456789"],
        ]
        for row in rows { e2eExpectSuccess(try e2eDeck(["insert", path, "S"] + row)) }
        let records = try records(path)
        #expect(records.count == rows.count)
        func string(_ r: Int, _ key: String) -> String? {
            if case .string(let s)? = member(records[r], key) { s } else { nil }
        }
        func number(_ r: Int, _ key: String) -> String? {
            if case .number(let s)? = member(records[r], key) { s } else { nil }
        }
        #expect(string(0, "s") == "héllo \"q\" \u{1}")
        #expect(number(0, "i") == "-9223372036854775808")
        #expect(number(0, "d") == "0.0")
        #expect(member(records[0], "b") == .bool(true))
        #expect(string(0, "t") == "1970-01-01T00:00:00.100Z")
        #expect(string(0, "raw") == "AAEC/w==")
        #expect(string(0, "u") == "e621e1f8-c36c-495a-93fc-0c247a3e6e5f")
        #expect(string(0, "l") == "http://xn--mnchen-3ya.de/%C3%A4?x#y")
        #expect(string(0, "m") == "12.34")
        #expect(
            member(records[0], "j")
                == .object([("a", .array([.number("1"), .number("1e400"), .string("x\ny")]))]))
        #expect(number(1, "i") == "9223372036854775807")
        #expect(Double(number(1, "d") ?? "") == .greatestFiniteMagnitude)
        #expect(string(1, "t") == "1969-12-31T23:59:59.900Z")
        #expect(string(1, "l") == "HTTP://EXAMPLE.com:80/a/../%7e")
        #expect(string(1, "m") == "-0." + String(repeating: "0", count: 127) + "1")
        #expect(member(records[1], "j") == .string("🃏"))
        #expect(string(1, "s") == "")
        #expect(Double(number(2, "d") ?? "") == .leastNonzeroMagnitude)
        #expect(string(2, "t") == "9999-12-31T23:59:59.999Z")
        #expect(
            string(2, "m") == "12345678901234567890123456789012345678" + String(repeating: "0", count: 127))
        #expect(member(records[2], "j") == .null)
        #expect(Double(number(3, "d") ?? "") == 0.1)
        // 1796032800.123456789 s since 1970 is 817725600.123456789 since 2001, rounded once.
        #expect(string(3, "t") == "2026-11-30T10:00:00.1234568Z")
        #expect(string(3, "m") == "-0.5")
        #expect(member(records[3], "j") == .array([.array([.array([])])]))
        #expect(number(0, "req") == "0.0")
        // Each printed date reads back, as a --where value, to the identical stored number.
        for (r, record) in records.enumerated() {
            guard case .string(let t)? = member(record, "t") else { continue }
            let count = try deck("query", path, "S", "--where", "t = \(t)", "--count")
            e2eExpectSuccess(count)
            #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "record \(r): \(t)")
        }
        // CSV keeps the same forms.
        let csv = try deck("query", path, "S", "--sort", "_id", "--csv")
        e2eExpectSuccess(csv)
        let table = e2eParseCSV(csv.stdout)
        let header = try #require(table.first)
        let t = try #require(header.firstIndex(of: "t"))
        let m = try #require(header.firstIndex(of: "m"))
        #expect(table[1][t] == "1970-01-01T00:00:00.100Z")
        #expect(table[1][m] == "12.34")
        #expect(try deck("verify", path).status == 0)
    }

    @Test(arguments: [
        ("t=nan", "S.t: 'nan' is not a valid date"), ("t=inf", "is not a valid date"),
        ("t=1e300", "outside the years 0000 to 9999"), ("t=10000-01-01", "outside the years 0000 to 9999"),
        ("t=2026-06-30T23:59:60Z", "leap second"), ("d=nan", "S.d: 'nan' is not a valid double"),
        ("d=1e400", "finite number"), ("req=nan", "S.req: 'nan' is not a valid double"),
        ("m=123456789012345678901234567890123456789", "at most 38 significant digits"),
        ("m=٣", "is not a valid decimal"), ("j=1,\"admin\":true", "only one value"),
        ("j={\"a\":1,\"a\":2}", "duplicate member name"), ("l=http://x/a b", "a space (write %20)"),
        ("u={E621E1F8-C36C-495A-93FC-0C247A3E6E5F}", "is not a valid uuid"),
    ])
    func badValuesAreRefusedAsInvalidData(assignment: String, fragment: String) throws {
        let dir = try TemporaryDirectory()
        let path = try makePackage(dir)
        e2eExpectFailure(try deck("insert", path, "S", assignment), status: 65, fragment)
        let count = try deck("query", path, "S", "--count")
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

    /// A stored `1,"admin":true` (another writer's damage) must not add members to the output.
    @Test func queryJSONNeverEmbedsInvalidJSON() throws {
        let dir = try TemporaryDirectory()
        let path = try makePackage(dir)
        e2eExpectSuccess(try deck("insert", path, "S", "j=[1]"))
        e2eExpectSuccess(try deck("insert", path, "S", "j=[2]"))
        let db = try Database(path: path + "/store.sqlite", mode: .readWrite)
        try db.run(#"UPDATE S SET j = '1,"admin":true' WHERE _pk = 1"#)
        try db.run(#"UPDATE S SET j = '1}],"x":[{"y":2' WHERE _pk = 2"#)
        db.close()
        let records = try records(path)
        #expect(records.count == 2)
        #expect(member(records[0], "j") == .string(#"1,"admin":true"#))
        #expect(member(records[0], "admin") == nil)
        #expect(member(records[1], "j") == .string(#"1}],"x":[{"y":2"#))
        #expect(records.allSatisfy { $0.count == 15 })
        // And verify calls it corruption.
        let verify = try deck("verify", path, "--json")
        #expect(verify.status == 65)
        #expect(verify.stdout.contains("value-invalid"))
        #expect(verify.stdout.contains("S #1.j"))
    }

    @Test func verifyReportsDamagedCells() throws {
        let dir = try TemporaryDirectory()
        let path = try makePackage(dir)
        e2eExpectSuccess(try deck("insert", path, "S", "m=1.5", "t=2026-11-30"))
        let db = try Database(path: path + "/store.sqlite", mode: .readWrite)
        try db.run("UPDATE S SET m = '1.50', t = 9e999")
        db.close()
        let result = try deck("verify", path)
        #expect(result.status == 65)
        #expect(result.stdout.contains("S #1.m"), "\(result.stdout)")
        #expect(result.stdout.contains("not the canonical form '1.5'"), "\(result.stdout)")
        #expect(result.stdout.contains("S #1.t"), "\(result.stdout)")
    }

    /// Schema-file errors name the attribute and the element, and never call a number "not valid JSON".
    @Test(arguments: [
        (#"{"name":"x","type":"integer","options":["unique","bogus"]}"#, "options[1]"),
        (#"{"name":"when","type":"date","default":"soon"}"#, "attribute 'when': invalid default: 'soon'"),
        (
            #"{"name":"n","type":"data","externalThreshold":1.5}"#,
            "externalThreshold must be a whole number of bytes, not 1.5"
        ),
        (#"{"name":"r","type":"double","default":1e400}"#, "attribute 'r': invalid default: '1e400'"),
        (
            #"{"name":"c","type":"integer","default":99999999999999999999}"#,
            "'99999999999999999999' is not a valid integer"
        ),
        (#"{"name":"x","type":"string","name":"y"}"#, "duplicate member name 'name'"),
    ])
    func schemaFileErrors(attribute: String, fragment: String) throws {
        let dir = try TemporaryDirectory()
        let schemaPath = dir.appending("bad.json")
        try (#"{"version":"1","entities":[{"name":"A","attributes":["# + attribute + "]}]}")
            .write(toFile: schemaPath, atomically: true, encoding: .utf8)
        let result = try deck("new", dir.appending("X.deck"), "--schema", schemaPath)
        e2eExpectFailure(result, status: 65, "invalid schema: \(schemaPath): ", fragment)
        #expect(
            !result.stderr.contains("not valid JSON") || fragment.contains("duplicate"), "\(result.stderr)")
    }

    /// Random values of every type (seeded), written with the library and read back from
    /// `deck query --json`: each JSON form gives back the identical value.
    @Test func randomValuesThroughQueryJSON() throws {
        let seed = TestSeed("EndToEndValueTests.randomValues", filter: "EndToEndValueTests")
        print("End to end: values: \(seed)")
        var generator = seed.generator()
        func next() -> UInt64 { generator.next() }
        func below(_ n: UInt64) -> UInt64 { next() % n }
        func randomJSON(_ depth: Int) -> String {
            switch below(depth > 3 ? 4 : 6) {
            case 0: return ["null", "true", "false"][Int(below(3))]
            case 1:
                return (below(2) == 0 ? "-" : "") + String(next()) + (below(2) == 0 ? "e\(below(999))" : "")
            case 2: return "\"k\\u00e9\\n\\ud83c\\udccf\(below(100))\""
            case 3: return "0.\(next())"
            case 4:
                return " [ " + (0..<below(4)).map { _ in randomJSON(depth + 1) }.joined(separator: " ,\n")
                    + " ] "
            default:
                return "{"
                    + (0..<below(4)).map { "\"m\($0)\" : " + randomJSON(depth + 1) }.joined(separator: ",")
                    + "}"
            }
        }
        let dir = try TemporaryDirectory()
        let path = try makePackage(dir)
        let package = try PackageStore.open(at: URL(fileURLWithPath: path))
        let transaction = try package.beginTransaction()
        var written: [[String: Value]] = []
        // Seconds since 2001, as a new document stores them (spec 7.1).
        let low = Timestamp.earliest.timeIntervalSinceReferenceDate
        let high = Timestamp.end.timeIntervalSinceReferenceDate
        for _ in 0..<200 {
            var scalars = String.UnicodeScalarView()
            for _ in 0..<below(12) {
                if let scalar = Unicode.Scalar(UInt32(below(0x11_0000))) { scalars.append(scalar) }
            }
            var double = Double(bitPattern: next())
            while !double.isFinite { double = Double(bitPattern: next()) }
            var seconds = Double(bitPattern: below(0x4271_8000_0000_0000)) * (below(2) == 0 ? 1 : -1)
            if !(seconds >= low && seconds < high) {
                seconds = low + Double(below(1 << 53)) / Double(1 << 53) * (high - low)
            }
            let digits = (0..<(1 + below(38))).map { _ in String(below(10)) }.joined() + String(1 + below(9))
            let decimal = try #require(
                try Value(
                    parsing: (below(2) == 0 ? "-" : "") + digits.suffix(38) + "e\(Int(below(200)) - 100)",
                    as: .decimal))
            let uuid = UUID()
            let values: [String: Value] = [
                "s": .string(String(scalars)), "i": .integer(Int64(bitPattern: next())), "d": .double(double),
                "b": .bool(below(2) == 0), "t": .date(Timestamp(timeIntervalSinceReferenceDate: seconds)),
                "raw": .data(Data((0..<below(40)).map { _ in UInt8(below(256)) })), "u": .uuid(uuid),
                "l": try Value(
                    parsing:
                        "https://h\(below(1000)).example/p%\(String(format: "%02X", below(256)))?q=\(next())",
                    as: .url),
                "m": decimal, "j": .json(randomJSON(0)),
            ]
            try transaction.insert("S", values)
            written.append(values)
        }
        try transaction.commit()
        try package.close()
        let records = try records(path)
        #expect(records.count == written.count)
        for (record, values) in zip(records, written) {
            for (key, value) in values {
                let json = member(record, key)
                let context = "\(seed), \(key): wrote \(value), read \(String(describing: json))"
                switch (value, json) {
                case (.string(let v), .string(let r)?): #expect(v == r, "\(context)")
                case (.integer(let v), .number(let r)?): #expect(String(v) == r, "\(context)")
                case (.double(let v), .number(let r)?):
                    #expect(Double(r)?.bitPattern == (v == 0 ? 0.0 : v).bitPattern, "\(context)")
                case (.bool(let v), .bool(let r)?): #expect(v == r, "\(context)")
                case (.date(let v), .string(let r)?):
                    #expect(r == v.description, "\(context)")
                    #expect(Timestamp(parsing: r) == v, "\(context)")
                case (.data(let v), .string(let r)?): #expect(Data(base64Encoded: r) == v, "\(context)")
                case (.uuid(let v), .string(let r)?): #expect(r == v.uuidString.lowercased(), "\(context)")
                case (.url(let v), .string(let r)?): #expect(r == v.absoluteString, "\(context)")
                case (.decimal, .string(let r)?): #expect(r == value.description, "\(context)")
                case (.json(let v), let r?):
                    #expect(
                        JSONText.isNull(v) ? r == .null : (try? JSONText.parse(Array(v.utf8))) == r,
                        "\(context)")
                default: Issue.record("\(context)")
                }
            }
        }
    }
}
