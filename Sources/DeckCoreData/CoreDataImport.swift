import DeckStore
import DeckSupport
import Foundation

/// Converting a Core Data or SwiftData SQLite store into a new Deck package: its schema from the
/// store's own model, every row with its relationships, and its external data as blob files.
///
/// ```swift
/// let report = try CoreDataImport.importStore(
///     at: URL(fileURLWithPath: "Notes.sqlite"), to: URL(fileURLWithPath: "Notes.deck"))
/// print(report.rows, "rows;", report.notes.count, "things approximated")
/// ```
///
/// The store is read from a private copy (with its `-wal`, `-shm` and external data files):
/// the user's files are never opened by SQLite, locked or changed, and data that lives only in
/// the WAL is imported. The package is built in full under a staging name beside the
/// destination, verified, and only then renamed into place: an import that fails, or is
/// interrupted, leaves nothing that looks like a document.
///
/// What the import maps and what it approximates:
/// - Each entity keeps its name (a name Deck cannot take has its other characters replaced by
///   `_`, and is noted), its parent entity, its attributes and relationships, its unique
///   constraints and indexes; renaming identifiers become `originalName`.
/// - Integers of every size become `integer` (Deck does not enforce the 16- and 32-bit ranges),
///   floats and doubles `double`, decimals `decimal`, strings `string`, booleans `bool`, dates
///   `date`, binary data `data` (with external storage when the model allows it), UUIDs `uuid`,
///   URIs `url`, and transformable values `data` holding the bytes Core Data archived.
/// - Each record keeps its key (`Z_PK` becomes the record's id) and gets a global id derived
///   from the store's UUID, its hierarchy and its key, so importing one store twice gives the
///   same ids; the package's document id is derived from the store's UUID the same way.
/// - The order of an ordered to-many relationship with an inverse is kept in an extra optional
///   integer attribute of the destination, named after the inverse with `Order` appended.
/// - SwiftData's history tables are left out.
///
/// Every such decision is listed in the ``Report/notes``.
public enum CoreDataImport {
    /// How to import.
    public struct Options: Sendable {
        /// The package's content type (its manifest's `contentType`).
        public var contentType: String
        /// The schema the package must have (an app's own, for instance): the store's schema is
        /// compared with it, and a store that differs (in entities, attribute types,
        /// optionality, relationships, delete rules, unique constraints or indexes) is refused
        /// with every difference named. Nil: the package takes the schema read from the store.
        public var schema: StoreSchema?
        /// Limits on what the store may make the reader do.
        public var limits: CoreDataStore.Limits

        /// The generic content type, the store's own schema and the standard limits, unless given.
        public init(
            contentType: String = PackageStore.defaultContentType, schema: StoreSchema? = nil,
            limits: CoreDataStore.Limits = .standard
        ) {
            self.contentType = contentType
            self.schema = schema
            self.limits = limits
        }
    }

    /// What an import did.
    public struct Report: Sendable, Equatable {
        /// One entity and how many records of it (its own, not its subentities') were imported.
        public struct Entity: Sendable, Equatable {
            /// The entity's name in the package.
            public var name: String
            /// The entity's name in the store (different only when Deck could not take it).
            public var coreDataName: String
            /// The records imported.
            public var rows: Int
        }

        /// Something the import approximated or left out, and why.
        public struct Note: Sendable, Equatable, CustomStringConvertible {
            /// The entity it concerns (its name in the store), if any.
            public var entity: String?
            /// The property it concerns, if any.
            public var property: String?
            /// What happened and why.
            public var reason: String

            public var description: String {
                switch (entity, property) {
                case (let entity?, let property?): "\(entity).\(property): \(reason)"
                case (let entity?, nil): "\(entity): \(reason)"
                default: reason
                }
            }
        }

        /// The store that was imported.
        public var source: URL
        /// The package created.
        public var package: URL
        /// Every entity of the package's schema, in schema order.
        public var entities: [Entity]
        /// Relationship links set (each link once, not once per side).
        public var links: Int
        /// Distinct blob files in the package.
        public var blobs: Int
        /// Bytes in those files.
        public var blobBytes: Int64
        /// The package's schema.
        public var schema: StoreSchema
        /// What was approximated or left out, in the order found.
        public var notes: [Note]

        /// Records imported, all entities together.
        public var rows: Int { entities.reduce(0) { $0 + $1.rows } }
    }

