import Foundation
import Observation

/// The base class of every model: SwiftData's `@Model final class Card` is
/// `final class Card: ModelObject` in Deck (there are no macros to generate the conformance).
///
/// ```swift
/// final class Card: ModelObject {
///     @Attribute var front = ""
///     @Attribute var back = ""
///     @Relationship(inverse: \Deck.cards) var deck: Deck? = nil
/// }
/// ```
///
/// The class holds what Deck keeps for the instance (its identity, its context and record, what
/// changed), which the property wrappers reach through the instance. A model declares each
/// stored property with ``Attribute``, ``Relationship`` or ``Transient`` and gives each a
/// default, so that `init()` makes an instance: Deck calls it to discover the properties and to
/// make the models of fetched records. A class that declares an initializer of its own also
/// writes `required init() {}`.
///
/// Unique constraints, indexes and the entity's names are class properties that a model
/// overrides (SwiftData's `#Unique` and `#Index`):
///
/// ```swift
/// final class Order: ModelObject {
///     @Attribute var number = 0
///     @Attribute var status = ""
///     @Attribute var createdAt = Date.now
///     override class var uniqueConstraints: [[AnyKeyPath]] { [[\Order.number]] }
///     override class var indexes: [[AnyKeyPath]] { [[\Order.status, \Order.createdAt]] }
/// }
/// ```
///
/// A declaration of another type does not compile: `static var uniqueConstraints:
/// [[PartialKeyPath<Order>]]` is "cannot override a property with type '[[AnyKeyPath]]'", and one
/// without `override` is "overriding declaration requires an 'override' keyword", so a
/// constraint cannot be ignored because its declaration missed the requirement. (The key paths
/// are `AnyKeyPath`s so that a subclass can name its own properties; the schema checks that each
/// is an attribute of the type.)
open class ModelObject: PersistentModel {
    /// What Deck keeps for the instance, made on first use (see ``ModelBacking/of(_:)``).
    @usableFromInline final var backing: ModelBacking?

    /// Makes an instance with every property at its default.
    public required init() {}

    /// The entity's name in the store: the class's name unless a subclass overrides it.
    open class var entityName: String { String(describing: self) }

    /// Sets of attributes whose values together are unique (SwiftData's `#Unique`), as key paths
    /// of the type: `[[\Order.number], [\Order.customer, \Order.date]]`. An insert whose values
    /// match an existing record's updates that record instead (an upsert). None unless a
    /// subclass overrides it.
    open class var uniqueConstraints: [[AnyKeyPath]] { [] }

    /// Indexes the store keeps, each on one or more attributes (SwiftData's `#Index`), as key
    /// paths of the type: `[[\Order.status, \Order.createdAt]]`. None unless a subclass
    /// overrides it.
    open class var indexes: [[AnyKeyPath]] { [] }

    /// The entity's name in the previous schema version, when the type was renamed: nil unless a
    /// subclass overrides it.
    open class var originalEntityName: String? { nil }
}
