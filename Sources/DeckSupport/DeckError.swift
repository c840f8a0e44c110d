import Foundation

/// Everything that can go wrong with a document, said precisely: what, where, and how to fix it.
///
/// Every failure of DeckKit is one of these cases, so callers match on cases, never on text:
/// archive refusals carry an ``ArchiveError``, SQLite failures an ``SQLiteError`` with its
/// ``ResultCode``. Names that were not found come with the names that exist (`known`), so a
/// caller can suggest the closest one.
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
    /// A file given to be imported (a Core Data or SwiftData store) is not one, or is damaged or
    /// hostile (`reason` says what, and where); nothing was created.
    case invalidSource(path: String, reason: String)
    /// A document given to be compared with or merged into another cannot be: it is another
    /// document, its schema differs, its format version is too old (`reason` says which, as a
    /// sentence about the document at `path`, and what to do).
    case notComparable(path: String, reason: String)
    /// The schema is invalid (`reason` names the entity and attribute).
    case invalidSchema(String)
    /// The document's stored schema is not the one the caller's models (or schema) describe; each
    /// difference is named (`Card.back: missing from the document`).
    case schemaMismatch(path: String, differences: [String])
    /// The document is at a later schema version than the application's, and the application
    /// cannot read it (``DocumentAccess/needsNewerApplication(version:reasons:)``): it needs
    /// version `version` of the application; `reasons` name what it cannot read.
    case needsNewerApplication(path: String, version: String, reasons: [String])
    /// No entity has that name; `known` lists the entities that exist.
    case unknownEntity(String, known: [String])
    /// The entity has no attribute or relationship of that name; `known` lists those it has.
    case unknownProperty(entity: String, name: String, known: [String])
    /// A value does not fit its attribute.
    case invalidValue(entity: String, property: String, reason: String)
    /// No record of the entity has that id.
    case recordNotFound(entity: String, id: Int64)
    /// No record of the entity (or its subentities) has the global id.
    case globalIDNotFound(entity: String, globalID: UUID)
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
    case archive(ArchiveError)
    /// The store was closed; nothing more can be done with it.
    case closed(path: String)
    /// Closing would discard changes that were never committed (close with
    /// `discardingChanges: true` to drop them).
    case unsavedChanges(path: String)
    /// The operation was cancelled; it left nothing behind and the document as it was.
    case cancelled
    /// A use of the API that cannot work: a reader or transaction used after its scope ended,
    /// a write started inside a write on the same thread.
    case misuse(String)
    /// An error from outside Deck (a caller's closure, the platform), passed through.
    case unexpected(String)
    /// A migration of the package at `path` was refused before it changed anything: a step that
    /// needs a custom stage, a removal the plan does not agree to, or data that breaks a new rule
    /// (`entity` and `property` name where; empty and nil when it concerns the whole schema).
    case migrationRefused(path: String, entity: String, property: String?, reason: String)
    /// A migration plan (a plan file or its JSON) is not valid; the text names the file and member.
    case invalidMigrationPlan(String)
    /// A closure of the custom migration stage `stage` (`willMigrate` or `didMigrate`, named by
    /// `closure`) threw `error`, an error of its own (Deck's errors from the store it works on
    /// come as themselves), kept as it was: match it with a pattern
    /// (`catch DeckError.migrationStageFailed(_, _, _, let error as MyError)`). The stage changed
    /// nothing: the document is at the version before it.
    case migrationStageFailed(path: String, stage: String, closure: String, error: any Error)

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
        case .invalidSource(let path, let reason): return "\(path): cannot be imported: \(reason)"
        case .notComparable(let path, let reason): return "\(path): \(reason)"
        case .invalidSchema(let reason): return "invalid schema: \(reason)"
        case .schemaMismatch(let path, let differences):
            return "\(path): the document's schema differs from the models: "
                + differences.joined(separator: "; ")
        case .needsNewerApplication(let path, let version, let reasons):
            return "\(path): this document needs version \(version) of the app: "
                + reasons.joined(separator: "; ")
        case .unknownEntity(let name, _):
            return "unknown entity '\(name)'"
        case .unknownProperty(let entity, let name, _):
            return "entity '\(entity)' has no attribute or relationship '\(name)'"
        case .invalidValue(let entity, let property, let reason): return "\(entity).\(property): \(reason)"
        case .recordNotFound(let entity, let id): return "\(entity) #\(id) does not exist"
        case .globalIDNotFound(let entity, let globalID):
            return "no \(entity) record has the global id \(globalID.uuidString)"
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
        case .archive(let error): return error.description
        case .closed(let path): return "\(path): the document is closed"
        case .unsavedChanges(let path):
            return "\(path): there are changes that were never committed; commit or roll them back first"
        case .cancelled: return "cancelled"
        case .unexpected(let text): return text
        case .misuse(let text): return text
        case .migrationRefused(let path, _, _, let reason): return "\(path): cannot migrate: \(reason)"
        case .invalidMigrationPlan(let reason): return "invalid migration plan: \(reason)"
        case .migrationStageFailed(let path, let stage, let closure, let error):
            return "\(path): the migration stage \(stage) failed in \(closure), changing nothing: \(error)"
        }
    }
}

extension DeckError {
    /// Wraps any error thrown below the package layer into a ``DeckError``; an error that is not
    /// Deck's own (nor a cancellation) becomes what `foreign` makes of it.
    package static func wrap(
        _ error: any Error, foreign: (any Error) -> DeckError = { .unexpected(String(describing: $0)) }
    ) -> DeckError {
        switch error {
        case let e as DeckError: e
        case let e as SQLiteError: .sqlite(e)
        case let e as ArchiveError: .archive(e)
        case is CancellationError: .cancelled
        default: foreign(error)
        }
    }
}

extension DeckError {
    /// What kind of failure an error is, for callers that react to the kind rather than the
    /// case (the `deck` tool turns it into an exit status).
    public enum Kind: Sendable, Hashable {
        /// The path or package cannot be opened: missing, not a package, no permission, too new.
        case cannotOpen
        /// Something to be created already exists, or is of a kind that is never replaced.
        case alreadyExists
        /// The input is invalid or the package is damaged.
        case invalidData
        /// A file-system or device operation failed.
        case io
        /// Another writer holds the document, or a lock could not be taken in time.
        case busy
        /// The operation was cancelled.
        case cancelled
        /// A use of the API that cannot succeed (a closed store), or an error from outside Deck.
        case misuse
    }

    /// The kind of this failure.
    public var kind: Kind {
        switch self {
        case .notFound, .notAPackage, .permissionDenied, .tooNew, .needsNewerApplication: .cannotOpen
        case .locked: .busy
        case .corrupt, .blobUnavailable, .invalidSource, .notComparable: .invalidData
        case .archive: .invalidData
        case .alreadyExists, .notARegularFile: .alreadyExists
        case .io: .io
        case .sqlite(let e): e.isBusy ? .busy : (e.isCorruption ? .invalidData : .io)
        case .invalidSchema, .schemaMismatch, .unknownEntity, .unknownProperty, .invalidValue,
            .recordNotFound, .globalIDNotFound, .uniqueViolation, .deleteDenied, .readOnly, .invalidQuery,
            .unsavedChanges, .migrationRefused, .invalidMigrationPlan:
            .invalidData
        case .closed, .unexpected, .misuse: .misuse
        case .cancelled: .cancelled
        case .migrationStageFailed: .invalidData
        }
    }
}
