import DeckArguments
import DeckKit
import DeckSamples
import Foundation

/// `deck new`.
enum NewCommand {
    static func run(_ command: ParsedCommand) throws -> Int32 {
        let path = try Support.requiredPositional(command, "path")
        let sample = command.value("sample")
        let schemaFile = command.value("schema")
        if sample != nil && schemaFile != nil {
            throw command.usageError("--sample and --schema cannot be combined")
        }
        var contentType = command.value("type")
        if let type = contentType, !PackageStore.isValidContentType(type) {
            throw command.usageError(
                "invalid content type '\(type)': use 1 to 255 printable ASCII characters without spaces, "
                    + "such as org.example.notes")
        }
        let schema: StoreSchema
        if let sample {
            guard sample == "flashcards" else {
                throw command.usageError("unknown sample '\(sample)'; try 'flashcards'")
            }
            schema = FlashcardsSample.schema
            contentType = contentType ?? FlashcardsSample.contentType
        } else if let schemaFile {
            schema = try loadSchema(schemaFile)
        } else {
            schema = StoreSchema(entities: [])
        }
        let document = try PackageStore.create(
            at: Support.url(path), contentType: contentType ?? PackageStore.defaultContentType,
            schema: schema)
        do {
            if sample != nil { try FlashcardsSample.populate(document) }
            try document.close()
        } catch {
            // A half-filled sample is worse than none.
            try? document.close()
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
        if command.flag("json") {
            Output.standard.write(
                JSON.object([
                    ("path", .string(document.url.path)),
                    ("contentType", .string(document.manifest.contentType)),
                    ("formatVersion", .int(Int64(document.manifest.formatVersion))),
                ]).render() + "\n")
        } else {
            Output.standard.write("Created \(document.manifest.contentType) document \(path)\n")
        }
        return 0
    }

    /// Reads a schema file: the JSON form documented in deck(1) and spec/format.md.
    static func loadSchema(_ path: String) throws -> StoreSchema {
        try StoreSchema(contentsOf: Support.url(path))
    }
}
