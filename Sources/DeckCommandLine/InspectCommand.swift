import DeckArguments
import DeckKit
import Foundation

/// `deck open`: a summary, or the interactive shell.
struct OpenCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "open",
            abstract: "Check a document and show what it is.",
            discussion:
                "Shows the type, format and schema versions, entities with counts, blobs, size and lock holder."
        )
    }

    @Argument(.path) var path: String
    @Flag(.json) var json: Bool
    @Flag(
        "shell", short: "i",
        help: "Start an interactive session: query, show, insert, update, delete, save, undo.")
    var shell: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        if shell {
            return try Shell.run(path: path, output: &output)
        }
        return try InspectCommand.show(path, json: json, full: false, output: &output)
    }
}

/// `deck inspect`: everything about a document.
struct InspectCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "inspect",
            abstract: "Show everything about a document: schema, counts, blobs, store figures.")
    }

    @Argument(.path) var path: String
    @Flag(.json) var json: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        try Self.show(path, json: json, full: true, output: &output)
    }

    /// Shows the document at `path` (`deck open` and `deck inspect`).
    static func show(_ path: String, json: Bool, full: Bool, output: inout Output) throws -> Int32 {
        try Support.withReadableDocument(path) { document in
            var info = try document.info()
            info.path = path
            if json {
                output.write(Self.json(info, schema: document.schema, full: full).render() + "\n")
            } else {
                output.write(text(info, schema: document.schema, full: full))
            }
            return 0
        }
    }

    static func json(_ info: PackageInfo, schema: StoreSchema, full: Bool) -> JSON {
        var members: [(String, JSON)] = [
            ("path", .string(info.path)),
            ("contentType", .string(info.manifest.contentType)),
            ("formatVersion", .int(Int64(info.formatVersion))),
            ("manifestFormatVersion", .int(Int64(info.manifest.formatVersion))),
            ("documentId", info.documentID.map { .string($0.uuidString.lowercased()) } ?? .null),
            ("schemaVersion", .string(info.schemaVersion)),
            ("schemaFingerprint", .string(info.schemaFingerprint)),
            ("schemaFloor", info.schemaFloor.map(JSON.string) ?? .null),
            (
                "migrations",
                .array(
                    info.migrations.map { record in
                        .object([
                            ("sequence", .int(record.sequence)),
                            ("fromVersion", .string(record.fromVersion)),
                            ("fromFingerprint", .string(record.fromFingerprint)),
                            ("toVersion", .string(record.toVersion)),
                            ("toFingerprint", .string(record.toFingerprint)),
                            ("applied", .string(record.applied)),
                            ("stage", record.stage.map(JSON.string) ?? .null),
                            ("breaking", .bool(record.isBreaking)),
                        ])
                    })
            ),
            (
                "versions",
                info.versions.map { versions in
                    .object([
                        ("clock", .int(versions.clock)),
                        ("writers", .int(Int64(versions.writers))),
                        ("tombstones", .int(Int64(versions.tombstones))),
                        ("changedCells", .int(Int64(versions.changedCells))),
                    ])
                } ?? .null
            ),
            ("created", info.created.map(JSON.string) ?? .null),
            ("modified", info.modified.map(JSON.string) ?? .null),
            ("lockHolder", info.lockHolder.map { .int(Int64($0)) } ?? .null),
            (
                "entities",
                .array(
                    info.entities.map { entity in
                        .object([
                            ("name", .string(entity.name)),
                            ("superentity", entity.superentity.map(JSON.string) ?? .null),
                            ("records", .int(Int64(entity.records))),
                        ])
                    })
            ),
            (
                "blobs",
                .object([
                    ("count", .int(Int64(info.blobCount))), ("bytes", .int(info.blobBytes)),
                    ("referencedBytes", .int(info.referencedBytes)),
                    ("externalValues", .int(Int64(info.externalValues))),
                    ("inlineValues", .int(Int64(info.inlineValues))),
                ])
            ),
            (
                "store",
                .object([
                    ("bytes", .int(info.storeBytes)), ("pageSize", .int(Int64(info.pageSize))),
                    ("pageCount", .int(Int64(info.pageCount))),
                    ("freelistCount", .int(Int64(info.freelistCount))),
                ])
            ),
        ]
        if full {
            // The schema exactly as stored: the documented schema JSON.
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            if let data = try? encoder.encode(schema) {
                members.append(("schema", .raw(String(decoding: data, as: UTF8.self))))
            }
        }
        return .object(members)
    }

    /// `2`; `1 (the next writer upgrades it to 2)`; `1 (manifest 2: an interrupted upgrade, which
    /// the next writer finishes)`.
    static func formatLine(_ version: Int, manifest: Int) -> String {
        if version < manifest {
            return "\(version) (manifest \(manifest): an interrupted upgrade, which the next writer finishes)"
        }
        if version < PackageStore.formatVersion {
            return "\(version) (the next writer upgrades it to \(PackageStore.formatVersion))"
        }
        return "\(version)"
    }

    static func text(_ info: PackageInfo, schema: StoreSchema, full: Bool) -> String {
        var out = ""
        // Strings from the package stay on their line (the control characters of all the text
        // are escaped when it is written).
        let field = TerminalText.field
        out += "\(field(info.path))\n"
        out += "  type:     \(field(info.manifest.contentType))\n"
        out +=
            "  format:   \(formatLine(info.formatVersion, manifest: info.manifest.formatVersion))"
            + "   schema: \(field(info.schemaVersion))\n"
        if let documentID = info.documentID { out += "  document: \(documentID.uuidString.lowercased())\n" }
        out +=
            (info.schemaFloor.map { "  floor:    \(field($0))   " } ?? "  ")
            + "fingerprint: \(info.schemaFingerprint)\n"
        if !info.migrations.isEmpty {
            out += "  history:\n"
            for record in info.migrations {
                let stage = record.stage.map { "stage \(field($0))" } ?? "lightweight"
                out +=
                    "    \(record.sequence). \(field(record.fromVersion)) → \(field(record.toVersion))  "
                    + "\(field(record.applied))  \(stage)\(record.isBreaking ? ", breaking" : "")\n"
            }
        }
        if let modified = info.modified { out += "  modified: \(field(modified))\n" }
        if let versions = info.versions {
            out +=
                "  versions: clock \(versions.clock), \(versions.writers) write session(s), "
                + "\(versions.tombstones) tombstone(s), \(versions.changedCells) changed cell(s)\n"
        }
        switch info.lockHolder {
        case nil: out += "  writer:   none\n"
        case .some(-1): out += "  writer:   locked (pid unknown)\n"
        case let pid?: out += "  writer:   pid \(pid)\n"
        }
        out +=
            "  blobs:    \(info.blobCount) (\(Support.bytes(info.blobBytes)) stored, "
            + "\(Support.bytes(info.referencedBytes)) referenced)\n"
        out += "  store:    \(Support.bytes(info.storeBytes))\n"
        out += "entities:\n"
        let width = info.entities.map(\.name.count).max() ?? 0
        for entity in info.entities {
            let parent = entity.superentity.map { " (inherits \($0))" } ?? ""
            out +=
                "  \(entity.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(entity.records)\(parent)\n"
        }
        guard full else { return out }
        out +=
            "values:   \(info.externalValues) external, \(info.inlineValues) inline (external-storage attributes)\n"
        out += "store:    page size \(info.pageSize), \(info.pageCount) pages, \(info.freelistCount) free\n"
        out += "schema:\n"
        for entity in schema.entities {
            out += "  \(entity.name)" + (entity.superentity.map { " : \($0)" } ?? "") + "\n"
            for attribute in entity.attributes {
                var notes: [String] = []
                if attribute.isOptional { notes.append("optional") }
                if attribute.options.contains(.unique) { notes.append("unique") }
                if attribute.options.contains(.indexed) { notes.append("indexed") }
                if attribute.options.contains(.externalStorage) {
                    notes.append("external ≥ \(Support.bytes(Int64(attribute.effectiveExternalThreshold)))")
                }
                if let value = attribute.defaultValue { notes.append("default \(field(value.description))") }
                if let dynamic = attribute.dynamicDefault { notes.append("default \(dynamic.rawValue)") }
                if let original = attribute.originalName { notes.append("was \(field(original))") }
                out +=
                    "    \(attribute.name): \(attribute.type.rawValue)"
                    + (notes.isEmpty ? "" : "  (" + notes.joined(separator: ", ") + ")") + "\n"
            }
            for relationship in entity.relationships {
                let arity = relationship.isToMany ? "[\(relationship.destination)]" : relationship.destination
                let inverse = relationship.inverse.map { ", inverse \($0)" } ?? ""
                out +=
                    "    \(relationship.name) -> \(arity)  (delete \(relationship.deleteRule.rawValue)\(inverse))\n"
            }
            for group in entity.uniqueConstraints { out += "    unique (\(group.joined(separator: ", ")))\n" }
            for group in entity.indexes { out += "    index (\(group.joined(separator: ", ")))\n" }
        }
        return out
    }
}

