import Foundation

// How each kind of `PredicateExpressions` translates to the store's expression language. The
// conformances hold for every operand type; the operands are looked up at run time, so an
// unsupported operand is named in the error rather than its enclosing expression.

// MARK: - Variables, key paths, values

extension PredicateExpressions.Variable: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        guard let bound = compilation.bindings[key] else {
            throw DeckError.invalidQuery("#Predicate: a variable is used outside the closure that defines it")
        }
        return bound
    }
}

/// A collection type whose `count` and `isEmpty` a predicate may ask for.
protocol PredicateCountable {
    static var countKeyPath: AnyKeyPath { get }
    static var isEmptyKeyPath: AnyKeyPath { get }
}

extension Array: PredicateCountable {
    static var countKeyPath: AnyKeyPath { \Array.count }
    static var isEmptyKeyPath: AnyKeyPath { \Array.isEmpty }
}

extension Set: PredicateCountable {
    static var countKeyPath: AnyKeyPath { \Set.count }
    static var isEmptyKeyPath: AnyKeyPath { \Set.isEmpty }
}

extension String: PredicateCountable {
    static var countKeyPath: AnyKeyPath { \String.count }
    static var isEmptyKeyPath: AnyKeyPath { \String.isEmpty }
}

extension PredicateExpressions.KeyPath: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        let base = try compilation.part(root)
        let keyPath: AnyKeyPath = self.keyPath
        let resolver = compilation.resolver
        return try compilation.lift([base]) { (parts) throws(DeckError) -> PredicatePart in
            try Self.step(parts[0], keyPath, resolver)
        }
    }

    private static func step(
        _ base: PredicatePart, _ keyPath: AnyKeyPath, _ resolver: any PredicateSchemaResolver
    )
        throws(DeckError) -> PredicatePart
    {
        let countable = Root.Output.self as? any PredicateCountable.Type
        let isCount = countable.map { keyPath == $0.countKeyPath } ?? false
        let isEmpty = countable.map { keyPath == $0.isEmptyKeyPath } ?? false
        switch base {
        case .value(.path(let path), .record):
            guard let property = resolver.property(keyPath) else {
                throw PredicateCompilation.unsupported(
                    ModelMetadata.describeRefused(keyPath),
                    "it is not a persistent property (a computed or transient property has no column)")
            }
            var next = path
            next.names.append(property.name)
            switch property.kind {
            case .attribute(let type): return .value(.path(next), .scalar(type))
            case .toOne: return .value(.path(next), .record)
            case .toMany: return .value(.path(next), .toMany)
            }
        case .value(let collection, .toMany):
            if isCount { return .value(.count(collection), .scalar(.integer)) }
            if isEmpty { return .condition(.isNull(collection)) }
            throw PredicateCompilation.unsupported(
                "\(keyPath) of a to-many relationship",
                "only count, isEmpty, contains and allSatisfy translate")
        case .value(let text, .scalar):
            if isEmpty, Root.Output.self == String.self {
                return .condition(.compare(text, .equal, .value(.string(""))))
            }
            if isCount, Root.Output.self == String.self {
                throw PredicateCompilation.unsupported(
                    "String.count", "the store does not count characters; test isEmpty or compare the text")
            }
            throw PredicateCompilation.unsupported("\(keyPath)", "only a record's properties can be followed")
        case .value(_, .literal), .value(.value, .record):
            throw PredicateCompilation.unsupported(
                "\(keyPath) of a captured value", "compute it before the predicate and capture the result")
        default:
            throw PredicateCompilation.unsupported("\(keyPath)", "only a record's properties can be followed")
        }
    }
}

extension PredicateExpressions.Value: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        if let order = value as? ComparisonResult { return .ordering(order) }
        let stored = try compilation.resolver.value(value)
        if case .reference = stored { return .value(.value(stored), .record) }
        return .value(.value(stored), .literal(stored))
    }
}

extension PredicateExpressions.NilLiteral: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        .value(.null, .literal(.null))
    }
}

/// A captured sequence, whose elements a predicate tests membership in.
protocol CapturedSequence {
    var elements: [Any] { get }
}

