import Foundation

/// A value as SQLite stores it: one of its five storage classes.
///
/// See <https://sqlite.org/datatype3.html>.
package enum SQLValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    /// The SQLite `typeof()` name of the storage class.
    package var storageClass: String {
        switch self {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        }
    }

    package var isNull: Bool { if case .null = self { true } else { false } }

    /// The integer, or nil for any other storage class.
    package var int64: Int64? { if case .integer(let v) = self { v } else { nil } }

    /// The text, or nil for any other storage class.
    package var string: String? { if case .text(let v) = self { v } else { nil } }

    /// The number as a double, for `integer` and `real`.
    package var double: Double? {
        switch self {
        case .integer(let v): Double(v)
        case .real(let v): v
        default: nil
        }
    }

    /// The bytes, or nil for any other storage class.
    package var data: Data? { if case .blob(let v) = self { v } else { nil } }

    package var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let v): String(v)
        case .real(let v): String(v)
        case .text(let v): quoteLiteral(v)
        case .blob(let v): "X'" + v.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }
}
