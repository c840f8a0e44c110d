import Foundation

extension ModelContainer {
    /// Imports a Core Data or SwiftData store into a new document for your models, and opens it:
    /// "open your old library" for an app moving to Deck.
    ///
    /// The store's schema (read from the store's own model) is checked against `schema` first:
    /// the entities, their attributes' types and optionality, relationships, delete rules,
    /// unique constraints and indexes must be the same (your models' class names are the entity
    /// names). A store that differs is refused with ``DeckError/schemaMismatch(path:differences:)``
    /// naming every difference, and nothing is created. Otherwise every record, link and
    /// external data value is imported into a package at `configuration.url` with your schema
    /// (its version included), built under a staging name and verified before it appears, and
    /// the container opens it as ``init(for:migrationPlan:configurations:)-(Schema,_,_)`` would.
    ///
    /// ```swift
    /// let (container, report) = try ModelContainer.importing(
    ///     coreDataStoreAt: oldStoreURL, for: Schema([Note.self, Folder.self]),
    ///     configuration: ModelConfiguration(url: documentURL))
    /// print("\(report.rows) records imported")
    /// ```
    ///
    /// The store and its files are never changed. See ``CoreDataImport`` for how each Core Data
    /// type is carried, and the article *Moving from Core Data or SwiftData*.
    ///
    /// - Throws: ``DeckError/invalidSchema(_:)`` when the models cannot be stored,
    ///   ``DeckError/misuse(_:)`` for an in-memory or read-only configuration, and the errors of
    ///   ``CoreDataImport/importStore(at:to:options:)`` (an existing `configuration.url` is never
    ///   replaced: ``DeckError/alreadyExists(path:)``).
    public static func importing(
        coreDataStoreAt store: URL, for schema: Schema, configuration: ModelConfiguration
    ) throws(DeckError) -> (container: ModelContainer, report: CoreDataImport.Report) {
        guard let storeSchema = schema.storeSchema else {
            throw DeckError.invalidSchema(schema.problems.joined(separator: "; "))
        }
        guard !configuration.isStoredInMemoryOnly, configuration.allowsSave else {
            throw DeckError.misuse("a Core Data store is imported into a document on disk that allows saving")
        }
        let report = try CoreDataImport.importStore(
            at: store, to: configuration.url,
            options: CoreDataImport.Options(contentType: configuration.contentType, schema: storeSchema))
        let container = try ModelContainer(for: schema, configurations: [configuration])
        return (container, report)
    }
}
