import DeckArguments
import DeckKit
import Foundation

/// `deck diff`: what differs between two copies of a document.
struct DiffCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "diff",
            abstract: "Show what differs between two copies of a document.",
            discussion: """
                Compares two packages of one document (the same document id, the same schema), \
                each a package directory or a package archive, \
                record by record, by global id: records in one copy only, attributes and to-one \
                relationships whose values differ, to-many links in one copy only and blob files \
                in one copy only. Neither package is changed. Exit status 0 when the copies agree, \
                1 when they differ.
                """,
            examples: [
                CommandExample(
                    "Compare a copy with the original", command: "deck diff Spanish.deck Copy.deck")
            ])
    }

    @Argument("first", help: "A package (or a package archive).", completion: .file) var first: String
    @Argument("second", help: "Another copy of the same document (not with --conflicts).", completion: .file)
    var second: String?
    @Flag(.json) var json: Bool
    @Flag("any-document", help: "Compare copies of different documents (different document ids).")
    var anyDocument: Bool
    @Flag("conflicts", help: "Compare the store with each file-sync conflict copy of it in the package.")
    var conflicts: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        if conflicts {
            guard second == nil else {
                throw UsageError("--conflicts compares one package with its conflict copies")
            }
            return try runConflicts(&output)
        }
        guard let second else { throw UsageError("missing the second package (or --conflicts)") }
        let difference = try Self.withPackage(first) { a in
            try Self.withPackage(second) { b in
                try DocumentDifference(between: a, and: b, differentDocuments: anyDocument)
            }
        }
        output.write(json ? Self.json(difference).render() + "\n" : Self.text(difference))
        return difference.isEmpty ? ExitStatus.ok : ExitStatus.findings
    }

    /// Runs `body` with the package at `path`: itself, or a package archive imported (with every
    /// check of `deck import`) into a staging directory removed afterwards. Errors name `path`,
    /// not the staging directory.
    static func withPackage<T>(_ path: String, _ body: (URL) throws -> T) throws -> T {
        let url = Support.url(path)
        guard try DeckDocument.isArchiveFile(url) else { return try body(url) }
        return try DeckDocument.withReadOnlyStore(at: url) { store in
            do {
                return try body(store.url)
            } catch let error as DeckError {
                throw error.replacingPath(store.url.path, with: url.path)
            }
        }
    }

    /// `--conflicts`: the store against each conflict copy of it.
    private func runConflicts(_ output: inout Output) throws -> Int32 {
        let package = Support.url(first)
        // Refused as any reader refuses a package, before its directory is listed.
        try PackageStore.open(at: package, mode: .readOnly).close()
        let copies = SyncConflictCopy.find(in: package).filter(\.isStore)
        var compared: [(SyncConflictCopy, DocumentDifference)] = []
        for copy in copies {
            compared.append((copy, try DocumentDifference(between: package, andConflictCopy: copy)))
        }
        if json {
            let items: [JSON] = compared.map { copy, difference in
                .object([
                    ("copy", .string(copy.name)), ("service", .string(copy.service)),
                    ("difference", Self.json(difference)),
                ])
            }
            output.write(JSON.object([("conflicts", .array(items))]).render() + "\n")
        } else if compared.isEmpty {
            output.write("no conflict copies of the store\n")
        } else {
            for (copy, difference) in compared {
                output.write("== \(TerminalText.field(copy.name)) (\(copy.service)'s conflict copy)\n")
                output.write(Self.text(difference))
            }
        }
        return compared.allSatisfy { $0.1.isEmpty } ? ExitStatus.ok : ExitStatus.findings
    }

    /// A global id as the spec writes it (section 6.10).
    static func id(_ id: UUID) -> String { id.uuidString.lowercased() }

    static func text(_ difference: DocumentDifference) -> String {
        let field = TerminalText.field
        guard !difference.isEmpty else { return "no differences\n" }
        var out = ""
        for record in difference.records {
            switch record.change {
            case .only(let side):
                out += "\(side == .first ? "-" : "+") \(field(record.entity)) \(id(record.globalID))\n"
            case .cells(let cells):
                out += "~ \(field(record.entity)) \(id(record.globalID))\n"
                for cell in cells {
                    out += "    \(field(cell.name)): \(text(cell.first)) → \(text(cell.second))\n"
                }
            }
        }
        for link in difference.links {
            out +=
                "\(link.side == .first ? "-" : "+") link \(field(link.relationship)) "
                + "\(id(link.source)) → \(id(link.target))\n"
        }
        for blob in difference.blobs {
            out += "\(blob.side == .first ? "-" : "+") blob \(field(blob.digest))\n"
        }
        let counts = [
            (difference.records.count, "record"), (difference.links.count, "link"),
            (difference.blobs.count, "blob"),
        ]
        out +=
            counts.filter { $0.0 > 0 }.map { "\($0.0) \($0.1)\($0.0 == 1 ? "" : "s")" }.joined(
                separator: ", ")
            + " differ (- first only, + second only, ~ both, changed)\n"
        return out
    }

    static func text(_ cell: DiffCell) -> String {
        switch cell {
        case .value(.null): "null"
        // Quoted, so that the empty string, or one that looks like a number, is told apart.
        case .value(.string(let text)): TerminalText.field(JSON.string(text).render())
        case .value(let value): TerminalText.field(Support.text(value))
        case .record(let entity, let target): "\(TerminalText.field(entity)) \(id(target))"
        case .missingRecord(let key): "#\(key) (missing)"
        }
    }

    static func json(_ difference: DocumentDifference) -> JSON {
        .object([
            ("identical", .bool(difference.isEmpty)),
            (
                "records",
                .array(
                    difference.records.map { record in
                        var members: [(String, JSON)] = [
                            ("entity", .string(record.entity)), ("_gid", .string(id(record.globalID))),
                        ]
                        switch record.change {
                        case .only(let side): members.append(("only", .string(side.rawValue)))
                        case .cells(let cells):
                            members.append(
                                (
                                    "cells",
                                    .array(
                                        cells.map { cell in
                                            .object([
                                                ("name", .string(cell.name)), ("first", json(cell.first)),
                                                ("second", json(cell.second)),
                                            ])
                                        })
                                ))
                        }
                        return .object(members)
                    })
            ),
            (
                "links",
                .array(
                    difference.links.map { link in
                        .object([
                            ("relationship", .string(link.relationship)),
                            ("source", .string(id(link.source))),
                            ("target", .string(id(link.target))), ("only", .string(link.side.rawValue)),
                        ])
                    })
            ),
            (
                "blobs",
                .array(
                    difference.blobs.map { blob in
                        .object([("digest", .string(blob.digest)), ("only", .string(blob.side.rawValue))])
                    })
            ),
        ])
    }

    /// A cell in JSON: a value as `deck query --json` prints it, a to-one target as an object
    /// with its global id, a dangling reference as one with its key.
    static func json(_ cell: DiffCell) -> JSON {
        switch cell {
        case .value(let value): Support.json(value)
        case .record(let entity, let target):
            .object([("entity", .string(entity)), ("_gid", .string(id(target)))])
        case .missingRecord(let key): .object([("missingKey", .int(key))])
        }
    }
}
