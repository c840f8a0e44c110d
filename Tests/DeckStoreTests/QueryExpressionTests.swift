import DeckQueryLanguage
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// The expression language on real stores: every construct of ``QueryExpression``, written with
/// the builder API and in `--where` syntax, and what a store returns for it; what cannot be
/// compiled is a ``DeckError`` naming the part; values never reach the SQL text.
@Suite("Query expressions", .timed)
struct QueryExpressionTests {
    static let schema = StoreSchema(entities: [
        Entity(
            "Deck",
            attributes: [
                Attribute("title", .string), Attribute("price", .decimal, isOptional: true),
                Attribute("due", .date, isOptional: true),
            ],
            relationships: [Relationship("cards", to: "Card", toMany: true, inverse: "deck")]),
        Entity(
            "Card",
            attributes: [
                Attribute("front", .string), Attribute("back", .string, isOptional: true),
                Attribute("reps", .integer), Attribute("lapses", .integer, isOptional: true),
                Attribute("ease", .double, isOptional: true), Attribute("done", .bool),
            ],
            relationships: [
                Relationship("deck", to: "Deck", inverse: "cards"),
                Relationship("tags", to: "Tag", toMany: true, inverse: "cards"),
            ]),
        Entity(
            "Tag", attributes: [Attribute("name", .string)],
            relationships: [Relationship("cards", to: "Card", toMany: true, inverse: "tags")]),
    ])

    /// Two decks; five cards; three tags (many-to-many).
    static func withCards(_ body: (StoreReader) throws -> Void) throws {
        try withTestDirectory { dir throws in
            let store = try makeTestStore(in: dir, schema: schema)
            try store.write { tx in
                let spanish = try tx.insert(
                    "Deck",
                    [
                        "title": .string("Spanish"), "price": .decimal(Decimal(string: "9.5")!),
                        "due": .string("2026-12-01"),
                    ])
                let french = try tx.insert("Deck", ["title": .string("French")])
                let verb = try tx.insert("Tag", ["name": .string("verb")])
                let noun = try tx.insert("Tag", ["name": .string("noun")])
                _ = try tx.insert("Tag", ["name": .string("unused")])
                let cards: [(String, String?, Int64, Int64?, Double?, Bool, Int64, [Int64])] = [
                    ("hola", "hello", 3, 1, 2.5, false, spanish, []),
                    ("Adiós", "goodbye", 0, nil, nil, true, spanish, [noun]),
                    ("comer", "comer", 7, 2, 1.3, false, spanish, [verb]),
                    ("manger", nil, 10, 5, 2.0, true, french, [verb, noun]),
                    ("ÉTÉ", "summer", 1, 0, 3.1, false, french, [noun]),
                ]
                for (front, back, reps, lapses, ease, done, deck, tags) in cards {
                    _ = try tx.insert(
                        "Card",
                        [
                            "front": .string(front), "back": back.map(Value.string) ?? .null,
                            "reps": .integer(reps),
                            "lapses": lapses.map(Value.integer) ?? .null,
                            "ease": ease.map(Value.double) ?? .null,
                            "done": .bool(done), "deck": .reference(deck), "tags": .references(tags),
                        ])
                }
            }
            try store.read { reader in try body(reader) }
            try store.close()
        }
    }

    /// The fronts of the cards `condition` matches, in insertion order.
    static func fronts(_ reader: StoreReader, _ condition: QueryExpression) throws -> [String] {
        try reader.fetch(RecordQuery("Card", where: condition)).compactMap {
            if case .string(let front)? = $0["front"] { front } else { nil }
        }
    }

    /// The fronts of the cards `text` (in `--where` syntax) matches.
    static func fronts(
        _ reader: StoreReader, _ text: String, sourceLocation: SourceLocation = #_sourceLocation
    )
        throws -> [String]
    {
        try fronts(reader, try QueryParser.parse(text))
    }

