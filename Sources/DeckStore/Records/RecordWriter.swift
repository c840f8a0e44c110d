import CSQLite
import DeckSQLite
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The record API's writes (insert, update, upsert, delete with its delete rules, setting
/// relationships and their inverses, and the change recording of each) on one connection, the
/// writer's: it borrows the connection for one call, as ``StoreTransaction`` makes it
/// (`RecordWriter(connection).insert(…)`). The prepared inserts it reuses live on the connection
/// (``InsertStatements``), which outlives the call; reads go through ``RecordReader``.
struct RecordWriter {
    /// The writer's connection, for the length of the call.
    let connection: StoreConnection

    init(_ connection: StoreConnection) { self.connection = connection }

    private var database: Database { connection.database }
    private var dateEpoch: DateEpoch { connection.dateEpoch }

    /// Inserts a record of `entity` and returns its id.
    ///
    /// Missing attributes take their default, or null when optional; a missing non-optional
    /// attribute without a default is an error. Relationships are set with `.reference` /
    /// `.references`, and their inverses follow automatically. The record gets `globalID`, or a
    /// new one when nil; a global id that a record of the table already has is refused.
    @discardableResult
    func insert(_ entity: String, _ values: [String: Value], globalID: UUID? = nil) throws(DeckError) -> Int64
    {
        // Inserts come in runs of one entity: remember the last one instead of hashing its name.
        let mapping: EntityMapping
        if let last = connection.inserts.last, last.mapping.name == entity {
            mapping = last.mapping
        } else {
            mapping = try connection.mapping.entity(entity)
        }
        // One pass over the given values, matching names by comparison: for the handful of
        // properties an entity has, that is cheaper than hashing each name again.
        var given = [Value?](repeating: nil, count: mapping.attributes.count)
        var relationshipValues = 0
        for (name, value) in values {
            if let index = mapping.attributePosition(name) {
                given[index] = value
            } else if mapping.relationshipPosition(name) != nil {
                relationshipValues += 1
            } else {
                try checkNames(values, of: mapping)
            }
        }
        return try insertGiven(
            mapping, given: given, values: values, relationshipValues: relationshipValues, globalID: globalID)
    }

    /// Inserts a record of `entity` from its attribute values in the order of its mapping's
    /// attributes (nil: the default), without relationships.
    func insert(_ entity: String, positional given: [Value?], globalID: UUID?) throws(DeckError) -> Int64 {
        let mapping: EntityMapping
        if let last = connection.inserts.last, last.mapping.name == entity {
            mapping = last.mapping
        } else {
            mapping = try connection.mapping.entity(entity)
        }
        guard given.count == mapping.attributes.count else {
            throw DeckError.misuse(
                "\(entity): \(given.count) values for \(mapping.attributes.count) attributes in a positional insert"
            )
        }
        return try insertGiven(mapping, given: given, values: [:], relationshipValues: 0, globalID: globalID)
    }

    private func insertGiven(
        _ mapping: EntityMapping, given: [Value?], values: [String: Value], relationshipValues: Int,
        globalID: UUID?
    ) throws(DeckError) -> Int64 {
        // Without relationship values the insert is one statement, atomic by itself.
        do {
            return try insertRow(
                mapping, given: given, values: values, relationshipValues: relationshipValues,
                globalID: globalID)
        } catch {
            var written = values
            if written.isEmpty {
                for (index, value) in given.enumerated() { written[mapping.attributes[index].name] = value }
            }
            let named = naming(error, writing: mapping, id: nil, values: written, globalID: globalID)
            if let globalID, case .uniqueViolation(_, ["_gid"]) = named {
                throw DeckError.invalidValue(
                    entity: mapping.name, property: "_gid",
                    reason: "a record of the same table already has global id \(globalID.uuidString)")
            }
            throw named
        }
    }

