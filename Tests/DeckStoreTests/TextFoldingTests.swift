import Foundation
import Testing

@testable import DeckStore

/// The Unicode-aware folding of `[cd]` (spec 8.5): each step of the rule, the cases it decides
/// (German ß, Turkish dotted and dotless i, Greek final sigma, letters without a decomposition),
/// and that the SQL function agrees with the Swift rule on a real store.
@Suite("Text folding")
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
            let package = try makeTestPackage(in: dir, schema: schema)
            let words = ["Café", "CAFE", "cafe\u{301}", "Straße", "İzmir", "ızmir", "Øre", "naïve", "NAIVE"]
            for word in words { _ = try package.insert("Word", ["text": .string(word)]) }
            try package.save()
            for (needle, test) in [
                ("cafe", QueryExpression.TextOperator.equals), ("STRASSE", .equals), ("izm", .beginsWith),
                ("ive", .endsWith), ("ør", .contains), ("É", .contains),
            ] {
                let found = try package.fetch(
                    RecordQuery(
                        "Word",
                        where: .text(
                            .property("text"), test, .value(.string(needle)), .caseAndDiacriticInsensitive))
                ).compactMap { if case .string(let text)? = $0["text"] { text } else { nil } }
                let expected = words.filter { TextFolding.matches(test, .unicode, $0, needle) }
                #expect(found == expected, "\(test) \(needle)")
                #expect(!found.isEmpty, "\(test) \(needle)")
            }
            try package.close()
        }
    }
}
