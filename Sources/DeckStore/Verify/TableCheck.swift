import DeckSQLite
import Foundation

/// The table checks: the store's objects (tables, indexes, triggers, views) against those the
/// schema derives, column by column where a table differs (`column-missing`, `column-type`, and
/// the codes of ``StoreObjects``); the rows' entities (`entity-unknown`); references that may
/// dangle by design (`dangling-reference`, untidy); and a version 2 store's identity rules
/// (`gid-invalid`, `key-sequence`).
enum TableCheck {
    /// Compares the store's objects (tables, indexes, triggers, views: their type, table and SQL)
    /// with those the schema derives, and for each derived table that differs, says how its
    /// columns differ. Returns the derived tables the store has with every derived column, by name.
    static func run(
        _ db: Database, mapping: SchemaMapping, formatVersion: Int, storePath: String,
        report: inout VerificationReport
    ) throws -> Set<String> {
        let expected = try StoreObjects.expectedStore(for: mapping, formatVersion: formatVersion)
        defer { expected.close() }
        let derived = try StoreObjects.derived(from: expected)
        var have: [String: String] = [:]
        for object in try StoreObjects.objects(db) { have[object.name] = object.type }
        let altered = try compareObjects(db, derived: derived, formatVersion: formatVersion, report: &report)
        // Column by column, for the derived tables whose definition differs.
        var complete: Set<String> = []
        for (name, object) in derived where object.type == "table" && have[name] == "table" {
            if try compareColumns(db, expected: expected, table: name, altered: altered, report: &report) {
                complete.insert(name)
            }
        }
        try checkEntities(db, mapping: mapping, tables: complete, report: &report)
        try checkUnenforcedReferences(db, mapping: mapping, tables: complete, report: &report)
        return complete
    }

    /// Reports every difference between the store's objects and `derived`; returns the tables
    /// whose definition differs.
    static func compareObjects(
        _ db: Database, derived: [String: StoreObjects.Object], formatVersion: Int,
        report: inout VerificationReport
    ) throws -> Set<String> {
        var altered: Set<String> = []
        for difference in try StoreObjects.differences(db, derived: derived, formatVersion: formatVersion) {
            var message = difference.message
            if case .altered(let actual) = difference.kind, actual.type == "table",
                difference.object.type == "table"
            {
                altered.insert(difference.object.name)
                if try !isStrict(db, actual.name) {
                    message += "; it is not STRICT, so SQLite does not enforce its column types"
                }
            }
            report.add(
                difference.isCorruption ? .corruption : .untidy, difference.code, difference.object.name,
                message)
        }
        return altered
    }

