import Foundation

/// What a migration is told beyond the two schemas (spec: section 18.1): renames the schemas do
/// not give, the removals the caller agrees to, and whether it is breaking.
///
/// ```swift
/// var plan = MigrationPlan()
/// plan.renames["Card.question"] = "front"
/// plan.removals = ["Card.notes"]
/// let report = try PackageStore.migrate(at: url, to: newSchema, plan: plan)
/// ```
public struct MigrationPlan: Sendable, Equatable {
    /// Renames where the new schema gives no `originalName`: `Entity` → the entity's old name, and
    /// `Entity.property` (the new names) → the property's old name.
    public var renames: [String: String]
    /// The removals the caller agrees to, as the removal steps name them: `Entity` for an entity
    /// (its old name), `Entity.property` for an attribute or relationship (the entity's new name,
    /// the property's old name). A removal deletes data, so a migration with a removal not listed
    /// here is refused.
    public var removals: Set<String>
    /// Whether the migration raises the document's compatibility floor to the new schema's
    /// version (spec: section 4.2), so that applications of older schemas no longer write it.
    public var isBreaking: Bool

    /// A plan with the given renames and agreed removals; not breaking unless told.
    public init(renames: [String: String] = [:], removals: Set<String> = [], isBreaking: Bool = false) {
        self.renames = renames
        self.removals = removals
        self.isBreaking = isBreaking
    }
}

/// Code of the application's that runs inside a migration's transaction (spec: section 18.3).
///
/// `willMigrate` sees the store in the old schema, before anything changed; `didMigrate` sees it
/// in the new schema, after every table has its new shape and the lightweight steps have run,
/// with the old schema's values still readable through ``MigrationContext/oldValues(entity:attribute:)``.
/// Both run in the migration's one transaction: when either throws, the document stays as it was
/// (the error comes back as ``DeckError/unexpected(_:)``, or as itself when it is a ``DeckError``).
///
/// ```swift
/// // Person.name "Ada Lovelace" becomes Person.first "Ada" and Person.last "Lovelace".
/// let split = StoreMigrationStage(name: "split-name", didMigrate: { context in
///     for (id, name) in try context.oldValues(entity: "Person", attribute: "name") {
///         guard case .string(let text) = name else { continue }
///         let parts = text.split(separator: " ", maxSplits: 1).map(String.init)
///         try context.transaction.update("Person", id: id, [
///             "first": .string(parts.first ?? ""), "last": .string(parts.count > 1 ? parts[1] : "")])
///     }
/// })
/// ```
public struct StoreMigrationStage {
    /// The stage's name, recorded in the migration history (`deck_migration.stage`).
    public var name: String
    /// Runs first, on the store in the old schema.
    public var willMigrate: ((StoreTransaction) throws -> Void)?
    /// Runs last, on the store in the new schema, with the old values readable.
    public var didMigrate: ((MigrationContext) throws -> Void)?

    /// A stage called `name` (recorded in the history) with either or both closures.
    public init(
        name: String, willMigrate: ((StoreTransaction) throws -> Void)? = nil,
        didMigrate: ((MigrationContext) throws -> Void)? = nil
    ) {
        self.name = name
        self.willMigrate = willMigrate
        self.didMigrate = didMigrate
    }
}

/// What a custom stage's `didMigrate` is given: the migration's transaction in the new schema,
/// and the values the records had in the old one. Valid only while `didMigrate` runs.
public final class MigrationContext {
    /// The migration's transaction; its record API uses the new schema.
    public let transaction: StoreTransaction
    /// The document's schema before the migration.
    public let oldSchema: StoreSchema
    let executor: MigrationExecutor

    init(transaction: StoreTransaction, oldSchema: StoreSchema, executor: MigrationExecutor) {
        self.transaction = transaction
        self.oldSchema = oldSchema
        self.executor = executor
    }

