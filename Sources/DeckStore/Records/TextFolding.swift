import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The text rules of ``QueryExpression``: the foldings of ``QueryExpression/TextComparison``,
/// the four text tests, and the length of a text in characters. The SQL functions of
/// ``QueryFunctions`` call these, so a query and Swift code that calls them agree exactly.
///
/// Texts are UTF-8 bytes (a store's invalid UTF-8 is read with U+FFFD replacements); text made
/// only of ASCII takes a fast path that gives what the general one would.
enum TextFolding {
    /// A folding, as the SQL functions number it.
    enum Mode: Int32, CaseIterable {
        case exact = 0
        case ascii = 1
        case caseFold = 2
        case diacritics = 3
        case caseAndDiacritics = 4

        init(_ comparison: QueryExpression.TextComparison) {
            switch comparison {
            case .exact: self = .exact
            case .asciiCaseInsensitive: self = .ascii
            case .caseInsensitive: self = .caseFold
            case .diacriticInsensitive: self = .diacritics
            case .caseAndDiacriticInsensitive: self = .caseAndDiacritics
            }
        }

        var options: String.CompareOptions {
            switch self {
            case .exact, .ascii: []
            case .caseFold: .caseInsensitive
            case .diacritics: .diacriticInsensitive
            case .caseAndDiacritics: [.caseInsensitive, .diacriticInsensitive]
            }
        }
    }

    /// `text` folded by `mode`: exact is the text itself; ascii lowers A–Z only; the others are
    /// canonical decomposition, Unicode's default case folding and/or the removal of diacritics
    /// (Foundation's `folding(options:locale:)` with no locale), then canonical composition (NFC).
    static func fold(_ text: UnsafeBufferPointer<UInt8>, _ mode: Mode) -> [UInt8] {
        switch mode {
        case .exact:
            return Array(text)
        case .ascii:
            return text.map(lowerASCII)
        case .caseFold, .diacritics, .caseAndDiacritics:
            if text.allSatisfy({ $0 < 0x80 }) {
                // ASCII has no diacritics, and folds its case as ASCII does.
                return mode == .diacritics ? Array(text) : text.map(lowerASCII)
            }
            let string = String(decoding: text, as: UTF8.self)
            let folded = string.decomposedStringWithCanonicalMapping
                .folding(options: mode.options, locale: nil)
                .precomposedStringWithCanonicalMapping
            return Array(folded.utf8)
        }
    }

    static func fold(_ text: String, _ mode: Mode) -> String {
        var text = text
        return text.withUTF8 { String(decoding: fold($0, mode), as: UTF8.self) }
    }

    private static func lowerASCII(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte
    }

    /// Whether `haystack` passes the test with `needle`, both already folded.
    static func matches(
        _ test: QueryExpression.TextOperator, _ haystack: UnsafeBufferPointer<UInt8>,
        _ needle: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        let count = needle.count
        switch test {
        case .equals:
            return haystack.count == count && (count == 0 || memcmp(haystack.baseAddress, needle.baseAddress, count) == 0)
        case .beginsWith:
            return haystack.count >= count && (count == 0 || memcmp(haystack.baseAddress, needle.baseAddress, count) == 0)
        case .endsWith:
            guard haystack.count >= count else { return false }
            return count == 0
                || memcmp(haystack.baseAddress.map { $0 + (haystack.count - count) }, needle.baseAddress, count) == 0
        case .contains:
            guard count > 0 else { return true }
            guard haystack.count >= count, let base = haystack.baseAddress else { return false }
            return memmem(base, haystack.count, needle.baseAddress, count) != nil
        }
    }

    /// The test on two texts as Swift holds them (what a query computes).
    static func matches(
        _ test: QueryExpression.TextOperator, _ comparison: QueryExpression.TextComparison,
        _ haystack: String, _ needle: String
    ) -> Bool {
        let mode = Mode(comparison)
        var haystack = haystack
        var needle = needle
        let foldedHaystack = haystack.withUTF8 { fold($0, mode) }
        let foldedNeedle = needle.withUTF8 { fold($0, mode) }
        return foldedHaystack.withUnsafeBufferPointer { h in
            foldedNeedle.withUnsafeBufferPointer { n in matches(test, h, n) }
        }
    }

    /// The number of characters (extended grapheme clusters) of `text`, as `String.count` counts.
    static func length(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        var ascii = true
        var pairs = 0
        var previous: UInt8 = 0
        for byte in text {
            if byte >= 0x80 {
                ascii = false
                break
            }
            // CR LF is one character.
            if byte == 0x0A && previous == 0x0D { pairs += 1 }
            previous = byte
        }
        if ascii { return text.count - pairs }
        return String(decoding: text, as: UTF8.self).count
    }
}
