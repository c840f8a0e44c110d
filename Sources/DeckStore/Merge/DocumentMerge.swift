import DeckSQLite
import DeckSupport
import Foundation

/// What a merge changed in the document merged into, and what lost.
public struct MergeReport: Sendable, Equatable {
    /// Records the other copy had and this one did not, now inserted.
    public var insertedRecords = 0
    /// Records deleted: those the other copy deleted. (A merge follows no `cascade` rule: the
    /// records the other copy's delete took there are its tombstones too, see ``MergeRepair``.)
    public var deletedRecords = 0
    /// Deletes of records this copy never had, learned so that a third copy that still has the
    /// record deletes it when merged in.
    public var learnedTombstones = 0
    /// Attributes and to-one references that took the other copy's value.
    public var changedCells = 0
    /// To-many links made and removed.
    public var addedLinks = 0
    public var removedLinks = 0
    /// Blob files copied from the other copy.
    public var copiedBlobs = 0
    /// Cells both copies changed, each to its own value: the later change won, the other lost
    /// (its value is in the copy that made it, and in ``DocumentDifference`` before the merge).
    public var conflicts: [MergeConflict] = []
    /// What the merge changed besides taking the other copy's changes.
    public var repairs: [MergeRepair] = []
    /// Edits of a record that one copy made while the other deleted it: the delete won, and
    /// these values are in neither the store nor its tombstone afterwards (the copy that made
    /// them still has them).
    public var lostEdits: [MergeLostEdit] = []
    /// Values both copies hold under the origin's version with different values, and records
    /// the other copy holds under it that this one lacks: copies upgraded to format version 5
    /// apart, whose changes of before then the versions cannot order. The merge kept the greater
    /// value and inserted the records; merging with the copy both were made from as the
    /// ancestor decides them by what each copy changed.
    public var originDifferences = 0

    public init() {}

    /// Whether the merge changed nothing.
    public var isEmpty: Bool {
        insertedRecords == 0 && deletedRecords == 0 && learnedTombstones == 0 && changedCells == 0
            && addedLinks == 0 && removedLinks == 0 && copiedBlobs == 0 && repairs.isEmpty
    }
}

/// A cell (attribute or to-one reference) that both copies changed to different values since
/// they parted: the merge kept the one with the later version.
public struct MergeConflict: Sendable, Equatable {
    /// The record's concrete entity.
    public var entity: String
    public var globalID: UUID?
    public var property: String
    /// The value kept (the later change's) and the value that lost, as ``DocumentDifference``
    /// gives cells.
    public var kept: DiffCell
    public var lost: DiffCell
    /// Whether the change that lost was this copy's (the one merged into), else the other's.
    public var lostHere: Bool
}

/// An attribute or to-one reference that one copy changed since the copies parted, of a record
/// the other copy deleted meanwhile: the delete won over the edit.
public struct MergeLostEdit: Sendable, Equatable {
    /// The record's concrete entity.
    public var entity: String
    public var globalID: UUID?
    public var property: String
    /// The value the edit set, as ``DocumentDifference`` gives cells.
    public var lost: DiffCell
    /// Whether the edit was this copy's (the one merged into), else the other's.
    public var lostHere: Bool
}

/// A change a merge made that neither copy made: the consequence of one copy's delete for the
/// other copy's records.
public struct MergeRepair: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// A reference whose target the other copy deleted was set to null (whatever the
        /// relationship's rule, but `cascade`, reported as ``keptFromCascade``).
        case targetDeleted = "target-deleted"
        /// A record whose reference's target, or a record linked to it, was deleted in the other
        /// copy, whose side of the relationship cascades, was kept: the copy that deleted the
        /// target did not hold the record in the relationship (the other copy added it, or moved
        /// it there, meanwhile), and a delete takes only what its copy held. The reference was
        /// set to null, or the link removed.
        case keptFromCascade = "kept-from-cascade"
        /// A delete went ahead although a relationship's rule is `deny`: the copy that deleted
        /// did not have the related records the other copy added meanwhile. Their references
        /// were set to null.
        case denyOverridden = "deny-overridden"
    }
    public var entity: String
    public var globalID: UUID?
    /// The relationship concerned.
    public var property: String
    public var kind: Kind
}

