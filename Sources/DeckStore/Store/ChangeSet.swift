/// What one committed transaction changed: the local keys (record ids) of the records it
/// inserted, updated and deleted, by entity.
///
/// The sets describe the difference between the state before and after the transaction: a record
/// inserted and then changed is only inserted; one inserted and deleted again appears nowhere;
/// one changed and then deleted is only deleted. "Updated" includes records whose relationships
/// changed on the other side (the targets of a to-many assignment, both ends of a join-table
/// link) and records a delete rule nullified. Entities are the records' concrete entities.
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
struct ChangeRecorder {
    private(set) var set = ChangeSet()

    mutating func inserted(_ entity: String, _ id: Int64) {
        set.inserted[entity, default: []].insert(id)
    }

    mutating func updated(_ entity: String, _ id: Int64) {
        if set.inserted[entity]?.contains(id) == true || set.deleted[entity]?.contains(id) == true { return }
        set.updated[entity, default: []].insert(id)
    }

    mutating func deleted(_ entity: String, _ id: Int64) {
        set.updated[entity]?.remove(id)
        if set.updated[entity]?.isEmpty == true { set.updated[entity] = nil }
        if set.inserted[entity]?.remove(id) != nil {
            if set.inserted[entity]?.isEmpty == true { set.inserted[entity] = nil }
            return
        }
        set.deleted[entity, default: []].insert(id)
    }
}
