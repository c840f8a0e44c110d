import DeckSQLite
import DeckSupport
import Foundation

/// The changes a store's versions record, by transaction (spec section 20.10): every record,
/// cell and link listed under the last transaction that changed it, with the value that
/// transaction left. Read from the bookkeeping that merging keeps (section 20), so it costs
/// writes nothing, and it is the store's current state arranged by the transactions that made
/// it: a change that a later one replaced is not listed (the later one is), and a deleted
/// record's values are gone with it.
///
/// What SwiftData's history gives an app (which records changed since a token, and which of
/// their attributes), with the values: ``ChangeLog/init(of:after:last:)`` with the ``token`` of
/// a log read before gives the changes made since, those a merge brought included.
public struct ChangeLog: Sendable, Equatable {
    /// The transactions, in the order of their versions (clock, then writer id bytes): the order
    /// in which a merge ranks them (spec 20.6).
    public var transactions: [LoggedTransaction] = []
    /// What the store held when it was read: given to a later read (``init(of:after:last:)``), it
    /// leaves out every change this read saw, and lists what was changed since, in this store or
    /// in a copy merged into it since.
    public var token = Token()

    /// Where a change log starts: the changes it leaves out.
    ///
    /// A transaction's changes are left out when its clock is at most the token's ``clock``, or
    /// at most the token's clock for its writer (``writers``). A log's token has every writer's
    /// greatest clock in the store: a copy holding a writer's change of clock *c* holds every
    /// change that writer made up to *c*, or a later one (copies merge whole, spec 20.9), so
    /// what is not left out is exactly what that store did not hold.
    public struct Token: Sendable, Hashable, Codable, CustomStringConvertible {
        /// Every transaction at or below this clock is left out (-1: none is).
        public var clock: Int64
        /// The greatest clock of each writer's changes left out (the origin's id is all zeros).
        public var writers: [UUID: Int64]

        public init(clock: Int64 = -1, writers: [UUID: Int64] = [:]) {
            self.clock = clock
            self.writers = writers
        }

        static let origin = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

        /// The token as text: its clock, unless it is -1, then `writer:clock` for each writer by
        /// id, the ids as 32 lowercase hex digits, separated by commas
        /// (`0123…ef:117735718293798912,…`); `-1` for a token of neither. It begins with a dash
        /// only then, so that a command line does not take it for an option.
        public var description: String {
            let entries = writers.sorted {
                DocumentDiffer.bytes($0.key).lexicographicallyPrecedes(DocumentDiffer.bytes($1.key))
            }
            .map { "\(DocumentDiffer.bytes($0.key).map { String(format: "%02x", $0) }.joined()):\($0.value)" }
            let parts = (clock == -1 ? [] : [String(clock)]) + entries
            return parts.isEmpty ? "-1" : parts.joined(separator: ",")
        }

        /// The token `text` gives (``description``), or nil. A clock alone leaves out the
        /// transactions at or below it.
        public init?(_ text: String) {
            var parts = text.split(separator: ",", omittingEmptySubsequences: false)
            var clock: Int64 = -1
            if let first = parts.first, !first.contains(":") {
                guard let value = Int64(first), value >= -1 else { return nil }
                clock = value
                parts.removeFirst()
            }
            var writers: [UUID: Int64] = [:]
            for part in parts {
                let pair = part.split(separator: ":", omittingEmptySubsequences: false)
                guard pair.count == 2, pair[0].count == 32, let value = Int64(pair[1]), value >= 0,
                    let bytes = Self.bytes(hex: pair[0]), writers[bytes] == nil
                else { return nil }
                writers[bytes] = value
            }
            self.init(clock: clock, writers: writers)
        }

        private static func bytes(hex: Substring) -> UUID? {
            var bytes: [UInt8] = []
            var index = hex.startIndex
            while index < hex.endIndex {
                let next = hex.index(index, offsetBy: 2)
                guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
                bytes.append(byte)
                index = next
            }
            return DocumentMerger.globalID(.blob(Data(bytes)))
        }
    }

