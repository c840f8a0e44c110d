import DeckSQLite
import Foundation

/// Gives every table the new schema's shape (spec 18.2, steps 3 to 6) for a
/// ``MigrationExecutor``, whose old store it reads through (the properties' origins, the links'
/// old storage, the tables set aside): a table that only gains columns is altered in place;
/// the others are set aside and rebuilt, their rows copied by the properties' origins; join
/// tables stay, or are rebuilt from the links' old storage; values that lose external storage
/// move into their cells; indexes and triggers become those the new schema derives.
struct MigrationTableReshaper {
    /// The migration being run.
    let migration: MigrationExecutor
    var database: Database { migration.database }
    var oldMapping: SchemaMapping { migration.oldMapping }
    var diff: SchemaDiff { migration.diff }

    /// Gives every table the new schema's shape.
    /// Gives every table the new schema's shape.
    func reshape(_ newMapping: SchemaMapping, report: inout MigrationReport) throws {
        let version = PackageLayout.formatVersion
        // Which old table each new entity table continues: the old table of its entities' origins.
        var source: [String: EntityMapping] = [:]
        for root in newMapping.roots {
            for member in newMapping.members[root.table] ?? [root] {
                if let origin = migration.oldEntity(member.name) {
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
        let keptJoins = keptJoinTables(newMapping)
        // The version bookkeeping of the tables about to be rebuilt goes aside with them.
        let versions = MigrationVersions(database: database, oldMapping: oldMapping, diff: diff)
        try versions.setAside(keeping: altered.union(keptJoins))
        // Set aside every old entity table not altered, and every old join table.
        for oldRoot in oldMapping.roots where !altered.contains(oldRoot.table) {
            try setTableAside(oldRoot.table)
        }
        for (table, _, _) in oldMapping.joinTables where !keptJoins.contains(table) {
            try setTableAside(table)
        }
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
        try versions.restore(newMapping, source: source, keptJoins: keptJoins)
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
                guard case .joinTable(let table, let near, _) = storage,
                    let oldEntity = migration.oldEntity(name),
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

    /// Renames an old table out of the way, its indexes and triggers dropped (the ones the new
    /// schema derives are made again at the end).
    func setTableAside(_ table: String) throws {
        try database.dropIndexesAndTriggers(of: table)
        let aside = MigrationExecutor.setAsidePrefix + table
        try database.execute("ALTER TABLE \(quote(table)) RENAME TO \(quote(aside))")
        migration.setAside[table] = aside
    }

    /// `ALTER TABLE … ADD COLUMN` for a table whose old columns all stay, under their names and
    /// definitions, when the table's SQL afterwards is the one the new schema derives (spec
    /// 18.2, step 3). Returns how many columns it added (0 for a table that stays as it is), or
    /// nil, having changed nothing, when the table must be rebuilt.
    func alterInPlace(oldRoot: EntityMapping, newRoot: EntityMapping, newMapping: SchemaMapping)
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
                if migration.convertedAttributes.contains(member.name + "." + attribute.name) { return nil }
                if let origin = migration.oldColumn(entity: member.name, attribute: attribute.name),
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

    struct AlterMismatch: Error {}

    /// The column definitions of a `CREATE TABLE` that ``StoreDDL`` made (one per line).
    func columnDefinitions(_ sql: String) -> [String] {
        sql.split(separator: "\n").dropFirst().dropLast().map {
            var line = $0.trimmingCharacters(in: .whitespaces)
            if line.hasSuffix(",") { line.removeLast() }
            return line
        }
    }

    /// The expression that gives new column `column` of a rebuilt table its value from the old
    /// table's row, with its arguments.
    struct ColumnSource {
        var expression: String
        var arguments: [SQLValue] = []
    }

    /// Copies every record of the old table into the rebuilt one: ids, global ids, entities (by
    /// their new names), cells (by the properties' origins), defaults for added attributes.
    func copyRows(from oldRoot: EntityMapping, to newRoot: EntityMapping, newMapping: SchemaMapping)
        throws
    {
        guard let aside = migration.setAside[oldRoot.table] else { return }
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
                let source = try attributeColumn(attribute, of: newMembers)
                columns.append(quote(attribute.name))
                expressions.append(source.expression)
                arguments += source.arguments
            }
            for (relationship, storage) in member.relationships {
                guard case .ownColumn(let column) = storage, seen.insert(column).inserted else { continue }
                columns.append(quote(column))
                expressions.append(
                    try linkColumn(relationship, storage: storage, of: member, among: newMembers))
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

    /// The value of a rebuilt table's column for `attribute` from the old row: for each entity of
    /// `newMembers` that declares it, its source (``attributeSource(entity:attribute:)``), chosen by
    /// the old row's entity.
    func attributeColumn(_ attribute: StoreSchema.Attribute, of newMembers: [EntityMapping]) throws
        -> ColumnSource
    {
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
        if cases.count == 1, cases[0].hasPrefix("ELSE ") {
            return ColumnSource(expression: String(cases[0].dropFirst(5)), arguments: caseArguments)
        } else if cases.isEmpty {
            return ColumnSource(expression: "NULL", arguments: caseArguments)
        }
        return ColumnSource(
            expression: "CASE \(cases.joined(separator: " ")) ELSE NULL END", arguments: caseArguments)
    }

    /// The value of a rebuilt table's own column of `relationship` (of `member`, one of
    /// `newMembers`) from the old row: the links' old own column, or where they were kept another
    /// way (a join table, the inverse's column), the first of them; NULL for a new relationship.
    func linkColumn(
        _ relationship: StoreSchema.Relationship, storage: RelationshipStorage, of member: EntityMapping,
        among newMembers: [EntityMapping]
    ) throws -> String {
        var expression = "NULL"
        // The entity that declares it (a member may inherit it, and come first).
        let declarer =
            newMembers.first { candidate in
                candidate.entity.relationships.contains { $0.name == relationship.name }
                    && candidate.relationship(relationship.name)?.storage == storage
            }?.name ?? member.name
        if let origin = migration.linkOrigin(entity: declarer, relationship: relationship.name) {
            if let oldColumn = origin.ownColumn {
                expression = quote(oldColumn)
            } else if let links = migration.oldLinks(entity: declarer, relationship: relationship.name) {
                // Links kept another way before (a join table, the inverse's column).
                let family = newMembers.first { $0.name == declarer }?.family ?? [declarer]
                let oldFamily = family.compactMap { diff.entityOrigins[$0] }.map { "'\($0)'" }
                expression =
                    "CASE WHEN _entity IN (\(oldFamily.joined(separator: ", "))) THEN "
                    + "(SELECT min(far) FROM \(try migration.linkTable(links)) WHERE near = deck_row._pk) END"
            }
        }
        return expression
    }

    /// How a new attribute gets its value from the old row: its origin's column (the value of an
    /// attribute that loses external storage is filled later), or its default.
    func attributeSource(entity: String, attribute: StoreSchema.Attribute) throws -> ColumnSource {
        let fill = try migration.fillValue(entity: entity, attribute: attribute)
        guard let origin = migration.oldColumn(entity: entity, attribute: attribute.name) else {
            return fill.map { ColumnSource(expression: "?", arguments: [$0]) }
                ?? ColumnSource(expression: "NULL")
        }
        var expression = quote(origin)
        if let oldAttribute = migration.oldEntity(entity)?.attribute(origin),
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

    /// After `ADD COLUMN`: the added attributes' defaults, for the records of their entities.
    func fillInPlace(newRoot: EntityMapping, newMapping: SchemaMapping) throws {
        for member in newMapping.members[newRoot.table] ?? [newRoot] {
            // An added attribute's column, and a required one's null cells, get the default.
            for attribute in member.entity.attributes
            where !attribute.isOptional
                || migration.oldColumn(entity: member.name, attribute: attribute.name) == nil
            {
                guard let fill = try migration.fillValue(entity: member.name, attribute: attribute) else {
                    continue
                }
                let family = member.familyCondition(nil).map { " AND \($0)" } ?? ""
                try database.run(
                    "UPDATE \(quote(newRoot.table)) SET \(quote(attribute.name)) = ? "
                        + "WHERE \(quote(attribute.name)) IS NULL\(family)", [fill])
            }
            // An added own column of links that were kept another way (a join table, the inverse's
            // column) gets them.
            for relationship in member.entity.relationships {
                guard case .ownColumn(let column)? = member.relationship(relationship.name)?.storage,
                    migration.linkOrigin(entity: member.name, relationship: relationship.name)?.ownColumn
                        == nil,
                    let links = migration.oldLinks(entity: member.name, relationship: relationship.name)
                else { continue }
                let family = member.familyCondition(nil).map { " WHERE \($0)" } ?? ""
                let table = quote(newRoot.table)
                try database.execute(
                    "UPDATE \(table) SET \(quote(column)) = (SELECT min(far) FROM \(try migration.linkTable(links)) "
                        + "WHERE near = \(table)._pk)\(family)")
            }
        }
    }

    /// The new join tables: each filled from the old storage of the links it continues.
    func rebuildJoinTables(_ newMapping: SchemaMapping, kept: Set<String>) throws {
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
                    let links = migration.oldLinks(entity: name, relationship: relationship.name),
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
    func removeDanglingLinks(_ newMapping: SchemaMapping, rebuilt: Set<String>) throws {
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
    func inlineExternalValues(_ newMapping: SchemaMapping) throws -> Int {
        var moved = 0
        for name in newMapping.entityNames {
            guard let entity = newMapping.entities[name], let oldEntity = migration.oldEntity(name) else {
                continue
            }
            for attribute in entity.entity.attributes where !attribute.options.contains(.externalStorage) {
                guard let origin = migration.oldColumn(entity: name, attribute: attribute.name),
                    let oldAttribute = oldEntity.attribute(origin),
                    oldAttribute.options.contains(.externalStorage),
                    let aside = migration.setAside[oldEntity.table]
                else { continue }
                let c = quote(origin)
                let family = oldEntity.familyCondition(nil).map { " AND \($0)" } ?? ""
                let rows = try database.rows(
                    "SELECT _pk, \(c) FROM \(quote(aside)) WHERE typeof(\(c)) = 'text'\(family) ORDER BY _pk")
                for row in rows {
                    guard let id = row[0].int64, let text = row[1].string, let digest = Digest(hex: text)
                    else {
                        throw migration.refuse(
                            name, attribute.name,
                            "a cell of the old store is not a blob reference; run 'deck verify'")
                    }
                    let data = try migration.connection.blobs.read(digest)
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
    func reconcileIndexesAndTriggers(_ newMapping: SchemaMapping) throws {
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
                    throw migration.refuse(
                        object.table, nil,
                        "the unique index '\(object.name)' cannot be made: two records share its values")
                }
            }
        }
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
