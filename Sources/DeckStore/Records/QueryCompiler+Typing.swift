import DeckSQLite
import Foundation

/// The types of a query's operands (``QueryExpression``) and the conversions between them.
///
/// Every operand compiles to SQL with the values of its `?` parameters in the order they appear,
/// and a type: an attribute type, a record (an id), a to-many relationship (usable only by
/// `count`, `any`, `all`, null tests and membership), null, or a value whose type is decided by
/// what it meets. Names are validated identifiers and every value is a parameter: nothing a user
/// writes is spliced into the SQL.
extension QueryCompiler {
    /// What an operand is.
    enum Kind {
        /// A value of an attribute type (arithmetic gives `.integer` or `.double`, `count` `.integer`).
        case typed(StoreSchema.AttributeType)
        /// A record id: a to-one relationship, `_id`, a quantifier's element.
        case record
        /// A to-many relationship of the record aliased `owner`.
        case toMany(Relationship, storage: RelationshipStorage, destination: EntityMapping, owner: Scope)
        /// A value not yet typed: it takes the type of what it meets.
        case literal(Value)
        /// Null.
        case null
    }

    /// A compiled operand.
    struct Operand {
        var sql: String
        var arguments: [SQLValue]
        var kind: Kind
        var joins: Set<Int>
        /// How the operand was written, for messages.
        var text: String
        /// Whether it is an attribute (whose type a value is converted to exactly).
        var isAttribute = false
    }

    /// A compiled condition (before its cost is estimated).
    struct Compiled {
        var sql: String
        var arguments: [SQLValue]
        var joins: Set<Int>
    }

    /// The attribute types that compare with one another: numbers, texts, and each other type alone.
    static func family(_ type: StoreSchema.AttributeType) -> Int {
        switch type {
        case .integer, .double, .decimal: 0
        case .string, .url, .uuid, .json: 1
        case .bool: 2
        case .date: 3
        case .data: 4
        }
    }

    static func isNumeric(_ type: StoreSchema.AttributeType) -> Bool { family(type) == 0 }

    static func isText(_ type: StoreSchema.AttributeType) -> Bool { family(type) == 1 }

    static func describe(_ kind: Kind) -> String {
        switch kind {
        case .typed(let type): "\(type.article) \(type.rawValue)"
        case .record: "a record"
        case .toMany: "a to-many relationship"
        case .literal(let value): "\(value.kindName == "integer" ? "an" : "a") \(value.kindName) value"
        case .null: "null"
        }
    }

    /// Gives operands their types: a literal takes the type of what it meets (spec 7.3's
    /// conversions) and becomes a parameter; two operands compare only within a family of types;
    /// arithmetic applies to numbers and dates.
    struct OperandTyping {
        /// The entity being queried, for messages.
        let entityName: String
        /// The instant the store's dates count from: date literals are encoded as its numbers.
        let dateEpoch: DateEpoch
        /// Whether parameters are wrapped (``placeholder``): set for a query with many values.
        var wrapsParameters = false

        /// `?`, or, in a query with many values, a `?` that SQLite does not take for a constant.
        /// SQLite computes each constant of a statement once, and finds whether it has already done so
        /// by searching the list of those it has: time quadratic in the number of distinct constants
        /// (3 seconds for 10,000 comparisons). Made to depend on the row, a value is not factored out
        /// (it then cannot drive an index, which only matters for small queries). Lists (`in`) keep
        /// plain parameters, which SQLite handles in one piece.
        var placeholder: String { wrapsParameters ? "iif(r._pk IS NULL, NULL, ?)" : "?" }

        /// An operand that holds a record id, for membership tests.
        func recordOperand(_ operand: Operand, comparedWith other: String) throws(DeckError) -> Operand {
            switch operand.kind {
            case .record, .typed(.integer):
                return operand
            case .null:
                throw DeckError.invalidQuery(
                    "'\(abbreviated(other))' holds no null; use 'is null' for a to-many relationship that is empty"
                )
            case .literal(let value):
                switch value {
                case .reference(let id), .integer(let id):
                    return Operand(
                        sql: placeholder, arguments: [.integer(id)], kind: .record, joins: [],
                        text: operand.text)
                default: break
                }
            default: break
            }
            throw DeckError.invalidQuery(
                "'\(abbreviated(other))' is a to-many relationship, which compares with a record id (#42), not "
                    + describe(operand.kind))
        }

