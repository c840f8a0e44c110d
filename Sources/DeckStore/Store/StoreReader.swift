import Foundation

/// Read access to a store inside one scope: a ``PackageStore/read(_:)`` snapshot, or (as its
/// subclass ``StoreTransaction``) a write transaction, which also sees its own changes.
///
/// Everything read through one reader comes from one state of the store. A reader belongs to its
/// scope and its thread; once the scope has ended its methods throw ``DeckError/misuse(_:)``.
public class StoreReader {
    /// The connection, until the scope ends.
    var connection: StoreConnection?
    /// The store the scope belongs to (kept alive while the scope lasts).
    let store: PackageStore
    /// Why the reader ended before its scope did, when something other than the scope ended it
    /// (the error its methods throw from then on).
    var endedEarly: DeckError?

    init(connection: StoreConnection, store: PackageStore) {
        self.connection = connection
        self.store = store
    }

    /// Ends the scope: the reader can no longer be used.
    func end() { connection = nil }

    /// The connection, or the error for a reader used after its scope.
    func live() throws(DeckError) -> StoreConnection {
        guard let connection else {
            if let endedEarly { throw endedEarly }
            throw DeckError.misuse(
                "\(store.path): a reader or transaction was used after its scope ended "
                    + "(keep it inside the read { } or write { } that made it, and uncommitted)")
        }
        return connection
    }

    /// The stored schema.
    public var schema: StoreSchema { connection?.schema ?? store.schema }

    /// The records `query` matches.
    public func fetch(_ query: RecordQuery) throws(DeckError) -> [Record] {
        try RecordReader(live()).fetch(query)
    }

    /// Calls `body` for each record `query` matches, without collecting them all.
    public func forEach(_ query: RecordQuery, _ body: (Record) throws -> Void) throws(DeckError) {
        try RecordReader(live()).forEach(query, body)
    }

    /// Calls `body` for each record `query` matches, with its values by position (for callers that
    /// map many records onto fixed layouts, such as the model layer).
    package func forEachRow(_ query: RecordQuery, _ body: (StoreRow) throws -> Void) throws(DeckError) {
        try RecordReader(live()).forEachRow(query, body)
    }

    /// Calls `body` for each record `query` matches, with a cursor that reads its cells in place
    /// (the model layer's fetch); the cursor must not be kept beyond the call.
    package func forEachCursor(_ query: RecordQuery, _ body: (RowCursor) throws -> Void) throws(DeckError) {
        try RecordReader(live()).forEachCursor(query, body)
    }

    /// The ids of the records `query` matches, in order.
    public func fetchIDs(_ query: RecordQuery) throws(DeckError) -> [Int64] {
        try RecordReader(live()).fetchIDs(query)
    }

    /// How many records `query` matches (its window applies).
    public func count(_ query: RecordQuery) throws(DeckError) -> Int {
        try RecordReader(live()).count(query)
    }

    /// One record by id, or nil.
    public func record(_ entity: String, id: Int64) throws(DeckError) -> Record? {
        try RecordReader(live()).record(entity, id: id)
    }

    /// The id of the record of `entity` (or of one of its subentities) whose global id is
    /// `globalID`, or nil when there is none.
    public func recordID(_ entity: String, globalID: UUID) throws(DeckError) -> Int64? {
        try RecordReader(live()).recordID(entity, globalID: globalID)
    }

    /// The ids relationship `relationship` holds for each of records `ids` of `entity`, read in one
    /// statement (the model layer's prefetching).
    package func related(_ entity: String, ids: [Int64], _ relationship: String) throws(DeckError)
        -> [Int64: [Int64]]
    {
        try RecordReader(live()).related(entity, ids: ids, relationship)
    }

    /// The ids a relationship of record `id` holds (to-one: zero or one).
    public func related(_ entity: String, id: Int64, _ relationship: String) throws(DeckError) -> [Int64] {
        try RecordReader(live()).related(entity, id: id, relationship)
    }

    /// The bytes of an external value, checked against its digest.
    public func data(for reference: BlobReference) throws(DeckError) -> Data {
        try live().data(for: reference)
    }

    /// The bytes of a data value, inline or external; nil for null.
    public func data(of value: Value) throws(DeckError) -> Data? {
        try live().data(of: value)
    }

    /// Writes a blob's bytes to `path`, checked against its digest before any byte reaches the
    /// destination: a regular file is replaced atomically; a FIFO or device is opened and
    /// written, never replaced; a directory or socket is refused.
    public func copyBlob(_ digest: Digest, toPath path: String) throws(DeckError) {
        try live().blobs.copy(digest, toPath: path)
    }

