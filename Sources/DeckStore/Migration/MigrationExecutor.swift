import DeckSQLite
import Foundation

/// Carries out one migration on the writer's connection (spec: section 18.2). Made and used by
/// ``PackageStore/migrate(at:to:plan:stage:dryRun:)`` only.
final class MigrationExecutor {
    let connection: StoreConnection
    let store: PackageStore
    let old: StoreSchema
    let new: StoreSchema
    let oldMapping: SchemaMapping
    let plan: MigrationPlan
    let stage: StoreMigrationStage?
    let diff: SchemaDiff
    var database: Database { connection.database }
    var path: String { connection.path }
    /// Old table → the name it has while the migration runs (tables rebuilt, removed or replaced).
    var setAside: [String: String] = [:]
    /// The new schema's mapping, once ``check()`` made it.
    var newMapping: SchemaMapping?
    /// The attributes (`Entity.attribute`, new names) whose type changes, converted by the custom
    /// stage: their columns start from the default, not the old values.
    var convertedAttributes: Set<String> = []
    /// The temporary tables of links made while the migration runs (``linkTable(_:)``).
    var linkTables: [String] = []

    /// The prefix of a table set aside (names beginning with `deck_` are the format's).
    static let setAsidePrefix = "deck_migration_old:"

    init(
        connection: StoreConnection, store: PackageStore, target: StoreSchema, plan: MigrationPlan,
        stage: StoreMigrationStage?
    ) {
        self.connection = connection
        self.store = store
        self.old = connection.schema
        self.oldMapping = connection.mapping
        self.new = target
        self.plan = plan
        self.stage = stage
        self.diff = SchemaDiff(from: connection.schema, to: target, renames: plan.renames)
    }

    func refuse(_ entity: String, _ property: String?, _ reason: String) -> DeckError {
        .migrationRefused(path: path, entity: entity, property: property, reason: reason)
    }

    // MARK: Planning

    /// The report before anything runs; throws for what is refused.
    func check() throws -> (SchemaMapping, MigrationReport) {
        let newMapping: SchemaMapping
        do {
            newMapping = try SchemaMapping(new)
        } catch {
            throw refuse("", nil, "the target schema is invalid: \(DeckError.wrap(error))")
        }
        self.newMapping = newMapping
        var report = MigrationReport(
            steps: diff.steps, fromVersion: old.version, fromFingerprint: old.fingerprint,
            toVersion: new.version, toFingerprint: new.fingerprint, rebuiltTables: [], alteredTables: [],
            inlinedValues: 0, stage: stage?.name, isBreaking: plan.isBreaking, isDryRun: false,
            isUnchanged: false)
        if old.fingerprint == new.fingerprint && old.version.utf8.elementsEqual(new.version.utf8) {
            report.isUnchanged = true
            return (newMapping, report)
        }
        guard StoreSchema.compareVersions(old.version, new.version) == .orderedAscending else {
            throw refuse(
                "", nil,
                "the target schema's version '\(new.version)' is not after the document's '\(old.version)' "
                    + "(section 5.10's order); give the new schema a higher version")
        }
        for step in diff.steps where !step.isLightweight {
            guard let stage else {
                throw refuse(
                    step.entity, step.property,
                    "\(step.summary) needs a custom stage: \(step.reason ?? "it is not lightweight")")
            }
            switch step.kind {
            case .changeAttributeType:
                // The new column starts from the default (or null); the stage converts the values.
                let name = step.property ?? ""
                guard let attribute = newMapping.entities[step.entity]?.attribute(name) else { continue }
                if !attribute.isOptional, try fillValue(entity: step.entity, attribute: attribute) == nil {
                    throw refuse(
                        step.entity, name,
                        "\(step.summary): the stage '\(stage.name)' converts the values in didMigrate, but the "
                            + "column must start from something: give the attribute a default, or make it optional"
                    )
                }
                convertedAttributes.insert(step.entity + "." + name)
            case .makeRequired:
                continue  // the stage's willMigrate fills the nulls; the data check makes sure
            default:
                throw refuse(
                    step.entity, step.property,
                    "\(step.summary) cannot be carried out, not even with a custom stage: "
                        + "\(step.reason ?? "it is not lightweight"); add a new property, fill it in the stage's "
                        + "didMigrate from the old values, and remove this one")
            }
        }
        for step in diff.steps {
            switch step.kind {
            case .removeEntity, .removeAttribute, .removeRelationship:
                let key = step.kind == .removeEntity ? step.entity : step.entity + "." + (step.property ?? "")
                guard plan.removals.contains(key) else {
                    throw refuse(
                        step.entity, step.property,
                        "\(step.summary): a removal deletes data, so the migration plan must agree to it; "
                            + "add \"\(key)\" to the plan's removals (MigrationPlan.removals, or \"removals\" "
                            + "in a plan file)")
                }
            default: break
            }
        }
        return (newMapping, report)
    }

