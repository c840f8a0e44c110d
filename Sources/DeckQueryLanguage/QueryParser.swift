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
        var scanner = try ExpressionScanner(text)
        return try scanner.parseSortKey()
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
    /// The expression's characters, the position, and its words, keys and values.
    var scanner: ExpressionScanner

    init(_ text: String) throws(QuerySyntaxError) {
        scanner = try ExpressionScanner(text)
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
            throw scanner.failure(
                "\(what) needs a condition, not a value; compare the value with something", at: position)
        }
    }

    mutating func parseCondition() throws(QuerySyntaxError) -> QueryExpression {
        scanner.skipSpaces()
        guard scanner.index < scanner.characters.count else {
            throw scanner.failure("empty expression", at: 0)
        }
        let condition = try parseOr(depth: 0, after: nil)
        scanner.skipSpaces()
        guard Self.isCondition(condition) else {
            if scanner.character(at: scanner.index) == ")" {
                throw scanner.failure(
                    "unbalanced parenthesis: this ')' has no matching '('", at: scanner.index)
            }
            throw scanner.failure("expected an operator after the value", at: scanner.index)
        }
        guard let next = scanner.character(at: scanner.index) else { return condition }
        if next == ")" {
            throw scanner.failure("unbalanced parenthesis: this ')' has no matching '('", at: scanner.index)
        }
        throw scanner.unexpectedAfterCondition(at: scanner.index, insideParentheses: false)
    }

    mutating func parseOr(depth: Int, after context: String?) throws(QuerySyntaxError)
        -> QueryExpression
    {
        var terms = [try parseAnd(depth: depth, after: context)]
        while true {
            scanner.skipSpaces()
            guard let found = scanner.connective(at: scanner.index), found.kind == .or else { break }
            let word = scanner.source(scanner.index, found.end)
            try requireCondition(terms[terms.count - 1], "'\(word)'", at: scanner.index)
            scanner.index = found.end
            let term = try parseAnd(depth: depth, after: word)
            try requireCondition(term, "'\(word)'", at: scanner.index)
            terms.append(term)
        }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    mutating func parseAnd(depth: Int, after context: String?) throws(QuerySyntaxError)
        -> QueryExpression
    {
        var terms = [try parseUnary(depth: depth, after: context)]
        while true {
            scanner.skipSpaces()
            guard let found = scanner.connective(at: scanner.index), found.kind == .and else { break }
            let word = scanner.source(scanner.index, found.end)
            try requireCondition(terms[terms.count - 1], "'\(word)'", at: scanner.index)
            scanner.index = found.end
            let term = try parseUnary(depth: depth, after: word)
            try requireCondition(term, "'\(word)'", at: scanner.index)
            terms.append(term)
        }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    mutating func parseUnary(depth: Int, after context: String?) throws(QuerySyntaxError)
        -> QueryExpression
    {
        scanner.skipSpaces()
        let start = scanner.index
        guard let first = scanner.character(at: start) else {
            throw scanner.expected(scanner.condition(after: context), at: start)
        }
        let isBang = first == "!" && scanner.character(at: start + 1) != "="
        if isBang || scanner.word(at: start) == "not" {
            try checkDepth(depth, at: start)
            let end = isBang ? start + 1 : scanner.wordEnd(from: start)
            let word = scanner.source(start, end)
            scanner.index = end
            let inner = try parseUnary(depth: depth + 1, after: word)
            try requireCondition(inner, "'\(word)'", at: scanner.index)
            return .not(inner)
        }
        if scanner.word(at: start) == "true" || scanner.word(at: start) == "false" {
            let end = scanner.wordEnd(from: start)
            let value = scanner.word(at: start) == "true"
            var after = end
            while let next = scanner.character(at: after), next.isWhitespace { after += 1 }
            if scanner.connective(at: after) != nil || scanner.character(at: after) == nil
                || scanner.character(at: after) == ")"
            {
                scanner.index = end
                return .value(.bool(value))
            }
        }
        return try parsePredicate(depth: depth, after: context)
    }

    func checkDepth(_ depth: Int, at position: Int) throws(QuerySyntaxError) {
        guard depth < QueryParser.maximumDepth else {
            throw scanner.failure(
                "the expression is nested too deeply (at most \(QueryParser.maximumDepth) levels of "
                    + "parentheses, 'not', operators and quantifiers)", at: position)
        }
    }

    // MARK: - Predicates

    /// An operand (`reps + 1`, `deck.title`, `(a = 1 or b = 2)`), then an operator and its right
    /// side, or nothing when the operand is a condition already (a group, a quantifier).
    mutating func parsePredicate(depth: Int, after context: String?) throws(QuerySyntaxError)
        -> QueryExpression
    {
        let operandStart = scanner.index
        let (lhs, isCondition) = try parseOperand(depth: depth, valuePosition: false, after: context)
        var operandEnd = scanner.index
        while operandEnd > operandStart, let last = scanner.character(at: operandEnd - 1), last.isWhitespace {
            operandEnd -= 1
        }
        let lhsText = ExpressionScanner.abbreviated(scanner.source(operandStart, operandEnd))
        scanner.skipSpaces()
        let start = scanner.index
        guard let first = scanner.character(at: start) else {
            if isCondition { return lhs }
            throw scanner.failure("expected an operator after '\(lhsText)'", at: start)
        }
        if ExpressionScanner.comparisonCharacters.contains(first)
            && !(first == "!" && scanner.character(at: start + 1) != "=")
        {
            var end = start
            while let next = scanner.character(at: end), ExpressionScanner.comparisonCharacters.contains(next)
            { end += 1 }
            let symbol = scanner.source(start, end)
            guard let comparison = ExpressionScanner.comparisons[symbol] else {
                throw scanner.failure(
                    "unknown operator '\(ExpressionScanner.abbreviated(symbol))'"
                        + ExpressionScanner.operatorHint, at: start)
            }
            scanner.index = end
            let rhs = try parseRight(depth: depth, after: symbol)
            return .compare(lhs, comparison, rhs)
        }
        if ExpressionScanner.isASCIILetter(first) {
            var end = start
            while let next = scanner.character(at: end) {
                if ExpressionScanner.isNameCharacter(next) {
                    end += 1
                } else if next == "-", let after = scanner.character(at: end + 1),
                    ExpressionScanner.isASCIILetter(after)
                {
                    end += 2
                } else {
                    break
                }
            }
            let name = scanner.source(start, end)
            if isCondition && (scanner.connective(at: start) != nil) { return lhs }
            scanner.index = end
            return try parseWordOperator(name, at: start, lhs: lhs, lhsText: lhsText, depth: depth)
        }
        if isCondition && (first == ")" || scanner.connective(at: start) != nil) { return lhs }
        if first == ")" && openGroups > 0 {
            // A value in parentheses: `(reps + 1) * 2 > 3`.
            return lhs
        }
        let isConnective = (first == "&" || first == "|") && scanner.character(at: start + 1) == first
        if isConnective || first == ")" || first.isLetter || first.isNumber || first == "_"
            || ExpressionScanner.nonOperatorCharacters.contains(first)
        {
            throw scanner.expected("an operator after '\(lhsText)'", at: start)
        }
        var end = start
        while let next = scanner.character(at: end), !next.isWhitespace, !next.isLetter, !next.isNumber,
            !ExpressionScanner.nonOperatorCharacters.contains(next)
        {
            end += 1
        }
        let symbol = ExpressionScanner.abbreviated(scanner.source(start, end))
        throw scanner.failure("unknown operator '\(symbol)'" + ExpressionScanner.operatorHint, at: start)
    }

    /// The right side of a comparison or text test: an operand whose bare words are values.
    mutating func parseRight(depth: Int, after symbol: String) throws(QuerySyntaxError)
        -> QueryExpression
    {
        scanner.skipSpaces()
        guard scanner.index < scanner.characters.count else {
            throw scanner.failure(
                "expected a value after '\(ExpressionScanner.abbreviated(symbol))'", at: scanner.index)
        }
        let (rhs, isCondition) = try parseOperand(depth: depth, valuePosition: true, after: symbol)
        if isCondition {
            throw scanner.failure(
                "expected a value after '\(ExpressionScanner.abbreviated(symbol))', found a condition",
                at: scanner.index)
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
        if scanner.character(at: scanner.index) == "[" {
            var close = scanner.index + 1
            while let next = scanner.character(at: close), next != "]", close - scanner.index < 4 {
                close += 1
            }
            let option = scanner.source(scanner.index + 1, close).lowercased()
            guard scanner.character(at: close) == "]", option == "c" || option == "cd" || option == "u" else {
                throw scanner.failure(
                    "unknown option after '\(ExpressionScanner.abbreviated(name))'; '[c]' ignores ASCII case, '[cd]' "
                        + "case and diacritics (Unicode), '[u]' case (Unicode)", at: scanner.index)
            }
            guard test != nil else {
                throw scanner.failure(
                    "'[\(option)]' applies only to contains, begins-with, ends-with and equals",
                    at: scanner.index)
            }
            folding =
                switch option {
                case "c": .asciiCaseInsensitive
                case "u": .caseInsensitive
                default: .caseAndDiacriticInsensitive
                }
            scanner.index = close + 1
        }
        if let test {
            let written = scanner.source(start, scanner.index)
            scanner.skipSpaces()
            let valueStart = scanner.index
            let rhs = try parseRight(depth: depth, after: written)
            if case .value(let value) = rhs {
                if case .string = value {
                } else {
                    let valueText = ExpressionScanner.abbreviated(scanner.source(valueStart, scanner.index))
                    let found = value == .null ? "null" : "the \(value.kindName) \(valueText)"
                    throw scanner.failure(
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
            scanner.skipSpaces()
            guard scanner.word(at: scanner.index) == "in" else {
                throw scanner.expected("'in' after '\(name)'", at: scanner.index)
            }
            let inWord = scanner.source(scanner.index, scanner.wordEnd(from: scanner.index))
            scanner.index = scanner.wordEnd(from: scanner.index)
            return .not(try parseList(lhs, after: "\(name) \(inWord)", depth: depth))
        case _ where ExpressionScanner.keywords.contains(lowered):
            throw scanner.failure("expected an operator after '\(lhsText)', found '\(name)'", at: start)
        default:
            throw scanner.failure(
                "unknown operator '\(ExpressionScanner.abbreviated(name))'" + ExpressionScanner.operatorHint,
                at: start)
        }
    }

    mutating func parseNullTest(_ lhs: QueryExpression, after isWord: String) throws(QuerySyntaxError)
        -> QueryExpression
    {
        scanner.skipSpaces()
        let first = scanner.index
        switch scanner.word(at: first) {
        case "null":
            scanner.index = scanner.wordEnd(from: first)
            return .isNull(lhs)
        case "not":
            let notEnd = scanner.wordEnd(from: first)
            let notWord = scanner.source(first, notEnd)
            scanner.index = notEnd
            scanner.skipSpaces()
            guard scanner.word(at: scanner.index) == "null" else {
                throw scanner.expected("'null' after '\(isWord) \(notWord)'", at: scanner.index)
            }
            scanner.index = scanner.wordEnd(from: scanner.index)
            return .not(.isNull(lhs))
        default:
            throw scanner.expected("'null' or 'not null' after '\(isWord)'", at: first)
        }
    }

    mutating func parseList(_ lhs: QueryExpression, after inWord: String, depth: Int)
        throws(QuerySyntaxError) -> QueryExpression
    {
        scanner.skipSpaces()
        let open = scanner.index
        guard scanner.character(at: open) == "(" else {
            throw scanner.expected("'(' after '\(inWord)'", at: open)
        }
        scanner.index += 1
        scanner.skipSpaces()
        if scanner.character(at: scanner.index) == ")" {
            scanner.index += 1
            return .oneOf(lhs, [])
        }
        var values: [QueryExpression] = []
        var separator = "("
        while true {
            values.append(try parseRight(depth: depth, after: separator))
            scanner.skipSpaces()
            switch scanner.character(at: scanner.index) {
            case nil:
                throw scanner.failure("unbalanced parenthesis: this '(' is never closed", at: open)
            case ",":
                separator = ","
                scanner.index += 1
            case ")":
                scanner.index += 1
                return .oneOf(lhs, values)
            default:
                throw scanner.expected("',' or ')' in the list", at: scanner.index)
            }
        }
    }
}
