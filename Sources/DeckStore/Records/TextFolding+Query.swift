import DeckSQLite

// A query's text operators and comparisons in the terms of the SQL functions DeckSQLite registers
// on every connection (`deck_match`, `deck_fold`): the wrapper knows the folding rule and the four
// tests, not the expression language.

extension TextFolding.Mode {
    /// The folding a text comparison uses.
    package init(_ comparison: QueryExpression.TextComparison) {
        switch comparison {
        case .exact, .asciiCaseInsensitive: self = .exact
        case .caseAndDiacriticInsensitive: self = .unicode
        case .caseInsensitive: self = .unicodeCase
        }
    }
}

extension TextFolding.Test {
    /// The test a text operator makes.
    package init(_ test: QueryExpression.TextOperator) {
        switch test {
        case .equals: self = .equals
        case .contains: self = .contains
        case .beginsWith: self = .beginsWith
        case .endsWith: self = .endsWith
        }
    }
}

extension TextFolding {
    /// The test on two texts as Swift holds them, folded by `mode` (what a query computes).
    package static func matches(
        _ test: QueryExpression.TextOperator, _ mode: Mode, _ haystack: String, _ needle: String
    ) -> Bool {
        let foldedHaystack = Array(fold(haystack, mode).utf8)
        let foldedNeedle = Array(fold(needle, mode).utf8)
        return foldedHaystack.withUnsafeBufferPointer { h in
            foldedNeedle.withUnsafeBufferPointer { n in matches(Test(test), h, n) }
        }
    }
}

extension QueryFunctions {
    /// The `code` argument of `deck_match` for a query's text test.
    package static func code(
        _ test: QueryExpression.TextOperator, _ folding: QueryExpression.TextComparison, needleFolded: Bool
    ) -> Int32 {
        code(TextFolding.Test(test), TextFolding.Mode(folding), needleFolded: needleFolded)
    }
}