/// `deck verify`.
struct VerifyCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "verify",
            abstract: "Check a document for corruption.",
            discussion: """
                Checks the manifest, the store (integrity and foreign keys), the tables against the \
                stored schema, and every blob: that it exists and its bytes hash to its name. Exit \
                status 0 means valid (untidy leftovers are reported but allowed), 65 corrupt.
                """)
    }

    @Argument(.path) var path: String
    @Flag(.json) var json: Bool
    @Flag("quick", help: "Skip hashing blob files; use SQLite's quick_check.") var quick: Bool
    @Flag(.quiet) var quiet: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        let bar = ProgressBar(label: "Verifying", total: nil, unit: .bytes, quiet: quiet)
        let options = PackageVerifier.Options(quick: quick) { done, total in
            bar.setTotal(total)
            bar.update(completed: done)
        }
        let report = try DeckDocument.verify(at: Support.url(path), options: options)
        bar.finish()
        if json {
            let findings = report.findings.map { finding in
                JSON.object([
                    ("severity", .string(finding.severity.rawValue)), ("code", .string(finding.code)),
                    ("object", .string(finding.object)), ("message", .string(finding.message)),
                ])
            }
            output.write(
                JSON.object([
                    ("path", .string(report.path)), ("valid", .bool(report.isValid)),
                    ("needsRecovery", .bool(report.needsRecovery)),
                    ("formatVersion", report.formatVersion.map { .int(Int64($0)) } ?? .null),
                    ("manifestFormatVersion", report.manifestFormatVersion.map { .int(Int64($0)) } ?? .null),
                    ("records", .int(Int64(report.records))),
                    ("blobsChecked", .int(Int64(report.blobsChecked))),
                    ("bytesChecked", .int(report.bytesChecked)), ("findings", .array(findings)),
                ]).render() + "\n")
        } else {
            let style = TerminalStyle.standardOutput
            for finding in report.findings {
                var line =
                    switch finding.severity {
                    case .corruption: TerminalLine("corruption", style: style.red)
                    case .needsRecovery: TerminalLine("needs recovery", style: style.yellow)
                    case .untidy: TerminalLine("untidy", style: style.yellow)
                    case .legacy: TerminalLine("legacy value")
                    }
                // One line per finding, whatever text from the package the object or message quotes.
                line.append(
                    ": \(TerminalText.field(finding.object)): \(TerminalText.field(finding.message))\n")
                output.write(line)
            }
            let corrupt = report.findings.filter { $0.severity == .corruption }.count
            let legacy = report.findings.filter { $0.severity == .legacy }.count
            let untidy = report.findings.filter { $0.severity == .untidy }.count
            var line = TerminalLine("\(TerminalText.field(path)): ")
            if report.needsRecovery {
                line.append("NEEDS RECOVERY", style: style.yellow)
                line.append(": not checked; a writer must open it once (see above)\n")
                output.write(line)
                return ExitStatus.tempFailure
            }
            line.append(report.isValid ? "valid" : "CORRUPT", style: report.isValid ? style.green : style.red)
            let format = report.formatVersion.map {
                " (format \(InspectCommand.formatLine($0, manifest: report.manifestFormatVersion ?? $0)))"
            }
            line.append(
                ": \(report.records) records, \(report.blobsChecked) blobs hashed "
                    + "(\(Support.bytes(report.bytesChecked))), \(corrupt) corruption, \(untidy) untidy"
                    + (legacy > 0 ? ", \(legacy) legacy value(s)" : "") + (format ?? "") + "\n")
            output.write(line)
        }
        if report.needsRecovery { return ExitStatus.tempFailure }
        return report.isValid ? 0 : ExitStatus.dataError
    }
}