    /// Writes a blob's bytes to an open file descriptor (standard output, say), after checking
    /// them against the digest. `name` names the destination in errors.
    public func copyBlob(_ digest: Digest, to descriptor: Int32, name: String) throws(DeckError) {
        try live().blobs.copy(digest, to: descriptor, name: name)
    }

    /// Counts and sizes, as this reader sees the store (its own transaction's changes included).
    public func info() throws(DeckError) -> PackageInfo {
        try StoreMaintenance(live()).info()
    }

    /// Whether the package holds a blob file for `digest`.
    public func hasBlobFile(_ digest: Digest) throws(DeckError) -> Bool {
        try live().blobs.contains(digest)
    }
}

@available(*, unavailable)
extension StoreReader: Sendable {}

/// A write transaction: every change made through it is committed together, or not at all.
///
/// Inside ``PackageStore/write(_:)-5jhun`` the transaction commits when the closure returns. One from
/// ``PackageStore/beginTransaction()`` stays open until ``commit()`` or ``rollback()``. A change
/// that fails is undone whole and leaves the transaction's earlier changes in place.
public final class StoreTransaction: StoreReader {
    /// Whether ``PackageStore/beginTransaction()`` made it (it then ends the writer's turn itself).
    private let isLong: Bool
    /// The commit observer on whose behalf the transaction writes (a model context saving), which
    /// is not told of its commit (``PackageStore/observeCommits(_:)``).
    package var author: CommitObservation?

    init(connection: StoreConnection, store: PackageStore, isLong: Bool) {
        self.isLong = isLong
        super.init(connection: connection, store: store)
    }

    deinit {
        // A long transaction dropped without commit or rollback: nothing of it is kept.
        if isLong, connection != nil { rollback() }
    }

    /// True until the transaction is committed or rolled back.
    public var isOpen: Bool { connection != nil }

    /// True when the transaction holds changes that a commit would keep.
    public var hasChanges: Bool {
        guard let connection else { return false }
        return !connection.changes.set.isEmpty || !connection.blobs.createdSinceSave.isEmpty
    }

    /// What the transaction has changed so far.
    public var changes: ChangeSet { connection?.changes.set ?? ChangeSet() }

    /// Called while a file given as `.file(url)` is streamed into a blob, with (bytes written,
    /// bytes expected).
    public var blobWriteProgress: ((Int64, Int64) -> Void)? {
        get { connection?.blobs.progress }
        set { connection?.blobs.progress = newValue }
    }

    // MARK: Changes

    /// Inserts a record of `entity` and returns its id.
    ///
    /// Missing attributes take their default, or null when optional; a missing non-optional
    /// attribute without a default is an error. Relationships are set with `.reference` /
    /// `.references`, and their inverses follow.
    ///
    /// The record's global id (``Record/globalID``) is made from its values when the entity has
    /// a unique constraint of attributes whose values it has (spec 6.10), so that copies of the
    /// document that insert the same tag insert one record, which merging joins; otherwise it
    /// is random.
    @discardableResult
    public func insert(_ entity: String, _ values: [String: Value]) throws(DeckError) -> Int64 {
        try RecordWriter(live()).insert(entity, values)
    }

    /// Inserts a record of `entity` with global id `globalID` (``Record/globalID``) and returns
    /// its record id: what a copy of a record made elsewhere keeps. A global id that a record of
    /// the same table already has is an error (``DeckError/invalidValue(entity:property:reason:)``,
    /// property `_gid`).
    @discardableResult
    public func insert(_ entity: String, _ values: [String: Value], globalID: UUID) throws(DeckError) -> Int64
    {
        try RecordWriter(live()).insert(entity, values, globalID: globalID)
    }

    /// Whether an insert of `entity` with `values` and without a global id makes the id from the
    /// record's unique values (spec 6.10): the entity has a unique constraint of attributes only
    /// whose values `values` gives, none of them null.
    package func makesGlobalID(of entity: String, values: [String: Value]) throws(DeckError) -> Bool {
        let mapping = try live().mapping.entity(entity)
        return mapping.identityKeys.contains { key in
            key.positions.allSatisfy { values[mapping.attributes[$0].name].map { !$0.isNull } ?? false }
        }
    }

    /// The names of `entity`'s attributes in the order ``insert(_:positional:globalID:)`` takes
    /// their values (its own and inherited ones).
    package func attributeOrder(of entity: String) throws(DeckError) -> [String] {
        try live().mapping.entity(entity).attributes.map(\.name)
    }

    /// Inserts a record of `entity` from its attribute values by position (``attributeOrder(of:)``;
    /// nil takes the default), without relationships: what ``insert(_:_:globalID:)`` does without
    /// a dictionary per record.
    @discardableResult
    package func insert(_ entity: String, positional values: [Value?], globalID: UUID) throws(DeckError)
        -> Int64
    {
        try RecordWriter(live()).insert(entity, positional: values, globalID: globalID)
    }

