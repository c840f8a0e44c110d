import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The Unicode-aware folding of a query's `caseAndDiacriticInsensitive` text comparison and
/// the four text tests on folded texts. The SQL function `deck_match` (``QueryFunctions``) calls
/// these, so a query and Swift code that calls them agree exactly. (DeckStore maps a query's text
/// operators and comparisons to ``Test`` and ``Mode``: `TextFolding+Query.swift`.)
///
/// The folding rule is normative (spec section 7.6, "Text folding in queries"), so that another reader of the
/// format can reproduce a query's result:
///
/// 1. the text is put in Unicode canonical decomposition (NFD);
/// 2. each scalar is replaced by the full lowercase mapping of its full uppercase mapping
///    (UnicodeData.txt and the unconditional mappings of SpecialCasing.txt; no locale, no context):
///    `ß` → `SS` → `ss`, `ς` → `Σ` → `σ`, `ı` → `I` → `i`, `ﬁ` → `FI` → `fi`;
/// 3. the result is decomposed again (NFD), and every scalar in the blocks Combining Diacritical
///    Marks (U+0300–U+036F), Combining Diacritical Marks Extended (U+1AB0–U+1AFF), Combining
///    Diacritical Marks Supplement (U+1DC0–U+1DFF), Combining Diacritical Marks for Symbols
///    (U+20D0–U+20FF) and Combining Half Marks (U+FE20–U+FE2F) is removed;
/// 4. the rest is put in canonical composition (NFC).
///
/// Texts are then compared as UTF-8 bytes. Text made only of ASCII folds to its ASCII lowercase,
/// which the fast path computes directly. A store's invalid UTF-8 is read with U+FFFD replacements.
///
/// The case-only folding of `caseInsensitive` is the same rule
/// without the removal of step 3 (the result of step 2 is put in NFC).
package enum TextFolding {
    /// The foldings `deck_match` and `deck_fold` know, as their codes number them.
    package enum Mode: Int32, CaseIterable, Sendable {
        case exact = 0
        /// Case and diacritics (steps 1 to 4).
        case unicode = 1
        /// Case only (steps 1, 2 and 4).
        case unicodeCase = 2
    }

    /// The four text tests, as `deck_match`'s codes number them.
    package enum Test: Int32, CaseIterable, Sendable {
        case equals = 0
        case contains = 1
        case beginsWith = 2
        case endsWith = 3
    }

    /// `text` folded by `mode`.
    package static func fold(_ text: UnsafeBufferPointer<UInt8>, _ mode: Mode) -> [UInt8] {
        switch mode {
        case .exact:
            return Array(text)
        case .unicode, .unicodeCase:
            if text.allSatisfy({ $0 < 0x80 }) {
                // ASCII has no diacritics, and its case maps within ASCII.
                return text.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
            }
            return Array(
                foldUnicode(String(decoding: text, as: UTF8.self), removingDiacritics: mode == .unicode).utf8)
        }
    }

    /// `text` folded by `mode` (what a query compares).
    package static func fold(_ text: String, _ mode: Mode) -> String {
        var text = text
        return text.withUTF8 { String(decoding: fold($0, mode), as: UTF8.self) }
    }

    /// Steps 1 to 4 of the rule (without the removal of step 3 unless `removingDiacritics`).
    private static func foldUnicode(_ text: String, removingDiacritics: Bool) -> String {
        var mapped = String.UnicodeScalarView()
        for scalar in text.decomposedStringWithCanonicalMapping.unicodeScalars {
            if scalar.isASCII {
                mapped.append(
                    scalar.value >= 0x41 && scalar.value <= 0x5A
                        ? Unicode.Scalar(UInt8(scalar.value + 0x20)) : scalar)
                continue
            }
            let upper = scalar.properties.uppercaseMapping
            for character in upper.unicodeScalars {
                mapped.append(contentsOf: character.properties.lowercaseMapping.unicodeScalars)
            }
        }
        var stripped = String.UnicodeScalarView()
        for scalar in String(mapped).decomposedStringWithCanonicalMapping.unicodeScalars
        where !removingDiacritics || !isDiacritic(scalar) {
            stripped.append(scalar)
        }
        return String(stripped).precomposedStringWithCanonicalMapping
    }

    /// Whether `scalar` is in one of the blocks of combining diacritical marks that step 3 removes.
    package static func isDiacritic(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0300...0x036F, 0x1AB0...0x1AFF, 0x1DC0...0x1DFF, 0x20D0...0x20FF, 0xFE20...0xFE2F: true
        default: false
        }
    }

    /// Whether `haystack` passes the test with `needle`, both already folded.
    package static func matches(
        _ test: Test, _ haystack: UnsafeBufferPointer<UInt8>,
        _ needle: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        let count = needle.count
        guard count > 0 else { return test != .equals || haystack.isEmpty }
        guard haystack.count >= count, let base = haystack.baseAddress, let pattern = needle.baseAddress
        else {
            return false
        }
        switch test {
        case .equals:
            return haystack.count == count && memcmp(base, pattern, count) == 0
        case .beginsWith:
            return memcmp(base, pattern, count) == 0
        case .endsWith:
            return memcmp(base + (haystack.count - count), pattern, count) == 0
        case .contains:
            let first = pattern[0]
            var position = 0
            let last = haystack.count - count
            while position <= last {
                if base[position] == first && memcmp(base + position, pattern, count) == 0 { return true }
                position += 1
            }
            return false
        }
    }
}