    private func insertRow(
        _ mapping: EntityMapping, given: [Value?], values: [String: Value], relationshipValues: Int,
        globalID: UUID?
    ) throws(DeckError) -> Int64 {
        try connection.change(atomic: relationshipValues > 0) { () throws -> Int64 in
            let statement: Statement
            if let last = connection.inserts.last, last.mapping === mapping {
                statement = last.statement
            } else if let cached = connection.inserts.byEntity[mapping.name] {
                statement = cached
            } else {
                statement = try database.prepare(mapping.insertSQL)
                connection.inserts.byEntity[mapping.name] = statement
            }
            connection.inserts.last = (mapping, statement)
            // Bound one by one, straight from the values: no array of arguments, no copy of the
            // attributes (an insert is on the path of every record a save writes).
            statement.rewind()
            if globalID == nil, !mapping.identityKeys.isEmpty {
                // The id comes from the unique values as stored (spec 6.10), so the cells first.
                var cells: [SQLValue] = []
                cells.reserveCapacity(mapping.attributes.count)
                for index in mapping.attributes.indices {
                    cells.append(
                        try CellEncoder.insertCell(
                            given[index], attribute: index, of: mapping, epoch: dateEpoch
                        ) {
                            value, attribute in try store(value, for: attribute, of: mapping)
                        })
                }
                try statement.bind(
                    globalID: try identities().id(for: mapping, cells: cells, in: database), at: 1)
                for (index, cell) in cells.enumerated() { try statement.bind(cell, at: index + 2) }
            } else {
                try statement.bind(globalID: globalID, at: 1)
                for index in mapping.attributes.indices {
                    let cell = try CellEncoder.insertCell(
                        given[index], attribute: index, of: mapping, epoch: dateEpoch
                    ) { value, attribute in try store(value, for: attribute, of: mapping) }
                    try statement.bind(cell, at: index + 2)
                }
            }
            try statement.runBound()
            let id = database.lastInsertRowID
            connection.changes.inserted(mapping.name, id)
            if relationshipValues > 0 { try setRelationships(values, of: mapping, id: id) }
            return id
        }
    }

    /// The writer's maker of global ids from unique values (spec 6.10), made on first use from
    /// the document id.
    private func identities() throws -> IdentityGlobalIDs {
        if let made = connection.inserts.identities { return made }
        let documentID =
            try database.scalar("SELECT value FROM deck_meta WHERE key = 'document_id'")?.string ?? ""
        let made = IdentityGlobalIDs(documentID: documentID)
        connection.inserts.identities = made
        return made
    }

    /// Changes some values of record `id`; values not named keep theirs.
    func update(_ entity: String, id: Int64, _ values: [String: Value]) throws(DeckError) {
        let mapping = try connection.mapping.entity(entity)
        do {
            try updateRow(mapping, id: id, values)
        } catch {
            throw naming(error, writing: mapping, id: id, values: values, globalID: nil)
        }
    }

    private func updateRow(_ mapping: EntityMapping, id: Int64, _ values: [String: Value]) throws(DeckError) {
        try connection.change { () throws in
            try checkNames(values, of: mapping)
            connection.changes.updated(try concreteEntity(of: id, in: mapping), id)
            var assignments: [String] = []
            var arguments: [SQLValue] = []
            for attribute in mapping.attributes {
                guard let value = values[attribute.name] else { continue }
                if value.isNull && !attribute.isOptional {
                    throw DeckError.invalidValue(
                        entity: mapping.name, property: attribute.name,
                        reason: "cannot be null (the attribute is not optional)")
                }
                assignments.append("\(quote(attribute.name)) = ?")
                arguments.append(try store(value, for: attribute, of: mapping))
            }
            if !assignments.isEmpty {
                try database.run(
                    "UPDATE \(quote(mapping.table)) SET \(assignments.joined(separator: ", ")) WHERE _pk = ?",
                    arguments + [.integer(id)])
            }
            try setRelationships(values, of: mapping, id: id)
        }
    }

