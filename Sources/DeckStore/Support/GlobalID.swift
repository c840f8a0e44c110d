import Foundation

/// Records' global ids (spec: section 6.10): 16 bytes in each row's `_gid`, made by the SQL
/// function `deck_gid()` that every connection has (CSQLite's shim: SQLite's own random
/// generator, shaped as a version 4 UUID), read as a `UUID` whose bytes are the cell's.
enum GlobalID {
    /// The UUID whose 16 bytes are `value`'s, or nil for any other cell.
    static func uuid(_ value: SQLValue) -> UUID? {
        guard case .blob(let data) = value, data.count == 16 else { return nil }
        return data.withUnsafeBytes { raw in
            UUID(uuid: raw.loadUnaligned(as: uuid_t.self))
        }
    }

    /// The 16 bytes of `uuid`, as a `_gid` cell holds them.
    static func bytes(_ uuid: UUID) -> Data {
        withUnsafeBytes(of: uuid.uuid) { Data($0) }
    }
}