/// Merging a copy of a document into another (spec section 20.9).
public enum DocumentMerge {
    /// Merges the copy of a document at `other` into `store`, a copy of the same document open
    /// for writing, in one transaction: afterwards `store` holds every record, value, link and blob of both
    /// copies, each change with the greater of its two versions (a later edit wins over an
    /// earlier one, a delete over the edits it was concurrent with), and merging the other way
    /// round, or again, gives the same records, values and links.
    ///
    /// `other` is opened read-only and checked as any package from elsewhere is
    /// (``PackageVerifier`` in its quick mode); its store is read from a private snapshot, so it
    /// may be written meanwhile, and its blob files are hashed as they are copied. Nothing is
    /// written to it. The merge holds this store's writer for its length; observers of commits
    /// see the records it changed as another writer's save.
    ///
    /// A copy at an earlier version of the schema (an older app's, spec section 5.10 orders
    /// versions) is migrated to this store's schema first, in a scratch copy, by the lightweight
    /// steps with `plan`'s renames and removals; what that migration changes keeps the version
    /// of what it was computed from, so that no later edit of this copy loses to it. A copy at a
    /// later version is refused: a merge never changes this store's schema (migrate it first, or
    /// merge both into a new package with `deck merge -o`).
    ///
    /// With `ancestor`, a copy both copies were made from, each copy's changes made before it was
    /// versioned (copies upgraded to format version 5 apart) are found by comparing with it: a
    /// value one copy changed wins over the value the other kept, and a record or link one copy
    /// deleted then is deleted (spec 20.9, "A common ancestor"). The ancestor is read, never
    /// written, and is trusted to be what it claims: its records that a copy lacks are taken as
    /// deleted there.
    ///
    /// - Parameters:
    ///   - differentDocuments: merge a copy of another document (another document id).
    ///   - plan: renames and agreed removals for migrating a copy at an earlier schema version.
    ///   - ancestor: a package both copies were made from (any format version from 3, the same
    ///     document, a schema version no later than this store's).
    /// - Throws: ``DeckError/notComparable(path:reason:)`` when the copies are not of one
    ///   document, their schemas diverged or `other`'s is later, migrating `other` is refused
    ///   (the reason names the step), or either is older than format version 5;
    ///   ``DeckError/corrupt(path:reason:)`` when `other` does not verify, or `ancestor` holds
    ///   objects its schema does not derive or rows that break its tables' constraints; the
    ///   errors of a write.
    ///   On any error this store is as it was.
    @discardableResult
    public static func merge(
        from other: URL, into store: PackageStore, differentDocuments: Bool = false,
        plan: MigrationPlan = MigrationPlan(), ancestor: URL? = nil
    ) throws(DeckError) -> MergeReport {
        try merge(
            from: other, into: store, differentDocuments: differentDocuments, blobs: nil,
            migrator: MergeMigration.migrator(plan), ancestor: ancestor)
    }

    /// Folds each file-sync conflict copy of the store in `store`'s package
    /// (``SyncConflictCopy/find(in:)``) into the store, as ``merge(from:into:differentDocuments:plan:ancestor:)``
    /// merges a copy, and removes it once merged; conflict copies of the writer lock, which hold
    /// nothing of the document, are removed too. Returns each store copy merged, with its report,
    /// by name. A copy at an earlier schema version is migrated first, with `plan`. A copy that
    /// cannot be merged (a later schema: the other device migrated the document) stops the work
    /// with its error, naming it; the copies merged before it are in the store and gone.
    public static func mergeConflictCopies(into store: PackageStore, plan: MigrationPlan = MigrationPlan())
        throws(DeckError) -> [(copy: SyncConflictCopy, report: MergeReport)]
    {
        try mergeConflictCopies(into: store, migrator: MergeMigration.migrator(plan))
    }

    package static func mergeConflictCopies(into store: PackageStore, migrator: MergeMigration.Migrator)
        throws(DeckError) -> [(copy: SyncConflictCopy, report: MergeReport)]
    {
        guard store.mode == .readWrite else { throw DeckError.readOnly(path: store.url.path) }
        var merged: [(copy: SyncConflictCopy, report: MergeReport)] = []
        for copy in SyncConflictCopy.find(in: store.url) {
            let path = store.url.appendingPathComponent(copy.name)
            if copy.isStore {
                // A scratch package of the copy's store (its blob files are the package's own:
                // they never conflict), removed afterwards.
                let scratch = try Staging.makeScratchDirectory(purpose: "conflict", mode: 0o700)
                defer { scratch.discard() }
                do {
                    try DocumentDifference.copyFile(
                        store.url.appendingPathComponent(PackageLayout.manifest),
                        to: scratch.path + "/" + PackageLayout.manifest)
                    try DocumentDifference.copyFile(path, to: scratch.path + "/" + PackageLayout.store)
                    let report = try merge(
                        from: scratch.url, into: store, differentDocuments: false, blobs: store.url,
                        migrator: migrator)
                    merged.append((copy, report))
                } catch {
                    throw error.replacingPath(scratch.path, with: path.path)
                }
            } else if !copy.isLock {
                continue
            }
            try FileSystem.unlink(path.path)
        }
        return merged
    }