    /// Sets to-one relationship `name` of record `id` of `entity` to `target`: what
    /// ``update(_:id:_:)`` does with the one value `.reference(target)`, for a record this
    /// transaction inserted, with fewer statements. `insertedTarget` is the concrete entity of
    /// the target when this transaction inserted it too (nil when not, or not known).
    ///
    /// For a relationship stored in the record's own column, whose inverse is not to-one, it is
    /// one `UPDATE`: the record's row is not read again (its entity is `entity`: it was inserted
    /// as one), nor its current target (the records a record of this transaction was linked to
    /// were recorded as updated when the links were made), and nor is a target this transaction
    /// inserted as an entity of the destination (it exists, and a change recorded for a record
    /// inserted in the transaction is no change). Any other relationship goes through
    /// ``update(_:id:_:)``.
    ///
    /// It takes no savepoint: when it throws, the caller discards the transaction (a save's or a
    /// fetch's flush), so nothing it half did is kept.
    func setReference(
        ofInserted entity: String, id: Int64, _ name: String, to target: Int64, insertedTarget: String?
    ) throws(DeckError) {
        let mapping: EntityMapping
        let position: Int
        if let last = connection.inserts.lastReference, last.mapping.name == entity,
            last.mapping.relationships[last.position].relationship.name == name
        {
            (mapping, position) = (last.mapping, last.position)
        } else {
            mapping = try connection.mapping.entity(entity)
            guard let found = mapping.relationshipPosition(name) else {
                return try update(entity, id: id, [name: .reference(target)])
            }
            position = found
        }
        let (relationship, storage) = mapping.relationships[position]
        guard !relationship.isToMany, case .ownColumn = storage,
            let destination = connection.mapping.entities[relationship.destination],
            relationship.inverse.flatMap({ destination.relationship($0) })?.relationship.isToMany ?? true
        else {
            return try update(entity, id: id, [name: .reference(target)])
        }
        do {
            try setReference(
                mapping, position: position, destination: destination, id: id, to: target,
                insertedTarget: insertedTarget)
        } catch {
            throw naming(error, writing: mapping, id: id, values: [name: .reference(target)], globalID: nil)
        }
    }

    /// ``setReference(ofInserted:id:_:to:insertedTarget:)``'s one `UPDATE`, of relationship
    /// `position` of `mapping`, whose destination is `destination`.
    private func setReference(
        _ mapping: EntityMapping, position: Int, destination: EntityMapping, id: Int64, to target: Int64,
        insertedTarget: String?
    ) throws(DeckError) {
        guard case .ownColumn(let column) = mapping.relationships[position].storage else { return }
        try connection.change(atomic: false) { () throws in
            if let insertedTarget, destination.family.contains(insertedTarget) {
                // Known to exist, of the destination's family; its change is no change.
            } else {
                connection.changes.updated(try concreteEntity(of: target, in: destination), target)
            }
            let statement: Statement
            if let last = connection.inserts.lastReference, last.mapping === mapping,
                last.position == position
            {
                statement = last.statement
            } else {
                statement = try database.cachedStatement(
                    "UPDATE \(quote(mapping.table)) SET \(quote(column)) = ? WHERE _pk = ?")
                connection.inserts.lastReference = (mapping, position, statement)
            }
            statement.rewind()
            try statement.bind(.integer(target), at: 1)
            try statement.bind(.integer(id), at: 2)
            try statement.runBound()
            guard database.changes == 1 else { throw DeckError.recordNotFound(entity: mapping.name, id: id) }
        }
    }

    /// Inserts a record, or updates the existing record that has the same values for one of the
    /// entity's unique constraints (SwiftData's behaviour for `.unique`). Returns the id and
    /// whether a record was inserted.
    @discardableResult
    func upsert(_ entity: String, _ values: [String: Value], globalID: UUID? = nil) throws(DeckError) -> (
        id: Int64, inserted: Bool
    ) {
        let mapping = try connection.mapping.entity(entity)
        var groups = mapping.attributes.filter { $0.options.contains(.unique) }.map { [$0.name] }
        groups += mapping.entity.uniqueConstraints
        // Constraints declared by ancestors apply too.
        var ancestor = mapping.entity.superentity
        while let name = ancestor, let parent = connection.mapping.entities[name] {
            groups += parent.entity.uniqueConstraints
            ancestor = parent.entity.superentity
        }
        for group in groups where group.allSatisfy({ values[$0] != nil && values[$0]?.isNull == false }) {
            let condition = QueryExpression.and(
                group.compactMap { name in values[name].map { .property(name).equals(.value($0)) } })
            if let existing = try RecordReader(connection).fetchIDs(
                RecordQuery(mapping.name, where: condition, limit: 1)
            ).first {
                try update(mapping.name, id: existing, values)
                return (existing, false)
            }
        }
        return (try insert(mapping.name, values, globalID: globalID), true)
    }

    /// Deletes record `id`, applying every relationship's delete rule. Returns how many
    /// records were deleted in all (cascades included).
    @discardableResult
    func delete(_ entity: String, id: Int64) throws(DeckError) -> Int {
        let mapping = try connection.mapping.entity(entity)
        return try connection.change { () throws -> Int in
            var deleted: Set<RecordKey> = []
            try deleteRecord(id, of: mapping, deleted: &deleted)
            return deleted.count
        }
    }

