import DeckSQLite
import DeckSupport
import Foundation

/// Which of the two compared copies something is in.
public enum DiffSide: String, Sendable, Hashable {
    case first
    case second
}

/// What differs between two copies of one document: records, their cells, their to-many links
/// and the blob files they hold, each named by global ids (spec section 6.10), never by the
/// local keys that differ between copies. Empty when the copies hold the same records with the
/// same values.
public struct DocumentDifference: Sendable, Equatable {
    /// The records in one copy only, and those whose cells differ, by table (hierarchy) in
    /// schema order, then global id in byte order.
    public var records: [RecordDifference] = []
    /// The to-many links (join-table rows) in one copy only, by relationship key, then source
    /// and target global ids in byte order.
    public var links: [LinkDifference] = []
    /// The blob files that one copy holds and the other does not, by digest.
    public var blobs: [BlobDifference] = []

    /// Whether the copies hold the same records, values, links and blobs.
    public var isEmpty: Bool { records.isEmpty && links.isEmpty && blobs.isEmpty }
}

/// A record that is in one copy only, or whose cells differ.
public struct RecordDifference: Sendable, Equatable {
    /// What differs.
    public enum Change: Sendable, Equatable {
        /// The record is in this copy only.
        case only(DiffSide)
        /// The record is in both, with these cells different.
        case cells([CellDifference])
    }
    /// The record's concrete entity (in the first copy, when it is in both).
    public var entity: String
    /// The record's global id.
    public var globalID: UUID
    public var change: Change

    public init(entity: String, globalID: UUID, change: Change) {
        self.entity = entity
        self.globalID = globalID
        self.change = change
    }
}

/// An attribute or to-one relationship of a record whose value differs between the copies.
/// `_entity` names a record whose concrete entity differs.
public struct CellDifference: Sendable, Equatable {
    public var name: String
    public var first: DiffCell
    public var second: DiffCell

    public init(name: String, first: DiffCell, second: DiffCell) {
        self.name = name
        self.first = first
        self.second = second
    }
}

/// The value of a cell in one copy: an attribute's value as the record API reads it, or a
/// to-one relationship's target by its global id.
public enum DiffCell: Sendable, Hashable {
    /// An attribute's value (`.null`, or the case of the attribute's type; `.blob` for data in a
    /// blob file), or `.string` with the concrete entity for `_entity`.
    case value(Value)
    /// A to-one relationship's target: its concrete entity and global id.
    case record(entity: String, globalID: UUID)
    /// A reference to a record the copy does not hold (a `noAction` relationship's dangling
    /// reference, spec section 9.3), by its local key.
    case missingRecord(Int64)
}

extension DiffCell: CustomStringConvertible {
    /// The value in the text syntax of `deck`, a target's entity and global id, or
    /// `#key (missing)`.
    public var description: String {
        switch self {
        case .value(let value): value.description
        case .record(let entity, let target): "\(entity) \(target.uuidString.lowercased())"
        case .missingRecord(let key): "#\(key) (missing)"
        }
    }
}

/// A to-many link (a join table's row) that is in one copy only.
public struct LinkDifference: Sendable, Equatable {
    /// The join table: the key of the relationship stored in `source` (spec section 6.6).
    public var relationship: String
    public var source: UUID
    public var target: UUID
    public var side: DiffSide

    public init(relationship: String, source: UUID, target: UUID, side: DiffSide) {
        self.relationship = relationship
        self.source = source
        self.target = target
        self.side = side
    }
}

/// A blob file that one copy holds (a registered digest with references) and the other does not.
public struct BlobDifference: Sendable, Equatable {
    /// The digest, 64 lowercase hexadecimal digits.
    public var digest: String
    public var side: DiffSide
}

extension DocumentDifference {
    /// What differs between the documents at `first` and `second`, two copies of one document
    /// with the same schema. Each is opened read-only and checked as any package is, then both
    /// are read in one transaction (so each is read at one state). Nothing is written to either.
    ///
    /// - Parameter differentDocuments: compare copies of two different documents (different
    ///   document ids), whose records then all differ unless one was copied from the other.
    /// - Throws: ``DeckError/notComparable(path:reason:)`` when the schemas differ (migrate one
    ///   copy first) or the document ids differ and `differentDocuments` is false, and the errors of ``PackageStore/open(at:mode:configuration:)``.
    public init(between first: URL, and second: URL, differentDocuments: Bool = false) throws(DeckError) {
        let a = try PackageStore.open(at: first, mode: .readOnly)
        defer { try? a.close() }
        let b = try PackageStore.open(at: second, mode: .readOnly)
        defer { try? b.close() }
        try Self.requireCopies(
            a, b, paths: (first.path, second.path), differentDocuments: differentDocuments,
            verb: "compare different documents")
        do {
            // A connection of its own: a store's readers are inside a transaction, where ATTACH
            // is refused. Opened read-only, as is the attached store (SQLite opens it with the
            // connection's flags); both were checked by their opens above.
            let database = try Database(
                path: a.url.appendingPathComponent(PackageLayout.store).path, mode: .readOnly)
            defer { database.close() }
            try database.run(
                "ATTACH DATABASE ? AS other", [.text(b.url.appendingPathComponent(PackageLayout.store).path)])
            self = try database.transaction(.deferred) {
                try DocumentDiffer(database: database, mapping: a.mapping, epochs: (a.dateEpoch, b.dateEpoch))
                    .difference()
            }
        } catch {
            throw DeckError.wrap(error)
        }
    }

