import DeckArguments
import DeckKit
import DeckQueryLanguage
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
        var output = Output()
        let result: ParseResult
        do {
            result = try ArgumentParser.parse(arguments, root: Deck.spec)
        } catch {
            output.error(HelpFormatter.errorReport(for: error, root: Deck.spec))
            return ExitStatus.usage
        }
        switch result {
        case .help(let path):
            output.write(HelpFormatter.help(for: path, root: Deck.spec) + "\n")
            output.flush()
            return ExitStatus.ok
        case .version:
            output.write("deck \(version)\n")
            output.flush()
            return ExitStatus.ok
        case .command(let parsed):
            defer { output.flush() }
            do {
                guard let command = try Deck.command(for: parsed) as? any DeckCommand else {
                    output.write(HelpFormatter.help(for: parsed.commandPath, root: Deck.spec) + "\n")
                    return ExitStatus.ok
                }
                output.escapesText = !command.writesExactOutput
                return try command.run(&output)
            } catch {
                output.flush()
                return report(error, of: parsed.commandPath, to: output)
            }
        }
    }

    /// Writes a command's error to standard error; returns the exit status it means.
    static func report(_ error: any Error, of commandPath: [String], to output: borrowing Output) -> Int32 {
        switch error {
        case let error as DeckError:
            let style = TerminalStyle.standardError
            // One line: a line break quoted from a package must not start a line of its own.
            var line = TerminalLine("deck:", style: style.bold)
            line.append(" ")
            line.append(TerminalText.field(error.message), style: style.red)
            output.error(line)
            if let hint = hint(for: error) {
                output.error(TerminalLine("hint: \(hint)", style: style.dim))
            }
            return error.exitStatus
        case let error as ArgumentError:
            output.error(HelpFormatter.errorReport(for: error, root: Deck.spec))
            return ExitStatus.usage
        case let error as UsageError:
            output.error(
                HelpFormatter.errorReport(for: error.argumentError(commandPath: commandPath), root: Deck.spec)
            )
            return ExitStatus.usage
        case let error as OptionSyntaxError:
            output.error("deck: \(error.option): \(error.error.description)\n\(error.error.caret)")
            return ExitStatus.usage
        case let error as QuerySyntaxError:
            output.error("deck: \(error.description)\n\(error.caret)")
            return ExitStatus.usage
        default:
            output.error("deck: \(error)")
            return ExitStatus.failure
        }
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
