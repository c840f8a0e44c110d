/// The expression language of `deck query --where`, which compiles to a ``Filter``, and of `--sort` keys.
///
/// An expression is one or more conditions on a record's attributes and to-one relationships, combined
/// with `not`, `and`, `or` and parentheses:
///
///     front = hola
///     due <= 2026-11-30 and not suspended = true
///     (ease < 2.5 || reps > 10) && deck.title begins-with[c] 'span'
///     kind in ("verb", "noun") or note is null
///     deck = #42 and `order` >= -1
///
/// Conditions (K is a key, V a value, T a text value):
///
///     K = V      K == V          equal                  .compare(K, .equal, V)
///     K != V     K <> V          not equal              .compare(K, .notEqual, V)
///     K < V      K <= V          less (or equal)        .compare(K, .less, V), .lessOrEqual
///     K > V      K >= V          greater (or equal)     .compare(K, .greater, V), .greaterOrEqual
///     K is null                  null, or empty         .isNull(K)
///     K is not null              not null               .not(.isNull(K))
///     K in (V1, V2, ...)         one of the values      .oneOf(K, [V1, V2, ...]); `in ()` matches nothing
///     K contains T               contains the text      .text(K, .contains, T, caseInsensitive: false)
///     K begins-with T            also `beginswith`      .text(K, .beginsWith, T, caseInsensitive: false)
///     K ends-with T              also `endswith`        .text(K, .endsWith, T, caseInsensitive: false)
///     K contains[c] T            `[c]` after a text operator ignores ASCII case (caseInsensitive: true)
///
/// Combining, from tightest to loosest: `not A` or `!A`; `A and B` or `A && B`; `A or B` or `A || B`.
/// Parentheses group, so `a = 1 or b = 2 and c = 3` means `a = 1 or (b = 2 and c = 3)`. The keywords
/// (`and or not is null in true false contains beginswith begins-with endswith ends-with`) are
/// case-insensitive words and need a space, parenthesis or quote next to them; symbols need no spaces:
/// `front=hola&&reps>-5`.
///
/// Keys are names (`[A-Za-z_][A-Za-z0-9_]*`) joined by dots to follow to-one relationships
/// (`deck.title`). A name in backticks is taken as written, which is how a key that is a keyword, or is
/// not a plain name, is written: a backquoted `in`, compared with 3, or `order` in backquotes after `deck.`.
///
/// Values:
///
///     'text'  "text"             a string; escapes \\ \' \" \n \t       .string("text")
///     42  -7  +3                 an integer (it must fit in 64 bits)    .integer(42)
///     2.5  -.5  1e-3             a decimal number                       .double(2.5)
///     true  false  null                                                 .bool(true), .null
///     #42                        a record id, for relationships         .reference(42)
///     hola  2026-11-30           a bare word                            .string("2026-11-30")
///
/// A bare word is a run of letters, digits and `- : . + _` that is not a keyword and not a number, such
/// as a date (`2026-11-30`, `2026-11-30T10:00:00Z`) or a UUID; the store converts strings to the
/// attribute's type. A word that starts with `-` or `+` must be a number (`-5`). A text operator takes a
/// string, quoted or bare: write `front contains "5"`, not `front contains 5`.
///
/// Sort keys are `K`, `K:asc` or `K:desc` (`created:desc`, `deck.title:asc`); the direction is
/// case-insensitive and defaults to ascending, and keywords need no backticks there.
///
/// Expressions are limited to 65,536 bytes and to 100 levels of nested parentheses and `not`; a query
/// has further limits on conditions, values and relationship steps (``RecordQuery/Limits``), which a fetch
/// checks. A problem throws a ``FilterSyntaxError`` with its 1-based column:
///
///     syntax error at column 12: expected a value after '>'
///     deck.size >
///                ^
public enum FilterParser {
    /// The longest expression accepted, in UTF-8 bytes.
    public static let maximumLength = 65_536
    /// How deeply parentheses and `not` may nest.
    public static let maximumDepth = 100

    /// Parses a `--where` expression.
    public static func parse(_ text: String) throws(FilterSyntaxError) -> Filter {
        var parser = try ExpressionParser(text)
        return try parser.parseFilter()
    }

    /// Parses a `--sort` key: `created:desc`, `front`, `front:asc`, `deck.title:desc`.
    public static func parseSort(_ text: String) throws(FilterSyntaxError) -> SortKey {
        var parser = try ExpressionParser(text)
        return try parser.parseSortKey()
    }
}

