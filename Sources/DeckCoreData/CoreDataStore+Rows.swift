import DeckSQLite
import DeckStore
import DeckSupport
import Foundation

/// Streaming readers of a store's rows and links, following a ``CoreDataImportPlan``: one row
/// at a time from the private copy, never all of a table in memory.
///
/// Values are Deck's: integers as `.integer`, booleans (0/1) as `.bool`, floats and doubles as
/// `.double`, decimals as `.decimal` (Core Data's SQLite store keeps them as a binary64, read as
/// its shortest decimal text), strings as `.string`, dates as `.date` (seconds since
/// 2001-01-01, exactly as stored), UUIDs (16-byte blobs) as `.uuid`, URIs (text) as `.url`,
/// binary data and transformable values as `.data`. An attribute that allows external storage
/// starts with a byte saying where its bytes are: `0x01`, inline (the rest of the value);
/// `0x02`, in a file of `.<StoreName>_SUPPORT/_EXTERNAL_DATA/` whose name follows up to a NUL
/// byte, given as `.file` of the private copy of that file. NULL is nil.
extension CoreDataStore {
    /// Calls `body` for every row of entity `entity` (a Deck name of the plan) and, unless
    /// `includingSubentities` is false, of the entities below it, in `Z_PK` order, with the
    /// row's primary key, its own entity's Deck name
    /// and the values of `attributes` (Deck names of the entity's attributes, inherited ones
    /// included, in the order wanted).
    ///
    /// For a hierarchy's root every row of its table is read, and a row whose `Z_ENT` names no
    /// entity of the hierarchy is refused.
    ///
    /// - Throws: ``CoreDataError`` (`badRow`, `badExternalData`, `badStoreTable`), or what `body`
    ///   throws.
    package func forEachRow(
        of entity: String, attributes: [String], plan: CoreDataImportPlan, includingSubentities: Bool = true,
        _ body: (_ primaryKey: Int64, _ entity: String, _ values: [Value?]) throws -> Void
    ) throws {
        try forEachRow(
            of: entity, attributes: attributes, toOnes: [], plan: plan,
            includingSubentities: includingSubentities
        ) { primaryKey, entity, values, _ in try body(primaryKey, entity, values) }
    }

