import DeckCoreData
import DeckSQLite
import Foundation

/// Writes stores in Core Data's layout of the bookkeeping tables, for tests.
package enum SyntheticStore {
    package static func metadata(hashes: [String: Data]) -> Data {
        PropertyListWriter.encode(
            .dictionary([
                "NSStoreType": .string("SQLite"), "NSStoreModelVersionIdentifiers": .array([.string("")]),
                "NSStoreModelVersionHashes": .dictionary(hashes.mapValues { .data($0) }),
                "NSPersistenceFrameworkVersion": .integer(1048),
                "NSStoreModelVersionHashesVersion": .integer(3),
                "_NSAutoVacuumLevel": .string("2"),
            ]))
    }

    /// A store at `path` in WAL mode whose connection stays open (returned), so what it wrote
    /// lives only in the `-wal` file, as in a running app's store.
    package static func write(
        at path: String, entities: [CoreDataStoreEntity], metadata: Data, modelCache: Data?
    ) throws -> Database {
        let database = try Database(path: path, mode: .create)
        _ = try database.scalar("PRAGMA journal_mode = WAL")
        _ = try database.scalar("PRAGMA wal_autocheckpoint = 0")
        try database.execute(
            "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)"
        )
        try database.execute(
            "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)")
        for entity in entities {
            try database.run(
                "INSERT INTO Z_PRIMARYKEY VALUES (?, ?, ?, ?)",
                [
                    .integer(entity.number), .text(entity.name), .integer(entity.parentNumber),
                    .integer(entity.maximumPrimaryKey),
                ])
        }
        try database.run(
            "INSERT INTO Z_METADATA VALUES (1, 'A5C7E1B0-0000-4000-8000-000000000001', ?)", [.blob(metadata)])
        if let modelCache {
            try database.execute("CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)")
            try database.run("INSERT INTO Z_MODELCACHE VALUES (?)", [.blob(modelCache)])
        }
        return database
    }

    package static let entities = [
        CoreDataStoreEntity(number: 1, name: "Folder", parentNumber: 0, maximumPrimaryKey: 3),
        CoreDataStoreEntity(number: 2, name: "Item", parentNumber: 0, maximumPrimaryKey: 0),
        CoreDataStoreEntity(number: 3, name: "Note", parentNumber: 2, maximumPrimaryKey: 40),
        CoreDataStoreEntity(number: 4, name: "Tag", parentNumber: 0, maximumPrimaryKey: 2),
        CoreDataStoreEntity(number: 16001, name: "ACHANGE", parentNumber: 0, maximumPrimaryKey: 9),
    ]
}