    /// Imports the Core Data or SwiftData store at `source` (its SQLite file) into a new package
    /// at `destination` and returns what was imported.
    ///
    /// - Throws: ``DeckError/alreadyExists(path:)`` when `destination` exists (it is never
    ///   replaced); ``DeckError/notFound(path:)`` when the store does not exist;
    ///   ``DeckError/permissionDenied(path:operation:)`` naming the store, or its `-wal` or
    ///   `-shm`, when this user may not read it;
    ///   ``DeckError/invalidSource(path:reason:)`` naming the store when it is not a Core Data store, is
    ///   damaged, its model does not decode, a row breaks the model or holds a value the
    ///   package's schema refuses (the reason names the entity, the property and the record: a
    ///   link to a missing record, two records sharing a unique value), or external data is
    ///   missing or refused; ``DeckError/schemaMismatch(path:differences:)`` when
    ///   ``Options/schema`` is given and the store's differs. Nothing is left at `destination`
    ///   then.
    public static func importStore(
        at source: URL, to destination: URL, options: Options = Options()
    ) throws(DeckError) -> Report {
        guard FileManager.default.fileExists(atPath: source.path) else {
            throw DeckError.notFound(path: source.path)
        }
        try refuseDestinationAmongTheStoresFiles(destination, source: source)
        let store: CoreDataStore
        let plan: CoreDataImportPlan
        do throws(CoreDataError) {
            store = try CoreDataStore.open(at: source, limits: options.limits)
            plan = try store.importPlan()
        } catch {
            throw error.deckError(path: source.path)
        }
        defer { store.close() }
        let schema =
            try options.schema.map { (wanted) throws(DeckError) in
                let differences = SchemaComparison.differences(
                    stored: plan.schema, models: wanted, place: "the Core Data store")
                guard differences.isEmpty else {
                    throw DeckError.schemaMismatch(path: source.path, differences: differences)
                }
                return wanted
            } ?? plan.schema
        var rows: [String: Int] = [:]
        var links = 0
        // Pairs a join table lists more than once, by `Entity.relationship`.
        var repeated: [String: Int] = [:]
        var blobs: (count: Int, bytes: Int64) = (0, 0)
        let built: URL
        do {
            built = try PackageStore.build(
                at: destination, contentType: options.contentType, schema: schema, documentID: plan.documentID
            ) { loader in
                do {
                    try load(plan, from: store, into: loader, rows: &rows, links: &links, repeated: &repeated)
                    blobs = loader.blobFiles
                } catch let error as CoreDataError {
                    throw error.deckError(path: source.path)
                }
            }
        } catch .invalidValue(let entity, let property, let reason) {
            // The store's data, not the caller's: the store is what cannot be imported.
            let repaired = store.rowNotes.entries.contains {
                $0.kind == .notUTF8 && $0.deckProperty == property
            }
            throw DeckError.invalidSource(
                path: source.path,
                reason: "\(entity).\(property): \(reason)"
                    + (repaired
                        ? " (some of its text is not valid UTF-8 and reads as U+FFFD, so values that differ only "
                            + "in those bytes read the same)" : ""))
        }
        return Report(
            source: source, package: built,
            entities: schema.entities.map { entity in
                Report.Entity(
                    name: entity.name,
                    coreDataName: plan.entity(named: entity.name)?.coreDataName ?? entity.name,
                    rows: rows[entity.name, default: 0])
            },
            links: links, blobs: blobs.count, blobBytes: blobs.bytes, schema: schema,
            notes: plan.notes.map { Report.Note(entity: $0.entity, property: $0.property, reason: $0.reason) }
                + store.rowNotes.entries.map {
                    Report.Note(entity: $0.entity, property: $0.property, reason: $0.reason)
                }
                + repeated.sorted { $0.key < $1.key }.map { key, count in
                    Report.Note(
                        entity: String(key.prefix { $0 != "." }),
                        property: String(key.drop { $0 != "." }.dropFirst()),
                        reason:
                            "\(count) pair\(count == 1 ? " is" : "s are") listed more than once in the store; "
                            + "each is one link")
                }
        )
    }

