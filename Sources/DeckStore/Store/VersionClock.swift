import DeckSQLite
import Foundation

/// The clock of a version 5 store (spec: section 20.2): a hybrid logical clock that a writer
/// advances once per transaction, and the writer ids the versions name.
enum VersionClock {
    /// The greatest clock a store may hold: far beyond any date (milliseconds since 1970, shifted
    /// 16 bits, pass it in the year 70,000), low enough that advancing it never overflows.
    static let limit: Int64 = 1 << 62

    /// 16 bytes from the system's secure random number generator: a new writer id.
    static func newWriterID() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// The clock a transaction that begins at `now` takes after `previous`: later than
    /// `previous`, and at least `now`'s milliseconds since 1970 shifted left 16 bits, so that
    /// edits on devices whose clocks agree order as they happened.
    static func next(after previous: Int64, now: Date = Date()) -> Int64 {
        let milliseconds = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        let wall = milliseconds > 0 && milliseconds < limit >> 16 ? milliseconds << 16 : 0
        return max(previous + 1, wall)
    }

    /// Advances the clock of the store `db`, in its open write transaction, and makes `writer` the
    /// writer of what the transaction changes, recording it in `deck_writer` unless `number`
    /// (what an earlier committed transaction recorded) is given. Returns the writer's number.
    static func advance(_ db: Database, writer: [UInt8], number: Int64?, packagePath: String) throws -> Int64
    {
        let writerNumber: Int64
        if let number {
            writerNumber = number
        } else {
            try db.run(
                "INSERT INTO deck_writer(writer) VALUES (?) ON CONFLICT (writer) DO NOTHING",
                [.blob(Data(writer))])
            guard
                let found = try db.scalar(
                    "SELECT id FROM deck_writer WHERE writer = ?", [.blob(Data(writer))])?
                    .int64
            else { throw DeckError.misuse("deck_writer lost the writer id it was given") }
            writerNumber = found
        }
        guard let previous = try db.scalar("SELECT clock FROM deck_clock WHERE id = 1")?.int64 else {
            throw DeckError.corrupt(path: packagePath, reason: "deck_clock has no row")
        }
        // The next clock, not only this one, stays below the limit: a store is never made corrupt.
        guard previous >= 0, previous < limit - 1 else {
            throw DeckError.corrupt(
                path: packagePath,
                reason: "deck_clock holds \(previous): no clock after it is below the clock's limit of 2^62")
        }
        try db.run(
            "UPDATE deck_clock SET clock = ?, writer = ? WHERE id = 1",
            [.integer(min(next(after: previous), limit - 1)), .integer(writerNumber)])
        return writerNumber
    }
}
