import DeckArguments
import DeckKit
import Foundation

/// `deck log`: the changes a document's versions record, by transaction.
struct LogCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "log",
            abstract: "Show the changes a document records, by transaction.",
            discussion: """
                Lists the transactions that made the document as it is, oldest first: for each, \
                its clock, the writer session that made it and about when, and every record it \
                inserted, updated or deleted and every to-many link it made or removed, each \
                under the last transaction that changed it, with the values that transaction \
                left. A change that a later one replaced is not listed, and a deleted record's \
                values are gone with it. Records a package held before it kept versions \
                (format 5) are listed under the origin. The log ends with its token: given to \
                --after, it leaves out everything the package held when this log was read, so \
                the next log lists what was changed since, in the package or in a copy merged \
                into it. The package is not \
                changed.
                """,
            examples: [
                CommandExample("The last three transactions", command: "deck log Spanish.deck --last 3"),
                CommandExample(
                    "What changed after a transaction",
                    command: "deck log Spanish.deck --after 117735718298583040"),
                CommandExample(
                    "What changed since a log was read",
                    command:
                        "deck log Spanish.deck --after \"$(deck log Spanish.deck --last 1 --json | jq -r .token)\""
                ),
            ])
    }

    @Argument("path", help: "A package (or a package archive).", completion: .file) var path: String
    @Option(
        "after", valueName: "token",
        help: "Leave out what TOKEN (a log's token, or a clock) says was seen: list what changed since.")
    var after: String?
    @Option("last", valueName: "n", help: "Only the last N transactions.") var last: Int?
    @Flag(.json) var json: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        if let last, last < 1 { throw UsageError("--last must be at least 1") }
        let token = try after.map { text in
            guard let token = ChangeLog.Token(text) else {
                throw UsageError(
                    "--after takes a clock (a number) or the token a log ended with")
            }
            return token
        }
        // An archive is read from a private copy; errors name the archive.
        let log = try DiffCommand.withPackage(path) { url in
            let store = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? store.close() }
            return try ChangeLog(of: store, after: token, last: last)
        }
        output.write(json ? Self.json(log).render() + "\n" : Self.text(log))
        return ExitStatus.ok
    }

    static func text(_ log: ChangeLog) -> String {
        let field = TerminalText.field
        var out = log.transactions.isEmpty ? "no changes\n" : ""
        for transaction in log.transactions {
            out += "transaction \(transaction.clock)"
            if let writer = transaction.writer {
                out += " by \(DiffCommand.id(writer))"
            } else {
                out += " (the origin: before the package kept versions)"
            }
            if let date = transaction.date { out += ", about \(Self.date(date))" }
            out += "\n"
            for change in transaction.changes {
                switch change.kind {
                case .linked, .unlinked:
                    out +=
                        "  \(change.kind == .linked ? "linked" : "unlinked") \(field(change.relationship ?? "")) "
                        + "\(DiffCommand.id(change.globalID)) → \(change.target.map(DiffCommand.id) ?? "-")\n"
                default:
                    out +=
                        "  \(change.kind.rawValue) \(field(change.entity)) \(DiffCommand.id(change.globalID))\n"
                    for cell in change.cells {
                        out += "    \(field(cell.name)): \(DiffCommand.text(cell.value))\n"
                    }
                }
            }
        }
        out += "token: \(log.token)\n"
        return out
    }

    /// A date as ISO 8601 in UTC, with milliseconds.
    static func date(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }

    static func json(_ log: ChangeLog) -> JSON {
        .object([
            (
                "transactions",
                .array(
                    log.transactions.map { transaction in
                        .object([
                            ("clock", .int(transaction.clock)),
                            ("writer", transaction.writer.map { .string(DiffCommand.id($0)) } ?? .null),
                            ("date", transaction.date.map { .string(Self.date($0)) } ?? .null),
                            ("changes", .array(transaction.changes.map(json))),
                        ])
                    })
            ),
            ("token", .string(log.token.description)),
        ])
    }

    static func json(_ change: LoggedChange) -> JSON {
        var members: [(String, JSON)] = [
            ("kind", .string(change.kind.rawValue)), ("entity", .string(change.entity)),
            ("_gid", .string(DiffCommand.id(change.globalID))),
        ]
        if let relationship = change.relationship, let target = change.target {
            members += [("relationship", .string(relationship)), ("target", .string(DiffCommand.id(target)))]
        } else if change.kind != .deleted {
            members.append(
                ("cells", .object(change.cells.map { ($0.name, DiffCommand.json($0.value)) })))
        }
        return .object(members)
    }
}
