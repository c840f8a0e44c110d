import Foundation

/// What to fetch: SwiftData's `FetchDescriptor`, for ``ModelContext/fetch(_:)`` and its kin.
///
/// ```swift
/// var descriptor = FetchDescriptor<Card>(
///     predicate: #Predicate { $0.front.contains("hola") },
///     sortBy: [SortDescriptor(\.creationDate, order: .reverse)])
/// descriptor.fetchLimit = 20
/// ```
///
/// The predicate and the sort run in the store, as SQL; a predicate the store cannot run is an
/// error naming the part, never a filter in memory.
public struct FetchDescriptor<T: PersistentModel> {
    /// Which models to fetch (all when nil).
    public var predicate: Predicate<T>?
    /// The order; ties and an empty list leave the order to the store (by record id).
    public var sortBy: [SortDescriptor<T>]
    /// At most this many models.
    public var fetchLimit: Int?
    /// Skips this many models first.
    public var fetchOffset: Int?
    /// Whether the context's unsaved changes count (true, as in SwiftData): an inserted model that
    /// matches is fetched, a deleted one is not, a changed one is matched by its new values.
    public var includePendingChanges = true
    /// Accepted for SwiftData's sake; Deck loads every attribute but external blobs, which load
    /// when first read.
    public var propertiesToFetch: [PartialKeyPath<T>] = []
    /// Relationships to load with the fetched models (each a relationship of `T`, one step): a
    /// fixed number of statements for all of them — the related ids in one, the related records
    /// in one per 10,000 — instead of one or two statements per model when each is first read.
    public var relationshipKeyPathsForPrefetching: [PartialKeyPath<T>] = []

    /// A descriptor of the models that match `predicate`, in the order of `sortBy`.
    public init(predicate: Predicate<T>? = nil, sortBy: [SortDescriptor<T>] = []) {
        self.predicate = predicate
        self.sortBy = sortBy
    }
}
