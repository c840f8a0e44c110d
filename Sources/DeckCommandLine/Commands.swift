import DeckArguments
import DeckKit

/// A `deck` command: its name and help (``DeckArguments/ParsableCommand/configuration``), its
/// options and arguments (its ``DeckArguments/Flag``, ``DeckArguments/Option`` and
/// ``DeckArguments/Argument`` properties) and the code it runs, in one type. ``Deck`` lists
/// them; help, the completion scripts and dispatch all read that list.
protocol DeckCommand: ParsableCommand {
    /// Whether the command prints an exact form (`--json`, `--csv`, a completion script), whose
    /// characters are never escaped for the terminal (JSON escapes control characters itself).
    var writesExactOutput: Bool { get }

    /// Runs the command, writing to `output`; returns the exit status.
    func run(_ output: inout Output) throws -> Int32
}

extension DeckCommand {
    var writesExactOutput: Bool { false }
}

/// The `deck` command tree: the root, whose subcommands are the table of commands.
struct Deck: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "deck",
            abstract: "Create, inspect, verify and change Deck document packages.",
            discussion: """
                A Deck package is a directory holding a manifest, a SQLite store and \
                content-addressed blob files. Every package describes its own schema, so deck \
                works on any package without the app that made it.
                """,
            subcommands: [
                NewCommand.self, OpenCommand.self, InspectCommand.self, VerifyCommand.self, LintCommand.self,
                GCCommand.self, QueryCommand.self, InsertCommand.self, UpdateCommand.self, DeleteCommand.self,
                Blob.self, ExportCommand.self, ImportCommand.self, PackCommand.self, UnpackCommand.self,
                DiffCommand.self, MergeCommand.self, LogCommand.self, DiffSchemaCommand.self,
                MigrateCommand.self,
                CompatCommand.self,
                CompletionsCommand.self,
            ],
            examples: [
                CommandExample(
                    "Make the sample flash-cards deck", command: "deck new Spanish.deck --sample flashcards"),
                CommandExample("List its cards", command: "deck query Spanish.deck Card --sort front"),
            ])
    }

    /// The tree as the parser, help and completion scripts read it.
    static let spec = Deck.commandSpec()
}

/// `deck blob`: a group of commands.
struct Blob: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "blob", abstract: "Work with blob files.", subcommands: [BlobGetCommand.self])
    }
}

/// `deck completions`.
struct CompletionsCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "completions", abstract: "Print a shell completion script.",
            discussion: "Example: deck completions bash > /etc/bash_completion.d/deck")
    }

    @Argument("shell", help: "bash, zsh or fish.", completion: .values(["bash", "zsh", "fish"]))
    var shell: String

    var writesExactOutput: Bool { true }

    func run(_ output: inout Output) throws -> Int32 {
        guard let shell = CompletionShell(rawValue: shell) else {
            throw UsageError("unknown shell '\(shell)'; expected bash, zsh or fish")
        }
        output.write(CompletionScript.generate(for: Deck.spec, shell: shell))
        return ExitStatus.ok
    }
}

// The options and arguments several commands share.

extension Argument where Value == String {
    static var path: Self {
        Self(
            "path", help: "The package directory (or, for reading commands, a package archive).",
            completion: .file)
    }
    static var entity: Self { Self("entity", help: "The entity (record type), e.g. Card.") }
    static var archive: Self {
        Self("archive", help: "A package archive (zip, tar, tar.gz, tar.zst).", completion: .file)
    }
}

extension Argument where Value == [String] {
    static var assignments: Self {
        Self(
            "assignment",
            help: "key=value; key=@FILE reads a data attribute from FILE; a relationship takes #id or #1,#2.",
            isOptional: true)
    }
}

extension Flag {
    static var json: Flag {
        Flag("json", help: "Print JSON (stable, documented in deck(1)) instead of text.")
    }
    static var quiet: Flag { Flag("quiet", short: "q", help: "Print no progress bar.") }
    static var force: Flag { Flag("force", help: "Replace an existing archive (only ever a regular file).") }
}

extension Option where Value == String? {
    static var condition: Self {
        Self(
            "where", short: "w", valueName: "expr",
            help: "Only records matching EXPR, e.g. \"front contains 'ho'\".")
    }
    static var format: Self {
        Self(
            "format", short: "f", valueName: "format", allowedValues: ["zip", "tar", "tar.gz", "tar.zst"],
            help: "The archive format (default: from the file name, else zip).")
    }
    static var archiveOutput: Self {
        Self("output", short: "o", valueName: "file", completion: .file, help: "The archive to write.")
    }
}

extension Option where Value == [String] {
    static var nulls: Self { Self("null", valueName: "key", help: "Set KEY to null.") }
}
