import Foundation

/// What the predicate compiler needs to know about model types.
package protocol PredicateSchemaResolver {
    /// The persistent property that a one-step key path names (`\Card.front`, `\Card.deck`,
    /// `\Deck.cards`), or nil when it is not one (a computed or transient property).
    func property(_ keyPath: AnyKeyPath) -> ResolvedProperty?
    /// The store value for a Swift value captured in a predicate (a `String`, `Int`, `Date`,
    /// enum, model object, `PersistentIdentifier`, optional ...), or a DeckError saying why not.
    func value(_ value: Any) throws(DeckError) -> Value
    /// The properties a key path reads, in order (`\Card.deck?.title`: `deck`, then `title`), or
    /// nil when it reads something else; by default the one property ``property(_:)`` finds.
    func path(_ keyPath: AnyKeyPath) -> [ResolvedProperty]?
}

extension PredicateSchemaResolver {
    package func path(_ keyPath: AnyKeyPath) -> [ResolvedProperty]? { property(keyPath).map { [$0] } }
}

/// A persistent property as the predicate compiler sees it.
package struct ResolvedProperty: Sendable, Hashable {
    /// What the property holds.
    package enum Kind: Sendable, Hashable {
        case attribute(StoreSchema.AttributeType)
        case toOne
        case toMany
    }

    /// The property's name in the store schema.
    package var name: String
    package var kind: Kind

    package init(_ name: String, _ kind: Kind) {
        self.name = name
        self.kind = kind
    }
}

/// Compiles Foundation's `Predicate` and `SortDescriptor` to the store's ``QueryExpression`` and
/// ``SortKey``, never to an evaluation in memory: what does not translate is a
/// ``DeckError/invalidQuery(_:)`` naming the expression.
package enum PredicateCompiler {
    /// The condition `predicate` stands for, over the records of `Model`'s entity.
    ///
    /// The supported set (the DocC article "Predicates" has the full table):
    /// - key paths to persistent attributes and relationships, `?.` through to-one relationships,
    ///   `!` (the same path: a nil makes the test as for a null), `??`;
    /// - `==` and `!=` with nil as a value (nil equals nil), `<`, `<=`, `>`, `>=`, `&&`, `||`, `!`;
    /// - `+`, `-`, `*`, `/` on integers (truncating) and floating point, unary minus;
    /// - on text: `contains`, `starts(with:)`, `isEmpty`, `localizedStandardContains` (case and
    ///   diacritics ignored, spec 7.6), `caseInsensitiveCompare(_:) == .orderedSame` (Unicode case);
    /// - on to-many relationships: `contains(where:)`, `allSatisfy`, `count`, `isEmpty`,
    ///   `contains(model)`;
    /// - `c ? a : b`, `[1, 2].contains($0.n)` over a captured array, `(1...5).contains($0.n)`
    ///   and `(1..<5).contains($0.n)`, a to-one relationship `==` a captured model or nil.
    ///
    /// Refused, with an error naming the kind: `%`, `filter`, `max`/`min`, subscripts, regular
    /// expressions, casts and type checks, `count` of a text, a key path to a computed or
    /// transient property, a property of a captured value, `caseInsensitiveCompare` against
    /// `.orderedAscending` or `.orderedDescending`.
    package static func compile<Model>(_ predicate: Predicate<Model>, resolver: some PredicateSchemaResolver)
        throws(DeckError) -> QueryExpression
    {
        var compilation = PredicateCompilation(resolver: resolver)
        compilation.bindings[predicate.variable.key] = .value(.path(.init([])), .record)
        return try compilation.condition(predicate.expression)
    }

    /// The sort keys `descriptors` stand for, in order.
    ///
    /// Each descriptor's key path must name a persistent attribute of `Model`, directly or through
    /// to-one relationships (`\Card.deck?.title`). Texts sort as SwiftData's default `.localizedStandard` comparator is approximated
    /// here: by their case- and diacritic-insensitive folding (spec 7.6), then by their bytes —
    /// deterministic and the same in every locale, where Apple's order follows the user's locale
    /// and compares digit runs as numbers. A descriptor made with `comparator: .lexical` sorts by
    /// the bytes alone. Nulls come first in `.forward` order and last in `.reverse`, as in SwiftData.
    package static func sortKeys<Model>(
        _ descriptors: [SortDescriptor<Model>], resolver: some PredicateSchemaResolver
    ) throws(DeckError) -> [SortKey] {
        var keys: [SortKey] = []
        for descriptor in descriptors {
            guard let keyPath = descriptor.keyPath else {
                throw DeckError.invalidQuery(
                    "SortDescriptor: only a descriptor made from a key path can sort a fetch")
            }
            guard let path = resolver.path(keyPath), let property = path.last,
                path.dropLast().allSatisfy({ $0.kind == .toOne })
            else {
                throw DeckError.invalidQuery(
                    "SortDescriptor: \(ModelMetadata.describeRefused(keyPath)) is not a persistent property of \(Model.self) (sort by a stored "
                        + "attribute, directly or through to-one relationships; a computed or transient one does not "
                        + "translate)")
            }
            let ascending = descriptor.order == .forward
            let names = path.map(\.name)
            switch property.kind {
            case .attribute(let type):
                var folding = QueryExpression.TextComparison.exact
                let comparator = descriptor.stringComparator.map {
                    String.StandardComparator($0, order: .forward)
                }
                if type == .string, comparator != .lexical {
                    folding = .caseAndDiacriticInsensitive
                }
                keys.append(SortKey(.path(.init(names)), ascending: ascending, folding: folding))
            case .toOne, .toMany:
                throw DeckError.invalidQuery(
                    "SortDescriptor: '\(property.name)' is a relationship; sort by an attribute")
            }
        }
        return keys
    }
}

