import DeckArguments
import DeckKit
import Foundation

/// `deck insert`, `deck update`, `deck delete`: each takes the writer lock and commits one
/// transaction.
enum WriteCommands {
    static func insert(_ command: ParsedCommand) throws -> Int32 {
        let store = try Support.openPackage(command, mode: .readWrite)
        defer { try? store.close() }
        let (bar, onProgress) = SharingCommands.progress("Writing", command)
        defer { bar.finish() }
        let (result, _) = try store.write { transaction in
            transaction.blobWriteProgress = onProgress
            return try insert(command, on: transaction)
        }
        report(inserted: result, command)
        return 0
    }

    /// Inserts (or upserts) on an open transaction; returns the record, its entity and whether
    /// it was inserted.
    static func insert(_ command: ParsedCommand, on document: StoreTransaction) throws -> (
        entity: String, id: Int64, inserted: Bool
    ) {
        let entity = try Support.entity(command, in: document.schema)
        let values = try Support.assignments(command, entity: entity, schema: document.schema)
        if command.flag("upsert") {
            let (id, inserted) = try document.upsert(entity.name, values)
            return (entity.name, id, inserted)
        }
        return (entity.name, try document.insert(entity.name, values), true)
    }

    static func report(inserted result: (entity: String, id: Int64, inserted: Bool), _ command: ParsedCommand)
    {
        if command.flag("json") {
            Output.standard.write("{\"id\":\(result.id),\"inserted\":\(result.inserted)}\n")
        } else {
            Output.standard.write(
                "\(result.inserted ? "Inserted" : "Updated") \(result.entity) #\(result.id)\n")
        }
    }

    static func update(_ command: ParsedCommand) throws -> Int32 {
        let store = try Support.openPackage(command, mode: .readWrite)
        defer { try? store.close() }
        let (bar, onProgress) = SharingCommands.progress("Writing", command)
        defer { bar.finish() }
        let (count, _) = try store.write { transaction in
            transaction.blobWriteProgress = onProgress
            return try update(command, on: transaction)
        }
        report(command, verb: "Updated", count: count)
        return 0
    }

    /// Updates on an open transaction; returns how many records changed.
    static func update(_ command: ParsedCommand, on document: StoreTransaction) throws -> Int {
        let entity = try Support.entity(command, in: document.schema)
        let condition = try Support.condition(command, required: true)
        let values = try Support.assignments(command, entity: entity, schema: document.schema)
        guard !values.isEmpty else {
            throw command.usageError("nothing to change: give key=value assignments")
        }
        return try document.update(RecordQuery(entity.name, where: condition), values)
    }

    static func delete(_ command: ParsedCommand) throws -> Int32 {
        let store = try Support.openPackage(command, mode: .readWrite)
        defer { try? store.close() }
        let (count, _) = try store.write { try delete(command, on: $0) }
        report(command, verb: "Deleted", count: count)
        return 0
    }

    /// Deletes on an open transaction; returns how many records went (cascades included).
    static func delete(_ command: ParsedCommand, on document: StoreTransaction) throws -> Int {
        let entity = try Support.entity(command, in: document.schema)
        let condition = try Support.condition(command, required: true)
        return try document.delete(RecordQuery(entity.name, where: condition))
    }

    static func report(_ command: ParsedCommand, verb: String, count: Int) {
        if command.flag("json") {
            Output.standard.write("{\"count\":\(count)}\n")
        } else {
            let entity = command.positional("entity") ?? ""
            let related = verb == "Deleted" ? " (\(entity) and related records its delete rules reach)" : ""
            Output.standard.write("\(verb) \(count) record\(count == 1 ? "" : "s")\(related)\n")
        }
    }
}

/// `deck blob get`.
enum BlobCommand {
    static func get(_ command: ParsedCommand) throws -> Int32 {
        let store = try Support.openPackage(command, mode: .readOnly)
        defer { try? store.close() }
        let text = try Support.requiredPositional(command, "digest")
        guard let digest = Digest(hex: text.lowercased()) else {
            throw command.usageError("'\(text)' is not a SHA-256 digest (64 hexadecimal digits)")
        }
        try store.read { reader in
            if let output = command.value("output") {
                try reader.copyBlob(digest, toPath: output)
            } else {
                Output.standard.flush()
                try reader.copyBlob(digest, to: StandardStreams.outputDescriptor, name: "standard output")
            }
        }
        return 0
    }
}
