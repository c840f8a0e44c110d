import DeckSQLite

@testable import DeckStore

/// What the storage tests reach inside a store for (the rest of their helpers are in
/// `DeckStoreTestSupport`, shared with `DeckSharingTests`).
extension PackageStore {
    /// The connection the writer uses (a read-only store's first reader): it sees an open
    /// transaction's changes. For tests that look at the raw tables and blob files.
    private var connection: StoreConnection {
        get throws {
            guard let connection = writer ?? state.withLock({ $0.readers.first }) else {
                throw DeckError.closed(path: url.path)
            }
            return connection
        }
    }
    /// The writer's SQLite connection.
    var database: Database { get throws { try connection.database } }
    /// The writer's blob store (it tracks the files written since the last commit).
    var blobs: BlobStore { get throws { try connection.blobs } }
}
