import DeckSQLite
import Foundation

/// Fills the package that ``PackageStore/build(at:contentType:schema:documentID:_:)`` builds:
/// records with the keys and global ids their caller gives, then the links between them, in the
/// one transaction of the build on the writer's connection. It is the record API's insert without
/// its per-record work: no change recording, no savepoint per row, no reference count updated per
/// row; values are checked and converted exactly as an insert converts them (``CellEncoder``).
///
/// A load goes in two phases: every row (``insert(entity:pk:globalID:values:links:)``), then every
/// link (``setToOne(entity:pk:relationship:target:)``, ``addToMany(entity:pk:relationship:targets:)``),
/// which checks that both ends exist. A to-one link kept in the row itself (not a one-to-one) can
/// also be given with the row, as a key that need not exist yet: every such link is checked
/// once, when the load ends, by one query per column. Keys are per table (a hierarchy shares one), as `_pk` is
/// and as Core Data's `Z_PK` is, so a caller that copies keys from another store sets links by
/// key with no map of ids. Blob files are registered in `deck_blob` at the end of the load, each
/// with the count of the cells that name it (one statement per external-storage column).
///
/// It belongs to the build's body: it is not `Sendable`, and once the body has returned every
/// call is a misuse error.
package final class BulkLoader {
    private let connection: StoreConnection
    private var isOpen = true
    /// The blob files that cells name, registered when the load ends.
    private var pendingBlobs: [Digest: Int64] = [:]
    /// The latest entity inserted, with its insert statement and the to-one links its rows
    /// carry (rows come in runs of one entity).
    private var lastInsert: (mapping: EntityMapping, statement: Statement, links: [RowLink])?
    /// The to-one columns that inserts have written a key to, by `table.column`: checked when
    /// the load ends.
    private var linkedByInsert: [String: RowLink] = [:]
    /// The intakes of blob files written by other threads (``blobIntake()``).
    private var intakes: [BlobIntake] = []
    /// The entity tables' indexes: in place until the first row, then dropped, then made again
    /// at the first link or at the end (``DeferredIndexes``).
    private var indexes = IndexState.inPlace

    private enum IndexState {
        case inPlace
        case suspended(DeferredIndexes)
        case restored
    }
    /// Each relationship's link statements, by `Entity.relationship`, made on first use.
    private var links: [String: BulkLink] = [:]
    /// The latest relationship linked (links come in runs of one relationship).
    private var lastLink: BulkLink?
    private lazy var encoder = CellEncoder(
        database: connection.database, blobs: connection.blobs, dateEpoch: connection.dateEpoch,
        isRegistered: { [unowned self] digest in pendingBlobs[digest] != nil },
        register: { [unowned self] reference in pendingBlobs[reference.digest] = reference.size })

    init(_ connection: StoreConnection) { self.connection = connection }

    private var database: Database { connection.database }
    private var mapping: SchemaMapping { connection.mapping }

    /// The schema of the package being built.
    package var schema: StoreSchema { connection.schema }

    /// The names of the attributes of `entity`, inherited ones first (from the root down, each
    /// entity's in declaration order): the order of the values ``insert(entity:pk:globalID:values:)``
    /// takes.
    package func attributeNames(of entity: String) throws(DeckError) -> [String] {
        try mapping.entity(entity).attributes.map(\.name)
    }

    /// The to-one relationships of `entity` (inherited ones first) whose links
    /// ``insert(entity:pk:globalID:values:links:)`` takes with the row, in the order it takes
    /// them: those kept in a column of the entity's own table (spec 6.5) whose inverse, if any,
    /// is to-many. A one-to-one is set with ``setToOne(entity:pk:relationship:target:)``, which
    /// lets the target's earlier partner go.
    package func rowLinkNames(of entity: String) throws(DeckError) -> [String] {
        try rowLinks(of: mapping.entity(entity)).map(\.name)
    }

    private func rowLinks(of source: EntityMapping) throws(DeckError) -> [RowLink] {
        var links: [RowLink] = []
        for (relationship, storage) in source.relationships where !relationship.isToMany {
            guard case .ownColumn(let column) = storage else { continue }
            let destination = try mapping.entity(relationship.destination)
            if let inverse = relationship.inverse,
                destination.relationship(inverse)?.relationship.isToMany == false
            {
                continue
            }
            links.append(
                RowLink(
                    name: relationship.name, table: source.table, column: column, destination: destination))
        }
        return links
    }

    /// A writer of blob files for this load that another thread may use while rows load: a row
    /// names a file it wrote as `.blob(reference)`, taken as is (it was hashed as it was
    /// written). Call the intake's ``BlobIntake/finish()`` before the load's body returns; the
    /// files that no row names are removed when the load ends.
    package func blobIntake() throws(DeckError) -> BlobIntake {
        try requireOpen()
        let intake = BlobIntake(packagePath: connection.blobs.packagePath)
        intakes.append(intake)
        return intake
    }

    /// Data that names a file of an intake: registered for the load when the attribute keeps it
    /// as a blob file (external storage, at or above its threshold), else its bytes, inline.
    private func adopting(_ value: Value, for attribute: Attribute) throws(DeckError) -> Value {
        guard case .blob(let reference) = value, intakes.contains(where: { $0.isWritten(reference) }) else {
            return value
        }
        guard attribute.options.contains(.externalStorage),
            reference.size >= attribute.effectiveExternalThreshold
        else { return .data(try connection.blobs.read(reference.digest)) }
        pendingBlobs[reference.digest] = reference.size
        return value
    }

    // MARK: Rows

    /// Inserts a record of `entity` with key `pk` (its `_pk`: 1 or more, unique in the table of
    /// the entity's hierarchy) and global id `globalID`, its attribute values in the order of
    /// ``attributeNames(of:)`` (nil: the attribute's default, or null when optional), and, when
    /// `links` is not empty, the keys of the targets of the relationships
    /// ``rowLinkNames(of:)`` names, in that order (nil: none). A target need not be loaded yet:
    /// the links are checked when the load ends, and one that names no record of the
    /// destination (or of a descendant) fails the load then, naming the record and the link.
    ///
    /// Data becomes a blob file as an insert makes one (`.data` at or above the attribute's
    /// threshold, `.file` by the bytes read). A value of the wrong type, a missing required
    /// value, a key or global id the table has already, or a unique constraint broken is an
    /// ``DeckError/invalidValue(entity:property:reason:)`` naming the entity, the property and the
    /// key.
    package func insert(entity: String, pk: Int64, globalID: UUID, values: [Value?], links: [Int64?] = [])
        throws(DeckError)
    {
        try requireOpen()
        if case .inPlace = indexes { try suspendIndexes() }
        let (mapping, statement, rowLinks) = try insertStatement(entity)
        guard values.count == mapping.attributes.count else {
            throw DeckError.misuse(
                "\(entity): \(values.count) values for \(mapping.attributes.count) attributes in a bulk insert "
                    + "(give them in the order of attributeNames(of:))")
        }
        guard links.isEmpty || links.count == rowLinks.count else {
            throw DeckError.misuse(
                "\(entity): \(links.count) links for \(rowLinks.count) to-one relationships in a bulk insert "
                    + "(give them in the order of rowLinkNames(of:))")
        }
        guard pk > 0 else {
            throw DeckError.invalidValue(
                entity: entity, property: "_pk", reason: "key \(pk): a record's key must be 1 or more")
        }
        do {
            statement.rewind()
            try statement.bind(.integer(pk), at: 1)
            try statement.bind(globalID: globalID, at: 2)
            for index in mapping.attributes.indices {
                let cell = try CellEncoder.insertCell(
                    values[index], attribute: index, of: mapping, epoch: connection.dateEpoch
                ) { value, attribute in
                    try encoder.cell(
                        intakes.isEmpty ? value : adopting(value, for: attribute), for: attribute, of: entity)
                }
                try statement.bind(cell, at: index + 3)
            }
            let first = mapping.attributes.count + 3
            for index in rowLinks.indices {
                let target = links.isEmpty ? nil : links[index]
                try statement.bind(target.map { .integer($0) } ?? .null, at: first + index)
                if target != nil, linkedByInsert[rowLinks[index].key] == nil {
                    linkedByInsert[rowLinks[index].key] = rowLinks[index]
                }
            }
            try statement.runBound()
        } catch {
            throw naming(error, inserting: mapping, pk: pk, globalID: globalID, values: values)
        }
    }

    /// Drops the entity tables' indexes until the rows are in (a row inserted after a link is
    /// inserted with them in place).
    private func suspendIndexes() throws(DeckError) {
        do {
            indexes = .suspended(
                try DeferredIndexes.suspend(tables: mapping.roots.map(\.table), in: database))
        } catch {
            throw connection.translate(error)
        }
    }

    /// Makes the suspended indexes again: the rows are in.
    private func restoreIndexes() throws(DeckError) {
        guard case .suspended(var deferred) = indexes else { return }
        indexes = .restored
        try deferred.restore(in: connection)
    }

    /// The insert statement of `entity`: `INSERT INTO table(_pk, _gid, _entity, attributes…,
    /// row links…)`.
    private func insertStatement(_ entity: String) throws(DeckError) -> (EntityMapping, Statement, [RowLink])
    {
        if let last = lastInsert, last.mapping.name == entity { return last }
        let mapping = try mapping.entity(entity)
        let links = try rowLinks(of: mapping)
        let columns =
            ["_pk", "_gid", "_entity"] + mapping.attributes.map { quote($0.name) }
            + links.map { quote($0.column) }
        let sql =
            "INSERT INTO \(quote(mapping.table))(" + columns.joined(separator: ", ")
            + ") VALUES (?, ?, '\(mapping.name)'"
            + String(repeating: ", ?", count: columns.count - 3) + ")"
        do {
            let statement = try database.cachedStatement(sql)
            lastInsert = (mapping, statement, links)
            return (mapping, statement, links)
        } catch {
            throw connection.translate(error)
        }
    }

    /// An insert's failure as the error that names the entity, the property and the key.
    private func naming(
        _ error: any Error, inserting mapping: EntityMapping, pk: Int64, globalID: UUID, values: [Value?]
    ) -> DeckError {
        let record = "the record with key \(pk)"
        if case DeckError.invalidValue(let entity, let property, let reason) = error {
            return .invalidValue(entity: entity, property: property, reason: "\(record): \(reason)")
        }
        guard let failure = error as? SQLiteError else { return connection.translate(error) }
        if failure.code == .constraintPrimaryKey {
            let holder = try? database.scalar(
                "SELECT _entity FROM \(quote(mapping.table)) WHERE _pk = ?", [.integer(pk)])
            return .invalidValue(
                entity: mapping.name, property: "_pk",
                reason: "key \(pk) is taken in table \(mapping.table)"
                    + (holder?.string.map { " (by a \($0) record)" } ?? ""))
        }
        if failure.code == .constraintUnique {
            var written: [String: Value] = [:]
            for (index, value) in values.enumerated() { written[mapping.attributes[index].name] = value }
            let found = UniqueConflict(
                database: database, mapping: self.mapping, dateEpoch: connection.dateEpoch
            )
            .find(writing: mapping, id: nil, values: written, globalID: globalID)
            if let found, found.properties == ["_gid"] {
                return .invalidValue(
                    entity: mapping.name, property: "_gid",
                    reason: "\(record): a record of table \(mapping.table) already has global id "
                        + globalID.uuidString.lowercased())
            }
            if let found {
                return .invalidValue(
                    entity: found.entity, property: found.properties.joined(separator: ", "),
                    reason: "\(record): another record has the same value (the property is unique)")
            }
        }
        return connection.translate(error)
    }

    /// Raises the key SQLite gives the next new row of `entity`'s table to at least
    /// `maximum + 1` (its `sqlite_sequence.seq` to `maximum`; never lowers it), so keys of
    /// records the source deleted are never given out again (Core Data's `Z_MAX`). Inserting
    /// raises it past every key given already.
    package func reserveKeys(entity: String, through maximum: Int64) throws(DeckError) {
        try requireOpen()
        let table = try mapping.entity(entity).table
        do {
            try database.run(
                "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?",
                [.integer(maximum), .text(table)])
            if database.changes == 0 && maximum > 0 {
                try database.run(
                    "INSERT INTO sqlite_sequence(name, seq) VALUES (?, ?)", [.text(table), .integer(maximum)])
            }
        } catch {
            throw connection.translate(error)
        }
    }

    // MARK: Links

    /// Sets to-one relationship `relationship` of the record of `entity` with key `pk` to the
    /// record with key `target` (nil: none), wherever the store keeps it (its own column, or the
    /// inverse's; spec 6.5), so its inverse sees it too. A one-to-one target's earlier partner lets
    /// go. No delete rule runs. Both records must exist (a target of the destination entity or
    /// one of its descendants).
    package func setToOne(entity: String, pk: Int64, relationship name: String, target: Int64?)
        throws(DeckError)
    {
        try requireOpen()
        try restoreIndexes()
        let link = try link(entity, name, toMany: false)
        do {
            if let target { try link.requireTarget(target, from: pk) }
            try link.setToOne(pk, target)
        } catch {
            throw connection.translate(error)
        }
    }

    /// Adds the records with keys `targets` to to-many relationship `relationship` of the record
    /// of `entity` with key `pk`, wherever the store keeps it (the inverse's column, or a join
    /// table; spec 6.5 and 6.6), so the inverse sees them too. A target of a one-to-many leaves
    /// its earlier owner; a link a join table has already is kept once. No delete rule runs. Every
    /// record must exist (targets of the destination entity or one of its descendants). Returns
    /// how many links it added: a link that was there already is not counted.
    @discardableResult
    package func addToMany(entity: String, pk: Int64, relationship name: String, targets: [Int64])
        throws(DeckError) -> Int
    {
        try requireOpen()
        try restoreIndexes()
        let link = try link(entity, name, toMany: true)
        var added = 0
        do {
            try link.requireSource(pk)
            for target in targets {
                try link.requireTarget(target, from: pk)
                if try link.add(pk, target) { added += 1 }
            }
        } catch {
            throw connection.translate(error)
        }
        return added
    }

    /// The statements of relationship `name` of `entity`, which must be to-many or to-one as
    /// `toMany` says: the latest one's, or those made for it earlier, or made now.
    private func link(_ entity: String, _ name: String, toMany: Bool) throws(DeckError) -> BulkLink {
        if let last = lastLink, last.source.name == entity, last.name == name, last.isToMany == toMany {
            return last
        }
        let key = entity + "." + name
        let link: BulkLink
        if let known = links[key] {
            link = known
        } else {
            link = try BulkLink(connection, entity: try mapping.entity(entity), relationship: name)
            links[key] = link
        }
        guard link.isToMany == toMany else {
            throw DeckError.invalidValue(
                entity: entity, property: name,
                reason: toMany
                    ? "a to-one relationship: set it with setToOne"
                    : "a to-many relationship: add to it with addToMany")
        }
        lastLink = link
        return link
    }

    /// The distinct blob files the cells inserted so far name, and their bytes: what the package
    /// will hold once the load ends (a caller's report needs no second look at the package).
    package var blobFiles: (count: Int, bytes: Int64) {
        (pendingBlobs.count, pendingBlobs.values.reduce(0, +))
    }

    // MARK: End

    /// Ends the load: registers every blob file the cells name in `deck_blob`, with its count of
    /// references taken from the cells (one statement per external-storage column).
    func finish() throws(DeckError) {
        try requireOpen()
        try restoreIndexes()
        for key in linkedByInsert.keys.sorted() { try linkedByInsert[key]!.check(connection) }
        try settleIntakes()
        do {
            for (digest, size) in pendingBlobs {
                try database.run(
                    "INSERT INTO deck_blob(digest, size, refs) VALUES (?, ?, 0) ON CONFLICT(digest) DO NOTHING",
                    [.text(digest.hexDigest), .integer(size)])
            }
            guard !pendingBlobs.isEmpty else { return }
            for column in ReferenceCounts.columns(mapping) {
                let c = quote(column.column)
                try database.run(
                    "UPDATE deck_blob SET refs = refs + counted.n FROM (SELECT \(c) AS digest, count(*) AS n "
                        + "FROM \(quote(column.table)) WHERE typeof(\(c)) = 'text' GROUP BY \(c)) AS counted "
                        + "WHERE deck_blob.digest = counted.digest")
            }
        } catch {
            throw connection.translate(error)
        }
    }

    /// Requires every intake finished, and removes the files they wrote that no cell names.
    private func settleIntakes() throws(DeckError) {
        guard !intakes.isEmpty else { return }
        guard intakes.allSatisfy(\.isFinished) else {
            throw DeckError.misuse("a bulk load ended with a blob intake not finished")
        }
        for intake in intakes {
            for digest in intake.digests where pendingBlobs[digest] == nil {
                try? FileSystem.unlink(connection.blobs.path(for: digest))
            }
        }
    }

    /// The build's body has returned: every later call is a misuse.
    func end() {
        isOpen = false
        lastInsert = nil
        lastLink = nil
        links.removeAll()
    }

    private func requireOpen() throws(DeckError) {
        guard isOpen else {
            throw DeckError.misuse("a bulk load was used after its build's body returned")
        }
    }
}