    /// Deletes every record that `query` matches (its sort and window apply). Returns the count.
    @discardableResult
    func delete(_ query: RecordQuery) throws(DeckError) -> Int {
        let mapping = try connection.mapping.entity(query.entity)
        let ids = try RecordReader(connection).fetchIDs(query)
        return try connection.change { () throws -> Int in
            var deleted: Set<RecordKey> = []
            for id in ids where !deleted.contains(RecordKey(table: mapping.table, id: id)) {
                try deleteRecord(id, of: mapping, deleted: &deleted)
            }
            return deleted.count
        }
    }

    /// Updates every record that `query` matches with the same values. Returns the count.
    @discardableResult
    func update(_ query: RecordQuery, _ values: [String: Value]) throws(DeckError) -> Int {
        let ids = try RecordReader(connection).fetchIDs(query)
        try connection.change { () throws in
            for id in ids { try update(query.entity, id: id, values) }
        }
        return ids.count
    }

    /// A write of `values` to record `id` of `mapping` (nil: a new record with `globalID`) that
    /// SQLite refused with `SQLITE_CONSTRAINT_UNIQUE`, as the unique violation of the entity and
    /// properties users wrote (spec section 9.4), found by ``UniqueConflict``; any other error as
    /// it is.
    private func naming(
        _ error: DeckError, writing mapping: EntityMapping, id: Int64?, values: [String: Value],
        globalID: UUID?
    ) -> DeckError {
        guard case .sqlite(let failure) = error, failure.code == .constraintUnique,
            let found = UniqueConflict(database: database, mapping: connection.mapping, dateEpoch: dateEpoch)
                .find(writing: mapping, id: id, values: values, globalID: globalID)
        else { return error }
        return .uniqueViolation(entity: found.entity, properties: found.properties)
    }

    private func checkNames(_ values: [String: Value], of mapping: EntityMapping) throws(DeckError) {
        for name in values.keys.sorted()
        where mapping.attribute(name) == nil && mapping.relationship(name) == nil {
            throw DeckError.unknownProperty(
                entity: mapping.name, name: name,
                known: mapping.propertyNames
            )
        }
    }

    /// The concrete entity of record `id`, checking it belongs to `mapping`'s family.
    private func concreteEntity(of id: Int64, in mapping: EntityMapping) throws -> String {
        guard
            let name = try database.scalar(
                "SELECT _entity FROM \(quote(mapping.table)) WHERE _pk = ?", [.integer(id)])?.string,
            mapping.family.contains(name)
        else { throw DeckError.recordNotFound(entity: mapping.name, id: id) }
        return name
    }

    /// Encodes a value for its column, writing blob files for large external data (registered in
    /// `deck_blob` at once: the triggers count their references).
    private func store(_ value: Value, for attribute: Attribute, of mapping: EntityMapping) throws -> SQLValue
    {
        try CellEncoder.registeringNow(connection).cell(value, for: attribute, of: mapping.name)
    }

