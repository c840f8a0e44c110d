import DeckTestTiming
import Foundation
import Testing

/// `deck query` on the flash-cards sample: every `--where` operator family, sorting, paging,
/// counting, the three output formats and the errors.
///
/// Sample cards by id: 1 hola, 2 adiós, 3 gracias, 4 por favor, 5 el gato, 6 el perro (deck #1
/// "Spanish basics"); 7 bonjour, 8 merci, 9 le chat, 10 la pomme (deck #2 "French basics").
/// Cards 1, 3, 5, 6, 7 and 9 have images; card N was created at 2026-11-18T(11+N):06:40Z.
@Suite("End to end: deck query", .timed)
struct EndToEndQueryTests {
    /// The ids of the cards matching `expression`, via `--json`.
    func ids(
        _ path: String, _ expression: String, entity: String = "Card",
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [Int] {
        let result = try deck("query", path, entity, "--where", expression, "--json")
        #expect(result.status == 0, "\(expression): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.isEmpty, sourceLocation: sourceLocation)
        return try e2eIDs(result.stdout)
    }

    @Test func whereOperatorFamilies() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let cases: [(String, [Int])] = [
            // comparison
            ("front = hola", [1]),
            ("front == 'hola'", [1]),
            ("back != 'hello'", [2, 3, 4, 5, 6, 8, 9, 10]),
            ("back <> 'hello'", [2, 3, 4, 5, 6, 8, 9, 10]),
            ("front > 'm'", [4, 8]),
            ("reviewCount >= 0", Array(1...10)),
            ("reviewCount < 0", []),
            ("deck = #2", [7, 8, 9, 10]),
            // text operators
            ("front contains 'el'", [5, 6]),
            ("front begins-with 'el'", [5, 6]),
            ("front beginswith 'la'", [10]),
            ("back ends-with 'cat'", [5, 9]),
            ("back endswith 'you'", [3, 8]),
            ("front contains 'EL'", []),
            ("front contains[c] 'EL'", [5, 6]),
            ("front begins-with[c] 'HO'", [1]),
            ("back ends-with[c] 'CAT'", [5, 9]),
            // null
            ("image is null", [2, 4, 8, 10]),
            ("image is not null", [1, 3, 5, 6, 7, 9]),
            // membership
            ("front in ('hola', 'merci', 'nothing')", [1, 8]),
            ("front in ()", []),
            // combinations and precedence
            ("front contains 'a' and image is null", [2, 4, 10]),
            ("front = hola or front = merci", [1, 8]),
            ("not image is null", [1, 3, 5, 6, 7, 9]),
            ("!(deck = #1)", [7, 8, 9, 10]),
            ("front = hola or front = merci and image is null", [1, 8]),
            ("(front = hola or front = merci) and image is null", [8]),
            ("front=hola||front=merci", [1, 8]),
            // record ids
            ("_id > 8", [9, 10]),
            ("_id in (2, 4)", [2, 4]),
            // membership in a to-many relationship
            ("tags in (#1)", [1, 2, 7]),
            ("tags in (#3, #5)", [5, 6, 9, 10]),
            // dotted path through a to-one relationship
            ("deck.title = 'Spanish basics'", [1, 2, 3, 4, 5, 6]),
            ("deck.title begins-with[c] 'french'", [7, 8, 9, 10]),
            // dates
            ("creationDate >= 2026-11-18T15:00:00Z", [4, 5, 6, 7, 8, 9, 10]),
            ("creationDate < 2026-11-18T14:00:00.000Z", [1, 2]),
            ("creationDate > 2026-11-19", []),
        ]
        for (expression, expected) in cases {
            #expect(try ids(path, expression) == expected, "--where \(expression)")
        }
    }

