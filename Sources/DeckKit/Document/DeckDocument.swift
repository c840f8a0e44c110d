import DeckSQLite
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Whole-document work on packages: sharing them as one file (spec: section 16) — export,
/// import, pack, unpack — and verifying a package or an archive.
///
/// This is the document layer: it orchestrates the store (``PackageStore``), the archive reader
/// and writer and the verifier, which know nothing of each other.
///
/// ```swift
/// try DeckDocument.export(at: packageURL, to: archiveURL)            // Spanish.deck → Spanish.zip
/// let copy = try DeckDocument.importArchive(at: archiveURL, to: copyURL)
/// let report = try DeckDocument.verify(at: archiveURL)               // a package or an archive
/// ```
public enum DeckDocument {
    /// Verifies a package directory (``PackageVerifier/verify(at:options:)``) or a package
    /// archive (``verifyArchive(at:options:)``), whichever `url` is.
    public static func verify(at url: URL, options: PackageVerifier.Options = .init()) throws(DeckError)
        -> VerificationReport
    {
        if try isArchiveFile(url) { return try verifyArchive(at: url, options: options) }
        return try PackageVerifier.verify(at: url, options: options)
    }

    /// Runs `body` on the package at `url` opened read-only, whether `url` is a package
    /// directory or a package archive: an archive is imported first (with every check of
    /// `importArchive(at:to:limits:progress:)`) into a private staging directory, removed
    /// afterwards, also when the process is interrupted (see ``StagingFiles``).
    public static func withReadOnlyStore<T>(at url: URL, _ body: (PackageStore) throws -> T) throws -> T {
        guard try isArchiveFile(url) else {
            let store = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? store.close() }
            return try body(store)
        }
        do {
            return try withArchive(at: url, body)
        } catch DeckError.archive(let error) {
            throw DeckError.notAPackage(
                path: url.path, reason: "not a directory, and not a readable package archive (\(error))")
        }
    }

    /// Whether `url` is a regular file (and so, for the commands that take either, an archive
    /// rather than a package directory).
    public static func isArchiveFile(_ url: URL) throws(DeckError) -> Bool {
        guard let st = try FileSystem.status(url.standardizedFileURL.path) else { return false }
        return (st.st_mode & S_IFMT) == S_IFREG
    }

    /// Writes a consistent snapshot of the package at `url` to a new archive at `archive`.
    ///
    /// Works while another process has the document open for writing: the store is copied with
    /// `VACUUM INTO` inside one read transaction, and exactly the blobs that snapshot references
    /// are archived. If a concurrent writer removes one of those blobs before it is copied, a new
    /// snapshot is taken and the archive started again, up to ``exportAttempts`` times in all. The
    /// same document exported twice gives byte-identical archives.
    ///
    /// - Parameter url: the package directory.
    /// - Parameter archive: the archive file to write.
    /// - Parameter format: nil infers it from `archive`'s extension, defaulting to zip.
    /// - Parameter overwrite: replace an existing regular file at `archive`; anything else that
    ///   exists there (a directory, FIFO, device, socket or link) is never replaced.
    /// - Parameter progress: receives (bytes archived, bytes to archive).
    /// - Throws: ``DeckError/corrupt(path:reason:)`` when a blob the committed store references is
    ///   missing; ``DeckError/locked(path:pid:)`` when a writer removed a referenced blob during
    ///   every attempt; ``DeckError/notARegularFile(path:kind:)`` for a special destination.
    public static func export(
        at url: URL, to archive: URL, format: ArchiveFormat? = nil, overwrite: Bool = false,
        progress: ((Int64, Int64) -> Void)? = nil
    ) throws(DeckError) {
        let format = format ?? ArchiveFormat(fileName: archive.lastPathComponent) ?? .zip
        let document = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? document.close() }
        let destination = archive.standardizedFileURL.path
        let parent = (destination as NSString).deletingLastPathComponent
        guard FileSystem.isDirectory(parent) else { throw DeckError.notFound(path: parent) }
        do {
            try PackageArchive.checkDestination(destination, overwrite: overwrite)
        } catch {
            throw DeckError.wrap(error)
        }
        for attempt in 1...exportAttempts {
            let snapshot = try Staging.make(beside: destination, kind: .store, isDirectory: true)
            defer { snapshot.discard() }
            let store = snapshot.path + "/" + PackageLayout.store
            let referenced = try document.snapshotStore(to: store, for: destination)
            #if DEBUG
                FaultInjection.exportSnapshotTaken(document.url, attempt: attempt)
            #endif
            do {
                try PackageArchive.pack(
                    directory: document.url, to: archive, format: format,
                    storeSnapshot: URL(fileURLWithPath: store), blobs: referenced, overwrite: overwrite,
                    progress: progress)
                return
            } catch DeckError.archive(.packageRefused(let path, .missing)) {
                let name = (path as NSString).lastPathComponent
                guard let digest = Digest(hex: name), referenced.contains(digest) else {
                    throw DeckError.archive(.packageRefused(path: path, reason: .missing))
                }
                // A fresh read transaction tells a concurrent writer's save (the blob is no longer
                // referenced, or is back) from damage (still referenced, still missing).
                if try document.referencesMissingBlob(digest) {
                    throw DeckError.corrupt(
                        path: document.url.path,
                        reason: "blob \(digest.hexDigest) is referenced but its file \(path) is missing")
                }
                continue
            } catch {
                throw DeckError.wrap(error)
            }
        }
        // Every snapshot lost a blob to a writer's save before it could be archived.
        let holder = WriterLock.holder(packagePath: document.url.path)
        throw DeckError.locked(path: document.url.path, pid: holder == -1 ? nil : holder)
    }

    /// How many snapshots an export takes at most when a concurrent writer keeps removing the
    /// blobs they reference (spec: section 16.3).
    public static let exportAttempts = 3

    /// Makes a package from an archive: unpacked safely under a temporary name next to
    /// `destination`, verified, and only then renamed into place. Returns the package's URL.
    ///
    /// Refuses hostile archives (see the spec, section 16.4)
    /// and anything ``verifyArchive(at:options:)`` finds corrupt: the two make the
    /// same decision, in the same code. In every failure nothing is left behind.
    ///
    /// - Parameter archive: the archive file (zip, tar, tar.gz, tar.zst).
    /// - Parameter destination: where the package goes; nothing may exist there yet.
    /// - Parameter limits: caps on sizes and entry counts, against archive bombs.
    /// - Parameter progress: receives (archive bytes read, archive size).
    @discardableResult
    public static func importArchive(
        at archive: URL, to destination: URL, limits: UnpackLimits = .default,
        progress: ((Int64, Int64) -> Void)? = nil
    ) throws(DeckError) -> URL {
        try requireArchive(archive)
        do {
            try PackageArchive.unpack(
                archive: archive, to: destination, limits: limits,
                validateScan: { directory, scan in
                    // Every blob's digest was checked while unpacking; the rest is checked here.
                    let report = try PackageVerifier.verifyArchived(
                        scan, storePath: directory.path + "/" + PackageLayout.store,
                        archivePath: archive.path,
                        options: PackageVerifier.Options(hashBlobs: false))
                    let corruption = report.findings.filter { $0.severity == .corruption }
                    if let first = corruption.first {
                        throw DeckError.corrupt(
                            path: archive.path,
                            reason: "the archived package is invalid: \(first)"
                                + (corruption.count > 1 ? " (and \(corruption.count - 1) more)" : ""))
                    }
                }, progress: progress)
        } catch {
            throw DeckError.reading(archive, error)
        }
        return destination.standardizedFileURL
    }

    /// Runs `body` on the package in `archive`, opened read-only: the archive is imported (with
    /// every check of `importArchive(at:to:limits:progress:)`) into a private staging directory
    /// in the temporary directory (`TMPDIR`), which is removed afterwards, also when the process
    /// is interrupted (see ``StagingFiles``).
    public static func withArchive<T>(
        at archive: URL, limits: UnpackLimits = .default, _ body: (PackageStore) throws -> T
    ) throws -> T {
        let scratch = try Staging.makeScratchDirectory(purpose: "archive")
        defer { scratch.discard() }
        let package = try importArchive(
            at: archive, to: URL(fileURLWithPath: scratch.path + "/package.deck"), limits: limits)
        let document = try PackageStore.open(at: package, mode: .readOnly)
        defer { try? document.close() }
        return try body(document)
    }

    /// Archives a package directory as it is on disk (no snapshot): refused while a writer
    /// holds the lock, since its store would be copied mid-change.
    public static func pack(
        directory: URL, to archive: URL, format: ArchiveFormat? = nil, overwrite: Bool = false,
        progress: ((Int64, Int64) -> Void)? = nil
    ) throws(DeckError) {
        let path = directory.standardizedFileURL.path
        guard let st = try FileSystem.status(path) else { throw DeckError.notFound(path: path) }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            throw DeckError.notAPackage(path: path, reason: "it is a file, not a package directory")
        }
        _ = try Manifest.read(packagePath: path)
        if let pid = WriterLock.holder(packagePath: path) {
            throw DeckError.locked(path: path, pid: pid == -1 ? nil : pid)
        }
        let wal = path + "/" + PackageLayout.store + "-wal"
        if let st = try FileSystem.status(wal), st.st_size > 0 {
            throw DeckError.corrupt(
                path: path,
                reason:
                    "the store has an unmerged write-ahead log; open and close it once, or use 'deck export'")
        }
        let journal = path + "/" + PackageLayout.store + "-journal"
        if let st = try FileSystem.status(journal), st.st_size > 0 {
            throw DeckError.corrupt(
                path: path,
                reason:
                    "the store has a rollback journal (an interrupted transaction); open and close it once, "
                    + "or use 'deck export'")
        }
        let format = format ?? ArchiveFormat(fileName: archive.lastPathComponent) ?? .zip
        do {
            try PackageArchive.pack(
                directory: directory, to: archive, format: format, overwrite: overwrite, progress: progress)
        } catch {
            throw DeckError.wrap(error)
        }
    }

    /// Unpacks an archive to a new directory safely, checking every blob's digest but not the
    /// store (`importArchive(at:to:limits:progress:)` also verifies).
    ///
    /// An archive made from a package that was open or had crashed holds the store's
    /// write-ahead log (or rollback journal) too; import refuses it, but unpacking applies it to
    /// the store in the private copy before the rename, as opening the package for writing
    /// would, so the result is that package as it was, in rollback mode with no log. If SQLite
    /// cannot apply it, the log is left beside the store.
    public static func unpack(
        at archive: URL, to destination: URL, limits: UnpackLimits = .default,
        progress: ((Int64, Int64) -> Void)? = nil
    ) throws(DeckError) {
        try requireArchive(archive)
        do {
            try PackageArchive.unpack(
                archive: archive, to: destination, limits: limits,
                validateScan: { directory, scan in
                    if scan.hasStoreLog { applyStoreLog(directory.path + "/" + PackageLayout.store) }
                }, progress: progress)
        } catch {
            throw DeckError.reading(archive, error)
        }
    }

    /// Folds the log beside a private store copy into it (SQLite's recovery, a full checkpoint)
    /// and switches it to rollback mode, which removes the `-wal` and `-shm`; a rollback journal
    /// is rolled back by the same open. Leaves everything as it is when SQLite refuses.
    static func applyStoreLog(_ storePath: String) {
        guard let database = try? Database(path: storePath, mode: .readWrite) else { return }
        defer { database.close() }
        _ = try? database.pragma("wal_checkpoint(TRUNCATE)")
        _ = try? database.pragma("journal_mode=DELETE")
    }

    static func requireArchive(_ archive: URL) throws(DeckError) {
        let path = archive.standardizedFileURL.path
        guard let st = try FileSystem.status(path) else { throw DeckError.notFound(path: path) }
        switch st.st_mode & S_IFMT {
        case S_IFREG:
            break
        case S_IFDIR:
            throw DeckError.archive(
                .notAnArchive(
                    path: path, reason: "is a directory, not an archive (use it as a package directly)"))
        case S_IFLNK:
            throw DeckError.notAPackage(
                path: path, reason: "it is a symbolic link; give the archive it points to instead")
        default:
            let kind = ArchiveSystem.describeNonRegular(st) ?? "a special file"
            throw DeckError.notAPackage(path: path, reason: "it is \(kind), not an archive file")
        }
        guard access(path, R_OK) == 0 else { throw DeckError.permissionDenied(path: path, operation: "read") }
    }

    /// The name `deck import` gives a package made from `archive` when no destination is given;
    /// never `archive`'s own name:
    ///
    /// - a name ending in an archive extension (`.zip`, `.tar`, `.tar.gz`, `.tgz`, `.tar.zst`,
    ///   `.tzst`, in any letter case) loses it, and gets `.deck` unless what remains has an
    ///   extension of its own (`Spanish.zip` → `Spanish.deck`, `Notes.flashcards.zip` →
    ///   `Notes.flashcards`);
    /// - any other name has its last extension, if any, replaced by `.deck` (`Notes.flashcards`
    ///   → `Notes.deck`, `notes.txt` → `notes.deck`, `backup` → `backup.deck`), and a name that
    ///   already ends in `.deck` gets `-imported` before it (`Spanish.deck` →
    ///   `Spanish-imported.deck`);
    /// - an empty stem becomes `Imported`; a hidden name (`.deck`) has no extension; a result
    ///   longer than 255 bytes is shortened (whole characters) before its extension.
    public static func defaultImportName(for archive: URL) -> String {
        let input = archive.lastPathComponent
        var stem = input
        var stripped = false
        for suffix in [".tar.gz", ".tar.zst", ".tgz", ".tzst", ".tar", ".zip"]
        where input.lowercased().hasSuffix(suffix) {
            stem = String(decoding: Array(input.utf8.dropLast(suffix.utf8.count)), as: UTF8.self)
            stripped = true
            break
        }
        var extensionPart = "." + PackageLayout.defaultExtension
        if stripped {
            let own = (stem as NSString).pathExtension
            if !own.isEmpty && stem.utf8.count > own.utf8.count + 1 {
                extensionPart = "." + own
                stem = (stem as NSString).deletingPathExtension
            }
        } else {
            let own = (stem as NSString).pathExtension
            if !own.isEmpty { stem = (stem as NSString).deletingPathExtension }
            if own == PackageLayout.defaultExtension { stem += "-imported" }
        }
        if stem.isEmpty { stem = "Imported" }
        var shortened = String.UnicodeScalarView()
        var bytes = 0
        for scalar in stem.unicodeScalars {
            let size = String(scalar).utf8.count
            if bytes + size + extensionPart.utf8.count > Staging.maximumNameBytes { break }
            shortened.append(scalar)
            bytes += size
        }
        return String(shortened) + extensionPart
    }

    /// Verifies a package archive by streaming it: every entry is checked as unpacking would
    /// check it (paths, links, sizes, each blob's digest), the store is copied to a private
    /// staging directory for SQLite's checks and removed afterwards. Nothing else is written.
    ///
    /// The archive is valid exactly when `deck import` accepts it: both run the same pass over
    /// the archive and then the verifier's checks of an archived store.
    public static func verifyArchive(at url: URL, options: PackageVerifier.Options = .init())
        throws(DeckError)
        -> VerificationReport
    {
        try requireArchive(url)
        let path = url.standardizedFileURL.path
        var report = VerificationReport(path: path)
        let scratch = try Staging.makeScratchDirectory(purpose: "verify")
        defer { scratch.discard() }
        let store = scratch.path + "/" + PackageLayout.store
        let scan: ArchiveScanReport
        do {
            scan = try PackageArchive.scan(archive: url, storeTo: URL(fileURLWithPath: store))
        } catch DeckError.archive(let error) {
            if case .unrecognizedFormat = error, !ArchiveFormat.looksLikeArchive(path) {
                throw DeckError.notAPackage(
                    path: path, reason: "it is neither a package directory nor a package archive")
            }
            report.findings.append(
                Finding(
                    severity: .corruption, code: "archive-refused", object: path, message: error.description))
            return report
        } catch {
            throw DeckError.wrap(error)
        }
        return try PackageVerifier.verifyArchived(scan, storePath: store, archivePath: path, options: options)
    }

}