    /// Applies the relationship values among `values` to record `id`.
    private func setRelationships(_ values: [String: Value], of mapping: EntityMapping, id: Int64) throws {
        for (position, (relationship, storage)) in mapping.relationships.enumerated() {
            guard let value = values[relationship.name] else { continue }
            guard let destination = connection.mapping.entities[relationship.destination] else { continue }
            var targets: [Int64]
            switch (value, relationship.isToMany) {
            case (.null, _): targets = []
            case (.reference(let target), false): targets = [target]
            case (.integer(let target), false): targets = [target]
            case (.references(let list), true): targets = Array(Set(list)).sorted()
            default:
                throw DeckError.invalidValue(
                    entity: mapping.name, property: relationship.name,
                    reason: relationship.isToMany
                        ? "a to-many relationship takes a list of record ids"
                        : "a to-one relationship takes one record id or null")
            }
            for target in targets {
                connection.changes.updated(try concreteEntity(of: target, in: destination), target)
            }
            // The targets as a JSON array, for the statements that leave them out.
            let kept = "[" + targets.map(String.init).joined(separator: ",") + "]"
            // The records this one stops pointing at change too, when they see it back.
            let tracksOtherSide = relationship.inverse != nil
            if tracksOtherSide {
                try recordUpdates(
                    in: destination.table,
                    try RecordReader(connection).relatedIDs(
                        id, storage: storage, table: mapping.table, destination: destination))
            }
            switch storage {
            case .ownColumn(let column):
                if let inverse = relationship.inverse, let target = targets.first,
                    let (inverseRelationship, _) = destination.relationship(inverse),
                    !inverseRelationship.isToMany
                {
                    // One-to-one: whoever pointed at the target lets go first. Only records that have
                    // this relationship: a sibling entity may use the same column for its own.
                    let declarer = connection.mapping.entities[mapping.declarers[position]] ?? mapping
                    let family = declarer.familyCondition(nil).map { " AND " + $0 } ?? ""
                    try recordUpdates(
                        returnedBy: "UPDATE \(quote(mapping.table)) SET \(quote(column)) = NULL "
                            + "WHERE \(quote(column)) = ? AND _pk != ?\(family) RETURNING _pk, _entity",
                        [.integer(target), .integer(id)])
                }
                try database.run(
                    "UPDATE \(quote(mapping.table)) SET \(quote(column)) = ? WHERE _pk = ?",
                    [targets.first.map { .integer($0) } ?? .null, .integer(id)])
            case .inverseColumn(let table, let column):
                // Only the targets that leave and those that come are written: a cell written
                // away and back would carry a new version (spec 20.4) and win a merge over
                // another copy's real change of it.
                let family = destination.familyCondition(nil).map { " AND " + $0 } ?? ""
                try recordUpdates(
                    returnedBy:
                        "UPDATE \(quote(table)) SET \(quote(column)) = NULL WHERE \(quote(column)) = ?\(family) "
                        + "AND _pk NOT IN (SELECT value FROM json_each(?)) RETURNING _pk, _entity",
                    [.integer(id), .text(kept)])
                for target in targets {
                    try database.run(
                        "UPDATE \(quote(table)) SET \(quote(column)) = ? WHERE _pk = ? AND \(quote(column)) IS NOT ?",
                        [.integer(id), .integer(target), .integer(id)])
                }
            case .joinTable(let table, let near, let far):
                // Likewise only the links that go and those that come: a link removed and made
                // again would count as both (spec 20.5).
                try database.run(
                    "DELETE FROM \(quote(table)) WHERE \(near) = ? AND \(far) NOT IN (SELECT value FROM json_each(?))",
                    [.integer(id), .text(kept)])
                for target in targets {
                    try database.run(
                        "INSERT OR IGNORE INTO \(quote(table))(\(near), \(far)) VALUES (?, ?)",
                        [.integer(id), .integer(target)])
                }
            }
        }
    }

    /// Records as updated the rows an `UPDATE … RETURNING _pk, _entity` changed.
    private func recordUpdates(returnedBy sql: String, _ arguments: [SQLValue]) throws {
        for row in try database.rows(sql, arguments) {
            if let id = row[0].int64, let entity = row[1].string { connection.changes.updated(entity, id) }
        }
    }

    /// Records as updated the records `ids` of `table` (whatever their concrete entity).
    private func recordUpdates(in table: String, _ ids: [Int64]) throws {
        guard !ids.isEmpty else { return }
        try database.forEachRow(
            "SELECT _pk, _entity FROM \(quote(table)) WHERE _pk IN (SELECT value FROM json_each(?))",
            [.text("[" + ids.map(String.init).joined(separator: ",") + "]")]
        ) { row in
            connection.changes.updated(row.text(at: 1), row.int64(at: 0))
        }
    }

    /// A record's identity across tables (ids are unique only within a table).
    struct RecordKey: Hashable {
        let table: String
        let id: Int64
    }

    /// A delete rule a merge's delete did not follow (spec 20.9, step 4).
    struct MergeOverride {
        /// `deny`: the deleted record, whose relationship `relationship` had related records
        /// (their references were set to null). `cascade`: a related record kept, its
        /// reference to the deleted record set to null or its link removed; `relationship` is
        /// its side of the relationship (the deleted record's when there is no inverse).
        let table: String
        let id: Int64
        /// The record's entity (a kept record's concrete entity is read when it is reported).
        let entity: String
        let relationship: String
        let rule: StoreSchema.DeleteRule
    }

    /// Deletes record `id` of the hierarchy whose root is `root` for a merge (spec 20.9): the
    /// delete removes what the copy that deleted the record held, and the records it deleted
    /// with it come as tombstones of their own; so `cascade` deletes nothing more, and `deny`,
    /// which cannot hold across copies edited apart, does not refuse. Both nullify instead.
    /// Returns the records deleted and the rules not followed.
    func deleteMerging(_ id: Int64, of root: EntityMapping) throws -> (
        deleted: Int, overridden: [MergeOverride]
    ) {
        var deleted: Set<RecordKey> = []
        var overridden: [MergeOverride]? = []
        try deleteRecord(id, of: root, deleted: &deleted, overridden: &overridden)
        return (deleted.count, overridden ?? [])
    }

