import DeckStore
import Foundation

extension ModelContainer {
    /// Merges the copy of this container's document at `other` into it, in one transaction (see
    /// ``DocumentMerge/merge(from:into:differentDocuments:)``): every record, value and link takes
    /// the later of the two copies' changes. The container's contexts then see the merged records
    /// as they see another context's save: the models they hold take the merged values,
    /// deleted ones are deleted, and fetches return the records the other copy added.
    ///
    /// ```swift
    /// let report = try container.merge(from: phoneCopyURL)
    /// for conflict in report.conflicts {
    ///     print("\(conflict.entity).\(conflict.property): kept \(conflict.kept), lost \(conflict.lost)")
    /// }
    /// ```
    ///
    /// - Throws: the errors of ``DocumentMerge/merge(from:into:differentDocuments:)``;
    ///   ``DeckError/readOnly(path:)`` for a container opened read-only.
    @discardableResult
    public func merge(from other: URL, differentDocuments: Bool = false) throws(DeckError) -> MergeReport {
        try DocumentMerge.merge(from: other, into: store, differentDocuments: differentDocuments)
    }
}
