import DeckSQLite
import Foundation

/// Carries a version 5 store's version bookkeeping (spec: section 20) through a migration's
/// reshaping of the tables (spec 18.2): the bookkeeping of a table altered in place or kept as it
/// is stays where it is; that of a table rebuilt is set aside with it (its triggers dropped, so
/// the copy of its rows versions nothing) and made again after, from the set-aside tables of the
/// old table it continues, records keeping their versions (the old table's ranges of inserted
/// keys) and tombstones, cells theirs under their properties' new names, links theirs from the
/// join table that held them (the same, or the one a relationship's origin was stored in); links
/// with no origin get the origin's version, clock 0.
struct MigrationVersions {
    let database: Database
    let oldMapping: SchemaMapping
    let diff: SchemaDiff

    private static let prefix = "deck_migrating_"

    private func asideName(_ bookkeeping: String) -> String { Self.prefix + bookkeeping }

    /// Sets aside the bookkeeping of the old tables the migration rebuilds: every entity and join
    /// table but `kept`, those altered in place or kept as they are, whose bookkeeping stays where
    /// it is (their triggers, made again with the others when their definition changes, version
    /// what the migration changes in them). A rebuilt table's triggers go with it.
    func setAside(keeping kept: Set<String>) throws {
        var tables: [String] = []
        for root in oldMapping.roots where !kept.contains(root.table) {
            tables += [VersionDDL.rowsTable(root.table), VersionDDL.cellsTable(root.table)]
            try database.run(
                "UPDATE deck_inserts SET tbl = ? WHERE tbl = ?",
                [.text(Self.prefix + root.table), .text(root.table)])
        }
        for (table, _, _) in oldMapping.joinTables where !kept.contains(table) {
            tables.append(VersionDDL.linksTable(table))
        }
        for table in tables where try database.hasTable(table) {
            try database.dropIndexesAndTriggers(of: table)
            try database.execute("ALTER TABLE \(quote(table)) RENAME TO \(quote(asideName(table)))")
        }
    }

