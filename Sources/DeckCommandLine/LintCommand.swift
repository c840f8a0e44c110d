import DeckArguments
import DeckKit
import Foundation

/// `deck lint`: the CloudKit-compatibility check of a package's schema or a schema file.
enum LintCommand {
    static func run(_ command: ParsedCommand) throws -> Int32 {
        let path = command.positional("path")
        let schemaFile = command.value("schema")
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
            throw command.usageError("give a <path> or --schema FILE, not both")
        case (nil, nil):
            throw command.usageError("missing <path> (or --schema FILE)")
        }
        let findings = try schema.cloudKitFindings()
        if command.flag("json") {
            Output.standard.write(
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
                Output.standard.write(line)
            }
            var line = TerminalLine("\(TerminalText.field(source)): ")
            if findings.isEmpty {
                line.append("CloudKit-compatible", style: style.green)
                line.append("\n")
            } else {
                line.append("not CloudKit-compatible", style: style.red)
                line.append(": \(findings.count) finding\(findings.count == 1 ? "" : "s")\n")
            }
            Output.standard.write(line)
        }
        return findings.isEmpty ? ExitStatus.ok : ExitStatus.findings
    }
}
