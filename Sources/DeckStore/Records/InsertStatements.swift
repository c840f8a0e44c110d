import DeckSQLite

/// The writer's prepared statements for inserting records and for setting the relationship of one
/// it inserted, kept on its connection from one ``RecordWriter`` call to the next (a save inserts
/// in runs of one entity, so the latest is kept apart from the lookup by name). Dropped when the
/// connection closes.
final class InsertStatements {
    /// Prepared insert statements by entity, made on first use.
    var byEntity: [String: Statement] = [:]
    /// The entity and statement of the latest insert.
    var last: (mapping: EntityMapping, statement: Statement)?
    /// The relationship and statement of the latest
    /// ``RecordWriter/setReference(ofInserted:id:_:to:insertedTarget:)`` that took the short way
    /// (a statement of ``Database/cachedStatement(_:)``).
    var lastReference: (mapping: EntityMapping, position: Int, statement: Statement)?
    /// The maker of global ids from unique values, once the document id is read.
    var identities: IdentityGlobalIDs?

    /// Forgets every statement (before the connection closes).
    func removeAll() {
        byEntity.removeAll()
        last = nil
        lastReference = nil
        identities = nil
    }
}