    /// Refuses a destination that takes the name of one of the store's own files (its `-wal`,
    /// `-shm` or `-journal`, which SQLite would then fail to open beside it) or lies in its
    /// external data folder: the store and its files are never changed.
    private static func refuseDestinationAmongTheStoresFiles(_ destination: URL, source: URL)
        throws(DeckError)
    {
        let target = destination.standardizedFileURL.path
        let store = source.standardizedFileURL.path
        let support = CoreDataStore.externalDataSource(of: source.standardizedFileURL)
            .deletingLastPathComponent().path
        let taken =
            ["-wal", "-shm", "-journal"].contains { target == store + $0 }
            || target == support || target.hasPrefix(support + "/")
        guard taken else { return }
        throw DeckError.invalidSource(
            path: source.path,
            reason: "the destination \(target) is one of the store's own files or inside its external data "
                + "folder (\(support)); choose a destination elsewhere")
    }

    /// Every row (each entity's own, so that each gets its own attributes) with the to-one links
    /// it holds itself, then every other link, then the key high-water marks.
    private static func load(
        _ plan: CoreDataImportPlan, from store: CoreDataStore, into load: BulkLoader,
        rows: inout [String: Int], links: inout Int, repeated: inout [String: Int]
    ) throws {
        // `Entity.relationship` of the to-one links given with the rows.
        var withRows: Set<String> = []
        // The external data files, copied on a second thread while the rows load.
        var files: [URL] = []
        for entity in plan.entities {
            files += try store.externalFiles(
                of: entity.name, attributes: try load.attributeNames(of: entity.name), plan: plan,
                limit: ExternalDataCopier.window - files.count)
        }
        let copier = files.isEmpty ? nil : ExternalDataCopier(files: files, intake: try load.blobIntake())
        copier?.start()
        defer { try? copier?.finish() }
        for entity in plan.entities {
            let names = try load.attributeNames(of: entity.name)
            let ids = plan.globalIDs(root: entity.root)
            // The links the row takes (to-one, kept in its own table) that the store keeps in
            // the row too (Core Data does for a to-one whose inverse is to-many): read with it.
            // The same for every entity of a hierarchy, as both sides inherit alike.
            let rowLinks = try load.rowLinkNames(of: entity.name)
            let read = plan.toOneColumns(of: entity.name).filter { rowLinks.contains($0.column.name) }
            for (declarer, column) in read { withRows.insert(declarer + "." + column.name) }
            let positions = read.map { link in rowLinks.firstIndex(of: link.column.name)! }
            var given = [Int64?](repeating: nil, count: rowLinks.count)
            var count = 0
            try store.forEachRow(
                of: entity.name, attributes: names, toOnes: read.map(\.column.name), plan: plan,
                includingSubentities: false
            ) { primaryKey, concrete, values, targets in
                for (index, target) in targets.enumerated() { given[positions[index]] = target }
                do {
                    // A NULL in the store is a null, never the attribute's default.
                    try load.insert(
                        entity: concrete, pk: primaryKey, globalID: ids.id(primaryKey),
                        values: values.map { value throws(DeckError) in
                            guard let value else { return .null }
                            if case .file(let url) = value, let reference = try copier?.reference(for: url) {
                                return .blob(reference)
                            }
                            return value
                        }, links: given)
                } catch DeckError.permissionDenied(let path, let operation) {
                    // An external data file this user may not read: say which row refers to it.
                    let attribute = zip(names, values).first { _, value in
                        if case .file(let url)? = value { url.path == path } else { false }
                    }?.0
                    throw DeckError.permissionDenied(
                        path: path,
                        operation: operation + "; it is the external data of \(concrete) Z_PK \(primaryKey)"
                            + (attribute.map { ", \($0)," } ?? "") + " in \(store.sourceURL.path)")
                }
                count += 1
                links += targets.reduce(0) { $0 + ($1 == nil ? 0 : 1) }
            }
            rows[entity.name] = count
        }
        try copier?.finish()
        try store.forEachToOne(plan: plan, skipping: withRows) { entity, primaryKey, relationship, target in
            try load.setToOne(entity: entity, pk: primaryKey, relationship: relationship, target: target)
            links += 1
        }
        try store.forEachToMany(plan: plan) { entity, primaryKey, relationship, target in
            if try load.addToMany(
                entity: entity, pk: primaryKey, relationship: relationship, targets: [target]) == 1
            {
                links += 1
            } else {
                repeated[entity + "." + relationship, default: 0] += 1
            }
        }
        for hierarchy in plan.hierarchies {
            try load.reserveKeys(entity: hierarchy.root, through: hierarchy.maximumPrimaryKey)
        }
    }
}
