import DeckStore
import Foundation

/// The expression language of `deck query --where`, which parses to a ``QueryExpression``, and of
/// `--sort` keys. deck(1), section EXPRESSIONS, is the reference; in short:
///
///     front = hola                             a property and a value (a bare word is text)
///     reps + 1 > `lapses` * 2                  arithmetic; on the right, a property in backticks
///     (ease ?? 2.5) < 2 and not suspended = true
///     deck.title begins-with[c] span           [c] ASCII case, [cd] Unicode case and diacritics,
///                                              [u] Unicode case
///     front contains[cd] "É"  ·  back equals[cd] strasse
///     kind in (verb, noun) · kind not in (verb) · note is null · note is not null
///     tags.any(name = verbs) · cards.all(reps > 3) · cards.count >= 2 · coalesce(a, b, 0) > 1
///
/// Precedence, tightest first: unary `-`; `* /`; `+ -`; `??`; comparisons and tests; `not`; `and`;
/// `or`. Left of an operator a plain name is a property (dots follow to-one relationships); right of
/// one (and in `in` lists) a bare word is a value, as it always was, and a property is written in
/// backticks. Inside `any(…)` and `all(…)` names are properties of the element.
///
/// Expressions are limited to 65,536 bytes and to 100 levels of nesting (parentheses, `not`,
/// operators, quantifiers); a query has further limits (``RecordQuery/Limits``), which a fetch
/// checks. A problem throws a ``QuerySyntaxError`` with its 1-based column:
///
///     syntax error at column 12: expected a value after '>'
///     deck.size >
///                ^
package enum QueryParser {
    /// The longest expression accepted, in UTF-8 bytes.
    package static let maximumLength = 65_536
    /// How deeply parentheses and `not` may nest.
    package static let maximumDepth = 100

    /// Parses a `--where` expression.
    package static func parse(_ text: String) throws(QuerySyntaxError) -> QueryExpression {
        var parser = try ExpressionParser(text)
        return try parser.parseCondition()
    }

    /// Parses a `--sort` key: `created:desc`, `front`, `front:asc`, `deck.title:desc`.
    package static func parseSort(_ text: String) throws(QuerySyntaxError) -> SortKey {
        var parser = try ExpressionParser(text)
        return try parser.parseSortKey()
    }
}

/// A `--where` or `--sort` expression that does not parse.
package struct QuerySyntaxError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What is wrong, without the position: "expected a value after '>'".
    package let message: String
    /// The 1-based column (in characters) of the problem; one past the end when the expression ended early.
    package let column: Int
    /// The expression as given.
    package let expression: String

    package init(message: String, column: Int, expression: String) {
        self.message = message
        self.column = column
        self.expression = expression
    }

    /// "syntax error at column 12: expected a value after '>'".
    package var description: String { "syntax error at column \(column): \(message)" }

    /// Two lines: the expression (tabs and line breaks shown as spaces), then a `^` under the column.
    package var caret: String {
        let line = String(expression.map { $0.isWhitespace ? " " : $0 })
        return line + "\n" + String(repeating: " ", count: max(0, column - 1)) + "^"
    }
}

/// A recursive-descent parser over the expression's characters; recursion is bounded by `maximumDepth`.
struct ExpressionParser {
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

    // MARK: - Expressions

    /// The element variable of each enclosing quantifier body, innermost last.
    var elements: [QueryExpression.Variable] = []
    /// How many parenthesised groups are open around the operand being parsed.
    var openGroups = 0
    /// Whether the last operand parsed was a bare word (not a quoted string).
    var lastPrimaryWasBareWord = false

    /// Conditions on both sides of `and`, `or`, and after `not`.
    func requireCondition(_ expression: QueryExpression, _ what: String, at position: Int)
        throws(QuerySyntaxError)
    {
        guard Self.isCondition(expression) else {
            throw failure(
                "\(what) needs a condition, not a value; compare the value with something", at: position)
        }
    }

    mutating func parseCondition() throws(QuerySyntaxError) -> QueryExpression {
        skipSpaces()
        guard index < characters.count else { throw failure("empty expression", at: 0) }
        let condition = try parseOr(depth: 0, after: nil)
        skipSpaces()
        guard Self.isCondition(condition) else {
            if character(at: index) == ")" {
                throw failure("unbalanced parenthesis: this ')' has no matching '('", at: index)
            }
            throw failure("expected an operator after the value", at: index)
        }
        guard let next = character(at: index) else { return condition }
        if next == ")" {
            throw failure("unbalanced parenthesis: this ')' has no matching '('", at: index)
        }
        throw unexpectedAfterCondition(at: index, insideParentheses: false)
    }

