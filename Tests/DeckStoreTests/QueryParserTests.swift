import DeckQueryLanguage
import DeckStore
import DeckTestSupport
import DeckTestTiming
import Testing

@Suite("QueryParser", .timed)
struct QueryParserTests {
    /// Parses `text`, recording a test issue (and returning `.all`) if it does not parse.
    private func parsed(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> QueryExpression
    {
        do {
            return try QueryParser.parse(text)
        } catch {
            Issue.record("'\(text)' did not parse: \(error)", sourceLocation: sourceLocation)
            return true
        }
    }

    /// The error parsing `text` throws, recording a test issue if it parses.
    private func parseError(
        _ text: String, sourceLocation: SourceLocation = #_sourceLocation
    ) -> QuerySyntaxError? {
        do {
            let filter = try QueryParser.parse(text)
            Issue.record("'\(text)' parsed as \(filter)", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    private static let a1: QueryExpression = .compare(.property("a"), .equal, .value(.integer(1)))
    private static let b2: QueryExpression = .compare(.property("b"), .equal, .value(.integer(2)))
    private static let c3: QueryExpression = .compare(.property("c"), .equal, .value(.integer(3)))

    // MARK: - Operators

    @Test(
        "comparison operators",
        arguments: [
            ("a = 1", QueryExpression.compare(.property("a"), .equal, .value(.integer(1)))),
            ("a == 1", .compare(.property("a"), .equal, .value(.integer(1)))),
            ("a != 1", .compare(.property("a"), .notEqual, .value(.integer(1)))),
            ("a <> 1", .compare(.property("a"), .notEqual, .value(.integer(1)))),
            ("a < 1", .compare(.property("a"), .less, .value(.integer(1)))),
            ("a <= 1", .compare(.property("a"), .lessOrEqual, .value(.integer(1)))),
            ("a > 1", .compare(.property("a"), .greater, .value(.integer(1)))),
            ("a >= 1", .compare(.property("a"), .greaterOrEqual, .value(.integer(1)))),
            ("front=hola", .compare(.property("front"), .equal, .value(.string("hola")))),
            ("front==hola", .compare(.property("front"), .equal, .value(.string("hola")))),
            ("front!='hola'", .compare(.property("front"), .notEqual, .value(.string("hola")))),
            ("n<>2", .compare(.property("n"), .notEqual, .value(.integer(2)))),
            ("n<=2", .compare(.property("n"), .lessOrEqual, .value(.integer(2)))),
            ("n>=2", .compare(.property("n"), .greaterOrEqual, .value(.integer(2)))),
            ("  n\t>\n2  ", .compare(.property("n"), .greater, .value(.integer(2)))),
        ])
    func comparison(text: String, expected: QueryExpression) {
        #expect(parsed(text) == expected)
    }

    @Test(
        "text operators",
        arguments: [
            (
                "front contains hola",
                QueryExpression.text(.property("front"), .contains, .value(.string("hola")), .exact)
            ),
            ("front begins-with 'ho'", .text(.property("front"), .beginsWith, .value(.string("ho")), .exact)),
            ("front beginswith ho", .text(.property("front"), .beginsWith, .value(.string("ho")), .exact)),
            ("front ends-with \"la\"", .text(.property("front"), .endsWith, .value(.string("la")), .exact)),
            ("front endswith la", .text(.property("front"), .endsWith, .value(.string("la")), .exact)),
            (
                "front contains[c] HOLA",
                .text(.property("front"), .contains, .value(.string("HOLA")), .asciiCaseInsensitive)
            ),
            (
                "front begins-with[c] Ho",
                .text(.property("front"), .beginsWith, .value(.string("Ho")), .asciiCaseInsensitive)
            ),
            (
                "front ends-with[C] 'A'",
                .text(.property("front"), .endsWith, .value(.string("A")), .asciiCaseInsensitive)
            ),
            (
                "front ENDSWITH[c] a",
                .text(.property("front"), .endsWith, .value(.string("a")), .asciiCaseInsensitive)
            ),
            ("front Begins-With x", .text(.property("front"), .beginsWith, .value(.string("x")), .exact)),
            (
                "front contains 2026-11",
                .text(.property("front"), .contains, .value(.string("2026-11")), .exact)
            ),
            ("front contains \"5\"", .text(.property("front"), .contains, .value(.string("5")), .exact)),
            ("front contains ''", .text(.property("front"), .contains, .value(.string("")), .exact)),
            ("front contains'x'", .text(.property("front"), .contains, .value(.string("x")), .exact)),
        ])
    func textOperator(text: String, expected: QueryExpression) {
        #expect(parsed(text) == expected)
    }

    @Test("is null and is not null")
    func nullTests() {
        #expect(parsed("back is null") == .isNull(.property("back")))
        #expect(parsed("back is not null") == .not(.isNull(.property("back"))))
        #expect(parsed("back IS NOT NULL") == .not(.isNull(.property("back"))))
        #expect(parsed("back Is Null") == .isNull(.property("back")))
        #expect(parsed("back = null") == .compare(.property("back"), .equal, .value(.null)))
        #expect(
            parsed("(back is null)and n=1")
                == .and([.isNull(.property("back")), .compare(.property("n"), .equal, .value(.integer(1)))]))
    }

    @Test("in lists")
    func inLists() {
        #expect(
            parsed("n in (1, 2, 3)")
                == .oneOf(.property("n"), [.integer(1), .integer(2), .integer(3)].map(QueryExpression.value)))
        #expect(
            parsed("n in(1,2)")
                == .oneOf(.property("n"), [.integer(1), .integer(2)].map(QueryExpression.value)))
        #expect(parsed("n IN ( 'a' )") == .oneOf(.property("n"), [.string("a")].map(QueryExpression.value)))
        #expect(parsed("n in ()") == .oneOf(.property("n"), [].map(QueryExpression.value)))
        #expect(
            parsed("n in (1, 'two', 3.5, null, #4, true, -2, 2026-11-30)")
                == .oneOf(
                    .property("n"),
                    [
                        .integer(1), .string("two"), .double(3.5), .null, .reference(4), .bool(true),
                        .integer(-2), .string("2026-11-30"),
                    ].map(QueryExpression.value)))
        #expect(
            parsed("n in (a,b) and m=1")
                == .and([
                    .oneOf(.property("n"), [.string("a"), .string("b")].map(QueryExpression.value)),
                    .compare(.property("m"), .equal, .value(.integer(1))),
                ]))
    }

    // MARK: - Combining

    @Test("precedence: not binds tighter than and, and than or")
    func precedence() {
        #expect(parsed("a=1 or b=2 and c=3") == .or([Self.a1, .and([Self.b2, Self.c3])]))
        #expect(parsed("a=1 and b=2 or c=3") == .or([.and([Self.a1, Self.b2]), Self.c3]))
        #expect(parsed("a=1 || b=2 && c=3") == .or([Self.a1, .and([Self.b2, Self.c3])]))
        #expect(parsed("not a=1 and b=2") == .and([.not(Self.a1), Self.b2]))
        #expect(parsed("!a=1 or b=2") == .or([.not(Self.a1), Self.b2]))
        #expect(parsed("a=1 and b=2 and c=3") == .and([Self.a1, Self.b2, Self.c3]))
        #expect(parsed("a=1 or b=2 or c=3") == .or([Self.a1, Self.b2, Self.c3]))
        #expect(parsed("a=1 AND b=2 Or c=3") == .or([.and([Self.a1, Self.b2]), Self.c3]))
        #expect(parsed("a=1&&b=2||c=3") == .or([.and([Self.a1, Self.b2]), Self.c3]))
    }

    @Test("parentheses")
    func parentheses() {
        #expect(parsed("(a=1 or b=2) and c=3") == .and([.or([Self.a1, Self.b2]), Self.c3]))
        #expect(parsed("a=1 and (b=2 or c=3)") == .and([Self.a1, .or([Self.b2, Self.c3])]))
        #expect(parsed("((a=1))") == Self.a1)
        #expect(parsed("( a = 1 )") == Self.a1)
        #expect(parsed("(a=1)or(b=2)") == .or([Self.a1, Self.b2]))
        #expect(parsed("(a=1 and b=2) and c=3") == .and([.and([Self.a1, Self.b2]), Self.c3]))
    }

    @Test("not and !")
    func negation() {
        #expect(parsed("not a=1") == .not(Self.a1))
        #expect(parsed("NOT a=1") == .not(Self.a1))
        #expect(parsed("!a=1") == .not(Self.a1))
        #expect(parsed("! a = 1") == .not(Self.a1))
        #expect(parsed("not not a=1") == .not(.not(Self.a1)))
        #expect(parsed("!!a=1") == .not(.not(Self.a1)))
        #expect(parsed("not(a=1 or b=2)") == .not(.or([Self.a1, Self.b2])))
        #expect(parsed("!(a=1)") == .not(Self.a1))
        #expect(parsed("notes = 1") == .compare(.property("notes"), .equal, .value(.integer(1))))
        #expect(parsed("a!=1") == .compare(.property("a"), .notEqual, .value(.integer(1))))
    }

    @Test("a hundred levels of nesting parse")
    func maximumNesting() {
        let text = String(repeating: "(", count: 100) + "a=1" + String(repeating: ")", count: 100)
        #expect(parsed(text) == Self.a1)
        let nots = String(repeating: "!", count: 100) + "a=1"
        var expected = Self.a1
        for _ in 0..<100 { expected = .not(expected) }
        #expect(parsed(nots) == expected)
    }

    // MARK: - Keys

    @Test("dotted and backtick keys")
    func keys() {
        #expect(parsed("deck.title = x") == .compare(.property("deck.title"), .equal, .value(.string("x"))))
        #expect(parsed("a.b.c is null") == .isNull(.property("a.b.c")))
        #expect(parsed("_private1 = 1") == .compare(.property("_private1"), .equal, .value(.integer(1))))
        #expect(parsed("`in` = 3") == .compare(.property("in"), .equal, .value(.integer(3))))
        #expect(parsed("`and`.`or` = 1") == .compare(.property("and.or"), .equal, .value(.integer(1))))
        #expect(
            parsed("deck.`order` > 2") == .compare(.property("deck.order"), .greater, .value(.integer(2))))
        #expect(
            parsed("`deck.title` contains x")
                == .text(.property("deck.title"), .contains, .value(.string("x")), .exact))
        #expect(parsed("`two words`=1") == .compare(.property("two words"), .equal, .value(.integer(1))))
        #expect(parsed("`not` is null") == .isNull(.property("not")))
        #expect(parsed("not `not` is null") == .not(.isNull(.property("not"))))
    }

    // MARK: - Values

    @Test(
        "value kinds",
        arguments: [
            ("v = 42", Value.integer(42)),
            ("v = 0", .integer(0)),
            ("v = 007", .integer(7)),
            ("v = +3", .integer(3)),
            ("v = 9223372036854775807", .integer(Int64.max)),
            ("v = -9223372036854775808", .integer(Int64.min)),
            ("v = 2.5", .double(2.5)),
            ("v = .5", .double(0.5)),
            ("v = 5.", .double(5)),
            ("v = 1e3", .double(1000)),
            ("v = 1.5E-2", .double(0.015)),
            ("v = 2e+2", .double(200)),
            ("v = true", .bool(true)),
            ("v = TRUE", .bool(true)),
            ("v = false", .bool(false)),
            ("v = null", .null),
            ("v = NULL", .null),
            ("v = #42", .reference(42)),
            ("v = #0", .reference(0)),
            ("v = hola", .string("hola")),
            ("v = café", .string("café")),
            ("v = _x", .string("_x")),
            ("v = 'single'", .string("single")),
            ("v = \"double\"", .string("double")),
            ("v = ''", .string("")),
            ("v = 'and'", .string("and")),
            ("v = \"true\"", .string("true")),
            ("v = '42'", .string("42")),
            ("v = 1e", .string("1e")),
            ("v = 1.2.3", .string("1.2.3")),
            ("v = 12:30", .string("12:30")),
        ])
    func valueKind(text: String, expected: Value) {
        #expect(parsed(text) == .compare(.property("v"), .equal, .value(expected)))
    }

    @Test(
        "dates and UUIDs are bare words",
        arguments: [
            "2026-11-30", "2026-11-30T10:00:00Z", "2026-11-30T10:00:00.123Z", "2026-11-30T10:00:00+02:00",
            "123e4567-e89b-12d3-a456-426614174000", "F47AC10B-58CC-4372-A567-0E02B2C3D479",
        ])
    func bareWords(word: String) {
        #expect(parsed("due > " + word) == .compare(.property("due"), .greater, .value(.string(word))))
        #expect(parsed("due>=" + word) == .compare(.property("due"), .greaterOrEqual, .value(.string(word))))
        #expect(
            parsed("due=" + word + "&&x=1")
                == .and([
                    .compare(.property("due"), .equal, .value(.string(word))),
                    .compare(.property("x"), .equal, .value(.integer(1))),
                ]))
    }

    @Test("negative numbers")
    func negativeNumbers() {
        #expect(parsed("a>-5") == .compare(.property("a"), .greater, .value(.integer(-5))))
        #expect(parsed("a<-5") == .compare(.property("a"), .less, .value(.integer(-5))))
        #expect(parsed("a = -5") == .compare(.property("a"), .equal, .value(.integer(-5))))
        #expect(parsed("a=-2.5") == .compare(.property("a"), .equal, .value(.double(-2.5))))
        #expect(parsed("a = -.5e1") == .compare(.property("a"), .equal, .value(.double(-5))))
        #expect(parsed("a = -0") == .compare(.property("a"), .equal, .value(.integer(0))))
        #expect(
            parsed("a in (-1,-2)")
                == .oneOf(.property("a"), [.integer(-1), .integer(-2)].map(QueryExpression.value)))
        #expect(parsed("a = 5-3") == .compare(.property("a"), .equal, .value(.string("5-3"))))
    }

    @Test("quoted strings and escapes")
    func quoting() {
        #expect(parsed(#"s = "a\"b""#) == .compare(.property("s"), .equal, .value(.string("a\"b"))))
        #expect(parsed(#"s = 'it\'s'"#) == .compare(.property("s"), .equal, .value(.string("it's"))))
        #expect(
            parsed(#"s = "tab\there\nline\\""#)
                == .compare(.property("s"), .equal, .value(.string("tab\there\nline\\"))))
        #expect(parsed(#"s = 'say "hi"'"#) == .compare(.property("s"), .equal, .value(.string("say \"hi\""))))
        #expect(parsed(#"s = "it's""#) == .compare(.property("s"), .equal, .value(.string("it's"))))
        #expect(parsed(#"s = "\'\"""#) == .compare(.property("s"), .equal, .value(.string("'\""))))
        #expect(
            parsed("s = 'a b  (c) or d, #1'")
                == .compare(.property("s"), .equal, .value(.string("a b  (c) or d, #1"))))
        #expect(parsed("s = '日本語 ✓'") == .compare(.property("s"), .equal, .value(.string("日本語 ✓"))))
        #expect(
            parsed("s='x'and t=\"y\"")
                == .and([
                    .compare(.property("s"), .equal, .value(.string("x"))),
                    .compare(.property("t"), .equal, .value(.string("y"))),
                ]))
    }

    @Test("record ids")
    func references() {
        #expect(parsed("deck = #42") == .compare(.property("deck"), .equal, .value(.reference(42))))
        #expect(parsed("deck=#7") == .compare(.property("deck"), .equal, .value(.reference(7))))
        #expect(
            parsed("deck != #9223372036854775807")
                == .compare(.property("deck"), .notEqual, .value(.reference(Int64.max))))
        #expect(
            parsed("tags in (#1, #2)")
                == .oneOf(.property("tags"), [.reference(1), .reference(2)].map(QueryExpression.value)))
    }

    @Test("a realistic expression")
    func realistic() {
        let filter = parsed(
            "(ease < 2.5 || reps > 10) && deck.title begins-with[c] 'span' and not due <= 2026-11-30")
        #expect(
            filter
                == .and([
                    .or([
                        .compare(.property("ease"), .less, .value(.double(2.5))),
                        .compare(.property("reps"), .greater, .value(.integer(10))),
                    ]),
                    .text(
                        .property("deck.title"), .beginsWith, .value(.string("span")), .asciiCaseInsensitive),
                    .not(.compare(.property("due"), .lessOrEqual, .value(.string("2026-11-30")))),
                ]))
    }

    // MARK: - Errors

    struct ErrorCase: Sendable, CustomTestStringConvertible {
        let text: String
        let column: Int
        let message: String
        var testDescription: String { text }
        init(_ text: String, _ column: Int, _ message: String) {
            self.text = text
            self.column = column
            self.message = message
        }
    }

    private static let hint =
        "; expected =, ==, !=, <>, <, <=, >, >=, is, in, not in, contains, begins-with, ends-with or equals"

    @Test(
        "errors and their columns",
        arguments: [
            // empty expression
            ErrorCase("", 1, "empty expression"),
            ErrorCase("   \t", 1, "empty expression"),
            // unexpected end
            ErrorCase("a >", 4, "expected a value after '>'"),
            ErrorCase("deck.size >", 12, "expected a value after '>'"),
            ErrorCase("a", 2, "expected an operator after 'a'"),
            ErrorCase("deck.title ", 12, "expected an operator after 'deck.title'"),
            ErrorCase("a = 1 and", 10, "expected a condition after 'and'"),
            ErrorCase("a = 1 ||", 9, "expected a condition after '||'"),
            ErrorCase("not", 4, "expected a condition after 'not'"),
            ErrorCase("!", 2, "expected a condition after '!'"),
            ErrorCase("a is", 5, "expected 'null' or 'not null' after 'is'"),
            ErrorCase("a is not", 9, "expected 'null' after 'is not'"),
            ErrorCase("a in", 5, "expected '(' after 'in'"),
            ErrorCase("a in (1,", 9, "expected a value after ','"),
            ErrorCase("a contains", 11, "expected a value after 'contains'"),
            ErrorCase("a = #", 5, "expected a record id after '#', as in #42"),
            ErrorCase("deck.", 6, "expected a name after '.' in the key"),
            // missing value
            ErrorCase("a > and b = 1", 5, "expected a value after '>', found 'and'"),
            ErrorCase("a = )", 5, "expected a value after '=', found ')'"),
            ErrorCase("a = = 1", 5, "expected a value after '=', found '='"),
            ErrorCase("a = not", 5, "expected a value after '=', found 'not'; quote it to use it as text"),
            ErrorCase(
                "a = contains", 5,
                "expected a value after '=', found 'contains'; quote it to use it as text"),
            ErrorCase("a in (1,)", 9, "expected a value after ',', found ')'"),
            ErrorCase("a in (,1)", 7, "expected a value after '(', found ','"),
            ErrorCase("a is maybe", 6, "expected 'null' or 'not null' after 'is', found 'maybe'"),
            ErrorCase("a IS NOT 5", 10, "expected 'null' after 'IS NOT', found '5'"),
            ErrorCase("a in 1", 6, "expected '(' after 'in', found '1'"),
            ErrorCase("a in (1 2)", 9, "expected ',' or ')' in the list, found '2'"),
            // unterminated strings and keys
            ErrorCase("a = \"abc", 5, "unterminated string: this double quote is never closed"),
            ErrorCase("a = 'abc\\'", 5, "unterminated string: this single quote is never closed"),
            ErrorCase("a = 'abc\\", 5, "unterminated string: this single quote is never closed"),
            ErrorCase("`abc = 1", 1, "unterminated key: this backtick is never closed"),
            ErrorCase("`` = 1", 1, "empty key between backticks"),
            ErrorCase("a = \"x\\q\"", 7, "unknown escape '\\q' in a string; use \\\\, \\', \\\", \\n or \\t"),
            // unknown operators
            ErrorCase("a ~ 1", 3, "unknown operator '~'" + hint),
            ErrorCase("a =! 1", 3, "unknown operator '=!'" + hint),
            ErrorCase("a <=> 1", 3, "unknown operator '<=>'" + hint),
            ErrorCase("a foo 1", 3, "unknown operator 'foo'" + hint),
            ErrorCase("a isnull", 3, "unknown operator 'isnull'" + hint),
            ErrorCase("a and b", 3, "expected an operator after 'a', found 'and'"),
            ErrorCase("a && b", 3, "expected an operator after 'a', found '&&'"),
            ErrorCase("a 5", 3, "expected an operator after 'a', found '5'"),
            ErrorCase("a 'x'", 3, "expected an operator after 'a', found a quoted string"),
            ErrorCase("a (1)", 3, "expected an operator after 'a', found '('"),
            ErrorCase(
                "a contains[x] b", 11,
                "unknown option after 'contains'; '[c]' ignores ASCII case, '[cd]' case and diacritics (Unicode), '[u]' case (Unicode)"
            ),
            ErrorCase("a in[c] (1)", 5, "'[c]' applies only to contains, begins-with, ends-with and equals"),
            ErrorCase("a = 1 & b = 2", 7, "unknown operator '&'; use 'and' or '&&'"),
            ErrorCase("a = 1 | b = 2", 7, "unknown operator '|'; use 'or' or '||'"),
            // unbalanced parentheses
            ErrorCase("(a = 1", 1, "unbalanced parenthesis: this '(' is never closed"),
            ErrorCase("((a = 1) or b = 2", 1, "unbalanced parenthesis: this '(' is never closed"),
            ErrorCase("(a = 1))", 8, "unbalanced parenthesis: this ')' has no matching '('"),
            ErrorCase("a = 1)", 6, "unbalanced parenthesis: this ')' has no matching '('"),
            ErrorCase("a in (1, 2", 6, "unbalanced parenthesis: this '(' is never closed"),
            ErrorCase("()", 2, "expected a condition after '(', found ')'"),
            ErrorCase(")", 1, "expected a condition, found ')'"),
            // trailing input
            ErrorCase("a = 1 b = 2", 7, "expected 'and', 'or' or the end of the expression, found 'b'"),
            ErrorCase("a = 'x'y", 8, "expected 'and', 'or' or the end of the expression, found 'y'"),
            ErrorCase("a = hola!", 9, "expected 'and', 'or' or the end of the expression, found '!'"),
            ErrorCase("(a = 1 b = 2)", 8, "expected ')', 'and' or 'or', found 'b'"),
            ErrorCase(
                "a = 1 'x'", 7, "expected 'and', 'or' or the end of the expression, found a quoted string"),
            // an operator (or other non-key) where a key is expected
            ErrorCase("= 1", 1, "expected a key before '='"),
            ErrorCase("a = 1 and >= 2", 11, "expected a key before '>='"),
            ErrorCase("!= 1", 1, "expected a key before '!='"),
            ErrorCase("not = 1", 5, "expected a key before '='"),
            ErrorCase("and a = 1", 1, "expected a condition, found 'and'"),
            ErrorCase("a = 1 and or b = 2", 11, "expected a condition after 'and', found 'or'"),
            ErrorCase("a = 1 and && b = 2", 11, "expected a condition after 'and', found '&&'"),
            ErrorCase("in = 1", 1, "'in' is a keyword; write `in` to use it as a key"),
            ErrorCase("deck.null = 1", 6, "'null' is a keyword; write `null` to use it as a key"),
            ErrorCase(
                "\"front\" = 1", 1,
                "expected a key, found a quoted string; write a key in backticks, not quotes"),
            ErrorCase(
                "café = 1", 4,
                "a key may contain only ASCII letters, digits and '_'; write other names in backticks"),
            ErrorCase(
                "é = 1", 1,
                "a key may contain only ASCII letters, digits and '_'; write other names in backticks"),
            ErrorCase("deck..title = 1", 6, "expected a name after '.' in the key, found '.'"),
            // a non-string after a text operator
            ErrorCase(
                "front contains 5", 16,
                "'contains' needs a string, not the integer 5; quote it to match the text"),
            ErrorCase(
                "front contains[c] 2.5", 19,
                "'contains[c]' needs a string, not the double 2.5; quote it to match the text"),
            ErrorCase(
                "front begins-with true", 19,
                "'begins-with' needs a string, not the bool true; quote it to match the text"),
            ErrorCase(
                "front ends-with null", 17, "'ends-with' needs a string, not null; quote it to match the text"
            ),
            ErrorCase(
                "front endswith #3", 16,
                "'endswith' needs a string, not the reference #3; quote it to match the text"),
            // invalid numbers
            ErrorCase(
                "a = 99999999999999999999", 5,
                "invalid number '99999999999999999999': it does not fit in a 64-bit integer"),
            ErrorCase(
                "a = -9223372036854775809", 5,
                "invalid number '-9223372036854775809': it does not fit in a 64-bit integer"),
            ErrorCase("a = 1e999", 5, "invalid number '1e999': it is out of range"),
            ErrorCase("a = -abc", 5, "invalid number '-abc'"),
            ErrorCase("a = --5", 5, "invalid number '--5'"),
            ErrorCase("a = -", 5, "invalid number '-'"),
            ErrorCase("a = +2026-11-30", 5, "invalid number '+2026-11-30'"),
            ErrorCase("a = #abc", 5, "invalid record id '#abc'; a record id is digits, as in #42"),
            ErrorCase("a = #-1", 5, "invalid record id '#-1'; a record id is digits, as in #42"),
            ErrorCase(
                "a = #99999999999999999999", 5,
                "invalid record id '#99999999999999999999': it is out of range"),
        ])
    func syntaxError(_ error: ErrorCase) {
        guard let thrown = parseError(error.text) else { return }
        #expect(thrown.message == error.message)
        #expect(thrown.column == error.column)
        #expect(thrown.expression == error.text)
        #expect(thrown.description == "syntax error at column \(error.column): \(error.message)")
    }

    @Test("the caret points at the column")
    func caret() throws {
        let error = try #require(parseError("deck.size >"))
        #expect(error.description == "syntax error at column 12: expected a value after '>'")
        #expect(error.caret == "deck.size >\n           ^")

        #expect(parseError("a ~ 1")?.caret == "a ~ 1\n  ^")
        #expect(parseError("(a = 1")?.caret == "(a = 1\n^")
        #expect(parseError("")?.caret == "\n^")
        // Tabs and line breaks show as spaces, so the caret stays under the problem.
        #expect(parseError("a\t= 1\nb")?.caret == "a = 1 b\n      ^")
    }

    @Test("a long expression is refused at column 1")
    func tooLong() throws {
        let text = "a = '" + String(repeating: "x", count: QueryParser.maximumLength) + "'"
        let error = try #require(parseError(text))
        #expect(error.column == 1)
        #expect(error.message == "the expression is too long (65542 bytes; the limit is 65536)")
        // Just under the limit parses.
        let longest = "a = '" + String(repeating: "x", count: QueryParser.maximumLength - 6) + "'"
        #expect(
            parsed(longest)
                == .compare(.property("a"), .equal, .value(.string(String(repeating: "x", count: 65_530)))))
    }

    @Test("deep nesting is an error, not a crash")
    func deepNesting() throws {
        let message =
            "the expression is nested too deeply (at most 100 levels of parentheses, 'not', operators and quantifiers)"
        let parens = try #require(parseError(String(repeating: "(", count: 10_000)))
        #expect(parens.column == 101)
        #expect(parens.message == message)

        let balanced = String(repeating: "(", count: 10_000) + "a=1" + String(repeating: ")", count: 10_000)
        #expect(parseError(balanced)?.column == 101)

        let bangs = try #require(parseError(String(repeating: "!", count: 10_000) + "a=1"))
        #expect(bangs.column == 101)
        #expect(bangs.message == message)

        let nots = try #require(parseError(String(repeating: "not ", count: 10_000) + "a=1"))
        #expect(nots.column == 401)

        let mixed = try #require(parseError(String(repeating: "!(", count: 5_000)))
        #expect(mixed.column == 101)

        // Long flat expressions are not nesting.
        let flat = Array(repeating: "a=1", count: 5_000).joined(separator: " or ")
        #expect(parsed(flat) == .or(Array(repeating: Self.a1, count: 5_000)))
    }

    @Test("random token soup never crashes and reports a column within the expression")
    func randomInput() {
        let tokens = [
            "a", "b.c", "`k`", "`", " ", "  ", "\t", "=", "==", "!=", "<>", "<", "<=", ">", ">=", "!", "&&",
            "||",
            "&", "|", "and", "OR", "not", "is", "null", "in", "true", "(", ")", ",", "contains", "[c]", "[",
            "]", "begins-with", "ends-with", "'x'", "\"y\\\"z\"", "\"", "'", "\\", "1", "-5", "2.5", "1e999",
            "-", "+", ".", "#4", "#", "2026-11-30", "T10:00:00Z", "é", ":", "~", "99999999999999999999",
        ]
        let seed = TestSeed("QueryParserTests.randomInput", filter: "QueryParserTests")
        var generator = seed.generator()
        var parsedCount = 0
        for round in 0..<4_000 {
            // Every fourth input is made by the grammar and must parse; the rest is token soup,
            // which rarely does (so no seed can leave the valid paths untested).
            if round % 4 == 0 {
                let text = Self.randomValidFilter(using: &generator)
                #expect(throws: Never.self, "\(text), \(seed)") { _ = try QueryParser.parse(text) }
                parsedCount += 1
                continue
            }
            let count = Int.random(in: 0...14, using: &generator)
            var text = ""
            for _ in 0..<count {
                text += tokens.randomElement(using: &generator) ?? ""
                if Bool.random(using: &generator) { text += " " }
            }
            do {
                _ = try QueryParser.parse(text)
                parsedCount += 1
            } catch {
                let length = text.count
                #expect(error.column >= 1 && error.column <= length + 1, "\(text): \(error), \(seed)")
                #expect(error.expression == text, "\(seed)")
                #expect(
                    error.caret.split(separator: "\n", omittingEmptySubsequences: false).count == 2,
                    "\(text), \(seed)")
                #expect(!error.message.isEmpty, "\(text), \(seed)")
            }
            do {
                _ = try QueryParser.parseSort(text)
            } catch {
                #expect(error.column >= 1 && error.column <= text.count + 1, "\(text): \(error), \(seed)")
            }
        }
        #expect(parsedCount >= 1_000, "\(seed)")
    }

    /// A random filter of the grammar `--where` has always accepted: comparisons and text tests of
    /// keys with literals, maybe negated or grouped, joined by `and` and `or` in their spellings.
    static func randomValidFilter(using generator: inout some RandomNumberGenerator) -> String {
        let keys = ["a", "b.c", "`k`", "`odd key`"]
        let comparisons = ["=", "==", "!=", "<>", "<", "<=", ">", ">="]
        let literals = ["'x'", "\"y\\\"z\"", "1", "-5", "2.5", "true", "2026-11-30"]
        let textTests = ["contains", "begins-with", "ends-with"]
        let joins = ["and", "OR", "&&", "||"]
        var text = ""
        for index in 0..<Int.random(in: 1...4, using: &generator) {
            if index > 0 { text += " \(joins.randomElement(using: &generator) ?? "and") " }
            let key = keys.randomElement(using: &generator) ?? "a"
            var condition =
                Bool.random(using: &generator)
                ? "\(key) \(comparisons.randomElement(using: &generator) ?? "=") "
                    + (literals.randomElement(using: &generator) ?? "1")
                : "\(key) \(textTests.randomElement(using: &generator) ?? "contains")"
                    + (Bool.random(using: &generator) ? "[c]" : "") + " 'x'"
            if Int.random(in: 0..<4, using: &generator) == 0 { condition = "not (\(condition))" }
            text += condition
        }
        return Bool.random(using: &generator) ? "(\(text))" : text
    }

    // MARK: - Sort keys

    @Test(
        "sort keys",
        arguments: [
            ("created:desc", SortKey("created", ascending: false)),
            ("front", SortKey("front")),
            ("front:asc", SortKey("front", ascending: true)),
            ("deck.title:desc", SortKey("deck.title", ascending: false)),
            ("  front : DESC  ", SortKey("front", ascending: false)),
            ("front:ASC", SortKey("front")),
            ("in:desc", SortKey("in", ascending: false)),
            ("`odd name`:desc", SortKey("odd name", ascending: false)),
            ("deck.`order`", SortKey("deck.order")),
        ])
    func sortKey(text: String, expected: SortKey) throws {
        #expect(try QueryParser.parseSort(text) == expected)
    }

    @Test(
        "sort key errors",
        arguments: [
            ErrorCase("", 1, "empty sort key"),
            ErrorCase("  ", 1, "empty sort key"),
            ErrorCase("front:", 7, "expected 'asc' or 'desc' after ':'"),
            ErrorCase("front:up", 7, "unknown sort direction 'up'; expected 'asc' or 'desc'"),
            ErrorCase("front:-", 7, "expected 'asc' or 'desc' after ':', found '-'"),
            ErrorCase("front desc", 7, "expected ':asc', ':desc' or the end of the sort key, found 'desc'"),
            ErrorCase("front:desc:asc", 11, "expected ':asc', ':desc' or the end of the sort key, found ':'"),
            ErrorCase("a,b", 2, "expected ':asc', ':desc' or the end of the sort key, found ','"),
            ErrorCase(":desc", 1, "expected a sort key, found ':'"),
            ErrorCase("-created", 1, "expected a sort key, found '-'"),
            ErrorCase("deck.:asc", 6, "expected a name after '.' in the key, found ':'"),
            ErrorCase("`front:desc", 1, "unterminated key: this backtick is never closed"),
        ])
    func sortKeyError(_ expected: ErrorCase) {
        do {
            let key = try QueryParser.parseSort(expected.text)
            Issue.record("'\(expected.text)' parsed as \(key)")
        } catch {
            #expect(error.message == expected.message)
            #expect(error.column == expected.column)
            #expect(error.expression == expected.text)
        }
    }
}
