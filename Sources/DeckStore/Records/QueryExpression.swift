import Foundation

/// An expression over records: the one language that `deck query --where` and the model layer's
/// predicates compile to, and that the store compiles to parameterised SQL.
///
/// A query's condition is a `QueryExpression` whose value is a boolean; its operands are property
/// paths (an attribute, a to-one or to-many relationship, the record id), values, and what
/// arithmetic, text tests, nil-coalescing and the to-many quantifiers make of them.
/// The store checks the expression against the schema when it compiles it: a part that cannot be
/// compiled is a ``DeckError`` naming the part, never an evaluation in memory.
///
/// ```swift
/// let recent: QueryExpression =
///     .property("front").contains("hola", .caseAndDiacriticInsensitive)
///         && .property("reviewCount") + 1 > 3
///         && .property("tags").any { tag in tag.property("name").equals("verbs") }
/// let cards = try document.fetch(RecordQuery("Card", where: recent, sort: [SortKey("front")]))
/// ```
///
/// **Types.** Each operand has the type of what it names: an attribute's type, a record (a to-one
/// relationship, the record id `_id`, a quantifier's element), or a to-many relationship. A value
/// takes the type of what it meets — `"2026-11-30"` compared with a date attribute is that date,
/// `3` compared with a double is `3.0` — by the rules of ``Value`` conversion (spec 7.3); alone it
/// keeps its own. Decimals compare and compute as numbers (with a double's precision), dates as
/// seconds since 1970, booleans as 0 and 1, text by its UTF-8 bytes.
///
/// **Nulls.** `equals` and `notEquals` treat null as a value (null equals null, as Swift's optionals
/// do); any other test on a null operand is false, and arithmetic with null is null. Logic is
/// two-valued: a test that is false for a null is true under `not`.
///
/// **Arithmetic.** Integers (integer attributes, record ids, integer values) give integers:
/// division truncates toward zero; a result beyond
/// 64 bits becomes the nearest double (SQLite's rule, where Swift would trap). With a double or a
/// decimal the result is a double. A date plus or minus a number of seconds is a date, and a date
/// minus a date is the seconds between them. Division by zero is null.
public indirect enum QueryExpression: Sendable, Hashable {
    /// Comparison operators.
    public enum Comparison: String, Sendable, Hashable, CaseIterable {
        case equal = "="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
    }

    /// Arithmetic operators.
    public enum ArithmeticOperator: String, Sendable, Hashable, CaseIterable {
        case add = "+"
        case subtract = "-"
        case multiply = "*"
        case divide = "/"
    }

    /// Text tests.
    public enum TextOperator: String, Sendable, Hashable, CaseIterable {
        /// The two texts are equal (under the comparison's folding).
        case equals
        case contains
        case beginsWith
        case endsWith
    }

    /// How text tests compare characters.
    public enum TextComparison: String, Sendable, Hashable, CaseIterable {
        /// The texts as stored, byte for byte (`--where`'s plain operators).
        case exact
        /// ASCII letters match their other case; nothing else is folded (`--where`'s `[c]`).
        case asciiCaseInsensitive
        /// Unicode-aware: case and diacritics are ignored (`--where`'s `[cd]`), by the folding rule
        /// of the format specification (section 7.6, "Text folding in queries"): canonical decomposition, each
        /// character's full uppercase then lowercase mapping, the combining diacritical marks
        /// removed, canonical composition. `É` matches `e`, `ß` matches `ss`, and the Turkish `ı`
        /// and `İ` match `i`. It is deterministic and independent of any locale.
        case caseAndDiacriticInsensitive
        /// Unicode-aware case only (`--where`'s `[u]`): the folding of
        /// ``caseAndDiacriticInsensitive`` without removing the diacritical marks, so `É` matches
        /// `é` and `ß` matches `SS`, but `é` does not match `e`.
        case caseInsensitive
    }

    /// A name for the element a quantifier (``any(_:element:where:)``, ``all(_:element:where:)``)
    /// ranges over, so that the condition inside can name it beside the record being queried.
    public struct Variable: Sendable, Hashable, CustomStringConvertible {
        /// The variable's name; `deck query` writes it `$name`.
        public let name: String

        /// A variable named `name`.
        public init(_ name: String) { self.name = name }

        /// `$name`.
        public var description: String { "$" + name }
    }

    /// A path from a record through to-one relationships: `deck.title` is the title of a card's deck.
    public struct PropertyPath: Sendable, Hashable, CustomStringConvertible {
        /// Where the path starts: nil for the record being queried, or a quantifier's element.
        public var variable: Variable?
        /// Property names, each but the last a to-one relationship. The last one may also be a
        /// to-many relationship, `_id` (the record id), or, after a to-many relationship, `count`.
        /// No names is the record itself (as a record id).
        public var names: [String]

        /// A path through `names`, from the record being queried or from `variable`.
        public init(_ names: [String], from variable: Variable? = nil) {
            self.variable = variable
            self.names = names
        }

        /// `deck.title`, `$t.name`.
        public var description: String {
            let prefix = variable.map { names.isEmpty ? $0.description : $0.description + "." } ?? ""
            return prefix + names.joined(separator: ".")
        }
    }

    /// A value; `.value(.null)` is null.
    case value(Value)
    /// An attribute, a relationship or the record id (``PropertyPath``).
    case path(PropertyPath)
    /// Compares two operands of the same kind: numbers with numbers, texts, dates, booleans,
    /// records (by id); a to-many relationship compares with a record by membership (`equal`: it
    /// holds the record). Ordering a null is false.
    case compare(QueryExpression, Comparison, QueryExpression)
    /// A text test; false when either text is null. An empty needle is contained in every text.
    case text(QueryExpression, TextOperator, QueryExpression, TextComparison)
    /// The operand equals one of the values (null matches nothing); a to-many relationship holds
    /// one of the records. An empty list matches nothing.
    case oneOf(QueryExpression, [QueryExpression])
    /// The operand is null; a to-many relationship holds no records.
    case isNull(QueryExpression)
    /// Every part holds (an empty list always holds).
    case and([QueryExpression])
    /// Some part holds (an empty list never holds).
    case or([QueryExpression])
    case not(QueryExpression)
    /// Arithmetic on numbers and dates (see the type's notes for integer and double results).
    case arithmetic(QueryExpression, ArithmeticOperator, QueryExpression)
    /// Minus the operand.
    case negate(QueryExpression)
    /// The first operand unless it is null, then the second (Swift's `??`).
    case coalesce(QueryExpression, QueryExpression)
    /// The number of records a to-many relationship holds.
    case count(QueryExpression)
    /// Some record of the to-many relationship satisfies the condition, in which `element` names
    /// it (false when it holds none).
    case any(QueryExpression, element: Variable, where: QueryExpression)
    /// Every record of the to-many relationship satisfies the condition (true when it holds none).
    case all(QueryExpression, element: Variable, where: QueryExpression)
}

