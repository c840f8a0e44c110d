import CSQLite
import Foundation

/// The application-defined SQL functions that compiled queries call, registered on every
/// connection (see <https://sqlite.org/c3ref/create_function.html>):
///
/// - `deck_match(text, needle, code)`: 1 when `text` passes a text test with `needle`, 0 when not,
///   null when either is null. `code` is the test (0 equals, 1 contains, 2 begins with, 3 ends
///   with) plus 8 × the folding (``TextFolding/Mode``), plus 64 when the needle is folded already
///   (a query folds its values once, in Swift, rather than once per row).
/// - `deck_fold(text, mode)`: `text` folded (``TextFolding/fold(_:_:)-(UnsafeBufferPointer<UInt8>,_)``).
/// - `deck_length(text)`: the number of characters of `text`, as Swift counts them.
/// - `deck_mod(x, y)`: the remainder of `x / y` truncated toward zero, as doubles; null when `y`
///   is 0 (integer remainders use SQL's `%`).
///
/// Each is deterministic (so SQLite may compute one with constant arguments once) and innocuous:
/// it reads nothing but its arguments and changes nothing. Connections run with `trusted_schema`
/// off, where only innocuous functions may appear in a schema's views, triggers and indexes; a
/// store's schema may hold only the objects the format derives (spec 4.1), and none calls these.
enum QueryFunctions {
    static let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS

    /// Registers the functions on a connection.
    static func register(on handle: OpaquePointer) -> Int32 {
        let functions: [(String, Int32, @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void)] = [
            ("deck_match", 3, match), ("deck_fold", 2, fold), ("deck_length", 1, length), ("deck_mod", 2, remainder),
        ]
        for (name, arity, function) in functions {
            let code = sqlite3_create_function_v2(handle, name, arity, flags, nil, function, nil, nil, nil)
            guard code == SQLITE_OK else { return code }
        }
        return SQLITE_OK
    }

    /// The bytes of a text argument (valid until the next conversion of the same argument).
    private static func text(_ value: OpaquePointer?) -> UnsafeBufferPointer<UInt8>? {
        guard sqlite3_value_type(value) != SQLITE_NULL else { return nil }
        let pointer = sqlite3_value_text(value)
        let count = Int(sqlite3_value_bytes(value))
        return UnsafeBufferPointer(start: pointer.map { UnsafePointer($0) }, count: pointer == nil ? 0 : count)
    }

    private static let tests: [QueryExpression.TextOperator] = [.equals, .contains, .beginsWith, .endsWith]

    private static let match: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
        context, count, arguments in
        guard count == 3, let arguments else { return sqlite3_result_null(context) }
        let code = sqlite3_value_int(arguments[2])
        guard let test = tests.indices.contains(Int(code & 7)) ? tests[Int(code & 7)] : nil,
            let mode = TextFolding.Mode(rawValue: (code >> 3) & 7)
        else { return sqlite3_result_error(context, "deck_match: invalid code", -1) }
        let folded = code & 64 != 0
        guard let haystack = text(arguments[0]) else { return sqlite3_result_null(context) }
        let foldedHaystack = TextFolding.fold(haystack, mode)
        guard let needle = text(arguments[1]) else { return sqlite3_result_null(context) }
        let foldedNeedle = folded ? Array(needle) : TextFolding.fold(needle, mode)
        let result = foldedHaystack.withUnsafeBufferPointer { h in
            foldedNeedle.withUnsafeBufferPointer { n in TextFolding.matches(test, h, n) }
        }
        sqlite3_result_int(context, result ? 1 : 0)
    }

    private static let fold: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
        context, count, arguments in
        guard count == 2, let arguments, let mode = TextFolding.Mode(rawValue: sqlite3_value_int(arguments[1])) else {
            return sqlite3_result_error(context, "deck_fold: invalid mode", -1)
        }
        guard let value = text(arguments[0]) else { return sqlite3_result_null(context) }
        let folded = TextFolding.fold(value, mode)
        folded.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else {
                return sqlite3_result_text(context, "", 0, deck_sqlite_transient())
            }
            sqlite3_result_text(
                context, base.assumingMemoryBound(to: CChar.self), Int32(bytes.count), deck_sqlite_transient())
        }
    }

    private static let length: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
        context, count, arguments in
        guard count == 1, let arguments, let value = text(arguments[0]) else { return sqlite3_result_null(context) }
        sqlite3_result_int64(context, Int64(TextFolding.length(value)))
    }

    private static let remainder: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
        context, count, arguments in
        guard count == 2, let arguments, sqlite3_value_type(arguments[0]) != SQLITE_NULL,
            sqlite3_value_type(arguments[1]) != SQLITE_NULL
        else { return sqlite3_result_null(context) }
        let divisor = sqlite3_value_double(arguments[1])
        guard divisor != 0 else { return sqlite3_result_null(context) }
        sqlite3_result_double(context, sqlite3_value_double(arguments[0]).truncatingRemainder(dividingBy: divisor))
    }
}
