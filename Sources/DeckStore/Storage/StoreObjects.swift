import DeckSQLite
import Foundation

/// The schema objects a store holds compared with those its stored schema derives (spec:
/// sections 4.1 and 15). A store from elsewhere is hostile: a trigger, view, table or index that
/// the mapping does not derive could run on the next insert (a trigger zeroing `deck_blob.refs`
/// makes a save delete every blob file) or make reads lie, so it is corruption, and nobody opens
/// such a store.
enum StoreObjects {
    /// One row of `sqlite_schema`.
    struct Object: Equatable {
        let type: String
        let name: String
        let table: String
        /// The SQL text's bytes as stored (compared as bytes, never as repaired or normalised text).
        let sql: [UInt8]?
    }

    /// How the store's objects differ from the derived ones.
    struct Difference: Equatable {
        enum Kind: Equatable {
            /// The schema derives the object; the store lacks it.
            case missing
            /// The store has an object of that name whose type, table or SQL differs.
            case altered(actual: Object)
            /// The store has an object the schema does not derive.
            case unknown
        }

        let kind: Kind
        /// The derived object (missing, altered) or the store's (unknown).
        let object: Object

        /// The verifier's finding code, e.g. `trigger-unknown`.
        var code: String {
            switch kind {
            case .missing: "\(object.type)-missing"
            case .altered: "\(object.type)-altered"
            case .unknown: "\(object.type)-unknown"
            }
        }

        /// Every difference is corruption but a missing index that enforces nothing (only unique
        /// indexes enforce a data rule): readers never depend on indexes, and garbage collection
        /// creates it again.
        var isCorruption: Bool {
            !(kind == .missing && object.type == "index" && !object.name.hasSuffix(".unique"))
        }

        /// What is wrong and how to fix it.
        var message: String {
            let kindName = object.type
            switch kind {
            case .missing:
                return isCorruption
                    ? "the schema requires this \(kindName), but the store does not have it"
                    : "the schema requires this index, but the store does not have it; 'deck gc' creates it"
            case .altered(let actual):
                if actual.type != object.type {
                    return
                        "the schema requires a \(kindName) of this name, but the store has a \(actual.type) "
                        + "(\(StoreObjects.removal(actual)))"
                }
                return "this \(kindName)'s definition differs from the one the schema derives "
                    + "(a package from elsewhere may be hostile; \(StoreObjects.removal(actual)))"
            case .unknown:
                return
                    "this \(kindName) is not derived from the stored schema (a package from elsewhere may be "
                    + "hostile; \(StoreObjects.removal(object)))"
            }
        }
    }

    /// SQLite's own tables that `ANALYZE` creates, with SQLite's definitions: they only guide the
    /// query planner, so a store may hold them. Any other `sqlite_` object is not derived.
    static let permittedSQLiteTables: [String: [UInt8]] = [
        "sqlite_stat1": Array("CREATE TABLE sqlite_stat1(tbl,idx,stat)".utf8),
        "sqlite_stat4": Array("CREATE TABLE sqlite_stat4(tbl,idx,neq,nlt,ndlt,sample)".utf8),
    ]

    /// Advice for removing an object one does not want, without running it.
    static func removal(_ object: Object) -> String {
        guard ["table", "index", "trigger", "view"].contains(object.type) else {
            return "the store cannot be trusted"
        }
        let statement = "DROP \(object.type.uppercased()) \(quote(object.name))"
        return "if you trust the package, remove it with sqlite3 store.sqlite '\(statement)', "
            + "otherwise do not use it"
    }

    /// The version whose objects a store of `formatVersion` is compared with: its own, or, for a
    /// store newer than this library (which a reader may read when its manifest allows it), the
    /// newest this library knows.
    static func comparedVersion(_ formatVersion: Int) -> Int {
        min(formatVersion, PackageLayout.formatVersion)
    }

    /// An empty store for `mapping` of `formatVersion`, in memory: what SQLite makes of the
    /// derived statements (for version 2, `sqlite_sequence` included: SQLite creates it with the
    /// first `AUTOINCREMENT` table). See ``ExpectedStore``.
    static func expectedStore(
        for mapping: SchemaMapping, formatVersion: Int, partSize: Int = ExpectedStore.partSize
    ) throws -> ExpectedStore {
        let version = comparedVersion(formatVersion)
        var metadata = [StoreDDL.metadata]
        if version >= 3 { metadata.append(SchemaBookkeeping.historyTable) }
        let versioned = version >= VersionDDL.firstFormatVersion
        if versioned { metadata.append(VersionDDL.tables) }
        // Each entity table and join table with what is made on it: its indexes, its triggers and
        // its bookkeeping (spec 4.1 and 20.5 give the order; the parts keep it).
        var groups = [metadata]
        for root in mapping.roots {
            var group = StoreDDL.tableStatements(root, mapping: mapping, formatVersion: version).all
            if versioned {
                group += VersionDDL.tableStatements(
                    root.table, columns: VersionDDL.propertyColumns(root, mapping: mapping),
                    formatVersion: version)
            }
            groups.append(group)
        }
        for (table, source, target) in mapping.joinTables {
            var group = StoreDDL.joinTableStatements(table, source: source, target: target)
            if versioned { group += VersionDDL.joinTableStatements(table) }
            groups.append(group)
        }
        return try ExpectedStore(groups, partSize: partSize)
    }

