import DeckArguments
import DeckKit
import Foundation

/// `deck export`, `deck import`, `deck pack`, `deck unpack`.
enum SharingCommands {
    static func format(_ command: ParsedCommand) throws -> ArchiveFormat? {
        guard let name = command.value("format") else { return nil }
        guard let format = ArchiveFormat.allCases.first(where: { $0.name == name }) else {
            throw command.usageError("unknown format '\(name)'; expected zip, tar, tar.gz or tar.zst")
        }
        return format
    }

    static func output(_ command: ParsedCommand) throws -> String {
        guard let output = command.value("output") else {
            throw command.usageError("missing --output <file>")
        }
        return output
    }

    /// A byte progress bar on standard error (terminals only, not with --quiet) and its callback.
    static func progress(_ label: String, _ command: ParsedCommand) -> (ProgressBar, (Int64, Int64) -> Void) {
        let bar = ProgressBar(label: label, total: nil, unit: .bytes, quiet: command.flag("quiet"))
        return (
            bar,
            { done, total in
                bar.setTotal(total)
                bar.update(completed: done)
            }
        )
    }

    static func export(_ command: ParsedCommand) throws -> Int32 {
        let path = try Support.requiredPositional(command, "path")
        let archive = try output(command)
        let (bar, update) = progress("Exporting", command)
        defer { bar.finish() }
        try DeckDocument.export(
            at: Support.url(path), to: Support.url(archive), format: try format(command),
            overwrite: command.flag("force"), progress: update)
        report(command, "Exported \(path) to \(archive)", ["archive": archive])
        return 0
    }

    static func importArchive(_ command: ParsedCommand) throws -> Int32 {
        let archive = try Support.requiredPositional(command, "archive")
        let destination =
            command.value("output") ?? DeckDocument.defaultImportName(for: Support.url(archive))
        let (bar, update) = progress("Importing", command)
        defer { bar.finish() }
        let url = try DeckDocument.importArchive(
            at: Support.url(archive), to: Support.url(destination), progress: update)
        report(command, "Imported \(archive) as \(destination)", ["package": url.path])
        return 0
    }

    static func pack(_ command: ParsedCommand) throws -> Int32 {
        let path = try Support.requiredPositional(command, "path")
        let archive = try output(command)
        let (bar, update) = progress("Packing", command)
        defer { bar.finish() }
        try DeckDocument.pack(
            directory: Support.url(path), to: Support.url(archive), format: try format(command),
            overwrite: command.flag("force"), progress: update)
        report(command, "Packed \(path) into \(archive)", ["archive": archive])
        return 0
    }

    static func unpack(_ command: ParsedCommand) throws -> Int32 {
        let archive = try Support.requiredPositional(command, "archive")
        let destination = try output(command)
        let (bar, update) = progress("Unpacking", command)
        defer { bar.finish() }
        try DeckDocument.unpack(at: Support.url(archive), to: Support.url(destination), progress: update)
        report(command, "Unpacked \(archive) into \(destination)", ["directory": destination])
        return 0
    }

    private static func report(_ command: ParsedCommand, _ text: String, _ fields: [String: String]) {
        if command.flag("json") {
            Output.standard.write(
                JSON.object(fields.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).render()
                    + "\n")
        } else {
            Output.standard.write(text + "\n")
        }
    }
}

extension Support {
    /// Runs `body` on the document at `path` opened read-only, in one read scope; an archive
    /// file is imported into a private temporary directory first (checked and verified exactly
    /// as `deck import` does) and removed afterwards, also when the command is interrupted.
    static func withReadableDocument<T>(_ path: String, _ body: (PackageStore) throws -> T) throws -> T {
        try DeckDocument.withReadOnlyStore(at: url(path), body)
    }
}
