/// A command-line usage error, carrying the path of the command it applies to.
///
/// `description` is the one-line message without the `Error:` prefix, e.g.
/// `Unknown option '--jsno'. Did you mean '--json'?`. Use ``HelpFormatter/errorReport(for:root:)``
/// to render it together with the usage line of ``commandPath``.
public struct ArgumentError: Error, CustomStringConvertible, Sendable, Hashable {
    /// What went wrong. Option and argument payloads are display forms such as `--limit <n>` or `<path>`.
    public enum Kind: Sendable, Hashable {
        /// An option that the command does not declare, with the closest known option if any.
        case unknownOption(String, suggestion: String?)
        /// A subcommand name that does not exist, with the closest known subcommand if any.
        case unknownSubcommand(String, suggestion: String?)
        /// A value-taking option at the end of the line or followed by another option.
        case missingValue(option: String)
        /// A required positional argument that was not given.
        case missingArgument(String)
        /// A positional argument beyond the declared ones.
        case unexpectedArgument(String)
        /// A value that is not allowed or cannot be converted; `expected` completes "expected ...".
        case invalidValue(String, for: String, expected: String)
        /// A flag written with an inline value, such as `--json=1`.
        case flagGivenValue(flag: String, value: String)
        /// A single-value option given more than once.
        case repeatedOption(String)
        /// Any other usage problem detected by the caller, e.g. conflicting flags.
        case custom(String)
    }

    /// What went wrong.
    public var kind: Kind
    /// The command the error applies to, starting with the root name, e.g. `["deck", "query"]`.
    public var commandPath: [String]

    /// Creates an error for the command at `commandPath`.
    public init(_ kind: Kind, commandPath: [String]) {
        self.kind = kind
        self.commandPath = commandPath
    }

    /// The human-readable message, e.g. `Missing expected argument '<entity>'`.
    public var description: String {
        switch kind {
        case .unknownOption(let option, let suggestion):
            return "Unknown option '\(option)'" + Self.suggestionSuffix(suggestion)
        case .unknownSubcommand(let name, let suggestion):
            return "Unknown subcommand '\(name)'" + Self.suggestionSuffix(suggestion)
        case .missingValue(let option):
            return "Missing value for option '\(option)'"
        case .missingArgument(let argument):
            return "Missing expected argument '\(argument)'"
        case .unexpectedArgument(let argument):
            return "Unexpected extra argument '\(argument)'"
        case .invalidValue(let value, let target, let expected):
            return "Invalid value '\(value)' for '\(target)': expected \(expected)"
        case .flagGivenValue(let flag, let value):
            return "Flag '\(flag)' does not take a value (got '\(value)')"
        case .repeatedOption(let option):
            return "Option '\(option)' may only be given once"
        case .custom(let message):
            return message
        }
    }

    private static func suggestionSuffix(_ suggestion: String?) -> String {
        guard let suggestion else { return "" }
        return ". Did you mean '\(suggestion)'?"
    }
}