extension PredicateExpressions.Value: CapturedSequence where Output: Sequence {
    var elements: [Any] { value.map { $0 } }
}

/// A captured range.
protocol CapturedRange {
    var bounds: (lower: Any, upper: Any, closed: Bool) { get }
}

extension PredicateExpressions.Value: CapturedRange where Output: RangeBounds {
    var bounds: (lower: Any, upper: Any, closed: Bool) { value.rangeBounds }
}

/// `Range` and `ClosedRange`.
protocol RangeBounds {
    var rangeBounds: (lower: Any, upper: Any, closed: Bool) { get }
}

extension Range: RangeBounds {
    var rangeBounds: (lower: Any, upper: Any, closed: Bool) { (lowerBound, upperBound, false) }
}

extension ClosedRange: RangeBounds {
    var rangeBounds: (lower: Any, upper: Any, closed: Bool) { (lowerBound, upperBound, true) }
}

// MARK: - Logic

extension PredicateExpressions.Conjunction: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        .condition(.and([try compilation.condition(lhs), try compilation.condition(rhs)]).flattened)
    }
}

extension PredicateExpressions.Disjunction: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        .condition(.or([try compilation.condition(lhs), try compilation.condition(rhs)]).flattened)
    }
}

extension PredicateExpressions.Negation: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        .condition(.not(try compilation.condition(wrapped)))
    }
}

extension PredicateExpressions.Conditional: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        .choice(
            try compilation.condition(test), try compilation.part(trueBranch),
            try compilation.part(falseBranch))
    }
}

extension QueryExpression {
    /// `and` inside `and` (and `or` inside `or`) as one list.
    fileprivate var flattened: QueryExpression {
        switch self {
        case .and(let parts):
            return .and(
                parts.flatMap { part -> [QueryExpression] in
                    if case .and(let inner) = part { return inner }
                    return [part]
                })
        case .or(let parts):
            return .or(
                parts.flatMap { part -> [QueryExpression] in
                    if case .or(let inner) = part { return inner }
                    return [part]
                })
        default:
            return self
        }
    }
}

// MARK: - Comparisons

extension PredicateExpressions.Equal: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        let parts = [try compilation.part(lhs), try compilation.part(rhs)]
        return try compilation.lift(parts) { (parts) throws(DeckError) -> PredicatePart in
            try PredicateCompilation.equality(parts[0], parts[1], "==")
        }
    }
}

extension PredicateExpressions.NotEqual: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        let parts = [try compilation.part(lhs), try compilation.part(rhs)]
        return try compilation.lift(parts) { (parts) throws(DeckError) -> PredicatePart in
            let equal = try PredicateCompilation.equality(parts[0], parts[1], "!=")
            return .condition(.not(try PredicateCompilation.condition(equal, text: "!=")).simplified)
        }
    }
}

extension PredicateExpressions.Comparison: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        let comparison: QueryExpression.Comparison =
            switch op {
            case .lessThan: .less
            case .lessThanOrEqual: .lessOrEqual
            case .greaterThan: .greater
            case .greaterThanOrEqual: .greaterOrEqual
            }
        return try compilation.operands([lhs, rhs], "Comparison") {
            (values) throws(DeckError) -> PredicatePart in
            .condition(.compare(values[0].0, comparison, values[1].0))
        }
    }
}

// MARK: - Arithmetic

extension PredicateExpressions.Arithmetic: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        let arithmetic: QueryExpression.ArithmeticOperator =
            switch op {
            case .add: .add
            case .subtract: .subtract
            case .multiply: .multiply
            }
        return try compilation.operands([lhs, rhs], "Arithmetic") {
            (values) throws(DeckError) -> PredicatePart in
            .value(.arithmetic(values[0].0, arithmetic, values[1].0), .scalar(nil))
        }
    }
}

extension PredicateExpressions.IntDivision: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        try compilation.operands([lhs, rhs], "IntDivision") { (values) throws(DeckError) -> PredicatePart in
            .value(.arithmetic(values[0].0, .divide, values[1].0), .scalar(.integer))
        }
    }
}

