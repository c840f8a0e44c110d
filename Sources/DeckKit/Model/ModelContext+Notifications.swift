import Foundation

extension ModelContext {
    /// Posted on `NotificationCenter.default` by a context (the notification's `object`) as a
    /// save with changes begins, before anything is written: SwiftData's `willSave`. It carries
    /// no user info. An observer runs on the saving thread, inside the save, and must not change
    /// the context's models (what it changes may or may not be in this save).
    public static let willSave = Notification.Name("DeckKit.ModelContext.willSave")

    /// Posted on `NotificationCenter.default` by a context (the notification's `object`) once a
    /// save has committed: SwiftData's `didSave`. Its user info holds, under each
    /// ``NotificationKey``'s raw value, the `[PersistentIdentifier]` of the records the save
    /// inserted, updated and deleted (the deleted ones being the models this context deleted or
    /// held when a delete rule cascaded to them). A save that fails posts nothing after
    /// ``willSave``; a save with nothing to write posts neither.
    ///
    /// ```swift
    /// let observation = NotificationCenter.default.addObserver(
    ///     forName: ModelContext.didSave, object: context, queue: nil
    /// ) { notification in
    ///     let key = ModelContext.NotificationKey.insertedIdentifiers.rawValue
    ///     let inserted = notification.userInfo?[key] as? [PersistentIdentifier] ?? []
    ///     print("saved \(inserted.count) new records")
    /// }
    /// ```
    ///
    /// Other contexts need no notification to see a save: they merge it by themselves (see
    /// <doc:ComingFromSwiftData>).
    public static let didSave = Notification.Name("DeckKit.ModelContext.didSave")

    /// The keys of ``didSave``'s user info, as in SwiftData (its raw values are the keys).
    public enum NotificationKey: String, Sendable {
        /// The identifiers of the records the save inserted.
        case insertedIdentifiers
        /// The identifiers of the records the save changed.
        case updatedIdentifiers
        /// The identifiers of the records the save deleted.
        case deletedIdentifiers
    }
}

/// The models a save is about to write, taken before it writes (it empties the lists): the
/// context's own dictionaries, which the save replaces rather than changes, so that taking them
/// copies nothing (a save of 100,000 inserts pays nothing for the notification).
struct SaveNotification {
    let inserted: [ObjectIdentifier: AnyObject]
    let updated: [ObjectIdentifier: AnyObject]
    let deleted: [ObjectIdentifier: AnyObject]

    /// Posts ``ModelContext/willSave`` and returns the models the save of `context` writes.
    static func begin(_ context: ModelContext) -> SaveNotification {
        let saving = SaveNotification(
            inserted: context.changes.inserted, updated: context.changes.changed,
            deleted: context.changes.deleted)
        NotificationCenter.default.post(name: ModelContext.willSave, object: context)
        return saving
    }

    /// Posts ``ModelContext/didSave`` for `context`'s committed save; `alsoGone` are the models a
    /// delete rule's cascade took with them.
    func end(_ context: ModelContext, alsoGone: [AnyObject]) {
        func identifiers(_ objects: some Sequence<AnyObject>) -> [PersistentIdentifier] {
            objects.map { ModelBacking.of($0).identifier }
        }
        var gone = identifiers(deleted.values)
        gone += identifiers(alsoGone.filter { deleted[ObjectIdentifier($0)] == nil })
        let info: [AnyHashable: Any] = [
            ModelContext.NotificationKey.insertedIdentifiers.rawValue: identifiers(inserted.values),
            ModelContext.NotificationKey.updatedIdentifiers.rawValue: identifiers(updated.values),
            ModelContext.NotificationKey.deletedIdentifiers.rawValue: gone,
        ]
        NotificationCenter.default.post(name: ModelContext.didSave, object: context, userInfo: info)
    }
}