    /// ``forEachRow(of:attributes:plan:includingSubentities:_:)``, also giving the target keys
    /// of the to-one relationships `toOnes` (Deck names of relationships the entity declares or
    /// inherits and reads from its own table, ``CoreDataImportPlan/toOneColumns(of:)``; nil:
    /// none), in that order.
    package func forEachRow(
        of entity: String, attributes: [String], toOnes: [String], plan: CoreDataImportPlan,
        includingSubentities: Bool = true,
        _ body: (_ primaryKey: Int64, _ entity: String, _ values: [Value?], _ links: [Int64?]) throws -> Void
    ) throws {
        guard let entityPlan = plan.entity(named: entity) else {
            throw CoreDataError(.badModel, "the import plan has no entity '\(entity)'")
        }
        var columns: [CoreDataImportPlan.AttributeColumn] = []
        for name in attributes {
            guard let column = entityPlan.attributes.first(where: { $0.name == name }) else {
                throw CoreDataError(
                    .badModel, "the import plan's entity '\(entity)' has no stored attribute '\(name)'")
            }
            columns.append(column)
        }
        let known = plan.toOneColumns(of: entity)
        var links: [CoreDataImportPlan.ToOneColumn] = []
        for name in toOnes {
            guard let column = known.first(where: { $0.column.name == name })?.column else {
                throw CoreDataError(
                    .badModel, "the import plan's entity '\(entity)' reads no to-one relationship '\(name)'")
            }
            links.append(column)
        }
        var names: [Int64: String] = [:]
        for other in plan.entities where other.root == entityPlan.root { names[other.number] = other.name }
        let isRoot = entityPlan.root == entityPlan.name
        let filter =
            !includingSubentities
            ? " WHERE Z_ENT = \(entityPlan.number)"
            : isRoot ? "" : " WHERE Z_ENT IN (\(entityPlan.numbers.map(String.init).joined(separator: ", ")))"
        // A generated order attribute's value comes from its join table, read first.
        let orders = try columns.map { column throws -> [Int64: String]? in
            try column.joinOrder.map { try positions($0) }
        }
        let sql =
            "SELECT Z_PK, Z_ENT"
            + columns.map { ", " + ($0.joinOrder == nil ? quote($0.column) : "NULL") }.joined()
            + links.map { ", " + quote($0.column) }.joined() + " FROM "
            + quote(entityPlan.table) + filter + " ORDER BY Z_PK"
        var values: [Value?] = []
        values.reserveCapacity(columns.count)
        var targets: [Int64?] = []
        targets.reserveCapacity(links.count)
        try reading(entityPlan.table) {
            try database.forEachRow(sql) { statement in
                guard let primaryKey = statement.value(at: 0).int64 else {
                    throw CoreDataError(
                        .badRow,
                        "\(sourceURL.path): a row of \(entityPlan.table) has a Z_PK that is not an integer")
                }
                let number = statement.value(at: 1)
                guard let concrete = number.int64.flatMap({ names[$0] }) else {
                    throw CoreDataError(
                        .badRow,
                        "\(sourceURL.path): the row Z_PK \(primaryKey) of \(entityPlan.table) has Z_ENT \(number), "
                            + "which names no entity stored in that table (\(names.keys.sorted().map(String.init).joined(separator: ", ")))"
                    )
                }
                values.removeAll(keepingCapacity: true)
                for (index, column) in columns.enumerated() {
                    if let order = orders[index] {
                        values.append(order[primaryKey].map(Value.json))
                        continue
                    }
                    var repaired = false
                    let cell = statement.value(at: index + 2, repaired: &repaired)
                    if repaired {
                        rowNotes.add(
                            .notUTF8, entity: entityPlan.coreDataName, column, primaryKey: primaryKey)
                    }
                    values.append(
                        try value(cell, column, entity: entityPlan.coreDataName, primaryKey: primaryKey))
                }
                targets.removeAll(keepingCapacity: true)
                for (index, link) in links.enumerated() {
                    let target = statement.value(at: columns.count + 2 + index)
                    if case .null = target {
                        targets.append(nil)
                    } else if let key = target.int64 {
                        targets.append(key)
                    } else {
                        throw Self.notAKey(
                            target, path: sourceURL.path, entity: entityPlan.coreDataName, row: primaryKey,
                            link)
                    }
                }
                try body(primaryKey, concrete, values, targets)
            }
        }
    }

    /// For each record that has related records in the ordered many-to-many `order` describes,
    /// the JSON array of their ids (`Z_PK`) in Core Data's order.
    private func positions(_ order: CoreDataImportPlan.JoinOrder) throws -> [Int64: String] {
        let owner = quote(order.ownerColumn)
        let element = quote(order.elementColumn)
        let sql =
            "SELECT \(owner), \(element) FROM \(quote(order.table)) ORDER BY \(owner), "
            + "\(quote(order.orderColumn)), \(element)"
        var lists: [Int64: [Int64]] = [:]
        try reading(order.table) {
            try database.forEachRow(sql) { statement in
                // A pair that is not two keys is refused when the links are read.
                guard let key = statement.value(at: 0).int64, let target = statement.value(at: 1).int64 else {
                    return
                }
                lists[key, default: []].append(target)
            }
        }
        return lists.mapValues { "[" + $0.map(String.init).joined(separator: ",") + "]" }
    }

    /// The external data files that the rows of `entity` (its own, not its subentities') name in
    /// `attributes`, in the order ``forEachRow(of:attributes:toOnes:plan:includingSubentities:_:)``
    /// meets them, at most `limit` (a name may repeat). A value that would be refused is left
    /// out: the row loop reports it.
    package func externalFiles(
        of entity: String, attributes: [String], plan: CoreDataImportPlan, limit: Int
    ) throws -> [URL] {
        guard let entityPlan = plan.entity(named: entity), limit > 0 else { return [] }
        let columns = attributes.compactMap { name in
            entityPlan.attributes.first { $0.name == name && $0.usesExternalStorageEncoding }
        }
        guard !columns.isEmpty else { return [] }
        let sql =
            "SELECT Z_PK" + columns.map { ", " + quote($0.column) }.joined() + " FROM "
            + quote(entityPlan.table) + " WHERE Z_ENT = \(entityPlan.number) ORDER BY Z_PK"
        var files: [URL] = []
        do {
            try reading(entityPlan.table) {
                try database.forEachRow(sql) { statement in
                    let primaryKey = statement.value(at: 0).int64 ?? 0
                    for (index, column) in columns.enumerated() {
                        guard case .blob(let bytes) = statement.value(at: index + 1), bytes.first == 0x02,
                            case .file(let url)? = try? externalValue(
                                bytes, column, entity: entityPlan.coreDataName, primaryKey: primaryKey)
                        else { continue }
                        files.append(url)
                        if files.count == limit { throw ScanFull() }
                    }
                }
            }
        } catch is ScanFull {}
        return files
    }

