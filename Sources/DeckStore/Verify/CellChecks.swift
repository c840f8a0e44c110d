import DeckSQLite
import Foundation

extension PackageVerifier {
    /// Findings reported per column before the rest are counted in one summary finding.
    static let cellFindingsPerColumn = 10

    /// Checks every stored cell against its attribute's encoding (spec 7.1; finding
    /// `value-invalid`, corruption): the storage class, `bool` 0 or 1, `double` finite, `date`
    /// finite and in range, `uuid` canonical, `url` an absolute URI, `decimal` canonical and within
    /// its limits, `json` valid (and not `null` when required), inline `data` a BLOB and external `data` a BLOB or
    /// TEXT (the digest's form is `reference-malformed`); a required attribute is not NULL in the
    /// rows of entities that have it, and rows of entities that do not have it hold NULL there.
    /// A legacy value (spec 7.7: what an earlier Deck wrote under a rule since tightened) is a
    /// `legacy-value` note instead, never corruption. Columns the store lacks are skipped
    /// (`column-missing` reports them). Dates count from `dateEpoch`, the store's (spec 4.2).
    static func checkCells(
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

    private static func checkColumn(
        _ db: Database, table: String, attribute: Attribute, members: [String], owners: [String],
        required: [String], declaredByRoot: Bool, dateEpoch: DateEpoch, report: inout VerificationReport
    ) throws {
        let c = quote(attribute.name)
        func list(_ names: [String]) -> String {
            "("
                + names.map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" }.joined(
                    separator: ", ") + ")"
        }
        // SQL narrows the rows to those that may be wrong; Swift decides (and says why).
        // Storage classes, bool's 0 and 1, and NULL in a NOT NULL column are `cell-type`'s
        // (checkStorageClasses); only cells of the right storage class are examined here.
        let suspect: String?
        switch attribute.type {
        case .string, .integer, .bool, .data: suspect = nil
        case .double: suspect = "typeof(\(c)) = 'real' AND abs(\(c)) > 1.7976931348623157e308"
        case .date:
            let (earliest, end) = Timestamp.range(in: dateEpoch)
            suspect =
                "typeof(\(c)) IN ('real', 'integer') AND (\(c) < \(earliest) "
                + "OR \(c) >= \(end) OR abs(\(c)) > 1.7976931348623157e308)"
        case .uuid:
            let hex = "[0-9a-f]"
            let pattern = [8, 4, 4, 4, 12].map { String(repeating: hex, count: $0) }.joined(separator: "-")
            suspect = "typeof(\(c)) = 'text' AND NOT (\(c) GLOB '\(pattern)')"
        case .url, .decimal, .json: suspect = "typeof(\(c)) = 'text'"
        }
        var conditions: [String] = []
        if let suspect {
            conditions.append("(\(c) IS NOT NULL AND _entity IN \(list(owners)) AND (\(suspect)))")
        }
        // Rows of an unknown entity are `entity-unknown`'s.
        let others = members.filter { !owners.contains($0) }
        if !others.isEmpty { conditions.append("(\(c) IS NOT NULL AND _entity IN \(list(others)))") }
        if !required.isEmpty && !declaredByRoot {
            conditions.append("(\(c) IS NULL AND _entity IN \(list(required)))")
        }
        guard !conditions.isEmpty else { return }
        let sql =
            "SELECT _pk, _entity, \(c) FROM \(quote(table)) WHERE " + conditions.joined(separator: " OR ")
            + " ORDER BY _pk"
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
                if legacyReported < cellFindingsPerColumn {
                    legacyReported += 1
                    report.findings.append(
                        Finding(
                            severity: .legacy, code: "legacy-value",
                            object: "\(entity) #\(row.int64(at: 0)).\(attribute.name)",
                            message:
                                "holds \(legacy), which an earlier Deck wrote; read as spec 7.7 says, kept as it is"
                        ))
                } else {
                    legacyMore += 1
                }
                return
            }
            guard
                let problem = cellProblem(
                    cell, attribute: attribute, entityHasIt: ownerSet.contains(entity), dateEpoch: dateEpoch)
            else { return }
            if reported < cellFindingsPerColumn {
                reported += 1
                report.findings.append(
                    Finding(
                        severity: .corruption, code: "value-invalid",
                        object: "\(entity) #\(row.int64(at: 0)).\(attribute.name)", message: problem))
            } else {
                more += 1
            }
        }
        if legacyMore > 0 {
            report.findings.append(
                Finding(
                    severity: .legacy, code: "legacy-value", object: "\(table).\(attribute.name)",
                    message: "and \(legacyMore) more legacy value(s) in this column"))
        }
        if more > 0 {
            report.findings.append(
                Finding(
                    severity: .corruption, code: "value-invalid", object: "\(table).\(attribute.name)",
                    message: "and \(more) more invalid cell(s) in this column"))
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
