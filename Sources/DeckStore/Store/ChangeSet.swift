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
///
/// A failed change is undone through ``mark`` and ``undo(to:)``: each operation logs how to take
/// itself back, so undoing costs what the failed change did, never a copy of the whole set (a
/// copy per change made a transaction of n inserts take time in n²).
struct ChangeRecorder {
    private(set) var set = ChangeSet()

    private enum Step {
        case addedInserted(String, Int64)
        case removedInserted(String, Int64)
        case addedUpdated(String, Int64)
        case removedUpdated(String, Int64)
        case addedDeleted(String, Int64)
    }

    /// How to take back each operation since the transaction began, in order.
    private var log: [Step] = []

    /// The point to come back to if the change that starts now fails.
    var mark: Int { log.count }

    /// Takes back every operation since `mark`.
    mutating func undo(to mark: Int) {
        while log.count > mark, let step = log.popLast() {
            switch step {
            case .addedInserted(let entity, let id): Self.remove(id, entity, from: &set.inserted)
            case .removedInserted(let entity, let id): set.inserted[entity, default: []].insert(id)
            case .addedUpdated(let entity, let id): Self.remove(id, entity, from: &set.updated)
            case .removedUpdated(let entity, let id): set.updated[entity, default: []].insert(id)
            case .addedDeleted(let entity, let id): Self.remove(id, entity, from: &set.deleted)
            }
        }
    }

    private static func remove(_ id: Int64, _ entity: String, from sets: inout [String: Set<Int64>]) {
        sets[entity]?.remove(id)
        if sets[entity]?.isEmpty == true { sets[entity] = nil }
    }

    mutating func inserted(_ entity: String, _ id: Int64) {
        if set.inserted[entity, default: []].insert(id).inserted { log.append(.addedInserted(entity, id)) }
    }

    mutating func updated(_ entity: String, _ id: Int64) {
        if set.inserted[entity]?.contains(id) == true || set.deleted[entity]?.contains(id) == true { return }
        if set.updated[entity, default: []].insert(id).inserted { log.append(.addedUpdated(entity, id)) }
    }

    mutating func deleted(_ entity: String, _ id: Int64) {
        if set.updated[entity]?.contains(id) == true {
            Self.remove(id, entity, from: &set.updated)
            log.append(.removedUpdated(entity, id))
        }
        if set.inserted[entity]?.contains(id) == true {
            Self.remove(id, entity, from: &set.inserted)
            log.append(.removedInserted(entity, id))
            return
        }
        if set.deleted[entity, default: []].insert(id).inserted { log.append(.addedDeleted(entity, id)) }
    }
}
