import DeckSQLite
import Foundation

/// Who in this process hears of a store's commits, and how a read-only store notices another
/// process's.
///
/// The model layer keeps the models of its contexts in step with each other through it: each
/// context observes the store, and a save tells every context but the one that made it.
final class CommitObservers: Sendable {
    private struct State {
        var nextID = 0
        var observers: [(id: Int, deliver: @Sendable (ChangeSet) -> Void)] = []
        /// A read-only store's connection that reads nothing but `PRAGMA data_version` (made on
        /// first need, closed with the store).
        var watcher: Database?
        var isClosed = false
    }
    private let state = Locked(State())

    func add(_ deliver: @escaping @Sendable (ChangeSet) -> Void) -> Int {
        state.withLock { state in
            state.nextID += 1
            state.observers.append((state.nextID, deliver))
            return state.nextID
        }
    }

    /// How many observers there are.
    var count: Int { state.withLock { $0.observers.count } }

    func remove(_ id: Int) {
        state.withLock { state in state.observers.removeAll { $0.id == id } }
    }

    /// Tells every observer but `author` of a commit's changes.
    func deliver(_ changes: ChangeSet, author: Int?) {
        guard !changes.isEmpty else { return }
        let observers = state.withLock { $0.observers }
        for observer in observers where observer.id != author { observer.deliver(changes) }
    }

    /// The watcher's `PRAGMA data_version`, opening the watcher on first use; nil once the store
    /// is closed or when the connection cannot be opened or read.
    func dataVersion(packagePath: String) -> Int64? {
        state.withLock { state -> Int64? in
            guard !state.isClosed else { return nil }
            do {
                if state.watcher == nil {
                    state.watcher = try PackageDirectory.openReaderDatabase(packagePath: packagePath)
                }
                return try state.watcher?.pragma("data_version")?.int64
            } catch {
                return nil
            }
        }
    }

    /// The store is closing: the watcher closes, and no observer hears of anything more.
    func close() {
        let watcher = state.withLock { state -> Database? in
            state.isClosed = true
            state.observers = []
            defer { state.watcher = nil }
            return state.watcher
        }
        watcher?.close()
    }
}

/// A registration of ``PackageStore/observeCommits(_:)``; the observer hears nothing more once
/// it goes away (or ``cancel()`` runs).
package final class CommitObservation: Sendable {
    /// The observer's number: a transaction whose ``StoreTransaction/author`` it is tells every
    /// observer of its commit but this one.
    let id: Int
    private let observers: CommitObservers

    init(id: Int, observers: CommitObservers) {
        self.id = id
        self.observers = observers
    }

    deinit { cancel() }

    /// Stops the observer hearing of commits.
    package func cancel() { observers.remove(id) }
}

extension PackageStore {
    /// Calls `observer` with what each commit of this store's writer (in this process) changed,
    /// unless it changed no record or its transaction's ``StoreTransaction/author`` is the
    /// returned observation (a context does not hear of its own saves).
    ///
    /// `observer` runs on the committing thread, right after the commit, while that thread still
    /// holds the writer: observers hear of commits in the order they were made, and must be quick
    /// (another writer waits) and must not write to the store (the writer is taken). Another
    /// process's commits are not told (see ``dataVersion()``). The store keeps `observer` until
    /// the observation goes away or the store closes; `observer` should not hold what keeps the
    /// observation, or neither goes away.
    package func observeCommits(_ observer: @escaping @Sendable (ChangeSet) -> Void) -> CommitObservation {
        CommitObservation(id: commitObservers.add(observer), observers: commitObservers)
    }

    /// For a read-only store, a number that changes when another process commits to the store:
    /// SQLite's `PRAGMA data_version` on a connection of its own that reads nothing else, so that
    /// only other connections' commits move it. Nil for a store this process can write (no other
    /// process can write it then), for a closed store, and when the number cannot be read.
    package func dataVersion() -> Int64? {
        guard mode == .readOnly else { return nil }
        return commitObservers.dataVersion(packagePath: path)
    }
}
