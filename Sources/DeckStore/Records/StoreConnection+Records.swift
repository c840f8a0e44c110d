import CSQLite
import DeckSQLite
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension StoreConnection {
    // MARK: Writing

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
        if let last = lastInsert, last.mapping.name == entity {
            mapping = last.mapping
        } else {
            mapping = try self.mapping.entity(entity)
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
        if let last = lastInsert, last.mapping.name == entity {
            mapping = last.mapping
        } else {
            mapping = try self.mapping.entity(entity)
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
        try change(atomic: relationshipValues > 0) { () throws -> Int64 in
            let statement: Statement
            if let last = lastInsert, last.mapping === mapping {
                statement = last.statement
            } else if let cached = insertStatements[mapping.name] {
                statement = cached
            } else {
                statement = try database.prepare(mapping.insertSQL)
                insertStatements[mapping.name] = statement
            }
            lastInsert = (mapping, statement)
            // Bound one by one, straight from the values: no array of arguments, no copy of the
            // attributes (an insert is on the path of every record a save writes).
            statement.rewind()
            try statement.bind(globalID: globalID, at: 1)
            for (index, (type, isOptional)) in mapping.attributeTypes.enumerated() {
                let value = given[index] ?? mapping.attributes[index].initialValue()
                if value.isNull && !isOptional {
                    throw DeckError.invalidValue(
                        entity: mapping.name, property: mapping.attributes[index].name,
                        reason: "a value is required (the attribute is not optional)")
                }
                let cell: SQLValue
                if type == .data {
                    cell = try store(value, for: mapping.attributes[index], of: mapping)
                } else {
                    do throws(ValueError) {
                        cell = try value.sqlValue(for: type, isOptional: isOptional, epoch: dateEpoch)
                    } catch {
                        throw DeckError.invalidValue(
                            entity: mapping.name, property: mapping.attributes[index].name,
                            reason: error.description)
                    }
                }
                try statement.bind(cell, at: index + 2)
            }
            try statement.runBound()
            let id = database.lastInsertRowID
            changes.inserted(mapping.name, id)
            if relationshipValues > 0 { try setRelationships(values, of: mapping, id: id) }
            return id
        }
    }

    /// Changes some values of record `id`; values not named keep theirs.
    func update(_ entity: String, id: Int64, _ values: [String: Value]) throws(DeckError) {
        let mapping = try self.mapping.entity(entity)
        do {
            try updateRow(mapping, id: id, values)
        } catch {
            throw naming(error, writing: mapping, id: id, values: values, globalID: nil)
        }
    }

    private func updateRow(_ mapping: EntityMapping, id: Int64, _ values: [String: Value]) throws(DeckError) {
        try change { () throws in
            try checkNames(values, of: mapping)
            changes.updated(try concreteEntity(of: id, in: mapping), id)
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
        if let last = lastReference, last.mapping.name == entity,
            last.mapping.relationships[last.position].relationship.name == name
        {
            (mapping, position) = (last.mapping, last.position)
        } else {
            mapping = try self.mapping.entity(entity)
            guard let found = mapping.relationshipPosition(name) else {
                return try update(entity, id: id, [name: .reference(target)])
            }
            position = found
        }
        let (relationship, storage) = mapping.relationships[position]
        guard !relationship.isToMany, case .ownColumn = storage,
            let destination = self.mapping.entities[relationship.destination],
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
        try change(atomic: false) { () throws in
            if let insertedTarget, destination.family.contains(insertedTarget) {
                // Known to exist, of the destination's family; its change is no change.
            } else {
                changes.updated(try concreteEntity(of: target, in: destination), target)
            }
            let statement: Statement
            if let last = lastReference, last.mapping === mapping, last.position == position {
                statement = last.statement
            } else {
                statement = try database.cachedStatement(
                    "UPDATE \(quote(mapping.table)) SET \(quote(column)) = ? WHERE _pk = ?")
                lastReference = (mapping, position, statement)
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
        let mapping = try self.mapping.entity(entity)
        var groups = mapping.attributes.filter { $0.options.contains(.unique) }.map { [$0.name] }
        groups += mapping.entity.uniqueConstraints
        // Constraints declared by ancestors apply too.
        var ancestor = mapping.entity.superentity
        while let name = ancestor, let parent = self.mapping.entities[name] {
            groups += parent.entity.uniqueConstraints
            ancestor = parent.entity.superentity
        }
        for group in groups where group.allSatisfy({ values[$0] != nil && values[$0]?.isNull == false }) {
            let condition = QueryExpression.and(
                group.compactMap { name in values[name].map { .property(name).equals(.value($0)) } })
            if let existing = try fetchIDs(RecordQuery(mapping.name, where: condition, limit: 1)).first {
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
        let mapping = try self.mapping.entity(entity)
        return try change { () throws -> Int in
            var deleted: Set<RecordKey> = []
            try deleteRecord(id, of: mapping, deleted: &deleted)
            return deleted.count
        }
    }

    /// Deletes every record that `query` matches (its sort and window apply). Returns the count.
    @discardableResult
    func delete(_ query: RecordQuery) throws(DeckError) -> Int {
        let mapping = try self.mapping.entity(query.entity)
        let ids = try fetchIDs(query)
        return try change { () throws -> Int in
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
        let ids = try fetchIDs(query)
        try change { () throws in
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
            let found = UniqueConflict(database: database, mapping: self.mapping, dateEpoch: dateEpoch)
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

    /// Encodes a value for its column, writing blob files for large external data.
    private func store(_ value: Value, for attribute: Attribute, of mapping: EntityMapping) throws -> SQLValue
    {
        guard attribute.type == .data else {
            do {
                return try value.sqlValue(
                    for: attribute.type, isOptional: attribute.isOptional, epoch: dateEpoch)
            } catch {
                throw DeckError.invalidValue(
                    entity: mapping.name, property: attribute.name, reason: error.description)
            }
        }
        func invalid(_ reason: String) -> DeckError {
            DeckError.invalidValue(entity: mapping.name, property: attribute.name, reason: reason)
        }
        let external = attribute.options.contains(.externalStorage)
        let threshold = attribute.effectiveExternalThreshold
        switch value {
        case .null:
            return .null
        case .data(let data):
            guard external && data.count >= threshold else { return .blob(data) }
            return try register(try blobs.write(data))
        case .file(let url):
            // Read to the end whatever size the file reports; the bytes read decide inline or not.
            let input = try InputFile(value: url.path, invalid: invalid)
            let head = try input.read(upTo: external ? threshold : .max)
            guard external && head.count >= threshold else { return .blob(head) }
            return try register(try blobs.write(head, followedBy: input))
        case .blob(let reference):
            guard external else { return .blob(try blobs.read(reference.digest)) }
            let known = try database.scalar(
                "SELECT size FROM deck_blob WHERE digest = ?", [.text(reference.digest.hexDigest)])
            if known == nil {
                // An existing file that nothing references yet: check it before adopting it.
                let (digest, size) = try BlobStore.hashFile(at: blobs.path(for: reference.digest))
                guard digest == reference.digest else {
                    throw DeckError.blobUnavailable(
                        digest: reference.digest.hexDigest, reason: "file is corrupt")
                }
                return try register(BlobReference(digest: digest, size: size))
            }
            return .text(reference.digest.hexDigest)
        default:
            throw invalid("expected data, not \(value.kindName)")
        }
    }

    /// Makes sure `deck_blob` knows a blob; the triggers count its references.
    private func register(_ reference: BlobReference) throws -> SQLValue {
        try database.run(
            "INSERT INTO deck_blob(digest, size, refs) VALUES (?, ?, 0) ON CONFLICT(digest) DO NOTHING",
            [.text(reference.digest.hexDigest), .integer(reference.size)])
        return .text(reference.digest.hexDigest)
    }

    /// Applies the relationship values among `values` to record `id`.
    private func setRelationships(_ values: [String: Value], of mapping: EntityMapping, id: Int64) throws {
        for (position, (relationship, storage)) in mapping.relationships.enumerated() {
            guard let value = values[relationship.name] else { continue }
            guard let destination = self.mapping.entities[relationship.destination] else { continue }
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
            for target in targets { changes.updated(try concreteEntity(of: target, in: destination), target) }
            // The records this one stops pointing at change too, when they see it back.
            let tracksOtherSide = relationship.inverse != nil
            if tracksOtherSide {
                try recordUpdates(
                    in: destination.table,
                    try relatedIDs(id, storage: storage, table: mapping.table, destination: destination))
            }
            switch storage {
            case .ownColumn(let column):
                if let inverse = relationship.inverse, let target = targets.first,
                    let (inverseRelationship, _) = destination.relationship(inverse),
                    !inverseRelationship.isToMany
                {
                    // One-to-one: whoever pointed at the target lets go first. Only records that have
                    // this relationship: a sibling entity may use the same column for its own.
                    let declarer = self.mapping.entities[mapping.declarers[position]] ?? mapping
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
                let family = destination.familyCondition(nil).map { " AND " + $0 } ?? ""
                try recordUpdates(
                    returnedBy:
                        "UPDATE \(quote(table)) SET \(quote(column)) = NULL WHERE \(quote(column)) = ?\(family) "
                        + "RETURNING _pk, _entity",
                    [.integer(id)])
                for target in targets {
                    try database.run(
                        "UPDATE \(quote(table)) SET \(quote(column)) = ? WHERE _pk = ?",
                        [.integer(id), .integer(target)])
                }
            case .joinTable(let table, let near, let far):
                try database.run("DELETE FROM \(quote(table)) WHERE \(near) = ?", [.integer(id)])
                for target in targets {
                    try database.run(
                        "INSERT INTO \(quote(table))(\(near), \(far)) VALUES (?, ?)",
                        [.integer(id), .integer(target)])
                }
            }
        }
    }

    /// The ids related to record `id` (of a table `table`) through a relationship's storage, whose
    /// destination is `destination` (spec section 9.1).
    func relatedIDs(_ id: Int64, storage: RelationshipStorage, table: String, destination: EntityMapping)
        throws -> [Int64]
    {
        let sql: String
        switch storage {
        case .ownColumn(let column):
            sql =
                "SELECT \(quote(column)) FROM \(quote(table)) WHERE _pk = ? AND \(quote(column)) IS NOT NULL"
        case .inverseColumn(let other, let column):
            // Only the destination's records: sibling entities may share the column.
            let family = destination.familyCondition(nil).map { " AND " + $0 } ?? ""
            sql = "SELECT _pk FROM \(quote(other)) WHERE \(quote(column)) = ?\(family) ORDER BY _pk"
        case .joinTable(let join, let near, let far):
            sql = "SELECT \(far) FROM \(quote(join)) WHERE \(near) = ? ORDER BY \(far)"
        }
        return try database.rows(sql, [.integer(id)]).compactMap { $0.first?.int64 }
    }

    /// The ids relationship `relationship` of each of records `ids` of `entity` holds, in one
    /// statement however many there are (the ids go in as one JSON array).
    func related(_ entity: String, ids: [Int64], _ relationship: String) throws(DeckError) -> [Int64: [Int64]]
    {
        let mapping = try self.mapping.entity(entity)
        guard let (found, storage) = mapping.relationship(relationship) else {
            throw DeckError.unknownProperty(entity: entity, name: relationship, known: mapping.propertyNames)
        }
        let list = "(SELECT value FROM json_each(?))"
        do {
            let destination = try self.mapping.entity(found.destination)
            let sql: String
            switch storage {
            case .ownColumn(let column):
                sql =
                    "SELECT _pk, \(quote(column)) FROM \(quote(mapping.table)) WHERE _pk IN \(list) "
                    + "AND \(quote(column)) IS NOT NULL"
            case .inverseColumn(let other, let column):
                let family = destination.familyCondition(nil).map { " AND " + $0 } ?? ""
                sql =
                    "SELECT \(quote(column)), _pk FROM \(quote(other)) WHERE \(quote(column)) IN \(list)\(family) "
                    + "ORDER BY _pk"
            case .joinTable(let join, let near, let far):
                sql = "SELECT \(near), \(far) FROM \(quote(join)) WHERE \(near) IN \(list) ORDER BY \(far)"
            }
            let json = "[" + ids.map(String.init).joined(separator: ",") + "]"
            var result: [Int64: [Int64]] = [:]
            for row in try database.rows(sql, [.text(json)]) {
                guard let owner = row[0].int64, let target = row[1].int64 else { continue }
                result[owner, default: []].append(target)
            }
            return result
        } catch {
            throw translate(error)
        }
    }

    /// Records as updated the rows an `UPDATE … RETURNING _pk, _entity` changed.
    private func recordUpdates(returnedBy sql: String, _ arguments: [SQLValue]) throws {
        for row in try database.rows(sql, arguments) {
            if let id = row[0].int64, let entity = row[1].string { changes.updated(entity, id) }
        }
    }

    /// Records as updated the records `ids` of `table` (whatever their concrete entity).
    private func recordUpdates(in table: String, _ ids: [Int64]) throws {
        guard !ids.isEmpty else { return }
        try database.forEachRow(
            "SELECT _pk, _entity FROM \(quote(table)) WHERE _pk IN (SELECT value FROM json_each(?))",
            [.text("[" + ids.map(String.init).joined(separator: ",") + "]")]
        ) { row in
            changes.updated(row.text(at: 1), row.int64(at: 0))
        }
    }

    /// A record's identity across tables (ids are unique only within a table).
    struct RecordKey: Hashable {
        let table: String
        let id: Int64
    }

    private func deleteRecord(_ id: Int64, of mapping: EntityMapping, deleted: inout Set<RecordKey>) throws {
        let concrete = try concreteEntity(of: id, in: mapping)
        guard let actual = self.mapping.entities[concrete],
            deleted.insert(RecordKey(table: actual.table, id: id)).inserted
        else { return }
        changes.deleted(concrete, id)
        for (relationship, storage) in actual.relationships {
            guard let destination = self.mapping.entities[relationship.destination] else { continue }
            let related = try relatedIDs(id, storage: storage, table: actual.table, destination: destination)
            guard !related.isEmpty else { continue }
            switch relationship.deleteRule {
            case .deny:
                throw DeckError.deleteDenied(
                    entity: concrete, id: id, relationship: relationship.name, count: related.count)
            case .cascade:
                for other in related where !deleted.contains(RecordKey(table: destination.table, id: other)) {
                    // Cascades in the same table would otherwise revisit ids already gone.
                    if (try? concreteEntity(of: other, in: destination)) != nil {
                        try deleteRecord(other, of: destination, deleted: &deleted)
                    }
                }
            case .nullify:
                if case .inverseColumn(let table, let column) = storage {
                    let family = destination.familyCondition(nil).map { " AND " + $0 } ?? ""
                    try database.run(
                        "UPDATE \(quote(table)) SET \(quote(column)) = NULL WHERE \(quote(column)) = ?\(family)",
                        [.integer(id)])
                }
                // The held records see this one go (links in a join table go with its row).
                if relationship.inverse != nil { try recordUpdates(in: destination.table, related) }
            case .noAction:
                if relationship.inverse != nil { try recordUpdates(in: destination.table, related) }
            }
        }
        // Whoever else points at this record through a column must let go too, unless its
        // relationship says noAction (the dangling reference is then the schema's choice) and the
        // column is no foreign key. Each relationship clears only its own entity's rows: a sibling
        // entity may use the same column for its own relationship, with its own rules.
        for reference in self.mapping.references(to: concrete) {
            let inverseRule = reference.relationship.inverse.flatMap {
                actual.relationship($0)?.relationship.deleteRule
            }
            guard
                reference.isForeignKey
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

    // MARK: Reading

    /// The records `query` matches.
    func fetch(_ query: RecordQuery) throws(DeckError) -> [Record] {
        var records: [Record] = []
        try forEach(query) { records.append($0) }
        return records
    }

    /// Calls `body` for each record `query` matches, without collecting them all.
    func forEach(_ query: RecordQuery, _ body: (Record) throws -> Void) throws(DeckError) {
        try forEachRow(query) { row in
            var values: [String: Value] = [:]
            values.reserveCapacity(row.cells.count)
            for (name, cell) in zip(row.names, row.cells) { values[name] = cell }
            try body(Record(entity: row.entity, id: row.id, values: values, globalID: row.globalID))
        }
    }

    /// Calls `body` for each record `query` matches, with its values in the order of the
    /// entity's attributes then to-one relationships (``StoreRow/names``): no dictionary per row.
    func forEachRow(_ query: RecordQuery, _ body: (StoreRow) throws -> Void) throws(DeckError) {
        try forEachCursor(query) { cursor in try body(cursor.row) }
    }

    /// Calls `body` for each record `query` matches, with a cursor on it (see ``RowCursor``).
    func forEachCursor(_ query: RecordQuery, _ body: (RowCursor) throws -> Void) throws(DeckError) {
        let mapping = try self.mapping.entity(query.entity)
        // What to read for each entity the query can return: one result column per distinct column
        // expression. Siblings can give one name different storage (an attribute in one, a to-one
        // relationship in another), so each entity has its own list.
        // Global ids from format version 2 on: a reader of an older store has none to read.
        let members = query.includesSubentities ? mapping.family : [mapping.name]
        // A table that holds one entity's records needs no entity name per row: its rows are all
        // that entity's (a row naming another, which only a damaged store holds and `deck verify`
        // reports as entity-unknown, is read as this entity's). Not reading the name keeps it out
        // of the sorter's records and saves a comparison per row.
        let onlyEntity =
            members == [mapping.name] && self.mapping.members[mapping.table]?.count == 1 ? mapping.name : nil
        var columns =
            ["r._pk", onlyEntity == nil ? "r._entity" : "NULL"] + (formatVersion >= 2 ? ["r._gid"] : [])
        var positions: [String: Int] = [:]
        func column(_ expression: String) -> Int {
            if let known = positions[expression] { return known }
            columns.append(expression)
            positions[expression] = columns.count - 1
            return columns.count - 1
        }
        // Only the attribute's type: copying the whole attribute for every cell costs more than
        // reading it.
        typealias Reader = (column: Int, type: AttributeType?)
        var layouts: [String: (names: [String], readers: [Reader])] = [:]
        for member in members.compactMap({ self.mapping.entities[$0] }) {
            var names: [String] = []
            var list: [Reader] = []
            for attribute in member.attributes {
                names.append(attribute.name)
                list.append((column("r.\(quote(attribute.name))"), attribute.type))
            }
            for (relationship, storage) in member.relationships where !relationship.isToMany {
                let expression: String
                switch storage {
                case .ownColumn(let name): expression = "r.\(quote(name))"
                case .inverseColumn(let table, let name):
                    // Only the destination's records: sibling entities may share the column.
                    let family =
                        self.mapping.entities[relationship.destination]?.familyCondition("u").map {
                            " AND " + $0
                        }
                        ?? ""
                    expression =
                        "(SELECT u._pk FROM \(quote(table)) u WHERE u.\(quote(name)) = r._pk\(family) "
                        + "ORDER BY u._pk LIMIT 1)"
                case .joinTable: continue
                }
                names.append(relationship.name)
                list.append((column(expression), nil))
            }
            layouts[member.name] = (names, list)
        }
        var query = query
        let sortColumns = callerSortColumns(query, mapping: mapping, positions: positions)
        if sortColumns != nil { query.sort = [] }
        let (sql, arguments) = try selectSQL(
            query, mapping: mapping, columns: columns.joined(separator: ", "))
        var sizes: [Digest: Int64] = [:]
        func blobSize(_ digest: Digest) -> Int64 {
            if let size = sizes[digest] { return size }
            let size =
                (try? database.scalar(
                    "SELECT size FROM deck_blob WHERE digest = ?", [.text(digest.hexDigest)]))??.int64 ?? -1
            sizes[digest] = size
            return size
        }
        do {
            let statement = try prepareQuery { () throws(SQLiteError) in try database.takeQueryStatement(sql)
            }
            defer { database.returnQueryStatement(statement) }
            try statement.bind(arguments)
            // The terms of the order follow the columns asked for (QueryCompiler.select).
            let cursor = RowCursor(
                statement: statement, readsGlobalIDs: formatVersion >= 2,
                positionColumns: query.readsPositions ? columns.count..<statement.columnCount : nil,
                sortColumns: sortColumns, dateEpoch: dateEpoch, blobSize: blobSize)
            var last: (entity: String, names: [String], readers: [Reader]) = ("", [], [])
            var first = true
            while try statement.step() {
                // Rows of one entity come in runs: its name is compared in place, and read as a
                // string only when it changes.
                if first || (onlyEntity == nil && !statement.textEquals(&last.entity, at: 1)) {
                    first = false
                    let entityName = onlyEntity ?? statement.text(at: 1)
                    let layout = layouts[entityName] ?? ([], [])
                    last = (entityName, layout.names, layout.readers)
                    cursor.move(entity: last.entity, names: last.names, readers: last.readers)
                } else {
                    cursor.advance()
                }
                try body(cursor)
            }
        } catch {
            throw translate(error)
        }
    }

    /// The result columns of `query`'s sort keys, with their directions, when the caller orders
    /// the rows (``RecordQuery/lettingCallerOrder``, ``RowOrder``): a query of every matching
    /// record, sorted by number attributes of the record itself. `positions` gives the result
    /// column of each column expression.
    private func callerSortColumns(_ query: RecordQuery, mapping: EntityMapping, positions: [String: Int])
        -> [(column: Int32, ascending: Bool)]?
    {
        guard query.lettingCallerOrder, !query.sort.isEmpty, query.sort.count <= RecordQuery.Limits.sortKeys,
            query.limit == nil, query.offset == 0, query.after == nil, !query.readsPositions
        else { return nil }
        var columns: [(column: Int32, ascending: Bool)] = []
        for key in query.sort {
            guard key.folding == .exact, case .path(let path) = key.expression, path.variable == nil,
                path.names.count == 1, let attribute = mapping.attribute(path.names[0]),
                [.integer, .double, .date, .bool].contains(attribute.type),
                let column = positions["r.\(quote(attribute.name))"]
            else { return nil }
            columns.append((Int32(column), key.ascending))
        }
        return columns
    }

    /// The ids of the records `query` matches, in order.
    func fetchIDs(_ query: RecordQuery) throws(DeckError) -> [Int64] {
        let mapping = try self.mapping.entity(query.entity)
        let (sql, arguments) = try selectSQL(query, mapping: mapping, columns: "r._pk")
        let statement = try prepareQuery { () throws(SQLiteError) in try database.prepare(sql) }
        do {
            try statement.bind(arguments)
            var ids: [Int64] = []
            while try statement.step() { ids.append(statement.int64(at: 0)) }
            return ids
        } catch {
            throw translate(error)
        }
    }

    /// How many records `query` matches (its window applies).
    func count(_ query: RecordQuery) throws(DeckError) -> Int {
        let mapping = try self.mapping.entity(query.entity)
        let (sql, arguments) = try selectSQL(query, mapping: mapping, columns: "1")
        let statement = try prepareQuery { () throws(SQLiteError) in
            try database.cachedStatement("SELECT count(*) FROM (\(sql))")
        }
        do {
            try statement.bind(arguments)
            defer { statement.reset() }
            return Int(try statement.step() ? statement.int64(at: 0) : 0)
        } catch {
            throw translate(error)
        }
    }

    /// One record by id, or nil.
    func record(_ entity: String, id: Int64) throws(DeckError) -> Record? {
        try fetch(RecordQuery(entity, where: .recordID.equals(.value(.integer(id))), limit: 1)).first
    }

    /// The record of `entity` (or one of its subentities) whose global id is `globalID`, or nil.
    func recordID(_ entity: String, globalID: UUID) throws(DeckError) -> Int64? {
        let mapping = try self.mapping.entity(entity)
        guard formatVersion >= 2 else { return nil }
        let family = mapping.familyCondition(nil).map { " AND " + $0 } ?? ""
        do {
            return try database.prepareAndCollect(
                "SELECT _pk FROM \(quote(mapping.table)) WHERE _gid = ?\(family)",
                [.blob(GlobalID.bytes(globalID))]
            ) { $0.int64(at: 0) }.first
        } catch {
            throw translate(error)
        }
    }

    /// The ids a relationship of record `id` holds (to-one: zero or one).
    func related(_ entity: String, id: Int64, _ relationship: String) throws(DeckError) -> [Int64] {
        let mapping = try self.mapping.entity(entity)
        guard let (found, storage) = mapping.relationship(relationship) else {
            throw DeckError.unknownProperty(
                entity: entity, name: relationship,
                known: mapping.propertyNames)
        }
        do {
            let destination = try self.mapping.entity(found.destination)
            return try relatedIDs(id, storage: storage, table: mapping.table, destination: destination)
        } catch {
            throw translate(error)
        }
    }

    private func selectSQL(_ query: RecordQuery, mapping: EntityMapping, columns: String) throws(DeckError)
        -> (
            String, [SQLValue]
        )
    {
        var compiler = QueryCompiler(mapping: self.mapping, entity: mapping, dateEpoch: dateEpoch)
        return try compiler.select(query, columns: columns)
    }

    /// The statement of a query the compiler built, from `prepare`. SQLite refuses to prepare
    /// such a statement only when it goes past one of SQLite's limits (the depth of an
    /// expression, the number of variables, terms, columns or tables in a join, the length of the
    /// statement; the compiler keeps within them, and this is the last line of defence): that is
    /// the input's fault. It is told by its code (`SQLITE_ERROR` or `SQLITE_TOOBIG`) and by its
    /// coming from the preparation, never by SQLite's text.
    private func prepareQuery(_ prepare: () throws(SQLiteError) -> Statement) throws(DeckError) -> Statement {
        do {
            return try prepare()
        } catch {
            guard error.code == .error || error.code.primary == .tooBig else { throw translate(error) }
            throw DeckError.invalidQuery(
                "the query is too complex for SQLite (\(error.message)); simplify the filter")
        }
    }
}

extension Database {
    /// Prepares `sql` (uncached), binds `arguments` and maps every row.
    func prepareAndCollect<T>(_ sql: String, _ arguments: [SQLValue], _ map: (Statement) -> T) throws -> [T] {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        var result: [T] = []
        while try statement.step() { result.append(map(statement)) }
        return result
    }
}
