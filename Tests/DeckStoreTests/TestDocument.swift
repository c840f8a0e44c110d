import DeckSQLite
import Foundation

@testable import DeckStore

/// A test's view of one open package in the shape most storage tests want: changes accumulate
/// until `save()`, reads see them, `close()` discards what was not saved.
///
/// It sits on the public ``PackageStore`` API — a long transaction begun by the first change,
/// committed by `save()` — so the storage suites exercise the store users get, not a private
/// path. Suites about the store's own semantics (scopes, change sets, readers beside a writer,
/// closing with unsaved changes) use ``PackageStore`` directly.
final class TestDocument {
    let store: PackageStore
    private var transaction: StoreTransaction?

    private init(_ store: PackageStore) { self.store = store }

    static func create(at url: URL, contentType: String, schema: StoreSchema) throws(DeckError)
        -> TestDocument
    {
        TestDocument(try PackageStore.create(at: url, contentType: contentType, schema: schema))
    }

    static func open(at url: URL, mode: PackageStore.Mode = .readWrite) throws(DeckError) -> TestDocument {
        TestDocument(try PackageStore.open(at: url, mode: mode))
    }

    var url: URL { store.url }
    var manifest: Manifest { store.manifest }
    var schema: StoreSchema { store.schema }
    var mode: PackageStore.Mode { store.mode }
    var mapping: SchemaMapping { store.mapping }

    /// The connection changes go through: the writer's, or a read-only store's first reader.
    private var connection: StoreConnection {
        store.writer ?? store.state.withLock { $0.readers.first }!
    }
    /// The store's SQLite connection (the writer's: it sees unsaved changes).
    var database: Database { connection.database }
    /// The writer's blob store (it tracks the files written since the last save).
    var blobs: BlobStore { connection.blobs }

    var hasChanges: Bool { transaction?.hasChanges ?? false }

    /// The open transaction, begun by the first change.
    private func writing() throws(DeckError) -> StoreTransaction {
        if let transaction, transaction.isOpen { return transaction }
        let begun = try store.beginTransaction()
        transaction = begun
        return begun
    }

    /// Reads through the open transaction (seeing its changes), or on a committed snapshot.
    private func reading<T>(_ body: (StoreReader) throws(DeckError) -> T) throws(DeckError) -> T {
        if let transaction, transaction.isOpen { return try body(transaction) }
        do {
            return try store.read { reader in try body(reader) }
        } catch {
            throw DeckError.wrap(error)
        }
    }

    @discardableResult
    func insert(_ entity: String, _ values: [String: Value]) throws(DeckError) -> Int64 {
        try writing().insert(entity, values)
    }

    func update(_ entity: String, id: Int64, _ values: [String: Value]) throws(DeckError) {
        try writing().update(entity, id: id, values)
    }

    @discardableResult
    func update(_ query: RecordQuery, _ values: [String: Value]) throws(DeckError) -> Int {
        try writing().update(query, values)
    }

    @discardableResult
    func upsert(_ entity: String, _ values: [String: Value]) throws(DeckError) -> (id: Int64, inserted: Bool)
    {
        try writing().upsert(entity, values)
    }

    @discardableResult
    func delete(_ entity: String, id: Int64) throws(DeckError) -> Int {
        try writing().delete(entity, id: id)
    }

    @discardableResult
    func delete(_ query: RecordQuery) throws(DeckError) -> Int {
        try writing().delete(query)
    }

    func fetch(_ query: RecordQuery) throws(DeckError) -> [Record] {
        try reading { r throws(DeckError) in try r.fetch(query) }
    }

    func forEach(_ query: RecordQuery, _ body: (Record) throws -> Void) throws(DeckError) {
        try reading { r throws(DeckError) in try r.forEach(query, body) }
    }

    func fetchIDs(_ query: RecordQuery) throws(DeckError) -> [Int64] {
        try reading { r throws(DeckError) in try r.fetchIDs(query) }
    }

    func count(_ query: RecordQuery) throws(DeckError) -> Int {
        try reading { r throws(DeckError) in try r.count(query) }
    }

    func record(_ entity: String, id: Int64) throws(DeckError) -> Record? {
        try reading { r throws(DeckError) in try r.record(entity, id: id) }
    }

    func related(_ entity: String, id: Int64, _ relationship: String) throws(DeckError) -> [Int64] {
        try reading { r throws(DeckError) in try r.related(entity, id: id, relationship) }
    }

    func data(for reference: BlobReference) throws(DeckError) -> Data {
        try reading { r throws(DeckError) in try r.data(for: reference) }
    }

    func data(of value: Value) throws(DeckError) -> Data? {
        try reading { r throws(DeckError) in try r.data(of: value) }
    }

    func info() throws(DeckError) -> PackageInfo {
        if let transaction, transaction.isOpen { return try transaction.info() }
        return try store.info()
    }

    /// Commits the changes made since the last save (the save protocol); nothing to do without.
    func save() throws(DeckError) {
        guard let transaction, transaction.isOpen else { return }
        try transaction.commit()
        self.transaction = nil
    }

    func rollback() {
        transaction?.rollback()
        transaction = nil
    }

    /// Maintenance needs the writer: refused while changes are unsaved, as a user would be told.
    private func idle() throws(DeckError) {
        if hasChanges { throw DeckError.misuse("\(url.path): save or roll back the unsaved changes first") }
        rollback()
    }

    func collectGarbage(
        dryRun: Bool = false, repair: Bool = false, progress: ((Int64, Int64) -> Void)? = nil
    ) throws(DeckError) -> GarbageReport {
        try idle()
        return try store.collectGarbage(dryRun: dryRun, repair: repair, progress: progress)
    }

    func repairReferences(dryRun: Bool = false) throws(DeckError) -> ReferenceRepairReport {
        try idle()
        return try store.repairReferences(dryRun: dryRun)
    }

    /// Closes the package, discarding unsaved changes (tests of the refusal use the store).
    func close() throws(DeckError) {
        rollback()
        try store.close(discardingChanges: true)
    }
}
