import Foundation
import Observation

/// A class whose instances are stored in a document: SwiftData's `PersistentModel`, without the
/// macro. A model is a subclass of ``ModelObject``, which conforms.
///
/// Declare each stored property with ``Attribute`` or ``Relationship`` (``Transient`` for one that
/// is not stored), each with a default, so that `init()` (which Deck uses to make instances when
/// it reads them) needs nothing:
///
/// ```swift
/// final class Card: ModelObject {
///     @Attribute var front = ""
///     @Attribute var back = ""
///     @Attribute var creationDate = Date.now
///     @Attribute(.externalStorage) var image: Data? = nil
///     @Relationship(inverse: \Deck.cards) var deck: Deck? = nil
/// }
/// ```
///
/// Deck discovers a model's properties once per type, from an instance made with `init()`, and
/// checks them (a property it cannot store is a ``DeckError`` naming it). The entity is named
/// after the class (``entityName``); a subclass of a model class is a subentity, and a fetch of
/// the parent returns instances of the subclasses too.
///
/// Models are `Observable`: reading a property inside `withObservationTracking` tracks it, and
/// changing it (or Deck changing it, as when the other side of a relationship changes) notifies.
/// Instances are not `Sendable`: a model belongs to the ``ModelContext`` that made or fetched it.
/// Another context reaches the same record through ``persistentModelID``.
public protocol PersistentModel: AnyObject, Observable, Hashable, Identifiable {
    /// Makes an instance with every property at its default: Deck calls it to discover the
    /// properties and to make instances of fetched records.
    init()

    /// The entity's name in the store; the class's name unless the type says otherwise.
    static var entityName: String { get }

    /// Sets of attributes whose values together are unique (SwiftData's `#Unique`), as key paths
    /// of the type: `[[\Order.orderNumber], [\Order.customer, \Order.date]]`. An insert whose
    /// values match an existing record's updates that record instead (an upsert).
    ///
    /// A model overrides ``ModelObject``'s class property (`override class var`), so a
    /// declaration of another type is a compile error (see ``ModelObject``). (Key paths of `Self`
    /// would tie the requirement to the type, which a non-final class cannot satisfy; the schema
    /// checks that each key path is an attribute of the type.)
    static var uniqueConstraints: [[AnyKeyPath]] { get }

    /// Indexes the store keeps, each on one or more attributes (SwiftData's `#Index`), as key
    /// paths of the type: `[[\Order.status, \Order.createdAt]]`. Overridden as
    /// ``uniqueConstraints`` is.
    static var indexes: [[AnyKeyPath]] { get }

    /// The entity's name in the previous schema version, when the type was renamed.
    static var originalEntityName: String? { get }
}

extension PersistentModel {
    /// The record's identity, stable for its life and across export and import. Assigned when the
    /// model is made, so it does not change when the model is first saved.
    public var persistentModelID: PersistentIdentifier { ModelBacking.of(self).identifier }

    /// `Identifiable`: the ``persistentModelID``.
    public var id: PersistentIdentifier { persistentModelID }

    /// The context the model is registered in, or nil before it is inserted (and after it is
    /// deleted and saved).
    public var modelContext: ModelContext? { ModelBacking.of(self).context }

    /// True when the model has changes that its context has not saved (inserted, changed, or
    /// deleted): false again once they are saved, a deletion included (``isDeleted`` stays true).
    public var hasChanges: Bool { ModelBacking.of(self).hasChanges }

    /// True once the model is deleted from its context (saved or not).
    public var isDeleted: Bool { ModelBacking.of(self).isDeleted }

    /// Models are equal when they are the same instance (one instance per record in a context).
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs === rhs }

    /// Hashes the instance's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
