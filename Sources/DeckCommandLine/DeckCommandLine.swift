import DeckArguments
import DeckKit
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The `deck` tool: parses the command line, runs one command, maps errors to exit statuses.
public enum DeckCommandLine {
    /// The tool's version (the library's).
    public static let version = DeckLibrary.version

    /// Runs `deck` with the process's arguments and exits.
    public static func main() -> Never {
        signal(SIGPIPE, SIG_IGN)
        Signals.install()
        exit(run(Array(CommandLine.arguments.dropFirst())))
    }

    /// Runs one `deck` command line (without the program name) and returns the exit status.
    public static func run(_ arguments: [String]) -> Int32 {
        let result: ParseResult
        do {
            result = try ArgumentParser.parse(arguments, root: Commands.root)
        } catch {
            Output.error(HelpFormatter.errorReport(for: error, root: Commands.root))
            return ExitStatus.usage
        }
        switch result {
        case .help(let path):
            Output.standard.write(HelpFormatter.help(for: path, root: Commands.root) + "\n")
            Output.standard.flush()
            return ExitStatus.ok
        case .version:
            Output.standard.write("deck \(version)\n")
            Output.standard.flush()
            return ExitStatus.ok
        case .command(let command):
            defer { Output.standard.flush() }
            Output.standard.escapesText = !writesExactOutput(command)
            do {
                return try dispatch(command)
            } catch let error as DeckError {
                Output.standard.flush()
                let style = TerminalStyle.standardError
                // One line: a line break quoted from a package must not start a line of its own.
                var line = TerminalLine("deck:", style: style.bold)
                line.append(" ")
                line.append(TerminalText.field(error.message), style: style.red)
                Output.error(line)
                if let hint = hint(for: error) {
                    Output.error(TerminalLine("hint: \(hint)", style: style.dim))
                }
                return error.exitStatus
            } catch let error as ArgumentError {
                Output.standard.flush()
                Output.error(HelpFormatter.errorReport(for: error, root: Commands.root))
                return ExitStatus.usage
            } catch let error as OptionSyntaxError {
                Output.standard.flush()
                Output.error("deck: \(error.option): \(error.error.description)\n\(error.error.caret)")
                return ExitStatus.usage
            } catch let error as QuerySyntaxError {
                Output.standard.flush()
                Output.error("deck: \(error.description)\n\(error.caret)")
                return ExitStatus.usage
            } catch let error as CommandFailure {
                Output.standard.flush()
                Output.error("deck: \(error.message)")
                return error.status
            } catch {
                Output.standard.flush()
                Output.error("deck: \(error)")
                return ExitStatus.failure
            }
        }
    }

    /// Whether `command` prints an exact form (`--json`, `--csv`, a completion script), whose
    /// characters are never escaped for the terminal (JSON escapes control characters itself).
    static func writesExactOutput(_ command: ParsedCommand) -> Bool {
        if command.subcommandPath == ["completions"] { return true }
        return ["json", "csv"].contains { command.declares($0) && command.flag($0) }
    }

    static func dispatch(_ command: ParsedCommand) throws -> Int32 {
        switch command.subcommandPath {
        case ["new"]: return try NewCommand.run(command)
        case ["open"]:
            if command.flag("shell") {
                return try Shell.run(path: try Support.requiredPositional(command, "path"))
            }
            return try InspectCommand.run(command, full: false)
        case ["inspect"]: return try InspectCommand.run(command, full: true)
        case ["verify"]: return try VerifyCommand.run(command)
        case ["lint"]: return try LintCommand.run(command)
        case ["gc"]: return try GCCommand.run(command)
        case ["query"]: return try QueryCommand.run(command)
        case ["insert"]: return try WriteCommands.insert(command)
        case ["update"]: return try WriteCommands.update(command)
        case ["delete"]: return try WriteCommands.delete(command)
        case ["blob", "get"]: return try BlobCommand.get(command)
        case ["export"]: return try SharingCommands.export(command)
        case ["import"]: return try SharingCommands.importArchive(command)
        case ["pack"]: return try SharingCommands.pack(command)
        case ["unpack"]: return try SharingCommands.unpack(command)
        case ["diff-schema"]: return try DiffSchemaCommand.run(command)
        case ["compat"]: return try CompatCommand.run(command)
        case ["migrate"]: return try MigrateCommand.run(command)
        case ["completions"]: return try completions(command)
        default:
            Output.standard.write(HelpFormatter.help(for: command.commandPath, root: Commands.root) + "\n")
            return ExitStatus.ok
        }
    }

    static func completions(_ command: ParsedCommand) throws -> Int32 {
        let name = command.positional("shell") ?? ""
        guard let shell = CompletionShell(rawValue: name) else {
            throw command.usageError("unknown shell '\(name)'; expected bash, zsh or fish")
        }
        Output.standard.write(CompletionScript.generate(for: Commands.root, shell: shell))
        return ExitStatus.ok
    }

    /// A line of advice for errors where the fix is not obvious from the message.
    static func hint(for error: DeckError) -> String? {
        switch error {
        case .notAPackage(let path, _) where path.lowercased().hasSuffix(".zip"):
            "make a package from an archive with 'deck import'"
        case .locked: "only one process may write a document at a time; readers (query, inspect) still work"
        case .tooNew: "this package was written by a newer Deck"
        default: nil
        }
    }
}

/// A syntax error in the value of an option (`--where`, `--sort`), labelled with the option.
struct OptionSyntaxError: Error {
    let option: String
    let error: QuerySyntaxError
}

/// A command's own failure with a chosen exit status.
struct CommandFailure: Error {
    let message: String
    let status: Int32
}
