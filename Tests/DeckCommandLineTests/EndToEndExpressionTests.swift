import DeckTestTiming
import Foundation
import Testing

/// `deck query --where` for each construct of the expression language beyond a comparison with a
/// value (deck(1), EXPRESSIONS), on the flash-cards sample, and its errors.
///
/// Sample cards by id: 1 hola, 2 adiós, 3 gracias, 4 por favor, 5 el gato, 6 el perro (deck #1);
/// 7 bonjour, 8 merci, 9 le chat, 10 la pomme (deck #2). Tags: 1 greeting, 2 courtesy, 3 animal,
/// 4 noun, 5 food; cards 5, 6, 9 and 10 have two tags each, the others one.
@Suite("End to end: expressions", .timed)
struct EndToEndExpressionTests {
    func ids(
        _ path: String, _ expression: String, entity: String = "Card",
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [Int] {
        let result = try deck("query", path, entity, "--where", expression, "--json")
        #expect(result.status == 0, "\(expression): \(result.stderr)", sourceLocation: sourceLocation)
        return try e2eIDs(result.stdout)
    }

    @Test func eachConstruct() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let cases: [(String, [Int])] = [
            // column to column, arithmetic
            ("front = `back`", []),
            ("back != `front`", Array(1...10)),
            ("reviewCount + _id > 9", [10]),
            ("(_id + 1) * 2 = 6", [2]),
            ("_id / 3 = 1", [3, 4, 5]),
            ("(-_id) < -8", [9, 10]),
            ("_id > `reviewCount` + 8", [9, 10]),
            // nil-coalescing, membership, null tests
            ("coalesce(back, front) = hello", [1, 7]),
            ("back ?? 'x' = goodbye", [2]),
            ("front not in (hola, merci)", [2, 3, 4, 5, 6, 7, 9, 10]),
            ("back is not null and image is null", [2, 4, 8, 10]),
            // text foldings
            ("front contains ADIOS", []),
            ("front contains[c] ADIÓS", []),
            ("front contains[cd] ADIOS", [2]),
            ("front equals[cd] Adios", [2]),
            ("front equals[c] HOLA", [1]),
            ("front begins-with[cd] ÁD", [2]),
            ("back ends-with[cd] DOG", [6]),
            ("front equals[u] ADIÓS", [2]),
            ("front equals[u] ADIOS", []),
            ("deck.title equals[c] `deck.title`", Array(1...10)),
            // to-many quantifiers and counts
            ("tags.any(name = animal)", [5, 6, 9]),
            ("tags.all(name = animal)", []),
            ("tags.all(name in (animal, noun)) and tags.count = 2", [5, 6, 9]),
            ("tags.count >= 2", [5, 6, 9, 10]),
            ("not tags.count >= 2", [1, 2, 3, 4, 7, 8]),
            ("deck.cards.count = 6", [1, 2, 3, 4, 5, 6]),
            ("deck.cards.any(front = bonjour)", [7, 8, 9, 10]),
            ("tags.any(cards.count = 1)", [10]),
            ("tags.any(name = food or cards.any(front = hola))", [1, 2, 7, 10]),
        ]
        for (expression, expected) in cases {
            #expect(try ids(path, expression) == expected, "--where \(expression)")
        }
        // The inverse side: tags by their cards, decks by theirs.
        #expect(try ids(path, "cards.count >= 3", entity: "Tag") == [1, 2, 3, 4])
        #expect(try ids(path, "cards.any(front = merci)", entity: "Tag") == [2])
        #expect(try ids(path, "cards.all(front contains[cd] A)", entity: "Deck") == [])
        // A sort key may be a count.
        let sorted = try deck("query", path, "Card", "--sort", "tags.count:desc", "--sort", "_id", "--json")
        e2eExpectSuccess(sorted)
        #expect(try e2eIDs(sorted.stdout) == [5, 6, 9, 10, 1, 2, 3, 4, 7, 8])
    }

    @Test func updateAndDeleteTakeTheSameExpressions() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        e2eExpectSuccess(try deck("update", path, "Card", "reviewCount=5", "--where", "tags.count >= 2"))
        #expect(try ids(path, "reviewCount * 2 = 10") == [5, 6, 9, 10])
        e2eExpectSuccess(try deck("delete", path, "Card", "--where", "tags.any(name = animal)"))
        #expect(try ids(path, "reviewCount = 5") == [10])
    }

    @Test func errorsNameThePart() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        // Syntax: exit status 64, with the column.
        e2eExpectFailure(
            try deck("query", path, "Card", "--where", "_id > reviewCount * 2"), status: 64,
            "syntax error at column 19", "write a property in backticks: `reviewCount`")
        e2eExpectFailure(
            try deck("query", path, "Card", "--where", "tags.any(name = x"), status: 64,
            "this '(' is never closed")
        e2eExpectFailure(
            try deck("query", path, "Card", "--where", String(repeating: "_id + ", count: 200) + "1 > 0"),
            status: 64, "nested too deeply")
        // Well formed but not compilable: exit status 65, naming the part.
        e2eExpectFailure(
            try deck("query", path, "Card", "--where", "front + 1 > 2"), status: 65,
            "'front' is a string; arithmetic ('+') applies to numbers and dates")
        e2eExpectFailure(
            try deck("query", path, "Card", "--where", "deck.any(title = x)"), status: 65,
            "any applies to a to-many relationship")
        e2eExpectFailure(
            try deck("query", path, "Card", "--where", "tags.any(nmae = x)"), status: 65, "nmae")
        e2eExpectFailure(
            try deck("query", path, "Card", "--where", "coalesce(image, back) = x"), status: 65,
            "compares a data ('image') with a string ('back')")
    }

    @Test func hostileValuesAreText() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        for value in ["'x\\' OR 1=1 --'", "\"); DROP TABLE Card; --\"", "'%'", "'_'"] {
            #expect(try ids(path, "front = \(value) or back contains[cd] \(value)") == [], "\(value)")
        }
        #expect(try ids(path, "_id > 0").count == 10, "nothing was dropped")
    }
}