    private func deleteRecord(_ id: Int64, of mapping: EntityMapping, deleted: inout Set<RecordKey>) throws {
        var overridden: [MergeOverride]? = nil
        try deleteRecord(id, of: mapping, deleted: &deleted, overridden: &overridden)
    }

    /// Deletes record `id` applying the delete rules; with `overridden` (a merge), `deny` and
    /// `cascade` nullify instead, and are recorded there.
    private func deleteRecord(
        _ id: Int64, of mapping: EntityMapping, deleted: inout Set<RecordKey>,
        overridden: inout [MergeOverride]?
    ) throws {
        let concrete = try concreteEntity(of: id, in: mapping)
        guard let actual = connection.mapping.entities[concrete],
            deleted.insert(RecordKey(table: actual.table, id: id)).inserted
        else { return }
        connection.changes.deleted(concrete, id)
        for (relationship, storage) in actual.relationships {
            guard let destination = connection.mapping.entities[relationship.destination] else { continue }
            let related = try RecordReader(connection).relatedIDs(
                id, storage: storage, table: actual.table, destination: destination)
            guard !related.isEmpty else { continue }
            switch relationship.deleteRule {
            case .deny where overridden == nil:
                throw DeckError.deleteDenied(
                    entity: concrete, id: id, relationship: relationship.name, count: related.count)
            case .cascade where overridden == nil:
                for other in related where !deleted.contains(RecordKey(table: destination.table, id: other)) {
                    // Cascades in the same table would otherwise revisit ids already gone.
                    if (try? concreteEntity(of: other, in: destination)) != nil {
                        try deleteRecord(other, of: destination, deleted: &deleted, overridden: &overridden)
                    }
                }
            case .noAction where overridden == nil:
                if relationship.inverse != nil { try recordUpdates(in: destination.table, related) }
            case .nullify, .deny, .cascade, .noAction:
                if relationship.deleteRule == .deny {
                    overridden?.append(
                        MergeOverride(
                            table: actual.table, id: id, entity: concrete, relationship: relationship.name,
                            rule: .deny))
                } else if relationship.deleteRule == .cascade, !storage.isOwnColumn {
                    // (A record this one's own reference names is not in a relationship of the
                    // deleted record's that the other copy added it to.)
                    for other in related {
                        overridden?.append(
                            MergeOverride(
                                table: destination.table, id: other, entity: destination.name,
                                relationship: relationship.inverse ?? relationship.name, rule: .cascade))
                    }
                }
                if case .inverseColumn(let table, let column) = storage {
                    let family = destination.familyCondition(nil).map { " AND " + $0 } ?? ""
                    try database.run(
                        "UPDATE \(quote(table)) SET \(quote(column)) = NULL WHERE \(quote(column)) = ?\(family)",
                        [.integer(id)])
                }
                // The held records see this one go (links in a join table go with its row).
                if relationship.inverse != nil { try recordUpdates(in: destination.table, related) }
            }
        }
        // Whoever else points at this record through a column must let go too, unless its
        // relationship says noAction (the dangling reference is then the schema's choice) and the
        // column is no foreign key, or a merge deletes (a merge sets every reference to a record
        // deleted in the other copy to null, spec 20.9). Each relationship clears only its own
        // entity's rows: a sibling entity may use the same column for its own relationship, with
        // its own rules.
        for reference in connection.mapping.references(to: concrete) {
            let inverseRule = reference.relationship.inverse.flatMap {
                actual.relationship($0)?.relationship.deleteRule
            }
            guard
                overridden != nil || reference.isForeignKey
                    || (reference.relationship.deleteRule != .noAction && inverseRule != .noAction)
            else { continue }
            let family = reference.declarer.familyCondition(nil).map { " AND " + $0 } ?? ""
            try recordUpdates(
                returnedBy: "UPDATE \(quote(reference.declarer.table)) SET \(quote(reference.column)) = NULL "
                    + "WHERE \(quote(reference.column)) = ?\(family) RETURNING _pk, _entity",
                [.integer(id)])
        }
        try database.run("DELETE FROM \(quote(actual.table)) WHERE _pk = ?", [.integer(id)])
    }
}
