import DeckStore

// Batch faulting: a list of fetched models usually reads the same to-one relationship of each
// model in turn (`card.deck.title` for each card). The first read that finds its target not yet
// in the context loads, in one statement, the targets of the next models of the same fetch too,
// and sets their relationship as their own reads would have; the reads that follow find them
// loaded. Without it each new target costs a statement of its own.

/// The record ids of a fetch's models, in its order: where a relationship's read finds the models
/// fetched after its own (``ModelContext/lastFetched``). Ids, not models: it keeps none alive.
final class FetchedNeighbours {
    /// The root entity of the models (``ModelMetadata/rootKey``).
    let root: ObjectIdentifier
    let ids: [Int64]
    /// Each id's place in ``ids``, made on the first read that needs it.
    private var positions: [Int64: Int]?

    init(root: ObjectIdentifier, ids: [Int64]) {
        self.root = root
        self.ids = ids
    }

    /// The place of record `id` in the fetch, if it was fetched.
    func position(of id: Int64) -> Int? {
        if let positions { return positions[id] }
        var made: [Int64: Int] = [:]
        made.reserveCapacity(ids.count)
        for (position, id) in ids.enumerated() { made[id] = position }
        positions = made
        return made[id]
    }
}

extension Faulting {
    /// At most this many targets load in one batch.
    static let faultingBatchTargets = 100
    /// At most this many models after the one read are looked at for one batch.
    static let faultingBatchModels = 5_000

    /// Remembers the fetched `models` (of `metadata`'s type) as the neighbours of their to-one
    /// reads, when the type has a to-one relationship.
    func noteFetched(_ models: [AnyObject], metadata: ModelMetadata) {
        guard metadata.relationships.contains(where: { !$0.access.isToMany }) else { return }
        var ids: [Int64] = []
        ids.reserveCapacity(models.count)
        for model in models {
            if let id = ModelBacking.of(model).rowID { ids.append(id) }
        }
        context.lastFetched = FetchedNeighbours(root: metadata.rootKey, ids: ids)
    }

    /// Loads to-one relationship `accessor` of the model of `backing`, whose target, record
    /// `target` of `destination`, the context does not hold, together with the same relationship
    /// of the models fetched after it (``lastFetched``) that have not loaded it: up to
    /// ``faultingBatchTargets`` targets in one statement. Returns the model's target, or nil when
    /// the model is not one of the last fetch's (the caller then loads it alone).
    func loadToOneOfNeighbours(
        _ accessor: PropertyAccessor, destination: ModelMetadata, around backing: ModelBacking, target: Int64
    ) throws(DeckError) -> AnyObject? {
        guard let neighbours = context.lastFetched, neighbours.root == backing.metadata.rootKey,
            let id = backing.rowID, let start = neighbours.position(of: id)
        else { return nil }
        let index = accessor.index
        var waiting: [(model: AnyObject, backing: ModelBacking, target: Int64)] = []
        var missing: Set<Int64> = [target]
        let end = min(neighbours.ids.count, start + 1 + Self.faultingBatchModels)
        for position in (start + 1)..<max(start + 1, end) {
            guard missing.count < Self.faultingBatchTargets else { break }
            guard let model = context.registry.object(root: neighbours.root, id: neighbours.ids[position])
            else {
                continue
            }
            let other = ModelBacking.of(model)
            // The same relationship (a sibling subentity's model has other properties), still waiting.
            guard index < other.metadata.properties.count, other.metadata.properties[index] === accessor,
                case .toOne(let otherTarget?)? = other.pendingValue(index)
            else { continue }
            if context.registry.object(root: destination.rootKey, id: otherTarget) == nil {
                missing.insert(otherTarget)
            }
            waiting.append((model, other, otherTarget))
        }
        var loaded: [Int64: AnyObject] = [:]
        for object in try instances(of: destination, ids: Array(missing)) {
            if let id = ModelBacking.of(object).rowID { loaded[id] = object }
        }
        for (_, other, otherTarget) in waiting {
            guard
                let object = loaded[otherTarget]
                    ?? context.registry.object(root: destination.rootKey, id: otherTarget),
                destination.admits(object)
            else { continue }
            other.setToOne(.record(otherTarget), of: accessor, held: object)
        }
        return loaded[target]
    }
}
