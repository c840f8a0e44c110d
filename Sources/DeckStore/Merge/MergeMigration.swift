import DeckSQLite
import DeckSupport
import Foundation

/// Copies of a document at different schema versions (spec section 20.9, "Copies at different
/// schema versions"): the copy with the earlier schema is migrated to the later one first, in a
/// scratch copy when it is the copy merged in, and what that migration changed takes the
/// versions of what it was computed from (``MigratedVersions``), so that merging an old copy
/// gives the same result whenever and wherever it is merged.
package enum MergeMigration {
    /// How the copy with the earlier schema is migrated: the package at the URL, to the schema.
    /// The default runs ``PackageStore/migrate(at:to:plan:stage:dryRun:)`` with a plan; DeckKit's
    /// container runs its migration plan's stages (`runsStages`: code of the application's runs,
    /// and may compute a value from any of its record's).
    package struct Migrator {
        package var runsStages: Bool
        package var migrate: (URL, StoreSchema) throws(DeckError) -> Void

        package init(runsStages: Bool, _ migrate: @escaping (URL, StoreSchema) throws(DeckError) -> Void) {
            self.runsStages = runsStages
            self.migrate = migrate
        }
    }

    /// The migrator of `plan`: lightweight steps, its renames and agreed removals.
    package static func migrator(_ plan: MigrationPlan) -> Migrator {
        Migrator(runsStages: false) { url, schema throws(DeckError) in
            _ = try PackageStore.migrate(at: url, to: schema, plan: plan)
        }
    }

    /// What to do with two copies whose schemas differ: nothing when they are the same schema;
    /// migrate the copy merged in when its version is earlier. Refuses copies whose versions are
    /// equal in order, and, unless `laterMergedIn` allows it, a copy merged in whose version is
    /// later (the copy merged into would have to be migrated, which only a merge into a new
    /// package does).
    package static func needsMigration(
        of other: StoreSchema, into schema: StoreSchema, paths: (into: String, other: String)
    ) throws(DeckError) -> Bool {
        if other.fingerprint == schema.fingerprint { return false }
        switch StoreSchema.compareVersions(other.version, schema.version) {
        case .orderedAscending:
            return true
        case .orderedDescending:
            throw DeckError.notComparable(
                path: paths.other,
                reason:
                    "its schema version \(other.version) is later than \(paths.into)'s (\(schema.version)); a merge "
                    + "changes no copy's schema: merge into a new package (deck merge -o), which takes the later "
                    + "schema, or migrate \(paths.into) to it first (deck migrate --to)")
        case .orderedSame:
            throw DeckError.notComparable(
                path: paths.other,
                reason:
                    "its schema differs from \(paths.into)'s under the same version \(other.version)"
                    + DocumentDifference.schemaChanges(schema, other)
                    + ": the schemas diverged, and neither copy can be migrated to the other's")
        }
    }

    /// Migrates the package at `url` to `schema` with `migrator`, then gives what the migration
    /// changed the versions of what it was computed from (``MigratedVersions``): the migration's
    /// changes are the same in every copy migrated alike, the old copy's edits still count, and
    /// the migration itself beats no later edit of another copy. A refusal names `path` (what
    /// the user knows the copy as) and what differs.
    package static func migrate(
        _ url: URL, to schema: StoreSchema, with migrator: Migrator, path: String
    ) throws(DeckError) {
        let store = url.appendingPathComponent(PackageLayout.store).path
        let versions: MigratedVersions
        do {
            let database = try Database(path: store, mode: .readOnly)
            defer { database.close() }
            versions = try MigratedVersions(reading: database)
        } catch {
            throw DeckError.wrap(error).replacingPath(url.path, with: path)
        }
        do {
            try migrator.migrate(url, schema)
        } catch .migrationRefused(_, let entity, let property, let reason) {
            throw DeckError.notComparable(
                path: path,
                reason:
                    "its schema is an earlier version than \(schema.version), and migrating it to that version is "
                    + "refused (\(entity)\(property.map { "." + $0 } ?? ""): \(reason)); migrate it first with a "
                    + "plan (deck migrate --plan), then merge")
        } catch {
            throw error.replacingPath(url.path, with: path)
        }
        do {
            let database = try Database(path: store, mode: .readWrite)
            defer { database.close() }
            try database.transaction { try versions.apply(to: database, stages: migrator.runsStages) }
        } catch {
            throw DeckError.wrap(error).replacingPath(url.path, with: path)
        }
    }

    /// Makes `scratch` (an empty private directory) a copy of `source` to migrate: its manifest,
    /// a snapshot of its committed store, and, when the migration to `schema` moves values
    /// between blob files and the store, the blob files the store names (taken from the package
    /// `blobs`, hashed as they are copied). Otherwise the merge reads them from `blobs` as it
    /// reads any copy's.
    package static func copy(
        _ source: PackageStore, blobs: URL, into scratch: URL, for schema: StoreSchema
    ) throws(DeckError) {
        try DocumentDifference.copyFile(
            source.url.appendingPathComponent(PackageLayout.manifest),
            to: scratch.appendingPathComponent(PackageLayout.manifest).path)
        let referenced = try source.snapshotStore(
            to: scratch.appendingPathComponent(PackageLayout.store).path, for: scratch.path)
        let steps = SchemaDiff(from: source.schema, to: schema).steps
        guard steps.contains(where: { $0.kind == .changeExternalStorage }) else { return }
        let from = BlobStore(packagePath: blobs.path)
        let to = BlobStore(packagePath: scratch.path)
        for digest in referenced.sorted() {
            let copied = try to.write(contentsOf: from.path(for: digest))
            guard copied.digest == digest else {
                throw DeckError.corrupt(
                    path: from.path(for: digest), reason: "the blob file does not hash to its name")
            }
        }
    }

}
