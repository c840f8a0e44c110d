import Foundation

/// The document a set of models lives in: SwiftData's `ModelContainer`. It opens the document at
/// its configuration's URL, or creates it, and checks that the document's schema is the models'.
///
/// ```swift
/// let container = try ModelContainer(
///     for: Card.self, Deck.self, configurations: ModelConfiguration(url: url))
/// let context = ModelContext(container)
/// ```
///
/// A container is `Sendable`: share it between actors, and give each its own ``ModelContext``.
/// It keeps the document open (holding the writer lock, unless read-only) until it goes away,
/// and so does each of its contexts: `let context = try ModelContainer(…).mainContext` works for
/// as long as `context` is kept. The document closes when the container and its contexts have
/// all gone.
public final class ModelContainer: Sendable {
    /// The models' schema.
    public let schema: Schema
    /// The configuration the container was made with.
    public let configurations: [ModelConfiguration]
    /// The store the container's contexts read and write.
    public let store: PackageStore
    /// Whether the container's contexts can save: ``DocumentAccess/readWrite``, or
    /// ``DocumentAccess/readOnly(reasons:)`` when the configuration does not allow saving or the
    /// document is at a later version that this app may read but not change (see
    /// <doc:EvolvingASchema>). A context of a read-only container throws
    /// ``DeckError/readOnly(path:)`` from ``ModelContext/save()``.
    public let access: DocumentAccess
    /// What keeps the document open: this container and its main context hold it.
    let document: OpenDocument
    private let main: MainContextBox

    /// Opens or creates the document of `configurations` (one) for `types` and the models they reach.
    public convenience init(for types: any PersistentModel.Type..., configurations: ModelConfiguration...)
        throws(DeckError)
    {
        try self.init(for: Schema(types), configurations: configurations)
    }

    /// Opens or creates the document of `configurations` (one) for `types` and the models they
    /// reach, migrating it along `migrationPlan` when it holds an earlier version of them.
    ///
    /// As in SwiftData, the version of the models is the plan's version whose models these types
    /// are (`ModelContainer(for: V2.Trip.self, migrationPlan: Plan.self)` is at `V2`'s version),
    /// not a version given separately.
    public convenience init(
        for types: any PersistentModel.Type..., migrationPlan: (any SchemaMigrationPlan.Type)?,
        configurations: ModelConfiguration...
    ) throws(DeckError) {
        let version = migrationPlan.flatMap { PlanMigration.version(of: types, in: $0) }
        try self.init(
            for: version.map { Schema(types, version: $0) } ?? Schema(types), migrationPlan: migrationPlan,
            configurations: configurations)
    }

