import CSQLite
import Foundation

/// The application-defined SQL functions that compiled queries call, registered on every
/// connection the store opens (``Database`` registers them as it opens one; see
/// <https://sqlite.org/c3ref/create_function.html>):
///
/// `deck_match(text, needle, code)` is 1 when `text` passes a text test with `needle` under the
/// Unicode-aware folding (``TextFolding``), 0 when not, and null when either is null. `code` is the
/// test (0 equals, 1 contains, 2 begins with, 3 ends with) plus 8 × the folding
/// (``TextFolding/Mode``), plus 64 when the needle is folded already (a query folds its values
/// once, in Swift, rather than once per row).
///
/// `deck_fold(text, mode)` is `text` folded by `mode` (``TextFolding/Mode``), null for null: sort
/// keys with a folding order by it.
///
/// They are deterministic, so SQLite may compute them once for constant arguments, and direct-only:
/// a store's own triggers, views and indexes cannot call them (spec 4.1 allows none that would), so
/// what they compute never becomes part of a file.
package enum QueryFunctions {
    package static let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY

    /// The `code` argument of `deck_match`.
    package static func code(_ test: TextFolding.Test, _ mode: TextFolding.Mode, needleFolded: Bool) -> Int32
    {
        test.rawValue + 8 * mode.rawValue + (needleFolded ? 64 : 0)
    }

    /// Registers the functions on a connection.
    package static func register(on handle: OpaquePointer) -> Int32 {
        let result = sqlite3_create_function_v2(handle, "deck_match", 3, flags, nil, match, nil, nil, nil)
        guard result == SQLITE_OK else { return result }
        return sqlite3_create_function_v2(handle, "deck_fold", 2, flags, nil, fold, nil, nil, nil)
    }

    /// The bytes of a text argument (valid until the next conversion of the same argument).
    private static func text(_ value: OpaquePointer?) -> UnsafeBufferPointer<UInt8>? {
        guard sqlite3_value_type(value) != SQLITE_NULL else { return nil }
        let pointer = sqlite3_value_text(value)
        let count = Int(sqlite3_value_bytes(value))
        return UnsafeBufferPointer(
            start: pointer.map { UnsafePointer($0) }, count: pointer == nil ? 0 : count)
    }

    private static let match:
        @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
            context, count, arguments in
            guard count == 3, let arguments else { return sqlite3_result_null(context) }
            let code = sqlite3_value_int(arguments[2])
            guard let test = TextFolding.Test(rawValue: code & 7),
                let mode = TextFolding.Mode(rawValue: (code >> 3) & 7)
            else { return sqlite3_result_error(context, "deck_match: invalid code", -1) }
            guard let haystack = text(arguments[0]) else { return sqlite3_result_null(context) }
            let foldedHaystack = TextFolding.fold(haystack, mode)
            guard let needle = text(arguments[1]) else { return sqlite3_result_null(context) }
            let foldedNeedle = code & 64 != 0 ? Array(needle) : TextFolding.fold(needle, mode)
            let result = foldedHaystack.withUnsafeBufferPointer { h in
                foldedNeedle.withUnsafeBufferPointer { n in TextFolding.matches(test, h, n) }
            }
            sqlite3_result_int(context, result ? 1 : 0)
        }

    private static let fold:
        @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
            context, count, arguments in
            guard count == 2, let arguments else { return sqlite3_result_null(context) }
            guard let mode = TextFolding.Mode(rawValue: sqlite3_value_int(arguments[1])) else {
                return sqlite3_result_error(context, "deck_fold: invalid mode", -1)
            }
            guard let text = text(arguments[0]) else { return sqlite3_result_null(context) }
            let folded = TextFolding.fold(text, mode)
            folded.withUnsafeBufferPointer { bytes in
                // A zero-length text still needs a pointer: nil would be null.
                let empty: [CChar] = [0]
                empty.withUnsafeBufferPointer { fallback in
                    let pointer = bytes.baseAddress.map {
                        UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)
                    }
                    sqlite3_result_text(
                        context, pointer ?? fallback.baseAddress, Int32(bytes.count), deck_sqlite_transient())
                }
            }
        }
}
