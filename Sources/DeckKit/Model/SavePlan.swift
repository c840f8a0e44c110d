import Foundation

/// The writes a flush makes, as a plain value: records to insert, the relationships of the
/// inserted records, the updates of saved ones, the deletions, and the values to read back once
/// written from files. ``SavePlanner`` builds one from a context's tracked changes;
/// ``SaveExecutor`` applies it to a `StoreTransaction`. It names records by their id, or, for a
/// record the plan inserts, by its place in ``inserts`` (``PlannedRecord``); it holds no model,
/// so a test can build one by hand and run it on a store.
///
/// What only the transaction can tell is left to the executor: the record ids of inserted
/// records, which inserts an upsert matched to an existing record (``Entity/isUpsert``), and what
/// a saved to-many relationship holds in the store (``PlannedValue/merged(_:)``).
struct SavePlan {
    /// An entity the plan inserts records of.
    struct Entity {
        /// The entity's name in the store.
        var name: String
        /// The name of the root of its hierarchy: records of one hierarchy share ids.
        var root: String
        /// The attributes each of its inserts gives, in the order of ``Insert/values``.
        var attributes: [String]
        /// Whether its records have unique values, so an insert is an upsert (which can match an
        /// existing record, or a record inserted before by the plan).
        var isUpsert: Bool
    }

    /// A record to insert.
    struct Insert {
        /// Its entity, an index into ``entities``.
        var entity: Int
        var globalID: UUID
        /// Where its values start in ``values``: one per attribute of its entity, in their order.
        var values: Int
        /// Its relationships, a range of ``links``: written once every insert is done.
        var links: Range<Int>
    }

    /// A relationship of an inserted record.
    enum Link {
        /// A to-one relationship and its target, if any.
        case toOne(name: String, target: PlannedRecord?)
        /// A to-many relationship and its targets (without those the plan deletes).
        case toMany(ToMany)
    }

    /// A to-many relationship of an inserted record.
    struct ToMany {
        var name: String
        var targets: [PlannedRecord]
        var bounds: Bounds
        /// Whether each target is inserted by the plan and points back at the record through the
        /// to-one inverse, and no other insert points at it: those to-one links write the list,
        /// when every target is a new record (not one an upsert matched), and it is not written
        /// again.
        var isWrittenByTargets: Bool
        /// What the executor reports (``SaveExecutor/Outcome/reread``) when the record holds
        /// other links than these after the save (several inserts became one record).
        var rereadKey: Int
    }

    /// A model-count range of a to-many relationship.
    struct Bounds: Equatable {
        var minimum: Int?
        var maximum: Int?

        static let none = Bounds()
    }

    /// The changes of a saved record.
    struct Update {
        var entity: String
        var id: Int64
        var values: [(name: String, value: PlannedValue)]
    }

    /// A saved to-many relationship changed by the context: written as what the store holds now,
    /// with the links the context added since it loaded the relationship and without those it
    /// removed (so another writer's saved changes to it stay).
    struct MergedToMany {
        /// The targets the context holds now (without those the plan deletes).
        var current: [PlannedRecord]
        /// The record ids the relationship held when the context loaded it.
        var loaded: Set<Int64>
        var bounds: Bounds
        /// Reported when the merged links differ from ``current``.
        var rereadKey: Int
    }

    /// A record to delete, with its delete rules.
    struct Deletion {
        var entity: String
        var id: Int64
        /// How many relationships its entity has: how many deny rules a fetch's flush may have to
        /// let go of before the record can go.
        var relationshipCount: Int
    }

    /// A value written from a file, read back from the record after the writes (a blob reference,
    /// or inline data).
    struct ReadBack {
        var record: PlannedRecord
        var entity: String
        var attribute: String
    }

    var entities: [Entity] = []
    var inserts: [Insert] = []
    /// The inserts' attribute values, one run per insert (``Insert/values``).
    var values: [Value] = []
    var links: [Link] = []
    var updates: [Update] = []
    /// Deletions that run before the inserts: records of a hierarchy with unique values that the
    /// plan inserts into, so that an insert takes a deleted record's value, not its record.
    var deletionsFirst: [Deletion] = []
    /// Deletions that run after every other write, in order, so that their delete rules see the
    /// graph the plan leaves.
    var deletions: [Deletion] = []
    var readBacks: [ReadBack] = []

    /// The attribute values of insert `index`.
    func values(of index: Int) -> ArraySlice<Value> {
        let insert = inserts[index]
        return values[insert.values..<(insert.values + entities[insert.entity].attributes.count)]
    }
}

/// A record of a ``SavePlan``: one saved before it, by id, or one it inserts, by its place in
/// ``SavePlan/inserts``.
enum PlannedRecord: Hashable {
    case saved(Int64)
    case inserted(Int)
}

/// A value of an update in a ``SavePlan``.
enum PlannedValue {
    /// An attribute's value, or null for a to-one relationship set to nothing.
    case value(Value)
    /// A to-one relationship's target.
    case record(PlannedRecord)
    /// A to-many relationship's targets, written whole, within its bounds.
    case records([PlannedRecord], SavePlan.Bounds)
    /// A saved to-many relationship merged by link with what the store holds.
    case merged(SavePlan.MergedToMany)
}
