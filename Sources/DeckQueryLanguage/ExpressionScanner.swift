import DeckStore
import Foundation

/// The characters of a `--where` or `--sort` expression and the tokens read from them, for
/// ``ExpressionParser`` (whose grammar calls it) and `--sort` keys: the position, words and
/// connectives, keys (names in backticks or plain, joined by dots), literal values (quoted
/// strings, numbers, record ids, bare words) and the messages that say what is where. Nothing
/// here recurses: the nesting is the grammar's.
struct ExpressionScanner {
    enum Connective {
        case and
        case or
    }

    static let keywords: Set<String> = [
        "and", "or", "not", "is", "null", "in", "true", "false",
        "contains", "beginswith", "begins-with", "endswith", "ends-with",
    ]
    static let comparisons: [String: QueryExpression.Comparison] = [
        "=": .equal, "==": .equal, "!=": .notEqual, "<>": .notEqual,
        "<": .less, "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual,
    ]
    static let comparisonCharacters: Set<Character> = ["=", "!", "<", ">"]
    /// Characters that start something other than an operator, for messages after a key.
    static let nonOperatorCharacters: Set<Character> = ["(", ")", "\"", "'", "`", ",", "#", "[", "]"]
    static let operatorHint =
        "; expected =, ==, !=, <>, <, <=, >, >=, is, in, not in, contains, begins-with, ends-with or equals"

    let text: String
    let characters: [Character]
    var index = 0

    init(_ text: String) throws(QuerySyntaxError) {
        let length = text.utf8.count
        guard length <= QueryParser.maximumLength else {
            throw QuerySyntaxError(
                message:
                    "the expression is too long (\(length) bytes; "
                    + "the limit is \(QueryParser.maximumLength))",
                column: 1, expression: text)
        }
        self.text = text
        self.characters = Array(text)
    }

    func connective(at position: Int) -> (kind: Connective, end: Int)? {
        let first = character(at: position)
        let second = character(at: position + 1)
        if first == "&" && second == "&" { return (.and, position + 2) }
        if first == "|" && second == "|" { return (.or, position + 2) }
        switch word(at: position) {
        case "and": return (.and, wordEnd(from: position))
        case "or": return (.or, wordEnd(from: position))
        default: return nil
        }
    }

    /// Skips spaces and the ')' that closes the group or quantifier opened at `open`: an error
    /// if the text ends first, or if something other than ')' follows the condition.
    mutating func closeParenthesis(openedAt open: Int) throws(QuerySyntaxError) {
        skipSpaces()
        guard let close = character(at: index) else {
            throw failure("unbalanced parenthesis: this '(' is never closed", at: open)
        }
        guard close == ")" else {
            throw unexpectedAfterCondition(at: index, insideParentheses: true)
        }
        index += 1
    }

    func unexpectedAfterCondition(at position: Int, insideParentheses: Bool) -> QuerySyntaxError {
        switch character(at: position) {
        case "&": return failure("unknown operator '&'; use 'and' or '&&'", at: position)
        case "|": return failure("unknown operator '|'; use 'or' or '||'", at: position)
        default:
            let wanted = insideParentheses ? "')', 'and' or 'or'" : "'and', 'or' or the end of the expression"
            return expected(wanted, at: position)
        }
    }

    /// "a condition", or "a condition after 'and'".
    func condition(after context: String?) -> String {
        guard let context else { return "a condition" }
        return "a condition after '\(Self.abbreviated(context))'"
    }

    // MARK: - Keys

