// swift-format-ignore-file: AmbiguousTrailingClosureOverload

// (`write` has a blocking and an async form, as GRDB's has: in async code the compiler picks the
// async one.)
import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An open Deck package: its manifest, schema and store, shared safely between threads and tasks.
///
/// A read-write store holds the package's writer lock, one writer connection and a small pool of
/// reader connections (the store runs in SQLite's WAL mode while it is open). Reads run in
/// ``read(_:)`` scopes, each on one committed snapshot, in parallel with each other and with the
/// writer. Changes run in ``write(_:)-5jhun`` scopes, one transaction each, committed with the spec's
/// save protocol (blob files durable first, then the commit, then unreferenced files removed);
/// writers in one process queue, and a writer in another process is refused with
/// ``DeckError/locked(path:pid:)``. A change that must stay open across calls — an interactive
/// session that saves when told — uses ``beginTransaction()``.
///
/// ```swift
/// let store = try PackageStore.create(at: url, contentType: "org.example.notes", schema: schema)
/// let (id, changes) = try store.write { try $0.insert("Note", ["title": .string("Hello")]) }
/// let titles = try store.read { try $0.fetch(RecordQuery("Note")).map { $0["title"] } }
/// try store.close()
/// ```
///
/// The ``StoreReader`` and ``StoreTransaction`` a scope hands out belong to that scope: they are
/// not `Sendable` and fail with ``DeckError/misuse(_:)`` once the scope has ended.
public final class PackageStore: Sendable {
    /// How to open a package.
    public enum Mode: Sendable {
        /// Take the writer lock; changes are possible.
        case readWrite
        /// No lock; reads see committed states only, and nothing of the package is written.
        case readOnly
    }

    /// Settings of an open store.
    public struct Configuration: Sendable {
        /// The most reader connections open at once (and so the most reads running at once).
        public var maximumReaders: Int

        public init(maximumReaders: Int = 4) {
            self.maximumReaders = max(1, maximumReaders)
        }
    }

    /// The package directory.
    public let url: URL
    /// The package's manifest.
    public let manifest: Manifest
    /// The stored schema.
    public let schema: StoreSchema
    /// How the package was opened.
    public let mode: Mode
    /// The format version of the package's store as it was opened, by whose rules it is read
    /// (spec: section 12). Always ``formatVersion`` for a read-write store: opening a package of
    /// an older version for writing upgrades it first. A read-only store reads an older package
    /// as it is: a version 1 store's records have no ``Record/globalID``, and a version 1 or 2
    /// store has no compatibility floor or migration history (``PackageInfo/schemaFloor``).
    public let storeFormatVersion: Int
    /// The instant the store's dates count from (spec 4.2 `date_epoch`), fixed at open like
    /// ``storeFormatVersion``.
    let dateEpoch: DateEpoch
    /// The document id: a random UUID made when the package was created (or upgraded from
    /// format version 1), which every copy of the document keeps, exports and imports included
    /// (spec: section 6.10). Nil only for a version 1 package opened read-only.
    public let documentID: UUID?
    /// The schema's mapping to tables.
    let mapping: SchemaMapping
    let configuration: Configuration

    /// The writer's connection (nil for a read-only store). Used only by the one thread that holds
    /// ``writerQueue``.
    nonisolated(unsafe) let writer: StoreConnection?
    /// Held by the writer's user: a ``write(_:)-5jhun`` scope, a ``StoreTransaction`` from
    /// ``beginTransaction()``, or maintenance. Writers in this process queue on it.
    let writerQueue = WriterQueue()
    /// This process's observers of the writer's commits (``observeCommits(_:)``).
    let commitObservers = CommitObservers()
    /// One slot per reader connection that may be in use.
    let readerSlots: DispatchSemaphore

    struct State {
        var isClosed = false
        /// A close is under way: no new close starts.
        var isClosing = false
        /// Idle reader connections.
        var readers: [StoreConnection] = []
        /// Reader connections opened so far (idle or lent).
        var readerCount = 0
        /// The thread inside a ``write(_:)-5jhun`` scope (or maintenance), to refuse a write inside a
        /// write on that thread.
        var gateOwner: pthread_t?
        /// Who began the open long transaction: the task, or the thread outside any task. A long
        /// transaction may be ended from anywhere, but its beginner starting a write would wait
        /// for itself forever; another task that happens to run on the same thread would not.
        var longOwner: Holder?
        /// The transaction ``beginTransaction()`` handed out, while it is open.
        weak var longTransaction: StoreTransaction?
        /// The writer lock, released at close.
        var lock: WriterLock?
    }
    let state: Locked<State>

