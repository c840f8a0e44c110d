import DeckArguments
import DeckKit
import Foundation

/// `deck insert`, `deck update`, `deck delete`: each takes the writer lock and saves once.
enum WriteCommands {
    static func insert(_ command: ParsedCommand) throws -> Int32 {
        let document = try Support.openPackage(command, mode: .readWrite)
        defer { try? document.close() }
        let (bar, onProgress) = SharingCommands.progress("Writing", command)
        defer { bar.finish() }
        document.blobs.progress = onProgress
        return try insert(command, on: document, save: true)
    }

    static func insert(_ command: ParsedCommand, on document: DocumentPackage, save: Bool) throws -> Int32 {
        let entity = try Support.entity(command, in: document)
        let values = try Support.assignments(command, entity: entity, schema: document.schema)
        let id: Int64
        var inserted = true
        if command.flag("upsert") {
            (id, inserted) = try document.upsert(entity.name, values)
        } else {
            id = try document.insert(entity.name, values)
        }
        if save { try document.save() }
        if command.flag("json") {
            Output.standard.write("{\"id\":\(id),\"inserted\":\(inserted)}\n")
        } else {
            Output.standard.write("\(inserted ? "Inserted" : "Updated") \(entity.name) #\(id)\n")
        }
        return 0
    }

    static func update(_ command: ParsedCommand) throws -> Int32 {
        let document = try Support.openPackage(command, mode: .readWrite)
        defer { try? document.close() }
        let (bar, onProgress) = SharingCommands.progress("Writing", command)
        defer { bar.finish() }
        document.blobs.progress = onProgress
        return try update(command, on: document, save: true)
    }

    static func update(_ command: ParsedCommand, on document: DocumentPackage, save: Bool) throws -> Int32 {
        let entity = try Support.entity(command, in: document)
        let filter = try Support.filter(command, required: true)
        let values = try Support.assignments(command, entity: entity, schema: document.schema)
        guard !values.isEmpty else {
            throw command.usageError("nothing to change: give key=value assignments")
        }
        let count = try document.update(RecordQuery(entity.name, filter: filter), values)
        if save { try document.save() }
        report(command, verb: "Updated", count: count, entity: entity.name)
        return 0
    }

    static func delete(_ command: ParsedCommand) throws -> Int32 {
        let document = try Support.openPackage(command, mode: .readWrite)
        defer { try? document.close() }
        return try delete(command, on: document, save: true)
    }

    static func delete(_ command: ParsedCommand, on document: DocumentPackage, save: Bool) throws -> Int32 {
        let entity = try Support.entity(command, in: document)
        let filter = try Support.filter(command, required: true)
        let count = try document.delete(RecordQuery(entity.name, filter: filter))
        if save { try document.save() }
        report(command, verb: "Deleted", count: count, entity: entity.name)
        return 0
    }

    private static func report(_ command: ParsedCommand, verb: String, count: Int, entity: String) {
        if command.flag("json") {
            Output.standard.write("{\"count\":\(count)}\n")
        } else {
            let related = verb == "Deleted" ? " (\(entity) and related records its delete rules reach)" : ""
            Output.standard.write("\(verb) \(count) record\(count == 1 ? "" : "s")\(related)\n")
        }
    }
}

/// `deck blob get`.
enum BlobCommand {
    static func get(_ command: ParsedCommand) throws -> Int32 {
        let document = try Support.openPackage(command, mode: .readOnly)
        defer { try? document.close() }
        let text = try Support.requiredPositional(command, "digest")
        guard let digest = Digest(hex: text.lowercased()) else {
            throw command.usageError("'\(text)' is not a SHA-256 digest (64 hexadecimal digits)")
        }
        if let output = command.value("output") {
            try document.blobs.copy(digest, toPath: output)
        } else {
            Output.standard.flush()
            try document.blobs.copy(digest, to: StandardStreams.outputDescriptor, name: "standard output")
        }
        return 0
    }
}