    /// A key: names (plain or in backticks) joined by dots, and whether the last was plain. In a
    /// condition, a plain name may not be a keyword.
    mutating func parseKey(forSort: Bool, after context: String?) throws(QuerySyntaxError)
        -> (names: [String], lastIsPlain: Bool)
    {
        var names: [String] = []
        var lastIsPlain = false
        var position = index
        while true {
            guard let first = character(at: position), first == "`" || Self.isNameStart(first) else {
                if names.isEmpty { throw notAKey(at: position, forSort: forSort, after: context) }
                throw expected("a name after '.' in the key", at: position)
            }
            if first == "`" {
                var close = position + 1
                while let next = character(at: close), next != "`" { close += 1 }
                guard close < characters.count else {
                    throw failure("unterminated key: this backtick is never closed", at: position)
                }
                guard close > position + 1 else { throw failure("empty key between backticks", at: position) }
                // Dots inside backticks join names too: `deck.title` is deck.title.
                names += source(position + 1, close).split(separator: ".", omittingEmptySubsequences: false)
                    .map(
                        String.init)
                lastIsPlain = false
                position = close + 1
            } else {
                let end = wordEnd(from: position)
                let name = source(position, end)
                let lowered = name.lowercased()
                if !forSort && Self.keywords.contains(lowered) {
                    if names.isEmpty && (lowered == "and" || lowered == "or") {
                        throw expected(condition(after: context), at: position)
                    }
                    throw failure("'\(name)' is a keyword; write `\(name)` to use it as a key", at: position)
                }
                names.append(name)
                lastIsPlain = true
                position = end
            }
            guard character(at: position) == "." else { break }
            position += 1
        }
        if let next = character(at: position), !next.isASCII, next.isLetter || next.isNumber {
            throw failure(
                "a key may contain only ASCII letters, digits and '_'; write other names in backticks",
                at: position)
        }
        index = position
        return (names, lastIsPlain)
    }

    func notAKey(at position: Int, forSort: Bool, after context: String?) -> QuerySyntaxError {
        if forSort { return expected("a sort key", at: position) }
        guard let first = character(at: position) else {
            return expected(condition(after: context), at: position)
        }
        if first == "\"" || first == "'" {
            return failure(
                "expected a key, found a quoted string; write a key in backticks, not quotes", at: position)
        }
        if Self.comparisonCharacters.contains(first) {
            var end = position
            while let next = character(at: end), Self.comparisonCharacters.contains(next) { end += 1 }
            return failure("expected a key before '\(Self.abbreviated(source(position, end)))'", at: position)
        }
        if Self.isASCIIDigit(first) {
            return failure(
                "expected a key, found \(describe(at: position)); a key starts with a letter or '_'",
                at: position)
        }
        if first.isLetter {
            return failure(
                "a key may contain only ASCII letters, digits and '_'; write other names in backticks",
                at: position)
        }
        return expected(condition(after: context), at: position)
    }
    // MARK: - Values

    mutating func parseValue(after context: String) throws(QuerySyntaxError) -> Value {
        skipSpaces()
        let start = index
        guard let first = character(at: start) else {
            throw failure("expected a value after '\(Self.abbreviated(context))'", at: start)
        }
        switch first {
        case "\"", "'":
            return .string(try parseQuoted(quote: first))
        case "#":
            return try parseReference()
        case _ where Self.isBareCharacter(first):
            return try parseBareWord(after: context)
        default:
            throw expected("a value after '\(Self.abbreviated(context))'", at: start)
        }
    }

    mutating func parseQuoted(quote: Character) throws(QuerySyntaxError) -> String {
        let start = index
        var position = start + 1
        var result = ""
        while let next = character(at: position) {
            if next == quote {
                index = position + 1
                return result
            }
            guard next == "\\" else {
                result.append(next)
                position += 1
                continue
            }
            guard let escaped = character(at: position + 1) else { break }
            switch escaped {
            case "\\": result.append("\\")
            case "'": result.append("'")
            case "\"": result.append("\"")
            case "n": result.append("\n")
            case "t": result.append("\t")
            default:
                throw failure(
                    "unknown escape '\\\(escaped)' in a string; use \\\\, \\', \\\", \\n or \\t", at: position
                )
            }
            position += 2
        }
        let kind = quote == "\"" ? "double" : "single"
        throw failure("unterminated string: this \(kind) quote is never closed", at: start)
    }