    /// The current task, or the current thread when no task runs.
    struct Holder: Hashable, Sendable {
        let isTask: Bool
        let id: Int

        static var current: Holder {
            if let task = withUnsafeCurrentTask(body: { $0?.hashValue }) {
                return Holder(isTask: true, id: task)
            }
            return Holder(isTask: false, id: Int(bitPattern: UInt(pthread_self())))
        }
    }

    private init(opened: PackageDirectory.Opened, mode: Mode, configuration: Configuration) {
        url = opened.url
        manifest = opened.manifest
        schema = opened.schema
        mapping = opened.mapping
        storeFormatVersion = opened.formatVersion
        dateEpoch = opened.dateEpoch
        documentID = opened.documentID
        self.mode = mode
        self.configuration = configuration
        readerSlots = DispatchSemaphore(value: configuration.maximumReaders)
        let connection = StoreConnection(
            url: opened.url, manifest: opened.manifest, schema: opened.schema, mapping: opened.mapping,
            database: opened.database, formatVersion: opened.formatVersion, dateEpoch: opened.dateEpoch,
            isWriter: mode == .readWrite)
        var initial = State()
        initial.lock = opened.lock
        if mode == .readWrite {
            writer = connection
        } else {
            writer = nil
            initial.readers = [connection]
            initial.readerCount = 1
        }
        state = Locked(initial)
    }

    deinit {
        // No transaction is open (one holds its store); nothing is lost.
        try? close(discardingChanges: true)
    }

    /// The content type of packages made without one of their own.
    public static let defaultContentType = PackageLayout.genericContentType
    /// The package directory extension Deck suggests (`Notes.deck`); an app may use its own.
    public static let packageExtension = PackageLayout.defaultExtension
    /// Whether `text` can be a package's content type: 1 to 255 printable ASCII characters, no
    /// spaces (spec: section 3.1).
    public static func isValidContentType(_ text: String) -> Bool { PackageLayout.isValidContentType(text) }

    /// The newest format version this Deck reads and writes.
    public static let formatVersion = PackageLayout.formatVersion

    // MARK: Create and open

    /// Creates a new, empty package at `url` and opens it for writing.
    ///
    /// The package is built under a temporary name beside `url` and renamed into place, so
    /// `url` either does not exist or holds a complete package. Never replaces an existing path.
    public static func create(
        at url: URL, contentType: String, schema: StoreSchema, configuration: Configuration = Configuration()
    ) throws(DeckError) -> PackageStore {
        let path = try PackageDirectory.create(at: url, contentType: contentType, schema: schema)
        return try open(at: URL(fileURLWithPath: path), mode: .readWrite, configuration: configuration)
    }

    /// Opens the package at `url`.
    ///
    /// Checks, in the order of the spec's section 2.2: the path is a directory; no fixed name is
    /// a symbolic link; the manifest; every other fixed name is of the kind the layout says;
    /// (for writing) the writer lock; the store's identity, versions and `deck_meta`; the stored
    /// schema; and that the store holds exactly the tables, indexes and triggers the schema
    /// derives, so that no planted trigger or view ever runs or lies. A read-write open then
    /// removes what a crashed writer left in `tmp/`. A read-only open writes no file of the
    /// package.
    public static func open(
        at url: URL, mode: Mode = .readWrite, configuration: Configuration = Configuration()
    ) throws(DeckError) -> PackageStore {
        let opened = try PackageDirectory.open(at: url, mode: mode)
        return PackageStore(opened: opened, mode: mode, configuration: configuration)
    }

    /// The package directory's path.
    var path: String { url.path }

    /// Whether ``close(discardingChanges:)`` has run.
    public var isClosed: Bool { state.withLock { $0.isClosed } }

    // MARK: Reading

    /// Runs `body` on one committed snapshot of the store: everything it reads agrees, even
    /// while this process or another commits changes meanwhile.
    ///
    /// Reads run on a pool of connections (``Configuration/maximumReaders``), in parallel with
    /// each other and with the writer; a read never sees a transaction that has not committed,
    /// not even this process's own.
    ///
    /// ```swift
    /// let (cards, decks) = try store.read { (try $0.count(RecordQuery("Card")), try $0.count(RecordQuery("Deck"))) }
    /// ```
    public func read<T>(_ body: (StoreReader) throws -> T) throws -> T {
        let connection = try borrowReader()
        defer { returnReader(connection) }
        return try connection.readTransaction {
            let reader = StoreReader(connection: connection, store: self)
            defer { reader.end() }
            return try body(reader)
        }
    }

