import Foundation

/// The long operations in `async` form, with progress and cooperative cancellation.
///
/// Each runs the synchronous operation on a thread of its own (it blocks on I/O, and must not hold
/// one of Swift concurrency's few threads). Cancelling the calling task stops it at its next
/// progress point with ``DeckError/cancelled``: what it was building — an archive, a package under
/// import — is still under a temporary name and is removed, and the document it read is as it was.
/// A task cancelled before the operation starts gets ``DeckError/cancelled`` at once.
///
/// ```swift
/// let task = Task {
///     try await DeckDocument.export(at: packageURL, to: archiveURL) { done, total in
///         print("\(done * 100 / max(total, 1))%")
///     }
/// }
/// task.cancel()   // the export stops; no archive, no temporary file remains
/// ```
extension DeckDocument {
    /// ``export(at:to:format:overwrite:progress:)``, asynchronously and cancellably.
    public static func export(
        at url: URL, to archive: URL, format: ArchiveFormat? = nil, overwrite: Bool = false,
        progress: (@Sendable (Int64, Int64) -> Void)? = nil
    ) async throws(DeckError) {
        try await Cancellation.run { () throws(DeckError) in
            try export(at: url, to: archive, format: format, overwrite: overwrite, progress: progress)
        }
    }

    /// `importArchive(at:to:limits:progress:)`, asynchronously and cancellably. Cancelled, it
    /// leaves nothing at `destination` and no staging directory beside it.
    @discardableResult
    public static func importArchive(
        at archive: URL, to destination: URL, limits: UnpackLimits = .default,
        progress: (@Sendable (Int64, Int64) -> Void)? = nil
    ) async throws(DeckError) -> URL {
        try await Cancellation.run { () throws(DeckError) in
            try importArchive(at: archive, to: destination, limits: limits, progress: progress)
        }
    }

    /// ``pack(directory:to:format:overwrite:progress:)``, asynchronously and cancellably.
    public static func pack(
        directory: URL, to archive: URL, format: ArchiveFormat? = nil, overwrite: Bool = false,
        progress: (@Sendable (Int64, Int64) -> Void)? = nil
    ) async throws(DeckError) {
        try await Cancellation.run { () throws(DeckError) in
            try pack(
                directory: directory, to: archive, format: format, overwrite: overwrite, progress: progress)
        }
    }

    /// ``unpack(at:to:limits:progress:)``, asynchronously and cancellably.
    public static func unpack(
        at archive: URL, to destination: URL, limits: UnpackLimits = .default,
        progress: (@Sendable (Int64, Int64) -> Void)? = nil
    ) async throws(DeckError) {
        try await Cancellation.run { () throws(DeckError) in
            try unpack(at: archive, to: destination, limits: limits, progress: progress)
        }
    }

    /// ``verify(at:options:)``, asynchronously and cancellably (``PackageVerifier/Options/progress``
    /// reports bytes hashed). A cancelled verify returns no report, not a partial one.
    public static func verify(at url: URL, options: PackageVerifier.Options = .init()) async throws(DeckError)
        -> VerificationReport
    {
        try await Cancellation.run { () throws(DeckError) in try verify(at: url, options: options) }
    }
}

extension PackageStore {
    /// `collectGarbage(dryRun:repair:progress:)`, asynchronously and cancellably. Cancelled
    /// while removing files, it stops between two files: the rest stay as orphans for the next
    /// run, and every referenced blob is untouched. It waits for this process's writer like any
    /// write.
    public func collectGarbage(
        dryRun: Bool = false, repair: Bool = false, progress: (@Sendable (Int64, Int64) -> Void)? = nil
    ) async throws(DeckError) -> GarbageReport {
        try await Cancellation.run { () throws(DeckError) in
            try self.collectGarbage(dryRun: dryRun, repair: repair, progress: progress)
        }
    }
}