/// A `--where` or `--sort` expression that does not parse.
public struct FilterSyntaxError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What is wrong, without the position: "expected a value after '>'".
    public let message: String
    /// The 1-based column (in characters) of the problem; one past the end when the expression ended early.
    public let column: Int
    /// The expression as given.
    public let expression: String

    public init(message: String, column: Int, expression: String) {
        self.message = message
        self.column = column
        self.expression = expression
    }

    /// "syntax error at column 12: expected a value after '>'".
    public var description: String { "syntax error at column \(column): \(message)" }

    /// Two lines: the expression (tabs and line breaks shown as spaces), then a `^` under the column.
    public var caret: String {
        let line = String(expression.map { $0.isWhitespace ? " " : $0 })
        return line + "\n" + String(repeating: " ", count: max(0, column - 1)) + "^"
    }
}

/// A recursive-descent parser over the expression's characters; recursion is bounded by `maximumDepth`.
private struct ExpressionParser {
    private enum Connective {
        case and
        case or
    }

    private static let keywords: Set<String> = [
        "and", "or", "not", "is", "null", "in", "true", "false",
        "contains", "beginswith", "begins-with", "endswith", "ends-with",
    ]
    private static let comparisons: [String: Filter.Comparison] = [
        "=": .equal, "==": .equal, "!=": .notEqual, "<>": .notEqual,
        "<": .less, "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual,
    ]
    private static let comparisonCharacters: Set<Character> = ["=", "!", "<", ">"]
    /// Characters that start something other than an operator, for messages after a key.
    private static let nonOperatorCharacters: Set<Character> = ["(", ")", "\"", "'", "`", ",", "#", "[", "]"]
    private static let operatorHint =
        "; expected =, ==, !=, <>, <, <=, >, >=, is, in, contains, begins-with or ends-with"

    private let text: String
    private let characters: [Character]
    private var index = 0

    init(_ text: String) throws(FilterSyntaxError) {
        let length = text.utf8.count
        guard length <= FilterParser.maximumLength else {
            throw FilterSyntaxError(
                message:
                    "the expression is too long (\(length) bytes; "
                    + "the limit is \(FilterParser.maximumLength))",
                column: 1, expression: text)
        }
        self.text = text
        self.characters = Array(text)
    }

    // MARK: - Expressions

    mutating func parseFilter() throws(FilterSyntaxError) -> Filter {
        skipSpaces()
        guard index < characters.count else { throw failure("empty expression", at: 0) }
        let filter = try parseOr(depth: 0, after: nil)
        skipSpaces()
        guard let next = character(at: index) else { return filter }
        if next == ")" {
            throw failure("unbalanced parenthesis: this ')' has no matching '('", at: index)
        }
        throw unexpectedAfterCondition(at: index, insideParentheses: false)
    }

