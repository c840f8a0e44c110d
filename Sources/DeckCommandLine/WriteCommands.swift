import DeckArguments
import DeckKit
import Foundation

// `deck insert`, `deck update`, `deck delete`: each takes the writer lock and commits one
// transaction. Their entity, assignments and options are groups the shell's commands share.

/// `deck insert`.
struct InsertCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(name: "insert", abstract: "Insert a record.")
    }

    @Argument(.path) var path: String
    @OptionGroup var insert: InsertOptions

    var writesExactOutput: Bool { insert.json }

    func run(_ output: inout Output) throws -> Int32 {
        let store = try Support.openPackage(path, mode: .readWrite)
        defer { try? store.close() }
        let (bar, onProgress) = SharingCommands.progress("Writing", quiet: insert.quiet)
        defer { bar.finish() }
        let (result, _) = try store.write { transaction in
            transaction.blobWriteProgress = onProgress
            return try insert.insert(on: transaction)
        }
        insert.report(result, to: &output)
        return 0
    }
}

/// The entity, assignments and options of `deck insert` and the shell's `insert`.
struct InsertOptions: ParsableArguments {
    @Argument(.entity) var entity: String
    @Argument(.assignments) var assignments: [String]
    @Option(.nulls) var nulls: [String]
    @Flag("upsert", help: "Update the record with the same unique values instead.") var upsert: Bool
    @Flag(.json) var json: Bool
    @Flag(.quiet) var quiet: Bool

    /// Inserts (or upserts) on an open transaction; returns the record, its entity and whether
    /// it was inserted.
    func insert(on document: StoreTransaction) throws -> (entity: String, id: Int64, inserted: Bool) {
        let entity = try Support.entity(named: self.entity, in: document.schema)
        let values = try Support.assignments(
            assignments, nulls: nulls, entity: entity, schema: document.schema)
        if upsert {
            let (id, inserted) = try document.upsert(entity.name, values)
            return (entity.name, id, inserted)
        }
        return (entity.name, try document.insert(entity.name, values), true)
    }

    func report(_ result: (entity: String, id: Int64, inserted: Bool), to output: inout Output) {
        if json {
            output.write("{\"id\":\(result.id),\"inserted\":\(result.inserted)}\n")
        } else {
            output.write("\(result.inserted ? "Inserted" : "Updated") \(result.entity) #\(result.id)\n")
        }
    }
}

/// `deck update`.
struct UpdateCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(name: "update", abstract: "Change the records that match a condition.")
    }

    @Argument(.path) var path: String
    @OptionGroup var update: UpdateOptions

    var writesExactOutput: Bool { update.json }

    func run(_ output: inout Output) throws -> Int32 {
        let store = try Support.openPackage(path, mode: .readWrite)
        defer { try? store.close() }
        let (bar, onProgress) = SharingCommands.progress("Writing", quiet: update.quiet)
        defer { bar.finish() }
        let (count, _) = try store.write { transaction in
            transaction.blobWriteProgress = onProgress
            return try update.update(on: transaction)
        }
        WriteReport.changed(count, verb: "Updated", entity: update.entity, json: update.json, to: &output)
        return 0
    }
}

/// The entity, assignments and options of `deck update` and the shell's `update`.
struct UpdateOptions: ParsableArguments {
    @Argument(.entity) var entity: String
    @Argument(.assignments) var assignments: [String]
    @Option(.condition) var condition: String?
    @Flag("all", help: "Change every record (instead of --where).") var all: Bool
    @Option(.nulls) var nulls: [String]
    @Flag(.json) var json: Bool
    @Flag(.quiet) var quiet: Bool

    /// Updates on an open transaction; returns how many records changed.
    func update(on document: StoreTransaction) throws -> Int {
        let entity = try Support.entity(named: self.entity, in: document.schema)
        let condition = try Support.condition(condition, all: all, required: true)
        let values = try Support.assignments(
            assignments, nulls: nulls, entity: entity, schema: document.schema)
        guard !values.isEmpty else {
            throw UsageError("nothing to change: give key=value assignments")
        }
        return try document.update(RecordQuery(entity.name, where: condition), values)
    }
}

/// `deck delete`.
struct DeleteCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "delete", abstract: "Delete the records that match a condition (delete rules apply).")
    }

    @Argument(.path) var path: String
    @OptionGroup var delete: DeleteOptions

    var writesExactOutput: Bool { delete.json }

    func run(_ output: inout Output) throws -> Int32 {
        let store = try Support.openPackage(path, mode: .readWrite)
        defer { try? store.close() }
        let (count, _) = try store.write { try delete.delete(on: $0) }
        WriteReport.changed(count, verb: "Deleted", entity: delete.entity, json: delete.json, to: &output)
        return 0
    }
}

/// The entity and options of `deck delete` and the shell's `delete`.
struct DeleteOptions: ParsableArguments {
    @Argument(.entity) var entity: String
    @Option(.condition) var condition: String?
    @Flag("all", help: "Delete every record (instead of --where).") var all: Bool
    @Flag(.json) var json: Bool

    /// Deletes on an open transaction; returns how many records went (cascades included).
    func delete(on document: StoreTransaction) throws -> Int {
        let entity = try Support.entity(named: self.entity, in: document.schema)
        let condition = try Support.condition(condition, all: all, required: true)
        return try document.delete(RecordQuery(entity.name, where: condition))
    }
}

/// How `update` and `delete` report what they changed.
enum WriteReport {
    static func changed(_ count: Int, verb: String, entity: String, json: Bool, to output: inout Output) {
        if json {
            output.write("{\"count\":\(count)}\n")
        } else {
            let related = verb == "Deleted" ? " (\(entity) and related records its delete rules reach)" : ""
            output.write("\(verb) \(count) record\(count == 1 ? "" : "s")\(related)\n")
        }
    }
}

/// `deck blob get`.
struct BlobGetCommand: DeckCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "get", abstract: "Write a blob's bytes to standard output or a file, checking its digest.")
    }

    @Argument(.path) var path: String
    @Argument("digest", help: "The blob's SHA-256 digest (64 hex digits).") var digest: String
    @Option("output", short: "o", valueName: "file", completion: .file, help: "Write to FILE.")
    var file: String?

    func run(_ output: inout Output) throws -> Int32 {
        let store = try Support.openPackage(path, mode: .readOnly)
        defer { try? store.close() }
        guard let digest = Digest(hex: self.digest.lowercased()) else {
            throw UsageError("'\(self.digest)' is not a SHA-256 digest (64 hexadecimal digits)")
        }
        try store.read { reader in
            if let file {
                try reader.copyBlob(digest, toPath: file)
            } else {
                output.flush()
                try reader.copyBlob(digest, to: StandardStreams.outputDescriptor, name: "standard output")
            }
        }
        return 0
    }
}
