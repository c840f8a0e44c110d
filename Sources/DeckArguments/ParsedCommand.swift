/// The outcome of ``ArgumentParser/parse(_:root:)``.
public enum ParseResult: Sendable, Hashable {
    /// Help was requested (`-h`, `--help`, `deck help query`, or a command group run without a
    /// subcommand) for the command at this path, e.g. `["deck", "query"]`.
    case help([String])
    /// `--version` was given to the root command.
    case version
    /// A command to run, with its parsed options and arguments.
    case command(ParsedCommand)
}

/// Describes, for error messages, what a converted argument value should look like.
///
/// ```swift
/// extension Duration: ArgumentValueDescribing {
///     public static var expectedArgumentDescription: String { "a duration such as '5s'" }
/// }
/// ```
public protocol ArgumentValueDescribing {
    /// Completes the sentence "expected ...", e.g. `"an integer"`.
    static var expectedArgumentDescription: String { get }
}

extension Int: ArgumentValueDescribing {
    /// `"an integer"`.
    public static var expectedArgumentDescription: String { "an integer" }
}

extension Int64: ArgumentValueDescribing {
    /// `"an integer"`.
    public static var expectedArgumentDescription: String { "an integer" }
}

extension Int32: ArgumentValueDescribing {
    /// `"an integer"`.
    public static var expectedArgumentDescription: String { "an integer" }
}

extension UInt: ArgumentValueDescribing {
    /// `"a non-negative integer"`.
    public static var expectedArgumentDescription: String { "a non-negative integer" }
}

extension UInt64: ArgumentValueDescribing {
    /// `"a non-negative integer"`.
    public static var expectedArgumentDescription: String { "a non-negative integer" }
}

extension UInt32: ArgumentValueDescribing {
    /// `"a non-negative integer"`.
    public static var expectedArgumentDescription: String { "a non-negative integer" }
}

extension Double: ArgumentValueDescribing {
    /// `"a number"`.
    public static var expectedArgumentDescription: String { "a number" }
}

extension Float: ArgumentValueDescribing {
    /// `"a number"`.
    public static var expectedArgumentDescription: String { "a number" }
}

extension Bool: ArgumentValueDescribing {
    /// `"'true' or 'false'"`.
    public static var expectedArgumentDescription: String { "'true' or 'false'" }
}

/// A successfully parsed command line for one (sub)command, with typed accessors.
///
/// Names are the declared keys: an option's long name (`"json"`, not `"--json"`) or an argument's
/// name (`"PATH"`). Options declared on parent commands (given before the subcommand name) are
/// visible too. Asking for a name that is not declared, or using the wrong accessor for an
/// option's kind, is a programmer error and stops the program.
///
/// ```swift
/// guard case .command(let command) = try ArgumentParser.parse(arguments, root: spec) else { ... }
/// let path = command.positional("PATH")
/// let limit = try command.value("limit", as: Int.self) ?? 100
/// if command.flag("json") { ... }
/// ```
public struct ParsedCommand: Sendable, Hashable {
    /// The full path of the command, starting with the root name, e.g. `["deck", "blob", "get"]`.
    public let commandPath: [String]
    private let declaredOptions: [String: OptionSpec]
    private let declaredArguments: [String: ArgumentSpec]
    private let givenFlags: Set<String>
    private let optionValues: [String: [String]]
    private let argumentValues: [String: [String]]

    init(
        commandPath: [String],
        declaredOptions: [String: OptionSpec],
        declaredArguments: [String: ArgumentSpec],
        givenFlags: Set<String>,
        optionValues: [String: [String]],
        argumentValues: [String: [String]]
    ) {
        self.commandPath = commandPath
        self.declaredOptions = declaredOptions
        self.declaredArguments = declaredArguments
        self.givenFlags = givenFlags
        self.optionValues = optionValues
        self.argumentValues = argumentValues
    }

    /// The path without the root name, e.g. `["blob", "get"]`; convenient to `switch` over.
    public var subcommandPath: [String] {
        Array(commandPath.dropFirst())
    }

    /// Whether the flag `--name` was given.
    public func flag(_ name: String) -> Bool {
        let option = declaredOption(name)
        precondition(option.kind == .flag, "'--\(name)' takes a value; use value(_:) or values(_:)")
        return givenFlags.contains(name)
    }

    /// The value of option `--name`, or `nil` if it was not given (the last one for repeatable options).
    public func value(_ name: String) -> String? {
        values(name).last
    }

