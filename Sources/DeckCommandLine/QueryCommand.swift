import DeckArguments
import DeckKit
import DeckQueryLanguage
import Foundation

/// `deck query`.
struct QueryCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "query",
            abstract: "Print the records of an entity.",
            examples: [
                CommandExample(
                    "Cards created since November",
                    command: "deck query Spanish.deck Card --where 'creationDate >= 2026-11-01'"),
                CommandExample(
                    "Tagged cards with 'adios' in any case and accent, most-tagged first (see EXPRESSIONS in deck(1))",
                    command:
                        "deck query Spanish.deck Card --where 'tags.count > 0 and front contains[cd] adios' "
                        + "--sort tags.count:desc"),
            ])
    }

    @Argument(.path) var path: String
    @OptionGroup var query: QueryOptions

    var writesExactOutput: Bool { query.writesExactOutput }

    func run(_ output: inout Output) throws -> Int32 {
        try Support.withReadableDocument(path) { store in
            try store.read { try query.execute(on: $0, output: &output) }
        }
    }
}

/// The entity and options of `deck query` and of the shell's `query`, and the query they run.
struct QueryOptions: ParsableArguments {
    @Argument(.entity) var entity: String
    @Option(.condition) var condition: String?
    @Option("sort", short: "s", valueName: "key[:desc]", help: "Sort by KEY, ascending unless ':desc'.")
    var sort: [String]
    @Option("limit", valueName: "n", help: "At most N records.") var limit: Int?
    @Option("offset", valueName: "n", help: "Skip the first N records.") var offset: Int?
    @Flag(.json) var json: Bool
    @Flag("csv", help: "Print CSV (RFC 4180) with a header row.") var csv: Bool
    @Flag("count", help: "Print only the number of matching records.") var count: Bool

    var writesExactOutput: Bool { json || csv }

    /// Runs the query on an open document.
    func execute(on document: StoreReader, output: inout Output) throws -> Int32 {
        let entity = try Support.entity(named: self.entity, in: document.schema)
        if json && csv {
            throw UsageError("--json and --csv cannot be combined")
        }
        var query = RecordQuery(
            entity.name, where: try Support.condition(condition, all: false, required: false))
        for text in sort {
            do {
                query.sort.append(try QueryParser.parseSort(text))
            } catch {
                throw OptionSyntaxError(option: "--sort", error: error)
            }
        }
        if let limit {
            guard limit >= 0 else { throw UsageError("--limit must not be negative") }
            query.limit = limit
        }
        if let offset {
            guard offset >= 0 else { throw UsageError("--offset must not be negative") }
            query.offset = offset
        }
        if count {
            let count = try document.count(query)
            output.write(json ? "{\"count\":\(count)}\n" : "\(count)\n")
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
        try write(query, columns: columns, of: document, to: &output)
        return 0
    }

    /// Writes the records `query` matches, as JSON, CSV or a table.
    func write(_ query: RecordQuery, columns: [String], of document: StoreReader, to output: inout Output)
        throws
    {
        if json {
            var first = true
            output.write("[")
            try document.forEach(query) { record in
                var members: [(String, JSON)] = [
                    ("_id", .int(record.id)), ("_entity", .string(record.entity)),
                    ("_gid", record.globalID.map { .string($0.uuidString.lowercased()) } ?? .null),
                ]
                for name in columns {
                    if let value = record.values[name] { members.append((name, Support.json(value))) }
                }
                output.write(first ? "\n" : ",\n")
                output.write(json: .object(members), pretty: false)
                first = false
            }
            output.write(first ? "]\n" : "\n]\n")
        } else if csv {
            output.write((["_id", "_entity"] + columns).map(Self.csv).joined(separator: ",") + "\r\n")
            try document.forEach(query) { record in
                let cells =
                    [String(record.id), record.entity]
                    + columns.map { record.values[$0].map(Support.csv) ?? "" }
                output.write(cells.map(Self.csv).joined(separator: ",") + "\r\n")
            }
        } else {
            var rows: [[String]] = []
            try document.forEach(query) { record in
                rows.append([String(record.id)] + columns.map { record.values[$0].map(Support.text) ?? "" })
            }
            output.write(Self.table(header: ["_id"] + columns, rows: rows))
        }
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
