import DeckStore
import Foundation

// The operands of a `--where` expression (values, properties, arithmetic, functions,
// quantifiers) and the keys that name properties.
extension ExpressionParser {
    // MARK: - Operands

    /// `??` binds loosest of the operand operators (as in Swift, tighter than comparisons), then
    /// `+ -`, then `* /`, then unary `-`. Whether the result is a condition (a group or quantifier
    /// with no operator after it) is returned with it.
    mutating func parseOperand(depth: Int, valuePosition: Bool, after context: String?)
        throws(QuerySyntaxError) -> (QueryExpression, isCondition: Bool)
    {
        try parseBinary(.coalescing, depth: depth, valuePosition: valuePosition, after: context)
    }

    /// The left-associative operator levels, loosest first.
    enum BinaryLevel {
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
    mutating func parseBinary(
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
    mutating func parseOperand(
        of level: BinaryLevel, depth: Int, valuePosition: Bool, after context: String?
    ) throws(QuerySyntaxError) -> (QueryExpression, isCondition: Bool) {
        if let tighter = level.operands {
            return try parseBinary(tighter, depth: depth, valuePosition: valuePosition, after: context)
        }
        return try parseSigned(depth: depth, valuePosition: valuePosition, after: context)
    }

    /// An operand of arithmetic or `??` must be a value, and a bare word on the right side that
    /// looks like a name is most likely a property written without backticks.
    func checkOperand(
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

    mutating func parseSigned(depth: Int, valuePosition: Bool, after context: String?)
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

    mutating func parsePrimary(depth: Int, valuePosition: Bool, after context: String?)
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
    mutating func parseCoalesce(depth: Int, valuePosition: Bool) throws(QuerySyntaxError)
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
    mutating func parsePath(depth: Int, after context: String?) throws(QuerySyntaxError)
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

    static func isCondition(_ expression: QueryExpression) -> Bool {
        switch expression {
        case .compare, .text, .oneOf, .isNull, .and, .or, .not, .any, .all, .value(.bool): true
        default: false
        }
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
}
