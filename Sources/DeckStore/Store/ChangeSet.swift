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
/// The operations are journaled as they happen. A change that fails drops its part of the
/// journal (``drop(to:)``); one that succeeds (``keep()``) only moves the mark of what is kept,
/// and the kept operations are applied to the set, in order, when the set is read: undoing a
/// failed change costs nothing, keeping one costs nothing, and no change ever copies the
/// transaction's whole set (a copy per insert made a 100k-row transaction quadratic). Applying
/// takes one dictionary lookup per run of operations of one kind on one entity.
struct ChangeRecorder {
    private var applied = ChangeSet()
    private enum Kind { case inserted, updated, deleted }
    private var journal: [(kind: Kind, entity: String, id: Int64)] = []
    /// The operations before this index succeeded; those before `appliedCount` are in `applied`.
    private var keptCount = 0
    private var appliedCount = 0

    mutating func inserted(_ entity: String, _ id: Int64) { journal.append((.inserted, entity, id)) }
    mutating func updated(_ entity: String, _ id: Int64) { journal.append((.updated, entity, id)) }
    mutating func deleted(_ entity: String, _ id: Int64) { journal.append((.deleted, entity, id)) }

    /// Where the journal stands: a change nested in another undoes back to here when it fails.
    var mark: Int { journal.count }

    /// The outermost change under way succeeded: its operations are kept.
    mutating func keep() { keptCount = journal.count }

    /// The change begun at `mark` failed: its operations are forgotten (an enclosing change's
    /// stay, for it may still succeed).
    mutating func drop(to mark: Int) { journal.removeSubrange(max(mark, keptCount)...) }

    /// What the kept operations changed.
    var set: ChangeSet {
        mutating get {
            applyKept()
            return applied
        }
    }

    private mutating func applyKept() {
        var index = appliedCount
        while index < keptCount {
            let (kind, entity) = (journal[index].kind, journal[index].entity)
            var end = index + 1
            while end < keptCount, journal[end].kind == kind, journal[end].entity == entity { end += 1 }
            switch kind {
            case .inserted:
                Self.modify(&applied.inserted[entity, default: []]) { ids in
                    for position in index..<end { ids.insert(journal[position].id) }
                }
            case .updated:
                for position in index..<end { applyUpdate(entity, journal[position].id) }
            case .deleted:
                for position in index..<end { applyDelete(entity, journal[position].id) }
            }
            index = end
        }
        appliedCount = keptCount
    }

    /// Runs `body` on `value` in place (one lookup for a dictionary's value).
    private static func modify<T>(_ value: inout T, _ body: (inout T) -> Void) { body(&value) }

    private mutating func applyUpdate(_ entity: String, _ id: Int64) {
        if applied.inserted[entity]?.contains(id) == true || applied.deleted[entity]?.contains(id) == true {
            return
        }
        applied.updated[entity, default: []].insert(id)
    }

    private mutating func applyDelete(_ entity: String, _ id: Int64) {
        applied.updated[entity]?.remove(id)
        if applied.updated[entity]?.isEmpty == true { applied.updated[entity] = nil }
        if applied.inserted[entity]?.remove(id) != nil {
            if applied.inserted[entity]?.isEmpty == true { applied.inserted[entity] = nil }
            return
        }
        applied.deleted[entity, default: []].insert(id)
    }
}
