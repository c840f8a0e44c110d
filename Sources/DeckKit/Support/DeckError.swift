import Foundation

/// Everything that can go wrong with a document, said precisely: what, where, and how to fix it.
///
/// The `deck` tool maps each case to an exit status (see ``exitStatus``).
public enum DeckError: Error, CustomStringConvertible, Sendable {
    /// Nothing exists at the path.
    case notFound(path: String)
    /// The path exists but is not a Deck package (`reason` says why).
    case notAPackage(path: String, reason: String)
    /// The path already exists and would be overwritten.
    case alreadyExists(path: String)
    /// An output path exists and is not a regular file (`kind`: "a FIFO", "a directory", …); it is
    /// never replaced, not even when replacing is allowed.
    case notARegularFile(path: String, kind: String)
    /// The operating system refused access.
    case permissionDenied(path: String, operation: String)
    /// Another process holds the writer lock.
    case locked(path: String, pid: Int32?)
    /// The package was written by a newer, incompatible format version.
    case tooNew(path: String, version: Int, supported: Int)
    /// The package is damaged.
    case corrupt(path: String, reason: String)
    /// The schema is invalid (`reason` names the entity and attribute).
    case invalidSchema(String)
    /// No entity has that name.
    case unknownEntity(String, suggestion: String?)
    /// The entity has no attribute or relationship of that name.
    case unknownProperty(entity: String, name: String, suggestion: String?)
    /// A value does not fit its attribute.
    case invalidValue(entity: String, property: String, reason: String)
    /// No record of the entity has that id.
    case recordNotFound(entity: String, id: Int64)
    /// A unique constraint would be violated.
    case uniqueViolation(entity: String, properties: [String])
    /// A delete rule `deny` refused the delete.
    case deleteDenied(entity: String, id: Int64, relationship: String, count: Int)
    /// The package was opened read-only.
    case readOnly(path: String)
    /// A blob is missing or does not match its digest.
    case blobUnavailable(digest: String, reason: String)
    /// A file-system call failed.
    case io(path: String, operation: String, errno: Int32)
    /// SQLite reported an error.
    case sqlite(SQLiteError)
    /// A filter or sort refers to something that cannot be compiled.
    case invalidQuery(String)
    /// The archive is unusable or hostile.
    case archive(String)

    public var description: String {
        switch self {
        case .notFound(let path): return "\(path): no such file or directory"
        case .notAPackage(let path, let reason): return "\(path): not a Deck package: \(reason)"
        case .alreadyExists(let path):
            return "\(path): already exists; choose another path or remove it first"
        case .notARegularFile(let path, let kind):
            return "\(path): is \(kind), not a regular file, and is never replaced; choose another path"
        case .permissionDenied(let path, let op): return "\(path): permission denied (\(op))"
        case .locked(let path, let pid):
            let holder = pid.map { "pid \($0)" } ?? "another process"
            return "\(path): document is locked by \(holder); close it there or wait, then try again"
        case .tooNew(let path, let version, let supported):
            return
                "\(path): package needs a reader of format \(version) or later (this version of Deck "
                + "supports format \(supported)); upgrade Deck to open it"
        case .corrupt(let path, let reason):
            return "\(path): package is corrupt: \(reason); run 'deck verify' for details"
        case .invalidSchema(let reason): return "invalid schema: \(reason)"
        case .unknownEntity(let name, let suggestion):
            return "unknown entity '\(name)'" + (suggestion.map { "; did you mean '\($0)'?" } ?? "")
        case .unknownProperty(let entity, let name, let suggestion):
            return "entity '\(entity)' has no attribute or relationship '\(name)'"
                + (suggestion.map { "; did you mean '\($0)'?" } ?? "")
        case .invalidValue(let entity, let property, let reason): return "\(entity).\(property): \(reason)"
        case .recordNotFound(let entity, let id): return "\(entity) #\(id) does not exist"
        case .uniqueViolation(let entity, let properties):
            return "\(entity): another record already has the same \(properties.joined(separator: ", "))"
        case .deleteDenied(let entity, let id, let relationship, let count):
            return
                "cannot delete \(entity) #\(id): its relationship '\(relationship)' has delete rule 'deny' "
                + "and still holds \(count) record(s)"
        case .readOnly(let path): return "\(path): document is open read-only"
        case .blobUnavailable(let digest, let reason): return "blob \(digest): \(reason)"
        case .io(let path, let op, let code):
            return "\(path): \(op) failed: \(String(cString: strerror(code)))"
        case .sqlite(let error): return error.description
        case .invalidQuery(let reason): return reason
        case .archive(let reason): return reason
        }
    }

    /// The `deck` exit status for this error (sysexits.h values; see `man/deck.1`).
    public var exitStatus: Int32 {
        switch self {
        case .notFound, .notAPackage, .permissionDenied, .tooNew: 66
        case .locked: 75
        case .corrupt, .blobUnavailable, .archive: 65
        case .alreadyExists, .notARegularFile: 73
        case .io: 74
        case .sqlite(let e): e.isBusy ? 75 : (e.isCorruption ? 65 : 74)
        case .invalidSchema, .unknownEntity, .unknownProperty, .invalidValue, .recordNotFound,
            .uniqueViolation, .deleteDenied, .readOnly, .invalidQuery:
            65
        }
    }
}

extension DeckError {
    /// Wraps any error thrown below the package layer into a ``DeckError``.
    static func wrap(_ error: any Error) -> DeckError {
        switch error {
        case let e as DeckError: e
        case let e as SQLiteError: .sqlite(e)
        default: .invalidQuery(String(describing: error))
        }
    }
}