/// What a part of a predicate compiles to.
indirect enum PredicatePart {
    /// What a value is.
    enum Shape {
        /// A record: the root, a quantifier's element, a to-one relationship, a captured model.
        case record
        /// A to-many relationship.
        case toMany
        /// An attribute's value or what arithmetic, `count` and `??` make (type when known).
        case scalar(StoreSchema.AttributeType?)
        /// A captured value or a literal.
        case literal(Value)
    }

    /// A store operand.
    case value(QueryExpression, Shape)
    /// A boolean that is never null.
    case condition(QueryExpression)
    /// `test ? a : b` (also what `?.` makes of a result that is not a path): distributed over the
    /// enclosing test when it becomes a condition.
    case choice(QueryExpression, PredicatePart, PredicatePart)
    /// `a.caseInsensitiveCompare(b)`, which only `== .orderedSame` and `!= .orderedSame` translate.
    case caseInsensitiveComparison(QueryExpression, QueryExpression)
    /// A captured `ComparisonResult`.
    case ordering(ComparisonResult)
    /// A range of values.
    case range(QueryExpression, QueryExpression, closed: Bool)

    var isChoice: Bool {
        if case .choice = self { return true }
        return false
    }

    /// The number of alternatives a choice stands for (1 for anything else).
    var branches: Int {
        guard case .choice(_, let a, let b) = self else { return 1 }
        return a.branches + b.branches
    }
}

/// The state of one compilation: the resolver and what each predicate variable stands for.
struct PredicateCompilation {
    let resolver: any PredicateSchemaResolver
    var bindings: [PredicateExpressions.VariableID: PredicatePart] = [:]
    var quantifiers = 0

    /// The most alternatives that conditionals may make of one test.
    static let maximumBranches = 64

    init(resolver: any PredicateSchemaResolver) { self.resolver = resolver }

    /// The error for an expression kind the store cannot run.
    static func unsupported(_ kind: String, _ reason: String) -> DeckError {
        DeckError.invalidQuery("#Predicate: \(kind) is not supported: \(reason)")
    }

    /// The name of an expression's type without its generic arguments: `IntRemainder`.
    static func kindName(_ expression: Any) -> String {
        let name = String(describing: type(of: expression))
        return String(name.prefix { $0 != "<" })
    }

