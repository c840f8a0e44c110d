/// How a shell should complete a value (of an option or a positional argument).
///
/// Used by ``CompletionScript`` when generating bash, zsh and fish scripts.
public enum CompletionHint: Sendable, Hashable {
    /// Complete file (and directory) names.
    case file
    /// Complete directory names only.
    case directory
    /// Complete one of a fixed list of words.
    case values([String])
    /// Offer no completion (free text).
    case none
}

/// A positional argument of a command, e.g. `<path>` in `deck query <path> <entity>`.
///
/// The `name` is the key used to read the value back from ``ParsedCommand`` (e.g. `"PATH"`);
/// help and usage display it lowercased in angle brackets (`<path>`).
///
/// ```swift
/// ArgumentSpec("PATH", help: "The .deck package.", completion: .directory)
/// ArgumentSpec("ASSIGNMENT", help: "key=value pairs.", isVariadic: true)
/// ```
public struct ArgumentSpec: Sendable, Hashable {
    /// The lookup key, e.g. `"PATH"`.
    public var name: String
    /// One-line help text.
    public var help: String
    /// Whether the argument may be omitted (only trailing arguments may be optional).
    public var isOptional: Bool
    /// Whether the argument takes all remaining positionals (only the last argument may be variadic).
    public var isVariadic: Bool
    /// How shells should complete the argument.
    public var completion: CompletionHint

    /// Creates a positional argument specification.
    public init(
        _ name: String,
        help: String,
        isOptional: Bool = false,
        isVariadic: Bool = false,
        completion: CompletionHint = .none
    ) {
        self.name = name
        self.help = help
        self.isOptional = isOptional
        self.isVariadic = isVariadic
        self.completion = completion
    }

    /// The display form used in usage and help, e.g. `<path>`.
    public var displayName: String {
        "<\(name.lowercased())>"
    }
}

/// The shape of an option: a boolean flag, a single value or a repeatable value.
public enum OptionKind: Sendable, Hashable {
    /// A boolean switch such as `--json`.
    case flag
    /// An option taking exactly one value, e.g. `--limit <n>`. The payload is the value name (`"N"`).
    case value(valueName: String)
    /// An option that may be given several times, e.g. `--sort <key>`. The payload is the value name.
    case repeatable(valueName: String)

    /// The value name, or `nil` for flags.
    public var valueName: String? {
        switch self {
        case .flag: return nil
        case .value(let name), .repeatable(let name): return name
        }
    }
}

/// A named option of a command, e.g. `--where <expr>`, `-l, --limit <n>` or `--json`.
///
/// ```swift
/// OptionSpec.flag("json", help: "Print JSON.")
/// OptionSpec.value("limit", short: "l", valueName: "N", help: "Maximum number of rows.")
/// OptionSpec.value("format", valueName: "FORMAT", allowedValues: ["zip", "tar"], help: "Archive format.")
/// OptionSpec.repeatable("sort", valueName: "KEY", help: "Sort key.")
/// ```
public struct OptionSpec: Sendable, Hashable {
    /// The long name without dashes, e.g. `"json"` for `--json`. Also the lookup key in ``ParsedCommand``.
    public var long: String
    /// The optional single-character alias, e.g. `"l"` for `-l`.
    public var short: Character?
    /// Flag, single value or repeatable value.
    public var kind: OptionKind
    /// If non-empty, the only values accepted (also offered as completions).
    public var allowedValues: [String]
    /// One-line help text.
    public var help: String
    /// How shells should complete the value (ignored for flags; `allowedValues` take precedence).
    public var completion: CompletionHint

    /// Creates an option specification; prefer the `flag`, `value` and `repeatable` factories.
    public init(
        long: String,
        short: Character? = nil,
        kind: OptionKind,
        allowedValues: [String] = [],
        help: String,
        completion: CompletionHint = .none
    ) {
        self.long = long
        self.short = short
        self.kind = kind
        self.allowedValues = allowedValues
        self.help = help
        self.completion = completion
    }