    /// Ends ``externalFiles(of:attributes:plan:limit:)``'s scan at its limit.
    private struct ScanFull: Error {}

    /// Calls `body` for every to-one link of the store: the declaring entity's Deck name, the
    /// source row's `Z_PK`, the relationship's Deck name and the target's `Z_PK`. A one-to-one
    /// pair is given from each side whose table holds a key. Relationships named in `skipping`
    /// (`Entity.relationship`, Deck names of the declaring entity and the relationship) are not
    /// read.
    package func forEachToOne(
        plan: CoreDataImportPlan, skipping: Set<String> = [],
        _ body: (_ entity: String, _ primaryKey: Int64, _ relationship: String, _ target: Int64) throws ->
            Void
    ) throws {
        for entity in plan.entities {
            for toOne in entity.toOnes where !skipping.contains(entity.name + "." + toOne.name) {
                let column = quote(toOne.column)
                let sql =
                    "SELECT Z_PK, \(column) FROM \(quote(entity.table)) WHERE Z_ENT IN "
                    + "(\(entity.numbers.map(String.init).joined(separator: ", "))) AND \(column) IS NOT NULL ORDER BY Z_PK"
                try reading(entity.table) {
                    try database.forEachRow(sql) { statement in
                        let source = statement.value(at: 0)
                        let target = statement.value(at: 1)
                        guard let primaryKey = source.int64, let targetKey = target.int64 else {
                            throw Self.notAKey(
                                target, path: sourceURL.path, entity: entity.coreDataName, row: source, toOne)
                        }
                        try body(entity.name, primaryKey, toOne.name, targetKey)
                    }
                }
            }
        }
    }

    /// Calls `body` for every link of every many-to-many relationship (and to-many without an
    /// inverse), once per link (not once per side): the declaring entity's Deck name, the
    /// source's `Z_PK`, the relationship's Deck name and the destination's `Z_PK`; in Core Data's
    /// order when either side is ordered (grouped by the side that owns the order).
    package func forEachToMany(
        plan: CoreDataImportPlan,
        _ body: (_ entity: String, _ primaryKey: Int64, _ relationship: String, _ target: Int64) throws ->
            Void
    ) throws {
        for join in plan.joinTables {
            let source = quote(join.sourceColumn)
            let destination = quote(join.destinationColumn)
            let order = join.orderBy.map(quote).joined(separator: ", ")
            let sql = "SELECT \(source), \(destination) FROM \(quote(join.table)) ORDER BY \(order)"
            try reading(join.table) {
                try database.forEachRow(sql) { statement in
                    let from = statement.value(at: 0)
                    let to = statement.value(at: 1)
                    guard let fromKey = from.int64, let toKey = to.int64 else {
                        throw CoreDataError(
                            .badRow,
                            "\(sourceURL.path): the join table \(join.table) of \(join.entity).\(join.relationship) "
                                + "holds (\(from), \(to)) where Core Data writes two primary keys")
                    }
                    try body(join.entity, fromKey, join.relationship, toKey)
                }
            }
        }
    }

    /// Runs `body`, turning an SQLite error into a ``CoreDataError`` naming `table`.
    private func reading(_ table: String, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as SQLiteError {
            throw CoreDataError(
                .badStoreTable, "\(sourceURL.path): reading \(table) failed: \(error.message)")
        }
    }

