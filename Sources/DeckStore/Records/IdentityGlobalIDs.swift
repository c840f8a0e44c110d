import DeckSQLite
import DeckSupport
import Foundation

/// Global ids made from a new record's unique values (spec 6.10, "Global ids from unique
/// values"), so that copies of a document that each insert "the same" record (a tag named
/// "verbs" on two devices) insert one record, which a merge joins like any record both copies
/// hold, where random ids would make two records that break the constraint.
///
/// The id is a version 8 UUID: the first 16 bytes of the SHA-256 of `deck-unique-gid`, the
/// document id, the entity and the constraint's attribute names, each followed by a NUL byte,
/// then the constraint's values as stored (``append(_:)``), then the *generation* in decimal and
/// a NUL byte. The generation is the least one whose id no record of the table and no tombstone
/// holds, so that a record inserted again after one with those values was deleted, or changed
/// them, gets an id of its own, the same in every copy that did the same.
///
/// Not thread-safe: the writer's connection owns it (``InsertStatements``).
final class IdentityGlobalIDs {
    private let hasher = SHA256Hasher()
    private let documentID: String
    private var input: [UInt8] = []
    /// The latest table's lookup of an id among its records and tombstones (a save inserts in
    /// runs of one entity).
    private var lastLookup: (table: String, statement: Statement)?

    init(documentID: String) {
        self.documentID = documentID
    }

    /// The id of a new record of `mapping` whose attribute cells, as stored, are `cells` (in the
    /// order of its attributes); nil when no identity constraint of the entity has all its values
    /// (the record then gets a random id).
    func id(for mapping: EntityMapping, cells: [SQLValue], in database: Database) throws(SQLiteError) -> UUID?
    {
        guard
            let key = mapping.identityKeys.first(where: { key in
                key.positions.allSatisfy { cells[$0] != .null }
            })
        else { return nil }
        input.removeAll(keepingCapacity: true)
        for part in ["deck-unique-gid", documentID, mapping.name, key.names] {
            input.append(contentsOf: part.utf8)
            input.append(0)
        }
        for position in key.positions { append(cells[position]) }
        let fixed = input.count
        let taken: Statement
        if let last = lastLookup, last.table == mapping.table {
            taken = last.statement
        } else {
            taken = try database.cachedStatement(
                "SELECT 1 FROM \(quote(mapping.table)) WHERE _gid = ?1 "
                    + "UNION ALL SELECT 1 FROM \(quote(VersionDDL.rowsTable(mapping.table))) WHERE _gid = ?1 LIMIT 1"
            )
            lastLookup = (mapping.table, taken)
        }
        var generation = 0
        while true {
            input.removeSubrange(fixed...)
            input.append(contentsOf: String(generation).utf8)
            input.append(0)
            hasher.reset()
            input.withUnsafeBytes { hasher.update($0) }
            let id = hasher.finalize().nameBasedUUID
            taken.rewind()
            try taken.bind(globalID: id, at: 1)
            let isTaken = try taken.step()
            taken.rewind()
            if !isTaken { return id }
            generation += 1
        }
    }

    /// A value as the id's input holds it: a byte for its type (1 integer, 2 real, 3 text,
    /// 4 blob), then an integer's or a real's 8 bytes, most significant first (a real's IEEE 754
    /// binary64 bits, −0 as +0, which SQLite compares equal), or the count of a text's UTF-8 bytes
    /// or a blob's bytes as 8 such bytes and then the bytes.
    private func append(_ value: SQLValue) {
        switch value {
        case .null: return
        case .integer(let n):
            input.append(1)
            appendBigEndian(UInt64(bitPattern: n))
        case .real(let x):
            input.append(2)
            appendBigEndian((x == 0 ? 0.0 : x).bitPattern)
        case .text(let text):
            input.append(3)
            appendBigEndian(UInt64(text.utf8.count))
            input.append(contentsOf: text.utf8)
        case .blob(let data):
            input.append(4)
            appendBigEndian(UInt64(data.count))
            input.append(contentsOf: data)
        }
    }

    private func appendBigEndian(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) {
            input.append(UInt8(truncatingIfNeeded: value >> shift))
        }
    }
}
