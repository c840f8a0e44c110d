import Dispatch

/// What runs a ``ModelActor``'s work, and the context that work uses: SwiftData's
/// `ModelExecutor`.
public protocol ModelExecutor: AnyObject, Sendable {
    /// The context of the actor this executor runs; used only by that actor's work.
    var modelContext: ModelContext { get }
}

/// A ``ModelExecutor`` that is a serial executor: the actor's work runs on it one job at a time.
public protocol SerialModelExecutor: ModelExecutor, SerialExecutor {}

/// Runs a model actor's jobs one at a time on a dispatch queue of its own, never on Swift
/// concurrency's shared threads: a context's work blocks on I/O (a save waits for this process's
/// other writers and for the disk), which must not hold one of those few threads.
///
/// It owns the actor's ``ModelContext``; the context is used only by the jobs it runs, which is
/// why the executor may be `Sendable` while the context is not.
public final class DefaultSerialModelExecutor: SerialModelExecutor, @unchecked Sendable {
    /// The actor's context.
    public let modelContext: ModelContext
    private let queue: DispatchQueue

    /// An executor for the actor whose context is `modelContext`, which is handed over: the
    /// caller cannot use it afterwards (`sending`). Use the context only from the actor's work;
    /// ``modelContext`` is reachable from anywhere, as in SwiftData, but is not for other code.
    public init(modelContext: sending ModelContext) {
        self.modelContext = modelContext
        queue = DispatchQueue(label: "deck.model-executor")
    }

    /// Runs `job` on the executor's queue, after the jobs enqueued before it.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    /// This executor, as the actor's `unownedExecutor` returns it.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}

/// An actor that works with models off the main actor: SwiftData's `ModelActor` (whose macro
/// `@ModelActor` wrote the stored properties and the initializer that Deck's users write out).
///
/// ```swift
/// actor Importer: ModelActor {
///     nonisolated let modelContainer: ModelContainer
///     nonisolated let modelExecutor: any ModelExecutor
///
///     init(modelContainer: ModelContainer) {
///         self.modelContainer = modelContainer
///         modelExecutor = DefaultSerialModelExecutor(modelContext: ModelContext(modelContainer))
///     }
///
///     func addCards(_ fronts: [String]) throws -> [PersistentIdentifier] {
///         let cards = fronts.map { Card(front: $0) }
///         for card in cards { modelContext.insert(card) }
///         try modelContext.save()
///         return cards.map(\.persistentModelID)
///     }
/// }
/// ```
///
/// The actor runs on its ``modelExecutor`` (the protocol provides `unownedExecutor`), so its
/// work blocks a queue of its own, never the shared threads. Its models stay in it: a model is
/// not `Sendable`, so handing one to another actor does not compile; hand over its
/// ``PersistentModel/persistentModelID`` and look it up there.
public protocol ModelActor: Actor {
    /// The container whose document the actor works on.
    nonisolated var modelContainer: ModelContainer { get }
    /// The executor that runs the actor and owns its context.
    nonisolated var modelExecutor: any ModelExecutor { get }
}

extension ModelActor {
    /// The actor's context.
    public var modelContext: ModelContext { modelExecutor.modelContext }

    /// The actor runs on its ``modelExecutor``, which must be a ``SerialModelExecutor`` (as
    /// ``DefaultSerialModelExecutor`` is): one that is not stops the program, naming the actor.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        guard let serial = modelExecutor as? any SerialModelExecutor else {
            preconditionFailure(
                "\(Self.self): a ModelActor's modelExecutor must be a SerialModelExecutor, "
                    + "such as DefaultSerialModelExecutor")
        }
        return serial.asUnownedSerialExecutor()
    }

    /// The model with `id` in the actor's context: the registered instance, or one fetched for
    /// it; nil when no record has that id or it is not a `T`.
    public subscript<T: PersistentModel>(id: PersistentIdentifier, as type: T.Type) -> T? {
        (try? modelContext.model(for: id)) as? T
    }
}
