import Foundation

/// Where a history fetch starts (SwiftData's `DefaultHistoryToken`): what the store held when a
/// fetch was made. Give it to a later fetch (``HistoryDescriptor/init(after:predicate:)``) to
/// get the changes made since, those a merge brought from another copy included.
///
/// A token is one of ``ChangeLog/Token``: for each writer session, the greatest clock of its
/// changes the store held (spec 20.10). It is `Codable`, to be kept between launches, and its
/// text form (``description``, and the initializer from text) is the one `deck log` prints and
/// reads.
public struct DefaultHistoryToken: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The store-level token.
    public var changeLogToken: ChangeLog.Token

    /// The token of a store-level change log (``ChangeLog/token``).
    public init(_ changeLogToken: ChangeLog.Token) {
        self.changeLogToken = changeLogToken
    }

    /// A token from its text form (`deck log --json`'s `token`); nil for malformed text.
    public init?(_ text: String) {
        guard let token = ChangeLog.Token(text) else { return nil }
        self.init(token)
    }

    /// The token's text form, as `deck log` prints it.
    public var description: String { changeLogToken.description }
}

/// What a history fetch returns: the transactions after a token, those a predicate keeps, the
/// latest ``fetchLimit`` of them (SwiftData's `HistoryDescriptor`).
public struct HistoryDescriptor<Transaction: HistoryTransaction>: Sendable {
    /// Only the transactions this token does not cover (every transaction when nil).
    public var token: DefaultHistoryToken?
    /// Only the transactions it keeps, evaluated on each transaction read.
    public var predicate: Predicate<Transaction>?
    /// At most this many transactions, the latest.
    public var fetchLimit: Int?

    /// The transactions after `token` (all when nil) that `predicate` keeps.
    public init(after token: DefaultHistoryToken? = nil, predicate: Predicate<Transaction>? = nil) {
        self.token = token
        self.predicate = predicate
    }
}

/// One save's changes, as the document records them now (SwiftData's `HistoryTransaction`).
public protocol HistoryTransaction: Sendable {
    /// The changes, one per record.
    var changes: [HistoryChange] { get }
    /// What a fetch that ends with this transaction has seen: give it to the next fetch.
    var token: DefaultHistoryToken { get }
    /// About when the save was made (its clock's wall-clock term, spec 20.2).
    var timestamp: Date { get }
    /// The write session that made it (its writer id), nil for what the document held before
    /// it kept versions.
    var author: String? { get }
}

/// A transaction of a document's history (``ModelContext/fetchHistory(_:)``).
///
/// The history is the document as it is now, arranged by the saves that made it (spec 20.10):
/// each record, value and link is listed under the last save that changed it, with the value it
/// left, so a change that a later save replaced is not listed, and a deleted record's values are
/// gone. Nothing is recorded for it, so it costs saves nothing and needs no pruning.
public struct DefaultHistoryTransaction: HistoryTransaction {
    /// The changes, one per record, in the log's order (spec 20.10).
    public var changes: [HistoryChange]
    /// What a fetch that ends with this transaction has seen: it, and every transaction before
    /// it and before the fetch's own token.
    public var token: DefaultHistoryToken
    /// About when the save was made: its clock's wall-clock term (spec 20.2); 1970 for what the
    /// document held before it kept versions.
    public var timestamp: Date
    /// The write session's id, in lowercase text; nil for what the document held before it kept
    /// versions.
    public var author: String?
    /// The transaction's clock (spec 20.2), which orders it among the document's transactions
    /// (then its writer id).
    public var clock: Int64
}

/// A change of one record (SwiftData's `HistoryChange`).
public enum HistoryChange: Sendable {
    /// A record the transaction inserted, with the values no later save replaced.
    case insert(any HistoryInsert)
    /// A record whose properties the transaction last changed.
    case update(any HistoryUpdate)
    /// A record the transaction deleted.
    case delete(any HistoryDelete)

    /// The record changed.
    public var changedPersistentIdentifier: PersistentIdentifier {
        switch self {
        case .insert(let change): change.changedPersistentIdentifier
        case .update(let change): change.changedPersistentIdentifier
        case .delete(let change): change.changedPersistentIdentifier
        }
    }
}

