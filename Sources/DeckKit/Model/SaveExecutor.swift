import Foundation

/// Applies a ``SavePlan`` to a `StoreTransaction`, in the order a save needs: the deletions that
/// must come first, the inserts (positional where the entity allows it, an upsert where it has
/// unique values), the inserted records' relationships, now that every record has an id, the
/// updates of saved records, the other deletions, and the values written from files, read back.
///
/// `forFetch`: the flush of a fetch with pending changes, whose transaction is rolled back. What
/// only a save refuses, it lets through: a deletion a deny rule refuses is done after letting go
/// of the links that hold it, model-count bounds are not checked, and a change onto another
/// record's unique value is written without the clashing values.
struct SaveExecutor {
    /// What the writes gave.
    struct Outcome {
        /// The record id of each insert, in the plan's order.
        var recordIDs: [Int64] = []
        /// The inserts an upsert matched to an existing record, with that record's global id.
        var adopted: [Int: UUID] = [:]
        /// The inserts of new records whose global ids the store made from their unique values
        /// (spec 6.10), with those ids.
        var identified: [Int: UUID] = [:]
        /// What the store holds for each read-back (its index in ``SavePlan/readBacks``) whose
        /// record is still there.
        var readBacks: [(index: Int, value: Value)] = []
        /// The ``SavePlan/ToMany/rereadKey`` or ``SavePlan/MergedToMany/rereadKey`` of each to-many
        /// relationship that holds other links after the save than the plan listed.
        var reread: [Int] = []
    }

    private let plan: SavePlan
    private let transaction: StoreTransaction
    private let forFetch: Bool
    private var outcome = Outcome()

    private init(plan: SavePlan, transaction: StoreTransaction, forFetch: Bool) {
        self.plan = plan
        self.transaction = transaction
        self.forFetch = forFetch
    }

    /// Writes `plan` into `transaction`. On failure the transaction must be discarded: some writes
    /// run without a savepoint.
    static func run(_ plan: SavePlan, in transaction: StoreTransaction, forFetch: Bool = false)
        throws(DeckError) -> Outcome
    {
        var executor = SaveExecutor(plan: plan, transaction: transaction, forFetch: forFetch)
        try executor.delete(plan.deletionsFirst)
        try executor.insertRecords()
        try executor.writeLinks()
        try executor.update()
        try executor.delete(plan.deletions)
        try executor.readBack()
        return executor.outcome
    }

    // MARK: Records

    /// The record id of `record`, once the inserts are done.
    private func id(of record: PlannedRecord) -> Int64 {
        switch record {
        case .saved(let id): id
        case .inserted(let index): outcome.recordIDs[index]
        }
    }

    /// Whether `record` is one the plan inserted as a new record (not one an upsert matched).
    private func isNewRecord(_ record: PlannedRecord) -> Bool {
        guard case .inserted(let index) = record else { return false }
        return outcome.adopted.isEmpty || outcome.adopted[index] == nil
    }

    /// Inserts the plan's records, in order: positionally (values by the store's attribute order,
    /// in one array reused for the next insert of the same entity), or by name for an entity with
    /// unique values (an upsert) or attributes the store lacks (which the insert reports).
    private mutating func insertRecords() throws(DeckError) {
        outcome.recordIDs.reserveCapacity(plan.inserts.count)
        // Where each attribute goes in a positional insert, by entity (nil: the named way), and
        // the values of the last one, whose array the next insert of the entity reuses (the
        // positions no attribute fills stay nil: the document's default).
        var positions: [Int: [Int]?] = [:]
        var lastPositional: (entity: Int, of: [Int])?
        var given: [Value?] = []
        for insert in plan.inserts {
            let entity = plan.entities[insert.entity]
            var of: [Int]?
            if let last = lastPositional, last.entity == insert.entity {
                of = last.of
            } else {
                if positions[insert.entity] == nil {
                    positions[insert.entity] = .some(try positionalOrder(entity))
                }
                of = positions[insert.entity] ?? nil
                if let of {
                    lastPositional = (insert.entity, of)
                    given = [Value?](
                        repeating: nil, count: try transaction.attributeOrder(of: entity.name).count)
                }
            }
            if let of {
                for (k, position) in of.enumerated() { given[position] = plan.values[insert.values + k] }
                outcome.recordIDs.append(
                    try transaction.insert(entity.name, positional: given, globalID: insert.globalID))
                continue
            }
            var values: [String: Value] = [:]
            for (k, name) in entity.attributes.enumerated() { values[name] = plan.values[insert.values + k] }
            guard entity.isUpsert else {
                outcome.recordIDs.append(
                    try transaction.insert(entity.name, values, globalID: insert.globalID))
                continue
            }
            // A record with the values of a unique constraint of attributes gets its id from them
            // (spec 6.10), so that copies that insert the same record merge into one: the
            // model takes the store's id, as it takes a matched record's.
            let derives = try transaction.makesGlobalID(of: entity.name, values: values)
            let (id, wasInserted) = try transaction.upsert(
                entity.name, values, globalID: derives ? nil : insert.globalID)
            if !wasInserted || derives, let record = try transaction.record(entity.name, id: id),
                let gid = record.globalID
            {
                if !wasInserted {
                    outcome.adopted[outcome.recordIDs.count] = gid
                } else if gid != insert.globalID {
                    outcome.identified[outcome.recordIDs.count] = gid
                }
            }
            outcome.recordIDs.append(id)
        }
    }

