import DeckSQLite
import Foundation

extension MigrationExecutor {
    // MARK: Data checks

    /// The old column that holds new attribute `entity.name` (nil for a new attribute, and for one
    /// whose type a custom stage converts).
    func oldColumn(entity: String, attribute: String) -> String? {
        guard diff.entityOrigins[entity] != nil, !convertedAttributes.contains(entity + "." + attribute)
        else {
            return nil
        }
        return diff.propertyOrigins[entity + "." + attribute]
    }

    /// The old entity mapping that new entity `entity` continues.
    func oldEntity(_ entity: String) -> EntityMapping? {
        diff.entityOrigins[entity].flatMap { oldMapping.entities[$0] }
    }

    /// The old relationship whose links new relationship `relationship` of new entity `entity`
    /// continues, with its old entity: its origin's, or for a new relationship that is the inverse
    /// of one that existed, that one's, the other way round (`reversed`).
    func linkOrigin(entity: String, relationship: String) -> LinkOrigin? {
        if let oldEntity = oldEntity(entity), let origin = diff.propertyOrigins[entity + "." + relationship],
            let (_, storage) = oldEntity.relationship(origin)
        {
            return LinkOrigin(entity: oldEntity, storage: storage, reversed: false)
        }
        guard let (new, _) = newMapping?.entities[entity]?.relationship(relationship),
            let inverse = new.inverse,
            let oldDestination = oldEntity(new.destination),
            let origin = diff.propertyOrigins[new.destination + "." + inverse],
            let (_, storage) = oldDestination.relationship(origin)
        else { return nil }
        return LinkOrigin(entity: oldDestination, storage: storage, reversed: true)
    }

    /// Where a new relationship's links were before the migration.
    struct LinkOrigin {
        let entity: EntityMapping
        let storage: RelationshipStorage
        /// True when they are the links of the relationship's inverse.
        let reversed: Bool

        /// The old own column that holds the relationship's links, when they were kept in one.
        var ownColumn: String? {
            guard !reversed, case .ownColumn(let column) = storage else { return nil }
            return column
        }
    }

    /// The links new relationship `relationship` of new entity `entity` had before the migration,
    /// as a `SELECT` of `near` (a record of the entity) and `far` (one of its destination), read
    /// from their old storage wherever that table is now (set aside, or in place); nil for a
    /// relationship that had none.
    func oldLinks(entity: String, relationship: String) -> String? {
        guard let origin = linkOrigin(entity: entity, relationship: relationship) else { return nil }
        func source(_ table: String) -> String { quote(setAside[table] ?? table) }
        var select: String
        switch origin.storage {
        case .ownColumn(let column):
            let c = quote(column)
            select =
                "SELECT _pk AS near, \(c) AS far FROM \(source(origin.entity.table)) WHERE \(c) IS NOT NULL"
                + (origin.entity.familyCondition(nil).map { " AND " + $0 } ?? "")
        case .inverseColumn(let table, let column):
            let c = quote(column)
            select = "SELECT \(c) AS near, _pk AS far FROM \(source(table)) WHERE \(c) IS NOT NULL"
        case .joinTable(let table, let near, let far):
            select = "SELECT \(near) AS near, \(far) AS far FROM \(source(table))"
        }
        if origin.reversed { select = "SELECT far AS near, near AS far FROM (\(select))" }
        return select
    }

    /// Copies `links` (an ``oldLinks(entity:relationship:)`` query) into a temporary table keyed
    /// by `near`, so that finding a record's links is a search rather than a scan, and returns the
    /// table's name. The tables go when the migration ends (rolled back with it on failure).
    func linkTable(_ links: String) throws -> String {
        let name = "temp.\(quote("deck_links_\(linkTables.count + 1)"))"
        try database.execute(
            "CREATE TEMP TABLE \(name)(near INTEGER NOT NULL, far INTEGER NOT NULL, PRIMARY KEY (near, far)) "
                + "WITHOUT ROWID")
        linkTables.append(name)
        try database.execute("INSERT OR IGNORE INTO \(name)(near, far) SELECT near, far FROM (\(links))")
        return name
    }

    /// Runs the checks of section 18.2 on the store as it is (before any change).
    func dataChecks() throws {
        try checkMovedToOneLinks()
        for step in diff.steps where step.needsDataCheck {
            guard let oldEntity = oldEntity(step.entity) else { continue }
            let table = quote(oldEntity.table)
            let family = oldEntity.familyCondition(nil)
            switch step.kind {
            case .addUnique, .addUniqueConstraint:
                let names = (step.property ?? "").split(separator: "+").map(String.init)
                let columns = names.map { oldColumn(entity: step.entity, attribute: $0) }
                // A column that is new holds no value yet (null), which never conflicts.
                guard columns.allSatisfy({ $0 != nil }) else { continue }
                let quoted = columns.compactMap { $0 }.map(quote)
                var conditions = quoted.map { "\($0) IS NOT NULL" }
                if let family { conditions.append(family) }
                let sql =
                    "SELECT min(_pk), max(_pk) FROM \(table) WHERE \(conditions.joined(separator: " AND ")) "
                    + "GROUP BY \(quoted.joined(separator: ", ")) HAVING count(*) > 1 ORDER BY 1 LIMIT 1"
                if let row = try database.rows(sql).first {
                    throw refuse(
                        step.entity, step.property,
                        "\(step.entity).\(names.joined(separator: "+")) cannot become unique: records #\(row[0].int64 ?? 0) "
                            + "and #\(row[1].int64 ?? 0) share the value; make them differ first (or in a "
                            + "custom stage's willMigrate)")
                }
            case .addAttribute:
                // A required attribute without default of a subentity: the entity has no record.
                let condition = family.map { " WHERE \($0)" } ?? ""
                if let id = try database.scalar("SELECT min(_pk) FROM \(table)\(condition)")?.int64 {
                    throw refuse(
                        step.entity, step.property,
                        "\(step.summary): it is required and has no default, but record #\(id) has no value "
                            + "for it; give it a default or make it optional")
                }
            case .makeRequired:
                guard let column = oldColumn(entity: step.entity, attribute: step.property ?? "") else {
                    continue
                }
                var conditions = ["\(quote(column)) IS NULL"]
                if let family { conditions.append(family) }
                if let id = try database.scalar(
                    "SELECT min(_pk) FROM \(table) WHERE \(conditions.joined(separator: " AND "))")?.int64
                {
                    throw refuse(
                        step.entity, step.property,
                        "\(step.entity).\(step.property ?? "") cannot become required: record #\(id) holds no "
                            + "value; give it a default or fill the values first")
                }
            case .changeDeleteRule:
                try checkDangling(step, oldEntity: oldEntity)
            case .makeToOne:
                guard let links = oldLinks(entity: step.entity, relationship: step.property ?? ""),
                    let (id, count) = try firstRecordWithSeveral(links)
                else { continue }
                throw refuse(
                    step.entity, step.property,
                    "\(step.entity).\(step.property ?? "") cannot become to-one: record #\(id) has \(count) links; "
                        + "leave it at most one first (or in a custom stage's willMigrate)")
            default:
                continue
            }
        }
    }

