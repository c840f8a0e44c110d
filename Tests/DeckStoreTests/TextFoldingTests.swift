import DeckQueryLanguage
import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// The Unicode-aware folding of `[cd]` (spec 8.5): each step of the rule, the cases it decides
/// (German ß, Turkish dotted and dotless i, Greek final sigma, letters without a decomposition),
/// and that the SQL function agrees with the Swift rule on a real store.
@Suite("Text folding", .timed)
struct TextFoldingTests {
    @Test(
        "folded forms",
        arguments: [
            ("É", "e"), ("été", "ete"), ("Ångström", "angstrom"), ("ß", "ss"), ("STRASSE", "strasse"),
            ("Straße", "strasse"), ("ı", "i"), ("İ", "i"), ("I", "i"), ("ς", "σ"), ("Σ", "σ"),
            ("ﬁ", "fi"), ("ø", "ø"), ("Ø", "ø"), ("ł", "ł"), ("e\u{301}", "e"), ("\u{212B}", "a"),
            ("Ǆ", "ǆ"),  // a compatibility decomposition only: not split
            ("한국", "한국"), ("ABC xyz 123", "abc xyz 123"), ("", ""),
        ])
    func folded(text: String, expected: String) {
        #expect(TextFolding.fold(text, .unicode) == expected.precomposedStringWithCanonicalMapping)
    }

    @Test func testsCompareFoldedBytes() {
        #expect(TextFolding.matches(.contains, .unicode, "Crème Brûlée", "BRULEE"))
        #expect(TextFolding.matches(.equals, .unicode, "İstanbul", "istanbul"))
        #expect(TextFolding.matches(.equals, .unicode, "ıstanbul", "ISTANBUL"))
        #expect(TextFolding.matches(.beginsWith, .unicode, "Straße", "STRASS"))
        #expect(TextFolding.matches(.endsWith, .unicode, "naïve", "IVE"))
        #expect(!TextFolding.matches(.contains, .unicode, "søster", "soster"), "ø is a letter of its own")
        #expect(TextFolding.matches(.contains, .unicode, "x", ""))
        #expect(!TextFolding.matches(.equals, .unicode, "x", ""))
        #expect(!TextFolding.matches(.contains, .exact, "É", "e"))
        // The fast path for ASCII gives what the rule gives.
        for text in ["Hello", "MiXeD 42", "\t~`"] {
            #expect(TextFolding.fold(text, .unicode) == text.lowercased())
        }
    }

    @Test func theSQLFunctionAppliesTheRule() throws {
        try withTestDirectory { dir throws in
            let schema = StoreSchema(entities: [Entity("Word", attributes: [Attribute("text", .string)])])
            let store = try makeTestStore(in: dir, schema: schema)
            let words = ["Café", "CAFE", "cafe\u{301}", "Straße", "İzmir", "ızmir", "Øre", "naïve", "NAIVE"]
            try store.write { tx in for word in words { _ = try tx.insert("Word", ["text": .string(word)]) } }
            for (needle, test) in [
                ("cafe", QueryExpression.TextOperator.equals), ("STRASSE", .equals), ("izm", .beginsWith),
                ("ive", .endsWith), ("ør", .contains), ("É", .contains),
            ] {
                let found = try store.read { reader throws in
                    try reader.fetch(
                        RecordQuery(
                            "Word",
                            where: .text(
                                .property("text"), test, .value(.string(needle)), .caseAndDiacriticInsensitive
                            )))
                }.compactMap { if case .string(let text)? = $0["text"] { text } else { nil } }
                let expected = words.filter { TextFolding.matches(test, .unicode, $0, needle) }
                #expect(found == expected, "\(test) \(needle)")
                #expect(!found.isEmpty, "\(test) \(needle)")
            }
            try store.close()
        }
    }