        /// Gives two operands one type: a literal takes the other's; two types must compare.
        func unify(_ left: Operand, _ right: Operand, text: String) throws(DeckError) -> (
            Operand, Operand
        ) {
            switch (left.kind, right.kind) {
            case (.literal, .literal):
                return (try natural(left), try natural(right))
            case (.literal(let value), _):
                return (try typed(value, like: right, text: left.text), right)
            case (_, .literal(let value)):
                return (left, try typed(value, like: left, text: right.text))
            case (.null, _), (_, .null):
                return (
                    left.kind.isNull
                        ? Operand(sql: "NULL", arguments: [], kind: .null, joins: [], text: "null") : left,
                    right.kind.isNull
                        ? Operand(sql: "NULL", arguments: [], kind: .null, joins: [], text: "null") : right
                )
            case (.record, .record), (.record, .typed(.integer)), (.typed(.integer), .record):
                return (left, right)
            case (.typed(let a), .typed(let b)) where family(a) == family(b):
                return (left, right)
            default:
                throw DeckError.invalidQuery(
                    "'\(abbreviated(text))' compares \(describe(left.kind)) ('\(abbreviated(left.text))') "
                        + "with \(describe(right.kind)) ('\(abbreviated(right.text))')")
            }
        }

        /// A literal as its own type.
        func natural(_ operand: Operand) throws(DeckError) -> Operand {
            guard case .literal(let value) = operand.kind else { return operand }
            let type: StoreSchema.AttributeType
            switch value {
            case .null: return Operand(sql: "NULL", arguments: [], kind: .null, joins: [], text: "null")
            case .string: type = .string
            case .integer: type = .integer
            case .double: type = .double
            case .bool: type = .bool
            case .date: type = .date
            case .data: type = .data
            case .uuid: type = .uuid
            case .url: type = .url
            case .decimal: type = .decimal
            case .json: type = .json
            case .reference(let id):
                return Operand(
                    sql: placeholder, arguments: [.integer(id)], kind: .record, joins: [], text: operand.text)
            case .blob, .file, .references:
                throw DeckError.invalidQuery("a \(value.kindName) value cannot appear in a query")
            }
            return try encoded(value, as: type, text: operand.text)
        }

        /// A literal converted to the type of `other` (spec 7.3's conversions).
        func typed(_ value: Value, like other: Operand, text: String) throws(DeckError) -> Operand {
            switch other.kind {
            case .typed(let type):
                var isNumber = false
                switch value {
                case .integer, .double, .decimal: isNumber = true
                default: break
                }
                if isNumber && !other.isAttribute && isNumeric(type) {
                    // Computed numbers meet numbers as they are (`reps + 1 > 2.5`).
                    return try natural(
                        Operand(sql: "", arguments: [], kind: .literal(value), joins: [], text: text))
                }
                return try encoded(
                    value, as: type, text: text, comparedWith: other.isAttribute ? other.text : nil)
            case .record:
                switch value {
                case .null: return Operand(sql: "NULL", arguments: [], kind: .null, joins: [], text: "null")
                case .reference(let id), .integer(let id):
                    return Operand(
                        sql: placeholder, arguments: [.integer(id)], kind: .record, joins: [], text: text)
                default:
                    throw DeckError.invalidValue(
                        entity: entityName, property: other.text,
                        reason: "a relationship compares with a record id, not \(value.kindName)")
                }
            default:
                return try natural(
                    Operand(sql: "", arguments: [], kind: .literal(value), joins: [], text: text))
            }
        }