/// `deck gc`.
struct GCCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "gc",
            abstract: "Remove unreferenced blobs and temporaries, and compact the store.",
            discussion: """
                Never removes a blob file or deck_blob row that a record names, even when deck_blob \
                does not count it: the references are counted from the records first. With --repair, \
                first makes deck_blob agree with the records: registers intact files that records \
                name but deck_blob lacks, and sets every reference count; exit status 65 if a \
                referenced file is missing or corrupt.
                """)
    }

    @Argument(.path) var path: String
    @Flag("dry-run", short: "n", help: "Report what would be removed; change nothing.") var dryRun: Bool
    @Flag("repair", help: "First recount references and re-register intact referenced blob files.")
    var repair: Bool
    @Flag(.json) var json: Bool
    @Flag(.quiet) var quiet: Bool

    var writesExactOutput: Bool { json }

    func run(_ output: inout Output) throws -> Int32 {
        let document = try Support.openPackage(path, mode: dryRun ? .readOnly : .readWrite)
        defer { try? document.close() }
        let bar = ProgressBar(label: "Collecting", total: nil, unit: .items, quiet: quiet)
        defer { bar.finish() }
        let report = try document.collectGarbage(dryRun: dryRun, repair: repair) { done, total in
            bar.setTotal(total)
            bar.update(completed: done)
        }
        if json {
            output.write(Self.json(report, dryRun: dryRun).render() + "\n")
        } else {
            writeText(report, to: &output)
        }
        if let repaired = report.repair, !repaired.isComplete {
            output.flush()
            output.error(
                "deck: \(document.url.path): \(repaired.unrepaired.count) referenced blob(s) cannot be repaired "
                    + "(listed above); restore their files from a copy of the document")
            return ExitStatus.dataError
        }
        return 0
    }

    static func json(_ report: GarbageReport, dryRun: Bool) -> JSON {
        var members: [(String, JSON)] = [
            ("dryRun", .bool(dryRun)),
            ("orphanFiles", .array(report.orphanFiles.map(JSON.string))),
            ("orphanBytes", .int(report.orphanBytes)),
            ("temporaries", .array(report.temporaries.map(JSON.string))),
            ("temporaryBytes", .int(report.temporaryBytes)),
            ("unreferencedRows", .int(Int64(report.unreferencedRows))),
            ("uncountedReferences", .array(report.uncountedReferences.map(JSON.string))),
            ("createdIndexes", .array(report.createdIndexes.map(JSON.string))),
            ("storeBytesBefore", .int(report.storeBytesBefore)),
            ("storeBytesAfter", .int(report.storeBytesAfter)),
            ("reclaimedBytes", .int(report.reclaimedBytes)),
        ]
        if let repaired = report.repair {
            members.append(
                (
                    "repair",
                    JSON.object([
                        ("registered", .array(repaired.registered.map(JSON.string))),
                        (
                            "recounted",
                            .array(
                                repaired.recounted.map {
                                    JSON.object([
                                        ("digest", .string($0.digest)), ("from", .int($0.from)),
                                        ("to", .int($0.to)),
                                    ])
                                })
                        ),
                        ("resized", .array(repaired.resized.map(JSON.string))),
                        (
                            "unrepaired",
                            .array(
                                repaired.unrepaired.map {
                                    JSON.object([
                                        ("object", .string($0.object)), ("reason", .string($0.reason)),
                                    ])
                                })
                        ),
                    ])
                ))
        }
        return JSON.object(members)
    }

    func writeText(_ report: GarbageReport, to output: inout Output) {
        let verb = dryRun ? "would remove" : "removed"
        if let repaired = report.repair {
            let fix = dryRun ? "would register" : "registered"
            for digest in repaired.registered { output.write("\(fix) blob \(digest)\n") }
            for recount in repaired.recounted {
                output.write(
                    "\(dryRun ? "would set" : "set") refs of \(recount.digest) from \(recount.from) to \(recount.to)\n"
                )
            }
            for digest in repaired.resized {
                output.write("\(dryRun ? "would correct" : "corrected") the size of \(digest)\n")
            }
            for unrepaired in repaired.unrepaired {
                output.write("cannot repair \(unrepaired.object): \(unrepaired.reason)\n")
            }
        }
        for digest in report.uncountedReferences where report.repair == nil || dryRun {
            output.write(
                "kept \(digest): records name it but deck_blob does not count it; run 'deck gc --repair'\n"
            )
        }
        for index in report.createdIndexes {
            output.write("\(dryRun ? "would create" : "created") index \(index)\n")
        }
        for file in report.orphanFiles + report.temporaries {
            output.write("\(verb) \(TerminalText.field(file))\n")
        }
        output.write(
            "\(verb) \(report.orphanFiles.count) orphan blob(s) (\(Support.bytes(report.orphanBytes))), "
                + "\(report.temporaries.count) temporary file(s) (\(Support.bytes(report.temporaryBytes)))"
                + (dryRun
                    ? "\n"
                    : "; store \(Support.bytes(report.storeBytesBefore)) → \(Support.bytes(report.storeBytesAfter))\n")
        )
    }
}
