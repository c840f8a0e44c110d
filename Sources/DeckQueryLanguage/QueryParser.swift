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
private struct ExpressionParser {
    private enum Connective {
        case and
        case or
    }

    private static let keywords: Set<String> = [
        "and", "or", "not", "is", "null", "in", "true", "false",
        "contains", "beginswith", "begins-with", "endswith", "ends-with",
    ]
    private static let comparisons: [String: QueryExpression.Comparison] = [
        "=": .equal, "==": .equal, "!=": .notEqual, "<>": .notEqual,
        "<": .less, "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual,
    ]
    private static let comparisonCharacters: Set<Character> = ["=", "!", "<", ">"]
    /// Characters that start something other than an operator, for messages after a key.
    private static let nonOperatorCharacters: Set<Character> = ["(", ")", "\"", "'", "`", ",", "#", "[", "]"]
    private static let operatorHint =
        "; expected =, ==, !=, <>, <, <=, >, >=, is, in, not in, contains, begins-with, ends-with or equals"

    private let text: String
    private let characters: [Character]
    private var index = 0

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
    private var elements: [QueryExpression.Variable] = []
    /// How many parenthesised groups are open around the operand being parsed.
    private var openGroups = 0
    /// Whether the last operand parsed was a bare word (not a quoted string).
    private var lastPrimaryWasBareWord = false

    /// Conditions on both sides of `and`, `or`, and after `not`.
    private func requireCondition(_ expression: QueryExpression, _ what: String, at position: Int)
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

    private mutating func parseOr(depth: Int, after context: String?) throws(QuerySyntaxError)
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

    private mutating func parseAnd(depth: Int, after context: String?) throws(QuerySyntaxError)
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

    private mutating func parseUnary(depth: Int, after context: String?) throws(QuerySyntaxError)
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