    /// A boolean flag such as `--json` or `-q, --quiet`.
    public static func flag(_ long: String, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(long: long, short: short, kind: .flag, help: help)
    }

    /// An option taking one value, e.g. `--limit <n>`.
    public static func value(
        _ long: String,
        short: Character? = nil,
        valueName: String,
        allowedValues: [String] = [],
        completion: CompletionHint = .none,
        help: String
    ) -> OptionSpec {
        OptionSpec(
            long: long, short: short, kind: .value(valueName: valueName), allowedValues: allowedValues,
            help: help, completion: completion)
    }

    /// An option that may be given several times, e.g. `--sort name --sort -date`.
    public static func repeatable(
        _ long: String,
        short: Character? = nil,
        valueName: String,
        allowedValues: [String] = [],
        completion: CompletionHint = .none,
        help: String
    ) -> OptionSpec {
        OptionSpec(
            long: long, short: short, kind: .repeatable(valueName: valueName), allowedValues: allowedValues,
            help: help, completion: completion)
    }

    /// Whether the option takes a value.
    public var takesValue: Bool {
        kind != .flag
    }

    /// The display form used in usage lines and errors, e.g. `--limit <n>` or `--json`.
    public var displayName: String {
        if let valueName = kind.valueName {
            return "--\(long) <\(valueName.lowercased())>"
        }
        return "--\(long)"
    }

    /// The completion actually used by shells: allowed values win over the declared hint.
    public var effectiveCompletion: CompletionHint {
        allowedValues.isEmpty ? completion : .values(allowedValues)
    }
}

/// A worked example shown in the `EXAMPLES:` section of help.
public struct CommandExample: Sendable, Hashable {
    /// What the example does, e.g. `"List open tasks as JSON:"`.
    public var description: String
    /// The command line, e.g. `"deck query notes.deck Task --json"`.
    public var command: String

    /// Creates an example.
    public init(_ description: String, command: String) {
        self.description = description
        self.command = command
    }
}

/// A declarative description of a command: its arguments, options and subcommands.
///
/// Every command implicitly accepts `-h/--help`; the root command also accepts `--version`.
///
/// ```swift
/// let root = CommandSpec(
///     name: "deck", abstract: "Work with Deck packages.",
///     subcommands: [
///         CommandSpec(
///             name: "query", abstract: "Query entities.",
///             arguments: [ArgumentSpec("PATH", help: "The package.")],
///             options: [.flag("json", help: "Print JSON.")])
///     ])
/// ```
public struct CommandSpec: Sendable, Hashable {
    /// The command name as typed, e.g. `"query"`.
    public var name: String
    /// One-line summary, shown after `OVERVIEW:` and in the parent's `SUBCOMMANDS:` list.
    public var abstract: String
    /// Optional longer text (paragraphs separated by blank lines), shown below the overview.
    public var discussion: String?
    /// Positional arguments, in order.
    public var arguments: [ArgumentSpec]
    /// Options (not including the implicit `--help` / `--version`).
    public var options: [OptionSpec]
    /// Nested commands. A command with subcommands must not declare positional arguments.
    public var subcommands: [CommandSpec]
    /// Worked examples for help.
    public var examples: [CommandExample]

    /// Creates a command specification.
    public init(
        name: String,
        abstract: String,
        discussion: String? = nil,
        arguments: [ArgumentSpec] = [],
        options: [OptionSpec] = [],
        subcommands: [CommandSpec] = [],
        examples: [CommandExample] = []
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.arguments = arguments
        self.options = options
        self.subcommands = subcommands
        self.examples = examples
    }

    /// The direct subcommand with the given name, if any.
    public func subcommand(named name: String) -> CommandSpec? {
        subcommands.first { $0.name == name }
    }

