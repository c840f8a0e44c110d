import DeckSQLite
import DeckSupport
import Foundation

/// Reads Core Data's bookkeeping tables (`Z_PRIMARYKEY`, `Z_METADATA`, `Z_MODELCACHE`) from a
/// store's private copy, checking each value's storage class.
struct StoreTableReader {
    let database: Database
    /// The user's store path, for messages.
    let path: String
    let limits: CoreDataStore.Limits

    func rows(_ sql: String, table: String) throws(CoreDataError) -> [[SQLValue]] {
        do {
            return try database.rows(sql)
        } catch {
            if error.code.rawValue & 0xFF == 26 {  // SQLITE_NOTADB
                throw CoreDataError(
                    .notACoreDataStore, "\(path) is not a SQLite database (nor a Core Data store)")
            }
            throw CoreDataError(.badStoreTable, "\(path): reading \(table) failed: \(error.message)")
        }
    }

    /// The names of the store's tables.
    func tableNames() throws(CoreDataError) -> Set<String> {
        let rows = try rows("SELECT name FROM sqlite_master WHERE type = 'table'", table: "sqlite_master")
        return Set(rows.compactMap { $0.first?.string })
    }

    func primaryKeys() throws(CoreDataError) -> [CoreDataStoreEntity] {
        let rows = try rows(
            "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT", table: "Z_PRIMARYKEY")
        var entities: [CoreDataStoreEntity] = []
        for row in rows {
            guard let number = row[0].int64, let name = row[1].string, !name.isEmpty else {
                throw CoreDataError(
                    .badStoreTable,
                    "\(path): Z_PRIMARYKEY has a row with Z_ENT \(row[0]) and Z_NAME \(row[1]); "
                        + "Core Data writes an integer and a name")
            }
            let parent = row[2].isNull ? 0 : row[2].int64
            let maximum = row[3].isNull ? 0 : row[3].int64
            guard let parent, let maximum else {
                throw CoreDataError(
                    .badStoreTable,
                    "\(path): Z_PRIMARYKEY's row for '\(name)' has a Z_SUPER or Z_MAX that is not an integer")
            }
            entities.append(
                CoreDataStoreEntity(
                    number: number, name: name, parentNumber: parent, maximumPrimaryKey: maximum))
        }
        let numbers = Set(entities.map(\.number))
        for entity in entities where entity.parentNumber != 0 && !numbers.contains(entity.parentNumber) {
            throw CoreDataError(
                .badStoreTable,
                "\(path): Z_PRIMARYKEY gives '\(entity.name)' the parent \(entity.parentNumber), which it does not list"
            )
        }
        return entities
    }

    func metadata() throws(CoreDataError) -> CoreDataMetadata {
        let rows = try rows(
            "SELECT Z_VERSION, Z_UUID, Z_PLIST FROM Z_METADATA ORDER BY Z_VERSION", table: "Z_METADATA")
        guard let row = rows.first else {
            throw CoreDataError(.badStoreTable, "\(path): Z_METADATA is empty; Core Data writes one row")
        }
        guard let version = row[0].int64, case .blob(let plist) = row[2] else {
            throw CoreDataError(
                .badStoreTable, "\(path): Z_METADATA's row has no integer Z_VERSION or no Z_PLIST blob")
        }
        let value: PropertyListValue
        do {
            value = try BinaryPropertyList.decode(plist, limits: limits.propertyList)
        } catch {
            throw error.within("\(path): Z_METADATA's Z_PLIST")
        }
        guard let values = value.dictionary else {
            throw CoreDataError(.badStoreTable, "\(path): Z_METADATA's Z_PLIST is not a dictionary")
        }
        return CoreDataMetadata(version: version, uuid: row[1].string, values: values)
    }

    func modelCache() throws(CoreDataError) -> CoreDataModel? {
        let rows = try rows("SELECT Z_CONTENT FROM Z_MODELCACHE LIMIT 2", table: "Z_MODELCACHE")
        guard let row = rows.first, !row[0].isNull else { return nil }
        guard rows.count == 1, case .blob(let content) = row[0] else {
            throw CoreDataError(
                .badStoreTable,
                "\(path): Z_MODELCACHE holds \(rows.count) rows or a value that is not a blob; "
                    + "Core Data writes one compressed model")
        }
        do {
            return try CoreDataModel(
                modelCache: content, maximumInflatedSize: limits.maximumModelCacheSize,
                limits: limits.propertyList)
        } catch {
            throw error.within("\(path): Z_MODELCACHE")
        }
    }
}
