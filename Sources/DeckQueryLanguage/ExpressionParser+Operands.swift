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
            scanner.skipSpaces()
            guard
                let symbol = level.symbols.first(where: { symbol in
                    symbol.enumerated().allSatisfy {
                        scanner.character(at: scanner.index + $0.offset) == $0.element
                    }
                })
            else { break }
            try checkDepth(height, at: scanner.index)
            try checkOperand(result, isCondition, at: scanner.index, symbol: symbol)
            scanner.index += symbol.count
            let (rhs, rhsCondition) = try parseOperand(
                of: level, depth: height + 1, valuePosition: valuePosition, after: symbol)
            try checkOperand(rhs, rhsCondition, at: scanner.index, symbol: symbol)
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
            throw scanner.failure("'\(symbol)' needs values on both sides, not a condition", at: position)
        }
        if lastPrimaryWasBareWord, case .value(.string(let text)) = operand, let first = text.first,
            ExpressionScanner.isNameStart(first),
            text.allSatisfy(ExpressionScanner.isNameCharacter)
        {
            throw scanner.failure(
                "'\(ExpressionScanner.abbreviated(text))' is text here; on the right of an operator write a property in "
                    + "backticks: `\(ExpressionScanner.abbreviated(text))`", at: position)
        }
    }

    mutating func parseSigned(depth: Int, valuePosition: Bool, after context: String?)
        throws(QuerySyntaxError) -> (QueryExpression, isCondition: Bool)
    {
        scanner.skipSpaces()
        let start = scanner.index
        if scanner.character(at: start) == "-" {
            let next = scanner.character(at: start + 1)
            // -5 is a number; - before a name, a backtick or a parenthesis negates (on the right of
            // an operator, where a bare word may start with '-', only before a backtick or a parenthesis).
            let negates =
                valuePosition
                ? next == "`" || next == "("
                : !(next.map { ExpressionScanner.isASCIIDigit($0) || $0 == "." } ?? false)
            if negates {
                try checkDepth(depth, at: start)
                scanner.index += 1
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
        scanner.skipSpaces()
        lastPrimaryWasBareWord = false
        let start = scanner.index
        guard let first = scanner.character(at: start) else {
            if let context, valuePosition {
                throw scanner.failure(
                    "expected a value after '\(ExpressionScanner.abbreviated(context))'", at: start)
            }
            throw scanner.expected(scanner.condition(after: context), at: start)
        }
        if first == "(" {
            try checkDepth(depth, at: start)
            scanner.index += 1
            openGroups += 1
            let inner = try parseOr(depth: depth + 1, after: "(")
            openGroups -= 1
            try scanner.closeParenthesis(openedAt: start)
            return (inner, Self.isCondition(inner))
        }
        if ExpressionScanner.isNameStart(first) || first == "`" {
            let name = scanner.word(at: start)
            if scanner.wordEnd(from: start) < scanner.characters.count,
                scanner.characters[scanner.wordEnd(from: start)] == "(",
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
            if first == "#" { return (.value(try scanner.parseReference()), false) }
            if first == "\"" || first == "'", let context,
                ["+", "-", "*", "/", "??", "coalesce(", ","].contains(context)
            {
                // A text operand of arithmetic: `due - '2026-12-01' > 86400`.
                return (.value(.string(try scanner.parseQuoted(quote: first))), false)
            }
            if ExpressionScanner.isASCIIDigit(first) || first == "." || first == "-" || first == "+" {
                return (.value(try scanner.parseNumber()), false)
            }
            throw scanner.notAKey(at: start, forSort: false, after: context)
        }
        if first == "#" || first == "\"" || first == "'" || ExpressionScanner.isBareCharacter(first) {
            let value = try scanner.parseValue(after: context ?? "")
            lastPrimaryWasBareWord = first != "\"" && first != "'"
            return (.value(value), false)
        }
        if valuePosition, let context {
            throw scanner.expected("a value after '\(ExpressionScanner.abbreviated(context))'", at: start)
        }
        throw scanner.notAKey(at: start, forSort: false, after: context)
    }

    /// `coalesce(a, b, …)`: the first that is not null.
    mutating func parseCoalesce(depth: Int, valuePosition: Bool) throws(QuerySyntaxError)
        -> QueryExpression
    {
        let start = scanner.index
        try checkDepth(depth, at: start)
        scanner.index = scanner.wordEnd(from: start) + 1
        var parts: [QueryExpression] = []
        while true {
            let (part, isCondition) = try parseOperand(
                depth: depth + 1, valuePosition: valuePosition, after: parts.isEmpty ? "coalesce(" : ",")
            try checkOperand(part, isCondition, at: scanner.index, symbol: "coalesce")
            parts.append(part)
            scanner.skipSpaces()
            switch scanner.character(at: scanner.index) {
            case ",": scanner.index += 1
            case ")":
                scanner.index += 1
                guard parts.count >= 2 else {
                    throw scanner.failure("coalesce needs at least two values", at: start)
                }
                guard parts.count <= QueryParser.maximumDepth - depth else {
                    throw scanner.failure("coalesce has too many values", at: start)
                }
                var result = parts[parts.count - 1]
                for part in parts.dropLast().reversed() { result = .coalesce(part, result) }
                return result
            case nil:
                throw scanner.failure(
                    "unbalanced parenthesis: this '(' is never closed", at: scanner.wordEnd(from: start))
            default: throw scanner.expected("',' or ')' after a value of coalesce", at: scanner.index)
            }
        }
    }

    /// A property path, and a quantifier after it: `tags.any(name = verbs)`, `cards.all(done = true)`.
    mutating func parsePath(depth: Int, after context: String?) throws(QuerySyntaxError)
        -> (QueryExpression, isCondition: Bool)
    {
        let start = scanner.index
        var (names, lastIsPlain) = try scanner.parseKey(forSort: false, after: context)
        if lastIsPlain, names.count >= 2, scanner.character(at: scanner.index) == "(",
            let quantifier = names.last.map({ $0.lowercased() }), quantifier == "any" || quantifier == "all"
        {
            names.removeLast()
            try checkDepth(depth, at: start)
            let open = scanner.index
            scanner.index += 1
            let collection = QueryExpression.path(.init(names, from: elements.last))
            let variable = QueryExpression.Variable("e\(elements.count + 1)")
            elements.append(variable)
            let body = try parseOr(depth: depth + 1, after: "\(quantifier)(")
            elements.removeLast()
            try scanner.closeParenthesis(openedAt: open)
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

}
