import DeckStore
import Foundation

extension ModelContainer {
    /// Merges the copy of this container's document at `other` into it, in one transaction (see
    /// ``DocumentMerge/merge(from:into:differentDocuments:plan:ancestor:)``): every record, value and link
    /// takes the later of the two copies' changes. The container's contexts then see the merged
    /// records as they see another context's save: the models they hold take the merged values,
    /// deleted ones are deleted, and fetches return the records the other copy added.
    ///
    /// A copy at an earlier version of the schema (an older app's) is migrated first, in a scratch
    /// copy, along the container's migration plan when it has one (its custom stages included),
    /// and otherwise by the lightweight steps alone. A copy at a later version is refused: this
    /// app cannot change the document to a schema it does not know.
    ///
    /// With `ancestor`, a copy both copies were made from, what each changed before it was
    /// versioned (copies upgraded from format version 4 apart) is found by comparing with it.
    ///
    /// ```swift
    /// let report = try container.merge(from: phoneCopyURL)
    /// for conflict in report.conflicts {
    ///     print("\(conflict.entity).\(conflict.property): kept \(conflict.kept), lost \(conflict.lost)")
    /// }
    /// ```
    ///
    /// - Throws: the errors of ``DocumentMerge/merge(from:into:differentDocuments:plan:ancestor:)``;
    ///   ``DeckError/readOnly(path:)`` for a container opened read-only.
    @discardableResult
    public func merge(from other: URL, differentDocuments: Bool = false, ancestor: URL? = nil)
        throws(DeckError)
        -> MergeReport
    {
        var migrator = MergeMigration.migrator(MigrationPlan())
        // The plan reaches the app's schema; a later document open read-write keeps its own.
        if let migrationPlan = document.migrationPlan, let application = schema.storeSchema,
            application.fingerprint == store.schema.fingerprint
        {
            let models = schema
            let stages = migrationPlan.stages.contains {
                if case .custom = $0 { true } else { false }
            }
            migrator = MergeMigration.Migrator(runsStages: stages) { url, _ throws(DeckError) in
                try PlanMigration.migrate(at: url, to: models, storeSchema: application, plan: migrationPlan)
            }
        }
        return try DocumentMerge.merge(
            from: other, into: store, differentDocuments: differentDocuments, blobs: nil, migrator: migrator,
            ancestor: ancestor)
    }
}
