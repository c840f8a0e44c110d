import Foundation

/// Parses command lines against a ``CommandSpec`` tree, following Unix and swift-argument-parser
/// conventions.
///
/// Supported syntax:
/// - subcommands (`deck blob get ...`) and `deck help [COMMAND...]`;
/// - `--opt=value`, `--opt value`, `-o value`, `-ovalue` and combined short flags (`-qv`);
/// - `--` ends option parsing; a lone `-` and negative numbers (`-1`, `-2.5`) are values, never options;
/// - options may come before or after positional arguments; `key=value` stays positional;
/// - `-h`/`--help` anywhere before `--` asks for help (even if the rest of the line is invalid);
///   `--version` is accepted by the root command only.
///
/// Options given before a subcommand name belong to the command they follow, e.g. `deck --verbose query`
/// requires `--verbose` to be declared on the root; their values are visible in ``ParsedCommand``.
///
/// ```swift
/// switch try ArgumentParser.parse(Array(CommandLine.arguments.dropFirst()), root: deckSpec) {
/// case .help(let path): print(HelpFormatter.help(for: path, root: deckSpec))
/// case .version: print(version)
/// case .command(let command): try run(command)
/// }
/// ```
public enum ArgumentParser {
    /// Parses `arguments` (without the program name) against the command tree rooted at `root`.
    ///
    /// A command that has subcommands but is given none (e.g. plain `deck`) yields `.help` for itself.
    public static func parse(_ arguments: [String], root: CommandSpec) throws(ArgumentError) -> ParseResult {
        var parser = Parser(root: root)
        do throws(ArgumentError) {
            return try parser.run(arguments)
        } catch {
            if helpRequested(in: arguments) {
                return .help(error.commandPath)
            }
            throw error
        }
    }

    /// Whether a token would be treated as an option: it starts with `-`, is not a lone `-`
    /// and is not a negative number.
    public static func looksLikeOption(_ token: String) -> Bool {
        token.hasPrefix("-") && token != "-" && !isNegativeNumber(token)
    }

    /// Whether `token` is a negative decimal number such as `-1`, `-0.5` or `-.5`.
    static func isNegativeNumber(_ token: String) -> Bool {
        let characters = Array(token)
        guard characters.count >= 2, characters[0] == "-" else { return false }
        let startsNumeric =
            characters[1].isASCII && characters[1].isNumber
            || (characters[1] == "." && characters.count >= 3 && characters[2].isASCII
                && characters[2].isNumber)
        return startsNumeric && Double(token) != nil
    }

    private static func helpRequested(in arguments: [String]) -> Bool {
        for token in arguments {
            if token == "--" { return false }
            if token == "-h" || token == "--help" { return true }
        }
        return false
    }
}

/// The mutable state of one parse.
private struct Parser {
    let root: CommandSpec
    var command: CommandSpec
    var path: [String]
    var declaredOptions: [String: OptionSpec] = [:]
    var flags: Set<String> = []
    var optionValues: [String: [String]] = [:]
    var positionals: [String] = []
    var optionsEnded = false

    init(root: CommandSpec) {
        self.root = root
        self.command = root
        self.path = [root.name]
        register(root)
    }

    private var isRoot: Bool {
        path.count == 1
    }

    private mutating func register(_ spec: CommandSpec) {
        for option in spec.options {
            declaredOptions[option.long] = option
        }
    }

    private func error(_ kind: ArgumentError.Kind) -> ArgumentError {
        ArgumentError(kind, commandPath: path)
    }

    mutating func run(_ arguments: [String]) throws(ArgumentError) -> ParseResult {
        var index = 0
        while index < arguments.count {
            let token = arguments[index]
            index += 1
            if !optionsEnded && token == "--" {
                optionsEnded = true
                continue
            }
            if !optionsEnded && ArgumentParser.looksLikeOption(token) {
                if let result = try parseOption(token, arguments: arguments, index: &index) {
                    return result
                }
                continue
            }
            guard !command.subcommands.isEmpty else {
                positionals.append(token)
                continue
            }
            if let subcommand = command.subcommand(named: token) {
                command = subcommand
                path.append(token)
                register(subcommand)
            } else if isRoot && token == "help" {
                return try helpTarget(Array(arguments[index...]))
            } else {
                var names = command.subcommands.map(\.name)
                if isRoot { names.append("help") }
                throw error(.unknownSubcommand(token, suggestion: closestMatch(to: token, in: names)))
            }
        }
        if !command.subcommands.isEmpty {
            return .help(path)
        }
        let arguments = try assignPositionals()
        return .command(
            ParsedCommand(
                commandPath: path,
                declaredOptions: declaredOptions,
                declaredArguments: Dictionary(command.arguments.map { ($0.name, $0) }) { first, _ in first },
                givenFlags: flags,
                optionValues: optionValues,
                argumentValues: arguments))
    }

