// Placeholder until the expression parser lands (being written in parallel).
public struct FilterSyntaxError: Error, CustomStringConvertible, Sendable, Equatable {
    public let message: String
    public let column: Int
    public let expression: String
    public var description: String { "syntax error at column \(column): \(message)" }
    public var caret: String { expression + "\n" + String(repeating: " ", count: max(0, column - 1)) + "^" }
}

public enum FilterParser {
    public static func parse(_ text: String) throws(FilterSyntaxError) -> Filter {
        throw FilterSyntaxError(message: "not implemented", column: 1, expression: text)
    }
    public static func parseSort(_ text: String) throws(FilterSyntaxError) -> SortKey {
        let parts = text.split(separator: ":")
        return SortKey(String(parts[0]), ascending: parts.count < 2 || parts[1] != "desc")
    }
}