extension PredicateExpressions.FloatDivision: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        try compilation.operands([lhs, rhs], "FloatDivision") { (values) throws(DeckError) -> PredicatePart in
            .value(.arithmetic(values[0].0, .divide, values[1].0), .scalar(.double))
        }
    }
}

extension PredicateExpressions.UnaryMinus: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        try compilation.operands([wrapped], "UnaryMinus") { (values) throws(DeckError) -> PredicatePart in
            .value(.negate(values[0].0), .scalar(nil))
        }
    }
}

extension PredicateExpressions.IntRemainder: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        throw PredicateCompilation.unsupported(
            "IntRemainder (%)",
            "the store's expressions have no remainder; store what you test, or test a range")
    }
}

// MARK: - Optionals

extension PredicateExpressions.OptionalFlatMap: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        let base = try compilation.part(wrapped)
        let previous = compilation.bindings[variable.key]
        compilation.bindings[variable.key] = base
        defer { compilation.bindings[variable.key] = previous }
        let result = try compilation.part(transform)
        guard case .value(let wrappedValue, _) = base else {
            throw PredicateCompilation.unsupported(
                "?. on \(PredicateCompilation.kindName(wrapped))", "use ?. on a property")
        }
        // A path through the wrapped value is null where it is: nothing more to say.
        if case .value(.path(let inner), _) = result, case .path(let outer) = wrappedValue,
            inner.variable == outer.variable, inner.names.starts(with: outer.names)
        {
            return result
        }
        return .choice(.isNull(wrappedValue), .value(.null, .literal(.null)), result)
    }
}

extension PredicateExpressions.NilCoalesce: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        let parts = [try compilation.part(lhs), try compilation.part(rhs)]
        return try compilation.lift(parts) { (parts) throws(DeckError) -> PredicatePart in
            switch (parts[0], parts[1]) {
            case (.value(_, .literal(.null)), let other): return other
            case (.condition, _): return parts[0]
            case (.value(let value, _), .condition(let fallback)):
                return .condition(
                    .or([.compare(value, .equal, .value(.bool(true))), .and([.isNull(value), fallback])]))
            default:
                let (a, shape) = try PredicateCompilation.operand(parts[0], "??")
                let (b, _) = try PredicateCompilation.operand(parts[1], "??")
                if case .scalar(let type) = shape { return .value(.coalesce(a, b), .scalar(type)) }
                return .value(.coalesce(a, b), .scalar(nil))
            }
        }
    }
}

extension PredicateExpressions.ForcedUnwrap: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        try compilation.part(inner)
    }
}

// MARK: - Text

extension PredicateCompilation {
    /// A text test of `text` with `needle`.
    fileprivate mutating func textTest(
        _ text: Any, _ needle: Any, _ kind: String, _ test: QueryExpression.TextOperator,
        _ folding: QueryExpression.TextComparison, isText: Bool = true
    ) throws(DeckError) -> PredicatePart {
        guard isText else {
            throw Self.unsupported("\(kind) of a collection that is not a text", "only texts have text tests")
        }
        return try operands([text, needle], kind) { (values) throws(DeckError) -> PredicatePart in
            .condition(.text(values[0].0, test, values[1].0, folding))
        }
    }
}

extension PredicateExpressions.CollectionContainsCollection: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        try compilation.textTest(
            base, other, "contains(_:)", .contains, .exact, isText: Base.Output.self == String.self)
    }
}

extension PredicateExpressions.SequenceStartsWith: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        try compilation.textTest(
            base, prefix, "starts(with:)", .beginsWith, .exact, isText: Base.Output.self == String.self)
    }
}

extension PredicateExpressions.StringLocalizedStandardContains: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        try compilation.textTest(
            root, other, "localizedStandardContains", .contains, .caseAndDiacriticInsensitive)
    }
}

extension PredicateExpressions.StringCaseInsensitiveCompare: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        try compilation.operands([root, other], "caseInsensitiveCompare") {
            (values) throws(DeckError) -> PredicatePart in
            .caseInsensitiveComparison(values[0].0, values[1].0)
        }
    }
}

// MARK: - Sequences and ranges