// MARK: - Building expressions

extension QueryExpression {
    /// A property of the record being queried; dots follow to-one relationships (`"deck.title"`),
    /// `"_id"` is the record id.
    public static func property(_ path: String) -> QueryExpression {
        .path(PropertyPath(path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)))
    }

    /// The record id (`_id`).
    public static var recordID: QueryExpression { .property("_id") }

    /// The record a variable names (as a record id); `.variable(v).property("name")` is its property.
    public static func variable(_ variable: Variable) -> QueryExpression {
        .path(PropertyPath([], from: variable))
    }

    /// Null.
    public static var null: QueryExpression { .value(.null) }

    /// The path one property further: `.property("deck").property("title")`. On anything but a
    /// path the result is a path the compiler refuses.
    public func property(_ name: String) -> QueryExpression {
        guard case .path(var path) = self else {
            return .path(PropertyPath(["(\(self)).\(name)"]))
        }
        path.names += name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        return .path(path)
    }

    // Comparisons

    /// Equal, null equal to null.
    public func equals(_ other: QueryExpression) -> QueryExpression { .compare(self, .equal, other) }

    /// Not equal; null differs from every value but null.
    public func notEquals(_ other: QueryExpression) -> QueryExpression { .compare(self, .notEqual, other) }

    /// Less than (false when either side is null).
    public static func < (lhs: QueryExpression, rhs: QueryExpression) -> QueryExpression {
        .compare(lhs, .less, rhs)
    }

    /// Less than or equal (false when either side is null).
    public static func <= (lhs: QueryExpression, rhs: QueryExpression) -> QueryExpression {
        .compare(lhs, .lessOrEqual, rhs)
    }

    /// Greater than (false when either side is null).
    public static func > (lhs: QueryExpression, rhs: QueryExpression) -> QueryExpression {
        .compare(lhs, .greater, rhs)
    }

    /// Greater than or equal (false when either side is null).
    public static func >= (lhs: QueryExpression, rhs: QueryExpression) -> QueryExpression {
        .compare(lhs, .greaterOrEqual, rhs)
    }

    /// Equals one of the values.
    public func isIn(_ values: [QueryExpression]) -> QueryExpression { .oneOf(self, values) }

    /// The operand is null (a to-many relationship: holds no records).
    public var isNull: QueryExpression { .isNull(self) }
    /// The operand is not null (a to-many relationship: holds some record).
    public var isNotNull: QueryExpression { .not(.isNull(self)) }

    // Text

    /// The text contains `text` under `comparison`.
    public func contains(_ text: QueryExpression, _ comparison: TextComparison = .exact) -> QueryExpression {
        .text(self, .contains, text, comparison)
    }

    /// The text begins with `text` under `comparison`.
    public func beginsWith(_ text: QueryExpression, _ comparison: TextComparison = .exact) -> QueryExpression
    {
        .text(self, .beginsWith, text, comparison)
    }

    /// The text ends with `text` under `comparison`.
    public func endsWith(_ text: QueryExpression, _ comparison: TextComparison = .exact) -> QueryExpression {
        .text(self, .endsWith, text, comparison)
    }

    /// Text equality under a folding (false for null, unlike ``equals(_:)``).
    public func equals(_ text: QueryExpression, _ comparison: TextComparison) -> QueryExpression {
        .text(self, .equals, text, comparison)
    }

    // Logic

    /// Both hold.
    public static func && (lhs: QueryExpression, rhs: QueryExpression) -> QueryExpression {
        if case .and(let parts) = lhs { return .and(parts + [rhs]) }
        return .and([lhs, rhs])
    }

    /// Either holds.
    public static func || (lhs: QueryExpression, rhs: QueryExpression) -> QueryExpression {
        if case .or(let parts) = lhs { return .or(parts + [rhs]) }
        return .or([lhs, rhs])
    }

    /// The condition does not hold (two-valued: true where it is false for a null).
    public static prefix func ! (operand: QueryExpression) -> QueryExpression { .not(operand) }

    // Arithmetic

    /// Sum (SQLite arithmetic; see the type's notes).
    public static func + (lhs: QueryExpression, rhs: QueryExpression) -> QueryExpression {
        .arithmetic(lhs, .add, rhs)
    }

    /// Difference (SQLite arithmetic; see the type's notes).
    public static func - (lhs: QueryExpression, rhs: QueryExpression) -> QueryExpression {
        .arithmetic(lhs, .subtract, rhs)
    }

    /// Product (SQLite arithmetic; see the type's notes).
    public static func * (lhs: QueryExpression, rhs: QueryExpression) -> QueryExpression {
        .arithmetic(lhs, .multiply, rhs)
    }

    /// Quotient: integers truncate toward zero; by zero, null.
    public static func / (lhs: QueryExpression, rhs: QueryExpression) -> QueryExpression {
        .arithmetic(lhs, .divide, rhs)
    }

    /// Minus the operand.
    public static prefix func - (operand: QueryExpression) -> QueryExpression { .negate(operand) }

    /// `lhs` unless it is null, then `rhs`.
    public static func ?? (lhs: QueryExpression, rhs: QueryExpression) -> QueryExpression {
        .coalesce(lhs, rhs)
    }

    // To-many relationships

    /// The number of records a to-many relationship holds.
    public var count: QueryExpression { .count(self) }

    /// Some record of this to-many relationship satisfies `condition`, which is given the record
    /// (as an expression to take properties of) and may also name the record being queried:
    /// `.property("tags").any { $0.property("name").equals(.property("front")) }`.
    public func any(_ condition: (QueryExpression) -> QueryExpression) -> QueryExpression {
        let (variable, body) = Self.bind(condition)
        return .any(self, element: variable, where: body)
    }

    /// Every record of this to-many relationship satisfies `condition` (see ``any(_:)``).
    public func all(_ condition: (QueryExpression) -> QueryExpression) -> QueryExpression {
        let (variable, body) = Self.bind(condition)
        return .all(self, element: variable, where: body)
    }

    /// Names the element of a quantifier built from a closure. The name is the number of
    /// quantifiers nested in the condition, plus one, so that the same closure always builds the
    /// same expression and nested quantifiers never share a name. (`deck query` names the variables
    /// of `any tags (…)` the same way; names of its own are letters.)
    private static func bind(_ condition: (QueryExpression) -> QueryExpression) -> (Variable, QueryExpression)
    {
        let placeholder = Variable("\u{0}")
        let body = condition(.variable(placeholder))
        let variable = Variable(String(body.quantifierHeight + 1))
        return (variable, body.renaming(placeholder, to: variable))
    }

    /// How many quantifiers with numbered variables nest in the expression, at most.
    var quantifierHeight: Int {
        var height = 0
        visit { expression in
            if case .any(_, let variable, _) = expression, let number = Int(variable.name) {
                height = max(height, number)
            } else if case .all(_, let variable, _) = expression, let number = Int(variable.name) {
                height = max(height, number)
            }
        }
        return height
    }

    /// The expression with every path from `old` starting from `new` instead.
    func renaming(_ old: Variable, to new: Variable) -> QueryExpression {
        map { expression in
            guard case .path(var path) = expression, path.variable == old else { return nil }
            path.variable = new
            return .path(path)
        }
    }

    /// The operands, in order.
    var children: [QueryExpression] {
        switch self {
        case .value, .path: []
        case .compare(let a, _, let b), .text(let a, _, let b, _), .arithmetic(let a, _, let b),
            .coalesce(let a, let b), .any(let a, _, let b), .all(let a, _, let b):
            [a, b]
        case .oneOf(let a, let list): [a] + list
        case .isNull(let a), .not(let a), .negate(let a), .count(let a): [a]
        case .and(let parts), .or(let parts): parts
        }
    }

    /// Calls `body` for the expression and everything in it, depth first.
    func visit(_ body: (QueryExpression) -> Void) {
        var stack = [self]
        while let next = stack.popLast() {
            body(next)
            stack += next.children.reversed()
        }
    }

    /// The expression with each part that `transform` replaces replaced (parts it returns nil for
    /// are kept, with their own parts transformed).
    func map(_ transform: (QueryExpression) -> QueryExpression?) -> QueryExpression {
        if let replaced = transform(self) { return replaced }
        func go(_ e: QueryExpression) -> QueryExpression { e.map(transform) }
        switch self {
        case .value, .path: return self
        case .compare(let a, let op, let b): return .compare(go(a), op, go(b))
        case .text(let a, let op, let b, let c): return .text(go(a), op, go(b), c)
        case .oneOf(let a, let list): return .oneOf(go(a), list.map(go))
        case .isNull(let a): return .isNull(go(a))
        case .and(let parts): return .and(parts.map(go))
        case .or(let parts): return .or(parts.map(go))
        case .not(let a): return .not(go(a))
        case .arithmetic(let a, let op, let b): return .arithmetic(go(a), op, go(b))
        case .negate(let a): return .negate(go(a))
        case .coalesce(let a, let b): return .coalesce(go(a), go(b))
        case .count(let a): return .count(go(a))
        case .any(let a, let v, let b): return .any(go(a), element: v, where: go(b))
        case .all(let a, let v, let b): return .all(go(a), element: v, where: go(b))
        }
    }
}