    /// The value attribute `attribute` of old entity `entity` had in each of its records (its
    /// subentities' included) before the migration, by record id. Record ids stay the same
    /// across a migration, so the id finds the record in ``transaction``. External values are
    /// `.blob` references, whose bytes ``transaction`` reads as long as a cell still names them.
    public func oldValues(entity: String, attribute: String) throws(DeckError) -> [Int64: Value] {
        try executor.oldValues(entity: entity, attribute: attribute)
    }
}

@available(*, unavailable)
extension MigrationContext: Sendable {}

/// What a migration did, or would do (spec: section 18).
public struct MigrationReport: Sendable, Equatable {
    /// The steps, as ``SchemaDiff`` lists them.
    public var steps: [SchemaDiff.Step]
    /// The schema versions and fingerprints before and after.
    public var fromVersion: String
    public var fromFingerprint: String
    public var toVersion: String
    public var toFingerprint: String
    /// The entity tables rebuilt (12-step rebuild), by their new names.
    public var rebuiltTables: [String]
    /// The entity tables that only gained columns (`ALTER TABLE … ADD COLUMN`).
    public var alteredTables: [String]
    /// External values moved into their cells (external storage removed from an attribute).
    public var inlinedValues: Int
    /// The custom stage that ran, if any.
    public var stage: String?
    /// Whether the migration raised the compatibility floor.
    public var isBreaking: Bool
    /// True for a dry run: the data checks ran, nothing was written.
    public var isDryRun: Bool
    /// True when the schemas were the same (version and fingerprint): nothing was done.
    public var isUnchanged: Bool
}

extension PackageStore {
    /// Migrates the package at `url` to `schema` in one transaction (spec: section 18).
    ///
    /// The package is opened for writing (a package of an older format is upgraded first), so no
    /// other writer may hold it; the store check at open refuses a store whose tables, indexes or
    /// triggers are not those its schema derives. The steps of ``SchemaDiff`` run: tables that
    /// only gain optional columns get `ALTER TABLE … ADD COLUMN`, the others SQLite's 12-step
    /// rebuild, keeping every record's id, global id and values (renames included); data checks
    /// run before a unique constraint is added or a column becomes required; blob reference
    /// counts are counted again; the new schema, fingerprint, version and a `deck_migration` row
    /// are written; the store is checked again; then it commits. Any failure leaves the document
    /// exactly as it was.
    ///
    /// A step that is not lightweight, or a removal `plan` does not list, is refused with
    /// ``DeckError/migrationRefused(path:entity:property:reason:)`` before anything changes.
    /// - Parameters:
    ///   - plan: renames, the removals agreed to, and whether the migration is breaking.
    ///   - stage: code of the application's that runs in the same transaction.
    ///   - dryRun: open the package read-only, compute the steps and run the data checks, and
    ///     write nothing.
    public static func migrate(
        at url: URL, to schema: StoreSchema, plan: MigrationPlan = MigrationPlan(),
        stage: StoreMigrationStage? = nil, dryRun: Bool = false
    ) throws(DeckError) -> MigrationReport {
        // Decided read-only first: opening for writing writes (the switch to WAL mode and back
        // changes the store's header), so a migration that has nothing to do, or that is
        // refused, must never get that far (spec: section 18.2). The data checks are left to the
        // writer when a stage's willMigrate runs first: it may change what they check.
        if dryRun {
            return try dryRunOrWrite(at: url, to: schema, plan: plan, stage: stage, dryRun: true)
        }
        do {
            let checked = try dryRunOrWrite(
                at: url, to: schema, plan: plan, stage: stage, dryRun: true,
                checkingData: stage?.willMigrate == nil)
            if checked.isUnchanged {
                var report = checked
                report.isDryRun = false
                return report
            }
        } catch .migrationRefused(let path, let entity, let property, let reason) {
            throw DeckError.migrationRefused(path: path, entity: entity, property: property, reason: reason)
        } catch {
            // Anything else is the writer's to decide: a store that only a writer can read (a hot
            // journal a killed writer left, a log to recover) is recovered by opening it for
            // writing, and any other failure comes again from there.
        }
        return try dryRunOrWrite(at: url, to: schema, plan: plan, stage: stage, dryRun: false)
    }

