import Foundation

// How a context's models follow what other contexts (and other writers) save.
//
// Each context observes its store's commits (``PackageStore/observeCommits(_:)``). A commit that
// another writer of this process made lands, as its `ChangeSet`, in the context's inbox, on the
// committing thread; the context applies what its inbox holds at its next operation (a fetch, a
// count, a save, a lookup by identifier, `processPendingChanges()`), on its own isolation domain,
// and the main context also right away on the main actor. A context of a read-only container
// asks the store at each operation whether another process committed, and if so refreshes every
// model it holds.

/// What other writers committed that a context has not applied yet: filled on the committing
/// thread, emptied by the context (``ModelContext/mergeCommittedChanges()``).
final class MergeInbox: Sendable {
    enum Contents {
        /// The change sets of the commits, in the order they were made.
        case changes([ChangeSet])
        /// More changed in all than is worth listing: every registered model is read again.
        case everything
    }

    private struct State {
        var changes: [ChangeSet] = []
        /// How many updated and deleted records `changes` names.
        var records = 0
        var everything = false
        /// Whether the context was asked to apply the inbox since it last took it.
        var isApplyRequested = false
    }
    private let state = Locked(State())

    /// How many updated and deleted records an inbox lists before it stops listing them and asks
    /// for every registered model to be read again: its memory stays bounded however much other
    /// writers change while the context does nothing (the change sets themselves are shared by
    /// every inbox that holds them).
    static let recordLimit = 10_000

    /// Adds a commit's changes. Returns true when the context should now be asked to apply its
    /// inbox (once until it takes it). A commit that only inserted records changes nothing a
    /// context holds (a new record that relates to a held one marks that one updated), and is
    /// not kept.
    func deliver(_ changes: ChangeSet) -> Bool {
        let records =
            changes.updated.values.reduce(0) { $0 + $1.count }
            + changes.deleted.values.reduce(0) { $0 + $1.count }
        guard records > 0 else { return false }
        return state.withLock { state in
            if !state.everything {
                state.records += records
                if state.records > Self.recordLimit {
                    state.everything = true
                    state.changes = []
                } else {
                    state.changes.append(changes)
                }
            }
            defer { state.isApplyRequested = true }
            return !state.isApplyRequested
        }
    }

    /// Empties the inbox, returning what it held (nil when nothing).
    func take() -> Contents? {
        state.withLock { state in
            state.isApplyRequested = false
            guard state.everything || !state.changes.isEmpty else { return nil }
            defer { state = State() }
            return state.everything ? .everything : .changes(state.changes)
        }
    }
}

/// A context's part in merging: its inbox, its registration with the store, and (for a
/// read-only store) the store's data version it last saw.
struct MergeState {
    let inbox = MergeInbox()
    /// The store's registration of the inbox; the context's saves are made as it (``StoreTransaction/author``),
    /// so that the context does not hear of them. Goes away with the context.
    var observation: CommitObservation?
    var isApplying = false
    /// For a read-only store: ``PackageStore/dataVersion()`` when last checked.
    var dataVersion: Int64?
}

/// The main context, reached weakly from the task that applies its inbox on the main actor.
private final class WeakMainContext: @unchecked Sendable {
    weak let context: ModelContext?

    init(_ context: ModelContext) { self.context = context }
}

extension MergeState {
    /// Starts hearing of `context`'s store's commits: each lands in the inbox, and the main
    /// context applies them on the main actor, where it lives, without waiting for its next
    /// operation (and so the models' observers, the UI, hear of them).
    mutating func start(for context: ModelContext) {
        let inbox = self.inbox
        let main = context.isMainContext ? WeakMainContext(context) : nil
        observation = context.store.observeCommits { changes in
            guard inbox.deliver(changes), let main else { return }
            Task { @MainActor in main.context?.mergeCommittedChanges() }
        }
        if context.store.mode == .readOnly { dataVersion = context.store.dataVersion() }
    }

    /// Empties the inbox, returning what it held; for a read-only store, everything when another
    /// process has committed since the last look.
    mutating func take(from store: PackageStore) -> MergeInbox.Contents? {
        var contents = inbox.take()
        if store.mode == .readOnly, let version = store.dataVersion() {
            if let known = dataVersion, known != version { contents = .everything }
            dataVersion = version
        }
        return contents
    }
}

extension ModelContext {
    /// Writes the context's changes into `transaction` for a save: as the context's own, which
    /// its observation does not hear of.
    func flushForSave(into transaction: StoreTransaction) throws(DeckError) -> FlushResult {
        transaction.author = merging.observation
        return try flush(into: transaction)
    }

    /// Brings the models this context holds in step with what other writers committed since it
    /// last did (``CommitMerge``): called at the start of each of its operations.
    func mergeCommittedChanges() {
        guard !merging.isApplying, let contents = merging.take(from: store) else { return }
        merging.isApplying = true
        defer { merging.isApplying = false }
        var merge = CommitMerge(context: self)
        merge.note(contents)
        merge.run()
    }

    /// Reads the records of `objects` (registered or not, persisted models) again, as a merge of
    /// updates does: each property that differs takes the saved value, its observers told.
    func reread(_ objects: [AnyObject]) {
        guard !objects.isEmpty else { return }
        var merge = CommitMerge(context: self)
        for object in objects { merge.noteUpdated(object) }
        merge.run()
    }
}