    mutating func parseOr(depth: Int, after context: String?) throws(QuerySyntaxError)
        -> QueryExpression
    {
        var terms = [try parseAnd(depth: depth, after: context)]
        while true {
            skipSpaces()
            guard let found = connective(at: index), found.kind == .or else { break }
            let word = source(index, found.end)
            try requireCondition(terms[terms.count - 1], "'\(word)'", at: index)
            index = found.end
            let term = try parseAnd(depth: depth, after: word)
            try requireCondition(term, "'\(word)'", at: index)
            terms.append(term)
        }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    mutating func parseAnd(depth: Int, after context: String?) throws(QuerySyntaxError)
        -> QueryExpression
    {
        var terms = [try parseUnary(depth: depth, after: context)]
        while true {
            skipSpaces()
            guard let found = connective(at: index), found.kind == .and else { break }
            let word = source(index, found.end)
            try requireCondition(terms[terms.count - 1], "'\(word)'", at: index)
            index = found.end
            let term = try parseUnary(depth: depth, after: word)
            try requireCondition(term, "'\(word)'", at: index)
            terms.append(term)
        }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    mutating func parseUnary(depth: Int, after context: String?) throws(QuerySyntaxError)
        -> QueryExpression
    {
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
            let inner = try parseUnary(depth: depth + 1, after: word)
            try requireCondition(inner, "'\(word)'", at: index)
            return .not(inner)
        }
        if word(at: start) == "true" || word(at: start) == "false" {
            let end = wordEnd(from: start)
            let value = word(at: start) == "true"
            var after = end
            while let next = character(at: after), next.isWhitespace { after += 1 }
            if connective(at: after) != nil || character(at: after) == nil || character(at: after) == ")" {
                index = end
                return .value(.bool(value))
            }
        }
        return try parsePredicate(depth: depth, after: context)
    }

    func checkDepth(_ depth: Int, at position: Int) throws(QuerySyntaxError) {
        guard depth < QueryParser.maximumDepth else {
            throw failure(
                "the expression is nested too deeply (at most \(QueryParser.maximumDepth) levels of "
                    + "parentheses, 'not', operators and quantifiers)", at: position)
        }
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

    // MARK: - Predicates

    /// An operand (`reps + 1`, `deck.title`, `(a = 1 or b = 2)`), then an operator and its right
    /// side, or nothing when the operand is a condition already (a group, a quantifier).
    mutating func parsePredicate(depth: Int, after context: String?) throws(QuerySyntaxError)
        -> QueryExpression
    {
        let operandStart = index
        let (lhs, isCondition) = try parseOperand(depth: depth, valuePosition: false, after: context)
        var operandEnd = index
        while operandEnd > operandStart, let last = character(at: operandEnd - 1), last.isWhitespace {
            operandEnd -= 1
        }
        let lhsText = Self.abbreviated(source(operandStart, operandEnd))
        skipSpaces()
        let start = index
        guard let first = character(at: start) else {
            if isCondition { return lhs }
            throw failure("expected an operator after '\(lhsText)'", at: start)
        }
        if Self.comparisonCharacters.contains(first) && !(first == "!" && character(at: start + 1) != "=") {
            var end = start
            while let next = character(at: end), Self.comparisonCharacters.contains(next) { end += 1 }
            let symbol = source(start, end)
            guard let comparison = Self.comparisons[symbol] else {
                throw failure("unknown operator '\(Self.abbreviated(symbol))'" + Self.operatorHint, at: start)
            }
            index = end
            let rhs = try parseRight(depth: depth, after: symbol)
            return .compare(lhs, comparison, rhs)
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
            let name = source(start, end)
            if isCondition && (connective(at: start) != nil) { return lhs }
            index = end
            return try parseWordOperator(name, at: start, lhs: lhs, lhsText: lhsText, depth: depth)
        }
        if isCondition && (first == ")" || connective(at: start) != nil) { return lhs }
        if first == ")" && openGroups > 0 {
            // A value in parentheses: `(reps + 1) * 2 > 3`.
            return lhs
        }
        let isConnective = (first == "&" || first == "|") && character(at: start + 1) == first
        if isConnective || first == ")" || first.isLetter || first.isNumber || first == "_"
            || Self.nonOperatorCharacters.contains(first)
        {
            throw expected("an operator after '\(lhsText)'", at: start)
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

    /// The right side of a comparison or text test: an operand whose bare words are values.
    mutating func parseRight(depth: Int, after symbol: String) throws(QuerySyntaxError)
        -> QueryExpression
    {
        skipSpaces()
        guard index < characters.count else {
            throw failure("expected a value after '\(Self.abbreviated(symbol))'", at: index)
        }
        let (rhs, isCondition) = try parseOperand(depth: depth, valuePosition: true, after: symbol)
        if isCondition {
            throw failure(
                "expected a value after '\(Self.abbreviated(symbol))', found a condition", at: index)
        }
        return rhs
    }

    mutating func parseWordOperator(
        _ name: String, at start: Int, lhs: QueryExpression, lhsText: String, depth: Int
    ) throws(QuerySyntaxError) -> QueryExpression {
        let lowered = name.lowercased()
        let test: QueryExpression.TextOperator?
        switch lowered {
        case "contains": test = .contains
        case "beginswith", "begins-with": test = .beginsWith
        case "endswith", "ends-with": test = .endsWith
        case "equals": test = .equals
        default: test = nil
        }
        var folding = QueryExpression.TextComparison.exact
        if character(at: index) == "[" {
            var close = index + 1
            while let next = character(at: close), next != "]", close - index < 4 { close += 1 }
            let option = source(index + 1, close).lowercased()
            guard character(at: close) == "]", option == "c" || option == "cd" || option == "u" else {
                throw failure(
                    "unknown option after '\(Self.abbreviated(name))'; '[c]' ignores ASCII case, '[cd]' "
                        + "case and diacritics (Unicode), '[u]' case (Unicode)", at: index)
            }
            guard test != nil else {
                throw failure(
                    "'[\(option)]' applies only to contains, begins-with, ends-with and equals", at: index)
            }
            folding =
                switch option {
                case "c": .asciiCaseInsensitive
                case "u": .caseInsensitive
                default: .caseAndDiacriticInsensitive
                }
            index = close + 1
        }
        if let test {
            let written = source(start, index)
            skipSpaces()
            let valueStart = index
            let rhs = try parseRight(depth: depth, after: written)
            if case .value(let value) = rhs {
                if case .string = value {
                } else {
                    let valueText = Self.abbreviated(source(valueStart, index))
                    let found = value == .null ? "null" : "the \(value.kindName) \(valueText)"
                    throw failure(
                        "'\(written)' needs a string, not \(found); quote it to match the text",
                        at: valueStart)
                }
            }
            return .text(lhs, test, rhs, folding)
        }
        switch lowered {
        case "is":
            return try parseNullTest(lhs, after: name)
        case "in":
            return try parseList(lhs, after: name, depth: depth)
        case "not":
            skipSpaces()
            guard word(at: index) == "in" else { throw expected("'in' after '\(name)'", at: index) }
            let inWord = source(index, wordEnd(from: index))
            index = wordEnd(from: index)
            return .not(try parseList(lhs, after: "\(name) \(inWord)", depth: depth))
        case _ where Self.keywords.contains(lowered):
            throw failure("expected an operator after '\(lhsText)', found '\(name)'", at: start)
        default:
            throw failure("unknown operator '\(Self.abbreviated(name))'" + Self.operatorHint, at: start)
        }
    }

    mutating func parseNullTest(_ lhs: QueryExpression, after isWord: String) throws(QuerySyntaxError)
        -> QueryExpression
    {
        skipSpaces()
        let first = index
        switch word(at: first) {
        case "null":
            index = wordEnd(from: first)
            return .isNull(lhs)
        case "not":
            let notEnd = wordEnd(from: first)
            let notWord = source(first, notEnd)
            index = notEnd
            skipSpaces()
            guard word(at: index) == "null" else {
                throw expected("'null' after '\(isWord) \(notWord)'", at: index)
            }
            index = wordEnd(from: index)
            return .not(.isNull(lhs))
        default:
            throw expected("'null' or 'not null' after '\(isWord)'", at: first)
        }
    }

    mutating func parseList(_ lhs: QueryExpression, after inWord: String, depth: Int)
        throws(QuerySyntaxError) -> QueryExpression
    {
        skipSpaces()
        let open = index
        guard character(at: open) == "(" else { throw expected("'(' after '\(inWord)'", at: open) }
        index += 1
        skipSpaces()
        if character(at: index) == ")" {
            index += 1
            return .oneOf(lhs, [])
        }
        var values: [QueryExpression] = []
        var separator = "("
        while true {
            values.append(try parseRight(depth: depth, after: separator))
            skipSpaces()
            switch character(at: index) {
            case nil:
                throw failure("unbalanced parenthesis: this '(' is never closed", at: open)
            case ",":
                separator = ","
                index += 1
            case ")":
                index += 1
                return .oneOf(lhs, values)
            default:
                throw expected("',' or ')' in the list", at: index)
            }
        }
    }
}