    @Test(
        "case-only folded forms",
        arguments: [
            ("É", "é"), ("e\u{301}", "é"), ("ß", "ss"), ("Straße", "strasse"), ("İ", "i\u{307}"), ("ı", "i"),
            ("Σ", "σ"), ("ﬁ", "fi"), ("Ångström", "ångström"), ("ABC", "abc"), ("", ""),
        ])
    func caseFolded(text: String, expected: String) {
        #expect(TextFolding.fold(text, .unicodeCase) == expected.precomposedStringWithCanonicalMapping)
    }

    @Test func theCaseOnlyFoldingKeepsDiacritics() throws {
        try withTestDirectory { dir throws in
            let schema = StoreSchema(entities: [Entity("Word", attributes: [Attribute("text", .string)])])
            let store = try makeTestStore(in: dir, schema: schema)
            let words = ["Été", "ÉTÉ", "ete", "e\u{301}te\u{301}", "Straße", "STRASSE", "strasse"]
            try store.write { tx in for word in words { _ = try tx.insert("Word", ["text": .string(word)]) } }
            func texts(_ condition: QueryExpression) throws -> [String] {
                try store.read { try $0.fetch(RecordQuery("Word", where: condition)) }.compactMap {
                    if case .string(let text)? = $0["text"] { text } else { nil }
                }
            }
            #expect(
                try texts(.property("text").equals("été", .caseInsensitive)) == [
                    "Été", "ÉTÉ", "e\u{301}te\u{301}",
                ])
            #expect(
                try texts(.property("text").equals("STRASSE", .caseInsensitive)) == [
                    "Straße", "STRASSE", "strasse",
                ])
            // The needle as an operand (folded per row) and through `--where`'s [u].
            #expect(
                try texts(try QueryParser.parse("text equals[u] `text` and text begins-with[u] ÉT")) == [
                    "Été", "ÉTÉ", "e\u{301}te\u{301}",
                ])
            #expect(try texts(.property("text").contains("TÉ", .caseInsensitive)).count == 3)
            try store.close()
        }
    }

    @Test func sortKeysWithAFoldingOrderByTheFoldedTextThenTheBytes() throws {
        try withTestDirectory { dir throws in
            let schema = StoreSchema(entities: [
                Entity(
                    "Word",
                    attributes: [Attribute("text", .string, isOptional: true), Attribute("n", .integer)])
            ])
            let store = try makeTestStore(in: dir, schema: schema)
            let words: [String?] = ["banana", "Äpfel", nil, "apple", "Apple", "Banana", "apfel", ""]
            try store.write { tx in
                for (index, word) in words.enumerated() {
                    _ = try tx.insert(
                        "Word", ["text": word.map(Value.string) ?? .null, "n": .integer(Int64(index))])
                }
            }
            func texts(_ key: SortKey) throws -> [String?] {
                try store.read { try $0.fetch(RecordQuery("Word", sort: [key])) }.map {
                    if case .string(let text)? = $0["text"] { text } else { nil }
                }
            }
            #expect(
                try texts(SortKey("text", folding: .caseAndDiacriticInsensitive))
                    == [nil, "", "apfel", "Äpfel", "Apple", "apple", "Banana", "banana"])
            #expect(
                try texts(SortKey("text", ascending: false, folding: .caseAndDiacriticInsensitive))
                    == ["banana", "Banana", "apple", "Apple", "Äpfel", "apfel", "", nil])
            #expect(
                try texts(SortKey("text", folding: .caseInsensitive))
                    == [nil, "", "apfel", "Apple", "apple", "Banana", "banana", "Äpfel"])
            #expect(
                try texts(SortKey("text")) == [
                    nil, "", "Apple", "Banana", "apfel", "apple", "banana", "Äpfel",
                ])
            #expect(throws: DeckError.self) {
                try store.read {
                    try $0.fetch(RecordQuery("Word", sort: [SortKey("n", folding: .caseInsensitive)]))
                }
            }
            try store.close()
        }
    }
}