    /// Where each of `entity`'s attributes goes in a positional insert (its index in the store's
    /// attribute order), or nil when the insert goes the named way.
    private func positionalOrder(_ entity: SavePlan.Entity) throws(DeckError) -> [Int]? {
        guard !entity.isUpsert else { return nil }
        let order = try transaction.attributeOrder(of: entity.name)
        let position = Dictionary(
            order.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        let of = entity.attributes.map { position[$0] ?? -1 }
        return of.contains(-1) ? nil : of
    }

    // MARK: Links

    /// A record that several inserts became (an upsert matched one to another before it), by its
    /// root entity.
    private struct SharedRecord: Hashable {
        let root: String
        let id: Int64
    }

    /// A to-many relationship of a ``SharedRecord``.
    private struct SharedLink: Hashable {
        let root: String
        let id: Int64
        let name: String
    }

    /// The inserted records' relationships. A new record (not one an upsert matched) sets each
    /// to-one relationship in one statement (`setReference`), and does not write a to-many
    /// relationship whose links its targets' to-one inverses write. A record that several inserts
    /// became holds, in each to-many relationship, the union of their links.
    private mutating func writeLinks() throws(DeckError) {
        var shared: Set<SharedRecord> = []
        if !outcome.adopted.isEmpty {
            var counts: [SharedRecord: Int] = [:]
            for (index, insert) in plan.inserts.enumerated() {
                let record = SharedRecord(
                    root: plan.entities[insert.entity].root, id: outcome.recordIDs[index])
                counts[record, default: 0] += 1
            }
            shared = Set(counts.filter { $0.value > 1 }.keys)
        }
        var unions: [SharedLink: [Int64]] = [:]
        // Each shared record's to-many relationships, as each insert gave them: how many targets,
        // and what to report when the union differs.
        var sharers: [(link: SharedLink, entity: String, toMany: SavePlan.ToMany)] = []
        for (index, insert) in plan.inserts.enumerated() where !insert.links.isEmpty {
            let id = outcome.recordIDs[index]
            let entity = plan.entities[insert.entity]
            let isNew = isNewRecord(.inserted(index))
            let isShared = !shared.isEmpty && shared.contains(SharedRecord(root: entity.root, id: id))
            var values: [String: Value] = [:]
            for link in plan.links[insert.links] {
                switch link {
                case .toOne(let name, let target):
                    guard let target else { continue }
                    guard isNew else {
                        values[name] = .reference(self.id(of: target))
                        continue
                    }
                    var insertedTarget: String?
                    if case .inserted(let other) = target, isNewRecord(target) {
                        insertedTarget = plan.entities[plan.inserts[other].entity].name
                    }
                    try transaction.setReference(
                        ofInserted: entity.name, id: id, name, to: self.id(of: target),
                        insertedTarget: insertedTarget)
                case .toMany(let toMany) where isShared:
                    // Its bounds are checked on the union, once every insert merged into it is in.
                    let link = SharedLink(root: entity.root, id: id, name: toMany.name)
                    var union = unions[link] ?? []
                    var seen = Set(union)
                    for target in toMany.targets {
                        let targetID = self.id(of: target)
                        if seen.insert(targetID).inserted { union.append(targetID) }
                    }
                    unions[link] = union
                    sharers.append((link, entity.name, toMany))
                    if !union.isEmpty { values[toMany.name] = .references(union) }
                case .toMany(let toMany):
                    try checkCount(toMany.targets.count, toMany.bounds, entity: entity.name, toMany.name)
                    if isNew, toMany.isWrittenByTargets, toMany.targets.allSatisfy(isNewRecord) { continue }
                    let ids = toMany.targets.map(self.id(of:))
                    if !ids.isEmpty { values[toMany.name] = .references(ids) }
                }
            }
            if !values.isEmpty { try transaction.update(entity.name, id: id, values) }
        }
        var checked = Set<SharedLink>()
        for (link, entity, toMany) in sharers {
            let union = unions[link]?.count ?? 0
            if checked.insert(link).inserted {
                try checkCount(union, toMany.bounds, entity: entity, toMany.name)
            }
            if union != toMany.targets.count { outcome.reread.append(toMany.rereadKey) }
        }
    }

    /// Refuses a to-many relationship of `count` records outside its model-count bounds (a
    /// fetch's flush sees the list as it is: the save refuses it, not the fetch).
    private func checkCount(_ count: Int, _ bounds: SavePlan.Bounds, entity: String, _ property: String)
        throws(DeckError)
    {
        guard !forFetch else { return }
        if let minimum = bounds.minimum, count < minimum {
            throw DeckError.invalidValue(
                entity: entity, property: property,
                reason: "holds \(count) models, fewer than its minimum of \(minimum)")
        }
        if let maximum = bounds.maximum, count > maximum {
            throw DeckError.invalidValue(
                entity: entity, property: property,
                reason: "holds \(count) models, more than its maximum of \(maximum)")
        }
    }

    // MARK: Updates

    /// The saved records' changes. A fetch's flush writes a change onto another record's unique
    /// value without the clashing values (the save refuses it, not the fetch).
    private mutating func update() throws(DeckError) {
        for update in plan.updates {
            var values: [String: Value] = [:]
            for (name, planned) in update.values {
                switch planned {
                case .value(let value):
                    values[name] = value
                case .record(let target):
                    values[name] = .reference(id(of: target))
                case .records(let targets, let bounds):
                    try checkCount(targets.count, bounds, entity: update.entity, name)
                    values[name] = .references(targets.map(id(of:)))
                case .merged(let merged):
                    values[name] = try merge(merged, into: update, name)
                }
            }
            guard !values.isEmpty else { continue }
            do {
                try transaction.update(update.entity, id: update.id, values)
            } catch .uniqueViolation(_, let properties) where forFetch {
                values = values.filter { !properties.contains($0.key) }
                guard !values.isEmpty else { continue }
                do {
                    try transaction.update(update.entity, id: update.id, values)
                } catch .uniqueViolation {
                    // Another unique value of it clashes too: the record keeps its saved values.
                }
            }
        }
    }

    /// What a saved record's to-many relationship holds after the save: what the store holds
    /// for it now, with the links the context added since it loaded it and without those it
    /// removed. Writing the list as loaded would undo another context's saved changes to it.
    private mutating func merge(_ merged: SavePlan.MergedToMany, into update: SavePlan.Update, _ name: String)
        throws(DeckError) -> Value
    {
        let current = Set(merged.current.map(id(of:)))
        let stored = Set(try transaction.related(update.entity, id: update.id, name))
        let loaded = merged.loaded
        let result = stored.union(current.subtracting(loaded)).subtracting(loaded.subtracting(current))
        try checkCount(result.count, merged.bounds, entity: update.entity, name)
        if result != current { outcome.reread.append(merged.rereadKey) }
        return .references(result.sorted())
    }

    // MARK: Deletions

    /// Deletes `deletions` in order; one that a deny rule refuses waits for the others (the
    /// records that hold it back may be among them), and fails only when a whole round makes no
    /// progress.
    private func delete(_ deletions: [SavePlan.Deletion]) throws(DeckError) {
        var waiting = deletions
        while !waiting.isEmpty {
            var refused: [SavePlan.Deletion] = []
            var firstRefusal: DeckError?
            for deletion in waiting {
                // A record a cascade already deleted in this transaction is gone: nothing to do.
                guard (try transaction.record(deletion.entity, id: deletion.id)) != nil else { continue }
                do {
                    _ = try transaction.delete(deletion.entity, id: deletion.id)
                } catch {
                    guard case .deleteDenied = error else { throw error }
                    refused.append(deletion)
                    firstRefusal = firstRefusal ?? error
                }
            }
            if let firstRefusal, refused.count == waiting.count {
                guard forFetch else { throw firstRefusal }
                // A fetch sees the deletions done: the save refuses them, not the fetch.
                for deletion in refused { try deleteForFetch(deletion) }
                return
            }
            waiting = refused
        }
    }

    /// Deletes a record in a fetch's transaction, letting go first of the links that deny rules
    /// hold it by (the save checks them).
    private func deleteForFetch(_ deletion: SavePlan.Deletion) throws(DeckError) {
        for _ in 0...deletion.relationshipCount {
            guard (try transaction.record(deletion.entity, id: deletion.id)) != nil else { return }
            do {
                _ = try transaction.delete(deletion.entity, id: deletion.id)
                return
            } catch {
                guard case .deleteDenied(let entity, let held, let relationship, _) = error else {
                    throw error
                }
                try transaction.update(entity, id: held, [relationship: .null])
            }
        }
    }

    /// Reads back what the store holds for the values written from files.
    private mutating func readBack() throws(DeckError) {
        for (index, readBack) in plan.readBacks.enumerated() {
            guard let record = try transaction.record(readBack.entity, id: id(of: readBack.record)) else {
                continue
            }
            outcome.readBacks.append((index, record[readBack.attribute] ?? .null))
        }
    }
}
