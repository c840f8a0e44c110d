/// A set of options and positional arguments declared with ``Flag``, ``Option``, ``Argument``
/// and ``OptionGroup`` properties, which the parser fills.
///
/// The declarations are the properties themselves: the type's option and argument lists (for
/// help, completions and the parser) are read from them in declaration order, and the values
/// come back through them, typed. A misspelled property is a compile error, not a trap.
///
/// ```swift
/// struct QueryOptions: ParsableArguments {
///     @Argument("entity", help: "The entity.") var entity: String
///     @Option("limit", valueName: "n", help: "At most N records.") var limit: Int?
///     @Flag("json", help: "Print JSON.") var json: Bool
/// }
/// ```
///
/// The implicit `init()` of such a struct is what the parser calls: every property wrapper reads
/// its value from the command line being parsed (outside a parse, it holds its empty value).
public protocol ParsableArguments {
    /// Creates the value; called by the parser while it fills the properties.
    init()
}

/// A command: its name, help and subcommands (``configuration``), and its options and arguments
/// declared as properties (see ``ParsableArguments``).
///
/// ```swift
/// struct Query: ParsableCommand {
///     static var configuration: CommandConfiguration {
///         CommandConfiguration(name: "query", abstract: "Print the records of an entity.")
///     }
///     @Argument("path", help: "The package.") var path: String
///     @Flag("json", help: "Print JSON.") var json: Bool
/// }
/// let spec = Query.commandSpec()
/// ```
public protocol ParsableCommand: ParsableArguments {
    /// The command's name, help text and subcommands.
    static var configuration: CommandConfiguration { get }
}

/// What a ``ParsableCommand`` says about itself besides its options and arguments.
public struct CommandConfiguration {
    /// The command name as typed, e.g. `"query"`.
    public var name: String
    /// One-line summary (see ``CommandSpec/abstract``).
    public var abstract: String
    /// Optional longer text (see ``CommandSpec/discussion``).
    public var discussion: String?
    /// Worked examples for help.
    public var examples: [CommandExample]
    /// The command's subcommands, in the order help lists them.
    public var subcommands: [any ParsableCommand.Type]

    /// Creates a configuration.
    public init(
        name: String,
        abstract: String,
        discussion: String? = nil,
        subcommands: [any ParsableCommand.Type] = [],
        examples: [CommandExample] = []
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.subcommands = subcommands
        self.examples = examples
    }
}

/// A usage error a command finds after parsing (conflicting options, a malformed value): the
/// caller reports it as an ``ArgumentError`` of the command that threw it, with its usage line.
///
/// ```swift
/// if json && csv { throw UsageError("--json and --csv cannot be combined") }
/// ```
public struct UsageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The message, e.g. `"--json and --csv cannot be combined"`.
    public var message: String

    /// Creates a usage error.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }

    /// The error as an ``ArgumentError`` of the command at `commandPath`.
    public func argumentError(commandPath: [String]) -> ArgumentError {
        ArgumentError(.custom(message), commandPath: commandPath)
    }
}

extension ParsableArguments {
    /// The positional arguments and options the properties declare, in declaration order.
    static func declarations() -> (arguments: [ArgumentSpec], options: [OptionSpec]) {
        var arguments: [ArgumentSpec] = []
        var options: [OptionSpec] = []
        let empty = ParsingInput.$current.withValue(nil) { Self() }
        for declared in declaredProperties(of: empty) {
            switch declared.declaration {
            case .argument(let spec): arguments.append(spec)
            case .option(let spec): options.append(spec)
            case .group(let groupArguments, let groupOptions):
                arguments += groupArguments
                options += groupOptions
            }
        }
        return (arguments, options)
    }

    /// The value filled from `command`; the first value that does not convert (in declaration
    /// order) is thrown.
    static func filled(from command: ParsedCommand) throws(ArgumentError) -> Self {
        let value = ParsingInput.$current.withValue(command) { Self() }
        for declared in declaredProperties(of: value) {
            if let error = declared.conversionError { throw error }
        }
        return value
    }
}

extension ParsableCommand {
    /// The command tree this command heads, for ``ArgumentParser``, ``HelpFormatter`` and
    /// ``CompletionScript``.
    public static func commandSpec() -> CommandSpec {
        let configuration = Self.configuration
        let (arguments, options) = declarations()
        return CommandSpec(
            name: configuration.name, abstract: configuration.abstract, discussion: configuration.discussion,
            arguments: arguments, options: options,
            subcommands: configuration.subcommands.map { $0.commandSpec() }, examples: configuration.examples)
    }