    mutating func parseReference() throws(QuerySyntaxError) -> Value {
        let start = index
        var end = start + 1
        while let next = character(at: end), Self.isBareCharacter(next) { end += 1 }
        index = end
        let digits = source(start + 1, end)
        guard !digits.isEmpty else { throw failure("expected a record id after '#', as in #42", at: start) }
        guard digits.allSatisfy(Self.isASCIIDigit) else {
            throw failure(
                "invalid record id '#\(Self.abbreviated(digits))'; a record id is digits, as in #42",
                at: start)
        }
        guard let id = Int64(digits) else {
            throw failure("invalid record id '#\(Self.abbreviated(digits))': it is out of range", at: start)
        }
        return .reference(id)
    }

    /// A number on the left of an operator: `[+-]? digits [. digits] [e [+-] digits]`.
    mutating func parseNumber() throws(QuerySyntaxError) -> Value {
        let start = index
        var end = start
        if let sign = character(at: end), sign == "-" || sign == "+" { end += 1 }
        while let next = character(at: end), Self.isASCIIDigit(next) || next == "." { end += 1 }
        if let e = character(at: end), e == "e" || e == "E" {
            var exponent = end + 1
            if let sign = character(at: exponent), sign == "-" || sign == "+" { exponent += 1 }
            if let digit = character(at: exponent), Self.isASCIIDigit(digit) {
                end = exponent
                while let next = character(at: end), Self.isASCIIDigit(next) { end += 1 }
            }
        }
        let word = source(start, end)
        index = end
        guard let isInteger = Self.numberKind(word) else {
            throw failure("invalid number '\(Self.abbreviated(word))'", at: start)
        }
        return try number(word, isInteger: isInteger, at: start)
    }

    /// The value of `word`, which `numberKind` found to be a number (an integer when `isInteger`),
    /// or an error at `start` when it does not fit.
    func number(_ word: String, isInteger: Bool, at start: Int) throws(QuerySyntaxError) -> Value {
        if isInteger {
            guard let value = Int64(word) else {
                throw failure(
                    "invalid number '\(Self.abbreviated(word))': it does not fit in a 64-bit integer",
                    at: start)
            }
            return .integer(value)
        }
        guard let value = Double(word), value.isFinite else {
            throw failure("invalid number '\(Self.abbreviated(word))': it is out of range", at: start)
        }
        return .double(value)
    }

    mutating func parseBareWord(after context: String) throws(QuerySyntaxError) -> Value {
        let start = index
        var end = start
        while let next = character(at: end), Self.isBareCharacter(next) { end += 1 }
        index = end
        let word = source(start, end)
        if let isInteger = Self.numberKind(word) {
            return try number(word, isInteger: isInteger, at: start)
        }
        if word.hasPrefix("-") || word.hasPrefix("+") {
            throw failure("invalid number '\(Self.abbreviated(word))'", at: start)
        }
        let lowered = word.lowercased()
        switch lowered {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        case "and", "or":
            // Most likely a missing value, rather than the text "and".
            throw failure("expected a value after '\(Self.abbreviated(context))', found '\(word)'", at: start)
        case _ where Self.keywords.contains(lowered):
            throw failure(
                "expected a value after '\(Self.abbreviated(context))', found '\(word)'; "
                    + "quote it to use it as text", at: start)
        default:
            return .string(word)
        }
    }

    /// Whether `word` is a number: `[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`; true for
    /// an integer, false for a decimal, nil for anything else.
    static func numberKind(_ word: String) -> Bool? {
        let scalars = Array(word.utf8)
        var position = 0
        func digits() -> Int {
            let start = position
            while position < scalars.count, scalars[position] >= UInt8(ascii: "0"),
                scalars[position] <= UInt8(ascii: "9")
            {
                position += 1
            }
            return position - start
        }
        func skip(_ characters: String) -> Bool {
            guard position < scalars.count, characters.utf8.contains(scalars[position]) else { return false }
            position += 1
            return true
        }
        _ = skip("+-")
        var count = digits()
        let hasPoint = skip(".")
        if hasPoint { count += digits() }
        guard count > 0 else { return nil }
        var hasExponent = false
        if skip("eE") {
            hasExponent = true
            _ = skip("+-")
            guard digits() > 0 else { return nil }
        }
        guard position == scalars.count else { return nil }
        return !hasPoint && !hasExponent
    }