    /// The part an expression compiles to.
    mutating func part(_ expression: Any) throws(DeckError) -> PredicatePart {
        guard let compilable = expression as? any QueryCompilable else {
            throw Self.unsupported(
                Self.kindName(expression),
                "the store has no translation for it (see Predicates in DeckKit's documentation)")
        }
        return try compilable.compile(&self)
    }

    /// An expression as a condition.
    mutating func condition(_ expression: Any) throws(DeckError) -> QueryExpression {
        try Self.condition(try part(expression), text: Self.kindName(expression))
    }

    /// A part as a condition.
    static func condition(_ part: PredicatePart, text: String) throws(DeckError) -> QueryExpression {
        switch part {
        case .condition(let condition):
            return condition
        case .value(let value, .literal(.bool)):
            return value
        case .value(let value, .scalar(.bool)), .value(let value, .scalar(nil)):
            return .compare(value, .equal, .value(.bool(true)))
        case .choice(let test, let a, let b):
            return QueryExpression.or([
                .and([test, try condition(a, text: text)]), .and([.not(test), try condition(b, text: text)]),
            ]).simplified
        default:
            throw DeckError.invalidQuery("#Predicate: \(text) is not a condition the store can test")
        }
    }

    /// `body` applied to the parts, with every choice among them distributed outside.
    func lift(_ parts: [PredicatePart], _ body: ([PredicatePart]) throws(DeckError) -> PredicatePart)
        throws(DeckError) -> PredicatePart
    {
        // Each choice multiplies the alternatives of what contains it: keep the product small.
        var alternatives = 1
        for part in parts where part.isChoice {
            alternatives *= part.branches
            guard alternatives <= Self.maximumBranches else {
                throw DeckError.invalidQuery(
                    "#Predicate: the conditionals (?: and ?. on values) of one test combine into more than "
                        + "\(Self.maximumBranches) alternatives; split the predicate or test the cases with && and ||"
                )
            }
        }
        guard let index = parts.firstIndex(where: \.isChoice),
            case .choice(let test, let a, let b) = parts[index]
        else { return try body(parts) }
        var whenTrue = parts
        whenTrue[index] = a
        var whenFalse = parts
        whenFalse[index] = b
        return .choice(test, try lift(whenTrue, body), try lift(whenFalse, body))
    }

    /// A part as a store operand.
    static func operand(_ part: PredicatePart, _ kind: String) throws(DeckError) -> (
        QueryExpression, PredicatePart.Shape
    ) {
        switch part {
        case .value(let value, let shape):
            return (value, shape)
        case .condition:
            throw unsupported(
                "a condition used as a value (in \(kind))",
                "compare it with true or false, or test it directly")
        case .caseInsensitiveComparison:
            throw unsupported(
                "caseInsensitiveCompare(_:) as a value (in \(kind))", "compare the result with .orderedSame")
        case .ordering:
            throw unsupported("a ComparisonResult (in \(kind))", "compare caseInsensitiveCompare(_:) with it")
        case .range:
            throw unsupported("a range as a value (in \(kind))", "use range.contains(x)")
        case .choice:
            throw unsupported("a conditional value (in \(kind))", "compare or test it")
        }
    }

    /// Parts that must be operands, with choices distributed.
    mutating func operands(
        _ expressions: [Any], _ kind: String,
        _ body: ([(QueryExpression, PredicatePart.Shape)]) throws(DeckError) -> PredicatePart
    ) throws(DeckError) -> PredicatePart {
        var parts: [PredicatePart] = []
        for expression in expressions { parts.append(try part(expression)) }
        return try lift(parts) { (parts) throws(DeckError) -> PredicatePart in
            var values: [(QueryExpression, PredicatePart.Shape)] = []
            for part in parts { values.append(try Self.operand(part, kind)) }
            return try body(values)
        }
    }

    /// A new name for a quantifier's element.
    mutating func newVariable() -> QueryExpression.Variable {
        quantifiers += 1
        return QueryExpression.Variable("e\(quantifiers)")
    }

