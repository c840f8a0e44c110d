import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension PackageStore {
    /// Removes what no committed state needs: blob files nothing references, `deck_blob` rows
    /// with no references, and temporaries; creates any index the schema derives that the store
    /// lacks; then compacts the store with `VACUUM` (spec: section 10.8).
    ///
    /// Reference counts are not trusted: before a row or a file is removed, the cells that name
    /// it are counted (one scan per external-storage column), and whatever a record names is kept
    /// and listed in ``GarbageReport/uncountedReferences``. With `repair`, the counts are made
    /// right first (``repairReferences(dryRun:)``).
    ///
    /// Takes this process's writer (waiting for other writers). With `dryRun`, only reports; a
    /// dry run also works on a store opened read-only.
    /// - Parameter progress: receives (files removed, files to remove) as they go.
    public func collectGarbage(
        dryRun: Bool = false, repair: Bool = false, progress: ((Int64, Int64) -> Void)? = nil
    ) throws(DeckError) -> GarbageReport {
        try maintenance(dryRun: dryRun) {
            try StoreMaintenance($0).collectGarbage(dryRun: dryRun, repair: repair, progress: progress)
        }
    }

    /// Makes `deck_blob` agree with the cells (spec: section 10.8): registers intact blob files
    /// that records name but `deck_blob` lacks, sets every count to the number of cells naming
    /// the blob, corrects wrong sizes, and lists what it cannot repair. One transaction; removes
    /// nothing. With `dryRun`, only reports (and also works on a store opened read-only).
    public func repairReferences(dryRun: Bool = false) throws(DeckError) -> ReferenceRepairReport {
        try maintenance(dryRun: dryRun) { try StoreMaintenance($0).repairReferences(dryRun: dryRun) }
    }

    /// Counts and sizes, for `deck inspect` and `deck open`, from one committed state.
    public func info() throws(DeckError) -> PackageInfo {
        do {
            return try read { reader in try StoreMaintenance(reader.live()).info() }
        } catch {
            throw DeckError.wrap(error)
        }
    }

    /// Runs maintenance on the writer's connection, or for a dry run of a read-only store on a
    /// reader's.
    private func maintenance<T>(dryRun: Bool, _ body: (StoreConnection) throws -> T) throws(DeckError) -> T {
        do {
            if mode == .readWrite { return try withWriter { try body($0) } }
            guard dryRun else { throw DeckError.readOnly(path: path) }
            return try withReaderConnection { try body($0) }
        } catch {
            throw DeckError.wrap(error)
        }
    }
}
