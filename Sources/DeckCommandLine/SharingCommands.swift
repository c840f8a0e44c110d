import DeckArguments
import DeckKit
import Foundation

/// What `deck export`, `deck import`, `deck pack` and `deck unpack` share.
enum SharingCommands {
    static func format(_ name: String?) throws -> ArchiveFormat? {
        guard let name else { return nil }
        guard let format = ArchiveFormat.allCases.first(where: { $0.name == name }) else {
            throw UsageError("unknown format '\(name)'; expected zip, tar, tar.gz or tar.zst")
        }
        return format
    }

    static func required(output: String?) throws -> String {
        guard let output else {
            throw UsageError("missing --output <file>")
        }
        return output
    }

    /// A byte progress bar on standard error (terminals only, not with --quiet) and its callback.
    static func progress(_ label: String, quiet: Bool) -> (ProgressBar, (Int64, Int64) -> Void) {
        let bar = ProgressBar(label: label, total: nil, unit: .bytes, quiet: quiet)
        return (
            bar,
            { done, total in
                bar.setTotal(total)
                bar.update(completed: done)
            }
        )
    }

    static func report(
        _ text: String, _ fields: [String: String], json: Bool, to output: inout Output
    ) {
        if json {
            output.write(
                JSON.object(fields.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).render()
                    + "\n")
        } else {
            output.write(text + "\n")
        }
    }
}

/// `deck export`.
struct ExportCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "export",
            abstract: "Write a document to a single archive file for sharing.",
            discussion: """
                Archives a consistent snapshot of the document, even while another process writes \
                to it. The same document always gives byte-identical archives. Blob files are \
                stored, the store compressed; the first entry is 'mimetype'.
                """)
    }

    @Argument(.path) var path: String
    @Option(.archiveOutput) var output: String?
    @Option(.format) var format: String?
    @Flag(.force) var force: Bool
    @Flag(.json) var json: Bool
    @Flag(.quiet) var quiet: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        let archive = try SharingCommands.required(output: self.output)
        let (bar, update) = SharingCommands.progress("Exporting", quiet: quiet)
        defer { bar.finish() }
        try DeckDocument.export(
            at: Support.url(path), to: Support.url(archive), format: try SharingCommands.format(format),
            overwrite: force, progress: update)
        SharingCommands.report(
            "Exported \(path) to \(archive)", ["archive": archive], json: json, to: &output)
        return 0
    }
}

/// `deck import`.
struct ImportCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "import",
            abstract: "Make a document from an archive (checked, verified, then moved into place).")
    }

    @Argument(.archive) var archive: String
    @Option(
        "output", short: "o", valueName: "dir", completion: .directory,
        help: "The package to create (default: named after the archive, never the archive itself).")
    var output: String?
    @Flag(.json) var json: Bool
    @Flag(.quiet) var quiet: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        let destination = self.output ?? DeckDocument.defaultImportName(for: Support.url(archive))
        let (bar, update) = SharingCommands.progress("Importing", quiet: quiet)
        defer { bar.finish() }
        let url = try DeckDocument.importArchive(
            at: Support.url(archive), to: Support.url(destination), progress: update)
        SharingCommands.report(
            "Imported \(archive) as \(destination)", ["package": url.path], json: json, to: &output)
        return 0
    }
}

/// `deck pack`.
struct PackCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "pack",
            abstract: "Archive a package directory as it is on disk (refused while a writer has it open).")
    }

    @Argument(.path) var path: String
    @Option(.archiveOutput) var output: String?
    @Option(.format) var format: String?
    @Flag(.force) var force: Bool
    @Flag(.json) var json: Bool
    @Flag(.quiet) var quiet: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        let archive = try SharingCommands.required(output: self.output)
        let (bar, update) = SharingCommands.progress("Packing", quiet: quiet)
        defer { bar.finish() }
        try DeckDocument.pack(
            directory: Support.url(path), to: Support.url(archive),
            format: try SharingCommands.format(format),
            overwrite: force, progress: update)
        SharingCommands.report(
            "Packed \(path) into \(archive)", ["archive": archive], json: json, to: &output)
        return 0
    }
}

/// `deck unpack`.
struct UnpackCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "unpack",
            abstract: "Unpack an archive into a new directory safely, checking every blob's digest.")
    }

    @Argument(.archive) var archive: String
    @Option("output", short: "o", valueName: "dir", completion: .directory, help: "The directory to create.")
    var output: String?
    @Flag(.json) var json: Bool
    @Flag(.quiet) var quiet: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        let destination = try SharingCommands.required(output: self.output)
        let (bar, update) = SharingCommands.progress("Unpacking", quiet: quiet)
        defer { bar.finish() }
        try DeckDocument.unpack(at: Support.url(archive), to: Support.url(destination), progress: update)
        SharingCommands.report(
            "Unpacked \(archive) into \(destination)", ["directory": destination], json: json, to: &output)
        return 0
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
