import DeckArguments
import DeckKit
import Foundation

/// `deck diff-schema`: the steps between two schemas, each a package's or a schema file's.
enum DiffSchemaCommand {
    static func run(_ command: ParsedCommand) throws -> Int32 {
        let old = try schema(at: try Support.requiredPositional(command, "old"))
        let new = try schema(at: try Support.requiredPositional(command, "new"))
        let diff = SchemaDiff(from: old, to: new)
        if command.flag("json") {
            Output.standard.write(json(diff).render() + "\n")
        } else {
            Output.standard.write(text(diff))
        }
        return diff.isLightweight ? ExitStatus.ok : ExitStatus.failure
    }

    /// The schema of a package (a directory, read-only) or of a schema file.
    static func schema(at path: String) throws -> StoreSchema {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            let store = try PackageStore.open(at: Support.url(path), mode: .readOnly)
            defer { try? store.close() }
            return store.schema
        }
        return try NewCommand.loadSchema(path)
    }

    static func json(_ diff: SchemaDiff) -> JSON {
        func side(_ schema: StoreSchema) -> JSON {
            .object([("version", .string(schema.version)), ("fingerprint", .string(schema.fingerprint))])
        }
        return .object([
            ("from", side(diff.from)), ("to", side(diff.to)),
            ("identical", .bool(diff.isEmpty)), ("lightweight", .bool(diff.isLightweight)),
            (
                "steps",
                .array(
                    diff.steps.map { step in
                        .object([
                            ("kind", .string(step.kind.rawValue)), ("entity", .string(step.entity)),
                            ("property", step.property.map(JSON.string) ?? .null),
                            ("summary", .string(step.summary)), ("lightweight", .bool(step.isLightweight)),
                            ("checksData", .bool(step.needsDataCheck)),
                            ("reason", step.reason.map(JSON.string) ?? .null),
                        ])
                    })
            ),
        ])
    }

    static func text(_ diff: SchemaDiff) -> String {
        let field = TerminalText.field
        var out = "\(field(diff.from.version)) → \(field(diff.to.version))"
        if diff.steps.isEmpty {
            out += diff.isEmpty ? ": the same schema\n" : ": no changes to the data\n"
            return out
        }
        let custom = diff.steps.filter { !$0.isLightweight }.count
        out +=
            custom == 0
            ? ": \(diff.steps.count) step(s), all lightweight\n"
            : ": \(diff.steps.count) step(s), \(custom) need(s) a custom stage\n"
        for step in diff.steps {
            out += "  \(step.isLightweight ? "lightweight" : "custom     ")  \(field(step.summary))\n"
            if let reason = step.reason { out += "               \(field(reason))\n" }
        }
        return out
    }
}
