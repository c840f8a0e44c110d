import DeckArguments
import DeckKit
import Foundation

/// `deck query`.
enum QueryCommand {
    static func run(_ command: ParsedCommand) throws -> Int32 {
        try Support.withReadableDocument(try Support.requiredPositional(command, "path")) { store in
            try store.read { try execute(command, on: $0) }
        }
    }

    /// Runs the query on an open document (`deck query` and the shell's `query`).
    static func execute(_ command: ParsedCommand, on document: StoreReader) throws -> Int32 {
        let entity = try Support.entity(command, in: document.schema)
        if command.flag("json") && command.flag("csv") {
            throw command.usageError("--json and --csv cannot be combined")
        }
        var query = RecordQuery(entity.name, where: try Support.condition(command, required: false))
        for text in command.values("sort") {
            do {
                query.sort.append(try QueryParser.parseSort(text))
            } catch {
                throw OptionSyntaxError(option: "--sort", error: error)
            }
        }
        if let limit = try command.value("limit", as: Int.self) {
            guard limit >= 0 else { throw command.usageError("--limit must not be negative") }
            query.limit = limit
        }
        if let offset = try command.value("offset", as: Int.self) {
            guard offset >= 0 else { throw command.usageError("--offset must not be negative") }
            query.offset = offset
        }
        if command.flag("count") {
            let count = try document.count(query)
            Output.standard.write(command.flag("json") ? "{\"count\":\(count)}\n" : "\(count)\n")
            return 0
        }
        let (attributes, relationships) = document.schema.properties(of: entity.name)
        // Subentities may add columns: include every attribute of the family.
        var columns = attributes.map(\.name) + relationships.filter { !$0.isToMany }.map(\.name)
        for other in document.schema.entities where other.name != entity.name {
            let (subAttributes, subRelationships) = document.schema.properties(of: other.name)
            guard document.schema.entity(other.name, inheritsFrom: entity.name) else { continue }
            for name in subAttributes.map(\.name) + subRelationships.filter({ !$0.isToMany }).map(\.name)
            where !columns.contains(name) {
                columns.append(name)
            }
        }
        if command.flag("json") {
            var first = true
            Output.standard.write("[")
            try document.forEach(query) { record in
                var members: [(String, JSON)] = [
                    ("_id", .int(record.id)), ("_entity", .string(record.entity)),
                    ("_gid", record.globalID.map { .string($0.uuidString.lowercased()) } ?? .null),
                ]
                for name in columns {
                    if let value = record.values[name] { members.append((name, Support.json(value))) }
                }
                Output.standard.write(first ? "\n" : ",\n")
                Output.standard.write(json: .object(members), pretty: false)
                first = false
            }
            Output.standard.write(first ? "]\n" : "\n]\n")
        } else if command.flag("csv") {
            Output.standard.write((["_id", "_entity"] + columns).map(csv).joined(separator: ",") + "\r\n")
            try document.forEach(query) { record in
                let cells =
                    [String(record.id), record.entity]
                    + columns.map { record.values[$0].map(Support.csv) ?? "" }
                Output.standard.write(cells.map(csv).joined(separator: ",") + "\r\n")
            }
        } else {
            var rows: [[String]] = []
            try document.forEach(query) { record in
                rows.append([String(record.id)] + columns.map { record.values[$0].map(Support.text) ?? "" })
            }
            Output.standard.write(table(header: ["_id"] + columns, rows: rows))
        }
        return 0
    }

    static func csv(_ field: String) -> String {
        guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else {
            return field
        }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// An aligned text table, cells on one line (control characters escaped, a line feed shown
    /// as `\n`, see ``TerminalText``) and cut to 40 characters.
    static func table(header: [String], rows: [[String]]) -> String {
        func cut(_ s: String) -> String {
            let flat = TerminalText.field(s)
            return flat.count > 40 ? String(flat.prefix(39)) + "…" : flat
        }
        let cells = ([header] + rows).map { $0.map(cut) }
        var widths = header.map { _ in 0 }
        for row in cells { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        var out = ""
        for (index, row) in cells.enumerated() {
            out +=
                row.enumerated().map { i, cell in
                    i == row.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                }.joined(separator: "  ") + "\n"
            if index == 0 {
                out += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n"
            }
        }
        out += "(\(rows.count) record\(rows.count == 1 ? "" : "s"))\n"
        return out
    }
}