    /// The Deck value of `cell`, a value of `column` in row `primaryKey` of `entity`.
    func value(
        _ cell: SQLValue, _ column: CoreDataImportPlan.AttributeColumn, entity: String, primaryKey: Int64
    ) throws(CoreDataError) -> Value? {
        if cell.isNull { return nil }
        func wrong(_ expected: String) -> CoreDataError {
            CoreDataError(
                .badRow,
                "\(sourceURL.path): \(entity) #\(primaryKey), \(column.coreDataName) (column \(column.column)): "
                    + "a \(cell.storageClass) value where Core Data writes \(expected) for an attribute of type "
                    + "\(column.coreDataType)"
            )
        }
        switch CellKind(column.coreDataType) {
        case .integer:
            if case .integer(let v) = cell { return .integer(v) }
            throw wrong("an integer")
        case .boolean:
            if case .integer(let v) = cell, v == 0 || v == 1 { return .bool(v == 1) }
            throw wrong("0 or 1")
        case .real:
            switch cell {
            case .integer(let v): return .double(Double(v))
            case .real(let v): return .double(v)
            default: throw wrong("a number")
            }
        case .decimal:
            switch cell {
            case .integer(let v): return .decimal(Decimal(v))
            case .real(let v) where v.isFinite:
                if let decimal = Decimal(string: "\(v)", locale: Locale(identifier: "en_US_POSIX")) {
                    return .decimal(decimal)
                }
                throw wrong("a number")
            case .text(let text):
                if let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")),
                    !decimal.isNaN
                {
                    return .decimal(decimal)
                }
                throw wrong("a number")
            default: throw wrong("a number")
            }
        case .string:
            if case .text(let v) = cell { return .string(v) }
            throw wrong("text")
        case .date:
            switch cell {
            case .integer(let v): return .date(Timestamp(timeIntervalSinceReferenceDate: Double(v)))
            case .real(let v) where v.isFinite: return .date(Timestamp(timeIntervalSinceReferenceDate: v))
            default: throw wrong("seconds since 2001-01-01")
            }
        case .uuid:
            if case .blob(let bytes) = cell, bytes.count == 16 {
                let b = [UInt8](bytes)
                return .uuid(
                    UUID(
                        uuid: (
                            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                            b[13],
                            b[14], b[15]
                        )))
            }
            throw wrong("a 16-byte blob")
        case .uri:
            if case .text(let text) = cell, let url = URL(string: text) { return .url(url) }
            throw wrong("a URI as text")
        case .data:
            guard case .blob(let bytes) = cell else { throw wrong("a blob") }
            guard column.usesExternalStorageEncoding else { return .data(bytes) }
            let value = try externalValue(bytes, column, entity: entity, primaryKey: primaryKey)
            if bytes.first == 0x02, let end = bytes.dropFirst().firstIndex(of: 0),
                end != bytes.index(before: bytes.endIndex)
            {
                rowNotes.add(.bytesAfterFileName, entity: entity, column, primaryKey: primaryKey)
            }
            return value
        case .unsupported:
            throw wrong("nothing Deck imports")
        }
    }