    /// Reads the changes of `store` that `after` does not leave out (all, when nil), at most
    /// the `last` transactions of them (the latest), in one snapshot of the store.
    ///
    /// - Throws: ``DeckError/notComparable(path:reason:)`` when the store is older than format
    ///   version 5 (it keeps no versions until it is opened for writing once); ``DeckError/misuse(_:)``
    ///   when `last` is below 1; the store's read errors.
    public init(of store: PackageStore, after: Token? = nil, last: Int? = nil) throws(DeckError) {
        guard store.storeFormatVersion >= VersionDDL.firstFormatVersion else {
            throw DeckError.notComparable(
                path: store.url.path,
                reason:
                    "it is format version \(store.storeFormatVersion), which keeps no versions of its "
                    + "changes; version \(VersionDDL.firstFormatVersion) does (open it for writing once to upgrade it)"
            )
        }
        if let last, last < 1 { throw DeckError.misuse("a change log of \(last) transactions") }
        do {
            self = try store.withReaderConnection { connection in
                try connection.readTransaction {
                    var reader = ChangeLogReader(
                        path: store.url.path, database: connection.database, mapping: store.mapping,
                        epoch: store.dateEpoch)
                    return try reader.read(after: after ?? Token(), last: last)
                }
            }
        } catch {
            throw DeckError.wrap(error)
        }
    }

    init(transactions: [LoggedTransaction], token: Token) {
        self.transactions = transactions
        self.token = token
    }
}

/// One transaction's changes still recorded: the version it gave them, and what they are.
public struct LoggedTransaction: Sendable, Equatable {
    /// The transaction's clock (spec 20.2): 0 for the origin, the changes made before the store
    /// kept versions (format 5).
    public var clock: Int64
    /// The id of the writer session that made it (spec 20.1); nil for the origin.
    public var writer: UUID?
    public var changes: [LoggedChange]

    /// About when the transaction was made: the clock's wall-clock term, in milliseconds since
    /// 1970 (spec 20.2). A clock runs ahead of the wall clock when transactions come faster than
    /// one a millisecond, or after a device's clock went back; nil when the clock has no such
    /// term (the origin).
    public var date: Date? {
        clock >= 65_536 ? Date(timeIntervalSince1970: Double(clock >> 16) / 1000) : nil
    }
}

/// A record's or a link's last change.
public struct LoggedChange: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// The record was inserted; `cells` are the values the insert set that no later change
        /// replaced.
        case inserted
        /// The record's `cells` were last set by this transaction, to these values.
        case updated
        /// The record was deleted (its `entity` is its table's: the concrete entity of a deleted
        /// record is not kept).
        case deleted
        /// The to-many link from the record to `target` was made, or removed.
        case linked, unlinked
    }
    public var kind: Kind
    /// The record's entity (for a deleted record, its table's root entity); for a link, the
    /// source record's (the root entity of its table when it is deleted).
    public var entity: String
    public var globalID: UUID
    /// For an insert or an update: the attributes and to-one relationships, with their values,
    /// in the schema's order.
    public var cells: [LoggedCell] = []
    /// For a link: its join table (`Entity.relationship`).
    public var relationship: String?
    /// For a link: its target record's global id.
    public var target: UUID?
    /// For a link: its target record's entity (the root entity of its table when the record is
    /// deleted).
    public var targetEntity: String?
}

/// An attribute or to-one relationship and the value a transaction left in it.
public struct LoggedCell: Sendable, Equatable {
    public var name: String
    public var value: DiffCell
}

/// Reads a store's change log inside a read transaction (``ChangeLog``).
struct ChangeLogReader {
    /// The store's path, for errors.
    let path: String
    let database: Database
    let mapping: SchemaMapping
    let epoch: DateEpoch
    /// The transactions found, by (clock, writer number).
    private var found: [Version: [(order: [UInt8], change: LoggedChange)]] = [:]
    /// The store's writer ids by number (0, the origin, has the id of zeros).
    private var writers: [Int64: UUID] = [:]
    /// The greatest clock left out for each writer number, and for those not listed.
    private var covered: [Int64: Int64] = [:]
    private var coveredOtherwise: Int64 = -1