    /// `a == b`, nil equal to nil, for booleans that may be conditions too.
    static func equality(_ a: PredicatePart, _ b: PredicatePart, _ kind: String) throws(DeckError)
        -> PredicatePart
    {
        switch (a, b) {
        case (.caseInsensitiveComparison(let x, let y), .ordering(let order)),
            (.ordering(let order), .caseInsensitiveComparison(let x, let y)):
            guard order == .orderedSame else {
                throw unsupported(
                    "caseInsensitiveCompare(_:) compared with .\(order == .orderedAscending ? "orderedAscending" : "orderedDescending")",
                    "only == .orderedSame and != .orderedSame translate")
            }
            return .condition(.text(x, .equals, y, .caseInsensitive))
        case (.value(_, .literal(.null)), .ordering), (.ordering, .value(_, .literal(.null))):
            // `x?.caseInsensitiveCompare(y) == .orderedSame` where x is nil.
            return .condition(.value(.bool(false)))
        case (.ordering(let x), .ordering(let y)):
            return .condition(.value(.bool(x == y)))
        default:
            break
        }
        if case .value(_, .literal(let x)) = a, case .value(_, .literal(let y)) = b {
            return .condition(.value(.bool(x == y)))
        }
        if isLogical(a) || isLogical(b) {
            func sides(_ part: PredicatePart) throws(DeckError) -> (QueryExpression, QueryExpression) {
                switch part {
                case .condition(let c): return (c, .not(c))
                case .value(_, .literal(.null)): return (.value(.bool(false)), .value(.bool(false)))
                case .value(_, .literal(.bool(let x))): return (.value(.bool(x)), .value(.bool(!x)))
                case .value(let v, _):
                    return (
                        .compare(v, .equal, .value(.bool(true))), .compare(v, .equal, .value(.bool(false)))
                    )
                default: throw unsupported(kind, "its operands do not compare")
                }
            }
            let (at, af) = try sides(a)
            let (bt, bf) = try sides(b)
            return .condition(.or([.and([at, bt]), .and([af, bf])]).simplified)
        }
        let (x, xs) = try operand(a, kind)
        let (y, ys) = try operand(b, kind)
        if case .toMany = xs { throw toManyEquality() }
        if case .toMany = ys { throw toManyEquality() }
        return .condition(.compare(x, .equal, y))
    }

    private static func toManyEquality() -> DeckError {
        unsupported(
            "== on a to-many relationship",
            "test isEmpty, count or contains(_:) instead of comparing the array")
    }

    /// Whether a part is a boolean condition (rather than a store value).
    private static func isLogical(_ part: PredicatePart) -> Bool {
        if case .condition = part { return true }
        return false
    }
}

extension QueryExpression {
    /// The expression with `true`/`false` parts of `and` and `or` folded away.
    var simplified: QueryExpression {
        switch self {
        case .and(let parts):
            var kept: [QueryExpression] = []
            for part in parts.map(\.simplified) {
                if case .value(.bool(false)) = part { return part }
                if case .value(.bool(true)) = part { continue }
                kept.append(part)
            }
            return kept.count == 1 ? kept[0] : kept.isEmpty ? .value(.bool(true)) : .and(kept)
        case .or(let parts):
            var kept: [QueryExpression] = []
            for part in parts.map(\.simplified) {
                if case .value(.bool(true)) = part { return part }
                if case .value(.bool(false)) = part { continue }
                kept.append(part)
            }
            return kept.count == 1 ? kept[0] : kept.isEmpty ? .value(.bool(false)) : .or(kept)
        case .not(let inner):
            let simplified = inner.simplified
            if case .value(.bool(let value)) = simplified { return .value(.bool(!value)) }
            if case .not(let double) = simplified { return double }
            return .not(simplified)
        default:
            return self
        }
    }
}

/// An expression type of Foundation's `PredicateExpressions` that the compiler translates.
protocol QueryCompilable {
    func compile(_ compilation: inout PredicateCompilation) throws(DeckError) -> PredicatePart
}
