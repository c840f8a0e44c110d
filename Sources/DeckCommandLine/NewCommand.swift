import DeckArguments
import DeckKit
import DeckSamples
import Foundation

/// `deck new`.
struct NewCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "new",
            abstract: "Create a new document package.",
            discussion: """
                Creates an empty document of a content type, one made from a schema file (JSON, \
                see deck(1)), or the bundled flash-cards sample. The package is built under a \
                temporary name and renamed into place; an existing path is never replaced.
                """)
    }

    @Argument("path", help: "Where to create the package.", completion: .directory) var path: String
    @Option("type", valueName: "id", help: "The content type, e.g. org.example.notes.") var type: String?
    @Option(
        "schema", valueName: "file", completion: .file, help: "A schema file (JSON) to create the store from."
    )
    var schemaFile: String?
    @Option(
        "sample", valueName: "name", allowedValues: ["flashcards"], help: "Create a bundled sample document.")
    var sample: String?
    @Flag(.json) var json: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        if sample != nil && schemaFile != nil {
            throw UsageError("--sample and --schema cannot be combined")
        }
        var contentType = try Support.contentType(type)
        let schema: StoreSchema
        if let sample {
            guard sample == "flashcards" else {
                throw UsageError("unknown sample '\(sample)'; try 'flashcards'")
            }
            schema = FlashcardsSample.schema
            contentType = contentType ?? FlashcardsSample.contentType
        } else if let schemaFile {
            schema = try Self.loadSchema(schemaFile)
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
        if json {
            output.write(
                JSON.object([
                    ("path", .string(document.url.path)),
                    ("contentType", .string(document.manifest.contentType)),
                    ("formatVersion", .int(Int64(document.manifest.formatVersion))),
                ]).render() + "\n")
        } else {
            output.write("Created \(document.manifest.contentType) document \(path)\n")
        }
        return 0
    }

    /// Reads a schema file: the JSON form documented in deck(1) and spec/format.md.
    static func loadSchema(_ path: String) throws -> StoreSchema {
        try StoreSchema(contentsOf: Support.url(path))
    }
}