extension PredicateExpressions.SequenceContains: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        if let captured = sequence as? any CapturedSequence {
            // `[1, 2].contains($0.n)`: the element is one of the values (nil matches a nil).
            var values: [QueryExpression] = []
            var hasNull = false
            for element in captured.elements {
                let value = try compilation.resolver.value(element)
                if value.isNull { hasNull = true } else { values.append(.value(value)) }
            }
            return try compilation.operands([element], "contains") {
                (subject) throws(DeckError) -> PredicatePart in
                if case .toMany = subject[0].1 {
                    throw PredicateCompilation.unsupported(
                        "contains(_:) of a to-many relationship in an array",
                        "test each record with contains(_:)")
                }
                let member = QueryExpression.oneOf(subject[0].0, values)
                return .condition(hasNull ? .or([member, .isNull(subject[0].0)]) : member)
            }
        }
        return try compilation.operands([sequence, element], "contains") {
            (values) throws(DeckError) -> PredicatePart in
            guard case .toMany = values[0].1 else {
                throw PredicateCompilation.unsupported(
                    "contains(_:) of \(PredicateCompilation.kindName(sequence))",
                    "the sequence must be a to-many relationship or a captured array")
            }
            // Membership: the relationship holds the record.
            return .condition(.compare(values[0].0, .equal, values[1].0))
        }
    }
}

extension PredicateCompilation {
    /// `contains(where:)` or `allSatisfy` over a to-many relationship.
    fileprivate mutating func quantifier(
        _ sequence: Any, _ test: Any, _ key: PredicateExpressions.VariableID, isAny: Bool
    ) throws(DeckError) -> PredicatePart {
        let collection = try part(sequence)
        let name = isAny ? "contains(where:)" : "allSatisfy"
        guard case .value(let relationship, .toMany) = collection else {
            throw Self.unsupported(
                "\(name) over \(Self.kindName(sequence))", "it applies to a to-many relationship")
        }
        let element = newVariable()
        let previous = bindings[key]
        bindings[key] = .value(.variable(element), .record)
        defer { bindings[key] = previous }
        let body = try condition(test)
        return .condition(
            isAny
                ? .any(relationship, element: element, where: body)
                : .all(relationship, element: element, where: body))
    }
}

extension PredicateExpressions.SequenceContainsWhere: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        try compilation.quantifier(sequence, test, variable.key, isAny: true)
    }
}

extension PredicateExpressions.SequenceAllSatisfy: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        try compilation.quantifier(sequence, test, variable.key, isAny: false)
    }
}

extension PredicateExpressions.Range: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        try compilation.operands([lower, upper], "..<") { (values) throws(DeckError) -> PredicatePart in
            .range(values[0].0, values[1].0, closed: false)
        }
    }
}

extension PredicateExpressions.ClosedRange: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        try compilation.operands([lower, upper], "...") { (values) throws(DeckError) -> PredicatePart in
            .range(values[0].0, values[1].0, closed: true)
        }
    }
}

extension PredicateExpressions.RangeExpressionContains: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        var bounds: PredicatePart
        if let captured = range as? any CapturedRange {
            let (lower, upper, closed) = captured.bounds
            bounds = .range(
                .value(try compilation.resolver.value(lower)), .value(try compilation.resolver.value(upper)),
                closed: closed)
        } else {
            bounds = try compilation.part(range)
        }
        guard case .range(let lower, let upper, let closed) = bounds else {
            throw PredicateCompilation.unsupported(
                "contains(_:) of \(PredicateCompilation.kindName(range))",
                "write the range in the predicate or capture it")
        }
        return try compilation.operands([element], "contains") {
            (values) throws(DeckError) -> PredicatePart in
            .condition(
                .and([
                    .compare(lower, .lessOrEqual, values[0].0),
                    .compare(values[0].0, closed ? .lessOrEqual : .less, upper),
                ]))
        }
    }
}

// MARK: - Refused with a reason

extension PredicateExpressions.Filter: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        throw PredicateCompilation.unsupported(
            "Filter (filter)", "test the relationship with contains(where:) or allSatisfy instead")
    }
}

extension PredicateExpressions.StringContainsRegex: QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart {
        throw PredicateCompilation.unsupported(
            "StringContainsRegex (a regular expression)",
            "use contains, starts(with:) or localizedStandardContains")
    }
}
