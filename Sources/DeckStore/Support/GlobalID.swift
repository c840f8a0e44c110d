import CSQLite
import DeckSQLite
import Foundation

/// Records' global ids (spec: section 6.10): 16 bytes in each row's `_gid`, made by the SQL
/// function `deck_gid()` that every connection has (CSQLite's shim: SQLite's own random
/// generator, shaped as a version 4 UUID), read as a `UUID` whose bytes are the cell's.
package enum GlobalID {
    /// The UUID whose 16 bytes are `value`'s, or nil for any other cell.
    static func uuid(_ value: SQLValue) -> UUID? {
        guard case .blob(let data) = value, data.count == 16 else { return nil }
        return data.withUnsafeBytes { raw in
            UUID(uuid: raw.loadUnaligned(as: uuid_t.self))
        }
    }

    /// A new global id: a version 4 UUID from SQLite's generator, as `deck_gid()` makes them.
    /// (Foundation's `UUID()` reads the operating system's generator afresh each time: three
    /// system calls per id, more than an insert's own work.)
    package static func random() -> UUID {
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            deck_sqlite_random_gid(raw.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
        return UUID(uuid: bytes)
    }

    /// The 16 bytes of `uuid`, as a `_gid` cell holds them.
    static func bytes(_ uuid: UUID) -> Data {
        withUnsafeBytes(of: uuid.uuid) { Data($0) }
    }
}