    /// Makes the new tables' bookkeeping (tables and indexes; the triggers come with the other
    /// derived triggers) and fills it. `source` names, for each new entity table, the old table
    /// it continues; `keptJoins` the join tables that stay as they were.
    func restore(_ newMapping: SchemaMapping, source: [String: EntityMapping], keptJoins: Set<String>) throws
    {
        for root in newMapping.roots {
            // A table altered in place kept its bookkeeping.
            if try database.hasTable(VersionDDL.rowsTable(root.table)) { continue }
            let statements = VersionDDL.tableStatements(
                root.table, columns: VersionDDL.propertyColumns(root, mapping: newMapping))
            for statement in statements where !statement.hasPrefix("CREATE TRIGGER") {
                try database.execute(statement)
            }
            guard let oldRoot = source[root.table] else { continue }
            // The keys the old table's transactions inserted are the new table's.
            try database.run(
                "UPDATE deck_inserts SET tbl = ? WHERE tbl = ?",
                [.text(root.table), .text(Self.prefix + oldRoot.table)])
            let rows = quote(VersionDDL.rowsTable(root.table))
            let oldRows = asideName(VersionDDL.rowsTable(oldRoot.table))
            if try database.hasTable(oldRows) {
                // Tombstones, and the records the new table still holds.
                try database.execute(
                    "INSERT INTO \(rows) SELECT * FROM \(quote(oldRows)) "
                        + "WHERE alive % 2 = 0 OR _pk IN (SELECT _pk FROM \(quote(root.table)))")
            }
            let oldCells = asideName(VersionDDL.cellsTable(oldRoot.table))
            let renames = columnOrigins(root, newMapping: newMapping)
            if try database.hasTable(oldCells), !renames.isEmpty {
                var arguments: [SQLValue] = []
                var cases: [String] = []
                for (old, new) in renames.sorted(by: { $0.key < $1.key }) {
                    cases.append("WHEN ? THEN ?")
                    arguments += [.text(old), .text(new)]
                }
                try database.run(
                    "INSERT INTO \(quote(VersionDDL.cellsTable(root.table))) "
                        + "SELECT _pk, CASE property \(cases.joined(separator: " ")) END, clock, writer "
                        + "FROM \(quote(oldCells)) WHERE property IN ("
                        + Array(repeating: "?", count: renames.count).joined(separator: ", ")
                        + ") AND (_pk IN (SELECT _pk FROM \(quote(root.table))) OR _pk IN (SELECT _pk FROM \(rows)))",
                    arguments + renames.keys.sorted().map { .text($0) })
            }
        }
        for (table, _, _) in newMapping.joinTables {
            // A join table kept as it was kept its bookkeeping.
            if try database.hasTable(VersionDDL.linksTable(table)) { continue }
            for statement in VersionDDL.joinTableStatements(table)
            where !statement.hasPrefix("CREATE TRIGGER") {
                try database.execute(statement)
            }
            // The old join table whose links this one's continue: itself when it stays, or the one
            // of the relationship's origin when the table was made anew (its destination renamed,
            // say), its pairs perhaps the other way round.
            guard
                let (oldTable, swapped) =
                    keptJoins.contains(table) ? (table, false) : joinOrigin(of: table, newMapping: newMapping)
            else { continue }
            let oldLinks = asideName(VersionDDL.linksTable(oldTable))
            guard try database.hasTable(oldLinks) else { continue }
            let (source, target) = swapped ? ("l.target", "l.source") : ("l.source", "l.target")
            // Removals, and the links the table still holds (those the migration removed with
            // their records go, as the records' versions do).
            try database.execute(
                "INSERT INTO \(quote(VersionDDL.linksTable(table))) "
                    + "SELECT \(source), \(target), l.alive, l.clock, l.writer FROM \(quote(oldLinks)) AS l "
                    + "WHERE l.alive % 2 = 0 OR EXISTS (SELECT 1 FROM \(quote(table)) AS j "
                    + "WHERE j.source = \(source) AND j.target = \(target))")
        }
        try VersionDDL.versionExisting(database, mapping: newMapping)
        try database.run(
            "DELETE FROM deck_inserts WHERE tbl LIKE ? ESCAPE '\\'", [.text("deck\\_migrating\\_%")])
        for row in try database.rows(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE ? ESCAPE '\\'",
            [.text("deck\\_migrating\\_%")])
        {
            if let name = row[0].string { try database.execute("DROP TABLE \(quote(name))") }
        }
    }

    /// The old join table that held the links new join table `table` continues, and whether its
    /// pairs are the other way round: found through the origin of a relationship stored in it.
    private func joinOrigin(of table: String, newMapping: SchemaMapping) -> (table: String, swapped: Bool)? {
        for name in newMapping.entityNames {
            guard let entity = newMapping.entities[name], let oldName = diff.entityOrigins[name],
                let oldEntity = oldMapping.entities[oldName]
            else { continue }
            for (relationship, storage) in entity.relationships {
                guard case .joinTable(let newTable, let near, _) = storage, newTable == table,
                    let origin = diff.propertyOrigins[name + "." + relationship.name],
                    let (_, oldStorage) = oldEntity.relationship(origin),
                    case .joinTable(let oldTable, let oldNear, _) = oldStorage
                else { continue }
                return (oldTable, oldNear != near)
            }
        }
        return nil
    }

    /// For each property column of the new table `root` that continues a column of the old
    /// table: the old column's name, mapped to the new one.
    private func columnOrigins(_ root: EntityMapping, newMapping: SchemaMapping) -> [String: String] {
        var result: [String: String] = [:]
        for member in newMapping.members[root.table] ?? [root] {
            guard let oldName = diff.entityOrigins[member.name], let oldEntity = oldMapping.entities[oldName]
            else { continue }
            for attribute in member.attributes {
                if let origin = diff.propertyOrigins[member.name + "." + attribute.name],
                    oldEntity.attribute(origin) != nil
                {
                    result[origin] = attribute.name
                }
            }
            for (relationship, storage) in member.relationships {
                guard case .ownColumn(let column) = storage,
                    let origin = diff.propertyOrigins[member.name + "." + relationship.name],
                    let (_, oldStorage) = oldEntity.relationship(origin),
                    case .ownColumn(let oldColumn) = oldStorage
                else { continue }
                result[oldColumn] = column
            }
        }
        return result
    }
}
