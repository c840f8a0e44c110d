/// The main context's autosave: when the last change that restarts its quiet interval was made,
/// whether a task is waiting to save, and after a failed autosave with no change since, how long
/// it waits before it tries the same changes again; and that task, which runs on the main actor.
/// See ``ModelContext/autosaveEnabled``.
struct Autosave {
    /// When the last change that restarts the autosave's quiet interval was made.
    var lastChange: ContinuousClock.Instant?
    var isScheduled = false
    /// After a failed autosave with no change since: how long it waits before it tries the same
    /// changes again (a second or the autosave delay, doubling up to a minute), and when.
    var retry: (pause: Duration, at: ContinuousClock.Instant)?

    /// Starts a task on the main actor that saves once the quiet interval has passed, waiting
    /// again while changes keep coming; it holds the context weakly, so a context that goes away
    /// is not kept for it.
    static func schedule(_ context: ModelContext) {
        guard context.isMainContext, !context.autosaving.isScheduled else { return }
        context.autosaving.isScheduled = true
        if context.autosaving.lastChange == nil { context.autosaving.lastChange = .now }
        let box = WeakContext(context)
        Task { @MainActor in
            while true {
                switch box.context.map(Autosave.step) {
                case .wait(let due)?: try? await Task.sleep(until: due, clock: .continuous)
                case .save?:
                    // Waits for the writer without blocking the main actor.
                    if let context = box.context { await Autosave.saveSuspending(context) }
                    return
                case .stop?, nil: return
                }
            }
        }
    }

    enum Step {
        case wait(ContinuousClock.Instant)
        case save
        case stop
    }

    /// What the autosave does next: wait until the quiet interval has passed, save, or stop.
    private static func step(_ context: ModelContext) -> Step {
        guard context.autosaveEnabled, context.hasChanges, let lastChange = context.autosaving.lastChange
        else {
            context.autosaving.isScheduled = false
            return .stop
        }
        var due = lastChange + context.autosaveDelay
        if let retry = context.autosaving.retry, retry.at > due { due = retry.at }
        if ContinuousClock.now < due { return .wait(due) }
        context.autosaving.isScheduled = false
        return .save
    }

    /// Saves now as the autosave does, keeping a failure in ``lastAutosaveError``.
    static func save(_ context: ModelContext) {
        guard context.autosaveEnabled, context.hasChanges else { return }
        do {
            try context.save()
            context.lastAutosaveError = nil
        } catch {
            context.lastAutosaveError = error
        }
    }

    /// ``save(_:)``, waiting for this process's other writers by suspending.
    nonisolated(nonsending) static func saveSuspending(_ context: ModelContext) async {
        guard context.autosaveEnabled, context.hasChanges else { return }
        let changedBefore = context.autosaving.lastChange
        do {
            try await context.saveSuspending()
            context.lastAutosaveError = nil
            context.autosaving.retry = nil
        } catch {
            context.lastAutosaveError = error
            // Trying the same changes again at once would fail again, over and over; never
            // trying them again would keep a passing failure's changes unsaved. So the same
            // changes wait a pause that grows; the next change (which may fix what failed) ends it.
            if context.autosaving.lastChange == changedBefore {
                let pause =
                    context.autosaving.retry.map { min($0.pause * 2, .seconds(60)) }
                    ?? max(context.autosaveDelay, .seconds(1))
                context.autosaving.retry = (pause, .now + pause)
            }
        }
        // Changes made while it waited start a new quiet interval.
        if context.hasChanges { schedule(context) }
    }
}

/// A main context reached from its autosave task, which runs on the main actor as the context
/// does; weak, so the task does not keep the context.
private final class WeakContext: @unchecked Sendable {
    weak var context: ModelContext?

    init(_ context: ModelContext) { self.context = context }
}
