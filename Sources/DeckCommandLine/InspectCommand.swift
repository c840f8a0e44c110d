import DeckKit
import Foundation

/// `deck open` (a summary) and `deck inspect` (everything).
enum InspectCommand {
    static func run(_ command: ParsedCommand, full: Bool) throws -> Int32 {
        let path = try Support.requiredPositional(command, "path")
        return try Support.withReadableDocument(path) { document in
            try show(command, document: document, displayPath: path, full: full)
        }
    }

    static func show(_ command: ParsedCommand, document: DocumentPackage, displayPath: String, full: Bool)
        throws
        -> Int32
    {
        var info = try document.info()
        info.path = displayPath
        if command.flag("json") {
            Output.standard.write(json(info, schema: document.schema, full: full).render() + "\n")
        } else {
            Output.standard.write(text(info, schema: document.schema, full: full))
        }
        return 0
    }

    static func json(_ info: PackageInfo, schema: Schema, full: Bool) -> JSON {
        var members: [(String, JSON)] = [
            ("path", .string(info.path)),
            ("contentType", .string(info.manifest.contentType)),
            ("formatVersion", .int(Int64(info.manifest.formatVersion))),
            ("schemaVersion", .string(info.schemaVersion)),
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

    static func text(_ info: PackageInfo, schema: Schema, full: Bool) -> String {
        var out = ""
        out += "\(info.path)\n"
        out += "  type:     \(info.manifest.contentType)\n"
        out += "  format:   \(info.manifest.formatVersion)   schema: \(info.schemaVersion)\n"
        if let modified = info.modified { out += "  modified: \(modified)\n" }
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
                if let value = attribute.defaultValue { notes.append("default \(value)") }
                if let dynamic = attribute.dynamicDefault { notes.append("default \(dynamic.rawValue)") }
                if let original = attribute.originalName { notes.append("was \(original)") }
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
enum VerifyCommand {
    static func run(_ command: ParsedCommand) throws -> Int32 {
        let path = try Support.requiredPositional(command, "path")
        let bar = ProgressBar(label: "Verifying", total: nil, unit: .bytes, quiet: command.flag("quiet"))
        let options = PackageVerifier.Options(quick: command.flag("quick")) { done, total in
            bar.setTotal(total)
            bar.update(completed: done)
        }
        var isDirectory: ObjCBool = false
        let isArchive =
            FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
        let report =
            isArchive
            ? try PackageVerifier.verifyArchive(at: Support.url(path), options: options)
            : try PackageVerifier.verify(at: Support.url(path), options: options)
        bar.finish()
        if command.flag("json") {
            let findings = report.findings.map { finding in
                JSON.object([
                    ("severity", .string(finding.severity.rawValue)), ("code", .string(finding.code)),
                    ("object", .string(finding.object)), ("message", .string(finding.message)),
                ])
            }
            Output.standard.write(
                JSON.object([
                    ("path", .string(report.path)), ("valid", .bool(report.isValid)),
                    ("records", .int(Int64(report.records))),
                    ("blobsChecked", .int(Int64(report.blobsChecked))),
                    ("bytesChecked", .int(report.bytesChecked)), ("findings", .array(findings)),
                ]).render() + "\n")
        } else {
            let style = TerminalStyle.standardOutput
            for finding in report.findings {
                let severity =
                    finding.severity == .corruption ? style.red("corruption") : style.yellow("untidy")
                Output.standard.write("\(severity): \(finding.object): \(finding.message)\n")
            }
            let corrupt = report.findings.filter { $0.severity == .corruption }.count
            let untidy = report.findings.count - corrupt
            let verdict = report.isValid ? style.green("valid") : style.red("CORRUPT")
            Output.standard.write(
                "\(path): \(verdict): \(report.records) records, \(report.blobsChecked) blobs hashed "
                    + "(\(Support.bytes(report.bytesChecked))), \(corrupt) corruption, \(untidy) untidy\n")
        }
        return report.isValid ? 0 : DeckCommandLine.ExitStatus.dataError
    }
}

/// `deck gc`.
enum GCCommand {
    static func run(_ command: ParsedCommand) throws -> Int32 {
        let dryRun = command.flag("dry-run")
        let document = try Support.openPackage(command, mode: dryRun ? .readOnly : .readWrite)
        defer { try? document.close() }
        let bar = ProgressBar(label: "Collecting", total: nil, unit: .items, quiet: command.flag("quiet"))
        defer { bar.finish() }
        let report = try document.collectGarbage(dryRun: dryRun) { done, total in
            bar.setTotal(total)
            bar.update(completed: done)
        }
        if command.flag("json") {
            Output.standard.write(
                JSON.object([
                    ("dryRun", .bool(dryRun)),
                    ("orphanFiles", .array(report.orphanFiles.map(JSON.string))),
                    ("orphanBytes", .int(report.orphanBytes)),
                    ("temporaries", .array(report.temporaries.map(JSON.string))),
                    ("temporaryBytes", .int(report.temporaryBytes)),
                    ("unreferencedRows", .int(Int64(report.unreferencedRows))),
                    ("storeBytesBefore", .int(report.storeBytesBefore)),
                    ("storeBytesAfter", .int(report.storeBytesAfter)),
                    ("reclaimedBytes", .int(report.reclaimedBytes)),
                ]).render() + "\n")
        } else {
            let verb = dryRun ? "would remove" : "removed"
            for file in report.orphanFiles + report.temporaries { Output.standard.write("\(verb) \(file)\n") }
            Output.standard.write(
                "\(verb) \(report.orphanFiles.count) orphan blob(s) (\(Support.bytes(report.orphanBytes))), "
                    + "\(report.temporaries.count) temporary file(s) (\(Support.bytes(report.temporaryBytes)))"
                    + (dryRun
                        ? "\n"
                        : "; store \(Support.bytes(report.storeBytesBefore)) → \(Support.bytes(report.storeBytesAfter))\n")
            )
        }
        return 0
    }
}