/// A record a transaction inserted, of a model type.
public protocol HistoryInsert<Model>: Sendable {
    associatedtype Model: PersistentModel
    /// The record inserted.
    var changedPersistentIdentifier: PersistentIdentifier { get }
    /// The attributes and to-one relationships the insert set that no later save changed, by
    /// name, with the values it left (what SwiftData's history does not give).
    var values: [String: DiffCell] { get }
}

/// A record whose properties a transaction last changed, of a model type.
public protocol HistoryUpdate<Model>: Sendable {
    associatedtype Model: PersistentModel
    /// The record changed.
    var changedPersistentIdentifier: PersistentIdentifier { get }
    /// The properties changed, by name, in the schema's order: attributes, to-one relationships,
    /// and to-many relationships whose links it made or removed (SwiftData gives key paths).
    var updatedAttributes: [String] { get }
    /// The attributes' and to-one relationships' values it left, by name.
    var values: [String: DiffCell] { get }
}

/// A record a transaction deleted, of a model type.
public protocol HistoryDelete<Model>: Sendable {
    associatedtype Model: PersistentModel
    /// The record's identifier, with the entity of its hierarchy's root (the entity it was made
    /// as is not kept with a deleted record).
    var changedPersistentIdentifier: PersistentIdentifier { get }
}

/// A record of `Model` a transaction inserted (match a change with
/// `case .insert(let insert as DefaultHistoryInsert<Card>)`).
public struct DefaultHistoryInsert<Model: PersistentModel>: HistoryInsert {
    /// The record.
    public var changedPersistentIdentifier: PersistentIdentifier
    /// The attributes' and to-one relationships' values it left, by name.
    public var values: [String: DiffCell]
}

/// A record of `Model` whose properties a transaction last changed.
public struct DefaultHistoryUpdate<Model: PersistentModel>: HistoryUpdate {
    /// The record.
    public var changedPersistentIdentifier: PersistentIdentifier
    /// The properties changed, by name.
    public var updatedAttributes: [String]
    /// The attributes' and to-one relationships' values it left, by name.
    public var values: [String: DiffCell]
}

/// A record of `Model` (or of its hierarchy) a transaction deleted.
public struct DefaultHistoryDelete<Model: PersistentModel>: HistoryDelete {
    /// The record.
    public var changedPersistentIdentifier: PersistentIdentifier
}

extension ModelContext {
    /// The document's history after the descriptor's token: its saves, oldest first, with what
    /// each last changed (SwiftData's `fetchHistory`). Read from the store as committed (this
    /// context's unsaved changes are not in it), the saves of other contexts, processes and
    /// copies merged in included.
    ///
    /// Match a change as SwiftData's: `case .update(let update as DefaultHistoryUpdate<Card>)`;
    /// start the next fetch from `transactions.last?.token` (see <doc:WorkingOnSeveralDevices>).
    ///
    /// Changes of entities that no model type of the container stands for are left out. A to-one
    /// relationship is an update of the record that holds it (`Card.deck`), not of its to-many
    /// inverse (`Deck.cards`); a to-many link is an update of both sides.
    ///
    /// - Throws: ``DeckError/notComparable(path:reason:)`` for a document older than format 5
    ///   (it keeps no versions until it is saved once); ``DeckError/misuse(_:)`` for a fetch
    ///   limit below 1; the store's read errors.
    public func fetchHistory(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws
        -> [DefaultHistoryTransaction]
    {
        try HistoryMapper(context: self).fetch(descriptor)
    }
}

/// Turns a change log's transactions into history changes typed by the context's model types.
struct HistoryMapper {
    let context: ModelContext