    @Test func comparisonsBetweenAnyOperands() throws {
        try Self.withCards { reader throws in
            #expect(try Self.fronts(reader, "front = `back`") == ["comer"])
            #expect(
                try Self.fronts(reader, "front != `back`") == ["hola", "Adiós", "manger", "ÉTÉ"],
                "null differs")
            #expect(try Self.fronts(reader, "reps > `lapses` * 3") == ["comer", "ÉTÉ"])
            #expect(
                try Self.fronts(reader, "lapses < `reps` and lapses >= 1") == ["hola", "comer", "manger"])
            #expect(try Self.fronts(reader, "3 < `reps`") == ["comer", "manger"])
            #expect(try Self.fronts(reader, "deck.title = `deck.title`").count == 5)
            #expect(try Self.fronts(reader, .property("reps").equals(.property("lapses") + 2)) == ["hola"])
            #expect(
                try Self.fronts(reader, .property("done")) == ["Adiós", "manger"], "a boolean is a condition"
            )
        }
    }

    @Test func arithmeticFollowsSQLite() throws {
        try Self.withCards { reader throws in
            #expect(try Self.fronts(reader, "(reps + 2) * 2 = 10") == ["hola"])
            #expect(try Self.fronts(reader, "reps / 2 = 3") == ["comer"], "integer division truncates")
            #expect(try Self.fronts(reader, "reps / 2.0 = 3.5") == ["comer"])
            #expect(try Self.fronts(reader, "-reps < -9") == ["manger"])
            #expect(try Self.fronts(reader, "reps - -1 = 1") == ["Adiós"])
            #expect(try Self.fronts(reader, "reps / 0 is null").count == 5, "division by zero is null")
            #expect(try Self.fronts(reader, "lapses + 1 is null") == ["Adiós"], "null propagates")
            #expect(try Self.fronts(reader, "ease * 2 > 5") == ["ÉTÉ"])
            #expect(try Self.fronts(reader, "reps + 1 > 2.5") == ["hola", "comer", "manger"])
            let big = QueryExpression.value(.integer(.max))
            #expect(
                try Self.fronts(reader, .property("reps") + big > big) == [
                    "hola", "comer", "manger", "ÉTÉ",
                ],
                "overflow becomes a double, as in SQLite")
        }
    }

    @Test func datesAndDecimalsCompute() throws {
        try withTestDirectory { dir throws in
            let store = try makeTestStore(in: dir, schema: Self.schema)
            let tx = try store.beginTransaction()
            defer { tx.rollback() }
            _ = try tx.insert(
                "Deck",
                [
                    "title": .string("a"), "price": .decimal(Decimal(string: "9.5")!),
                    "due": .string("2026-12-01"),
                ])
            _ = try tx.insert(
                "Deck", ["title": .string("b"), "price": .decimal(12), "due": .string("2026-12-03")])
            func titles(_ text: String) throws -> [String] {
                try tx.fetch(RecordQuery("Deck", where: try QueryParser.parse(text))).compactMap {
                    if case .string(let title)? = $0["title"] { title } else { nil }
                }
            }
            #expect(try titles("price * 2 > 20") == ["b"])
            #expect(try titles("price + 0.5 = 10") == ["a"])
            #expect(try titles("due + 86400 > '2026-12-02T12:00:00Z'") == ["b"])
            #expect(try titles("due - '2026-12-01' = 172800") == ["b"])
            #expect(try titles("due - 3600 < 2026-12-01") == ["a"])
            let error = expectDeckError { _ = try titles("due + due > 0") }
            guard case .invalidQuery(let message) = error else {
                Issue.record("expected invalidQuery, got \(String(describing: error))")
                return
            }
            #expect(message.contains("two dates can only be subtracted"))
            tx.rollback()
            try store.close()
        }
    }

    @Test func logicInNullTestsAndCoalescing() throws {
        try Self.withCards { reader throws in
            #expect(try Self.fronts(reader, "back is null") == ["manger"])
            #expect(try Self.fronts(reader, "back is not null").count == 4)
            #expect(
                try Self.fronts(reader, "not lapses > 0") == ["Adiós", "ÉTÉ"],
                "two-valued: not of a null test holds")
            #expect(try Self.fronts(reader, "lapses ?? 0 = 0") == ["Adiós", "ÉTÉ"])
            #expect(try Self.fronts(reader, "coalesce(back, front) = manger") == ["manger"])
            #expect(try Self.fronts(reader, "coalesce(lapses, ease, 9) = 9") == ["Adiós"])
            #expect(try Self.fronts(reader, .property("ease") ?? 0 < 1.5) == ["Adiós", "comer"])
            #expect(
                try Self.fronts(reader, "front in (hola, comer) or reps in (10)") == [
                    "hola", "comer", "manger",
                ])
            #expect(try Self.fronts(reader, "front not in (hola, comer)") == ["Adiós", "manger", "ÉTÉ"])
            #expect(
                try Self.fronts(reader, "not lapses in (1, null)").count == 4,
                "null in a list matches nothing")
            #expect(try Self.fronts(reader, "true and not false").count == 5)
        }
    }

    @Test func textTestsInEachFolding() throws {
        try Self.withCards { reader throws in
            #expect(try Self.fronts(reader, "front contains é") == [])
            #expect(try Self.fronts(reader, "front contains[c] été") == [], "ASCII folding leaves É alone")
            #expect(try Self.fronts(reader, "front contains[c] ÉtÉ") == ["ÉTÉ"])
            #expect(try Self.fronts(reader, "front contains[cd] e") == ["comer", "manger", "ÉTÉ"])
            #expect(try Self.fronts(reader, "front equals[cd] adios") == ["Adiós"])
            #expect(try Self.fronts(reader, "front equals[c] HOLA") == ["hola"])
            #expect(try Self.fronts(reader, "front equals HOLA") == [])
            #expect(try Self.fronts(reader, "front begins-with[cd] ADI") == ["Adiós"])
            #expect(try Self.fronts(reader, "front ends-with[cd] 'OS'") == ["Adiós"])
            #expect(try Self.fronts(reader, "front ends-with[cd] ''").count == 5)
            #expect(try Self.fronts(reader, "back contains[cd] ''").count == 4, "a null text passes no test")
            #expect(
                try Self.fronts(reader, "front contains[cd] `back`") == ["comer"], "a needle from a column")
            #expect(try Self.fronts(reader, "back begins-with `front`") == ["comer"])
            #expect(try Self.fronts(reader, "deck.title begins-with[c] SPAN").count == 3)
            #expect(
                try Self.fronts(reader, .property("front").contains("ÉT", .caseAndDiacriticInsensitive)) == [
                    "ÉTÉ"
                ])
        }
    }

    @Test func toManyQuantifiersAndCounts() throws {
        try Self.withCards { reader throws in
            #expect(try Self.fronts(reader, "tags.any(name = verb)") == ["comer", "manger"])
            #expect(
                try Self.fronts(reader, "tags.all(name = noun)") == ["hola", "Adiós", "ÉTÉ"],
                "all holds when empty")
            #expect(try Self.fronts(reader, "tags.count >= 2") == ["manger"])
            #expect(try Self.fronts(reader, "tags.count = 0") == ["hola"])
            #expect(try Self.fronts(reader, "tags is null") == ["hola"])
            #expect(try Self.fronts(reader, "deck.cards.count > 2") == ["hola", "Adiós", "comer"])
            #expect(
                try Self.fronts(reader, "tags.any(cards.any(front = hola or reps > 9))")
                    == ["Adiós", "comer", "manger", "ÉTÉ"])
            #expect(
                try Self.fronts(reader, "tags.any(name = noun and cards.count > 2)") == [
                    "Adiós", "manger", "ÉTÉ",
                ])
            #expect(try Self.fronts(reader, "deck.cards.any(tags.count = 2)") == ["manger", "ÉTÉ"])
            // The builder's closures can name the element and the record being queried.
            let sameAsBack = QueryExpression.property("deck").property("cards").any {
                $0.property("front").equals(.property("back"))
            }
            #expect(try Self.fronts(reader, sameAsBack) == ["comer"])
            let deckSizes = try reader.fetch(
                RecordQuery(
                    "Deck", where: .property("cards").count > 2, sort: [SortKey(.property("cards").count)]))
            #expect(deckSizes.map(\.id).count == 1)
            let sorted = try reader.fetch(
                RecordQuery(
                    "Card", sort: [SortKey(.property("tags").count, ascending: false), SortKey("front")]))
            #expect(sorted.first?["front"] == .string("manger"))
        }
    }

    @Test func quantifiersRespectEntityFamilies() throws {
        try withTestDirectory { dir throws in
            let library = try InheritanceRelationshipTests.library(in: dir)
            let store = library.store
            var tx = try store.beginTransaction()
            defer { tx.rollback() }
            // Books and films share the column `owner`: Ann's books are the book and the paperback only.
            func people(_ text: String) throws -> [Int64] {
                try tx.fetchIDs(RecordQuery("Person", where: try QueryParser.parse(text)))
            }
            #expect(try people("books.count = 2") == [library.ann])
            #expect(try people("films.count = 1") == [library.ann])
            #expect(try people("books.any(title = Alien)") == [])
            #expect(try people("films.any(title = Alien)") == [library.ann])
            #expect(try people("books.all(isbn in ('1', '2')) and books.count > 0") == [library.ann])
            try tx.update("Person", id: library.bob, ["watched": .references([library.film])])
            try tx.commit()
            tx = try store.beginTransaction()
            #expect(try people("watched.any(title = Alien and owner.name = Ann)") == [library.bob])
            #expect(try people("watched.count = 0") == [library.ann])
            #expect(
                try tx.fetchIDs(
                    RecordQuery("Film", where: try QueryParser.parse("watchers.any(name = Bob)")))
                    == [library.film])
            tx.rollback()
            try store.close()
        }
    }

    @Test func whatCannotCompileIsAnErrorNamingThePart() throws {
        try Self.withCards { reader throws in
            let cases: [(String, String)] = [
                ("front + 1 > 2", "'front' is a string; arithmetic"),
                ("reps contains x", "'reps' is an integer, not text"),
                ("front = `reps` + 1", "compares"),
                ("tags > 2", "only = and != (membership)"),
                ("front.any(x = 1)", "any applies to a to-many relationship"),
                ("deck.any(title = x)", "any applies to a to-many relationship"),
                ("tags.name = x", "'tags' in 'tags.name' is a to-many relationship"),
                ("reps < null", "always false"),
                ("done + 1 = 2", "is a bool"),
            ]
            for (text, fragment) in cases {
                let error = expectDeckError { _ = try Self.fronts(reader, text) }
                switch error {
                case .invalidQuery(let message)?:
                    #expect(message.contains(fragment), "\(text): \(message)")
                case .unknownProperty?:
                    #expect(text.hasPrefix("front.any"), "\(text)")
                default:
                    Issue.record("\(text): expected invalidQuery, got \(String(describing: error))")
                }
            }
            let unknown = expectDeckError { _ = try Self.fronts(reader, "tags.any(nmae = x)") }
            guard case .unknownProperty("Tag", "nmae", _) = unknown else {
                Issue.record("expected unknownProperty, got \(String(describing: unknown))")
                return
            }
            let deep = (0..<12).reduce(QueryExpression.property("reps")) { e, _ in e + 1 }
            let tooDeep = expectDeckError { _ = try Self.fronts(reader, deep > 3) }
            guard case .invalidQuery(let message) = tooDeep else {
                Issue.record("expected invalidQuery, got \(String(describing: tooDeep))")
                return
            }
            #expect(message.contains("levels deep"))
            let unbound = expectDeckError {
                _ = try Self.fronts(reader, .path(.init(["name"], from: .init("nowhere"))).equals("x"))
            }
            guard case .invalidQuery(let text) = unbound else {
                Issue.record("expected invalidQuery, got \(String(describing: unbound))")
                return
            }
            #expect(text.contains("$nowhere"))
        }
    }

    @Test func valuesAreBoundNeverSpliced() throws {
        try Self.withCards { reader throws in
            for hostile in [
                "x'; DROP TABLE Card; --", "\") OR 1=1 --", "' OR '1'='1", "%", "_", "\u{0}", "ÉTÉ' --",
            ] {
                #expect(try Self.fronts(reader, .property("front").equals(.value(.string(hostile)))) == [])
                #expect(
                    try Self.fronts(
                        reader,
                        .property("front").contains(.value(.string(hostile)), .caseAndDiacriticInsensitive))
                        == [])
            }
            #expect(try Self.fronts(reader, "front = 'x\\'; DROP TABLE Card; --'") == [])
            let error = expectDeckError { _ = try Self.fronts(reader, "`front\"; DROP TABLE Card; --` = 1") }
            guard case .unknownProperty = error else {
                Issue.record("expected unknownProperty, got \(String(describing: error))")
                return
            }
            #expect(try reader.count(RecordQuery("Card")) == 5)
            // Like's wildcards are plain characters to every text test.
            #expect(try Self.fronts(reader, "front contains '%'") == [])
            #expect(try Self.fronts(reader, "front contains[c] '_'") == [])
        }
    }

    @Test func hugeListsAndManyValuesStayWithinTheLimits() throws {
        try Self.withCards { reader throws in
            let list = (0..<Int64(RecordQuery.Limits.values)).map { QueryExpression.value(.integer($0)) }
            #expect(try Self.fronts(reader, .property("reps").isIn(list)).count == 5)
            let text =
                "reps in (" + (0..<RecordQuery.Limits.values).map(String.init).joined(separator: ",") + ")"
            #expect(try Self.fronts(reader, text).count == 5)
            let error = expectDeckError {
                _ = try Self.fronts(reader, .property("reps").isIn(list + [.value(.integer(-1))]))
            }
            guard case .invalidQuery(let message) = error else {
                Issue.record("expected invalidQuery, got \(String(describing: error))")
                return
            }
            #expect(message.contains("more than \(RecordQuery.Limits.values) values"))
        }
    }
}