    /// Resolves `deck help [COMMAND...]`.
    private func helpTarget(_ names: [String]) throws(ArgumentError) -> ParseResult {
        var target = root
        var targetPath = [root.name]
        for name in names where name != "-h" && name != "--help" {
            guard let next = target.subcommand(named: name) else {
                let suggestion = closestMatch(to: name, in: target.subcommands.map(\.name))
                throw ArgumentError(.unknownSubcommand(name, suggestion: suggestion), commandPath: targetPath)
            }
            target = next
            targetPath.append(name)
        }
        return .help(targetPath)
    }

    /// Handles one option token; returns a result for `--help`/`--version`, `nil` otherwise.
    private mutating func parseOption(
        _ token: String, arguments: [String], index: inout Int
    ) throws(ArgumentError) -> ParseResult? {
        if token.hasPrefix("--") {
            let body = token.dropFirst(2)
            let name: String
            let inlineValue: String?
            if let equals = body.firstIndex(of: "=") {
                name = String(body[..<equals])
                inlineValue = String(body[body.index(after: equals)...])
            } else {
                name = String(body)
                inlineValue = nil
            }
            if name == "help" || (name == "version" && isRoot) {
                if let inlineValue {
                    throw error(.flagGivenValue(flag: "--\(name)", value: inlineValue))
                }
                return name == "help" ? .help(path) : .version
            }
            guard let option = command.option(named: name) else {
                throw error(.unknownOption("--\(name)", suggestion: suggestLongOption(for: name)))
            }
            try apply(option, inlineValue: inlineValue, arguments: arguments, index: &index)
            return nil
        }

        // A cluster of short options: -q, -qv, -l 5, -l5, -ql5.
        let characters = Array(token.dropFirst())
        var position = 0
        while position < characters.count {
            let character = characters[position]
            position += 1
            if character == "h" {
                return .help(path)
            }
            guard let option = command.options.first(where: { $0.short == character }) else {
                if position == 1 && characters.count > 1 {
                    // Probably a long option written with one dash, e.g. `-json`.
                    let name = String(characters.prefix { $0 != "=" })
                    throw error(.unknownOption("-\(name)", suggestion: suggestLongOption(for: name)))
                }
                throw error(.unknownOption("-\(character)", suggestion: nil))
            }
            if option.kind == .flag {
                flags.insert(option.long)
                continue
            }
            let rest = String(characters[position...])
            try apply(option, inlineValue: rest.isEmpty ? nil : rest, arguments: arguments, index: &index)
            return nil
        }
        return nil
    }

    private func suggestLongOption(for name: String) -> String? {
        var candidates = command.options.map(\.long) + ["help"]
        if isRoot { candidates.append("version") }
        return closestMatch(to: name, in: candidates).map { "--\($0)" }
    }

    /// Records an option occurrence, taking its value inline or from the next argument.
    private mutating func apply(
        _ option: OptionSpec, inlineValue: String?, arguments: [String], index: inout Int
    ) throws(ArgumentError) {
        guard option.takesValue else {
            if let inlineValue {
                throw error(.flagGivenValue(flag: "--\(option.long)", value: inlineValue))
            }
            flags.insert(option.long)
            return
        }
        let value: String
        if let inlineValue {
            value = inlineValue
        } else if index < arguments.count && !ArgumentParser.looksLikeOption(arguments[index]) {
            value = arguments[index]
            index += 1
        } else {
            throw error(.missingValue(option: option.displayName))
        }
        try refuseEmptyPath(value, option.completion, option.displayName)
        if !option.allowedValues.isEmpty && !option.allowedValues.contains(value) {
            let list = option.allowedValues.map { "'\($0)'" }.joined(separator: ", ")
            throw error(.invalidValue(value, for: option.displayName, expected: "one of \(list)"))
        }
        if case .value = option.kind, optionValues[option.long] != nil {
            throw error(.repeatedOption(option.displayName))
        }
        optionValues[option.long, default: []].append(value)
    }

    /// An empty value where a file or directory is wanted names none (the shell passed `""`): a
    /// usage error, rather than the current directory or a file that does not exist.
    private func refuseEmptyPath(_ value: String, _ completion: CompletionHint, _ name: String)
        throws(ArgumentError)
    {
        guard value.isEmpty, completion == .file || completion == .directory else { return }
        throw error(.invalidValue(value, for: name, expected: "a path, not an empty string"))
    }

    /// Distributes the collected positional tokens over the declared arguments, in order.
    private func assignPositionals() throws(ArgumentError) -> [String: [String]] {
        var result: [String: [String]] = [:]
        var remaining = positionals[...]
        for argument in command.arguments {
            if argument.isVariadic {
                if remaining.isEmpty && !argument.isOptional {
                    throw error(.missingArgument(argument.displayName))
                }
                for value in remaining {
                    try refuseEmptyPath(value, argument.completion, argument.displayName)
                }
                result[argument.name] = Array(remaining)
                remaining = []
            } else if let first = remaining.popFirst() {
                try refuseEmptyPath(first, argument.completion, argument.displayName)
                result[argument.name] = [first]
            } else if !argument.isOptional {
                throw error(.missingArgument(argument.displayName))
            }
        }
        if let extra = remaining.first {
            throw error(.unexpectedArgument(extra))
        }
        return result
    }
}