    /// The option with the given long name, if declared on this command.
    public func option(named long: String) -> OptionSpec? {
        options.first { $0.long == long }
    }

    /// The command reached by following `path`, whose first element must be this command's name.
    ///
    /// `root.command(at: ["deck", "blob", "get"])` returns the `get` spec, or `nil` if any step is unknown.
    public func command(at path: [String]) -> CommandSpec? {
        lineage(at: path)?.last
    }

    /// Every command along `path`, starting with this one; `nil` if any step is unknown.
    func lineage(at path: [String]) -> [CommandSpec]? {
        guard let first = path.first, first == name else { return nil }
        var result = [self]
        for step in path.dropFirst() {
            guard let next = result[result.count - 1].subcommand(named: step) else { return nil }
            result.append(next)
        }
        return result
    }

    /// Consistency problems in this command tree, as human-readable sentences (empty when valid).
    ///
    /// Call it from a unit test of the real command tree; the parser assumes a valid tree.
    public func validationProblems() -> [String] {
        var problems: [String] = []
        collectProblems(path: [name], inherited: [], into: &problems)
        return problems
    }

    private func collectProblems(path: [String], inherited: Set<String>, into problems: inout [String]) {
        let location = "'\(path.joined(separator: " "))'"
        var longs = Set<String>()
        var shorts = Set<Character>()
        let reserved: Set<String> = path.count == 1 ? ["help", "version"] : ["help"]
        for option in options {
            if option.long.isEmpty || option.long.hasPrefix("-")
                || option.long.contains(where: { $0 == "=" || $0.isWhitespace })
            {
                problems.append("\(location): invalid long option name '\(option.long)'")
            }
            if reserved.contains(option.long) {
                problems.append("\(location): option '--\(option.long)' is reserved")
            }
            if !longs.insert(option.long).inserted {
                problems.append("\(location): duplicate option '--\(option.long)'")
            }
            if inherited.contains(option.long) {
                problems.append(
                    "\(location): option '--\(option.long)' shadows an option of a parent command")
            }
            if let short = option.short {
                if short == "h" || short == "-" || short.isNumber || short.isWhitespace {
                    problems.append("\(location): invalid or reserved short option '-\(short)'")
                }
                if !shorts.insert(short).inserted {
                    problems.append("\(location): duplicate short option '-\(short)'")
                }
            }
            if option.kind == .flag && !option.allowedValues.isEmpty {
                problems.append("\(location): flag '--\(option.long)' cannot have allowed values")
            }
        }
        var argumentNames = Set<String>()
        var sawOptional = false
        for (index, argument) in arguments.enumerated() {
            if !argumentNames.insert(argument.name).inserted {
                problems.append("\(location): duplicate argument '\(argument.name)'")
            }
            if argument.isVariadic && index != arguments.count - 1 {
                problems.append("\(location): only the last argument may be variadic ('\(argument.name)')")
            }
            if sawOptional && !argument.isOptional {
                problems.append("\(location): required argument '\(argument.name)' follows an optional one")
            }
            sawOptional = sawOptional || argument.isOptional
        }
        if !subcommands.isEmpty && !arguments.isEmpty {
            problems.append("\(location): a command with subcommands cannot have positional arguments")
        }
        var subcommandNames = Set<String>()
        for subcommand in subcommands {
            if !subcommandNames.insert(subcommand.name).inserted {
                problems.append("\(location): duplicate subcommand '\(subcommand.name)'")
            }
            if path.count == 1 && subcommand.name == "help" {
                problems.append("\(location): subcommand name 'help' is reserved")
            }
            if subcommand.name.isEmpty || subcommand.name.hasPrefix("-")
                || subcommand.name.contains(where: { $0.isWhitespace })
            {
                problems.append("\(location): invalid subcommand name '\(subcommand.name)'")
            }
            subcommand.collectProblems(
                path: path + [subcommand.name], inherited: inherited.union(longs), into: &problems)
        }
    }
}