    /// Runs `body` with a reader connection and no transaction open.
    func withReaderConnection<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        let connection = try borrowReader()
        defer { returnReader(connection) }
        return try body(connection)
    }

    private func borrowReader() throws(DeckError) -> StoreConnection {
        readerSlots.wait()
        let taken: (StoreConnection?, Bool) = state.withLock { state in
            if state.isClosed { return (nil, true) }
            if let idle = state.readers.popLast() { return (idle, false) }
            state.readerCount += 1
            return (nil, false)
        }
        if taken.1 {
            readerSlots.signal()
            throw DeckError.closed(path: path)
        }
        if let connection = taken.0 { return connection }
        do {
            let database = try PackageDirectory.openReaderDatabase(packagePath: path)
            return StoreConnection(
                url: url, manifest: manifest, schema: schema, mapping: mapping, database: database,
                formatVersion: storeFormatVersion, dateEpoch: dateEpoch, isWriter: false)
        } catch {
            state.withLock { $0.readerCount -= 1 }
            readerSlots.signal()
            throw error
        }
    }

    private func returnReader(_ connection: StoreConnection) {
        let keep = state.withLock { state -> Bool in
            if state.isClosed {
                state.readerCount -= 1
                return false
            }
            state.readers.append(connection)
            return true
        }
        if !keep { connection.close() }
        readerSlots.signal()
    }

    // MARK: Writing

    /// Runs `body` in one write transaction and commits it with the save protocol, returning
    /// what `body` returned and what the transaction changed. If `body` throws, nothing of it
    /// is kept (blob files it wrote included) and the error is rethrown.
    ///
    /// Writers in this process queue, in the order they came (blocked threads before suspended
    /// tasks); this one blocks its thread while it waits (in async code, use the `async` form, which suspends instead). Calling `write`
    /// inside a `write` on the same thread is an error (it would wait for itself). Another
    /// process's writer is refused when the store is opened, not here.
    ///
    /// ```swift
    /// let (id, changes) = try store.write { tx in
    ///     try tx.insert("Card", ["front": .string("hola"), "back": .string("hello")])
    /// }
    /// ```
    @discardableResult
    public func write<T>(_ body: (StoreTransaction) throws -> T) throws -> (value: T, changes: ChangeSet) {
        let connection = try acquireWriter()
        defer { releaseWriter() }
        return try runWrite(on: connection, body)
    }

    /// Runs `body` in one write transaction, as ``write(_:)-5jhun`` does, waiting for this process's
    /// other writers by suspending the task rather than blocking a thread.
    ///
    /// Blocked writers (``write(_:)-5jhun``) get the turn before waiting tasks, for they hold
    /// threads that the tasks may need; tasks among themselves go in the order they came. A task
    /// cancelled before it gets the turn stops waiting and gets ``DeckError/cancelled``, having
    /// changed nothing; once `body` runs, it runs to its end and commits (check `Task.isCancelled`
    /// in it to stop early by throwing). `body` runs on the caller's executor, without
    /// suspending, so it may use what the caller's isolation owns; keep it short, as it holds that
    /// executor meanwhile.
    ///
    /// ```swift
    /// let (_, changes) = try await store.write { try $0.insert("Card", ["front": .string("hola")]) }
    /// ```
    @discardableResult
    public nonisolated(nonsending) func write<T>(_ body: (StoreTransaction) throws -> T) async throws -> (
        value: T, changes: ChangeSet
    ) {
        let connection = try await acquireWriterSuspending()
        defer { releaseWriter() }
        return try runWrite(on: connection, body)
    }

    private typealias WriteResult<T> = (value: T, changes: ChangeSet)

    private func runWrite<T>(on connection: StoreConnection, _ body: (StoreTransaction) throws -> T) throws
        -> WriteResult<T>
    {
        try connection.begin()
        let transaction = StoreTransaction(connection: connection, store: self, isLong: false)
        do {
            let value = try body(transaction)
            let changes = try transaction.finishCommit()
            return (value, changes)
        } catch {
            // The connection's, not the transaction's: a rollback() in the closure ended the
            // transaction and left its database transaction for the scope to discard.
            connection.rollback()
            transaction.end()
            throw error
        }
    }

    /// Begins a transaction that stays open until its ``StoreTransaction/commit()`` or
    /// ``StoreTransaction/rollback()``: changes accumulate in it, visible to it alone, as in an
    /// interactive session that saves when asked. It holds this process's writer until then
    /// (other writers queue), and so must be ended; ``close(discardingChanges:)`` refuses while
    /// it has changes.
    ///
    /// It may be used and ended from any thread, one at a time. The task (or, outside Swift
    /// concurrency, the thread) that began it and then starts another write or maintenance gets
    /// ``DeckError/misuse(_:)``: it would wait for itself. Writers queue by blocking their
    /// thread: in async code, do not hold a long transaction across a suspension point while
    /// other tasks write.
    public func beginTransaction() throws(DeckError) -> StoreTransaction {
        let connection = try acquireWriter()
        do {
            try connection.begin()
        } catch {
            releaseWriter()
            throw error
        }
        let transaction = StoreTransaction(connection: connection, store: self, isLong: true)
        state.withLock { state in
            state.longTransaction = transaction
            state.longOwner = Holder.current
            state.gateOwner = nil
        }
        return transaction
    }

    /// Takes the writer: waits for this process's other writers, refuses a write inside a write on
    /// the same thread, a read-only store and a closed one.
    func acquireWriter() throws(DeckError) -> StoreConnection {
        let writer = try checkWriterRequest()
        writerQueue.acquire()
        return try tookWriter(writer)
    }

    /// ``acquireWriter()`` for async callers: waits by suspending the task. Runs on the caller's
    /// executor, so the thread it records as the writer's is the one the write's body runs on.
    private nonisolated(nonsending) func acquireWriterSuspending() async throws(DeckError) -> StoreConnection
    {
        let writer = try checkWriterRequest()
        try await writerQueue.acquireSuspending()
        return try tookWriter(writer)
    }

    private func checkWriterRequest() throws(DeckError) -> StoreConnection {
        guard let writer else { throw DeckError.readOnly(path: path) }
        let me = pthread_self()
        let holder = Holder.current
        let reentrant = state.withLock { state in
            state.gateOwner.map { pthread_equal($0, me) != 0 } ?? false || state.longOwner == holder
        }
        if reentrant {
            throw DeckError.misuse(
                "\(path): a write was started on a thread that is already writing (a write inside a write, "
                    + "or an open transaction that was not committed or rolled back)")
        }
        return writer
    }

    /// The caller holds the writer's turn: records on which thread, or gives it back when the store
    /// closed meanwhile.
    private func tookWriter(_ writer: StoreConnection) throws(DeckError) -> StoreConnection {
        let me = pthread_self()
        let closed = state.withLock { state -> Bool in
            if state.isClosed { return true }
            state.gateOwner = me
            return false
        }
        if closed {
            writerQueue.release()
            throw DeckError.closed(path: path)
        }
        return writer
    }

    func releaseWriter() {
        state.withLock { $0.gateOwner = nil }
        writerQueue.release()
    }

    /// Runs `body` with the writer's connection and no transaction open (maintenance that
    /// manages its own transactions, or runs statements such as `VACUUM` that need none).
    func withWriter<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        let connection = try acquireWriter()
        defer { releaseWriter() }
        return try body(connection)
    }

    // MARK: Closing

    /// Closes the store: checkpoints the write-ahead log back into `store.sqlite` (so no `-wal`
    /// or `-shm` remain) and releases the writer lock.
    ///
    /// Waits for reads and writes in progress to end. A transaction from ``beginTransaction()``
    /// that is still open is rolled back when it has no changes; with changes, closing throws
    /// ``DeckError/unsavedChanges(path:)`` and the store stays open, unless `discardingChanges`
    /// says to drop them. Closing twice does nothing.
    public func close(discardingChanges: Bool = false) throws(DeckError) {
        let long: StoreTransaction?
        let proceed: Bool
        (proceed, long) = try state.withLock { state throws(DeckError) -> (Bool, StoreTransaction?) in
            if state.isClosed || state.isClosing { return (false, nil) }
            var open: StoreTransaction?
            if let transaction = state.longTransaction, transaction.isOpen {
                if transaction.hasChanges && !discardingChanges { throw DeckError.unsavedChanges(path: path) }
                open = transaction
            }
            state.isClosing = true
            return (true, open)
        }
        guard proceed else { return }
        // Ends it and lets the writer go (its user must not be using it meanwhile).
        long?.rollback()
        if writer != nil { writerQueue.acquire() }
        let idle: [StoreConnection] = state.withLock { state in
            state.isClosed = true
            defer { state.readers.removeAll() }
            state.readerCount -= state.readers.count
            return state.readers
        }
        for connection in idle { connection.close() }
        // Readers still lent close themselves when they are returned; wait for them, so that the
        // writer's checkpoint can fold the whole log in.
        for _ in 0..<configuration.maximumReaders { readerSlots.wait() }
        for _ in 0..<configuration.maximumReaders { readerSlots.signal() }
        writer?.close()
        commitObservers.close()
        let lock = state.withLock { state -> WriterLock? in
            defer { state.lock = nil }
            return state.lock
        }
        lock?.release()
        // Writers waiting meanwhile find the store closed.
        if writer != nil { writerQueue.release() }
    }
}
