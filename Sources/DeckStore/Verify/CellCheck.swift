import DeckSQLite
import Foundation

/// The cell check (findings `value-invalid`, corruption, and `legacy-value`): every stored
/// value against its attribute's encoding, once the tables are known to be those the schema
/// derives and every cell to have its column's storage class (``StorageClassCheck``).
enum CellCheck {
    /// Findings reported per column before the rest are counted in one summary finding.
    static let findingsPerColumn = 10

    /// Checks every stored cell against its attribute's encoding (spec 7.1; finding
    /// `value-invalid`, corruption): the storage class, `bool` 0 or 1, `double` finite, `date`
    /// finite and in range, `uuid` canonical, `url` an absolute URI, `decimal` canonical and within
    /// its limits, `json` valid (and not `null` when required), inline `data` a BLOB and external `data` a BLOB or
    /// TEXT (the digest's form is `reference-malformed`); a required attribute is not NULL in the
    /// rows of entities that have it, and rows of entities that do not have it hold NULL there.
    /// A legacy value (spec 7.7: what an earlier Deck wrote under a rule since tightened) is a
    /// `legacy-value` note instead, never corruption. Columns the store lacks are skipped
    /// (`column-missing` reports them). Dates count from `dateEpoch`, the store's (spec 4.2).
    static func run(
        _ db: Database, mapping: SchemaMapping, dateEpoch: DateEpoch, report: inout VerificationReport
    ) throws {
        for root in mapping.roots {
            let table = root.table
            let columns = Set(
                try db.rows("SELECT name FROM pragma_table_info(?)", [.text(table)]).compactMap {
                    $0[0].string
                })
            guard columns.contains("_pk"), columns.contains("_entity") else { continue }
            let members = mapping.entityNames.compactMap { mapping.entities[$0] }.filter { $0.table == table }
            // Each column once, with the entities that have the attribute and those that require it.
            var order: [String] = []
            var byColumn: [String: (attribute: Attribute, owners: [String], required: [String])] = [:]
            for member in members {
                for attribute in member.attributes where columns.contains(attribute.name) {
                    if byColumn[attribute.name] == nil {
                        order.append(attribute.name)
                        byColumn[attribute.name] = (attribute, [], [])
                    }
                    byColumn[attribute.name]?.owners.append(member.name)
                    if !attribute.isOptional { byColumn[attribute.name]?.required.append(member.name) }
                }
            }
            for column in order {
                guard let (attribute, owners, required) = byColumn[column] else { continue }
                try checkColumn(
                    db, table: table, attribute: attribute, members: members.map(\.name), owners: owners,
                    required: required,
                    declaredByRoot: root.entity.attributes.contains { $0.name == attribute.name },
                    dateEpoch: dateEpoch, report: &report)
            }
        }
    }

    /// Checks one column of `table`: the cells of the entities that have the attribute (`owners`)
    /// against its encoding, those of the other `members` for NULL, and, where the root entity does
    /// not declare it (so the column is not NOT NULL), those of the entities that require it.
    private static func checkColumn(
        _ db: Database, table: String, attribute: Attribute, members: [String], owners: [String],
        required: [String], declaredByRoot: Bool, dateEpoch: DateEpoch, report: inout VerificationReport
    ) throws {
        guard
            let sql = suspectRows(
                table: table, attribute: attribute, members: members, owners: owners, required: required,
                declaredByRoot: declaredByRoot, dateEpoch: dateEpoch)
        else { return }
        var reported = 0
        var more = 0
        var legacyReported = 0
        var legacyMore = 0
        let ownerSet = Set(owners)
        try db.forEachRow(sql) { row in
            let entity = row.text(at: 1)
            let cell = row.value(at: 2)
            // A value an earlier Deck wrote is a note, never corruption (spec 7.7).
            if ownerSet.contains(entity),
                let legacy = Value.legacyValue(
                    cell, type: attribute.type, isOptional: attribute.isOptional, epoch: dateEpoch)
            {
                if legacyReported < findingsPerColumn {
                    legacyReported += 1
                    report.add(
                        .legacy, "legacy-value", "\(entity) #\(row.int64(at: 0)).\(attribute.name)",
                        "holds \(legacy), which an earlier Deck wrote; read as spec 7.7 says, kept as it is")
                } else {
                    legacyMore += 1
                }
                return
            }
            guard
                let problem = cellProblem(
                    cell, attribute: attribute, entityHasIt: ownerSet.contains(entity), dateEpoch: dateEpoch)
            else { return }
            if reported < findingsPerColumn {
                reported += 1
                report.add(
                    .corruption, "value-invalid", "\(entity) #\(row.int64(at: 0)).\(attribute.name)", problem)
            } else {
                more += 1
            }
        }
        if legacyMore > 0 {
            report.add(
                .legacy, "legacy-value", "\(table).\(attribute.name)",
                "and \(legacyMore) more legacy value(s) in this column")
        }
        if more > 0 {
            report.add(
                .corruption, "value-invalid", "\(table).\(attribute.name)",
                "and \(more) more invalid cell(s) in this column")
        }
    }