    /// The merge; `blobs` is the package holding the other copy's blob files when it is not the
    /// other copy's own (a conflict copy's store: its blob files are missing from its scratch
    /// package, and checked as they are copied).
    /// `ancestor` is the package given as the common ancestor; `ancestorStore`, inside, the
    /// ancestor's store at this store's schema, once the other copy's changes were compared with
    /// it (in a scratch copy).
    package static func merge(
        from other: URL, into store: PackageStore, differentDocuments: Bool, blobs: URL?,
        migrator: MergeMigration.Migrator, ancestor: URL? = nil, ancestorStore: String? = nil
    ) throws(DeckError) -> MergeReport {
        guard store.mode == .readWrite else { throw DeckError.readOnly(path: store.url.path) }
        let source = try PackageStore.open(at: other, mode: .readOnly)
        defer { try? source.close() }
        try checkMergeable(source, into: store, differentDocuments: differentDocuments)
        if let ancestor {
            return try merge(
                from: source, into: store, differentDocuments: differentDocuments, blobs: blobs ?? other,
                migrator: migrator, ancestor: ancestor)
        }
        if try MergeMigration.needsMigration(
            of: source.schema, into: store.schema, paths: (store.url.path, other.path))
        {
            let scratch = try Staging.makeScratchDirectory(purpose: "merge", mode: 0o700)
            defer { scratch.discard() }
            let blobs = blobs ?? other
            try MergeMigration.copy(source, blobs: blobs, into: scratch.url, for: store.schema)
            try? source.close()
            try MergeMigration.migrate(scratch.url, to: store.schema, with: migrator, path: other.path)
            do {
                return try merge(
                    from: scratch.url, into: store, differentDocuments: differentDocuments, blobs: blobs,
                    migrator: migrator)
            } catch {
                throw error.replacingPath(scratch.path, with: other.path)
            }
        }
        // What the merge trusts of the other copy, checked here at a cost that follows its
        // bookkeeping, not its size: its tables are those its schema derives (its open refused
        // it otherwise), its bookkeeping holds together (the verifier's version check); the
        // values it brings are checked as they are read, and blob files as they are copied.
        var findings = VerificationReport(path: source.url.path)
        do {
            // In one read transaction: a writer of the other copy may commit between two of the
            // checks' statements, and its clock must be read with the versions it gave.
            try source.withReaderConnection { connection in
                try connection.readTransaction {
                    try VersionCheck.run(connection.database, mapping: connection.mapping, report: &findings)
                }
            }
        } catch {
            throw DeckError.wrap(error)
        }
        if let finding = findings.findings.first {
            throw DeckError.corrupt(
                path: source.url.path, reason: "it cannot be merged in: \(finding.object): \(finding.message)"
            )
        }
        let snapshot = source.url.appendingPathComponent(PackageLayout.store).path
        let otherBlobs = BlobStore(packagePath: (blobs ?? source.url).path)
        do {
            let (report, changes) = try store.withWriter { connection in
                try merge(
                    into: connection, snapshot: snapshot, blobs: otherBlobs, source: source.url.path,
                    ancestor: ancestorStore)
            }
            store.commitObservers.deliver(changes, author: nil)
            return report
        } catch {
            let failure = DeckError.wrap(error).replacingPath(DocumentMerger.otherCopy, with: source.url.path)
            if case .sqlite(let sqlite) = failure, sqlite.code == .constraintUnique {
                // Two records, one from each copy, with the same values of a unique constraint
                // and different global ids (spec 20.9: the values became equal by a later change,
                // or an id was not made from them): the user decides which stays.
                let columns = sqlite.message.components(separatedBy: "failed: ").last ?? sqlite.message
                let pairs = MergeCollisions.describe(store.mapping, store: store.url, other: source.url)
                throw DeckError.notComparable(
                    path: source.url.path,
                    reason:
                        "a record of it and one of \(store.url.path) have the same values of a unique "
                        + "constraint (\(columns)) under different global ids (the values became equal by a "
                        + "later change, or a record is older than format 6): change one of them in either "
                        + "copy, then merge again"
                        + (pairs.isEmpty ? "" : " (\(pairs.joined(separator: "; ")))"))
            }
            throw failure
        }
    }

