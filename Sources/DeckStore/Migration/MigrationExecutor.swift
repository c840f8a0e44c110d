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
            try reshape(newMapping, report: &report)
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

    /// Gives every table the new schema's shape.
    func reshape(_ newMapping: SchemaMapping, report: inout MigrationReport) throws {
        let version = PackageLayout.formatVersion
        // Which old table each new entity table continues: the old table of its entities' origins.
        var source: [String: EntityMapping] = [:]
        for root in newMapping.roots {
            for member in newMapping.members[root.table] ?? [root] {
                if let origin = oldEntity(member.name) {
                    source[root.table] = oldMapping.roots.first { $0.table == origin.table }
                    break
                }
            }
        }
        // Tables that only gain columns are altered; the others are rebuilt.
        var altered: Set<String> = []
        var gainedColumns: Set<String> = []
        for root in newMapping.roots {
            guard let oldRoot = source[root.table], oldRoot.table == root.table,
                let added = try alterInPlace(oldRoot: oldRoot, newRoot: root, newMapping: newMapping)
            else { continue }
            altered.insert(root.table)
            if added > 0 { gainedColumns.insert(root.table) }
        }
        // Set aside every old entity table not altered, and every old join table.
        for oldRoot in oldMapping.roots where !altered.contains(oldRoot.table) {
            try setTableAside(oldRoot.table)
        }
        let keptJoins = keptJoinTables(newMapping)
        for table in joinTables(oldMapping) where !keptJoins.contains(table) { try setTableAside(table) }
        for root in newMapping.roots where !altered.contains(root.table) {
            let statements = StoreDDL.tableStatements(root, mapping: newMapping, formatVersion: version)
            try database.execute(statements.table)
            if let oldRoot = source[root.table] {
                try copyRows(from: oldRoot, to: root, newMapping: newMapping)
                report.rebuiltTables.append(root.table)
            }
        }
        report.alteredTables = newMapping.roots.map(\.table).filter { gainedColumns.contains($0) }
        for root in newMapping.roots where altered.contains(root.table) {
            try fillInPlace(newRoot: root, newMapping: newMapping)
        }
        try rebuildJoinTables(newMapping, kept: keptJoins)
        try removeDanglingLinks(newMapping, rebuilt: Set(report.rebuiltTables))
        report.inlinedValues = try inlineExternalValues(newMapping)
        try reconcileIndexesAndTriggers(newMapping)
    }

    /// The old join tables that stay as they are: the new schema derives a join table of the same
    /// name and definition, for links that continue the old ones in the same orientation.
    func keptJoinTables(_ newMapping: SchemaMapping) -> Set<String> {

        let oldStatements = Set(StoreDDL.joinTableStatements(oldMapping))
        var kept: Set<String> = []
        for name in newMapping.entityNames {
            guard let entity = newMapping.entities[name] else { continue }
            for (relationship, storage) in entity.relationships {
                guard case .joinTable(let table, let near, _) = storage, let oldEntity = oldEntity(name),
                    let originName = diff.propertyOrigins[name + "." + relationship.name],
                    let (_, oldStorage) = oldEntity.relationship(originName),
                    case .joinTable(let oldTable, let oldNear, _) = oldStorage, oldTable == table,
                    oldNear == near
                else { continue }
                let statement = StoreDDL.joinTableStatements(newMapping).first {
                    $0.hasPrefix("CREATE TABLE \(quote(table))(")
                }
                if let statement, oldStatements.contains(statement) { kept.insert(table) }
            }
        }
        return kept
    }

    /// The join tables of a mapping.
    func joinTables(_ mapping: SchemaMapping) -> [String] {
        var result: [String] = []
        for name in mapping.entityNames {
            for (_, storage) in mapping.entities[name]?.relationships ?? [] {
                if case .joinTable(let table, _, _) = storage, !result.contains(table) {
                    result.append(table)
                }
            }
        }
        return result
    }

    /// Renames an old table out of the way, its indexes and triggers dropped (the ones the new
    /// schema derives are made again at the end).
    func setTableAside(_ table: String) throws {
        try database.dropIndexesAndTriggers(of: table)
        let aside = Self.setAsidePrefix + table
        try database.execute("ALTER TABLE \(quote(table)) RENAME TO \(quote(aside))")
        setAside[table] = aside
    }

    /// The table SQL that the store holds for `table`, as bytes.
    func storedSQL(_ table: String) throws -> [UInt8]? {
        guard
            case .blob(let data) = try database.scalar(
                "SELECT CAST(sql AS BLOB) FROM sqlite_schema WHERE type = 'table' AND name = ?",
                [.text(table)])
        else { return nil }
        return [UInt8](data)
    }
}