    /// The report of a dry run: the refusals of ``check()`` and, when `checkingData`, the data
    /// checks, on the committed store.
    func dryRun(checkingData: Bool = true) throws -> MigrationReport {
        var (_, report) = try check()
        report.isDryRun = true
        if !report.isUnchanged && checkingData { try dataChecks() }
        return report
    }

    // MARK: Running

    /// An error a closure of the custom stage threw. Deck's own (from the store the closure
    /// worked on: an I/O failure, a unique value) stay as they are; any other is kept as it was
    /// (its type stays matchable) with the document and the stage named, where it used to become
    /// ``DeckError/unexpected(_:)`` text.
    func stageFailed(_ error: any Error, in closure: String) -> DeckError {
        DeckError.wrap(error) { foreign in
            .migrationStageFailed(
                path: path, stage: stage.map { "'\($0.name)'" } ?? "", closure: closure, error: foreign)
        }
    }

    /// Throws when a closure of the custom stage tried to end the migration's transaction: a
    /// migration is one transaction, kept or discarded whole, so the executor never carries on
    /// outside it (each change would then be committed on its own).
    func requireOpen(after transaction: StoreTransaction, in closure: String) throws {
        let stageName = stage.map { " '\($0.name)'" } ?? ""
        if transaction.endedEarly != nil {
            throw DeckError.misuse(
                "\(path): the custom stage\(stageName) called rollback() in \(closure): a migration is one "
                    + "transaction, kept or discarded whole, so the migration was abandoned and changed nothing "
                    + "(the document is at version \(old.version)); to abandon a migration, throw an error from "
                    + "the stage")
        }
        guard database.isInTransaction else {
            throw DeckError.misuse(
                "\(path): the migration's transaction ended inside the custom stage\(stageName)'s \(closure)")
        }
    }

    func run() throws -> MigrationReport {
        var (newMapping, report) = try check()
        if report.isUnchanged { return report }
        // Both take effect outside a transaction only (spec 18.2): with foreign keys off, dropping
        // a table deletes no join-table row; with the legacy rename, renaming a table set aside
        // leaves the other tables' references naming the table, which the new one then is.
        try database.execute("PRAGMA foreign_keys = OFF; PRAGMA legacy_alter_table = ON")
        defer { try? database.execute("PRAGMA foreign_keys = ON; PRAGMA legacy_alter_table = OFF") }
        try connection.begin()
        let next = StoreConnection(
            url: connection.url, manifest: connection.manifest, schema: new, mapping: newMapping,
            database: database, formatVersion: PackageLayout.formatVersion, dateEpoch: connection.dateEpoch,
            isWriter: true)
        do {
            if let willMigrate = stage?.willMigrate {
                let transaction = StoreTransaction(connection: connection, store: store, isLong: false)
                defer { transaction.end() }
                do { try willMigrate(transaction) } catch { throw stageFailed(error, in: "willMigrate") }
                try requireOpen(after: transaction, in: "willMigrate")
                try connection.blobs.makeDurable()
            }
            try dataChecks()
            try MigrationTableReshaper(migration: self).reshape(newMapping, report: &report)
            if let didMigrate = stage?.didMigrate {
                let transaction = StoreTransaction(connection: next, store: store, isLong: false)
                defer { transaction.end() }
                do {
                    try didMigrate(MigrationContext(transaction: transaction, oldSchema: old, executor: self))
                } catch {
                    throw stageFailed(error, in: "didMigrate")
                }
                try requireOpen(after: transaction, in: "didMigrate")
            }
            for table in setAside.values.sorted() { try database.execute("DROP TABLE \(quote(table))") }
            for table in linkTables { try database.execute("DROP TABLE \(table)") }
            linkTables = []
            try recount(newMapping)
            try writeBookkeeping(stageName: stage?.name)
            try finalChecks(newMapping)
            try next.commit()
        } catch {
            // The files both stages wrote, counted by the old mapping once rolled back (nothing
            // names them now). Not left to the rollback: a COMMIT that failed with an I/O error has
            // rolled back already, and the rollback then does nothing.
            let created = next.blobs.createdSinceSave.union(connection.blobs.createdSinceSave)
            connection.rollback()
            next.blobs.resetTracking()
            connection.removeCreatedFiles(created)
            connection.blobs.resetTracking()
            throw error
        }
        connection.blobs.resetTracking()
        return report
    }

