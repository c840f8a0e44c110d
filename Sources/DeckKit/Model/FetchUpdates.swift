import Foundation
import Observation

extension ModelContext {
    /// The results of `descriptor`, now and again each time the document changes them: an
    /// asynchronous sequence whose first element is what ``fetch(_:)`` returns now, and each next
    /// one what it returns after a commit that changed that. What SwiftData's `@Query` does for a
    /// view, for any code (see ``QueryResults`` for an `Observable` object).
    ///
    /// ```swift
    /// for try await cards in context.fetchUpdates(FetchDescriptor<Card>(sortBy: [SortDescriptor(\.front)])) {
    ///     print(cards.map(\.front))
    /// }
    /// ```
    ///
    /// A commit that can change the results is a save of this context or of another context of
    /// the same document in this process (or a write of the record API), and, while the document
    /// is open read-only here, a commit of another process. The results are fetched again only
    /// when such a commit changed which records the fetch returns, their order, their saved
    /// values, or updated one of them (a relationship changed on the other side): a commit that
    /// changes nothing the fetch returns yields nothing. Commits that come while the consumer is
    /// busy are looked at together: a burst of saves yields once. Another process's commits are
    /// noticed by asking the store every `interval` (a cheap check, `PRAGMA data_version`), only
    /// while the document is open read-only and the sequence is waiting for its next element.
    ///
    /// Use the sequence where the context lives, as its models do: on the main actor for
    /// ``ModelContainer/mainContext``, in the actor's work for a ``ModelActor``'s context. It has
    /// no task of its own: ending the task that iterates it stops everything. A fetch that fails
    /// ends it with the error.
    public func fetchUpdates<T: PersistentModel>(
        _ descriptor: FetchDescriptor<T>, pollingEvery interval: Duration = .milliseconds(500)
    ) -> FetchUpdates<T> {
        FetchUpdates(context: self, descriptor: descriptor, interval: interval)
    }
}

/// The results of a fetch as the document changes them: ``ModelContext/fetchUpdates(_:pollingEvery:)``.
///
/// Not `Sendable`: it holds its context, and is iterated where the context lives.
public struct FetchUpdates<T: PersistentModel>: AsyncSequence {
    /// The fetched models.
    public typealias Element = [T]
    /// What a failed fetch throws.
    public typealias Failure = DeckError

    let context: ModelContext
    let descriptor: FetchDescriptor<T>
    let interval: Duration

    /// Starts observing: the first element is the fetch's results when it is asked for.
    public func makeAsyncIterator() -> Iterator {
        Iterator(observer: FetchObserver(context: context, descriptor: descriptor, interval: interval))
    }

    /// Yields the fetch's results, then its results after each change of them.
    public struct Iterator: AsyncIteratorProtocol {
        let observer: FetchObserver<T>

        /// The results now (the first call), or once a commit changed them; nil when the task is
        /// cancelled.
        public mutating func next() async throws(DeckError) -> [T]? {
            try await observer.next()
        }

        /// ``next()`` on `actor`, the caller's isolation (where the context lives).
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(DeckError) -> [T]? {
            try await observer.next()
        }
    }
}

/// The results of a fetch, kept up to date as the document changes them, and `Observable`: the
/// closest thing to SwiftData's `@Query` without SwiftUI.
///
/// ```swift
/// let cards = try QueryResults(FetchDescriptor<Card>(sortBy: [SortDescriptor(\.front)]), in: context)
/// withObservationTracking { _ = cards.models } onChange: { print("the cards changed") }
/// ```
///
/// ``models`` changes, and its observers are told, when ``ModelContext/fetchUpdates(_:pollingEvery:)``
/// would yield. It lives on the main actor, with its context (``ModelContainer/mainContext``, or
/// another context used there). Observing stops when the object goes away.
@MainActor
public final class QueryResults<T: PersistentModel>: Observable {
    private let registrar = ObservationRegistrar()
    private var current: [T]
    private var currentError: DeckError?
    private var task: Task<Void, Never>?

    /// The fetch's results, as of the last commit that changed them.
    public var models: [T] {
        registrar.access(self, keyPath: \.models)
        return current
    }

    /// The last fetch's failure, nil after one that succeeded. ``models`` keeps what it held.
    public var error: DeckError? {
        registrar.access(self, keyPath: \.error)
        return currentError
    }

    /// Fetches `descriptor` in `context` now (throwing when that fails), and again whenever a
    /// commit changes its results (see ``ModelContext/fetchUpdates(_:pollingEvery:)``, and
    /// `interval` there).
    public init(
        _ descriptor: FetchDescriptor<T>, in context: ModelContext,
        pollingEvery interval: Duration = .milliseconds(500)
    ) throws(DeckError) {
        let observer = FetchObserver(context: context, descriptor: descriptor, interval: interval)
        current = try observer.start()
        task = Task { [weak self] in
            while true {
                do throws(DeckError) {
                    guard let models = try await observer.next() else { return }
                    guard let self else { return }
                    self.registrar.withMutation(of: self, keyPath: \.models) { self.current = models }
                    if self.currentError != nil {
                        self.registrar.withMutation(of: self, keyPath: \.error) { self.currentError = nil }
                    }
                } catch {
                    guard let self else { return }
                    self.registrar.withMutation(of: self, keyPath: \.error) { self.currentError = error }
                }
            }
        }
    }

    deinit { task?.cancel() }
}