    /// Opens or creates the document of `configurations` (one; none means the default document)
    /// for `schema`.
    ///
    /// With a `migrationPlan`, a document that holds an earlier version of the plan is migrated
    /// first, stage by stage, each stage in one transaction (a failure or a kill leaves the
    /// document at the last version it reached, never in between); `schema`'s version must be
    /// one of the plan's. A read-only container migrates nothing.
    ///
    /// When another process (or thread) creates the same new document at the same moment, the
    /// container opens the one that now exists, or throws ``DeckError/locked(path:pid:)`` while
    /// its creator holds it.
    ///
    /// Throws ``DeckError/invalidSchema(_:)`` when the models cannot be stored (each problem named),
    /// ``DeckError/schemaMismatch(path:differences:)`` when the document holds another schema (or
    /// a version the plan does not have, or a later one), the errors of
    /// ``PackageStore/migrate(at:to:plan:stage:dryRun:)`` (``DeckError/migrationRefused(path:entity:property:reason:)``
    /// for a step no stage can carry out), and those of ``PackageStore/open(at:mode:configuration:)``.
    public init(
        for schema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)? = nil,
        configurations: [ModelConfiguration] = []
    ) throws(DeckError) {
        guard configurations.count <= 1 else {
            throw DeckError.misuse(
                "a ModelContainer takes one configuration (Deck keeps one document per container)")
        }
        let configuration = configurations.first ?? ModelConfiguration()
        guard let storeSchema = schema.storeSchema else {
            throw DeckError.invalidSchema(schema.problems.joined(separator: "; "))
        }
        self.schema = schema
        self.configurations = [configuration]
        if configuration.isStoredInMemoryOnly {
            let directory = try Self.makeTemporaryDirectory()
            access = .readWrite
            let url = directory.appendingPathComponent(configuration.url.lastPathComponent)
            do {
                store = try PackageStore.create(
                    at: url, contentType: configuration.contentType, schema: storeSchema)
            } catch {
                try? FileManager.default.removeItem(at: directory)
                throw error
            }
            document = OpenDocument(
                store: store, schema: schema, configurations: [configuration], access: access,
                temporaryDirectory: directory, migrationPlan: migrationPlan)
            main = MainContextBox(nil)
            return
        }
        let url = configuration.url
        if FileManager.default.fileExists(atPath: url.path) {
            if let migrationPlan, configuration.allowsSave {
                try PlanMigration.migrate(at: url, to: schema, storeSchema: storeSchema, plan: migrationPlan)
            }
            (store, access) = try Self.openExisting(
                at: url, application: storeSchema, allowsSave: configuration.allowsSave)
        } else {
            guard configuration.allowsSave else { throw DeckError.notFound(path: url.path) }
            let parent = url.deletingLastPathComponent()
            do {
                try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
            } catch {
                throw DeckError.io(path: parent.path, operation: "create the directory", errno: EACCES)
            }
            do {
                store = try PackageStore.create(
                    at: url, contentType: configuration.contentType, schema: storeSchema)
                access = .readWrite
            } catch .alreadyExists {
                // Another process (or thread) created the document since the check above: open
                // the one that now exists as any other (or say it is locked while its creator
                // holds it). "Already exists … remove it" would advise deleting its document.
                (store, access) = try Self.openExisting(
                    at: url, application: storeSchema, allowsSave: configuration.allowsSave)
            }
        }
        document = OpenDocument(
            store: store, schema: schema, configurations: [configuration], access: access,
            temporaryDirectory: nil, migrationPlan: migrationPlan)
        main = MainContextBox(nil)
    }

    /// A container over `document`, which is open already, whose main context is `mainContext`:
    /// for a main context whose first container went away while the context was kept
    /// (``ModelContext/container``).
    init(reopening document: OpenDocument, mainContext: ModelContext) {
        self.document = document
        schema = document.schema
        configurations = document.configurations
        store = document.store
        access = document.access
        main = MainContextBox(mainContext)
    }

    deinit {
        // The document closes as the last of this container and its contexts goes (their
        // OpenDocument). A main context that goes with the container saves once more first, on
        // the main actor: now when the container goes away there, later (on the main actor)
        // otherwise. One kept elsewhere lives on, and autosaves as before.
        guard var context = main.take(), isKnownUniquelyReferenced(&context.value) else { return }
        if MainQueue.isCurrent {
            MainActor.assumeIsolated { Autosave.save(context.value) }
        } else {
            // Waits for the writer by suspending: blocking the main actor there could keep the
            // writer's holder (a task that needs the main actor) from ever releasing it.
            Task { @MainActor in await Autosave.saveSuspending(context.value) }
        }
    }

    /// The context of the main actor, made on first use (SwiftData's `mainContext`).
    @MainActor public var mainContext: ModelContext {
        if let context = main.context { return context }
        let context = ModelContext(self, isMainContext: true)
        main.context = context
        return context
    }

    /// Opens the document at `url` as ``DocumentAccess`` says an app of `application` may (and
    /// read-only when saving is not allowed), throwing when it may not open it. The verdict is
    /// reached on a read-only open, so that nothing (not even a format upgrade) is written to a
    /// document the app may not write, and checked again on the store kept, which another process
    /// may have changed in between. A store that only a writer can open (one that needs recovery
    /// after a crash) is judged on the writer's open.
    private static func openExisting(at url: URL, application: StoreSchema, allowsSave: Bool)
        throws(DeckError)
        -> (PackageStore, DocumentAccess)
    {
        var verdict: DocumentAccess?
        do {
            let probe = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? probe.close() }
            verdict = try probe.access(forApplication: application)
        } catch {
            guard allowsSave, case .permissionDenied = error else { throw error }
        }
        for _ in 0..<2 {
            let writable = allowsSave && (verdict ?? .readWrite) == .readWrite
            let store = try PackageStore.open(at: url, mode: writable ? .readWrite : .readOnly)
            let kept: DocumentAccess
            do {
                kept = try store.access(forApplication: application)
            } catch {
                try? store.close(discardingChanges: true)
                throw error
            }
            switch kept {
            case .readWrite, .readOnly:
                if kept == .readWrite && writable { return (store, .readWrite) }
                if !writable {
                    var reasons = allowsSave ? [] : [notAllowed]
                    if case .readOnly(let found) = kept {
                        reasons += found
                    } else if case .readOnly(let found)? = verdict {
                        reasons += found
                    }
                    return (store, .readOnly(reasons: reasons))
                }
                // Opened for writing, but the document now allows reading only: open it again so.
                try? store.close(discardingChanges: true)
                verdict = kept
            case .needsNewerApplication(let version, let reasons):
                try? store.close(discardingChanges: true)
                throw DeckError.needsNewerApplication(path: url.path, version: version, reasons: reasons)
            case .needsMigration(let differences):
                let version = store.schema.version
                try? store.close(discardingChanges: true)
                // Said first: the lines after it say what differs, not what to do.
                let advice =
                    allowsSave
                    ? "migrate it: give the container a migrationPlan whose versions include it, or run deck migrate"
                    : "a container that does not allow saving migrates nothing: open it with one that does, and a "
                        + "migrationPlan, to migrate it"
                throw DeckError.schemaMismatch(
                    path: url.path,
                    differences: [
                        "the document holds schema version \(version), not the models' \(application.version): "
                            + "it needs a migration; \(advice)"
                    ] + differences)
            }
        }
        // Not reached: the second round opens read-only.
        throw DeckError.readOnly(path: url.path)
    }

    /// Why a container whose configuration does not allow saving is read-only.
    private static let notAllowed = "the configuration does not allow saving"

    private static func makeTemporaryDirectory() throws(DeckError) -> URL {
        let base = FileManager.default.temporaryDirectory
        for _ in 0..<8 {
            let directory = base.appendingPathComponent("deck-memory-" + UUID().uuidString)
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
                return directory
            } catch {
                continue
            }
        }
        throw DeckError.io(path: base.path, operation: "create a temporary directory", errno: EEXIST)
    }
}

/// Holds the main context, used on the main actor.
private final class MainContextBox: @unchecked Sendable {
    /// Reached on the main actor only, but for ``take()``.
    nonisolated(unsafe) private var storage: ModelContext?

    @MainActor var context: ModelContext? {
        get { storage }
        set { storage = newValue }
    }

    /// A box holding `context` (a main context whose first container went away, or none yet).
    nonisolated init(_ context: ModelContext?) { storage = context }

    /// The main context, taken out as its container goes away (nothing else can reach the box
    /// then), to be used on the main actor only.
    func take() -> MainActorContext? {
        defer { storage = nil }
        return storage.map(MainActorContext.init)
    }
}

/// A main context on its way to the main actor, where alone it is used.
private struct MainActorContext: @unchecked Sendable {
    var value: ModelContext
}

/// Whether the code runs on the main dispatch queue, where the main actor's jobs run (on Linux,
/// not always on the main thread: `Thread.isMainThread` does not tell).
enum MainQueue {
    private static let key: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    static var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }
}
