import DeckArguments
import DeckKit
import Foundation

/// What the shell's commands work on: the session, the lines entered so far, and whether
/// `quit` was asked for.
struct ShellContext {
    let session: Shell.Session
    var history: [String] = []
    var quitting = false
}

/// A command of the shell: like a ``DeckCommand``, but run on the shell's session.
protocol ShellCommand: ParsableCommand {
    /// Whether the command prints an exact form (`query --json` or `--csv`).
    var writesExactOutput: Bool { get }

    /// Runs the command on the session, writing to `output`.
    func run(in context: inout ShellContext, output: inout Output) throws
}

extension ShellCommand {
    var writesExactOutput: Bool { false }
}

/// The shell's command set: the data commands without their `<path>` argument, and its own.
struct ShellCommands: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "", abstract: "Commands of the deck shell.",
            subcommands: [
                ShellQuery.self, ShellInsert.self, ShellUpdate.self, ShellDelete.self, ShellShow.self,
                ShellEntities.self, ShellSchema.self, ShellSave.self, ShellUndo.self, ShellHistory.self,
                ShellQuit.self,
            ])
    }
}

/// The shell's `query`: `deck query` on the session.
struct ShellQuery: ShellCommand {
    static var configuration: CommandConfiguration { QueryCommand.configuration }
    @OptionGroup var query: QueryOptions
    var writesExactOutput: Bool { query.writesExactOutput }

    func run(in context: inout ShellContext, output: inout Output) throws {
        _ = try context.session.reading { try query.execute(on: $0, output: &output) }
    }
}

/// The shell's `insert`: `deck insert`, unsaved until `save`.
struct ShellInsert: ShellCommand {
    static var configuration: CommandConfiguration { InsertCommand.configuration }
    @OptionGroup var insert: InsertOptions

    func run(in context: inout ShellContext, output: inout Output) throws {
        insert.report(try insert.insert(on: try context.session.writing()), to: &output)
    }
}

/// The shell's `update`: `deck update`, unsaved until `save`.
struct ShellUpdate: ShellCommand {
    static var configuration: CommandConfiguration { UpdateCommand.configuration }
    @OptionGroup var update: UpdateOptions

    func run(in context: inout ShellContext, output: inout Output) throws {
        let count = try update.update(on: try context.session.writing())
        WriteReport.changed(count, verb: "Updated", entity: update.entity, json: update.json, to: &output)
    }
}

/// The shell's `delete`: `deck delete`, unsaved until `save`.
struct ShellDelete: ShellCommand {
    static var configuration: CommandConfiguration { DeleteCommand.configuration }
    @OptionGroup var delete: DeleteOptions

    func run(in context: inout ShellContext, output: inout Output) throws {
        let count = try delete.delete(on: try context.session.writing())
        WriteReport.changed(count, verb: "Deleted", entity: delete.entity, json: delete.json, to: &output)
    }
}

/// `show <entity> <id>`.
struct ShellShow: ShellCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(name: "show", abstract: "Show one record with all its values and relationships.")
    }
    @Argument("entity", help: "The entity.") var entity: String
    @Argument("id", help: "The record id.") var id: String

    func run(in context: inout ShellContext, output: inout Output) throws {
        try context.session.reading { try show(on: $0, output: &output) }
    }

    func show(on document: StoreReader, output: inout Output) throws {
        let entity = try Support.entity(named: self.entity, in: document.schema)
        guard let id = Int64(self.id.hasPrefix("#") ? String(self.id.dropFirst()) : self.id) else {
            throw UsageError("'\(self.id)' is not a record id")
        }
        guard let record = try document.record(entity.name, id: id) else {
            throw DeckError.recordNotFound(entity: entity.name, id: id)
        }
        output.write("\(record.entity) #\(record.id)\n")
        let (attributes, relationships) = document.schema.properties(of: entity.name)
        let width = (attributes.map(\.name) + relationships.map(\.name)).map(\.count).max() ?? 0
        func line(_ name: String, _ value: String) {
            output.write(
                "  \(name.padding(toLength: width, withPad: " ", startingAt: 0))  \(TerminalText.field(value))\n"
            )
        }
        for attribute in attributes { line(attribute.name, record[attribute.name].map(Support.text) ?? "") }
        for relationship in relationships {
            let ids = try document.related(record.entity, id: record.id, relationship.name)
            line(relationship.name, ids.isEmpty ? "" : ids.map { "#\($0)" }.joined(separator: ", "))
        }
    }
}

/// `entities`.
struct ShellEntities: ShellCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(name: "entities", abstract: "List the entities with their record counts.")
    }

    func run(in context: inout ShellContext, output: inout Output) throws {
        for entity in try context.session.reading({ try $0.info() }).entities {
            output.write("\(entity.name)  \(entity.records)\n")
        }
    }
}

/// `schema [<entity>]`.
struct ShellSchema: ShellCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(name: "schema", abstract: "Show the schema (of one entity).")
    }
    @Argument("entity", help: "The entity.") var entity: String?

    func run(in context: inout ShellContext, output: inout Output) throws {
        let document = context.session
        let info = try document.reading { try $0.info() }
        var text = InspectCommand.text(info, schema: document.schema, full: true)
        text = String(text[(text.range(of: "schema:\n")?.upperBound ?? text.endIndex)...])
        if let name = entity {
            guard document.schema.entity(named: name) != nil else {
                throw DeckError.unknownEntity(name, known: document.schema.entities.map(\.name))
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
        output.write(text)
    }
}

/// `save`.
struct ShellSave: ShellCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(name: "save", abstract: "Commit the unsaved changes.")
    }

    func run(in context: inout ShellContext, output: inout Output) throws {
        let had = context.session.hasChanges
        try context.session.save()
        output.write(had ? "saved\n" : "nothing to save\n")
    }
}

/// `undo`.
struct ShellUndo: ShellCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(name: "undo", abstract: "Discard the unsaved changes.")
    }

    func run(in context: inout ShellContext, output: inout Output) throws {
        let had = context.session.hasChanges
        try context.session.undo()
        output.write(had ? "unsaved changes discarded\n" : "nothing to undo\n")
    }
}

/// `history`.
struct ShellHistory: ShellCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(name: "history", abstract: "List the commands of this session.")
    }

    func run(in context: inout ShellContext, output: inout Output) throws {
        for (index, entry) in context.history.enumerated() {
            output.write("\(index + 1)  \(entry)\n")
        }
    }
}

/// `quit` (and `exit`, `.quit`, `.exit`); `quit!` and `exit!` the loop handles itself.
struct ShellQuit: ShellCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "quit", abstract: "Leave (refuses while changes are unsaved; 'quit!' drops them).")
    }

    func run(in context: inout ShellContext, output: inout Output) throws {
        context.quitting = true
    }
}