    /// What differs between the store of the package at `package` and `copy`, a file-sync
    /// service's conflict copy of it in the package (``SyncConflictCopy/find(in:)``): the other
    /// device's edits. The copy is checked as any store is (it came from another device), in a
    /// scratch package of its own outside the package, removed afterwards; nothing is written to
    /// the package.
    ///
    /// - Throws: ``DeckError/misuse(_:)`` when `copy` is not a copy of the store; the errors of
    ///   ``init(between:and:differentDocuments:)``, naming the copy.
    public init(between package: URL, andConflictCopy copy: SyncConflictCopy) throws(DeckError) {
        guard copy.isStore else {
            throw DeckError.misuse("\(copy.name) is a conflict copy of \(copy.original), not of the store")
        }
        // A private scratch directory (a copy of someone's data), removed afterwards, also when
        // the process is interrupted (StagingFiles).
        let scratch = try Staging.makeScratchDirectory(purpose: "conflict", mode: 0o700)
        defer { scratch.discard() }
        let source = package.appendingPathComponent(copy.name)
        try Self.copyFile(
            package.appendingPathComponent(PackageLayout.manifest),
            to: scratch.path + "/" + PackageLayout.manifest)
        try Self.copyFile(source, to: scratch.path + "/" + PackageLayout.store)
        do {
            self = try DocumentDifference(between: package, and: scratch.url)
        } catch {
            throw error.replacingPath(scratch.path, with: source.path)
        }
    }

    /// Refuses `second` unless it and `first` have one schema (unless not `sameSchema`) and,
    /// unless `differentDocuments`, one document id, naming them by `paths` and saying what to do
    /// (`verb`: what the caller does with them, "compare" or "merge").
    static func requireCopies(
        _ first: PackageStore, _ second: PackageStore, paths: (first: String, second: String),
        differentDocuments: Bool, verb: String, sameSchema: Bool = true
    ) throws(DeckError) {
        guard !sameSchema || first.schema.fingerprint == second.schema.fingerprint else {
            throw DeckError.notComparable(
                path: paths.second,
                reason:
                    "its schema differs from \(paths.first)'s\(schemaChanges(first.schema, second.schema))"
                    + "; migrate one copy to the other's schema first")
        }
        if !differentDocuments, first.documentID != second.documentID {
            throw DeckError.notComparable(
                path: paths.second,
                reason:
                    "it is another document (document id \(second.documentID?.uuidString.lowercased() ?? "none"), "
                    + "\(paths.first) has \(first.documentID?.uuidString.lowercased() ?? "none")); "
                    + "\(verb) only when asked (--any-document)")
        }
    }

    /// The steps from schema `first` to `second`, as ` (step; step)`, or nothing when the
    /// comparison gives none.
    static func schemaChanges(_ first: StoreSchema, _ second: StoreSchema) -> String {
        let changes = SchemaDiff(from: first, to: second).steps.map(\.summary)
        return changes.isEmpty ? "" : " (\(changes.joined(separator: "; ")))"
    }

    /// Copies the regular file at `url` to a new private file at `target`, streaming: opened as
    /// every package file is (no link followed, no blocking), so a FIFO or a link put in its place
    /// is refused rather than read.
    static func copyFile(_ url: URL, to target: String) throws(DeckError) {
        let input = try InputFile(opening: url.path) { kind, _ in .notARegularFile(path: url.path, kind: kind)
        }
        let output = try FileSystem.openRegular(target, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        defer { FileSystem.close(output) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: BlobStore.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try input.read(into: buffer.baseAddress!, count: buffer.count)
            if count == 0 { return }
            try FileSystem.write(output, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), path: target)
        }
    }
}

extension DeckError {
    /// This error with `path` (a scratch package's) named as `replacement` (what the user knows).
    package func replacingPath(_ path: String, with replacement: String) -> DeckError {
        switch self {
        case .notComparable(let where_, let reason) where where_ == path:
            .notComparable(
                path: replacement, reason: reason.replacingOccurrences(of: path, with: replacement))
        case .corrupt(let where_, let reason) where where_.hasPrefix(path):
            .corrupt(path: replacement, reason: reason)
        case .notAPackage(let where_, let reason) where where_.hasPrefix(path):
            .notAPackage(path: replacement, reason: reason)
        case .schemaMismatch(let where_, let differences) where where_.hasPrefix(path):
            .schemaMismatch(path: replacement, differences: differences)
        case .migrationRefused(let where_, let entity, let property, let reason) where where_.hasPrefix(path):
            .migrationRefused(path: replacement, entity: entity, property: property, reason: reason)
        default: self
        }
    }
}