    /// All values of option `--name` in command-line order (empty if not given).
    public func values(_ name: String) -> [String] {
        let option = declaredOption(name)
        precondition(option.kind != .flag, "'--\(name)' is a flag; use flag(_:)")
        return optionValues[name] ?? []
    }

    /// Whether the command declares option `--name` at all (given or not).
    public func declares(_ name: String) -> Bool {
        declaredOptions[name] != nil
    }

    /// Whether option `--name` (flag or value) was given at all.
    public func isGiven(_ name: String) -> Bool {
        let option = declaredOption(name)
        return option.kind == .flag ? givenFlags.contains(name) : !(optionValues[name] ?? []).isEmpty
    }

    /// The value of positional argument `name`, or `nil` if it was not given (the first for variadics).
    public func positional(_ name: String) -> String? {
        positionals(name).first
    }

    /// All values of positional argument `name` (more than one only for a variadic argument).
    public func positionals(_ name: String) -> [String] {
        _ = declaredArgument(name)
        return argumentValues[name] ?? []
    }

    /// The value of option `--name` converted to `T`, or `nil` if not given.
    ///
    /// Throws e.g. `Invalid value 'abc' for '--limit <n>': expected an integer`.
    public func value<T: LosslessStringConvertible>(
        _ name: String, as type: T.Type
    ) throws(ArgumentError) -> T? {
        guard let raw = value(name) else { return nil }
        return try convert(raw, to: type, target: declaredOption(name).displayName)
    }

    /// All values of option `--name` converted to `T`.
    public func values<T: LosslessStringConvertible>(
        _ name: String, as type: T.Type
    ) throws(ArgumentError) -> [T] {
        let target = declaredOption(name).displayName
        var result: [T] = []
        for raw in values(name) {
            result.append(try convert(raw, to: type, target: target))
        }
        return result
    }

    /// The positional argument `name` converted to `T`, or `nil` if not given.
    public func positional<T: LosslessStringConvertible>(
        _ name: String, as type: T.Type
    ) throws(ArgumentError) -> T? {
        guard let raw = positional(name) else { return nil }
        return try convert(raw, to: type, target: declaredArgument(name).displayName)
    }

    /// All values of positional argument `name` converted to `T`.
    public func positionals<T: LosslessStringConvertible>(
        _ name: String, as type: T.Type
    ) throws(ArgumentError) -> [T] {
        let target = declaredArgument(name).displayName
        var result: [T] = []
        for raw in positionals(name) {
            result.append(try convert(raw, to: type, target: target))
        }
        return result
    }

    /// An error about this command line, rendered with this command's usage by
    /// ``HelpFormatter/errorReport(for:root:)``.
    ///
    /// ```swift
    /// if command.flag("json") && command.flag("csv") {
    ///     throw command.usageError("'--json' and '--csv' cannot be used together")
    /// }
    /// ```
    public func usageError(_ message: String) -> ArgumentError {
        ArgumentError(.custom(message), commandPath: commandPath)
    }

    private func declaredOption(_ name: String) -> OptionSpec {
        guard let option = declaredOptions[name] else {
            preconditionFailure(
                "Option '--\(name)' is not declared for '\(commandPath.joined(separator: " "))'")
        }
        return option
    }

    private func declaredArgument(_ name: String) -> ArgumentSpec {
        guard let argument = declaredArguments[name] else {
            preconditionFailure(
                "Argument '\(name)' is not declared for '\(commandPath.joined(separator: " "))'")
        }
        return argument
    }

    /// Whether the flag `--long` was given (`false` for one not declared).
    func givenFlag(_ long: String) -> Bool {
        givenFlags.contains(long)
    }

    /// The values of option `--long` in command-line order (empty for one not declared).
    func givenValues(_ long: String) -> [String] {
        optionValues[long] ?? []
    }

    /// The values of positional argument `name` (empty for one not declared).
    func givenPositionals(_ name: String) -> [String] {
        argumentValues[name] ?? []
    }

    func convert<T: LosslessStringConvertible>(
        _ raw: String, to type: T.Type, target: String
    ) throws(ArgumentError) -> T {
        if let converted = T(raw) {
            return converted
        }
        let expected =
            (type as? any ArgumentValueDescribing.Type)?.expectedArgumentDescription
            ?? "a value of type \(T.self)"
        throw ArgumentError(.invalidValue(raw, for: target, expected: expected), commandPath: commandPath)
    }
}