@available(*, unavailable)
extension BulkLoader: Sendable {}

/// A to-one relationship that a ``BulkLoader`` writes with the row: its own column (spec 6.5),
/// not a one-to-one.
private struct RowLink {
    let name: String
    let table: String
    let column: String
    let destination: EntityMapping

    var key: String { table + "." + column }

    /// Fails with the first row whose key in the column names no record of the destination or
    /// of a descendant (the foreign key alone would fail only the commit, and proves no entity).
    func check(_ connection: StoreConnection) throws(DeckError) {
        let c = quote(column)
        let wrongEntity = destination.familyCondition("d").map { " OR NOT (\($0))" } ?? ""
        let sql =
            "SELECT s._pk, s._entity, s.\(c), d._entity FROM \(quote(table)) AS s LEFT JOIN "
            + "\(quote(destination.table)) AS d ON d._pk = s.\(c) WHERE s.\(c) IS NOT NULL "
            + "AND (d._pk IS NULL\(wrongEntity)) ORDER BY s._pk LIMIT 1"
        let found: [SQLValue]?
        do {
            found = try connection.database.rows(sql).first
        } catch {
            throw connection.translate(error)
        }
        guard let found, let pk = found[0].int64, let target = found[2].int64 else { return }
        throw BulkLink.wrongTarget(
            entity: found[1].string ?? table, relationship: name, pk: pk, destination: destination.name,
            target: target, found: found[3].string)
    }
}