    /// A new to-one relationship whose column is filled from its inverse's old links (a join
    /// table): at most one link per record, or the rest would be lost.
    func checkMovedToOneLinks() throws {
        guard let newMapping else { return }
        for name in newMapping.entityNames {
            guard let entity = newMapping.entities[name] else { continue }
            for relationship in entity.entity.relationships {
                guard case .ownColumn? = entity.relationship(relationship.name)?.storage,
                    let origin = linkOrigin(entity: name, relationship: relationship.name)
                else { continue }
                // A relationship that existed has at most one link per record if it was to-one, and
                // one made to-one has its own check: only a new one, filled from its inverse's.
                guard origin.reversed, let links = oldLinks(entity: name, relationship: relationship.name),
                    let (id, count) = try firstRecordWithSeveral(links)
                else { continue }
                throw refuse(
                    name, relationship.name,
                    "\(name).\(relationship.name) is to-one and takes its links from where they were kept before, "
                        + "but record #\(id) has \(count) of them; leave it at most one first (or in a custom "
                        + "stage's willMigrate)")
            }
        }
    }

    /// The first record (by id) that has more than one of `links` (an
    /// ``oldLinks(entity:relationship:)`` query), with how many it has; nil when none has.
    func firstRecordWithSeveral(_ links: String) throws -> (id: Int64, count: Int64)? {
        guard
            let row = try database.rows(
                "SELECT near, count(*) FROM (\(links)) GROUP BY near HAVING count(*) > 1 ORDER BY near LIMIT 1"
            ).first
        else { return nil }
        return (row[0].int64 ?? 0, row[1].int64 ?? 0)
    }

    /// A relationship whose delete rule was `noAction`: no link may name a record that is gone.
    func checkDangling(_ step: SchemaDiff.Step, oldEntity: EntityMapping) throws {
        let name = diff.propertyOrigins[step.entity + "." + (step.property ?? "")] ?? step.property ?? ""
        guard let (relationship, storage) = oldEntity.relationship(name),
            let destination = oldMapping.entities[relationship.destination]
        else { return }
        let sql: String
        switch storage {
        case .ownColumn(let column):
            let c = quote(column)
            sql =
                "SELECT min(_pk) FROM \(quote(oldEntity.table)) WHERE \(c) IS NOT NULL AND \(c) NOT IN "
                + "(SELECT _pk FROM \(quote(destination.table)))"
        case .inverseColumn(let table, let column):
            let c = quote(column)
            sql =
                "SELECT min(\(c)) FROM \(quote(table)) WHERE \(c) IS NOT NULL AND \(c) NOT IN "
                + "(SELECT _pk FROM \(quote(oldEntity.table)))"
        case .joinTable:
            return  // its foreign keys delete a link with its record
        }
        if let id = try database.scalar(sql)?.int64 {
            throw refuse(
                step.entity, step.property,
                "\(step.summary): a link of record #\(id) names a record that does not exist; "
                    + "run 'deck verify' and repair the links first")
        }
    }

    // MARK: Old values

    func oldValues(entity: String, attribute: String) throws(DeckError) -> [Int64: Value] {
        guard let mapping = oldMapping.entities[entity] else {
            throw DeckError.unknownEntity(entity, known: oldMapping.entityNames)
        }
        guard let definition = mapping.attribute(attribute) else {
            throw DeckError.unknownProperty(
                entity: entity, name: attribute, known: mapping.attributes.map(\.name))
        }
        let table = setAside[mapping.table] ?? mapping.table
        let family = mapping.familyCondition(nil).map { " WHERE \($0)" } ?? ""
        var result: [Int64: Value] = [:]
        do {
            // A table altered in place kept its old columns under their names.
            let rows = try database.rows("SELECT _pk, \(quote(attribute)) FROM \(quote(table))\(family)")
            for row in rows {
                guard let id = row[0].int64 else { continue }
                result[id] = Value(sql: row[1], attribute: definition, epoch: connection.dateEpoch) {
                    digest in
                    (try? self.database.scalar(
                        "SELECT size FROM deck_blob WHERE digest = ?", [.text(digest.hexDigest)]))??.int64
                        ?? 0
                }
            }
        } catch {
            throw DeckError.wrap(error)
        }
        return result
    }
}
