import DeckArguments
import DeckKit
import Foundation

/// `deck diff-schema`: the steps between two schemas, each a package's or a schema file's.
struct DiffSchemaCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "diff-schema",
            abstract: "Show the steps that migrate a document from one schema to another.",
            discussion: """
                Compares two schemas, each a package's or a schema file's (JSON, see deck(1)), and \
                lists the changes in order, each lightweight (the store carries it out) or needing \
                a custom stage, with the reason. Renames are found through originalName. Exit \
                status 0 when every step is lightweight (or there is none), 1 otherwise.
                """)
    }

    @Argument("old", help: "The schema now: a package or a schema file.", completion: .file) var old: String
    @Argument("new", help: "The schema to migrate to: a package or a schema file.", completion: .file)
    var new: String
    @Flag(.json) var json: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        let diff = SchemaDiff(from: try Self.schema(at: old), to: try Self.schema(at: new))
        if json {
            output.write(Self.json(diff).render() + "\n")
        } else {
            output.write(Self.text(diff))
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
struct MigrateCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "migrate",
            abstract: "Migrate a document to another schema, in one transaction.",
            discussion: """
                Carries out the steps 'deck diff-schema' lists, all lightweight ones, in one \
                transaction: a failure or a kill leaves the document as it was. A plan file (JSON, \
                see deck(1)) gives renames, agrees to removals (a removal deletes data, so it is \
                refused unless agreed to) and marks the migration breaking. Exit status 0 when \
                migrated, 65 when a step needs a custom stage, a removal is not agreed to or the \
                data breaks a new rule (nothing is changed then).
                """)
    }

    @Argument(.path) var path: String
    @Option(
        "to", valueName: "schema", completion: .file,
        help: "The schema to migrate to: a schema file (JSON) or a package.")
    var to: String?
    @Option(
        "plan", valueName: "file", completion: .file, help: "A plan file (JSON): renames, removals, breaking."
    )
    var plan: String?
    @Flag("dry-run", short: "n", help: "Check the steps and the data, and change nothing.") var dryRun: Bool
    @Flag(.json) var json: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        guard let target = to else {
            throw UsageError("missing --to <schema> (the schema file to migrate to)")
        }
        let schema = try DiffSchemaCommand.schema(at: target)
        let plan = try self.plan.map { try MigrationPlan(contentsOf: Support.url($0)) } ?? MigrationPlan()
        let report = try PackageStore.migrate(at: Support.url(path), to: schema, plan: plan, dryRun: dryRun)
        if json {
            output.write(Self.json(report).render() + "\n")
        } else {
            output.write(Self.text(report, path: path))
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
struct CompatCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "compat",
            abstract: "Show how an app of a given schema may open a document.",
            discussion: """
                Compares the schema an app was built for (a schema file, JSON, see deck(1), or a \
                package) with the document's, as section 19 of the format specification says: an \
                app older than the document opens it read-write when its version is at or above the \
                document's compatibility floor and the document holds everything it knows, read-only \
                when it can still read it, and not at all otherwise. Changes nothing. Exit status 0 \
                for read-write, 1 otherwise.
                """)
    }

    @Argument(.path) var path: String
    @Option(
        "app", valueName: "schema", completion: .file,
        help: "The app's schema: a schema file (JSON) or a package.")
    var app: String?
    @Flag(.json) var json: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        guard let app else {
            throw UsageError("missing --app <schema> (the schema file of the app)")
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
        if json {
            let json = JSON.object([
                ("document", .string(store.schema.version)), ("app", .string(application.version)),
                ("access", .string(name)), ("needsVersion", version.map(JSON.string) ?? .null),
                ("reasons", .array(reasons.map(JSON.string))),
            ])
            output.write(json.render() + "\n")
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
            output.write(out)
        }
        return access == .readWrite ? ExitStatus.ok : ExitStatus.failure
    }
}