    /// The objects of `expected` (see ``expectedStore(for:formatVersion:)``), by name.
    static func derived(from expected: ExpectedStore) throws -> [String: Object] {
        var result: [String: Object] = [:]
        for part in expected.parts {
            for object in try objects(part) { result[object.name] = object }
        }
        return result
    }

    /// The objects a store for `mapping` of `formatVersion` has, by name, as SQLite records them.
    static func derived(for mapping: SchemaMapping, formatVersion: Int) throws -> [String: Object] {
        let expected = try expectedStore(for: mapping, formatVersion: formatVersion)
        defer { expected.close() }
        return try derived(from: expected)
    }

    /// Every row of a store's `sqlite_schema`.
    static func objects(_ db: Database) throws -> [Object] {
        try db.rows(
            "SELECT type, name, tbl_name, CAST(sql AS BLOB), typeof(sql) FROM sqlite_schema ORDER BY name"
        ).map { row in
            let sql: [UInt8]? =
                switch row[3] {
                case .blob(let data): [UInt8](data)
                case .null: nil
                default: row[4].string == "text" ? [] : nil
                }
            return Object(
                type: row[0].string ?? "?", name: row[1].string ?? "", table: row[2].string ?? "",
                sql: sql)
        }
    }

    /// How the store's objects differ from the derived ones, sorted by name.
    /// - Parameter formatVersion: the store's; for a store newer than this library, objects named
    ///   `deck_…` that this library does not derive are a later version's bookkeeping, which a
    ///   reader ignores (spec: section 4.1, "Room for later versions").
    static func differences(
        _ db: Database, derived: [String: Object], formatVersion: Int = PackageLayout.formatVersion
    ) throws -> [Difference] {
        var result: [Difference] = []
        var seen: Set<String> = []
        let laterBookkeeping = formatVersion > PackageLayout.formatVersion
        for object in try objects(db) {
            seen.insert(object.name)
            if let wanted = derived[object.name] {
                if !same(wanted, object) {
                    result.append(Difference(kind: .altered(actual: object), object: wanted))
                }
            } else if laterBookkeeping,
                object.name.utf8.prefix(5).map({ (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 })
                    == Array("deck_".utf8)
            {
                continue
            } else if let sql = permittedSQLiteTables[object.name], object.type == "table",
                object.table.utf8.elementsEqual(object.name.utf8), same(sql, object.sql)
            {
                continue
            } else {
                result.append(Difference(kind: .unknown, object: object))
            }
        }
        for (name, object) in derived where !seen.contains(name) {
            result.append(Difference(kind: .missing, object: object))
        }
        return result.sorted { $0.object.name < $1.object.name }
    }

    /// The differences that make a store unusable: every one but a missing non-unique index.
    static func firstRefusal(_ db: Database, mapping: SchemaMapping, formatVersion: Int) throws
        -> Difference?
    {
        try differences(
            db, derived: derived(for: mapping, formatVersion: formatVersion), formatVersion: formatVersion
        ).first { $0.isCorruption }
    }

    /// Names compare by their bytes: Swift's `==` treats canonically equivalent text as equal,
    /// SQLite does not.
    static func same(_ a: Object, _ b: Object) -> Bool {
        a.type.utf8.elementsEqual(b.type.utf8) && a.name.utf8.elementsEqual(b.name.utf8)
            && a.table.utf8.elementsEqual(b.table.utf8) && same(a.sql, b.sql)
    }

    /// Two SQL texts are the same when their token sequences are (spec: section 4.1).
    static func same(_ a: [UInt8]?, _ b: [UInt8]?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): a == b || tokens(a) == tokens(b)
        default: false
        }
    }

    /// SQLite's tokens of `sql`, compared as the spec says: whitespace and comments between
    /// tokens dropped; keywords and bare identifiers in upper case (SQLite reads them
    /// case-insensitively); quoted identifiers, string and blob literals exactly as written.
    /// Any byte SQLite would not read as part of a token stays a token of its own, so text that
    /// differs in meaning never compares equal.
    static func tokens(_ bytes: [UInt8]) -> [[UInt8]] {
        var tokens: [[UInt8]] = []
        var i = 0
        func isWord(_ byte: UInt8) -> Bool {
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == 0x5F || byte == 0x24 || byte >= 0x80
        }
        while i < bytes.count {
            let byte = bytes[i]
            let next: UInt8? = i + 1 < bytes.count ? bytes[i + 1] : nil
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0C, 0x0D:
                i += 1
            case UInt8(ascii: "-") where next == UInt8(ascii: "-"):
                while i < bytes.count, bytes[i] != 0x0A { i += 1 }
            case UInt8(ascii: "/") where next == UInt8(ascii: "*"):
                i += 2
                while i < bytes.count,
                    !(bytes[i] == UInt8(ascii: "*") && i + 1 < bytes.count
                        && bytes[i + 1] == UInt8(ascii: "/"))
                {
                    i += 1
                }
                i = min(bytes.count, i + 2)
            case UInt8(ascii: "'"), UInt8(ascii: "\""), UInt8(ascii: "`"), UInt8(ascii: "["):
                // A quoted token; a doubled quote inside stands for one ([…] has no escape).
                let close = byte == UInt8(ascii: "[") ? UInt8(ascii: "]") : byte
                let start = i
                i += 1
                while i < bytes.count {
                    if bytes[i] == close {
                        if close != UInt8(ascii: "]"), i + 1 < bytes.count, bytes[i + 1] == close {
                            i += 2
                            continue
                        }
                        i += 1
                        break
                    }
                    i += 1
                }
                tokens.append(Array(bytes[start..<i]))
            case _ where isWord(byte):
                let start = i
                while i < bytes.count, isWord(bytes[i]) { i += 1 }
                // x'…' and X'…' are blob literals: one token with the quoted part.
                if i - start == 1, byte == UInt8(ascii: "x") || byte == UInt8(ascii: "X"), i < bytes.count,
                    bytes[i] == UInt8(ascii: "'")
                {
                    let quoted = i
                    i += 1
                    while i < bytes.count, bytes[i] != UInt8(ascii: "'") { i += 1 }
                    i = min(bytes.count, i + 1)
                    tokens.append([UInt8(ascii: "X")] + bytes[quoted..<i])
                    continue
                }
                // ASCII letters only: SQLite folds no other case.
                tokens.append(bytes[start..<i].map { (0x61...0x7A).contains($0) ? $0 - 0x20 : $0 })
            default:
                // Operators of two or three characters are one token each.
                let rest = bytes[i...]
                if let op = ["->>", "->", "<=", ">=", "==", "!=", "<>", "||", "<<", ">>"].first(where: {
                    rest.starts(with: $0.utf8)
                }) {
                    tokens.append(Array(op.utf8))
                    i += op.utf8.count
                } else {
                    tokens.append([byte])
                    i += 1
                }
            }
        }
        return tokens
    }
}

