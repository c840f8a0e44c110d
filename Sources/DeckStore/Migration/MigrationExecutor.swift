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
    private var newMapping: SchemaMapping?
    /// The attributes (`Entity.attribute`, new names) whose type changes, converted by the custom
    /// stage: their columns start from the default, not the old values.
    private var convertedAttributes: Set<String> = []
    /// The temporary tables of links made while the migration runs (``linkTable(_:)``).
    private var linkTables: [String] = []

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
    private func check() throws -> (SchemaMapping, MigrationReport) {
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

    // MARK: Data checks

    /// The old column that holds new attribute `entity.name` (nil for a new attribute, and for one
    /// whose type a custom stage converts).
    func oldColumn(entity: String, attribute: String) -> String? {
        guard diff.entityOrigins[entity] != nil, !convertedAttributes.contains(entity + "." + attribute)
        else {
            return nil
        }
        return diff.propertyOrigins[entity + "." + attribute]
    }

    /// The old entity mapping that new entity `entity` continues.
    func oldEntity(_ entity: String) -> EntityMapping? {
        diff.entityOrigins[entity].flatMap { oldMapping.entities[$0] }
    }

    /// The old relationship whose links new relationship `relationship` of new entity `entity`
    /// continues, with its old entity: its origin's, or for a new relationship that is the inverse
    /// of one that existed, that one's, the other way round (`reversed`).
    func linkOrigin(entity: String, relationship: String) -> LinkOrigin? {
        if let oldEntity = oldEntity(entity), let origin = diff.propertyOrigins[entity + "." + relationship],
            let (_, storage) = oldEntity.relationship(origin)
        {
            return LinkOrigin(entity: oldEntity, storage: storage, reversed: false)
        }
        guard let (new, _) = newMapping?.entities[entity]?.relationship(relationship),
            let inverse = new.inverse,
            let oldDestination = oldEntity(new.destination),
            let origin = diff.propertyOrigins[new.destination + "." + inverse],
            let (_, storage) = oldDestination.relationship(origin)
        else { return nil }
        return LinkOrigin(entity: oldDestination, storage: storage, reversed: true)
    }

    /// Where a new relationship's links were before the migration.
    struct LinkOrigin {
        let entity: EntityMapping
        let storage: RelationshipStorage
        /// True when they are the links of the relationship's inverse.
        let reversed: Bool

        /// The old own column that holds the relationship's links, when they were kept in one.
        var ownColumn: String? {
            guard !reversed, case .ownColumn(let column) = storage else { return nil }
            return column
        }
    }

    /// The links new relationship `relationship` of new entity `entity` had before the migration,
    /// as a `SELECT` of `near` (a record of the entity) and `far` (one of its destination), read
    /// from their old storage wherever that table is now (set aside, or in place); nil for a
    /// relationship that had none.
    func oldLinks(entity: String, relationship: String) -> String? {
        guard let origin = linkOrigin(entity: entity, relationship: relationship) else { return nil }
        func source(_ table: String) -> String { quote(setAside[table] ?? table) }
        var select: String
        switch origin.storage {
        case .ownColumn(let column):
            let c = quote(column)
            select =
                "SELECT _pk AS near, \(c) AS far FROM \(source(origin.entity.table)) WHERE \(c) IS NOT NULL"
                + (origin.entity.familyCondition(nil).map { " AND " + $0 } ?? "")
        case .inverseColumn(let table, let column):
            let c = quote(column)
            select = "SELECT \(c) AS near, _pk AS far FROM \(source(table)) WHERE \(c) IS NOT NULL"
        case .joinTable(let table, let near, let far):
            select = "SELECT \(near) AS near, \(far) AS far FROM \(source(table))"
        }
        if origin.reversed { select = "SELECT far AS near, near AS far FROM (\(select))" }
        return select
    }

    /// Copies `links` (an ``oldLinks(entity:relationship:)`` query) into a temporary table keyed
    /// by `near`, so that finding a record's links is a search rather than a scan, and returns the
    /// table's name. The tables go when the migration ends (rolled back with it on failure).
    private func linkTable(_ links: String) throws -> String {
        let name = "temp.\(quote("deck_links_\(linkTables.count + 1)"))"
        try database.execute(
            "CREATE TEMP TABLE \(name)(near INTEGER NOT NULL, far INTEGER NOT NULL, PRIMARY KEY (near, far)) "
                + "WITHOUT ROWID")
        linkTables.append(name)
        try database.execute("INSERT OR IGNORE INTO \(name)(near, far) SELECT near, far FROM (\(links))")
        return name
    }

    /// Runs the checks of section 18.2 on the store as it is (before any change).
    func dataChecks() throws {
        try checkMovedToOneLinks()
        for step in diff.steps where step.needsDataCheck {
            guard let oldEntity = oldEntity(step.entity) else { continue }
            let table = quote(oldEntity.table)
            let family = oldEntity.familyCondition(nil)
            switch step.kind {
            case .addUnique, .addUniqueConstraint:
                let names = (step.property ?? "").split(separator: "+").map(String.init)
                let columns = names.map { oldColumn(entity: step.entity, attribute: $0) }
                // A column that is new holds no value yet (null), which never conflicts.
                guard columns.allSatisfy({ $0 != nil }) else { continue }
                let quoted = columns.compactMap { $0 }.map(quote)
                var conditions = quoted.map { "\($0) IS NOT NULL" }
                if let family { conditions.append(family) }
                let sql =
                    "SELECT min(_pk), max(_pk) FROM \(table) WHERE \(conditions.joined(separator: " AND ")) "
                    + "GROUP BY \(quoted.joined(separator: ", ")) HAVING count(*) > 1 ORDER BY 1 LIMIT 1"
                if let row = try database.rows(sql).first {
                    throw refuse(
                        step.entity, step.property,
                        "\(step.entity).\(names.joined(separator: "+")) cannot become unique: records #\(row[0].int64 ?? 0) "
                            + "and #\(row[1].int64 ?? 0) share the value; make them differ first (or in a "
                            + "custom stage's willMigrate)")
                }
            case .addAttribute:
                // A required attribute without default of a subentity: the entity has no record.
                let condition = family.map { " WHERE \($0)" } ?? ""
                if let id = try database.scalar("SELECT min(_pk) FROM \(table)\(condition)")?.int64 {
                    throw refuse(
                        step.entity, step.property,
                        "\(step.summary): it is required and has no default, but record #\(id) has no value "
                            + "for it; give it a default or make it optional")
                }
            case .makeRequired:
                guard let column = oldColumn(entity: step.entity, attribute: step.property ?? "") else {
                    continue
                }
                var conditions = ["\(quote(column)) IS NULL"]
                if let family { conditions.append(family) }
                if let id = try database.scalar(
                    "SELECT min(_pk) FROM \(table) WHERE \(conditions.joined(separator: " AND "))")?.int64
                {
                    throw refuse(
                        step.entity, step.property,
                        "\(step.entity).\(step.property ?? "") cannot become required: record #\(id) holds no "
                            + "value; give it a default or fill the values first")
                }
            case .changeDeleteRule:
                try checkDangling(step, oldEntity: oldEntity)
            case .makeToOne:
                guard let links = oldLinks(entity: step.entity, relationship: step.property ?? ""),
                    let (id, count) = try firstRecordWithSeveral(links)
                else { continue }
                throw refuse(
                    step.entity, step.property,
                    "\(step.entity).\(step.property ?? "") cannot become to-one: record #\(id) has \(count) links; "
                        + "leave it at most one first (or in a custom stage's willMigrate)")
            default:
                continue
            }
        }
    }

    /// A new to-one relationship whose column is filled from its inverse's old links (a join
    /// table): at most one link per record, or the rest would be lost.
    private func checkMovedToOneLinks() throws {
        guard let newMapping else { return }
        for name in newMapping.entityNames {
            guard let entity = newMapping.entities[name] else { continue }
            for relationship in entity.entity.relationships {
                guard case .ownColumn? = entity.relationship(relationship.name)?.storage,
                    let origin = linkOrigin(entity: name, relationship: relationship.name)
                else { continue }
                // A relationship that existed has at most one link per record if it was to-one, and
                // one made to-one has its own check: only a new one, filled from its inverse's.
                guard origin.reversed, let links = oldLinks(entity: name, relationship: relationship.name),
                    let (id, count) = try firstRecordWithSeveral(links)
                else { continue }
                throw refuse(
                    name, relationship.name,
                    "\(name).\(relationship.name) is to-one and takes its links from where they were kept before, "
                        + "but record #\(id) has \(count) of them; leave it at most one first (or in a custom "
                        + "stage's willMigrate)")
            }
        }
    }

    /// The first record (by id) that has more than one of `links` (an
    /// ``oldLinks(entity:relationship:)`` query), with how many it has; nil when none has.
    private func firstRecordWithSeveral(_ links: String) throws -> (id: Int64, count: Int64)? {
        guard
            let row = try database.rows(
                "SELECT near, count(*) FROM (\(links)) GROUP BY near HAVING count(*) > 1 ORDER BY near LIMIT 1"
            ).first
        else { return nil }
        return (row[0].int64 ?? 0, row[1].int64 ?? 0)
    }

    /// A relationship whose delete rule was `noAction`: no link may name a record that is gone.
    private func checkDangling(_ step: SchemaDiff.Step, oldEntity: EntityMapping) throws {
        let name = diff.propertyOrigins[step.entity + "." + (step.property ?? "")] ?? step.property ?? ""
        guard let (relationship, storage) = oldEntity.relationship(name),
            let destination = oldMapping.entities[relationship.destination]
        else { return }
        let sql: String
        switch storage {
        case .ownColumn(let column):
            let c = quote(column)
            sql =
                "SELECT min(_pk) FROM \(quote(oldEntity.table)) WHERE \(c) IS NOT NULL AND \(c) NOT IN "
                + "(SELECT _pk FROM \(quote(destination.table)))"
        case .inverseColumn(let table, let column):
            let c = quote(column)
            sql =
                "SELECT min(\(c)) FROM \(quote(table)) WHERE \(c) IS NOT NULL AND \(c) NOT IN "
                + "(SELECT _pk FROM \(quote(oldEntity.table)))"
        case .joinTable:
            return  // its foreign keys delete a link with its record
        }
        if let id = try database.scalar(sql)?.int64 {
            throw refuse(
                step.entity, step.property,
                "\(step.summary): a link of record #\(id) names a record that does not exist; "
                    + "run 'deck verify' and repair the links first")
        }
    }

    // MARK: Running

    /// An error a closure of the custom stage threw. Deck's own (from the store the closure
    /// worked on: an I/O failure, a unique value) stay as they are; any other is kept as it was
    /// (its type stays matchable) with the document and the stage named, where it used to become
    /// ``DeckError/unexpected(_:)`` text.
    private func stageFailed(_ error: any Error, in closure: String) -> DeckError {
        DeckError.wrap(error) { foreign in
            .migrationStageFailed(
                path: path, stage: stage.map { "'\($0.name)'" } ?? "", closure: closure, error: foreign)
        }
    }

    /// Throws when a closure of the custom stage tried to end the migration's transaction: a
    /// migration is one transaction, kept or discarded whole, so the executor never carries on
    /// outside it (each change would then be committed on its own).
    private func requireOpen(after transaction: StoreTransaction, in closure: String) throws {
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
    private func reshape(_ newMapping: SchemaMapping, report: inout MigrationReport) throws {
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
    private func keptJoinTables(_ newMapping: SchemaMapping) -> Set<String> {

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
    private func joinTables(_ mapping: SchemaMapping) -> [String] {
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
    private func setTableAside(_ table: String) throws {
        try database.dropIndexesAndTriggers(of: table)
        let aside = Self.setAsidePrefix + table
        try database.execute("ALTER TABLE \(quote(table)) RENAME TO \(quote(aside))")
        setAside[table] = aside
    }

    /// The table SQL that the store holds for `table`, as bytes.
    private func storedSQL(_ table: String) throws -> [UInt8]? {
        guard
            case .blob(let data) = try database.scalar(
                "SELECT CAST(sql AS BLOB) FROM sqlite_schema WHERE type = 'table' AND name = ?",
                [.text(table)])
        else { return nil }
        return [UInt8](data)
    }

    /// `ALTER TABLE … ADD COLUMN` for a table whose old columns all stay, under their names and
    /// definitions, when the table's SQL afterwards is the one the new schema derives (spec
    /// 18.2, step 3). Returns how many columns it added (0 for a table that stays as it is), or
    /// nil, having changed nothing, when the table must be rebuilt.
    private func alterInPlace(oldRoot: EntityMapping, newRoot: EntityMapping, newMapping: SchemaMapping)
        throws
        -> Int?
    {
        let version = PackageLayout.formatVersion
        let oldSQL = StoreDDL.tableStatements(oldRoot, mapping: oldMapping, formatVersion: version).table
        let newSQL = StoreDDL.tableStatements(newRoot, mapping: newMapping, formatVersion: version).table
        let oldMembers = oldMapping.members[oldRoot.table] ?? [oldRoot]
        let newMembers = newMapping.members[newRoot.table] ?? [newRoot]
        // Every old entity continues under its name, every kept column keeps its name.
        guard oldMembers.count <= newMembers.count,
            oldMembers.allSatisfy({ member in diff.entityOrigins[member.name] == member.name })
        else { return nil }
        let oldColumns = try database.rows(
            "SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(oldRoot.table)]
        )
        .compactMap { $0[0].string }
        let newDefinitions = columnDefinitions(newSQL)
        let oldDefinitions = columnDefinitions(oldSQL)
        guard newDefinitions.count >= oldDefinitions.count, oldColumns.count == oldDefinitions.count,
            Array(newDefinitions.prefix(oldDefinitions.count)).map({ StoreObjects.tokens(Array($0.utf8)) })
                == oldDefinitions.map({ StoreObjects.tokens(Array($0.utf8)) }),
            let stored = try storedSQL(oldRoot.table), StoreObjects.same(stored, Array(oldSQL.utf8))
        else { return nil }
        // The kept columns hold what they held: no rename onto another's name, no transformation.
        for member in newMembers {
            for attribute in member.entity.attributes {
                if convertedAttributes.contains(member.name + "." + attribute.name) { return nil }
                if let origin = oldColumn(entity: member.name, attribute: attribute.name),
                    origin != attribute.name
                {
                    return nil
                }
            }
        }
        let added = newDefinitions.dropFirst(oldDefinitions.count)
        guard added.allSatisfy({ !$0.contains("NOT NULL") }) else { return nil }
        do {
            try database.savepoint {
                for definition in added {
                    try database.execute("ALTER TABLE \(quote(oldRoot.table)) ADD COLUMN \(definition)")
                }
                guard let stored = try storedSQL(newRoot.table), StoreObjects.same(stored, Array(newSQL.utf8))
                else { throw AlterMismatch() }
            }
        } catch is AlterMismatch {
            return nil
        }
        return added.count
    }

    private struct AlterMismatch: Error {}

    /// The column definitions of a `CREATE TABLE` that ``StoreDDL`` made (one per line).
    private func columnDefinitions(_ sql: String) -> [String] {
        sql.split(separator: "\n").dropFirst().dropLast().map {
            var line = $0.trimmingCharacters(in: .whitespaces)
            if line.hasSuffix(",") { line.removeLast() }
            return line
        }
    }

    /// The expression that gives new column `column` of a rebuilt table its value from the old
    /// table's row, with its arguments.
    private struct ColumnSource {
        var expression: String
        var arguments: [SQLValue] = []
    }

    /// Copies every record of the old table into the rebuilt one: ids, global ids, entities (by
    /// their new names), cells (by the properties' origins), defaults for added attributes.
    private func copyRows(from oldRoot: EntityMapping, to newRoot: EntityMapping, newMapping: SchemaMapping)
        throws
    {
        guard let aside = setAside[oldRoot.table] else { return }
        let newMembers = newMapping.members[newRoot.table] ?? [newRoot]
        var columns = ["_pk", "_gid", "_entity"]
        var expressions = ["_pk", "_gid"]
        var arguments: [SQLValue] = []
        var entityCases: [String] = []
        var kept: [String] = []
        for member in newMembers {
            guard let origin = diff.entityOrigins[member.name] else { continue }
            kept.append("'\(origin)'")
            entityCases.append("WHEN '\(origin)' THEN '\(member.name)'")
        }
        expressions.append(
            entityCases.isEmpty ? "_entity" : "CASE _entity \(entityCases.joined(separator: " ")) END")
        // Each column once, from the entities that declare it.
        var seen: Set<String> = []
        for member in newMembers {
            for attribute in member.entity.attributes where seen.insert(attribute.name).inserted {
                let declarers = newMembers.filter {
                    $0.entity.attributes.contains { $0.name == attribute.name }
                }
                var cases: [String] = []
                var caseArguments: [SQLValue] = []
                for declarer in declarers {
                    let source = try attributeSource(entity: declarer.name, attribute: attribute)
                    // Entities by their old names (the CASE reads the old _entity).
                    let oldFamily = declarer.family.compactMap { diff.entityOrigins[$0] }.map { "'\($0)'" }
                    if oldFamily.isEmpty { continue }
                    if declarer.isRoot && declarers.count == 1 {
                        cases = ["ELSE " + source.expression]
                    } else {
                        cases.append(
                            "WHEN _entity IN (\(oldFamily.joined(separator: ", "))) THEN \(source.expression)"
                        )
                    }
                    caseArguments += source.arguments
                }
                columns.append(quote(attribute.name))
                if cases.count == 1, cases[0].hasPrefix("ELSE ") {
                    expressions.append(String(cases[0].dropFirst(5)))
                } else if cases.isEmpty {
                    expressions.append("NULL")
                } else {
                    expressions.append("CASE \(cases.joined(separator: " ")) ELSE NULL END")
                }
                arguments += caseArguments
            }
            for (relationship, storage) in member.relationships {
                guard case .ownColumn(let column) = storage, seen.insert(column).inserted else { continue }
                var expression = "NULL"
                // The entity that declares it (a member may inherit it, and come first).
                let declarer =
                    newMembers.first { candidate in
                        candidate.entity.relationships.contains { $0.name == relationship.name }
                            && candidate.relationship(relationship.name)?.storage == storage
                    }?.name ?? member.name
                if let origin = linkOrigin(entity: declarer, relationship: relationship.name) {
                    if let oldColumn = origin.ownColumn {
                        expression = quote(oldColumn)
                    } else if let links = oldLinks(entity: declarer, relationship: relationship.name) {
                        // Links kept another way before (a join table, the inverse's column).
                        let family = newMembers.first { $0.name == declarer }?.family ?? [declarer]
                        let oldFamily = family.compactMap { diff.entityOrigins[$0] }.map { "'\($0)'" }
                        expression =
                            "CASE WHEN _entity IN (\(oldFamily.joined(separator: ", "))) THEN "
                            + "(SELECT min(far) FROM \(try linkTable(links)) WHERE near = deck_row._pk) END"
                    }
                }
                columns.append(quote(column))
                expressions.append(expression)
            }
        }
        let condition = kept.isEmpty ? "0" : "_entity IN (\(kept.joined(separator: ", ")))"
        try database.run(
            "INSERT INTO \(quote(newRoot.table))(\(columns.joined(separator: ", "))) SELECT "
                + expressions.joined(separator: ", ")
                + " FROM \(quote(aside)) AS deck_row WHERE \(condition) ORDER BY _pk",
            arguments)
        // Keys are never reused (section 6.10): the new table's sequence starts where the old one was.
        try database.run(
            "INSERT INTO sqlite_sequence(name, seq) SELECT ?, seq FROM sqlite_sequence WHERE name = ? "
                + "AND seq > coalesce((SELECT max(seq) FROM sqlite_sequence WHERE name = ?), 0)",
            [.text(newRoot.table), .text(aside), .text(newRoot.table)])
        try database.run(
            "DELETE FROM sqlite_sequence WHERE name = ? AND seq < (SELECT max(seq) FROM sqlite_sequence WHERE name = ?)",
            [.text(newRoot.table), .text(newRoot.table)])
    }

    /// How a new attribute gets its value from the old row: its origin's column (the value of an
    /// attribute that loses external storage is filled later), or its default.
    private func attributeSource(entity: String, attribute: StoreSchema.Attribute) throws -> ColumnSource {
        let fill = try fillValue(entity: entity, attribute: attribute)
        guard let origin = oldColumn(entity: entity, attribute: attribute.name) else {
            return fill.map { ColumnSource(expression: "?", arguments: [$0]) }
                ?? ColumnSource(expression: "NULL")
        }
        var expression = quote(origin)
        if let oldAttribute = oldEntity(entity)?.attribute(origin),
            oldAttribute.options.contains(.externalStorage), !attribute.options.contains(.externalStorage)
        {
            expression = "CASE WHEN typeof(\(expression)) = 'text' THEN NULL ELSE \(expression) END"
        }
        // An optional attribute's null is a value; a required one's gets the default.
        if let fill, !attribute.isOptional {
            return ColumnSource(expression: "coalesce(\(expression), ?)", arguments: [fill])
        }
        return ColumnSource(expression: expression)
    }

    /// The value an existing record gets for `attribute` when it has none: the default (the time
    /// of the migration for `dynamicDefault` `now`), or nil.
    private func fillValue(entity: String, attribute: StoreSchema.Attribute) throws -> SQLValue? {
        let value = attribute.initialValue()
        guard !value.isNull else { return nil }
        do {
            return try value.sqlValue(for: attribute, epoch: connection.dateEpoch)
        } catch {
            throw refuse(entity, attribute.name, "its default cannot be stored: \(error.description)")
        }
    }

    /// After `ADD COLUMN`: the added attributes' defaults, for the records of their entities.
    private func fillInPlace(newRoot: EntityMapping, newMapping: SchemaMapping) throws {
        for member in newMapping.members[newRoot.table] ?? [newRoot] {
            // An added attribute's column, and a required one's null cells, get the default.
            for attribute in member.entity.attributes
            where !attribute.isOptional || oldColumn(entity: member.name, attribute: attribute.name) == nil {
                guard let fill = try fillValue(entity: member.name, attribute: attribute) else { continue }
                let family = member.familyCondition(nil).map { " AND \($0)" } ?? ""
                try database.run(
                    "UPDATE \(quote(newRoot.table)) SET \(quote(attribute.name)) = ? "
                        + "WHERE \(quote(attribute.name)) IS NULL\(family)", [fill])
            }
            // An added own column of links that were kept another way (a join table, the inverse's
            // column) gets them.
            for relationship in member.entity.relationships {
                guard case .ownColumn(let column)? = member.relationship(relationship.name)?.storage,
                    linkOrigin(entity: member.name, relationship: relationship.name)?.ownColumn == nil,
                    let links = oldLinks(entity: member.name, relationship: relationship.name)
                else { continue }
                let family = member.familyCondition(nil).map { " WHERE \($0)" } ?? ""
                let table = quote(newRoot.table)
                try database.execute(
                    "UPDATE \(table) SET \(quote(column)) = (SELECT min(far) FROM \(try linkTable(links)) "
                        + "WHERE near = \(table)._pk)\(family)")
            }
        }
    }

    /// The new join tables: each filled from the old storage of the links it continues.
    private func rebuildJoinTables(_ newMapping: SchemaMapping, kept: Set<String>) throws {
        var done = kept
        let statements = StoreDDL.joinTableStatements(newMapping)
        for statement in statements where statement.hasPrefix("CREATE TABLE") {
            if kept.contains(where: { statement.hasPrefix("CREATE TABLE \(quote($0))(") }) { continue }
            try database.execute(statement)
        }
        for name in newMapping.entityNames {
            guard let entity = newMapping.entities[name] else { continue }
            for (relationship, storage) in entity.relationships {
                guard case .joinTable(let table, let near, let far) = storage, !done.contains(table),
                    let links = oldLinks(entity: name, relationship: relationship.name),
                    let destination = newMapping.entities[relationship.destination]
                else { continue }
                done.insert(table)
                try database.execute(
                    "INSERT OR IGNORE INTO \(quote(table))(\(near), \(far)) SELECT near, far FROM (\(links)) "
                        + "WHERE near IN (SELECT _pk FROM \(quote(entity.table))) AND "
                        + "far IN (SELECT _pk FROM \(quote(destination.table)))")
            }
        }
    }

    /// Links to records that the migration removed (records of a removed subentity) go with
    /// them: for every link whose destination's table was rebuilt, a link to a key the table no
    /// longer has is removed.
    private func removeDanglingLinks(_ newMapping: SchemaMapping, rebuilt: Set<String>) throws {
        for name in newMapping.entityNames {
            guard let entity = newMapping.entities[name] else { continue }
            for (relationship, storage) in entity.relationships {
                guard let destination = newMapping.entities[relationship.destination] else { continue }
                switch storage {
                case .ownColumn(let column) where rebuilt.contains(destination.table):
                    let c = quote(column)
                    try database.execute(
                        "UPDATE \(quote(entity.table)) SET \(c) = NULL WHERE \(c) IS NOT NULL AND \(c) NOT IN "
                            + "(SELECT _pk FROM \(quote(destination.table)))")
                case .joinTable(let table, let near, let far)
                where rebuilt.contains(destination.table) || rebuilt.contains(entity.table):
                    try database.execute(
                        "DELETE FROM \(quote(table)) WHERE \(near) NOT IN (SELECT _pk FROM \(quote(entity.table))) "
                            + "OR \(far) NOT IN (SELECT _pk FROM \(quote(destination.table)))")
                default:
                    continue
                }
            }
        }
    }

    /// Moves the values of attributes that lose external storage into their cells (spec 18.2,
    /// step 5): every external reference of the old column, read and checked, becomes the
    /// bytes. Returns how many values moved.
    private func inlineExternalValues(_ newMapping: SchemaMapping) throws -> Int {
        var moved = 0
        for name in newMapping.entityNames {
            guard let entity = newMapping.entities[name], let oldEntity = oldEntity(name) else { continue }
            for attribute in entity.entity.attributes where !attribute.options.contains(.externalStorage) {
                guard let origin = oldColumn(entity: name, attribute: attribute.name),
                    let oldAttribute = oldEntity.attribute(origin),
                    oldAttribute.options.contains(.externalStorage),
                    let aside = setAside[oldEntity.table]
                else { continue }
                let c = quote(origin)
                let family = oldEntity.familyCondition(nil).map { " AND \($0)" } ?? ""
                let rows = try database.rows(
                    "SELECT _pk, \(c) FROM \(quote(aside)) WHERE typeof(\(c)) = 'text'\(family) ORDER BY _pk")
                for row in rows {
                    guard let id = row[0].int64, let text = row[1].string, let digest = Digest(hex: text)
                    else {
                        throw refuse(
                            name, attribute.name,
                            "a cell of the old store is not a blob reference; run 'deck verify'")
                    }
                    let data = try connection.blobs.read(digest)
                    try database.run(
                        "UPDATE \(quote(entity.table)) SET \(quote(attribute.name)) = ? WHERE _pk = ?",
                        [.blob(data), .integer(id)])
                    moved += 1
                }
            }
        }
        return moved
    }

    /// Drops every index and trigger the new schema does not derive (or derives otherwise) and
    /// creates those it derives that are missing.
    private func reconcileIndexesAndTriggers(_ newMapping: SchemaMapping) throws {
        let derived = try StoreObjects.derived(for: newMapping, formatVersion: PackageLayout.formatVersion)
        for object in try StoreObjects.objects(database)
        where object.type == "index" || object.type == "trigger" {
            guard object.sql != nil else { continue }  // SQLite's own indexes
            if let wanted = derived[object.name], StoreObjects.same(wanted, object) { continue }
            try database.execute("DROP \(object.type.uppercased()) \(quote(object.name))")
        }
        let present = Set(try StoreObjects.objects(database).map(\.name))
        // Indexes before triggers, in name order (the order does not change what they are).
        for type in ["index", "trigger"] {
            for object in derived.values.sorted(by: { $0.name < $1.name })
            where object.type == type && !present.contains(object.name) {
                guard let sql = object.sql else { continue }
                let result = Result { () throws(SQLiteError) in
                    try database.execute(String(decoding: sql, as: UTF8.self))
                }
                if case .failure(let error) = result {
                    guard error.code == .constraintUnique else { throw error }
                    throw refuse(
                        object.table, nil,
                        "the unique index '\(object.name)' cannot be made: two records share its values")
                }
            }
        }
    }

    /// Sets `deck_blob.refs` to the number of cells naming each blob; the commit drops the rows
    /// at 0 and removes their files after it (section 10.3).
    private func recount(_ newMapping: SchemaMapping) throws {
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

    private func writeBookkeeping(stageName: String?) throws {
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
    private func finalChecks(_ newMapping: SchemaMapping) throws {
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

    // MARK: Old values

    func oldValues(entity: String, attribute: String) throws(DeckError) -> [Int64: Value] {
        guard let mapping = oldMapping.entities[entity] else {
            throw DeckError.unknownEntity(entity, known: oldMapping.entityNames)
        }
        guard let definition = mapping.attribute(attribute) else {
            throw DeckError.unknownProperty(
                entity: entity, name: attribute, known: mapping.attributes.map(\.name))
        }
        let table = setAside[mapping.table] ?? mapping.table
        let family = mapping.familyCondition(nil).map { " WHERE \($0)" } ?? ""
        var result: [Int64: Value] = [:]
        do {
            // A table altered in place kept its old columns under their names.
            let rows = try database.rows("SELECT _pk, \(quote(attribute)) FROM \(quote(table))\(family)")
            for row in rows {
                guard let id = row[0].int64 else { continue }
                result[id] = Value(sql: row[1], attribute: definition, epoch: connection.dateEpoch) {
                    digest in
                    (try? self.database.scalar(
                        "SELECT size FROM deck_blob WHERE digest = ?", [.text(digest.hexDigest)]))??.int64
                        ?? 0
                }
            }
        } catch {
            throw DeckError.wrap(error)
        }
        return result
    }
}

@available(*, unavailable)
extension MigrationExecutor: Sendable {}
