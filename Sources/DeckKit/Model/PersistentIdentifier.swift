import Foundation

/// The identity of a record: its entity and its global id (the store's `_gid`), the same in
/// every context and process, and across export, import and copies of the document.
///
/// A model has its identifier from the moment it is made, not only once saved, so an identifier
/// taken before the first save still names the record after it (SwiftData's temporary
/// identifiers change at save). The exception is a model of an entity with a unique attribute
/// (or a unique constraint of attributes): its first save gives it the identifier made from its
/// unique values (spec 6.10), the same on every device that makes that record, or the one of
/// the record a unique constraint matches. Use one to reach the same record from another context or actor
/// (``ModelContext/model(for:)``), where the model itself cannot go.
public struct PersistentIdentifier: Hashable, Codable, Sendable, Comparable, CustomStringConvertible {
    /// The entity the record was made as (a subentity for a subclass's records).
    public let entityName: String
    /// The record's global id.
    public let id: UUID

    /// The identifier of record `id` of entity `entityName`.
    public init(entityName: String, id: UUID) {
        self.entityName = entityName
        self.id = id
    }

    /// `Card/1B4E28BA-2FA1-11D2-883F-0016D3CCA427`.
    public var description: String { entityName + "/" + id.uuidString }

    /// Orders by entity, then by id (an arbitrary but fixed order).
    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.entityName, lhs.id.uuidString) < (rhs.entityName, rhs.id.uuidString)
    }
}