/// The empty store a schema derives, made by SQLite in memory, in parts.
///
/// SQLite scans its schema table for every object it creates, so one database of *n* objects
/// costs *n*²/2 row visits: the 9,000 objects of a schema at the entity limit (spec 5.9) took
/// 5 seconds to make, on every open. A trigger's or index's table must be in its database, but
/// what a trigger's body names need not be (SQLite resolves it when the trigger runs), so the
/// statements are made in parts of a few hundred: each entity or join table with its indexes,
/// triggers and bookkeeping in one part, the metadata tables in the first. The objects are
/// SQLite's own records of them, the same as in one database.
struct ExpectedStore {
    /// At most this many statements a part, unless one table's group has more.
    static let partSize = 256

    private(set) var parts: [Database] = []
    /// The part that holds each table, by name.
    private var tables: [String: Int] = [:]

    init(_ groups: [[String]], partSize: Int = Self.partSize) throws {
        var part: Database?
        var count = 0
        do {
            for group in groups {
                if part == nil || count + group.count > partSize {
                    let database = try Database(path: ":memory:", mode: .create)
                    parts.append(database)
                    part = database
                    count = 0
                }
                for statement in group { try part?.execute(statement) }
                count += group.count
            }
            for (index, database) in parts.enumerated() {
                for row in try database.rows("SELECT name FROM sqlite_schema WHERE type = 'table'") {
                    if let name = row[0].string { tables[name] = index }
                }
            }
        } catch {
            for database in parts { database.close() }
            throw error
        }
    }

    /// The part holding table `name`, for its columns.
    func database(holding name: String) -> Database? { tables[name].map { parts[$0] } }

    func close() { for database in parts { database.close() } }
}