    /// ``ModelContext/fetchHistory(_:)``.
    func fetch(_ descriptor: HistoryDescriptor<DefaultHistoryTransaction>) throws
        -> [DefaultHistoryTransaction]
    {
        if let limit = descriptor.fetchLimit, limit < 1 {
            throw DeckError.misuse("a history fetch limit of \(limit)")
        }
        // The whole log after the token, even for a limit: each transaction's token covers every
        // transaction before it, those the limit leaves out too.
        let log = try ChangeLog(of: context.container.store, after: descriptor.token?.changeLogToken)
        var running = descriptor.token?.changeLogToken ?? ChangeLog.Token()
        var transactions: [DefaultHistoryTransaction] = []
        for (index, logged) in log.transactions.enumerated() {
            let writer = logged.writer ?? UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
            running.writers[writer] = max(running.writers[writer] ?? -1, logged.clock)
            let transaction = DefaultHistoryTransaction(
                changes: historyChanges(logged.changes),
                // The log's last transaction has seen all the log has (the origin's clock included).
                token: DefaultHistoryToken(index == log.transactions.count - 1 ? log.token : running),
                timestamp: logged.date ?? Date(timeIntervalSince1970: 0),
                author: logged.writer?.uuidString.lowercased(), clock: logged.clock)
            if let predicate = descriptor.predicate, try !predicate.evaluate(transaction) { continue }
            transactions.append(transaction)
        }
        if let limit = descriptor.fetchLimit, transactions.count > limit {
            transactions.removeFirst(transactions.count - limit)
        }
        return transactions
    }

    private func metadata(forStored entity: String) -> ModelMetadata? {
        context.metadata(forStored: entity)
    }

    /// A transaction's logged changes as history changes, one per record: its links are
    /// updates of the to-many relationships that hold them, on both sides.
    func historyChanges(_ logged: [LoggedChange]) -> [HistoryChange] {
        var order: [PersistentIdentifier] = []
        var updates: [PersistentIdentifier: (names: [String], values: [String: DiffCell])] = [:]
        var changes: [PersistentIdentifier: HistoryChange] = [:]
        func update(_ id: PersistentIdentifier, _ names: [String], _ values: [String: DiffCell] = [:]) {
            if updates[id] == nil, changes[id] == nil { order.append(id) }
            var update = updates[id] ?? ([], [:])
            for name in names where !update.names.contains(name) { update.names.append(name) }
            update.values.merge(values) { _, new in new }
            updates[id] = update
        }
        for change in logged {
            let id = PersistentIdentifier(entityName: change.entity, id: change.globalID)
            switch change.kind {
            case .inserted:
                guard let type = metadata(forStored: change.entity)?.type else { continue }
                changes[id] = Self.insert(type, id, values(change.cells))
                if updates[id] == nil { order.append(id) }
            case .deleted:
                guard let type = metadata(forStored: change.entity)?.type else { continue }
                changes[id] = Self.delete(type, id)
                if updates[id] == nil { order.append(id) }
            case .updated:
                update(id, change.cells.map(\.name), values(change.cells))
            case .linked, .unlinked:
                // The join table is named after the relationship that stores it (spec 6.6).
                guard let table = change.relationship, let dot = table.lastIndex(of: ".") else { continue }
                let (declarer, name) = (String(table[..<dot]), String(table[table.index(after: dot)...]))
                update(id, [name])
                let relationship = context.container.store.schema.entities.first { $0.name == declarer }?
                    .relationships.first { $0.name == name }
                if let inverse = relationship?.inverse, let target = change.target {
                    update(PersistentIdentifier(entityName: change.targetEntity ?? "", id: target), [inverse])
                }
            }
        }
        return order.compactMap { id in
            if let change = changes[id] { return change }
            guard let update = updates[id], let type = metadata(forStored: id.entityName)?.type else {
                return nil
            }
            return Self.update(type, id, update.names, update.values)
        }
    }

    private func values(_ cells: [LoggedCell]) -> [String: DiffCell] {
        Dictionary(cells.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    private static func insert<M: PersistentModel>(
        _ type: M.Type, _ id: PersistentIdentifier, _ values: [String: DiffCell]
    ) -> HistoryChange {
        .insert(DefaultHistoryInsert<M>(changedPersistentIdentifier: id, values: values))
    }

    private static func update<M: PersistentModel>(
        _ type: M.Type, _ id: PersistentIdentifier, _ names: [String], _ values: [String: DiffCell]
    ) -> HistoryChange {
        .update(
            DefaultHistoryUpdate<M>(changedPersistentIdentifier: id, updatedAttributes: names, values: values)
        )
    }

    private static func delete<M: PersistentModel>(_ type: M.Type, _ id: PersistentIdentifier)
        -> HistoryChange
    {
        .delete(DefaultHistoryDelete<M>(changedPersistentIdentifier: id))
    }
}