        func encoded(
            _ value: Value, as type: StoreSchema.AttributeType, text: String,
            comparedWith property: String? = nil
        ) throws(DeckError) -> Operand {
            let sqlValue: SQLValue
            do {
                sqlValue = try value.sqlValue(
                    for: Attribute(property ?? "value", type, isOptional: true), epoch: dateEpoch)
            } catch {
                throw DeckError.invalidValue(
                    entity: entityName, property: property ?? text, reason: error.description)
            }
            if sqlValue == .null {
                return Operand(sql: "NULL", arguments: [], kind: .null, joins: [], text: text)
            }
            // Decimals are stored as text to keep every digit; they compare and compute as numbers.
            let sql = type == .decimal ? "CAST(\(placeholder) AS NUMERIC)" : placeholder
            return Operand(sql: sql, arguments: [sqlValue], kind: .typed(type), joins: [], text: text)
        }

        /// A text operand of a text test.
        func textOperand(_ operand: Operand, test: QueryExpression.TextOperator, text: String)
            throws(DeckError)
            -> Operand
        {
            switch operand.kind {
            case .typed(let type) where isText(type):
                return operand
            case .literal(.string(let value)):
                return Operand(
                    sql: placeholder, arguments: [.text(value)], kind: .typed(.string), joins: [], text: text)
            case .null:
                return Operand(sql: "NULL", arguments: [], kind: .null, joins: [], text: text)
            default:
                throw DeckError.invalidQuery(
                    "'\(abbreviated(operand.text))' is \(describe(operand.kind)), not text, so "
                        + "\(test.rawValue) does not apply (in '\(abbreviated(text))')")
            }
        }

        func arithmetic(
            _ left: Operand, _ op: QueryExpression.ArithmeticOperator, _ right: Operand, text: String
        ) throws(DeckError) -> Operand {
            /// The operand as a number or a date, literals by their own type (a text next to a date is a date).
            func numeric(_ operand: Operand, other: Operand) throws(DeckError) -> Operand {
                var value = operand
                if case .literal(let literal) = operand.kind {
                    if case .string = literal, case .typed(.date) = other.kind {
                        value = try encoded(literal, as: .date, text: operand.text)
                    } else {
                        value = try natural(operand)
                    }
                }
                switch value.kind {
                case .typed(let type) where isNumeric(type) || type == .date: return value
                case .record:
                    return Operand(
                        sql: value.sql, arguments: value.arguments, kind: .typed(.integer),
                        joins: value.joins,
                        text: value.text)
                case .null: return value
                default:
                    throw DeckError.invalidQuery(
                        "'\(abbreviated(operand.text))' is \(describe(value.kind)); arithmetic ('\(op.rawValue)') "
                            + "applies to numbers and dates (in '\(abbreviated(text))')")
                }
            }
            let a = try numeric(left, other: right)
            let b = try numeric(right, other: left)
            func type(_ kind: Kind) -> StoreSchema.AttributeType? {
                if case .typed(let type) = kind { return type }
                return nil
            }
            let (ta, tb) = (type(a.kind), type(b.kind))
            var result: Kind
            switch (ta, tb) {
            case (.date, .date):
                guard op == .subtract else {
                    throw DeckError.invalidQuery(
                        "'\(abbreviated(text))': two dates can only be subtracted (giving the seconds between them)"
                    )
                }
                result = .typed(.double)
            case (.date, _), (_, .date):
                guard op == .add || (op == .subtract && ta == .date) else {
                    throw DeckError.invalidQuery(
                        "'\(abbreviated(text))': a date can only have seconds added or subtracted")
                }
                result = .typed(.date)
            case (.integer, .integer): result = .typed(.integer)
            case (nil, nil): result = .null
            case (nil, let other?), (let other?, nil): result = .typed(other == .integer ? .integer : .double)
            default: result = .typed(.double)
            }
            if a.kind.isNull || b.kind.isNull { result = .null }
            return Operand(
                sql: "(\(a.sql) \(op.rawValue) \(b.sql))", arguments: a.arguments + b.arguments, kind: result,
                joins: a.joins.union(b.joins), text: text)
        }
    }
}

extension QueryCompiler.Kind {
    var isToMany: Bool {
        if case .toMany = self { return true }
        return false
    }

    var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}
