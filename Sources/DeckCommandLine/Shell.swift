import DeckArguments
import DeckKit
import DeckQueryLanguage
import Foundation

/// `deck open --shell`: an interactive session in the sqlite3 tradition.
///
/// Each line is one command, split like a shell line (quotes and backslashes work). Changes
/// stay unsaved until `save`; `undo` discards them; `quit` refuses to drop unsaved changes
/// unless told `quit!`.
enum Shell {
    /// The shell's own command set, as help and the parser read it.
    static let spec = ShellCommands.commandSpec()

    static func run(path: String, output: inout Output) throws -> Int32 {
        let (store, note) = try openForShell(URL(fileURLWithPath: path))
        var context = ShellContext(session: try Session(store: store))
        defer { context.session.close() }
        let interactive = StandardStreams.isTerminal(0)
        if interactive {
            output.write(
                "deck \(DeckCommandLine.version) — \(store.manifest.contentType) document \(path)\(note)\n"
                    + "Enter 'help' for commands, 'quit' to leave.\n")
        }
        var status: Int32 = 0
        while true {
            if interactive {
                output.write(context.session.hasChanges ? "deck*> " : "deck> ")
            }
            output.flush()
            guard let line = readLine(strippingNewline: true) else { break }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("--") { continue }
            context.history.append(trimmed)
            var words: [String]
            do {
                words = try split(trimmed)
            } catch {
                output.error("error: \(error.message)")
                status = 1
                continue
            }
            guard let verb = words.first else { continue }
            switch verb {
            case "quit", "exit", ".quit", ".exit": words = ["quit"]
            case "quit!", "exit!": return status
            case "help", ".help", "?":
                let topic = Array(words.dropFirst())
                output.write(HelpFormatter.help(for: [""] + topic, root: spec) + "\n")
                continue
            case "history": words = ["history"]
            default: break
            }
            do {
                try execute(words, in: &context, output: &output)
            } catch {
                output.flush()
                output.error(describe(error))
                status = 1
            }
            if context.quitting {
                context.quitting = false
                if context.session.hasChanges {
                    output.error(
                        "error: there are unsaved changes; 'save' them, 'undo' them, or 'quit!' to drop them")
                    status = 1
                    continue
                }
                return status
            }
        }
        if context.session.hasChanges {
            output.error("deck: end of input with unsaved changes; they were discarded")
            return 1
        }
        return status
    }

    /// Opens for writing when possible, else read-only with a note saying why.
    static func openForShell(_ url: URL) throws -> (PackageStore, String) {
        do {
            return (try PackageStore.open(at: url, mode: .readWrite), "")
        } catch {
            switch error {
            case .locked(_, let pid):
                let holder = pid.map { "pid \($0)" } ?? "another process"
                return (try PackageStore.open(at: url, mode: .readOnly), " (read-only: locked by \(holder))")
            case .permissionDenied:
                return (try PackageStore.open(at: url, mode: .readOnly), " (read-only: no write permission)")
            default:
                throw error
            }
        }
    }

    /// The shell's hold on its document: for a writable one, one long transaction that `save`
    /// commits and `undo` rolls back (a new one begins after each); for a read-only one, a read
    /// scope per command.
    final class Session {
        let store: PackageStore
        private var transaction: StoreTransaction?

        init(store: PackageStore) throws {
            self.store = store
            if store.mode == .readWrite { transaction = try store.beginTransaction() }
        }

        var schema: StoreSchema { store.schema }

        /// Whether there are changes that `save` would commit.
        var hasChanges: Bool { transaction?.hasChanges ?? false }

        /// Runs `body` on what the session sees: its own transaction, or a committed snapshot.
        func reading<T>(_ body: (StoreReader) throws -> T) throws -> T {
            if let transaction { return try body(transaction) }
            return try store.read(body)
        }

        /// The session's transaction, for changes.
        func writing() throws -> StoreTransaction {
            guard let transaction else { throw DeckError.readOnly(path: store.url.path) }
            return transaction
        }

        func save() throws {
            guard let transaction else { throw DeckError.readOnly(path: store.url.path) }
            try transaction.commit()
            self.transaction = try store.beginTransaction()
        }

        func undo() throws {
            guard let transaction else { return }
            transaction.rollback()
            self.transaction = try store.beginTransaction()
        }

        /// Ends the session, dropping what was not saved (the caller has asked).
        func close() {
            transaction?.rollback()
            transaction = nil
            try? store.close()
        }
    }

    /// Parses one line against the shell's commands and runs it.
    static func execute(_ words: [String], in context: inout ShellContext, output: inout Output) throws {
        let parsed: ParsedCommand
        switch try ArgumentParser.parse(words, root: spec) {
        case .help(let path):
            output.write(HelpFormatter.help(for: path, root: spec) + "\n")
            return
        case .version:
            output.write("deck \(DeckCommandLine.version)\n")
            return
        case .command(let command):
            parsed = command
        }
        guard let command = try ShellCommands.command(for: parsed) as? any ShellCommand else {
            output.write(HelpFormatter.help(for: [""], root: spec) + "\n")
            return
        }
        // `query --json` and `--csv` are exact in the shell too; everything else is text.
        output.escapesText = !command.writesExactOutput
        defer { output.escapesText = true }
        try command.run(in: &context, output: &output)
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as ArgumentError:
            "error: \(error)"
        case let error as UsageError:
            "error: \(error.message)"
        case let error as OptionSyntaxError:
            "error: \(error.option): \(error.error.description)\n\(error.error.caret)"
        case let error as QuerySyntaxError:
            "error: \(error.description)\n\(error.caret)"
        case let error as DeckError:
            "error: " + TerminalText.field(error.message)
        default:
            "error: \(error)"
        }
    }

    struct SplitError: Error {
        let message: String
    }

    /// Splits a line into words: spaces separate, quotes group, a backslash escapes the next character.
    static func split(_ line: String) throws(SplitError) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for c in line {
            if escaped {
                current.append(c)
                escaped = false
                continue
            }
            if c == "\\" && quote != "'" {
                escaped = true
                inWord = true
                continue
            }
            if let q = quote {
                if c == q { quote = nil } else { current.append(c) }
                continue
            }
            if c == "'" || c == "\"" {
                quote = c
                inWord = true
            } else if c == " " || c == "\t" {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else {
                current.append(c)
                inWord = true
            }
        }
        if quote != nil { throw SplitError(message: "unterminated quote") }
        if escaped { throw SplitError(message: "a backslash ends the line") }
        if inWord { words.append(current) }
        return words
    }
}
