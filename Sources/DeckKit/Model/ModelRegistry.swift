import DeckStore

/// A context's instances by record: one per record (uniquing), found by the record's root entity
/// and id, not retained.
///
/// An entry is removed by the instance's backing when the instance goes away
/// (``ModelContext/unregister(_:_:_:)``), so an entry always names a live instance; it is kept as
/// an unretained pointer, which costs nothing to store or drop. A fetch registers one entry per
/// model and the model's end removes it, so both are on the fetch's hot path: each root entity
/// has an open-addressing table of record ids (``RowTable``: linear probing, a tombstone per
/// removal), an id in its own slot rather than hashed by `Hasher`'s SipHash.
struct ModelRegistry {
    /// The tables by root entity (``ModelMetadata/rootKey``): a schema has a handful, searched in order.
    private var tables: [(root: ObjectIdentifier, table: RowTable)] = []

    /// The number of entries.
    var count: Int { tables.reduce(0) { $0 + $1.table.count } }

    var isEmpty: Bool { tables.allSatisfy { $0.table.count == 0 } }

    /// The instance of record `id` of root entity `root`, if there is one.
    @inline(__always)
    func object(root: ObjectIdentifier, id: Int64) -> AnyObject? {
        for entry in tables where entry.root == root { return entry.table.object(id) }
        return nil
    }

    /// The table of root entity `root`, if it has one.
    func table(root: ObjectIdentifier) -> RowTable? {
        for entry in tables where entry.root == root { return entry.table }
        return nil
    }

    /// The models `references` name, in order, when every one is at hand: a held model, or the
    /// registered instance of a record, of `destination`'s entity or a descendant; nil as soon as
    /// one is not (the caller then reads the missing records). One table lookup for the list and
    /// a probe per record, in code that is not generic: a to-many read resolves its whole list
    /// each time (its models are not kept, so that they do not keep each other alive).
    func objects(of references: [ModelReference], destination: ModelMetadata) -> [AnyObject]? {
        let found = table(root: destination.rootKey)
        let expected = ObjectIdentifier(destination.type)
        var result: [AnyObject] = []
        result.reserveCapacity(references.count)
        for reference in references {
            switch reference {
            case .model(let model): result.append(model)
            case .record(let id):
                // The destination's own class first: a type comparison rather than a walk.
                guard let object = found?.object(id),
                    ObjectIdentifier(type(of: object)) == expected || destination.admits(object)
                else { return nil }
                result.append(object)
            }
        }
        return result
    }

    /// Changes with every entry made or removed and every change to a model's relationship
    /// state (``ModelBacking/setPending(_:_:)``): a value made from the registry while it has not
    /// changed would be made the same again (``ModelBacking/batchValue(_:)``).
    var generation = 0

    /// Makes `object` the instance of record `id` of `root`.
    mutating func register(_ object: AnyObject, root: ObjectIdentifier, id: Int64) {
        generation &+= 1
        let pointer = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
        for index in tables.indices where tables[index].root == root {
            tables[index].table.set(id, pointer)
            return
        }
        var table = RowTable()
        table.set(id, pointer)
        tables.append((root, table))
    }

    /// Removes the entry of record `id` of `root`, when it names `object` (or, with nil, whatever
    /// it names); returns the instance it named.
    @discardableResult
    mutating func remove(root: ObjectIdentifier, id: Int64, ifObject object: ObjectIdentifier? = nil)
        -> AnyObject?
    {
        generation &+= 1
        for index in tables.indices where tables[index].root == root {
            return tables[index].table.remove(
                id, ifPointer: object.flatMap { UnsafeRawPointer(bitPattern: UInt(bitPattern: $0)) })
        }
        return nil
    }

    /// Calls `body` with each registered instance of the root entities `includes` accepts, without
    /// collecting them (`body` must not change the registry, nor end an instance's life).
    func forEachObject(inRoots includes: (ObjectIdentifier) -> Bool, _ body: (AnyObject) -> Void) {
        for entry in tables where entry.table.count > 0 && includes(entry.root) {
            entry.table.forEachObject(body)
        }
    }

    /// Every registered instance.
    var objects: [AnyObject] {
        var all: [AnyObject] = []
        all.reserveCapacity(count)
        for entry in tables { entry.table.forEachObject { all.append($0) } }
        return all
    }
}
