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

    /// The schema of a schema file, or of a package or package archive read as the reading
    /// commands read them (an archive is checked as `deck import` checks it, in a scratch
    /// directory removed afterwards).
    static func schema(at path: String) throws -> StoreSchema {
        if Support.isSchemaFile(path) || !FileManager.default.fileExists(atPath: path) {
            return try NewCommand.loadSchema(path)
        }
        return try Support.withReadableDocument(path) { $0.schema }
    }

    static func json(_ diff: SchemaDiff) -> JSON {
        func side(_ schema: StoreSchema) -> JSON {
            .object([("version", .string(schema.version)), ("fingerprint", .string(schema.fingerprint))])
        }
        return .object([
            ("from", side(diff.from)), ("to", side(diff.to)),
            ("identical", .bool(diff.isEmpty)), ("lightweight", .bool(diff.isLightweight)),
            ("forward", .bool(isForward(diff))),
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
        if !isForward(diff) {
            out +=
                "note: version \(field(diff.to.version)) is not after \(field(diff.from.version)): deck migrate "
                + "refuses this direction (give the new schema a higher version)\n"
        }
        return out
    }

    /// Whether the new schema's version is after the old one's, which `deck migrate` requires of
    /// a migration that changes anything.
    static func isForward(_ diff: SchemaDiff) -> Bool {
        diff.steps.isEmpty
            || StoreSchema.compareVersions(diff.from.version, diff.to.version) == .orderedAscending
    }
}

/// `deck migrate`: migrates a package to a schema (a file's or another package's).
enum MigrateCommand {
    static func run(_ command: ParsedCommand) throws -> Int32 {
        let path = try Support.requiredPositional(command, "path")
        guard let target = command.value("to") else {
            throw command.usageError("missing --to <schema> (the schema file to migrate to)")
        }
        let schema = try DiffSchemaCommand.schema(at: target)
        let plan =
            try command.value("plan").map { try MigrationPlan(contentsOf: Support.url($0)) }
            ?? MigrationPlan()
        let report = try PackageStore.migrate(
            at: Support.url(path), to: schema, plan: plan, dryRun: command.flag("dry-run"))
        if command.flag("json") {
            Output.standard.write(json(report).render() + "\n")
        } else {
            Output.standard.write(text(report, path: path))
        }
        return ExitStatus.ok
    }

    static func json(_ report: MigrationReport) -> JSON {
        .object([
            (
                "from",
                .object([
                    ("version", .string(report.fromVersion)),
                    ("fingerprint", .string(report.fromFingerprint)),
                ])
            ),
            (
                "to",
                .object([
                    ("version", .string(report.toVersion)), ("fingerprint", .string(report.toFingerprint)),
                ])
            ),
            ("dryRun", .bool(report.isDryRun)), ("unchanged", .bool(report.isUnchanged)),
            ("breaking", .bool(report.isBreaking)),
            (
                "steps",
                .array(
                    report.steps.map { step in
                        .object([
                            ("kind", .string(step.kind.rawValue)), ("entity", .string(step.entity)),
                            ("property", step.property.map(JSON.string) ?? .null),
                            ("summary", .string(step.summary)),
                        ])
                    })
            ),
            ("rebuiltTables", .array(report.rebuiltTables.map(JSON.string))),
            ("alteredTables", .array(report.alteredTables.map(JSON.string))),
            ("inlinedValues", .int(Int64(report.inlinedValues))),
        ])
    }

    static func text(_ report: MigrationReport, path: String) -> String {
        let field = TerminalText.field
        let versions = "\(field(report.fromVersion)) → \(field(report.toVersion))"
        if report.isUnchanged {
            return "\(field(path)): already at \(field(report.toVersion)); nothing to do\n"
        }
        var out =
            report.isDryRun
            ? "\(field(path)): would migrate \(versions) (\(report.steps.count) step(s), data checked; nothing was changed)\n"
            : "\(field(path)): migrated \(versions) (\(report.steps.count) step(s))\n"
        for step in report.steps { out += "  \(field(step.summary))\n" }
        if !report.rebuiltTables.isEmpty {
            out += "rebuilt: \(report.rebuiltTables.map(field).joined(separator: ", "))\n"
        }
        if !report.alteredTables.isEmpty {
            out += "columns added: \(report.alteredTables.map(field).joined(separator: ", "))\n"
        }
        if report.inlinedValues > 0 { out += "values moved into the store: \(report.inlinedValues)\n" }
        if report.isBreaking && !report.isDryRun {
            out += "compatibility floor raised to \(field(report.toVersion))\n"
        }
        return out
    }
}

/// `deck compat`: how an app of a given schema may open a document (spec section 19).
enum CompatCommand {
    static func run(_ command: ParsedCommand) throws -> Int32 {
        let path = try Support.requiredPositional(command, "path")
        guard let app = command.value("app") else {
            throw command.usageError("missing --app <schema> (the schema file of the app)")
        }
        let application = try DiffSchemaCommand.schema(at: app)
        let store = try PackageStore.open(at: Support.url(path), mode: .readOnly)
        defer { try? store.close() }
        let access = try store.access(forApplication: application)
        let (name, version, reasons): (String, String?, [String]) =
            switch access {
            case .readWrite: ("readWrite", nil, [])
            case .readOnly(let reasons): ("readOnly", nil, reasons)
            case .needsNewerApplication(let version, let reasons): ("needsNewerApplication", version, reasons)
            case .needsMigration(let differences): ("needsMigration", nil, differences)
            }
        if command.flag("json") {
            let json = JSON.object([
                ("document", .string(store.schema.version)), ("app", .string(application.version)),
                ("access", .string(name)), ("needsVersion", version.map(JSON.string) ?? .null),
                ("reasons", .array(reasons.map(JSON.string))),
            ])
            Output.standard.write(json.render() + "\n")
        } else {
            let field = TerminalText.field
            let verdict =
                switch access {
                case .readWrite: "read-write"
                case .readOnly: "read-only"
                case .needsNewerApplication(let version, _):
                    "refused: the document needs version \(field(version)) of the app"
                case .needsMigration: "refused: the document needs a migration to the app's schema"
                }
            var out =
                "app \(field(application.version)), document \(field(store.schema.version)): \(verdict)\n"
            for reason in reasons { out += "  \(field(reason))\n" }
            Output.standard.write(out)
        }
        return access == .readWrite ? ExitStatus.ok : ExitStatus.failure
    }
}
