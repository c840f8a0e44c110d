/// What one committed transaction changed: the local keys (record ids) of the records it
/// inserted, updated and deleted, by entity.
///
/// The sets describe the difference between the state before and after the transaction: a record
/// inserted and then changed is only inserted; one inserted and deleted again appears nowhere;
/// one changed and then deleted is only deleted. "Updated" includes the records whose
/// relationships changed on the other side, where the relationship has an inverse: the record a
/// new or changed to-one points at and the one it pointed at before (a new card's deck), the
/// targets of a to-many assignment, both ends of a join-table link, and the records a delete let
/// go of (a delete rule nullified them, or they held the deleted record). So a reader that keeps
/// records in memory knows which to read again. Entities are the records' concrete entities.
///
/// ```swift
/// let changes = try store.write { try $0.insert("Tag", ["name": .string("verbs")]) }.changes
/// changes.inserted["Tag"]   // [4]
/// ```
public struct ChangeSet: Sendable, Hashable {
    /// Records that exist after the transaction and did not before.
    public internal(set) var inserted: [String: Set<Int64>] = [:]
    /// Records that existed before and after, and changed.
    public internal(set) var updated: [String: Set<Int64>] = [:]
    /// Records that existed before the transaction and do not after.
    public internal(set) var deleted: [String: Set<Int64>] = [:]

    public init() {}

    /// True when the transaction changed no record.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }

    /// How many records changed in all.
    public var count: Int {
        inserted.values.reduce(0) { $0 + $1.count } + updated.values.reduce(0) { $0 + $1.count }
            + deleted.values.reduce(0) { $0 + $1.count }
    }
}

/// Collects the changes of the writer's open transaction as the record operations make them.
///
/// The operations of the change under way are journaled and applied to ``set`` only when the
/// change succeeds (``keep()``), or dropped when it fails (``drop()``): undoing a failed change
/// costs nothing, and no change ever copies the transaction's whole set (a copy per insert made
/// a 100k-row transaction quadratic).
struct ChangeRecorder {
    private(set) var set = ChangeSet()
    private enum Kind { case inserted, updated, deleted }
    private var journal: [(kind: Kind, entity: String, id: Int64)] = []

    mutating func inserted(_ entity: String, _ id: Int64) { journal.append((.inserted, entity, id)) }
    mutating func updated(_ entity: String, _ id: Int64) { journal.append((.updated, entity, id)) }
    mutating func deleted(_ entity: String, _ id: Int64) { journal.append((.deleted, entity, id)) }

    /// Where the journal stands: a change nested in another undoes back to here when it fails.
    var mark: Int { journal.count }

    /// The outermost change under way succeeded: its operations join the set, in order.
    mutating func keep() {
        for (kind, entity, id) in journal {
            switch kind {
            case .inserted: set.inserted[entity, default: []].insert(id)
            case .updated: applyUpdate(entity, id)
            case .deleted: applyDelete(entity, id)
            }
        }
        journal.removeAll(keepingCapacity: true)
    }

    /// The change begun at `mark` failed: its operations are forgotten (an enclosing change's
    /// stay, for it may still succeed).
    mutating func drop(to mark: Int) { journal.removeSubrange(mark...) }

    private mutating func applyUpdate(_ entity: String, _ id: Int64) {
        if set.inserted[entity]?.contains(id) == true || set.deleted[entity]?.contains(id) == true { return }
        set.updated[entity, default: []].insert(id)
    }

    private mutating func applyDelete(_ entity: String, _ id: Int64) {
        set.updated[entity]?.remove(id)
        if set.updated[entity]?.isEmpty == true { set.updated[entity] = nil }
        if set.inserted[entity]?.remove(id) != nil {
            if set.inserted[entity]?.isEmpty == true { set.inserted[entity] = nil }
            return
        }
        set.deleted[entity, default: []].insert(id)
    }
}