    /// Compares the columns of `table` with those of the expected store (all of them when the
    /// table is `altered`, else only whether each exists); returns whether it has every one.
    static func compareColumns(
        _ db: Database, expected: ExpectedStore, table name: String, altered: Set<String>,
        report: inout VerificationReport
    ) throws -> Bool {
        let wantColumns =
            try expected.database(holding: name)?.rows(
                "SELECT name, type, \"notnull\" FROM pragma_table_info(?)", [.text(name)]) ?? []
        let haveColumns = try db.rows(
            "SELECT name, type, \"notnull\" FROM pragma_table_info(?)", [.text(name)])
        let haveByName = Dictionary(
            haveColumns.map { ($0[0].string ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        var hasAll = true
        for column in wantColumns
        where altered.contains(name) || haveByName[column[0].string ?? ""] == nil {
            let columnName = column[0].string ?? ""
            guard let actualColumn = haveByName[columnName] else {
                hasAll = false
                report.add(
                    .corruption, "column-missing", "\(name).\(columnName)",
                    "the schema requires this column")
                continue
            }
            if actualColumn[1] != column[1] || actualColumn[2] != column[2] {
                let notNull = { (row: [SQLValue]) in row[2].int64 == 1 ? " NOT NULL" : "" }
                report.add(
                    .corruption, "column-type", "\(name).\(columnName)",
                    "column type is \(actualColumn[1].string ?? "?")\(notNull(actualColumn)), the schema maps to "
                        + "\(column[1].string ?? "?")\(notNull(column))"
                )
            }
        }
        return hasAll
    }

    /// Counts the records of the complete entity tables, and reports rows whose `_entity` is not
    /// in their table's hierarchy.
    static func checkEntities(
        _ db: Database, mapping: SchemaMapping, tables complete: Set<String>, report: inout VerificationReport
    ) throws {
        for root in mapping.roots where complete.contains(root.table) {
            let allowed = Set(mapping.entities.values.filter { $0.table == root.table }.map(\.name))
            for row in try db.rows(
                "SELECT _entity, count(*), min(_pk) FROM \(quote(root.table)) GROUP BY _entity")
            {
                let name = row[0].string ?? "NULL"
                report.records += Int(row[1].int64 ?? 0)
                if !allowed.contains(name) {
                    report.add(
                        .corruption, "entity-unknown", root.table,
                        "\(row[1].int64 ?? 0) row(s) have _entity '\(name)', which is not in this table's hierarchy "
                            + "(the first: #\(row[2].int64.map(String.init) ?? "?"))")
                }
            }
        }
    }

    /// References without a foreign key (delete rule noAction) may dangle by design; says so
    /// (untidy) for those that do, in the complete tables.
    static func checkUnenforcedReferences(
        _ db: Database, mapping: SchemaMapping, tables complete: Set<String>, report: inout VerificationReport
    ) throws {
        var checked: Set<String> = []
        for name in mapping.entityNames {
            guard let entity = mapping.entities[name], complete.contains(entity.table) else { continue }
            for (relationship, storage) in entity.relationships {
                guard case .ownColumn(let column) = storage,
                    let destination = mapping.entities[relationship.destination],
                    complete.contains(destination.table),
                    checked.insert(entity.table + "." + column).inserted
                else { continue }
                let inverseRule = relationship.inverse.flatMap {
                    destination.relationship($0)?.relationship.deleteRule
                }
                guard relationship.deleteRule == .noAction || inverseRule == .noAction else { continue }
                let sql =
                    "SELECT count(*), min(r._pk) FROM \(quote(entity.table)) r WHERE r.\(quote(column)) IS NOT NULL "
                    + "AND NOT EXISTS (SELECT 1 FROM \(quote(destination.table)) d WHERE d._pk = r.\(quote(column)))"
                guard let row = try db.rows(sql).first, let count = row[0].int64, count > 0 else { continue }
                report.add(
                    .untidy, "dangling-reference", "\(entity.table) #\(row[1].int64 ?? 0)",
                    "'\(column)' and \(count - 1) more record(s) refer to a deleted \(relationship.destination) "
                        + "(delete rule noAction)")
            }
        }
    }

    /// The identity rules of a version 2 store (spec: section 6.10), for the complete entity
    /// tables: every global id is 16 bytes (the table's CHECK says so, but a store from elsewhere
    /// may have been written with checks off; each table's unique index keeps them unique), and
    /// `sqlite_sequence` holds, for every table with rows, a value at least its highest key, so
    /// no key is ever given out again.
    static func checkIdentity(
        _ db: Database, mapping: SchemaMapping, tables: Set<String>, storePath: String,
        report: inout VerificationReport
    ) throws {
        let roots = mapping.roots.map(\.table).filter { tables.contains($0) }
        guard !roots.isEmpty else { return }
        var sequences: [String: SQLValue] = [:]
        var reported: Set<String> = []
        for row in try db.rows("SELECT name, seq FROM sqlite_sequence") {
            guard let name = row[0].string else { continue }
            if sequences[name] != nil, roots.contains(name), reported.insert(name).inserted {
                // SQLite keeps one row a table; a second is planted, and says two things at once.
                report.add(
                    .corruption, "key-sequence", name, "sqlite_sequence has more than one row for the table")
            }
            // Of two rows, the higher counts: keys up to it may have been given out.
            if let seen = sequences[name]?.int64, let seq = row[1].int64, seen > seq { continue }
            sequences[name] = row[1]
        }
        for table in roots {
            let row = try db.rows(
                "SELECT max(_pk), count(*) FILTER (WHERE typeof(_gid) != 'blob' OR length(_gid) != 16), "
                    + "min(_pk) FILTER (WHERE typeof(_gid) != 'blob' OR length(_gid) != 16) FROM \(quote(table))"
            )[0]
            if let bad = row[1].int64, bad > 0 {
                report.add(
                    .corruption, "gid-invalid", "\(table) #\(row[2].int64 ?? 0)",
                    "_gid is not 16 bytes (and \(bad - 1) more record(s) of this table)")
            }
            guard let highest = row[0].int64 else { continue }
            let sequence = sequences[table]?.int64
            if (sequence ?? Int64.min) < highest {
                report.add(
                    .corruption, "key-sequence", table,
                    "sqlite_sequence says the highest key given out is "
                        + (sequence.map(String.init) ?? "nothing")
                        + ", but the table holds key \(highest): a deleted key could be given out again")
            }
        }
    }

    /// Whether the store's table `name` is STRICT.
    static func isStrict(_ db: Database, _ name: String) throws -> Bool {
        try db.scalar(
            "SELECT \"strict\" FROM pragma_table_list WHERE schema = 'main' AND name = ?", [.text(name)])?
            .int64 == 1
    }
}