    /// The command type at `path` (which starts with this command's name), or `nil` if a step is
    /// unknown.
    public static func commandType(at path: [String]) -> (any ParsableCommand.Type)? {
        guard let first = path.first, first == configuration.name else { return nil }
        var type: any ParsableCommand.Type = Self.self
        for step in path.dropFirst() {
            guard let next = type.configuration.subcommands.first(where: { $0.configuration.name == step })
            else { return nil }
            type = next
        }
        return type
    }

    /// The command `command` names (see ``commandType(at:)``), its properties filled from it.
    ///
    /// Throws for a value that does not convert, e.g.
    /// `Invalid value 'abc' for '--limit <n>': expected an integer`, and, for a path this tree
    /// does not hold, an unknown-subcommand error.
    public static func command(for command: ParsedCommand) throws(ArgumentError) -> any ParsableCommand {
        guard let type = commandType(at: command.commandPath) else {
            throw ArgumentError(
                .unknownSubcommand(command.commandPath.last ?? "", suggestion: nil),
                commandPath: command.commandPath)
        }
        return try type.filled(from: command)
    }
}

/// The command line being parsed, which the property wrappers read while ``ParsableArguments``
/// values are made.
enum ParsingInput {
    @TaskLocal static var current: ParsedCommand?

    /// The raw values `given` picks from the command being parsed, converted to `T` and shaped
    /// by `count` (the last, or all); none and no error outside a parse (a declaration's own use).
    static func converted<T: LosslessStringConvertible, Shape>(
        _ given: (ParsedCommand) -> [String], target: String, count: ([T]) -> Shape
    ) -> (Shape, ArgumentError?) {
        guard let command = current else { return (count([]), nil) }
        do throws(ArgumentError) {
            let values = try given(command).map { raw throws(ArgumentError) in
                try command.convert(raw, to: T.self, target: target)
            }
            return (count(values), nil)
        } catch {
            return (count([]), error)
        }
    }
}

/// What one property of a ``ParsableArguments`` type declares.
enum Declaration {
    case argument(ArgumentSpec)
    case option(OptionSpec)
    case group(arguments: [ArgumentSpec], options: [OptionSpec])
}

/// Implemented by the property wrappers: what they declare, and a value that did not convert.
protocol DeclaredProperty {
    var declaration: Declaration { get }
    var conversionError: ArgumentError? { get }
}

/// The declaring properties of `value`, in declaration order.
func declaredProperties(of value: Any) -> [any DeclaredProperty] {
    Mirror(reflecting: value).children.compactMap { $0.value as? any DeclaredProperty }
}

/// A boolean flag, e.g. `--json` or `-q, --quiet`: `true` when given.
///
/// ```swift
/// @Flag("json", help: "Print JSON.") var json: Bool
/// @Flag(.json) var json: Bool   // a shared declaration: `extension Flag { static var json: Flag {...} }`
/// ```
///
/// Shared declarations must be computed properties (`static var … { … }`): the value is read
/// when the declaration is made.
@propertyWrapper
public struct Flag: DeclaredProperty {
    /// The option this property declares.
    public let spec: OptionSpec
    /// Whether the flag was given.
    public let wrappedValue: Bool

    /// Declares the flag `--long` (and `-short`).
    public init(_ long: String, short: Character? = nil, help: String) {
        spec = .flag(long, short: short, help: help)
        wrappedValue = ParsingInput.current?.givenFlag(long) ?? false
    }

    /// Declares the same flag as `declaration` (a shared one, such as `.json`).
    public init(_ declaration: Flag) {
        self = declaration
    }

    var declaration: Declaration { .option(spec) }
    var conversionError: ArgumentError? { nil }
}

/// An option taking a value, e.g. `--limit <n>` (`Int?`: `nil` when not given) or a repeatable
/// one, e.g. `--sort <key>` (`[String]`: every value in command-line order).
///
/// ```swift
/// @Option("limit", valueName: "n", help: "At most N records.") var limit: Int?
/// @Option("sort", short: "s", valueName: "key", help: "Sort key.") var sort: [String]
/// ```
@propertyWrapper
public struct Option<Value>: DeclaredProperty {
    /// The option this property declares.
    public let spec: OptionSpec
    /// The value (or values) given.
    public let wrappedValue: Value
    let conversionError: ArgumentError?

    /// Declares the same option as `declaration` (a shared one, such as `.where`).
    public init(_ declaration: Option) {
        self = declaration
    }

    var declaration: Declaration { .option(spec) }
}