    init(path: String, database: Database, mapping: SchemaMapping, epoch: DateEpoch) {
        self.path = path
        self.database = database
        self.mapping = mapping
        self.epoch = epoch
    }

    private struct Version: Hashable {
        let clock: Int64
        let writer: Int64
    }

    /// Whether the log lists changes of `version`.
    private func lists(_ version: Version) -> Bool {
        version.clock > (covered[version.writer] ?? coveredOtherwise)
    }

    /// The join, in SQL, of the version in columns `clock` and `writer` of `alias` with its
    /// writer's row of `seen`, the table the statements' `WITH` clause (``seen``) makes (a join,
    /// which SQLite indexes, rather than a lookup per row).
    private func seenBy(_ alias: String) -> String {
        "LEFT JOIN seen s_\(alias) ON s_\(alias).writer = \(alias).writer"
    }

    /// The condition, in SQL, that the version of `alias` (joined by ``seenBy(_:)``) is listed.
    private func listed(_ alias: String) -> String {
        "\(alias).clock > coalesce(s_\(alias).clock, \(coveredOtherwise))"
    }

    /// A `WITH` clause making `seen(writer, clock)`, the clocks left out by writer number.
    private var seen: String {
        let rows = covered.sorted { $0.key < $1.key }.map { "(\($0.key), \($0.value))" }
        return rows.isEmpty
            ? "WITH seen(writer, clock) AS (SELECT 0, \(coveredOtherwise) WHERE 0) "
            : "WITH seen(writer, clock) AS (VALUES \(rows.joined(separator: ", "))) "
    }

    mutating func read(after token: ChangeLog.Token, last: Int?) throws -> ChangeLog {
        try database.forEachRow("SELECT id, writer FROM deck_writer") { row in
            if let id = DocumentMerger.globalID(row.value(at: 1)) { writers[row.int64(at: 0)] = id }
        }
        // Number 0 is the origin's, whatever a store from elsewhere says its id is (spec 20.1).
        writers[0] = ChangeLog.Token.origin
        // With `last`, the changes above the last-th greatest clock of the store's versions,
        // then of twice as many, … until they are of `last` transactions or all are read: some
        // versions are of no change listed (a merge's range of keys, a record deleted since).
        var count = last ?? 0
        while true {
            cover(token, floor: -1)
            let floor = try last == nil ? -1 : bound(last: count)
            cover(token, floor: floor)
            try collect()
            if floor < 0 || found.count >= last ?? 0 { break }
            count *= 2
        }
        // A version naming a writer the store does not number is a lie (the verifier reports
        // it, spec 20.8): it would read as the origin's.
        if let stray = found.keys.first(where: { $0.writer != 0 && writers[$0.writer] == nil }) {
            throw DeckError.corrupt(
                path: path,
                reason:
                    "a version of clock \(stray.clock) names writer \(stray.writer), which deck_writer lacks")
        }
        var transactions = found.map { version, changes in
            LoggedTransaction(
                clock: version.clock, writer: version.writer == 0 ? nil : writers[version.writer],
                changes: changes.sorted { $0.order.lexicographicallyPrecedes($1.order) }.map(\.change))
        }
        transactions.sort {
            // By clock, then by the writer id's bytes (the origin, nil, has none).
            $0.clock != $1.clock
                ? $0.clock < $1.clock
                : ($0.writer.map(DocumentDiffer.bytes) ?? []).lexicographicallyPrecedes(
                    $1.writer.map(DocumentDiffer.bytes) ?? [])
        }
        if let last, transactions.count > last { transactions.removeFirst(transactions.count - last) }
        return ChangeLog(transactions: transactions, token: try storeToken(merging: token))
    }