/// The `--where` syntax of the constructs beyond comparisons with a value, and hostile input.
@Suite("Query parser: expressions", .timed)
struct QueryParserExpressionTests {
    @Test func operandsAndPrecedence() throws {
        let reps = QueryExpression.property("reps")
        let lapses = QueryExpression.property("lapses")
        #expect(
            try QueryParser.parse("reps + 1 * 2 > 3") == (reps + QueryExpression.value(.integer(1)) * 2 > 3))
        #expect(try QueryParser.parse("(reps + 1) * 2 > 3") == ((reps + 1) * 2 > 3))
        #expect(try QueryParser.parse("reps - 1 - 2 = 0") == (reps - 1 - 2).equals(0))
        #expect(
            try QueryParser.parse("lapses ?? 0 + 1 < 2")
                == (lapses ?? QueryExpression.value(.integer(0)) + 1 < 2))
        #expect(try QueryParser.parse("reps > `lapses`") == (reps > lapses))
        #expect(try QueryParser.parse("reps > `deck`.size") == (reps > .property("deck.size")))
        #expect(try QueryParser.parse("reps > -`lapses`") == (reps > -lapses))
        #expect(try QueryParser.parse("-reps > 2") == (-reps > 2))
        #expect(
            try QueryParser.parse("5 = reps") == QueryExpression.value(.integer(5)).equals("reps"),
            "on the right, a bare word is text")
        #expect(try QueryParser.parse("deck-title = 1") == (.property("deck") - .property("title")).equals(1))
        #expect(
            try QueryParser.parse("due = 2026-11-30") == QueryExpression.property("due").equals("2026-11-30"))
        #expect(
            try QueryParser.parse("coalesce(a, b, 3) = 3")
                == QueryExpression.coalesce(.property("a"), .coalesce(.property("b"), 3)).equals(3))
        #expect(try QueryParser.parse("a not in (1, 2)") == .not(QueryExpression.property("a").isIn([1, 2])))
        #expect(
            try QueryParser.parse("a equals[cd] x")
                == QueryExpression.property("a").equals("x", .caseAndDiacriticInsensitive))
        #expect(try QueryParser.parse("tags.count > 3") == (QueryExpression.property("tags.count") > 3))
    }

    @Test func quantifiersBindTheirElement() throws {
        let parsed = try QueryParser.parse("tags.any(name = x and cards.all(reps > 1))")
        guard case .any(.path(let collection), let outer, .and(let parts)) = parsed else {
            Issue.record("parsed as \(parsed)")
            return
        }
        #expect(collection.names == ["tags"] && collection.variable == nil)
        #expect(parts.first == .path(.init(["name"], from: outer)).equals("x"))
        guard case .all(.path(let inner), let variable, let body) = parts.last else {
            Issue.record("parsed as \(parsed)")
            return
        }
        #expect(inner == .init(["cards"], from: outer))
        #expect(variable != outer)
        #expect(body == (.path(.init(["reps"], from: variable)) > 1))
        // `any` and `all` are names anywhere else.
        #expect(try QueryParser.parse("deck.any = 1") == QueryExpression.property("deck.any").equals(1))
    }

    @Test(
        "errors at a position",
        arguments: [
            (
                "reps > lapses * 2", 15,
                "'lapses' is text here; on the right of an operator write a property in backticks: `lapses`"
            ),
            ("reps + > 1", 8, "expected a key before '>'"),
            ("(reps + 1) and a = 1", 12, "expected an operator after '(reps + 1)', found 'and'"),
            ("not reps", 9, "expected an operator after 'reps'"),
            ("(not reps)", 10, "'not' needs a condition, not a value; compare the value with something"),
            (
                "(a = 1 and reps)", 16,
                "'and' needs a condition, not a value; compare the value with something"
            ),
            ("(reps + 1)", 11, "expected an operator after '(reps + 1)'"),
            ("a = (b = 1)", 12, "expected a value after '=', found a condition"),
            ("tags.any(name = x", 9, "unbalanced parenthesis: this '(' is never closed"),
            ("a = coalesce(1)", 5, "coalesce needs at least two values"),
            (
                "a contains[cu] x", 11,
                "unknown option after 'contains'; '[c]' ignores ASCII case, '[cd]' case and diacritics (Unicode), '[u]' case (Unicode)"
            ),
            ("a not b", 7, "expected 'in' after 'not', found 'b'"),
            ("a = 'unterminated", 5, "unterminated string: this single quote is never closed"),
        ])
    func errors(text: String, column: Int, message: String) {
        do {
            let parsed = try QueryParser.parse(text)
            Issue.record("'\(text)' parsed as \(parsed)")
        } catch {
            #expect(error.message == message)
            #expect(error.column == column)
        }
    }

    @Test func deepInputIsRefusedNotACrash() throws {
        for text in [
            "a = " + String(repeating: "-(", count: 5_000) + "`b`" + String(repeating: ")", count: 5_000),
            String(repeating: "a + ", count: 10_000) + "1 > 0",
            String(repeating: "t.any(", count: 1_000) + "a = 1" + String(repeating: ")", count: 1_000),
            "a ?? " + String(repeating: "b ?? ", count: 5_000) + "1 = 1",
            "a = coalesce(" + String(repeating: "coalesce(", count: 1_000) + "1, 2"
                + String(repeating: ")", count: 1_001),
        ] {
            #expect(throws: QuerySyntaxError.self) { _ = try QueryParser.parse(text) }
        }
        // Within the limit, a deep expression parses; the store refuses what it cannot compile.
        let ninetyNine = String(repeating: "a + ", count: 99) + "1 > 0"
        #expect(throws: Never.self) { _ = try QueryParser.parse(ninetyNine) }
    }
}