    /// The statement selecting (`_pk`, `_entity`, the cell) the rows of `table` whose cell in the
    /// attribute's column may be wrong, in key order; nil when none can be. SQL narrows the rows;
    /// Swift decides (and says why).
    private static func suspectRows(
        table: String, attribute: Attribute, members: [String], owners: [String], required: [String],
        declaredByRoot: Bool, dateEpoch: DateEpoch
    ) -> String? {
        let c = quote(attribute.name)
        func list(_ names: [String]) -> String {
            "(" + names.map(quoteLiteral).joined(separator: ", ") + ")"
        }
        var conditions: [String] = []
        if let suspect = suspectValues(attribute, dateEpoch: dateEpoch) {
            conditions.append("(\(c) IS NOT NULL AND _entity IN \(list(owners)) AND (\(suspect)))")
        }
        // Rows of an unknown entity are `entity-unknown`'s.
        let others = members.filter { !owners.contains($0) }
        if !others.isEmpty { conditions.append("(\(c) IS NOT NULL AND _entity IN \(list(others)))") }
        if !required.isEmpty && !declaredByRoot {
            conditions.append("(\(c) IS NULL AND _entity IN \(list(required)))")
        }
        guard !conditions.isEmpty else { return nil }
        return "SELECT _pk, _entity, \(c) FROM \(quote(table)) WHERE " + conditions.joined(separator: " OR ")
            + " ORDER BY _pk"
    }

    /// The SQL condition on a cell of the attribute's type that may make it invalid; nil when
    /// every cell of the right storage class is valid. Storage classes, bool's 0 and 1, and NULL
    /// in a NOT NULL column are `cell-type`'s (``StorageClassCheck``); only cells of the right
    /// storage class are examined here.
    private static func suspectValues(_ attribute: Attribute, dateEpoch: DateEpoch) -> String? {
        let c = quote(attribute.name)
        switch attribute.type {
        case .string, .integer, .bool, .data: return nil
        case .double: return "typeof(\(c)) = 'real' AND abs(\(c)) > 1.7976931348623157e308"
        case .date:
            let (earliest, end) = Timestamp.range(in: dateEpoch)
            return
                "typeof(\(c)) IN ('real', 'integer') AND (\(c) < \(earliest) "
                + "OR \(c) >= \(end) OR abs(\(c)) > 1.7976931348623157e308)"
        case .uuid:
            let hex = "[0-9a-f]"
            let pattern = [8, 4, 4, 4, 12].map { String(repeating: hex, count: $0) }.joined(separator: "-")
            return "typeof(\(c)) = 'text' AND NOT (\(c) GLOB '\(pattern)')"
        case .url, .decimal, .json: return "typeof(\(c)) = 'text'"
        }
    }

    /// What is wrong with one cell, or nil when it is a valid value of `attribute`.
    static func cellProblem(_ cell: SQLValue, attribute: Attribute, entityHasIt: Bool, dateEpoch: DateEpoch)
        -> String?
    {
        let type = attribute.type.rawValue
        if case .null = cell {
            return entityHasIt && !attribute.isOptional
                ? "is null, but the attribute is required" : nil
        }
        guard entityHasIt else {
            return "holds \(shown(cell)), but this entity has no attribute '\(attribute.name)'"
        }
        func storage(_ expected: String) -> String {
            "holds \(cell.storageClass.uppercased()) \(shown(cell)); \(attribute.type.article) \(type) attribute stores \(expected)"
        }
        switch (attribute.type, cell) {
        case (.string, .text), (.integer, .integer): return nil
        case (.bool, .integer(let v)): return v == 0 || v == 1 ? nil : "holds \(v); a bool is 0 or 1"
        case (.double, .real(let v)): return v.isFinite ? nil : "holds \(v); a double is finite"
        case (.double, .integer): return nil
        case (.date, .real(let v)):
            return Timestamp(seconds: v, epoch: dateEpoch).rangeProblem.map {
                "holds \(v) seconds: a date \($0)"
            }
        case (.date, .integer(let v)):
            return Timestamp(seconds: Double(v), epoch: dateEpoch).rangeProblem.map {
                "holds \(v) seconds: a date \($0)"
            }
        case (.data, .blob): return nil
        case (.data, .text) where attribute.options.contains(.externalStorage): return nil
        case (.uuid, .text(let v)):
            return ValueSyntax.isCanonicalUUID(v)
                ? nil : "holds \(shown(cell)); a uuid is 36 characters of lowercase hex, 8-4-4-4-12"
        case (.url, .text(let v)):
            return Value.storedURL(v) != nil
                ? nil : "holds \(shown(cell)), which is not an absolute RFC 3986 URL"
        case (.decimal, .text(let v)):
            guard let number = DecimalNumber(v) else {
                return "holds \(shown(cell)), which is not a decimal number"
            }
            if let problem = number.decimalLimitViolation {
                return "holds a decimal beyond the limits: \(problem)"
            }
            return number.plainText == v
                ? nil : "holds \(shown(cell)), not the canonical form '\(number.plainText)'"
        case (.json, .text(let v)):
            do {
                try JSONText.validate(v)
            } catch {
                return "holds text that is not valid JSON: \(error)"
            }
            // The text null reads as no value (earlier writers stored it); wrong only where required.
            return JSONText.isNull(v) && !attribute.isOptional
                ? "holds the JSON text null, which is no value, but the attribute is required" : nil
        case (.string, _), (.integer, _), (.bool, _), (.uuid, _), (.url, _), (.decimal, _), (.json, _):
            return storage(attribute.type == .integer || attribute.type == .bool ? "INTEGER" : "TEXT")
        case (.double, _), (.date, _): return storage("REAL")
        case (.data, _):
            return storage(attribute.options.contains(.externalStorage) ? "BLOB or a TEXT digest" : "BLOB")
        }
    }

    private static func shown(_ cell: SQLValue) -> String {
        switch cell {
        case .text(let v): "'" + (v.count > 40 ? String(v.prefix(40)) + "…" : v) + "'"
        case .blob(let v): "<\(v.count) bytes>"
        default: cell.description
        }
    }
}
