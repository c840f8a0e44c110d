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
            abstract:
                "Make a document from an archive, or from a Core Data or SwiftData store (checked, verified, "
                + "then moved into place).",
            discussion: """
                With --from coredata, SOURCE is the SQLite file of a Core Data or SwiftData store: \
                its schema comes from the store's own model, every record keeps its key, external \
                data becomes blob files, and what has no exact Deck form is listed. The store, its \
                -wal and -shm and its external data are read from a private copy and never changed.
                """)
    }

    @Argument(
        "source", help: "The archive, or with --from coredata the store's SQLite file.", completion: .file)
    var source: String
    @Option(
        "from", valueName: "kind", allowedValues: ["archive", "coredata"],
        help: "What SOURCE is: a package archive (the default) or a Core Data / SwiftData store.")
    var from: String?
    @Option(
        "output", short: "o", valueName: "dir", completion: .directory,
        help: "The package to create (default: named after the source, never the source itself).")
    var output: String?
    @Option(
        "content-type", valueName: "id",
        help: "The new package's content type (--from coredata only; default: the generic one).")
    var contentType: String?
    @Flag(.json) var json: Bool
    @Flag(.quiet) var quiet: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        let destination = self.output ?? DeckDocument.defaultImportName(for: Support.url(source))
        switch from ?? "archive" {
        case "coredata":
            return try importCoreData(to: destination, &output)
        case "archive":
            if contentType != nil {
                throw UsageError("--content-type applies to --from coredata (an archive keeps its own)")
            }
            if Self.isSQLite(source) {
                throw UsageError(
                    "\(source) is a SQLite database, not an archive; to import a Core Data or SwiftData "
                        + "store, add --from coredata")
            }
        default:
            throw UsageError("unknown --from '\(from ?? "")'; expected archive or coredata")
        }
        let (bar, update) = SharingCommands.progress("Importing", quiet: quiet)
        defer { bar.finish() }
        let url = try DeckDocument.importArchive(
            at: Support.url(source), to: Support.url(destination), progress: update)
        SharingCommands.report(
            "Imported \(source) as \(destination)", ["package": url.path], json: json, to: &output)
        return 0
    }

    private func importCoreData(to destination: String, _ output: inout Output) throws -> Int32 {
        let contentType = try Support.contentType(contentType) ?? PackageStore.defaultContentType
        let report = try CoreDataImport.importStore(
            at: Support.url(source), to: Support.url(destination),
            options: CoreDataImport.Options(contentType: contentType))
        if json {
            output.write(Self.json(report).render() + "\n")
            return 0
        }
        let entities = report.entities.count
        output.write(
            "Imported \(source) as \(destination): \(report.rows) record\(report.rows == 1 ? "" : "s") of "
                + "\(entities) entit\(entities == 1 ? "y" : "ies"), \(report.links) link\(report.links == 1 ? "" : "s"), "
                + "\(report.blobs) blob file\(report.blobs == 1 ? "" : "s") (\(report.blobBytes) bytes)\n")
        for entity in report.entities {
            let renamed = entity.coreDataName == entity.name ? "" : " (\(entity.coreDataName) in the store)"
            output.write("  \(entity.name)\(renamed): \(entity.rows)\n")
        }
        if !report.notes.isEmpty {
            output.write("Approximated or left out:\n")
            for note in report.notes { output.write("  \(note)\n") }
        }
        return 0
    }

    static func json(_ report: CoreDataImport.Report) -> JSON {
        func optional(_ text: String?) -> JSON { text.map { .string($0) } ?? .null }
        return .object([
            ("package", .string(report.package.path)),
            ("source", .string(report.source.path)),
            ("records", .int(Int64(report.rows))),
            ("links", .int(Int64(report.links))),
            ("blobs", .int(Int64(report.blobs))),
            ("blobBytes", .int(report.blobBytes)),
            (
                "entities",
                .array(
                    report.entities.map {
                        .object([
                            ("name", .string($0.name)), ("coreDataName", .string($0.coreDataName)),
                            ("records", .int(Int64($0.rows))),
                        ])
                    })
            ),
            (
                "notes",
                .array(
                    report.notes.map {
                        .object([
                            ("entity", optional($0.entity)), ("property", optional($0.property)),
                            ("reason", .string($0.reason)),
                        ])
                    })
            ),
        ])
    }

    /// Whether `path` is a SQLite database file (by its header), so that an archive import of a
    /// store can say what to do instead of "not an archive".
    static func isSQLite(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        return header == Data("SQLite format 3\u{0}".utf8)
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
