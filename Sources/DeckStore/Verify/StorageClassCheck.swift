import DeckSQLite
import Foundation

/// The storage-class check (finding `cell-type`, corruption): every cell of the entity and join
/// tables has a storage class its column's type allows (spec: section 7.1), and NOT NULL columns
/// hold no NULL. STRICT tables make SQLite enforce this, but a store can be written with the
/// table briefly not STRICT or with CHECK constraints ignored; one scan per table finds what
/// slipped through.
enum StorageClassCheck {
    /// One column's rule: the storage classes it may hold, and an extra condition.
    struct Rule {
        let column: String
        let description: String
        let classes: [String]
        var condition: String? = nil
    }

    /// Checks the entity and join tables of `mapping` that are among `tables` (the derived tables
    /// the store has with every derived column).
    static func run(
        _ db: Database, mapping: SchemaMapping, tables: Set<String>, report: inout VerificationReport
    ) throws {
        for root in mapping.roots where tables.contains(root.table) {
            try check(
                db, table: root.table, key: "_pk", rules: entityRules(root, mapping: mapping), report: &report
            )
        }
        for (table, _, _) in mapping.joinTables where tables.contains(table) {
            let rules = ["source", "target"].map {
                Rule(
                    column: $0, description: "a join table holds record ids (integers)",
                    classes: ["integer"])
            }
            try check(db, table: table, key: nil, rules: rules, report: &report)
        }
    }

    /// The rules of the table of the hierarchy `root` heads: `_entity`, then each attribute and
    /// to-one relationship column of its entities, once.
    static func entityRules(_ root: EntityMapping, mapping: SchemaMapping) -> [Rule] {
        var rules = [
            Rule(
                column: "_entity", description: "_entity holds the entity's name (text)",
                classes: ["text"])
        ]
        var seen: Set<String> = []
        for name in mapping.entityNames {
            guard let member = mapping.entities[name], member.table == root.table else { continue }
            for attribute in member.attributes where seen.insert(attribute.name).inserted {
                let required =
                    !attribute.isOptional && root.entity.attributes.contains { $0.name == attribute.name }
                rules.append(rule(for: attribute, required: required))
            }
            for (_, storage) in member.relationships {
                guard case .ownColumn(let column) = storage, seen.insert(column).inserted else {
                    continue
                }
                rules.append(
                    Rule(
                        column: column,
                        description: "a to-one relationship column holds record ids (integers)",
                        classes: ["integer", "null"]))
            }
        }
        return rules
    }

    /// The rule of an attribute's column; `required` when its table declares it NOT NULL.
    static func rule(for attribute: Attribute, required: Bool) -> Rule {
        let null = required ? [] : ["null"]
        let type = attribute.type.rawValue
        switch attribute.type {
        case .string, .uuid, .url, .decimal, .json:
            return Rule(
                column: attribute.name, description: "a \(type) column holds text",
                classes: ["text"] + null)
        case .integer:
            return Rule(
                column: attribute.name, description: "an integer column holds integers",
                classes: ["integer"] + null)
        case .bool:
            return Rule(
                column: attribute.name, description: "a bool column holds the integers 0 and 1",
                classes: ["integer"] + null,
                condition:
                    "(typeof(\(quote(attribute.name))) = 'null' OR \(quote(attribute.name)) IN (0, 1))"
            )
        case .double, .date:
            return Rule(
                column: attribute.name,
                description: "a \(type) column holds numbers (real or integer)",
                classes: ["real", "integer"] + null)
        case .data where attribute.options.contains(.externalStorage):
            return Rule(
                column: attribute.name,
                description:
                    "an external-storage data column holds bytes (blob) or a digest (text)",
                classes: ["blob", "text"] + null)
        case .data:
            return Rule(
                column: attribute.name, description: "a data column holds bytes (blob)",
                classes: ["blob"] + null)
        }
    }

    /// Checks `rules` on `table` in one scan. `key`: the rowid column naming the first offending
    /// row (join tables have none).
    static func check(
        _ db: Database, table: String, key: String?, rules: [Rule], report: inout VerificationReport
    ) throws {
        guard !rules.isEmpty else { return }
        // Two result columns per rule: stay well below SQLite's 2,000 columns in a result
        // (a table may have 1,000 columns, spec 5.9).
        let chunk = 400
        guard rules.count <= chunk else {
            for start in stride(from: 0, to: rules.count, by: chunk) {
                try check(
                    db, table: table, key: key, rules: Array(rules[start..<min(start + chunk, rules.count)]),
                    report: &report)
            }
            return
        }
        var conditions: [String] = []
        for rule in rules {
            let c = quote(rule.column)
            var ok = "typeof(\(c)) IN (" + rule.classes.map { "'\($0)'" }.joined(separator: ", ") + ")"
            if let extra = rule.condition { ok = "(\(ok) AND \(extra))" }
            conditions.append("NOT (\(ok))")
        }
        // Most stores have nothing to report: one scan that stops at the first broken cell
        // costs half of the counting below, which evaluates each condition twice per row.
        let anyBroken =
            "SELECT 1 FROM \(quote(table)) WHERE " + conditions.joined(separator: " OR ") + " LIMIT 1"
        guard try !db.rows(anyBroken).isEmpty else { return }
        let selections = conditions.map { condition in
            "count(*) FILTER (WHERE \(condition)), "
                + (key.map { "min(\($0)) FILTER (WHERE \(condition))" } ?? "NULL")
        }
        guard
            let row = try db.rows(
                "SELECT " + selections.joined(separator: ", ") + " FROM \(quote(table))"
            ).first
        else { return }
        try reportBroken(rules, row: row, db, table: table, key: key, report: &report)
    }

    /// Reports the rules that `row`, the scan's result (per rule, the count of rows breaking it
    /// and the key of the first), says are broken, with the storage class of the first such cell.
    private static func reportBroken(
        _ rules: [Rule], row: [SQLValue], _ db: Database, table: String, key: String?,
        report: inout VerificationReport
    ) throws {
        for (index, rule) in rules.enumerated() {
            let count = row[2 * index].int64 ?? 0
            guard count > 0 else { continue }
            var object = table
            var what = "a value of another storage class"
            if let key, let first = row[2 * index + 1].int64 {
                object = "\(table) #\(first)"
                let actual =
                    try db.scalar(
                        "SELECT typeof(\(quote(rule.column))) FROM \(quote(table)) WHERE \(key) = ?",
                        [.integer(first)])?
                    .string ?? "?"
                what = actual == "null" ? "NULL" : "a value of storage class \(actual)"
            }
            report.add(
                .corruption, "cell-type", object,
                "column '\(rule.column)' holds \(what), but \(rule.description)"
                    + (count > 1 ? " (\(count) rows in all)" : ""))
        }
    }
}