    private mutating func parseOr(depth: Int, after context: String?) throws(FilterSyntaxError) -> Filter {
        var terms = [try parseAnd(depth: depth, after: context)]
        while true {
            skipSpaces()
            guard let found = connective(at: index), found.kind == .or else { break }
            let word = source(index, found.end)
            index = found.end
            terms.append(try parseAnd(depth: depth, after: word))
        }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    private mutating func parseAnd(depth: Int, after context: String?) throws(FilterSyntaxError) -> Filter {
        var terms = [try parseUnary(depth: depth, after: context)]
        while true {
            skipSpaces()
            guard let found = connective(at: index), found.kind == .and else { break }
            let word = source(index, found.end)
            index = found.end
            terms.append(try parseUnary(depth: depth, after: word))
        }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    private mutating func parseUnary(depth: Int, after context: String?) throws(FilterSyntaxError) -> Filter {
        skipSpaces()
        let start = index
        guard let first = character(at: start) else {
            throw expected(condition(after: context), at: start)
        }
        let isBang = first == "!" && character(at: start + 1) != "="
        if isBang || word(at: start) == "not" {
            try checkDepth(depth, at: start)
            let end = isBang ? start + 1 : wordEnd(from: start)
            let word = source(start, end)
            index = end
            return .not(try parseUnary(depth: depth + 1, after: word))
        }
        if first == "(" {
            try checkDepth(depth, at: start)
            index += 1
            let inner = try parseOr(depth: depth + 1, after: "(")
            skipSpaces()
            guard let close = character(at: index) else {
                throw failure("unbalanced parenthesis: this '(' is never closed", at: start)
            }
            guard close == ")" else { throw unexpectedAfterCondition(at: index, insideParentheses: true) }
            index += 1
            return inner
        }
        return try parseCondition(after: context)
    }

    private func checkDepth(_ depth: Int, at position: Int) throws(FilterSyntaxError) {
        guard depth < FilterParser.maximumDepth else {
            throw failure(
                "the expression is nested too deeply (at most \(FilterParser.maximumDepth) levels of "
                    + "parentheses and 'not')", at: position)
        }
    }

    private func connective(at position: Int) -> (kind: Connective, end: Int)? {
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

    private func unexpectedAfterCondition(at position: Int, insideParentheses: Bool) -> FilterSyntaxError {
        switch character(at: position) {
        case "&": return failure("unknown operator '&'; use 'and' or '&&'", at: position)
        case "|": return failure("unknown operator '|'; use 'or' or '||'", at: position)
        default:
            let wanted = insideParentheses ? "')', 'and' or 'or'" : "'and', 'or' or the end of the expression"
            return expected(wanted, at: position)
        }
    }

    /// "a condition", or "a condition after 'and'".
    private func condition(after context: String?) -> String {
        guard let context else { return "a condition" }
        return "a condition after '\(Self.abbreviated(context))'"
    }

    // MARK: - Conditions

    private mutating func parseCondition(after context: String?) throws(FilterSyntaxError) -> Filter {
        let keyStart = index
        let key = try parseKey(forSort: false, after: context)
        let keyText = Self.abbreviated(source(keyStart, index))
        skipSpaces()
        let start = index
        guard let first = character(at: start) else {
            throw failure("expected an operator after '\(keyText)'", at: start)
        }
        if Self.comparisonCharacters.contains(first) {
            var end = start
            while let next = character(at: end), Self.comparisonCharacters.contains(next) { end += 1 }
            let symbol = source(start, end)
            guard let comparison = Self.comparisons[symbol] else {
                throw failure("unknown operator '\(Self.abbreviated(symbol))'" + Self.operatorHint, at: start)
            }
            index = end
            return .compare(key, comparison, try parseValue(after: symbol))
        }
        if Self.isASCIILetter(first) {
            var end = start
            while let next = character(at: end) {
                if Self.isNameCharacter(next) {
                    end += 1
                } else if next == "-", let after = character(at: end + 1), Self.isASCIILetter(after) {
                    end += 2
                } else {
                    break
                }
            }
            index = end
            return try parseWordOperator(source(start, end), at: start, key: key, keyText: keyText)
        }
        let isConnective = (first == "&" || first == "|") && character(at: start + 1) == first
        if isConnective || first.isLetter || first.isNumber || first == "_"
            || Self.nonOperatorCharacters.contains(first)
        {
            throw expected("an operator after '\(keyText)'", at: start)
        }
        var end = start
        while let next = character(at: end), !next.isWhitespace, !next.isLetter, !next.isNumber,
            !Self.nonOperatorCharacters.contains(next)
        {
            end += 1
        }
        let symbol = Self.abbreviated(source(start, end))
        throw failure("unknown operator '\(symbol)'" + Self.operatorHint, at: start)
    }

    private mutating func parseWordOperator(
        _ name: String, at start: Int, key: String, keyText: String
    ) throws(FilterSyntaxError) -> Filter {
        let lowered = name.lowercased()
        let match: Filter.TextMatch?
        switch lowered {
        case "contains": match = .contains
        case "beginswith", "begins-with": match = .beginsWith
        case "endswith", "ends-with": match = .endsWith
        default: match = nil
        }
        var caseInsensitive = false
        if character(at: index) == "[" {
            let option = character(at: index + 1)
            guard option == "c" || option == "C", character(at: index + 2) == "]" else {
                throw failure(
                    "unknown option after '\(Self.abbreviated(name))'; only '[c]' (ignore case) is supported",
                    at: index)
            }
            guard match != nil else {
                throw failure("'[c]' applies only to contains, begins-with and ends-with", at: index)
            }
            caseInsensitive = true
            index += 3
        }
        if let match {
            let written = source(start, index)
            skipSpaces()
            let valueStart = index
            let value = try parseValue(after: written)
            guard case .string(let needle) = value else {
                let valueText = Self.abbreviated(source(valueStart, index))
                let found = value == .null ? "null" : "the \(value.kindName) \(valueText)"
                throw failure(
                    "'\(written)' needs a string, not \(found); quote it to match the text", at: valueStart)
            }
            return .text(key, match, needle, caseInsensitive: caseInsensitive)
        }
        switch lowered {
        case "is":
            return try parseNullTest(key: key, after: name)
        case "in":
            return try parseList(key: key, after: name)
        case _ where Self.keywords.contains(lowered):
            throw failure("expected an operator after '\(keyText)', found '\(name)'", at: start)
        default:
            throw failure("unknown operator '\(Self.abbreviated(name))'" + Self.operatorHint, at: start)
        }
    }

    private mutating func parseNullTest(key: String, after isWord: String) throws(FilterSyntaxError) -> Filter
    {
        skipSpaces()
        let first = index
        switch word(at: first) {
        case "null":
            index = wordEnd(from: first)
            return .isNull(key)
        case "not":
            let notEnd = wordEnd(from: first)
            let notWord = source(first, notEnd)
            index = notEnd
            skipSpaces()
            guard word(at: index) == "null" else {
                throw expected("'null' after '\(isWord) \(notWord)'", at: index)
            }
            index = wordEnd(from: index)
            return .not(.isNull(key))
        default:
            throw expected("'null' or 'not null' after '\(isWord)'", at: first)
        }
    }

    private mutating func parseList(key: String, after inWord: String) throws(FilterSyntaxError) -> Filter {
        skipSpaces()
        let open = index
        guard character(at: open) == "(" else { throw expected("'(' after '\(inWord)'", at: open) }
        index += 1
        skipSpaces()
        if character(at: index) == ")" {
            index += 1
            return .oneOf(key, [])
        }
        var values: [Value] = []
        var separator = "("
        while true {
            values.append(try parseValue(after: separator))
            skipSpaces()
            switch character(at: index) {
            case nil:
                throw failure("unbalanced parenthesis: this '(' is never closed", at: open)
            case ",":
                separator = ","
                index += 1
            case ")":
                index += 1
                return .oneOf(key, values)
            default:
                throw expected("',' or ')' in the list", at: index)
            }
        }
    }

    // MARK: - Keys

    /// A key: names (plain or in backticks) joined by dots. In a filter, a plain name may not be a keyword.
    private mutating func parseKey(forSort: Bool, after context: String?) throws(FilterSyntaxError) -> String
    {
        var names: [String] = []
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
                names.append(source(position + 1, close))
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
        return names.joined(separator: ".")
    }

    private func notAKey(at position: Int, forSort: Bool, after context: String?) -> FilterSyntaxError {
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

    private mutating func parseValue(after context: String) throws(FilterSyntaxError) -> Value {
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

    private mutating func parseQuoted(quote: Character) throws(FilterSyntaxError) -> String {
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

    private mutating func parseReference() throws(FilterSyntaxError) -> Value {
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

    private mutating func parseBareWord(after context: String) throws(FilterSyntaxError) -> Value {
        let start = index
        var end = start
        while let next = character(at: end), Self.isBareCharacter(next) { end += 1 }
        index = end
        let word = source(start, end)
        if let isInteger = Self.numberKind(word) {
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
    private static func numberKind(_ word: String) -> Bool? {
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

    mutating func parseSortKey() throws(FilterSyntaxError) -> SortKey {
        skipSpaces()
        guard index < characters.count else { throw failure("empty sort key", at: 0) }
        let key = try parseKey(forSort: true, after: nil)
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
        return SortKey(key, ascending: ascending)
    }

    // MARK: - Characters

    private func character(at position: Int) -> Character? {
        position >= 0 && position < characters.count ? characters[position] : nil
    }

    /// The text between two positions, clamped to the expression.
    private func source(_ start: Int, _ end: Int) -> String {
        let lower = max(0, min(start, characters.count))
        let upper = max(lower, min(end, characters.count))
        return String(characters[lower..<upper])
    }

    private mutating func skipSpaces() {
        while let next = character(at: index), next.isWhitespace { index += 1 }
    }

    /// The end of the run of name characters (`[A-Za-z0-9_]`) from `start`.
    private func wordEnd(from start: Int) -> Int {
        var end = max(0, start)
        while let next = character(at: end), Self.isNameCharacter(next) { end += 1 }
        return end
    }

    /// The run of name characters at `start`, lowercased ("" if none).
    private func word(at start: Int) -> String {
        source(start, wordEnd(from: start)).lowercased()
    }

    /// What is at `position`, for messages: `'and'`, `'>='`, `a quoted string`, `the end of the expression`.
    private func describe(at position: Int) -> String {
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

    private func failure(_ message: String, at position: Int) -> FilterSyntaxError {
        FilterSyntaxError(
            message: message, column: max(0, min(position, characters.count)) + 1, expression: text)
    }

    /// "expected WHAT" at the end, "expected WHAT, found X" elsewhere.
    private func expected(_ what: String, at position: Int) -> FilterSyntaxError {
        guard position < characters.count else { return failure("expected \(what)", at: position) }
        return failure("expected \(what), found \(describe(at: position))", at: position)
    }

    private static func abbreviated(_ text: String) -> String {
        text.count <= 32 ? text : text.prefix(32) + "..."
    }

    private static func isASCIILetter(_ character: Character) -> Bool {
        character.isASCII && character.isLetter
    }

    private static func isASCIIDigit(_ character: Character) -> Bool {
        character.isASCII && character.isNumber
    }

    private static func isNameStart(_ character: Character) -> Bool {
        isASCIILetter(character) || character == "_"
    }

    private static func isNameCharacter(_ character: Character) -> Bool {
        isNameStart(character) || isASCIIDigit(character)
    }

    /// Letters (of any script), ASCII digits and `- : . + _`.
    private static func isBareCharacter(_ character: Character) -> Bool {
        character.isLetter || isASCIIDigit(character) || "-:.+_".contains(character)
    }
}