    private func checkDepth(_ depth: Int, at position: Int) throws(QuerySyntaxError) {
        guard depth < QueryParser.maximumDepth else {
            throw failure(
                "the expression is nested too deeply (at most \(QueryParser.maximumDepth) levels of "
                    + "parentheses, 'not', operators and quantifiers)", at: position)
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

    private func unexpectedAfterCondition(at position: Int, insideParentheses: Bool) -> QuerySyntaxError {
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

    // MARK: - Predicates

    /// An operand (`reps + 1`, `deck.title`, `(a = 1 or b = 2)`), then an operator and its right
    /// side, or nothing when the operand is a condition already (a group, a quantifier).
    private mutating func parsePredicate(depth: Int, after context: String?) throws(QuerySyntaxError)
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
    private mutating func parseRight(depth: Int, after symbol: String) throws(QuerySyntaxError)
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

    private mutating func parseWordOperator(
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

    private mutating func parseNullTest(_ lhs: QueryExpression, after isWord: String) throws(QuerySyntaxError)
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

    private mutating func parseList(_ lhs: QueryExpression, after inWord: String, depth: Int)
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

    // MARK: - Operands

    /// `??` binds loosest of the operand operators (as in Swift, tighter than comparisons), then
    /// `+ -`, then `* /`, then unary `-`. Whether the result is a condition (a group or quantifier
    /// with no operator after it) is returned with it.
    private mutating func parseOperand(depth: Int, valuePosition: Bool, after context: String?)
        throws(QuerySyntaxError) -> (QueryExpression, isCondition: Bool)
    {
        try parseBinary(.coalescing, depth: depth, valuePosition: valuePosition, after: context)
    }

    /// The left-associative operator levels, loosest first.
    private enum BinaryLevel {
        case coalescing, additive, multiplicative

        /// The tighter level its operands are, or nil for unary `-` and primaries.
        var operands: BinaryLevel? {
            switch self {
            case .coalescing: .additive
            case .additive: .multiplicative
            case .multiplicative: nil
            }
        }

        var symbols: [String] {
            switch self {
            case .coalescing: ["??"]
            case .additive: ["+", "-"]
            case .multiplicative: ["*", "/"]
            }
        }

        func combine(_ lhs: QueryExpression, _ symbol: String, _ rhs: QueryExpression) -> QueryExpression {
            switch symbol {
            case "??": .coalesce(lhs, rhs)
            case "+": lhs + rhs
            case "-": lhs - rhs
            case "*": lhs * rhs
            default: lhs / rhs
            }
        }
    }

    /// Operands of `level` joined by its operators, left to right; each operator nests one level
    /// deeper (the depth limit counts them).
    private mutating func parseBinary(
        _ level: BinaryLevel, depth: Int, valuePosition: Bool, after context: String?
    ) throws(QuerySyntaxError) -> (QueryExpression, isCondition: Bool) {
        var (result, isCondition) = try parseOperand(
            of: level, depth: depth, valuePosition: valuePosition, after: context)
        var height = depth
        while true {
            skipSpaces()
            guard
                let symbol = level.symbols.first(where: { symbol in
                    symbol.enumerated().allSatisfy { character(at: index + $0.offset) == $0.element }
                })
            else { break }
            try checkDepth(height, at: index)
            try checkOperand(result, isCondition, at: index, symbol: symbol)
            index += symbol.count
            let (rhs, rhsCondition) = try parseOperand(
                of: level, depth: height + 1, valuePosition: valuePosition, after: symbol)
            try checkOperand(rhs, rhsCondition, at: index, symbol: symbol)
            result = level.combine(result, symbol, rhs)
            isCondition = false
            height += 1
        }
        return (result, isCondition)
    }

    /// One operand of `level`'s operators: the next tighter level, or a signed primary.
    private mutating func parseOperand(
        of level: BinaryLevel, depth: Int, valuePosition: Bool, after context: String?
    ) throws(QuerySyntaxError) -> (QueryExpression, isCondition: Bool) {
        if let tighter = level.operands {
            return try parseBinary(tighter, depth: depth, valuePosition: valuePosition, after: context)
        }
        return try parseSigned(depth: depth, valuePosition: valuePosition, after: context)
    }

    /// An operand of arithmetic or `??` must be a value, and a bare word on the right side that
    /// looks like a name is most likely a property written without backticks.
    private func checkOperand(
        _ operand: QueryExpression, _ isCondition: Bool, at position: Int, symbol: String
    )
        throws(QuerySyntaxError)
    {
        if isCondition {
            throw failure("'\(symbol)' needs values on both sides, not a condition", at: position)
        }
        if lastPrimaryWasBareWord, case .value(.string(let text)) = operand, let first = text.first,
            Self.isNameStart(first),
            text.allSatisfy(Self.isNameCharacter)
        {
            throw failure(
                "'\(Self.abbreviated(text))' is text here; on the right of an operator write a property in "
                    + "backticks: `\(Self.abbreviated(text))`", at: position)
        }
    }

    private mutating func parseSigned(depth: Int, valuePosition: Bool, after context: String?)
        throws(QuerySyntaxError) -> (QueryExpression, isCondition: Bool)
    {
        skipSpaces()
        let start = index
        if character(at: start) == "-" {
            let next = character(at: start + 1)
            // -5 is a number; - before a name, a backtick or a parenthesis negates (on the right of
            // an operator, where a bare word may start with '-', only before a backtick or a parenthesis).
            let negates =
                valuePosition
                ? next == "`" || next == "("
                : !(next.map { Self.isASCIIDigit($0) || $0 == "." } ?? false)
            if negates {
                try checkDepth(depth, at: start)
                index += 1
                let (inner, isCondition) = try parseSigned(
                    depth: depth + 1, valuePosition: valuePosition, after: "-")
                try checkOperand(inner, isCondition, at: start, symbol: "-")
                return (-inner, false)
            }
        }
        return try parsePrimary(depth: depth, valuePosition: valuePosition, after: context)
    }

    private mutating func parsePrimary(depth: Int, valuePosition: Bool, after context: String?)
        throws(QuerySyntaxError) -> (QueryExpression, isCondition: Bool)
    {
        skipSpaces()
        lastPrimaryWasBareWord = false
        let start = index
        guard let first = character(at: start) else {
            if let context, valuePosition {
                throw failure("expected a value after '\(Self.abbreviated(context))'", at: start)
            }
            throw expected(condition(after: context), at: start)
        }
        if first == "(" {
            try checkDepth(depth, at: start)
            index += 1
            openGroups += 1
            let inner = try parseOr(depth: depth + 1, after: "(")
            openGroups -= 1
            skipSpaces()
            guard let close = character(at: index) else {
                throw failure("unbalanced parenthesis: this '(' is never closed", at: start)
            }
            guard close == ")" else { throw unexpectedAfterCondition(at: index, insideParentheses: true) }
            index += 1
            return (inner, Self.isCondition(inner))
        }
        if Self.isNameStart(first) || first == "`" {
            let name = word(at: start)
            if wordEnd(from: start) < characters.count, characters[wordEnd(from: start)] == "(",
                name == "coalesce"
            {
                return (try parseCoalesce(depth: depth, valuePosition: valuePosition), false)
            }
            if !valuePosition || first == "`" {
                return try parsePath(depth: depth, after: context)
            }
        }
        if !valuePosition {
            // On the left, numbers and record ids are values; a bare word is no key.
            if first == "#" { return (.value(try parseReference()), false) }
            if first == "\"" || first == "'", let context,
                ["+", "-", "*", "/", "??", "coalesce(", ","].contains(context)
            {
                // A text operand of arithmetic: `due - '2026-12-01' > 86400`.
                return (.value(.string(try parseQuoted(quote: first))), false)
            }
            if Self.isASCIIDigit(first) || first == "." || first == "-" || first == "+" {
                return (.value(try parseNumber()), false)
            }
            throw notAKey(at: start, forSort: false, after: context)
        }
        if first == "#" || first == "\"" || first == "'" || Self.isBareCharacter(first) {
            let value = try parseValue(after: context ?? "")
            lastPrimaryWasBareWord = first != "\"" && first != "'"
            return (.value(value), false)
        }
        if valuePosition, let context {
            throw expected("a value after '\(Self.abbreviated(context))'", at: start)
        }
        throw notAKey(at: start, forSort: false, after: context)
    }

    /// `coalesce(a, b, …)`: the first that is not null.
    private mutating func parseCoalesce(depth: Int, valuePosition: Bool) throws(QuerySyntaxError)
        -> QueryExpression
    {
        let start = index
        try checkDepth(depth, at: start)
        index = wordEnd(from: start) + 1
        var parts: [QueryExpression] = []
        while true {
            let (part, isCondition) = try parseOperand(
                depth: depth + 1, valuePosition: valuePosition, after: parts.isEmpty ? "coalesce(" : ",")
            try checkOperand(part, isCondition, at: index, symbol: "coalesce")
            parts.append(part)
            skipSpaces()
            switch character(at: index) {
            case ",": index += 1
            case ")":
                index += 1
                guard parts.count >= 2 else {
                    throw failure("coalesce needs at least two values", at: start)
                }
                guard parts.count <= QueryParser.maximumDepth - depth else {
                    throw failure("coalesce has too many values", at: start)
                }
                var result = parts[parts.count - 1]
                for part in parts.dropLast().reversed() { result = .coalesce(part, result) }
                return result
            case nil:
                throw failure("unbalanced parenthesis: this '(' is never closed", at: wordEnd(from: start))
            default: throw expected("',' or ')' after a value of coalesce", at: index)
            }
        }
    }

    /// A property path, and a quantifier after it: `tags.any(name = verbs)`, `cards.all(done = true)`.
    private mutating func parsePath(depth: Int, after context: String?) throws(QuerySyntaxError)
        -> (QueryExpression, isCondition: Bool)
    {
        let start = index
        var (names, lastIsPlain) = try parseKey(forSort: false, after: context)
        if lastIsPlain, names.count >= 2, character(at: index) == "(",
            let quantifier = names.last.map({ $0.lowercased() }), quantifier == "any" || quantifier == "all"
        {
            names.removeLast()
            try checkDepth(depth, at: start)
            let open = index
            index += 1
            let collection = QueryExpression.path(.init(names, from: elements.last))
            let variable = QueryExpression.Variable("e\(elements.count + 1)")
            elements.append(variable)
            let body = try parseOr(depth: depth + 1, after: "\(quantifier)(")
            elements.removeLast()
            skipSpaces()
            guard let close = character(at: index) else {
                throw failure("unbalanced parenthesis: this '(' is never closed", at: open)
            }
            guard close == ")" else { throw unexpectedAfterCondition(at: index, insideParentheses: true) }
            index += 1
            let result: QueryExpression =
                quantifier == "any"
                ? .any(collection, element: variable, where: body)
                : .all(collection, element: variable, where: body)
            return (result, true)
        }
        return (.path(.init(names, from: elements.last)), false)
    }

    private static func isCondition(_ expression: QueryExpression) -> Bool {
        switch expression {
        case .compare, .text, .oneOf, .isNull, .and, .or, .not, .any, .all, .value(.bool): true
        default: false
        }
    }

    // MARK: - Keys

    /// A key: names (plain or in backticks) joined by dots, and whether the last was plain. In a
    /// condition, a plain name may not be a keyword.
    private mutating func parseKey(forSort: Bool, after context: String?) throws(QuerySyntaxError)
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

    private func notAKey(at position: Int, forSort: Bool, after context: String?) -> QuerySyntaxError {
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

    private mutating func parseValue(after context: String) throws(QuerySyntaxError) -> Value {
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

    private mutating func parseQuoted(quote: Character) throws(QuerySyntaxError) -> String {
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

    private mutating func parseReference() throws(QuerySyntaxError) -> Value {
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
    private mutating func parseNumber() throws(QuerySyntaxError) -> Value {
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

    private mutating func parseBareWord(after context: String) throws(QuerySyntaxError) -> Value {
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

    private func failure(_ message: String, at position: Int) -> QuerySyntaxError {
        QuerySyntaxError(
            message: message, column: max(0, min(position, characters.count)) + 1, expression: text)
    }

    /// "expected WHAT" at the end, "expected WHAT, found X" elsewhere.
    private func expected(_ what: String, at position: Int) -> QuerySyntaxError {
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
