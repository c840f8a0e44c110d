import DeckArguments
import DeckKit
import Foundation

/// `deck merge`: one copy of a document merged into another, or into a new package, or the
/// conflict copies a file-sync service left folded into the store.
struct MergeCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "merge",
            abstract: "Merge two copies of a document edited apart.",
            discussion: """
                Merges the copy FROM into the package INTO, in place and in one transaction (a \
                failure or a kill leaves INTO as it was), or, with --output, both into a new \
                package. Every record, value and link takes the later of the two copies' changes; \
                a delete wins over edits made meanwhile; both copies merged in either order give \
                the same document, and merging again changes nothing. The cells both copies \
                changed are reported with the value kept and the value lost. FROM is checked as \
                any package from elsewhere and never changed; it must be a copy of the same \
                document (the same document id, --any-document to merge another). A copy at an \
                earlier schema version is migrated first, in a scratch copy (--plan gives the \
                renames and removals); one at a later version is merged only into a new package. \
                With --ancestor, a copy both were made from, what each changed before the copies \
                were versioned (both upgraded from format version 4 apart) is found by comparing \
                with it: a value one changed wins over the value the other kept, and a record or \
                link one deleted is deleted. With --conflicts, folds every file-sync conflict copy of the store in INTO \
                into it and removes them. Exit status 0 when merged.
                """,
            examples: [
                CommandExample(
                    "Merge the laptop's copy into this one", command: "deck merge Spanish.deck Laptop.deck"),
                CommandExample(
                    "Merge two copies into a new package", command: "deck merge A.deck B.deck -o Merged.deck"),
                CommandExample(
                    "Fold Syncthing's conflict copies in", command: "deck merge --conflicts Spanish.deck"),
            ])
    }

    @Argument("into", help: "The package merged into (or, with --output, the first copy).", completion: .file)
    var into: String
    @Argument(
        "from", help: "The copy merged in (or a package archive; not with --conflicts).", completion: .file)
    var from: String?
    @Option(
        "output", short: "o", valueName: "package", completion: .file,
        help: "Merge both copies into this new package; INTO is not changed.")
    var output: String?
    @Option("report", valueName: "file", completion: .file, help: "Also write the report (JSON) to FILE.")
    var report: String?
    @Flag("conflicts", help: "Fold the file-sync conflict copies of the store in INTO into it.")
    var conflicts: Bool
    @Flag("any-document", help: "Merge a copy of another document (another document id).")
    var anyDocument: Bool
    @Option(
        "plan", valueName: "file", completion: .file,
        help: "The plan (JSON, as deck migrate takes) for migrating the copy at the earlier schema version.")
    var plan: String?
    @Option(
        "ancestor", valueName: "package", completion: .file,
        help: "A copy both were made from (or its archive): finds what each changed before it was versioned.")
    var ancestor: String?
    @Flag(.json) var json: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        // The report file is opened first: one that cannot be written stops the merge before it
        // changes anything.
        let reportFile = try report.map { path in
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                throw DeckError.io(path: path, operation: "open the report file", errno: errno)
            }
            return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        }
        // Read once, before anything is copied or changed: a plan file that cannot be read
        // stops the merge first.
        let plan = try self.plan.map { try MigrationPlan(contentsOf: Support.url($0)) } ?? MigrationPlan()
        var merged: [(name: String, report: MergeReport)] = []
        if conflicts {
            guard from == nil, self.output == nil else {
                throw UsageError("--conflicts merges the conflict copies in one package, into it")
            }
            guard ancestor == nil else {
                throw UsageError("--ancestor does not apply to --conflicts: it merges two copies")
            }
            guard !anyDocument else {
                throw UsageError(
                    "--any-document does not apply to --conflicts: a conflict copy is of the same document")
            }
            let store = try Support.openPackage(into, mode: .readWrite)
            defer { try? store.close() }
            merged = try DocumentMerge.mergeConflictCopies(into: store, plan: plan).map {
                ($0.copy.name, $0.report)
            }
            try store.close()
        } else {
            guard let from else { throw UsageError("missing the copy to merge in (or --conflicts)") }
            // FROM may be a package archive: imported (with every check of `deck import`) into
            // a staging package first, as `deck diff` reads one.
            let report = try DiffCommand.withPackage(from) { source in
                try withAncestor { ancestor in
                    if let target = self.output {
                        return try mergeIntoNew(
                            Support.url(target), from: source, plan: plan, ancestor: ancestor)
                    }
                    let store = try Support.openPackage(into, mode: .readWrite)
                    defer { try? store.close() }
                    let report = try DocumentMerge.merge(
                        from: source, into: store, differentDocuments: anyDocument, plan: plan,
                        ancestor: ancestor)
                    try store.close()
                    return report
                }
            }
            merged = [(from, report)]
        }
        let document = Self.json(merged)
        if let reportFile, let report {
            do {
                try reportFile.write(contentsOf: Data((document.render() + "\n").utf8))
                try reportFile.close()
            } catch {
                throw DeckError.io(
                    path: report, operation: "write the report",
                    errno: (error as NSError).code == 0 ? EIO : Int32((error as NSError).code))
            }
        }
        if json {
            output.write(document.render() + "\n")
        } else if conflicts && merged.isEmpty {
            output.write("no conflict copies of the store\n")
        } else {
            for (name, report) in merged { output.write(Self.text(report, from: name)) }
        }
        return ExitStatus.ok
    }

    /// Runs `body` with the package given by --ancestor (an archive imported first, as FROM's),
    /// or nil.
    private func withAncestor(_ body: (URL?) throws -> MergeReport) throws -> MergeReport {
        guard let ancestor else { return try body(nil) }
        return try DiffCommand.withPackage(ancestor) { try body($0) }
    }

    /// Copies `into` (the first copy) to a new package at `target` through an archive, with every
    /// check of `deck import`, merges `from` into it under a hidden name, and gives it its name
    /// only once merged: `target` never holds half a merge.
    private func mergeIntoNew(_ target: URL, from: URL, plan: MigrationPlan, ancestor: URL?) throws
        -> MergeReport
    {
        if FileManager.default.fileExists(atPath: target.path) {
            throw DeckError.alreadyExists(path: target.path)
        }
        // Both registered: a signal removes them, and a later merge into the same name removes
        // those a kill left.
        let scratch = try Staging.makeScratchDirectory(purpose: "merge-output", mode: 0o700)
        defer { scratch.discard() }
        let archive = scratch.url.appendingPathComponent("first.zip")
        try DeckDocument.export(at: Support.url(into), to: archive)
        let holder = try Staging.make(beside: target.path, kind: .creating, isDirectory: true)
        defer { holder.discard() }
        let staging = holder.url.appendingPathComponent(target.lastPathComponent)
        _ = try DeckDocument.importArchive(at: archive, to: staging)
        // A copy merged in at a later schema version: the new package takes that schema, the
        // first copy migrated as a merge migrates the copy at the earlier version.
        let later = try PackageStore.open(at: from, mode: .readOnly)
        let schema = later.schema
        try later.close()
        let first = try PackageStore.open(at: staging, mode: .readOnly)
        let earlier = first.schema
        try first.close()
        if schema.fingerprint != earlier.fingerprint,
            StoreSchema.compareVersions(schema.version, earlier.version) == .orderedDescending
        {
            try MergeMigration.migrate(
                staging, to: schema, with: MergeMigration.migrator(plan), path: into)
        }
        let store = try PackageStore.open(at: staging)
        defer { try? store.close() }
        let report = try DocumentMerge.merge(
            from: from, into: store, differentDocuments: anyDocument, plan: plan, ancestor: ancestor)
        try store.close()
        guard rename(staging.path, target.path) == 0 else {
            throw DeckError.io(path: target.path, operation: "rename the merged package", errno: errno)
        }
        return report
    }

    static func id(_ id: UUID?) -> String { id?.uuidString.lowercased() ?? "-" }

    static func jsonID(_ id: UUID?) -> JSON { id.map { .string($0.uuidString.lowercased()) } ?? .null }

    static func text(_ report: MergeReport, from name: String) -> String {
        let field = TerminalText.field
        var out = "merged \(field(name)): "
        let counts = [
            (report.insertedRecords, "record", "inserted"), (report.deletedRecords, "record", "deleted"),
            (report.learnedTombstones, "delete", "learned"), (report.changedCells, "value", "changed"),
            (report.addedLinks, "link", "added"), (report.removedLinks, "link", "removed"),
            (report.copiedBlobs, "blob", "copied"),
        ].filter { $0.0 > 0 }
        out +=
            counts.isEmpty
            ? "nothing changed here\n"
            : counts.map { "\($0.0) \($0.1)\($0.0 == 1 ? "" : "s") \($0.2)" }.joined(separator: ", ") + "\n"
        if report.originDifferences > 0 {
            out +=
                "note: \(report.originDifferences) value\(report.originDifferences == 1 ? "" : "s") or "
                + "record\(report.originDifferences == 1 ? "" : "s") differed under the origin's version (copies "
                + "upgraded from format version 4 apart): the greater value was kept and the records inserted; "
                + "--ancestor decides them by the copy both were made from\n"
        }
        for conflict in report.conflicts {
            out +=
                "conflict: \(field(conflict.entity)) \(id(conflict.globalID)) \(field(conflict.property)): "
                + "kept \(DiffCommand.text(conflict.kept)), lost \(DiffCommand.text(conflict.lost)) "
                + "(\(conflict.lostHere ? "this copy's" : "the other copy's") change)\n"
        }
        for edit in report.lostEdits {
            out +=
                "lost to a delete: \(field(edit.entity)) \(id(edit.globalID)) \(field(edit.property)): "
                + "\(DiffCommand.text(edit.lost)) (\(edit.lostHere ? "this copy's" : "the other copy's") edit)\n"
        }
        for repair in report.repairs {
            out +=
                "repair: \(field(repair.entity)) \(id(repair.globalID)) \(field(repair.property)): "
                + "\(repair.kind.rawValue)\n"
        }
        return out
    }

    static func json(_ merged: [(name: String, report: MergeReport)]) -> JSON {
        .object([
            (
                "merged",
                .array(
                    merged.map { name, report in
                        .object([
                            ("from", .string(name)),
                            ("insertedRecords", .int(Int64(report.insertedRecords))),
                            ("deletedRecords", .int(Int64(report.deletedRecords))),
                            ("learnedDeletes", .int(Int64(report.learnedTombstones))),
                            ("changedValues", .int(Int64(report.changedCells))),
                            ("addedLinks", .int(Int64(report.addedLinks))),
                            ("removedLinks", .int(Int64(report.removedLinks))),
                            ("copiedBlobs", .int(Int64(report.copiedBlobs))),
                            ("originDifferences", .int(Int64(report.originDifferences))),
                            (
                                "conflicts",
                                .array(
                                    report.conflicts.map { conflict in
                                        .object([
                                            ("entity", .string(conflict.entity)),
                                            ("_gid", jsonID(conflict.globalID)),
                                            ("property", .string(conflict.property)),
                                            ("kept", DiffCommand.json(conflict.kept)),
                                            ("lost", DiffCommand.json(conflict.lost)),
                                            ("lostHere", .bool(conflict.lostHere)),
                                        ])
                                    })
                            ),
                            (
                                "repairs",
                                .array(
                                    report.repairs.map { repair in
                                        .object([
                                            ("entity", .string(repair.entity)),
                                            ("_gid", jsonID(repair.globalID)),
                                            ("property", .string(repair.property)),
                                            ("kind", .string(repair.kind.rawValue)),
                                        ])
                                    })
                            ),
                            (
                                "lostToDeletes",
                                .array(
                                    report.lostEdits.map { edit in
                                        .object([
                                            ("entity", .string(edit.entity)), ("_gid", jsonID(edit.globalID)),
                                            ("property", .string(edit.property)),
                                            ("lost", DiffCommand.json(edit.lost)),
                                            ("lostHere", .bool(edit.lostHere)),
                                        ])
                                    })
                            ),
                        ])
                    })
            )
        ])
    }
}
