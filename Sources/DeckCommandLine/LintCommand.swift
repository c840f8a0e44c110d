import DeckArguments
import DeckKit
import Foundation

/// `deck lint`: the CloudKit-compatibility check of a package's schema or a schema file.
struct LintCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "lint",
            abstract: "Check a schema for CloudKit compatibility.",
            discussion: """
                Checks the schema of a package (or a package archive), or a schema file, against \
                the rules CloudKit sets for a store that syncs: no unique attributes or unique \
                constraints, a default for every non-optional attribute, an inverse for every \
                relationship, no deny delete rule. Each finding names the entity and property. \
                Never writes to the package. Exit status 0 means no findings, 1 findings.
                """,
            examples: [
                CommandExample("Check a document", command: "deck lint Spanish.deck"),
                CommandExample("Check a schema file", command: "deck lint --schema notes.schema.json"),
            ])
    }

    @Argument(
        "path", help: "The package directory or package archive whose schema to check.", completion: .file)
    var path: String?
    @Option(
        "schema", valueName: "file", completion: .file,
        help: "Check a schema file (JSON, as 'deck new --schema' takes) instead of a package.")
    var schemaFile: String?
    @Flag(.json) var json: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        let source: String
        let schema: StoreSchema
        var isSchemaFile = schemaFile != nil
        switch (path, schemaFile) {
        case (let path?, nil) where Support.isSchemaFile(path):
            // A schema file given as the path: checked as with --schema.
            source = path
            schema = try NewCommand.loadSchema(path)
            isSchemaFile = true
        case (let path?, nil):
            source = path
            // Read-only: a package is opened for reading, an archive unpacked into a scratch
            // directory (checked as `deck import` checks it) and removed afterwards.
            do {
                schema = try Support.withReadableDocument(path) { $0.schema }
            } catch DeckError.notAPackage(let where_, let reason) {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory),
                    !isDirectory.boolValue
                else { throw DeckError.notAPackage(path: where_, reason: reason) }
                throw DeckError.notAPackage(
                    path: where_, reason: reason + "; to check a schema file, give it with --schema FILE")
            }
        case (nil, let file?):
            source = file
            schema = try NewCommand.loadSchema(file)
        case (.some, .some):
            throw UsageError("give a <path> or --schema FILE, not both")
        case (nil, nil):
            throw UsageError("missing <path> (or --schema FILE)")
        }
        let findings = try schema.cloudKitFindings()
        if json {
            output.write(
                JSON.object([
                    ("path", .string(source)),
                    ("source", .string(isSchemaFile ? "schema-file" : "package")),
                    ("compatible", .bool(findings.isEmpty)),
                    (
                        "findings",
                        .array(
                            findings.map { finding in
                                JSON.object([
                                    ("code", .string(finding.code.rawValue)),
                                    ("entity", .string(finding.entity)),
                                    ("property", finding.property.map(JSON.string) ?? .null),
                                    ("message", .string(finding.message)),
                                ])
                            })
                    ),
                ]).render() + "\n")
        } else {
            let style = TerminalStyle.standardOutput
            for finding in findings {
                // One line per finding, whatever names from the package it quotes.
                var line = TerminalLine(finding.code.rawValue, style: style.yellow)
                line.append(
                    ": \(TerminalText.field(finding.location)): \(TerminalText.field(finding.message))\n")
                output.write(line)
            }
            var line = TerminalLine("\(TerminalText.field(source)): ")
            if findings.isEmpty {
                line.append("CloudKit-compatible", style: style.green)
                line.append("\n")
            } else {
                line.append("not CloudKit-compatible", style: style.red)
                line.append(": \(findings.count) finding\(findings.count == 1 ? "" : "s")\n")
            }
            output.write(line)
        }
        return findings.isEmpty ? ExitStatus.ok : ExitStatus.findings
    }
}