    /// Changes some values of record `id`; values not named keep theirs.
    public func update(_ entity: String, id: Int64, _ values: [String: Value]) throws(DeckError) {
        try RecordWriter(live()).update(entity, id: id, values)
    }

    /// Sets to-one relationship `relationship` of record `id` of `entity`, which this transaction
    /// inserted (as an `entity`, not a record an upsert matched), to `target`: what
    /// ``update(_:id:_:)`` does with the one value `.reference(target)`, in one statement where
    /// the relationship is stored in the record's own column and is not one-to-one.
    /// `insertedTarget`: the concrete entity of the target when this transaction inserted it
    /// (nil when not). Without a savepoint: when it throws, the caller must discard the
    /// transaction, as a model context's flush does.
    package func setReference(
        ofInserted entity: String, id: Int64, _ relationship: String, to target: Int64,
        insertedTarget: String?
    ) throws(DeckError) {
        try RecordWriter(live()).setReference(
            ofInserted: entity, id: id, relationship, to: target, insertedTarget: insertedTarget)
    }

    /// Inserts a record, or updates the existing record that has the same values for one of the
    /// entity's unique constraints (SwiftData's behaviour for `.unique`). Returns the id and
    /// whether a record was inserted. An inserted record gets `globalID` (when nil, one made as
    /// ``insert(_:_:)`` makes it); an updated one keeps its own.
    @discardableResult
    public func upsert(_ entity: String, _ values: [String: Value], globalID: UUID? = nil) throws(DeckError)
        -> (
            id: Int64, inserted: Bool
        )
    {
        try RecordWriter(live()).upsert(entity, values, globalID: globalID)
    }

    /// Deletes record `id`, applying every relationship's delete rule. Returns how many records
    /// were deleted in all (cascades included).
    @discardableResult
    public func delete(_ entity: String, id: Int64) throws(DeckError) -> Int {
        try RecordWriter(live()).delete(entity, id: id)
    }

    /// Deletes every record that `query` matches (its sort and window apply). Returns how many
    /// records were deleted in all (cascades included).
    @discardableResult
    public func delete(_ query: RecordQuery) throws(DeckError) -> Int {
        try RecordWriter(live()).delete(query)
    }

    /// Updates every record that `query` matches with the same values. Returns the count.
    @discardableResult
    public func update(_ query: RecordQuery, _ values: [String: Value]) throws(DeckError) -> Int {
        try RecordWriter(live()).update(query, values)
    }

    // MARK: Ending

    /// Commits the transaction (spec: the save protocol) and returns what it changed. Only for a
    /// transaction from ``PackageStore/beginTransaction()``; a ``PackageStore/write(_:)-5jhun`` scope
    /// commits when its closure returns.
    @discardableResult
    public func commit() throws(DeckError) -> ChangeSet {
        guard isLong else {
            throw DeckError.misuse("\(store.path): a write { } transaction commits when its closure returns")
        }
        let changes = try finishCommit()
        store.endLongTransaction(self)
        return changes
    }

    /// Discards the transaction's changes, and the blob files only they referenced. Once a
    /// transaction has ended, this does nothing (so that `defer { transaction.rollback() }` may
    /// follow a commit).
    ///
    /// The transaction of a ``PackageStore/write(_:)-5jhun`` scope or of a custom migration stage
    /// belongs to its scope, which keeps or discards it whole: there, `rollback()` ends the
    /// transaction for the closure (its later calls throw ``DeckError/misuse(_:)``), and the scope
    /// then discards everything and throws that misuse error. The database transaction is never
    /// ended under the scope's feet. To discard a scope's changes, throw from its closure.
    public func rollback() {
        guard connection != nil else { return }
        guard isLong else {
            endedEarly = DeckError.misuse(
                "\(store.path): rollback() was called on the transaction of a write { } scope or a migration "
                    + "stage, which belongs to its scope: the scope keeps or discards its changes whole, and "
                    + "discarded them; throw an error from the closure to discard its changes")
            end()
            return
        }
        finishRollback()
        store.endLongTransaction(self)
    }

    func finishCommit() throws(DeckError) -> ChangeSet {
        let connection = try live()
        let changes = connection.changes.set
        try connection.commit()
        end()
        store.commitObservers.deliver(changes, author: author?.id)
        return changes
    }

    func finishRollback() {
        connection?.rollback()
        end()
    }
}

extension PackageStore {
    /// A long transaction ended: the writer is free for the next one.
    func endLongTransaction(_ transaction: StoreTransaction) {
        state.withLock { state in
            if state.longTransaction === transaction {
                state.longTransaction = nil
                state.longOwner = nil
            }
        }
        releaseWriter()
    }
}
