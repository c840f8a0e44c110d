import Foundation

/// A container's open document: what keeps it open, held by the container and by its main
/// context, so that the document stays open while either lives and closes (releasing the writer
/// lock, removing an in-memory document's directory) as the last of them goes.
///
/// The main context cannot hold its container strongly: the container holds it, and the two
/// would keep each other alive for good. It holds this instead, and its container weakly; when
/// the container has gone and the context is still in use (`let context = try
/// ModelContainer(…).mainContext`), ``ModelContext/container`` makes a container again over the
/// same open document (``ModelContainer/init(reopening:mainContext:)``). Other contexts hold
/// their container, and so this, strongly.
final class OpenDocument: Sendable {
    let store: PackageStore
    let schema: Schema
    let configurations: [ModelConfiguration]
    let access: DocumentAccess
    /// The temporary directory of an in-memory document, removed with it.
    let temporaryDirectory: URL?
    /// The migration plan the document was opened with: a copy merged in at an earlier version
    /// follows it (``ModelContainer/merge(from:differentDocuments:)``).
    let migrationPlan: (any SchemaMigrationPlan.Type)?

    init(
        store: PackageStore, schema: Schema, configurations: [ModelConfiguration], access: DocumentAccess,
        temporaryDirectory: URL?, migrationPlan: (any SchemaMigrationPlan.Type)? = nil
    ) {
        self.migrationPlan = migrationPlan
        self.store = store
        self.schema = schema
        self.configurations = configurations
        self.access = access
        self.temporaryDirectory = temporaryDirectory
    }

    deinit {
        try? store.close(discardingChanges: true)
        if let temporaryDirectory { try? FileManager.default.removeItem(at: temporaryDirectory) }
    }
}
