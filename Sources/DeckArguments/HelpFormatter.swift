/// Renders help text, usage lines and error reports for a ``CommandSpec`` tree, in the style of
/// swift-argument-parser.
///
/// All results are returned without a trailing newline; print them with `print` or
/// ``StandardStreams/printError(_:)``.
public enum HelpFormatter {
    /// The column width help text is wrapped to.
    public static let width = 80
    /// The column at which option, argument and subcommand descriptions start.
    static let descriptionColumn = 26

    /// The full help for the command at `path` (e.g. `["deck", "query"]`), with sections
    /// `OVERVIEW:`, `USAGE:`, `ARGUMENTS:`, `OPTIONS:`, `SUBCOMMANDS:` and `EXAMPLES:` as applicable.
    ///
    /// An unknown path falls back to the longest known prefix.
    public static func help(for path: [String], root: CommandSpec) -> String {
        let (command, commandPath) = resolve(path, root: root)
        let isRoot = commandPath.count == 1
        var lines: [String] = []

        if !command.abstract.isEmpty {
            lines += TextWrapping.wrap(
                words: TextWrapping.splitWords(command.abstract), width: width, firstPrefix: "OVERVIEW: ",
                continuationPrefix: String(repeating: " ", count: "OVERVIEW: ".count))
            lines.append("")
        }
        if let discussion = command.discussion, !discussion.isEmpty {
            lines += TextWrapping.paragraphs(discussion, width: width, indent: 0)
            lines.append("")
        }

        // A root without a name (the interactive shell's command set) is left out of the usage.
        let pathText = commandPath.filter { !$0.isEmpty }.joined(separator: " ")
        let firstPrefix = pathText.isEmpty ? "USAGE: " : "USAGE: \(pathText) "
        let continuation = String(repeating: " ", count: firstPrefix.count <= 40 ? firstPrefix.count : 9)
        lines += TextWrapping.wrap(
            words: usageUnits(for: command), width: width, firstPrefix: firstPrefix,
            continuationPrefix: continuation)

        if !command.arguments.isEmpty {
            lines += ["", "ARGUMENTS:"]
            for argument in command.arguments {
                let label = argument.displayName + (argument.isVariadic ? " ..." : "")
                lines += row(label: label, text: argument.help)
            }
        }

        lines += ["", "OPTIONS:"]
        for option in command.options {
            lines += row(label: optionLabel(option), text: optionHelp(option))
        }
        if isRoot && !root.name.isEmpty {
            lines += row(label: "--version", text: "Show the version.")
        }
        lines += row(label: "-h, --help", text: "Show help information.")

        if !command.subcommands.isEmpty {
            lines += ["", "SUBCOMMANDS:"]
            for subcommand in command.subcommands {
                lines += row(label: subcommand.name, text: subcommand.abstract)
            }
        }

        if !command.examples.isEmpty {
            lines += ["", "EXAMPLES:"]
            for (index, example) in command.examples.enumerated() {
                if index > 0 { lines.append("") }
                lines += TextWrapping.wrap(example.description, width: width, indent: 2)
                lines.append("    " + example.command)
            }
        }

        if !command.subcommands.isEmpty {
            let helpPath = ([root.name, "help"] + commandPath.dropFirst()).filter { !$0.isEmpty }.joined(
                separator: " ")
            lines += ["", "  See '\(helpPath) <subcommand>' for detailed help."]
        }
        return lines.joined(separator: "\n")
    }

    /// A one-line usage string, e.g. `Usage: deck query <path> <entity> [--where <expr>] [--json]`.
    public static func usage(for path: [String], root: CommandSpec) -> String {
        let (command, commandPath) = resolve(path, root: root)
        return (["Usage:"] + commandPath + usageUnits(for: command)).joined(separator: " ")
    }

    /// The standard three-line error report for a usage error:
    ///
    /// ```
    /// Error: Unknown option '--jsno'. Did you mean '--json'?
    /// Usage: deck query <path> <entity> [--json]
    ///   See 'deck query --help' for more information.
    /// ```
    public static func errorReport(for error: ArgumentError, root: CommandSpec) -> String {
        let (_, commandPath) = resolve(error.commandPath, root: root)
        return [
            "Error: \(error.description)",
            usage(for: commandPath, root: root),
            "  See '\(commandPath.joined(separator: " ")) --help' for more information.",
        ].joined(separator: "\n")
    }

    /// The command at the longest resolvable prefix of `path`, and that prefix.
    private static func resolve(_ path: [String], root: CommandSpec) -> (CommandSpec, [String]) {
        var command = root
        var resolved = [root.name]
        for name in path.dropFirst() {
            guard let next = command.subcommand(named: name) else { break }
            command = next
            resolved.append(name)
        }
        return (command, resolved)
    }

    /// The usage tokens after the command path: positional arguments, then options, then `<subcommand>`.
    static func usageUnits(for command: CommandSpec) -> [String] {
        var units = command.arguments.map(argumentUsage)
        for option in command.options {
            if case .repeatable = option.kind {
                units.append("[\(option.displayName) ...]")
            } else {
                units.append("[\(option.displayName)]")
            }
        }
        if !command.subcommands.isEmpty {
            units.append("<subcommand>")
        }
        return units
    }

    /// `<path>`, `[<path>]`, `<assignment> ...` or `[<assignment> ...]`.
    static func argumentUsage(_ argument: ArgumentSpec) -> String {
        let base = argument.displayName + (argument.isVariadic ? " ..." : "")
        return argument.isOptional ? "[\(base)]" : base
    }

    /// `-l, --limit <n>` or `--json`.
    static func optionLabel(_ option: OptionSpec) -> String {
        guard let short = option.short else { return option.displayName }
        return "-\(short), \(option.displayName)"
    }

    /// The help text with allowed values and repeatability appended.
    static func optionHelp(_ option: OptionSpec) -> String {
        var text = option.help
        if !option.allowedValues.isEmpty {
            text += " (values: \(option.allowedValues.joined(separator: ", ")))"
        }
        if case .repeatable = option.kind {
            text += " (may be repeated)"
        }
        return text
    }

    private static func row(label: String, text: String) -> [String] {
        TextWrapping.row(label: label, text: text, indent: 2, column: descriptionColumn, width: width)
    }
}
