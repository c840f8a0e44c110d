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

    /// Makes `object` the instance of record `id` of `root`.
    mutating func register(_ object: AnyObject, root: ObjectIdentifier, id: Int64) {
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