    /// An external-storage value: `0x01` and the bytes, or `0x02` and a NUL-terminated file name.
    func externalValue(
        _ bytes: Data, _ column: CoreDataImportPlan.AttributeColumn, entity: String, primaryKey: Int64
    ) throws(CoreDataError) -> Value {
        // Only on the error paths: building the text for every value costs more than reading it.
        var place: String { "\(sourceURL.path): \(entity) #\(primaryKey), \(column.coreDataName)" }
        var directory: String { Self.externalDataSource(of: sourceURL).path }
        guard let marker = bytes.first else {
            throw CoreDataError(
                .badExternalData,
                "\(place): an empty value where Core Data writes 0x01 (inline bytes) or 0x02 (a file name) first"
            )
        }
        switch marker {
        case 0x01:
            return .data(Data(bytes.dropFirst()))
        case 0x02:
            let rest = bytes.dropFirst()
            guard let end = rest.firstIndex(of: 0) else {
                throw CoreDataError(
                    .badExternalData, "\(place): the external file name has no NUL byte at its end")
            }
            guard let name = String(data: Data(rest[rest.startIndex..<end]), encoding: .utf8), !name.isEmpty,
                name != ".", !name.contains("/"), !name.contains(".."), !name.contains("\\")
            else {
                throw CoreDataError(
                    .badExternalData,
                    "\(place): the external file name \(String(decoding: rest[rest.startIndex..<end], as: UTF8.self).debugDescription) "
                        + "is not a plain file name of \(directory) (empty, '.', not UTF-8, or with '/' or '..'): refused"
                )
            }
            if let reason = refusedExternalFiles[name] {
                throw CoreDataError(
                    .badExternalData, "\(place): the external data file \(name) is refused: \(reason)")
            }
            guard externalFiles.readable.contains(name) else {
                throw CoreDataError(
                    .badExternalData,
                    "\(place): the external data file \(name) is missing from \(directory); "
                        + "copy the store together with its .\(sourceURL.deletingPathExtension().lastPathComponent)_SUPPORT folder"
                )
            }
            return .file(externalDataDirectory.appendingPathComponent(name, isDirectory: false))
        default:
            throw CoreDataError(
                .badExternalData,
                "\(place): an external-storage value starting with the byte \(String(format: "0x%02x", marker)); "
                    + "Core Data writes 0x01 (inline bytes) or 0x02 (a file name): refused rather than guessed"
            )
        }
    }

    /// A to-one column's value that is not the target's `Z_PK`.
    private static func notAKey(
        _ value: SQLValue, path: String, entity: String, row: CustomStringConvertible,
        _ toOne: CoreDataImportPlan.ToOneColumn
    ) -> CoreDataError {
        CoreDataError(
            .badRow,
            "\(path): \(entity) #\(row), \(toOne.coreDataName) (column \(toOne.column)): a \(value.storageClass) "
                + "where Core Data writes the target's Z_PK, an integer")
    }

}

/// How a cell of a Core Data type is read, decided once per type: matching
/// ``CoreDataAttributeType`` (a struct) case by case for every cell cost more than the read.
enum CellKind {
    case integer, boolean, real, decimal, string, date, uuid, uri, data, unsupported

    init(_ type: CoreDataAttributeType) {
        switch type.rawValue {
        case 100, 200, 300: self = .integer
        case 800: self = .boolean
        case 500, 600: self = .real
        case 400: self = .decimal
        case 700: self = .string
        case 900: self = .date
        case 1100: self = .uuid
        case 1200: self = .uri
        case 1000, 1800: self = .data
        default: self = .unsupported
        }
    }
}

/// What the row readers carried approximately, by entity, property and kind, each with how often
/// and the first row: notes for the import's report.
package struct RowNotes {
    package enum Kind: Hashable {
        /// Text that is not valid UTF-8, read with each invalid sequence as U+FFFD.
        case notUTF8
        /// An external file reference with bytes after its file name's NUL, which were ignored.
        case bytesAfterFileName
    }

    package struct Entry {
        package let entity: String
        package let property: String
        /// The property's name in the package.
        package let deckProperty: String
        package let kind: Kind
        package var count: Int
        package let firstKey: Int64

        /// What happened, for the report.
        package var reason: String {
            let values = count == 1 ? "1 value" : "\(count) values"
            switch kind {
            case .notUTF8:
                return "\(values) not valid UTF-8 (the first in the row Z_PK \(firstKey)); "
                    + "each invalid byte sequence was imported as U+FFFD"
            case .bytesAfterFileName:
                return "\(values) with bytes after the external file name's NUL (the first in the row "
                    + "Z_PK \(firstKey)); the file was imported and those bytes ignored"
            }
        }
    }

    /// In the order first met.
    package private(set) var entries: [Entry] = []
    private var positions: [String: Int] = [:]

    mutating func add(
        _ kind: Kind, entity: String, _ column: CoreDataImportPlan.AttributeColumn, primaryKey: Int64
    ) {
        let key = "\(kind) \(entity).\(column.coreDataName)"
        if let position = positions[key] {
            entries[position].count += 1
        } else {
            positions[key] = entries.count
            entries.append(
                Entry(
                    entity: entity, property: column.coreDataName, deckProperty: column.name, kind: kind,
                    count: 1,
                    firstKey: primaryKey))
        }
    }
}