    /// Leaves out the changes `token` covers, and those at or below `floor`.
    private mutating func cover(_ token: ChangeLog.Token, floor: Int64) {
        coveredOtherwise = max(token.clock, floor)
        covered = [:]
        for (number, id) in writers {
            if let clock = token.writers[id] { covered[number] = max(clock, coveredOtherwise) }
        }
    }

    /// Finds the changes listed (``cover(_:floor:)``).
    private mutating func collect() throws {
        found = [:]
        let tables = DocumentDiffer.tableColumns(mapping)
        for (index, columns) in tables.enumerated() {
            guard let root = mapping.roots.first(where: { $0.table == columns.table }) else { continue }
            try records(columns, index: index, root: root.name)
        }
        let sorted = mapping.joinTables.sorted { $0.table.utf8.lexicographicallyPrecedes($1.table.utf8) }
        for (offset, (table, source, target)) in sorted.enumerated() {
            try links(table, source: source, target: target, order: tables.count + offset)
        }
    }

    /// Every version the store holds: `SELECT clock, writer` statements.
    private func versionSources() -> [String] {
        var sources = ["SELECT clock, writer FROM deck_inserts"]
        for columns in DocumentDiffer.tableColumns(mapping) {
            sources.append("SELECT clock, writer FROM \(quote(VersionDDL.rowsTable(columns.table)))")
            sources.append("SELECT clock, writer FROM \(quote(VersionDDL.cellsTable(columns.table)))")
        }
        for (table, _, _) in mapping.joinTables {
            sources.append("SELECT clock, writer FROM \(quote(VersionDDL.linksTable(table)))")
        }
        return sources
    }

    /// A clock below the `last` greatest clocks of the store's versions that are listed:
    /// changes after it are those of at least the last `last` transactions, unless some of
    /// those versions are of no change listed (several writers may also share a clock).
    private func bound(last: Int) throws -> Int64 {
        let union = versionSources().joined(separator: " UNION ALL ")
        let clock = try database.scalar(
            seen + "SELECT v.clock FROM (\(union)) v \(seenBy("v")) WHERE \(listed("v")) "
                + "GROUP BY v.clock ORDER BY v.clock DESC LIMIT 1 OFFSET ?", [.integer(Int64(last - 1))])
        return (clock?.int64).map { $0 - 1 } ?? -1
    }

    /// `token` with each writer's greatest clock in the store.
    private func storeToken(merging token: ChangeLog.Token) throws -> ChangeLog.Token {
        var result = token
        // The origin's records need no row of the bookkeeping (those above every range).
        result.writers[ChangeLog.Token.origin] = max(result.writers[ChangeLog.Token.origin] ?? -1, 0)
        try database.forEachRow(
            "SELECT v.writer, max(v.clock) FROM (\(versionSources().joined(separator: " UNION ALL "))) v "
                + "GROUP BY v.writer"
        ) { row in
            guard let id = writers[row.int64(at: 0)] else { return }
            result.writers[id] = max(result.writers[id] ?? -1, row.int64(at: 1))
        }
        return result
    }

    private mutating func add(_ change: LoggedChange, _ version: Version, order: [UInt8]) {
        found[version, default: []].append((order, change))
    }

