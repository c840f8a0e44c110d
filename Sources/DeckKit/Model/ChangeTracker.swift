/// The models of a context with unsaved changes: inserted (in the order of their insertion),
/// changed (saved models with changed properties) and deleted (in the order of their deletion),
/// held strongly until a save or a rollback. Each model is in one set at most.
struct ChangeTracker {
    private(set) var inserted: [ObjectIdentifier: AnyObject] = [:]
    private var insertionOrder: [ObjectIdentifier] = []
    private(set) var changed: [ObjectIdentifier: AnyObject] = [:]
    private(set) var deleted: [ObjectIdentifier: AnyObject] = [:]
    private var deletionOrder: [ObjectIdentifier] = []

    /// True when a model is inserted, changed or deleted.
    var hasChanges: Bool { !inserted.isEmpty || !changed.isEmpty || !deleted.isEmpty }

    /// The inserted models, in the order they were inserted.
    var insertedObjects: [AnyObject] { insertionOrder.compactMap { inserted[$0] } }

    /// The deleted models, in the order they were deleted.
    var deletedObjects: [AnyObject] { deletionOrder.compactMap { deleted[$0] } }

    /// Every model with an unsaved change.
    var allObjects: [AnyObject] { Array(inserted.values) + Array(changed.values) + Array(deleted.values) }

    mutating func insert(_ object: AnyObject) {
        let key = ObjectIdentifier(object)
        inserted[key] = object
        insertionOrder.append(key)
    }

    /// Forgets inserted model `key` (deleted before it was saved).
    mutating func removeInserted(_ key: ObjectIdentifier) {
        inserted[key] = nil
        insertionOrder.removeAll { $0 == key }
    }

    @inline(__always)
    mutating func change(_ object: AnyObject) {
        changed[ObjectIdentifier(object)] = object
    }

    mutating func delete(_ object: AnyObject) {
        let key = ObjectIdentifier(object)
        changed[key] = nil
        deleted[key] = object
        deletionOrder.append(key)
    }

    /// Forgets deleted model `key` (undeleted, or its record deleted by another writer).
    mutating func removeDeleted(_ key: ObjectIdentifier) {
        if deleted.removeValue(forKey: key) != nil { deletionOrder.removeAll { $0 == key } }
    }

    /// Forgets what `key` changed or deleted (its record is gone).
    mutating func forget(_ key: ObjectIdentifier) {
        changed[key] = nil
        removeDeleted(key)
    }

    /// Forgets every change (after a save or a rollback).
    mutating func removeAll() {
        self = ChangeTracker()
    }
}
