import Foundation

// Observed fetches: what ``ModelContext/fetchUpdates(_:pollingEvery:)`` and ``QueryResults``
// share. A `FetchObserver` fetches, then waits for what can change its results and fetches again
// only when they changed:
//
// - this process's commits (any context's save, the record API's writes) reach its
//   `FetchSignal` through ``PackageStore/observeCommits(_:)``, on the committing thread; the
//   signal merges them until the observer looks, so a burst of commits is one look;
// - another process can commit only while this process has the document open read-only (a
//   writer holds the lock); then the observer reads ``PackageStore/dataVersion()`` (`PRAGMA
//   data_version`) once per interval, while it waits, and never otherwise.
//
// A look reads the rows the fetch's store query returns (record ids and values, no models) and
// compares them with the last look's; the fetch runs again, making the models, only when they
// differ or a commit updated one of them (a relationship of a result changed on the other side).
// The observer has no task of its own: it waits inside its caller's `next()`, on the caller's
// isolation (the context's), so ending the caller's task ends everything.

/// The commits of this process a fetch observer has heard of since it last looked, merged, and
/// the observer waiting for them.
final class FetchSignal: Sendable {
    /// What commits changed, merged.
    struct Heard {
        /// The entities whose records were inserted, updated or deleted.
        var entities: Set<String> = []
        /// The updated and deleted records, by entity; nil past ``recordLimit`` (any may have).
        var touched: [String: Set<Int64>]? = [:]
        var count = 0

        /// At most this many records are listed: past it, any record counts as touched.
        static let recordLimit = 10_000

        mutating func add(_ changes: ChangeSet) {
            entities.formUnion(changes.inserted.keys)
            for (entity, ids) in changes.updated { note(entity, ids) }
            for (entity, ids) in changes.deleted { note(entity, ids) }
        }

        private mutating func note(_ entity: String, _ ids: Set<Int64>) {
            entities.insert(entity)
            guard touched != nil else { return }
            count += ids.count
            if count > Self.recordLimit {
                touched = nil
            } else {
                touched?[entity, default: []].formUnion(ids)
            }
        }

        /// Whether `row` is a record a commit updated or deleted.
        func touches(_ row: FetchObserverRow) -> Bool {
            guard let touched else { return true }
            return touched[row.entity]?.contains(row.id) == true
        }
    }

    private struct State {
        var heard: Heard?
        var waiter: CheckedContinuation<Void, Never>?
        var isCancelled = false
    }
    private let state = Locked(State())

    /// Adds a commit's changes, waking the observer if it waits (on the committing thread).
    func deliver(_ changes: ChangeSet) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.heard == nil { state.heard = Heard() }
            state.heard?.add(changes)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// What was heard since the last call; nil when nothing.
    func take() -> Heard? {
        state.withLock { state in
            defer { state.heard = nil }
            return state.heard
        }
    }

    /// Waits until a commit was heard that was not taken yet. False when the task is cancelled.
    nonisolated(nonsending) func wait() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.heard != nil || state.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
            return !Task.isCancelled
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.isCancelled = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}

/// One row of what a fetch's store query returns, as an observer compares them.
struct FetchObserverRow: Equatable {
    let entity: String
    let id: Int64
    let cells: [Value]
}

/// Fetches `descriptor` in `context`, then again each time a commit changes its results (see the
/// comment at the top of this file). Used on the context's isolation only.
final class FetchObserver<T: PersistentModel> {
    let context: ModelContext
    let descriptor: FetchDescriptor<T>
    /// How often a read-only document is asked whether another process committed.
    let interval: Duration
    private let signal = FetchSignal()
    /// The store's registration of ``signal``; the observer hears nothing more once it goes.
    private var observation: CommitObservation?
    /// The rows of the last look (nil when they could not be read).
    private var rows: [FetchObserverRow]?
    /// A read-only document's ``PackageStore/dataVersion()`` at the last look.
    private var dataVersion: Int64?
    /// The entities whose records the results can be (the fetched one and its subentities), when
    /// only those can change them: a fetch with no predicate and no sort. Nil when a commit to
    /// any entity can (a predicate or a sort may read related records).
    private let entities: Set<String>?
    private var isStarted = false

    init(context: ModelContext, descriptor: FetchDescriptor<T>, interval: Duration) {
        self.context = context
        self.descriptor = descriptor
        self.interval = interval
        if descriptor.predicate == nil && descriptor.sortBy.isEmpty {
            entities = Self.hierarchy(of: T.entityName, in: context.store.schema)
        } else {
            entities = nil
        }
    }

    /// `name` and the entities that inherit from it.
    private static func hierarchy(of name: String, in schema: StoreSchema) -> Set<String> {
        var names: Set<String> = [name]
        for entity in schema.entities {
            var parent = entity.superentity
            var steps = 0
            while let current = parent, steps < schema.entities.count {
                if current == name {
                    names.insert(entity.name)
                    break
                }
                parent = schema.entity(named: current)?.superentity
                steps += 1
            }
        }
        return names
    }

    /// The results: first what the fetch returns now, then what it returns after each commit that
    /// changes that; nil once the caller's task is cancelled.
    nonisolated(nonsending) func next() async throws(DeckError) -> [T]? {
        guard isStarted else { return try start() }
        let store = context.store
        while true {
            var moved = false
            if store.mode == .readOnly {
                // Only another process can commit: ask the store once per interval.
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    return nil
                }
                let version = store.dataVersion()
                guard version != dataVersion else { continue }
                dataVersion = version
                moved = true
            } else {
                guard await signal.wait() else { return nil }
            }
            let heard = signal.take()
            if !moved {
                guard let heard else { continue }
                if let entities, entities.isDisjoint(with: heard.entities) { continue }
            }
            let now = try? readRows()
            var changed = now == nil || now != rows
            if !changed, let heard, let now { changed = now.contains { heard.touches($0) } }
            rows = now
            if changed { return try context.fetch(descriptor) }
        }
    }

    /// Starts hearing of commits, then fetches: the first results.
    func start() throws(DeckError) -> [T] {
        isStarted = true
        let signal = signal
        observation = context.store.observeCommits { changes in signal.deliver(changes) }
        if context.store.mode == .readOnly { dataVersion = context.store.dataVersion() }
        rows = try? readRows()
        return try context.fetch(descriptor)
    }

    /// The rows the fetch's store query returns now, as saved: record ids and values.
    private func readRows() throws(DeckError) -> [FetchObserverRow] {
        let query = try context.fetcher.recordQuery(for: descriptor)
        var rows: [FetchObserverRow] = []
        do {
            try context.store.read { reader in
                try reader.forEachRow(query) { row in
                    rows.append(FetchObserverRow(entity: row.entity, id: row.id, cells: row.cells))
                }
            }
        } catch {
            throw DeckError.wrap(error)
        }
        return rows
    }
}