    /// The value an existing record gets for `attribute` when it has none: the default (the time
    /// of the migration for `dynamicDefault` `now`), or nil.
    func fillValue(entity: String, attribute: StoreSchema.Attribute) throws -> SQLValue? {
        let value = attribute.initialValue()
        guard !value.isNull else { return nil }
        do {
            return try value.sqlValue(for: attribute, epoch: connection.dateEpoch)
        } catch {
            throw refuse(entity, attribute.name, "its default cannot be stored: \(error.description)")
        }
    }

    // MARK: Finishing

    /// Sets `deck_blob.refs` to the number of cells naming each blob; the commit drops the rows
    /// at 0 and removes their files after it (section 10.3).
    func recount(_ newMapping: SchemaMapping) throws {
        let (counts, _) = try ReferenceCounts.countAll(database, mapping: newMapping)
        for row in try database.rows("SELECT digest, refs FROM deck_blob") {
            guard let digest = row[0].string else { continue }
            let count = counts[digest] ?? 0
            if row[1].int64 != count {
                try database.run(
                    "UPDATE deck_blob SET refs = ? WHERE digest = ?", [.integer(count), .text(digest)])
            }
        }
    }

    func writeBookkeeping(stageName: String?) throws {
        let values: [(String, SQLValue)] =
            [
                ("schema", .text(try PackageDirectory.encodeSchema(new))),
                ("schema_version", .text(new.version)),
                ("schema_fingerprint", .text(new.fingerprint)),
            ] + (plan.isBreaking ? [("schema_floor", .text(new.version))] : [])
        for (key, value) in values {
            try database.run(
                "INSERT INTO deck_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [.text(key), value])
        }
        try SchemaBookkeeping.append(
            MigrationRecord(
                sequence: 0, fromVersion: old.version, fromFingerprint: old.fingerprint,
                toVersion: new.version,
                toFingerprint: new.fingerprint, applied: Value.iso8601(Date()), stage: stageName,
                isBreaking: plan.isBreaking),
            database)
    }

    /// Before the commit: no link dangles, the stored schema reads back as the target, and the
    /// store holds exactly the objects the new schema derives.
    func finalChecks(_ newMapping: SchemaMapping) throws {
        if let row = try database.rows("PRAGMA foreign_key_check").first {
            throw refuse(
                row[0].string ?? "", nil,
                "after the migration, row \(row[1].int64 ?? 0) of \(row[0].string ?? "?") names a record of "
                    + "\(row[2].string ?? "?") that does not exist; nothing was changed")
        }
        let meta = try StoreMetadata.read(database, packagePath: path)
        let stored = try meta.schema(packagePath: path)
        guard stored.fingerprint == new.fingerprint else {
            throw DeckError.unexpected(
                "\(path): the migrated schema does not read back as written; nothing was changed")
        }
        if let refusal = try StoreObjects.firstRefusal(
            database, mapping: newMapping, formatVersion: PackageLayout.formatVersion)
        {
            throw DeckError.unexpected(
                "\(path): after the migration the store's \(refusal.object.type) '\(refusal.object.name)' "
                    + "differs from the one the new schema derives (\(refusal.code)); nothing was changed")
        }
    }
}