    private static func dryRunOrWrite(
        at url: URL, to schema: StoreSchema, plan: MigrationPlan, stage: StoreMigrationStage?, dryRun: Bool,
        checkingData: Bool = true
    ) throws(DeckError) -> MigrationReport {
        let store = try PackageStore.open(at: url, mode: dryRun ? .readOnly : .readWrite)
        do {
            let report: MigrationReport
            if dryRun {
                report = try store.withReaderConnection { connection in
                    try connection.readTransaction {
                        try MigrationExecutor(
                            connection: connection, store: store, target: schema, plan: plan, stage: stage
                        ).dryRun(checkingData: checkingData)
                    }
                }
            } else {
                report = try store.withWriter { connection in
                    try MigrationExecutor(
                        connection: connection, store: store, target: schema, plan: plan, stage: stage
                    ).run()
                }
            }
            try store.close()
            return report
        } catch {
            try? store.close(discardingChanges: true)
            throw DeckError.wrap(error)
        }
    }
}

extension MigrationPlan {
    /// The most bytes ``init(contentsOf:)`` reads: 1 MiB.
    public static let maximumFileBytes = 1 << 20

    /// Decodes a plan file (spec: section 18.1), e.g.
    /// `{"renames": {"Card.question": "front"}, "removals": ["Card.notes"], "breaking": true}`.
    ///
    /// Every member is optional; any other member, a duplicate member, a value of another type
    /// or a name that cannot be an entity or property name is refused with
    /// ``DeckError/invalidMigrationPlan(_:)``, naming `source` and the member.
    public init(json data: Data, source: String) throws(DeckError) {
        func invalid(_ reason: String) -> DeckError { .invalidMigrationPlan("\(source): \(reason)") }
        let tree: StrictJSON
        do {
            tree = try StrictJSON.parse(data)
        } catch {
            throw invalid("not valid JSON: \(error)")
        }
        guard case .object(let members) = tree else {
            throw invalid("a plan is a JSON object, not \(tree.kindName)")
        }
        self.init()
        /// `Entity` or `Entity.property`, each a valid name.
        func path(_ text: String, _ member: String) throws(DeckError) -> String {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard (1...2).contains(parts.count), parts.allSatisfy(SchemaMapping.isValidName) else {
                throw invalid("\(member): '\(text.prefix(80))' is not Entity or Entity.property")
            }
            return text
        }
        for member in members {
            switch (member.name, member.value) {
            case ("renames", .object(let entries)):
                for entry in entries {
                    guard case .string(let old) = entry.value else {
                        throw invalid("renames: the old name of '\(entry.name.prefix(80))' is not a string")
                    }
                    let key = try path(entry.name, "renames")
                    guard SchemaMapping.isValidName(old) else {
                        throw invalid(
                            "renames: '\(old.prefix(80))' (the old name of \(key)) is not an entity or property "
                                + "name; give the old name alone, without its entity")
                    }
                    renames[key] = old
                }
            case ("removals", .array(let items)):
                for item in items {
                    guard case .string(let text) = item else {
                        throw invalid("removals: each removal is a string, not \(item.kindName)")
                    }
                    removals.insert(try path(text, "removals"))
                }
            case ("breaking", .bool(let value)):
                isBreaking = value
            case ("renames", let value), ("removals", let value), ("breaking", let value):
                let expected = ["renames": "an object", "removals": "an array", "breaking": "true or false"]
                throw invalid("'\(member.name)' is \(value.kindName), not \(expected[member.name] ?? "")")
            default:
                throw invalid(
                    "unknown member '\(member.name.prefix(80))' (a plan has 'renames', 'removals' and 'breaking')"
                )
            }
        }
    }

    /// Reads the plan file at `url` (``init(json:source:)``, naming the file). Only a regular
    /// file is read, at most ``maximumFileBytes``.
    public init(contentsOf url: URL) throws(DeckError) {
        let data = try InputFile.smallFile(
            at: url, limit: Self.maximumFileBytes, kind: "plan file", invalid: DeckError.invalidMigrationPlan)
        try self.init(json: data, source: url.path)
    }
}
