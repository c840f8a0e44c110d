import DeckSQLite
import Foundation

// Linux's Foundation expands `localizedStandardContains` and `caseInsensitiveCompare` in
// `#Predicate` to `PredicateExpressions.build_…` functions it does not define; these define them,
// with Apple's names for the expression types. Their `evaluate` folds text exactly as the store
// does (spec 7.6), so a predicate evaluated in memory and the same predicate run as a query agree.
#if !canImport(Darwin)
    extension PredicateExpressions {
        /// `root.localizedStandardContains(other)` in a `#Predicate`: whether `other` is contained
        /// in `root` ignoring case and diacritics.
        ///
        /// Unlike Apple's locale-aware test, it folds by Deck's rule for
        /// ``QueryExpression/TextComparison/caseAndDiacriticInsensitive`` (format specification,
        /// section 7.6) — the same in memory and in the store, whatever the locale: `É` matches `e`,
        /// `ß` matches `ss`.
        public struct StringLocalizedStandardContains<Root: PredicateExpression, Other: PredicateExpression>:
            PredicateExpression
        where Root.Output: StringProtocol, Other.Output: StringProtocol {
            /// The result: a boolean.
            public typealias Output = Bool

            /// The text searched.
            public let root: Root
            /// The text searched for.
            public let other: Other

            /// The test of whether `other` is in `root`.
            public init(root: Root, other: Other) {
                self.root = root
                self.other = other
            }

            /// Whether the folding of `other` is part of the folding of `root`.
            public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
                TextFolding.matches(
                    .contains, .unicode, String(try root.evaluate(bindings)),
                    String(try other.evaluate(bindings)))
            }
        }

        /// `root.caseInsensitiveCompare(other)` in a `#Predicate`: how `root` orders before, with
        /// or after `other`, ignoring case.
        ///
        /// It compares the case-only foldings of the two texts (format specification, section 7.6:
        /// Unicode case mappings, not only ASCII's, and no locale), by their UTF-8 bytes. A query
        /// translates only a comparison of the result with `.orderedSame` (`==` or `!=`).
        public struct StringCaseInsensitiveCompare<Root: PredicateExpression, Other: PredicateExpression>:
            PredicateExpression
        where Root.Output: StringProtocol, Other.Output: StringProtocol {
            /// The result: how the two texts order.
            public typealias Output = ComparisonResult

            /// The text compared.
            public let root: Root
            /// The text it is compared with.
            public let other: Other

            /// The comparison of `root` with `other`.
            public init(root: Root, other: Other) {
                self.root = root
                self.other = other
            }

            /// How the folding of `root` orders against the folding of `other`.
            public func evaluate(_ bindings: PredicateBindings) throws -> ComparisonResult {
                let a = TextFolding.fold(String(try root.evaluate(bindings)), .unicodeCase)
                let b = TextFolding.fold(String(try other.evaluate(bindings)), .unicodeCase)
                if a.utf8.elementsEqual(b.utf8) { return .orderedSame }
                return a.utf8.lexicographicallyPrecedes(b.utf8) ? .orderedAscending : .orderedDescending
            }
        }

        /// What `#Predicate` makes of `root.localizedStandardContains(other)`.
        // swift-format-ignore: AlwaysUseLowerCamelCase
        public static func build_localizedStandardContains<Root, Other>(_ root: Root, _ other: Other)
            -> StringLocalizedStandardContains<Root, Other>
        {
            StringLocalizedStandardContains(root: root, other: other)
        }

        /// What `#Predicate` makes of `root.caseInsensitiveCompare(other)`.
        // swift-format-ignore: AlwaysUseLowerCamelCase
        public static func build_caseInsensitiveCompare<Root, Other>(_ root: Root, _ other: Other)
            -> StringCaseInsensitiveCompare<Root, Other>
        {
            StringCaseInsensitiveCompare(root: root, other: other)
        }
    }

    extension PredicateExpressions.StringLocalizedStandardContains: StandardPredicateExpression
    where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}

    extension PredicateExpressions.StringLocalizedStandardContains: Codable
    where Root: Codable, Other: Codable {}

    extension PredicateExpressions.StringLocalizedStandardContains: Sendable
    where Root: Sendable, Other: Sendable {}

    extension PredicateExpressions.StringCaseInsensitiveCompare: StandardPredicateExpression
    where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}

    extension PredicateExpressions.StringCaseInsensitiveCompare: Codable where Root: Codable, Other: Codable {
    }

    extension PredicateExpressions.StringCaseInsensitiveCompare: Sendable
    where Root: Sendable, Other: Sendable {}
#endif