    /// The records of one table with changes the log lists: inserts and updates of the records
    /// it holds, by the versions of their cells, and its tombstones.
    private mutating func records(_ columns: DocumentDiffer.TableColumns, index: Int, root: String) throws {
        let t = quote(columns.table)
        let literal = quoteLiteral(columns.table)
        let rows = quote(VersionDDL.rowsTable(columns.table))
        let cells = quote(VersionDDL.cellsTable(columns.table))
        // The records with a version listed (a superset: each version is checked below). The
        // statements below read them first (CROSS JOIN keeps SQLite from scanning the table in
        // key order instead, which costs the whole table when few changed).
        let keys =
            seen
                + """
                , keys(pk) AS (
                    SELECT x._pk FROM deck_inserts i \(seenBy("i")) CROSS JOIN \(t) x ON x._pk BETWEEN i.first AND i.last
                    WHERE i.tbl = \(literal) AND \(listed("i"))
                    UNION SELECT r._pk FROM \(rows) r \(seenBy("r")) WHERE r.alive % 2 = 1 AND \(listed("r"))
                    UNION SELECT c._pk FROM \(cells) c \(seenBy("c")) WHERE \(listed("c"))
                    UNION SELECT x._pk FROM (SELECT 0 AS clock, 0 AS writer) o \(seenBy("o")) CROSS JOIN \(t) x
                    WHERE \(listed("o"))
                        AND x._pk > coalesce((SELECT max(last) FROM deck_inserts WHERE tbl = \(literal)), 0)
                )
                """
        var versions: [Int64: [String: Version]] = [:]
        try database.forEachRow(
            keys
                + "SELECT c._pk, c.property, c.clock, c.writer FROM keys k CROSS JOIN \(cells) c ON c._pk = k.pk"
        ) { cell in
            versions[cell.int64(at: 0), default: [:]][cell.text(at: 1)] = Version(
                clock: cell.int64(at: 2), writer: cell.int64(at: 3))
        }
        let (selected, joins, offsets) = Self.columns(columns)
        let prefix = [UInt8(index >> 8), UInt8(index & 0xff)]
        try database.forEachRow(
            keys
                + """
                SELECT \(selected.joined(separator: ", ")) FROM keys k CROSS JOIN \(t) x ON x._pk = k.pk
                LEFT JOIN \(rows) r ON r._pk = x._pk AND r.alive % 2 = 1
                LEFT JOIN deck_inserts i ON i.tbl = \(literal)
                    AND i.last = (SELECT min(last) FROM deck_inserts WHERE tbl = \(literal) AND last >= x._pk)
                    AND i.first <= x._pk
                \(joins.joined(separator: " "))
                ORDER BY k.pk
                """
        ) { row in
            let key = row.int64(at: 0)
            guard let gid = DocumentMerger.globalID(row.value(at: 1)),
                let member = mapping.entities[row.text(at: 2)]
            else { return }
            let inserted = Version(clock: row.int64(at: 3), writer: row.int64(at: 4))
            var byVersion: [Version: [LoggedCell]] = [:]
            for cell in values(row, member: member, offsets: offsets) {
                let version = versions[key]?[cell.name] ?? inserted
                if lists(version) { byVersion[version, default: []].append(cell) }
            }
            if lists(inserted), byVersion[inserted] == nil { byVersion[inserted] = [] }
            let order = prefix + DocumentDiffer.bytes(gid)
            for (version, cells) in byVersion {
                add(
                    LoggedChange(
                        kind: version == inserted ? .inserted : .updated, entity: member.name, globalID: gid,
                        cells: cells),
                    version, order: order + [version == inserted ? 0 : 1])
            }
        }
        try database.forEachRow(
            seen + "SELECT d._gid, d.clock, d.writer FROM \(rows) d \(seenBy("d")) "
                + "WHERE d.alive % 2 = 0 AND \(listed("d"))"
        ) { row in
            guard let gid = DocumentMerger.globalID(row.value(at: 0)) else { return }
            add(
                LoggedChange(kind: .deleted, entity: root, globalID: gid),
                Version(clock: row.int64(at: 1), writer: row.int64(at: 2)),
                order: prefix + DocumentDiffer.bytes(gid) + [2])
        }
    }