    /// Refuses to merge `source` into this store unless both are version 5 copies of one
    /// document with one schema and one date epoch.
    private static func checkMergeable(
        _ source: PackageStore, into store: PackageStore, differentDocuments: Bool
    )
        throws(DeckError)
    {
        for copy in [store, source] where copy.storeFormatVersion < VersionDDL.firstFormatVersion {
            throw DeckError.notComparable(
                path: copy.url.path,
                reason:
                    "it is format version \(copy.storeFormatVersion); merging needs version "
                    + "\(VersionDDL.firstFormatVersion) (open it for writing once to upgrade it)")
        }
        // The schemas are compared after: a copy at an earlier version is migrated (MergeMigration).
        try DocumentDifference.requireCopies(
            store, source, paths: (store.url.path, source.url.path), differentDocuments: differentDocuments,
            verb: "merge different documents", sameSchema: false)
        guard store.dateEpoch == source.dateEpoch else {
            throw DeckError.notComparable(
                path: source.url.path, reason: "its dates count from another epoch than \(store.url.path)'s")
        }
    }

    /// The merge on the writer's connection: the other copy's store at `snapshot` attached
    /// read-only (outside a transaction, as SQLite requires), one transaction, detached. The
    /// transaction reads the other store at one state, whatever its writers do meanwhile.
    private static func merge(
        into connection: StoreConnection, snapshot: String, blobs: BlobStore, source: String,
        ancestor: String?
    ) throws
        -> (
            MergeReport, ChangeSet
        )
    {
        let database = connection.database
        try database.attachReadOnly(snapshot, as: "other")
        defer { try? database.execute("DETACH DATABASE other") }
        if let ancestor { try database.attachReadOnly(ancestor, as: "ancestor") }
        defer { if ancestor != nil { try? database.execute("DETACH DATABASE ancestor") } }
        try connection.begin()
        do {
            let merged = try mergedClock(database, path: connection.path, source: source)
            if ancestor != nil { try MergeAncestor.version(database, mapping: connection.mapping) }
            guard let writer = try database.scalar("SELECT writer FROM main.deck_clock")?.int64 else {
                throw DeckError.corrupt(path: connection.path, reason: "deck_clock has no row")
            }
            // What the merge changes of its own (repairs) carries the origin's version.
            try database.execute("UPDATE main.deck_clock SET clock = 0, writer = 0")
            var merger = DocumentMerger(
                connection: connection, mapping: connection.mapping, otherBlobs: blobs,
                hasAncestor: ancestor != nil)
            try merger.run()
            try database.run(
                "UPDATE main.deck_clock SET clock = ?, writer = ?", [.integer(merged), .integer(writer)])
            // Everything the merge recorded is kept: it commits whole or not at all.
            connection.changes.keep()
            let changes = connection.changes.set
            try connection.commit()
            return (merger.report, changes)
        } catch {
            connection.rollback()
            throw error
        }
    }

    /// The clock the merge leaves: above both copies' (spec 20.2).
    private static func mergedClock(_ database: Database, path: String, source: String) throws -> Int64 {
        guard let own = try database.scalar("SELECT clock FROM main.deck_clock")?.int64,
            let other = try database.scalar("SELECT clock FROM other.deck_clock")?.int64
        else { throw DeckError.corrupt(path: path, reason: "deck_clock has no row") }
        // A clock far ahead would hold back every later edit of this store (spec 20.9).
        let ahead = max(own, VersionClock.next(after: -1)) + 86_400_000 << 16
        guard other < VersionClock.limit - 1, other <= ahead else {
            throw DeckError.notComparable(
                path: source,
                reason:
                    "its clock (\(other)) is more than a day ahead of this computer's time and of \(path)'s: "
                    + "merged in, it would hold back every later edit there")
        }
        return max(own, other + 1)
    }
}