    @Test func whereOnOtherEntities() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        #expect(try ids(path, "name in (animal, noun)", entity: "Tag") == [3, 4])
        #expect(try ids(path, "title ends-with basics", entity: "Deck") == [1, 2])
        #expect(try ids(path, "created >= 2026-11-19", entity: "Deck") == [2])
    }

    @Test func sortDescending() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Card", "--sort", "front:desc", "--json")
        e2eExpectSuccess(result)
        let fronts = try e2eColumn(result.stdout, "front")
        #expect(fronts.first == "por favor")
        #expect(fronts.last == "adiós")
        #expect(fronts.count == 10)
        // Ascending is the reverse.
        let ascending = try e2eColumn(
            try deck("query", path, "Card", "--sort", "front", "--json").stdout, "front")
        #expect(ascending == fronts.reversed())
    }

    @Test func multipleSortKeys() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Card", "--sort", "deck.title:desc", "-s", "front", "--json")
        e2eExpectSuccess(result)
        #expect(try e2eIDs(result.stdout) == [2, 5, 6, 3, 1, 4, 7, 10, 9, 8])
        let byBack = try deck("query", path, "Card", "--sort", "back", "--sort", "front:desc", "--json")
        #expect(try e2eColumn(byBack.stdout, "front").prefix(3) == ["adiós", "hola", "bonjour"])
    }

    /// Sort keys are limited by the terms SQLite sorts by (a key sorted by folded text counts
    /// twice): 64 keys with a path among them crashed SQLite 3.40, and so `deck`.
    @Test func tooManySortKeysAreRefusedNotACrash() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let many = ["deck.title"] + Array(repeating: "front", count: 63)
        let refused = try runProduct("deck", ["query", path, "Card"] + many.flatMap { ["--sort", $0] })
        #expect(refused.status == 65, "\(refused.stderr)")
        #expect(refused.stderr.contains("at most 62"), "\(refused.stderr)")
        let atTheLimit = try runProduct(
            "deck",
            ["query", path, "Card", "--json"]
                + (["deck.title"] + Array(repeating: "creationDate", count: 61))
                .flatMap { ["--sort", $0] })
        e2eExpectSuccess(atTheLimit)
    }

    @Test func sortById() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Card", "--sort", "_id:desc", "--limit", "3", "--json")
        e2eExpectSuccess(result)
        #expect(try e2eIDs(result.stdout) == [10, 9, 8])
    }

    @Test func limitAndOffset() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        func page(_ extra: String...) throws -> [Int] {
            let result = try e2eDeck(["query", path, "Card", "--sort", "front", "--json"] + extra)
            e2eExpectSuccess(result)
            return try e2eIDs(result.stdout)
        }
        let all = try page()
        #expect(all.count == 10)
        #expect(try page("--limit", "3") == Array(all[0..<3]))
        #expect(try page("--limit", "3", "--offset", "3") == Array(all[3..<6]))
        #expect(try page("--offset", "8") == Array(all[8...]))
        #expect(try page("--limit", "0") == [])
        #expect(try page("--offset", "50") == [])
        // Text output counts what it shows.
        let text = try deck("query", path, "Card", "--limit", "2")
        e2eExpectSuccess(text)
        #expect(text.stdout.hasSuffix("(2 records)\n"))
        #expect(try deck("query", path, "Card", "--limit", "1").stdout.hasSuffix("(1 record)\n"))
    }

    @Test func count() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let all = try deck("query", path, "Card", "--count")
        e2eExpectSuccess(all)
        #expect(all.stdout == "10\n")
        let filtered = try deck("query", path, "Card", "--count", "--where", "image is not null")
        e2eExpectSuccess(filtered)
        #expect(filtered.stdout == "6\n")
        let json = try deck(
            "query", path, "Card", "--count", "--json", "--where", "deck.title = 'French basics'")
        e2eExpectSuccess(json)
        #expect(try e2eJSONObject(json.stdout)["count"] as? Int == 4)
    }

    @Test func jsonOutput() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Card", "--json")
        e2eExpectSuccess(result)
        let records = try e2eJSONArray(result.stdout)
        #expect(records.count == 10)
        let blobs = try e2eBlobFiles(path)
        for record in records {
            #expect(record["_id"] is Int)
            #expect(record["_entity"] as? String == "Card")
            for key in ["front", "back", "creationDate", "image", "reviewCount", "deck"] {
                #expect(record[key] != nil, "record lacks \(key)")
            }
        }
        let hola = try #require(records.first)
        #expect(hola["_id"] as? Int == 1)
        #expect(hola["front"] as? String == "hola")
        #expect(hola["back"] as? String == "hello")
        #expect(hola["creationDate"] as? String == "2026-11-18T12:06:40.000Z")
        #expect(hola["reviewCount"] as? Int == 0)
        #expect(hola["deck"] as? Int == 1)
        let image = try #require(hola["image"] as? [String: Any])
        let digest = try #require(image["blob"] as? String)
        #expect(digest.count == 64)
        #expect(blobs[digest] != nil, "the image's blob file is in the package")
        #expect(image["size"] as? Int == 90_015)
        // A card without an image has null.
        #expect(records[1]["image"] is NSNull)
        // To-many relationships are not columns.
        #expect(hola["tags"] == nil)
    }

    @Test func jsonOfNoRecordsIsAnEmptyArray() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Card", "--where", "front = nothing", "--json")
        e2eExpectSuccess(result)
        #expect(try e2eJSONArray(result.stdout).isEmpty)
    }

    @Test func csvOutput() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        e2eExpectSuccess(
            try deck(
                "insert", path, "Card", "front=uno, dos", "back=say \"one\"", "creationDate=2026-11-30",
                "deck=#1"))
        let result = try deck("query", path, "Card", "--csv")
        e2eExpectSuccess(result)
        #expect(result.stdout.hasPrefix("_id,_entity,front,back,creationDate,image,reviewCount,deck\r\n"))
        let rows = e2eParseCSV(result.stdout)
        #expect(rows.count == 12)
        #expect(
            rows[0] == ["_id", "_entity", "front", "back", "creationDate", "image", "reviewCount", "deck"])
        #expect(rows.allSatisfy { $0.count == 8 }, "ragged CSV: \(rows)")
        #expect(rows[1][0...4] == ["1", "Card", "hola", "hello", "2026-11-18T12:06:40.000Z"])
        // CSV carries data in full: a blob as its digest (the same as --json's).
        let hola = try #require(
            try e2eJSONArray(try deck("query", path, "Card", "--json", "--limit", "1").stdout).first)
        #expect(rows[1][5] == (hola["image"] as? [String: Any])?["blob"] as? String)
        #expect(rows[1][7] == "1")
        #expect(rows[2][5] == "")
        let last = try #require(rows.last)
        #expect(last[2] == "uno, dos")
        #expect(last[3] == "say \"one\"")
        // The raw text quotes exactly those fields.
        #expect(
            result.stdout.contains(",Card,\"uno, dos\",\"say \"\"one\"\"\",2026-11-30T00:00:00.000Z,,0,1\r\n")
        )
    }

    @Test func awkwardTextSurvivesJSONAndCSV() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let name = "tab\there, line\nbreak \"quoted\" back\\slash \u{1} \u{2028} é 🃏"
        e2eExpectSuccess(try deck("insert", path, "Tag", "name=" + name))
        let json = try deck("query", path, "Tag", "--where", "_id = 6", "--json")
        e2eExpectSuccess(json)
        #expect(try e2eJSONArray(json.stdout).first?["name"] as? String == name)
        let csv = try deck("query", path, "Tag", "--where", "_id = 6", "--csv")
        e2eExpectSuccess(csv)
        #expect(e2eParseCSV(csv.stdout) == [["_id", "_entity", "name"], ["6", "Tag", name]])
        let text = try deck("query", path, "Tag", "--where", "_id = 6")
        e2eExpectSuccess(text)
        // The table keeps one line per record.
        #expect(text.stdout.split(separator: "\n").count == 4, "\(text.stdout)")
    }

    @Test func csvHeaderOnlyWhenNothingMatches() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Tag", "--csv", "--where", "name = nothing")
        e2eExpectSuccess(result)
        #expect(result.stdout == "_id,_entity,name\r\n")
    }

    @Test func textTable() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Tag", "--sort", "name")
        e2eExpectSuccess(result)
        #expect(
            result.stdout
                == """
                _id  name
                ---  --------
                3    animal
                2    courtesy
                5    food
                1    greeting
                4    noun
                (5 records)

                """)
    }

    @Test func unknownEntitySuggestsTheClosest() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Crad")
        e2eExpectFailure(result, status: 65, "unknown entity 'Crad'", "did you mean 'Card'")
        let lower = try deck("query", path, "card")
        e2eExpectFailure(lower, status: 65, "unknown entity 'card'", "did you mean 'Card'")
    }

    @Test func unknownAttributeInWhere() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Card", "--where", "frnt = 'hola'")
        e2eExpectFailure(result, status: 65, "'frnt'", "did you mean 'front'")
    }

    @Test func unknownSortKey() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Card", "--sort", "bak")
        e2eExpectFailure(result, status: 65, "'bak'", "did you mean 'back'")
    }

    @Test func toManyPathsCannotBeFollowed() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Tag", "--where", "cards.front = hola")
        e2eExpectFailure(result, status: 65, "to-many")
    }

    @Test func whereSyntaxErrorShowsColumnAndCaret() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Card", "--where", "front = 'hola' and")
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.count >= 3, "stderr: \(result.stderr)")
        #expect(lines[0] == "deck: --where: syntax error at column 19: expected a condition after 'and'")
        #expect(lines[1] == "front = 'hola' and")
        #expect(lines[2] == String(repeating: " ", count: 18) + "^")
    }

    @Test func whereSyntaxErrorInTheMiddle() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Card", "--where", "front = 'x' )")
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(
            lines.first?.hasPrefix("deck: --where: syntax error at column 13: ") == true, "\(result.stderr)")
        #expect(lines.dropFirst().first == "front = 'x' )")
        #expect(lines.dropFirst(2).first == String(repeating: " ", count: 12) + "^")
    }

    @Test func unterminatedString() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Card", "--where", "front = 'hola")
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("deck: --where: syntax error at column "))
        #expect(result.stderr.contains("^"))
    }

    @Test func jsonAndCSVTogether() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Card", "--json", "--csv")
        e2eExpectUsageError(result, command: "deck query", "--json and --csv cannot be combined")
    }

    @Test func queryOnAnEmptyEntity() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Empty.deck")
        e2eExpectSuccess(try deck("new", path, "--schema", e2eSampleSchemaPath))
        let text = try deck("query", path, "Card")
        e2eExpectSuccess(text)
        #expect(text.stdout.hasSuffix("(0 records)\n"))
        #expect(try deck("query", path, "Card", "--count").stdout == "0\n")
        #expect(try deck("query", path, "Card", "--json").stdout == "[]\n")
    }
}
