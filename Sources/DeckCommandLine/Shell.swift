import DeckArguments
import DeckKit
import Foundation

/// `deck open --shell`: an interactive session in the sqlite3 tradition.
///
/// Each line is one command, split like a shell line (quotes and backslashes work). Changes
/// stay unsaved until `save`; `undo` discards them; `quit` refuses to drop unsaved changes
/// unless told `quit!`.
enum Shell {
    /// The shell's own commands: the data commands without their `<path>` argument.
    static let root: CommandSpec = {
        func withoutPath(_ spec: CommandSpec) -> CommandSpec {
            var copy = spec
            copy.arguments.removeAll { $0.name == "path" }
            return copy
        }
        let entity = ArgumentSpec("entity", help: "The entity.")
        return CommandSpec(
            name: "",
            abstract: "Commands of the deck shell.",
            subcommands: [
                withoutPath(Commands.query), withoutPath(Commands.insert), withoutPath(Commands.update),
                withoutPath(Commands.delete),
                CommandSpec(
                    name: "show", abstract: "Show one record with all its values and relationships.",
                    arguments: [entity, ArgumentSpec("id", help: "The record id.")]),
                CommandSpec(name: "entities", abstract: "List the entities with their record counts."),
                CommandSpec(
                    name: "schema", abstract: "Show the schema (of one entity).",
                    arguments: [ArgumentSpec("entity", help: "The entity.", isOptional: true)]),
                CommandSpec(name: "save", abstract: "Commit the unsaved changes."),
                CommandSpec(name: "undo", abstract: "Discard the unsaved changes."),
                CommandSpec(name: "history", abstract: "List the commands of this session."),
                CommandSpec(
                    name: "quit", abstract: "Leave (refuses while changes are unsaved; 'quit!' drops them)."),
            ])
    }()

    static func run(path: String) throws -> Int32 {
        let (store, note) = try openForShell(URL(fileURLWithPath: path))
        let document = try Session(store: store)
        defer { document.close() }
        let interactive = StandardStreams.isTerminal(0)
        if interactive {
            Output.standard.write(
                "deck \(DeckCommandLine.version) — \(store.manifest.contentType) document \(path)\(note)\n"
                    + "Enter 'help' for commands, 'quit' to leave.\n")
        }
        var history: [String] = []
        var status: Int32 = 0
        while true {
            if interactive {
                Output.standard.write(document.hasChanges ? "deck*> " : "deck> ")
            }
            Output.standard.flush()
            guard let line = readLine(strippingNewline: true) else { break }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("--") { continue }
            history.append(trimmed)
            let words: [String]
            do {
                words = try split(trimmed)
            } catch {
                Output.error("error: \(error.message)")
                status = 1
                continue
            }
            guard let verb = words.first else { continue }
            switch verb {
            case "quit", "exit", ".quit", ".exit":
                if document.hasChanges {
                    Output.error(
                        "error: there are unsaved changes; 'save' them, 'undo' them, or 'quit!' to drop them")
                    status = 1
                    continue
                }
                return status
            case "quit!", "exit!":
                return status
            case "help", ".help", "?":
                let topic = Array(words.dropFirst())
                Output.standard.write(HelpFormatter.help(for: [""] + topic, root: root) + "\n")
                continue
            case "history":
                for (index, entry) in history.enumerated() {
                    Output.standard.write("\(index + 1)  \(entry)\n")
                }
                continue
            default:
                break
            }
            do {
                try execute(words, on: document)
            } catch {
                Output.standard.flush()
                Output.error(describe(error))
                status = 1
            }
        }
        if document.hasChanges {
            Output.error("deck: end of input with unsaved changes; they were discarded")
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

    static func execute(_ words: [String], on document: Session) throws {
        let command: ParsedCommand
        switch try ArgumentParser.parse(words, root: root) {
        case .help(let path):
            Output.standard.write(HelpFormatter.help(for: path, root: root) + "\n")
            return
        case .version:
            Output.standard.write("deck \(DeckCommandLine.version)\n")
            return
        case .command(let parsed):
            command = parsed
        }
        // `query --json` and `--csv` are exact in the shell too; everything else is text.
        Output.standard.escapesText = !DeckCommandLine.writesExactOutput(command)
        defer { Output.standard.escapesText = true }
        switch command.subcommandPath {
        case ["query"]: _ = try document.reading { try QueryCommand.execute(command, on: $0) }
        case ["insert"]:
            WriteCommands.report(
                inserted: try WriteCommands.insert(command, on: try document.writing()), command)
        case ["update"]:
            let count = try WriteCommands.update(command, on: try document.writing())
            WriteCommands.report(command, verb: "Updated", count: count)
        case ["delete"]:
            let count = try WriteCommands.delete(command, on: try document.writing())
            WriteCommands.report(command, verb: "Deleted", count: count)
        case ["show"]: try document.reading { try show(command, on: $0) }
        case ["entities"]:
            for entity in try document.reading({ try $0.info() }).entities {
                Output.standard.write("\(entity.name)  \(entity.records)\n")
            }
        case ["schema"]:
            let info = try document.reading { try $0.info() }
            var text = InspectCommand.text(info, schema: document.schema, full: true)
            text = String(text[(text.range(of: "schema:\n")?.upperBound ?? text.endIndex)...])
            if let name = command.positional("entity") {
                guard document.schema.entity(named: name) != nil else {
                    throw DeckError.unknownEntity(
                        name, known: document.schema.entities.map(\.name))
                }
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
                var keep = false
                text = ""
                for line in lines {
                    if !line.hasPrefix("    ") {
                        let header = line.trimmingCharacters(in: .whitespaces)
                        keep = header == name || header.hasPrefix(name + " :")
                    }
                    if keep { text += line + "\n" }
                }
            }
            Output.standard.write(text)
        case ["save"]:
            let had = document.hasChanges
            try document.save()
            Output.standard.write(had ? "saved\n" : "nothing to save\n")
        case ["undo"]:
            let had = document.hasChanges
            try document.undo()
            Output.standard.write(had ? "unsaved changes discarded\n" : "nothing to undo\n")
        default:
            Output.standard.write(HelpFormatter.help(for: [""], root: root) + "\n")
        }
    }

    static func show(_ command: ParsedCommand, on document: StoreReader) throws {
        let entity = try Support.entity(command, in: document.schema)
        let text = command.positional("id") ?? ""
        guard let id = Int64(text.hasPrefix("#") ? String(text.dropFirst()) : text) else {
            throw command.usageError("'\(text)' is not a record id")
        }
        guard let record = try document.record(entity.name, id: id) else {
            throw DeckError.recordNotFound(entity: entity.name, id: id)
        }
        Output.standard.write("\(record.entity) #\(record.id)\n")
        let (attributes, relationships) = document.schema.properties(of: entity.name)
        let width = (attributes.map(\.name) + relationships.map(\.name)).map(\.count).max() ?? 0
        func line(_ name: String, _ value: String) {
            Output.standard.write(
                "  \(name.padding(toLength: width, withPad: " ", startingAt: 0))  \(TerminalText.field(value))\n"
            )
        }
        for attribute in attributes { line(attribute.name, record[attribute.name].map(Support.text) ?? "") }
        for relationship in relationships {
            let ids = try document.related(record.entity, id: record.id, relationship.name)
            line(relationship.name, ids.isEmpty ? "" : ids.map { "#\($0)" }.joined(separator: ", "))
        }
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as ArgumentError:
            "error: \(error)"
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