    // MARK: - Sort keys

    mutating func parseSortKey() throws(QuerySyntaxError) -> SortKey {
        skipSpaces()
        guard index < characters.count else { throw failure("empty sort key", at: 0) }
        let (names, _) = try parseKey(forSort: true, after: nil)
        skipSpaces()
        var ascending = true
        if character(at: index) == ":" {
            index += 1
            skipSpaces()
            let start = index
            let end = wordEnd(from: start)
            switch word(at: start) {
            case "asc": ascending = true
            case "desc": ascending = false
            case "": throw expected("'asc' or 'desc' after ':'", at: start)
            default:
                let written = Self.abbreviated(source(start, end))
                throw failure("unknown sort direction '\(written)'; expected 'asc' or 'desc'", at: start)
            }
            index = end
            skipSpaces()
        }
        guard index >= characters.count else {
            throw expected("':asc', ':desc' or the end of the sort key", at: index)
        }
        return SortKey(.path(.init(names)), ascending: ascending)
    }

    // MARK: - Characters

    func character(at position: Int) -> Character? {
        position >= 0 && position < characters.count ? characters[position] : nil
    }

    /// The text between two positions, clamped to the expression.
    func source(_ start: Int, _ end: Int) -> String {
        let lower = max(0, min(start, characters.count))
        let upper = max(lower, min(end, characters.count))
        return String(characters[lower..<upper])
    }

    mutating func skipSpaces() {
        while let next = character(at: index), next.isWhitespace { index += 1 }
    }

    /// The end of the run of name characters (`[A-Za-z0-9_]`) from `start`.
    func wordEnd(from start: Int) -> Int {
        var end = max(0, start)
        while let next = character(at: end), Self.isNameCharacter(next) { end += 1 }
        return end
    }

    /// The run of name characters at `start`, lowercased ("" if none).
    func word(at start: Int) -> String {
        source(start, wordEnd(from: start)).lowercased()
    }

    /// What is at `position`, for messages: `'and'`, `'>='`, `a quoted string`, `the end of the expression`.
    func describe(at position: Int) -> String {
        guard let first = character(at: position) else { return "the end of the expression" }
        if first == "\"" || first == "'" { return "a quoted string" }
        var end = position + 1
        if Self.isNameCharacter(first) {
            end = wordEnd(from: position)
        } else if Self.comparisonCharacters.contains(first) || first == "&" || first == "|" {
            while let next = character(at: end),
                Self.comparisonCharacters.contains(next) || next == "&" || next == "|"
            {
                end += 1
            }
        }
        return "'" + Self.abbreviated(source(position, end)) + "'"
    }

    func failure(_ message: String, at position: Int) -> QuerySyntaxError {
        QuerySyntaxError(
            message: message, column: max(0, min(position, characters.count)) + 1, expression: text)
    }

    /// "expected WHAT" at the end, "expected WHAT, found X" elsewhere.
    func expected(_ what: String, at position: Int) -> QuerySyntaxError {
        guard position < characters.count else { return failure("expected \(what)", at: position) }
        return failure("expected \(what), found \(describe(at: position))", at: position)
    }

    static func abbreviated(_ text: String) -> String {
        text.count <= 32 ? text : text.prefix(32) + "..."
    }

    static func isASCIILetter(_ character: Character) -> Bool {
        character.isASCII && character.isLetter
    }

    static func isASCIIDigit(_ character: Character) -> Bool {
        character.isASCII && character.isNumber
    }

    static func isNameStart(_ character: Character) -> Bool {
        isASCIILetter(character) || character == "_"
    }

    static func isNameCharacter(_ character: Character) -> Bool {
        isNameStart(character) || isASCIIDigit(character)
    }

    /// Letters (of any script), ASCII digits and `- : . + _`.
    static func isBareCharacter(_ character: Character) -> Bool {
        character.isLetter || isASCIIDigit(character) || "-:.+_".contains(character)
    }
}