    /// The columns a log reads of each record of table `columns`: key, global id, entity and
    /// version (its own row's, else its insert range's, else the origin's: spec 20.3), then
    /// every attribute (with a blob's size) and to-one target of the table (siblings share
    /// one), with the joins they need and where each property's columns begin.
    private static func columns(_ columns: DocumentDiffer.TableColumns) -> (
        selected: [String], joins: [String], offsets: [String: Int]
    ) {
        var selected = [
            "x._pk", "x._gid", "x._entity", "coalesce(r.clock, i.clock, 0)",
            "coalesce(r.writer, i.writer, 0)",
        ]
        var joins: [String] = []
        var offsets: [String: Int] = [:]
        for (name, type) in columns.attributes {
            offsets[name] = selected.count
            selected.append("x.\(quote(name))")
            // A blob's size, read with its digest (spec 8).
            selected.append(
                type == .data ? "(SELECT b.size FROM deck_blob b WHERE b.digest = x.\(quote(name)))" : "NULL")
        }
        for (column, destination) in columns.references {
            let alias = "d\(joins.count)"
            offsets[column] = selected.count
            joins.append("LEFT JOIN \(quote(destination)) \(alias) ON \(alias)._pk = x.\(quote(column))")
            selected += ["\(alias)._entity", "\(alias)._gid", "x.\(quote(column))"]
        }
        return (selected, joins, offsets)
    }

    /// The values in `row` (columns at `offsets`, by property) of the attributes and to-one
    /// relationships of entity `member`, in the schema's order.
    private func values(_ row: Statement, member: EntityMapping, offsets: [String: Int]) -> [LoggedCell] {
        var result: [LoggedCell] = []
        for attribute in member.attributes {
            guard let offset = offsets[attribute.name] else { continue }
            let size = row.value(at: offset + 1).int64 ?? -1
            let value = Value(sql: row.value(at: offset), type: attribute.type, epoch: epoch) { _ in size }
            result.append(LoggedCell(name: attribute.name, value: .value(value)))
        }
        for (_, storage) in member.relationships {
            guard case .ownColumn(let column) = storage, let offset = offsets[column] else { continue }
            if let entity = row.value(at: offset).string,
                let target = DocumentMerger.globalID(row.value(at: offset + 1))
            {
                result.append(LoggedCell(name: column, value: .record(entity: entity, globalID: target)))
            } else if let missing = row.value(at: offset + 2).int64 {
                result.append(LoggedCell(name: column, value: .missingRecord(missing)))
            } else {
                result.append(LoggedCell(name: column, value: .value(.null)))
            }
        }
        return result
    }

    /// The links of join table `table` with changes the log lists, by their records' global
    /// ids (a deleted record's from its tombstone).
    private mutating func links(_ table: String, source: String, target: String, order: Int) throws {
        let sourceRoot = mapping.roots.first { $0.table == source }?.name ?? source
        let targetRoot = mapping.roots.first { $0.table == target }?.name ?? target
        let (s, g) = (quote(source), quote(target))
        let (sr, gr) = (quote(VersionDDL.rowsTable(source)), quote(VersionDDL.rowsTable(target)))
        try database.forEachRow(
            seen
                + """
                SELECT coalesce(s._gid, sr._gid), coalesce(g._gid, gr._gid), l.alive, l.clock, l.writer,
                    s._entity, g._entity
                FROM \(quote(VersionDDL.linksTable(table))) l \(seenBy("l"))
                LEFT JOIN \(s) s ON s._pk = l.source LEFT JOIN \(sr) sr ON sr._pk = l.source
                LEFT JOIN \(g) g ON g._pk = l.target LEFT JOIN \(gr) gr ON gr._pk = l.target
                WHERE \(listed("l"))
                """
        ) { row in
            guard let from = DocumentMerger.globalID(row.value(at: 0)),
                let to = DocumentMerger.globalID(row.value(at: 1))
            else { return }
            add(
                LoggedChange(
                    kind: row.int64(at: 2) % 2 == 1 ? .linked : .unlinked,
                    entity: row.value(at: 5).string ?? sourceRoot, globalID: from,
                    relationship: table, target: to, targetEntity: row.value(at: 6).string ?? targetRoot),
                Version(clock: row.int64(at: 3), writer: row.int64(at: 4)),
                order: [UInt8(order >> 8), UInt8(order & 0xff)] + DocumentDiffer.bytes(from)
                    + DocumentDiffer.bytes(to))
        }
    }
}