extension Option {
    /// Declares `--long <valueName>`, taken once; `nil` when not given.
    public init<T: LosslessStringConvertible>(
        _ long: String,
        short: Character? = nil,
        valueName: String,
        allowedValues: [String] = [],
        completion: CompletionHint = .none,
        help: String
    ) where Value == T? {
        spec = .value(
            long, short: short, valueName: valueName, allowedValues: allowedValues, completion: completion,
            help: help)
        (wrappedValue, conversionError) = Self.converted(spec, as: T.self, count: { $0.last })
    }

    /// Declares `--long <valueName>`, which may be repeated; every value in order.
    public init<T: LosslessStringConvertible>(
        _ long: String,
        short: Character? = nil,
        valueName: String,
        allowedValues: [String] = [],
        completion: CompletionHint = .none,
        help: String
    ) where Value == [T] {
        spec = .repeatable(
            long, short: short, valueName: valueName, allowedValues: allowedValues, completion: completion,
            help: help)
        (wrappedValue, conversionError) = Self.converted(spec, as: T.self, count: { $0 })
    }

    /// The given values of `spec` converted to `T` and shaped by `count` (the last, or all).
    private static func converted<T: LosslessStringConvertible, Shape>(
        _ spec: OptionSpec, as type: T.Type, count: ([T]) -> Shape
    ) -> (Shape, ArgumentError?) {
        ParsingInput.converted({ $0.givenValues(spec.long) }, target: spec.displayName, count: count)
    }
}

/// A positional argument: `String` when required, `T?` when it may be left out, `[T]` for a
/// variadic last argument.
///
/// ```swift
/// @Argument("path", help: "The package.", completion: .file) var path: String
/// @Argument("assignment", help: "key=value.", isOptional: true) var assignments: [String]
/// ```
@propertyWrapper
public struct Argument<Value>: DeclaredProperty {
    /// The argument this property declares.
    public let spec: ArgumentSpec
    /// The value (or values) given.
    public let wrappedValue: Value
    let conversionError: ArgumentError?

    /// Declares the same argument as `declaration` (a shared one, such as `.path`).
    public init(_ declaration: Argument) {
        self = declaration
    }

    var declaration: Declaration { .argument(spec) }
}

extension Argument where Value == String {
    /// Declares a required argument (the parser refuses a command line without it).
    public init(_ name: String, help: String, completion: CompletionHint = .none) {
        spec = ArgumentSpec(name, help: help, completion: completion)
        wrappedValue = ParsingInput.current?.givenPositionals(name).first ?? ""
        conversionError = nil
    }
}

extension Argument {
    /// Declares an argument that may be left out (only trailing arguments may be).
    public init<T: LosslessStringConvertible>(
        _ name: String, help: String, completion: CompletionHint = .none
    ) where Value == T? {
        spec = ArgumentSpec(name, help: help, isOptional: true, completion: completion)
        (wrappedValue, conversionError) = Self.converted(spec, as: T.self) { $0.first }
    }

    /// Declares a variadic argument, which takes all remaining positionals (only the last may).
    public init<T: LosslessStringConvertible>(
        _ name: String, help: String, isOptional: Bool = false, completion: CompletionHint = .none
    ) where Value == [T] {
        spec = ArgumentSpec(
            name, help: help, isOptional: isOptional, isVariadic: true, completion: completion)
        (wrappedValue, conversionError) = Self.converted(spec, as: T.self) { $0 }
    }

    private static func converted<T: LosslessStringConvertible, Shape>(
        _ spec: ArgumentSpec, as type: T.Type, count: ([T]) -> Shape
    ) -> (Shape, ArgumentError?) {
        ParsingInput.converted({ $0.givenPositionals(spec.name) }, target: spec.displayName, count: count)
    }
}

/// The options and arguments of another ``ParsableArguments`` type, declared in its place (so
/// that two commands can share them, e.g. `deck query` and the shell's `query`).
///
/// ```swift
/// @OptionGroup var query: QueryOptions
/// ```
@propertyWrapper
public struct OptionGroup<Value: ParsableArguments>: DeclaredProperty {
    /// The group's values.
    public let wrappedValue: Value

    /// Declares the group's options and arguments here.
    public init() {
        wrappedValue = Value()
    }

    var declaration: Declaration {
        let (arguments, options) = Value.declarations()
        return .group(arguments: arguments, options: options)
    }

    var conversionError: ArgumentError? {
        declaredProperties(of: wrappedValue).lazy.compactMap(\.conversionError).first
    }
}