extension QueryExpression: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral
{
    /// A string value (not a property: write `.property("front")` for that).
    public init(stringLiteral value: String) { self = .value(.string(value)) }
    /// An integer value.
    public init(integerLiteral value: Int64) { self = .value(.integer(value)) }
    /// A double value.
    public init(floatLiteral value: Double) { self = .value(.double(value)) }
    /// A boolean value; as a condition, always or never.
    public init(booleanLiteral value: Bool) { self = .value(.bool(value)) }
}

extension QueryExpression: CustomStringConvertible {
    /// The expression in `deck query --where` syntax, for messages; parts nested more than eight
    /// levels deep are shown as `…`.
    public var description: String { render(depth: 0) }

    private func render(depth: Int) -> String {
        guard depth < 8 else { return "…" }
        func r(_ e: QueryExpression) -> String {
            let text = e.render(depth: depth + 1)
            switch e {
            case .value, .path, .count, .any, .all: return text
            default: return "(" + text + ")"
            }
        }
        switch self {
        case .value(let value):
            switch value {
            case .string(let text): return "\"" + text.replacingOccurrences(of: "\"", with: "\\\"") + "\""
            case .reference(let id): return "#\(id)"
            default: return value.description
            }
        case .path(let path): return path.description
        case .compare(let a, let op, let b): return r(a) + " " + op.rawValue + " " + r(b)
        case .text(let a, let op, let b, let folding):
            let suffix =
                switch folding {
                case .exact: ""
                case .asciiCaseInsensitive: "[c]"
                case .caseAndDiacriticInsensitive: "[cd]"
                case .caseInsensitive: "[u]"
                }
            return r(a) + " " + op.rawValue + suffix + " " + r(b)
        case .oneOf(let a, let list):
            let shown = list.prefix(8).map { $0.render(depth: depth + 1) } + (list.count > 8 ? ["…"] : [])
            return r(a) + " in (" + shown.joined(separator: ", ") + ")"
        case .isNull(let a): return r(a) + " is null"
        case .and(let parts): return parts.map(r).joined(separator: " and ")
        case .or(let parts): return parts.map(r).joined(separator: " or ")
        case .not(let a): return "not " + r(a)
        case .arithmetic(let a, let op, let b): return r(a) + " " + op.rawValue + " " + r(b)
        case .negate(let a): return "-" + r(a)
        case .coalesce(let a, let b): return r(a) + " ?? " + r(b)
        case .count(let a): return r(a) + ".count"
        case .any(let a, let v, let body): return r(a) + ".any(\(v) in " + body.render(depth: depth + 1) + ")"
        case .all(let a, let v, let body): return r(a) + ".all(\(v) in " + body.render(depth: depth + 1) + ")"
        }
    }
}
