import CSQLite
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Sharing documents as single files (spec: "Sharing"): export, import, pack and unpack.
extension DocumentPackage {
    /// Writes a consistent snapshot of the package at `url` to a new archive at `archive`.
    ///
    /// Works while another process has the document open for writing: the store is copied with
    /// `VACUUM INTO` inside one read transaction, and exactly the blobs that snapshot references
    /// are archived. If a concurrent writer removes one of those blobs before it is copied, a new
    /// snapshot is taken and the archive started again, up to ``exportAttempts`` times in all. The
    /// same document exported twice gives byte-identical archives.
    ///
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
        let document = try DocumentPackage.open(at: url, mode: .readOnly)
        defer { try? document.close() }
        let destination = archive.standardizedFileURL.path
        let parent = (destination as NSString).deletingLastPathComponent
        guard FileSystem.isDirectory(parent) else { throw DeckError.notFound(path: parent) }
        do {
            try PackageArchive.checkDestination(destination, overwrite: overwrite)
        } catch {
            throw DeckError(archiveError: error)
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
            } catch ArchiveError.packageRefused(let path, .missing) {
                let name = (path as NSString).lastPathComponent
                guard let digest = Digest(hex: name), referenced.contains(digest) else {
                    throw DeckError(archiveError: ArchiveError.packageRefused(path: path, reason: .missing))
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
                throw DeckError(archiveError: error)
            }
        }
        // Every snapshot lost a blob to a writer's save before it could be archived.
        let holder = WriterLock.holder(packagePath: document.url.path)
        throw DeckError.locked(path: document.url.path, pid: holder == -1 ? nil : holder)
    }

    /// How many snapshots an export takes at most when a concurrent writer keeps removing the
    /// blobs they reference (spec: section 16.3).
    public static let exportAttempts = 3

    /// Whether the committed store (read now, in a new transaction) still references `digest`
    /// and its blob file is still missing.
    func referencesMissingBlob(_ digest: Digest) throws(DeckError) -> Bool {
        let refs: Int64
        do {
            refs =
                try database.scalar("SELECT refs FROM deck_blob WHERE digest = ?", [.text(digest.hexDigest)])?
                .int64 ?? 0
        } catch {
            throw translate(error)
        }
        guard refs > 0 else { return false }
        return try FileSystem.status(blobs.path(for: digest)) == nil
    }

    /// Copies the committed store into a new file at `path` and returns the blobs it references.
    /// A failure to write the copy (a full disk) is an I/O error on `destination`, the archive
    /// the copy is for; one reading the store names the store.
    func snapshotStore(to path: String, for destination: String) throws(DeckError) -> Set<Digest> {
        try vacuum(into: path, for: destination)
        do {
            let copy = try Database(path: path, mode: .readWrite)
            defer { copy.close() }
            _ = try copy.pragma("journal_mode=DELETE")
            var digests: Set<Digest> = []
            try copy.forEachRow("SELECT digest FROM deck_blob WHERE refs > 0") { row in
                if let digest = Digest(hex: row.text(at: 0)) { digests.insert(digest) }
            }
            return digests
        } catch {
            throw translate(error)
        }
    }

    /// `VACUUM INTO path`, with SQLite's I/O failures turned into I/O errors on the file concerned.
    private func vacuum(into path: String, for destination: String) throws(DeckError) {
        let failure: SQLiteError
        do {
            try database.run("VACUUM INTO ?", [.text(path)])
            return
        } catch {
            failure = error
        }
        guard [SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN].contains(failure.primaryCode) else {
            throw translate(failure)
        }
        let system = sqlite3_system_errno(database.handle)
        let reading = failure.code == .ioErrorRead || failure.code == .ioErrorShortRead
        throw DeckError.io(
            path: reading ? database.path : destination,
            operation: reading ? "read" : "write (the store snapshot)",
            errno: system != 0 ? system : failure.primaryCode == SQLITE_FULL ? ENOSPC : EIO)
    }

    /// Makes a package from an archive: unpacked safely under a temporary name next to
    /// `destination`, verified, and only then renamed into place. Returns the package's URL.
    ///
    /// Refuses hostile archives (see ``PackageArchive/unpack(archive:to:limits:validate:progress:)``)
    /// and anything ``PackageVerifier/verifyArchive(at:options:)`` finds corrupt: the two make the
    /// same decision, in the same code. In every failure nothing is left behind.
    ///
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
            throw DeckError(archiveError: error, archive: archive)
        }
        return destination.standardizedFileURL
    }

    /// Runs `body` on the package in `archive`, opened read-only: the archive is imported (with
    /// every check of ``importArchive(at:to:limits:progress:)``) into a private staging directory
    /// in the temporary directory (`TMPDIR`), which is removed afterwards, also when the process
    /// is interrupted (see ``StagingFiles``).
    public static func withArchive<T>(
        at archive: URL, limits: UnpackLimits = .default, _ body: (DocumentPackage) throws -> T
    ) throws -> T {
        let scratch = try Staging.makeScratchDirectory(purpose: "archive")
        defer { scratch.discard() }
        let package = try importArchive(
            at: archive, to: URL(fileURLWithPath: scratch.path + "/package.deck"), limits: limits)
        let document = try DocumentPackage.open(at: package, mode: .readOnly)
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
            throw DeckError(archiveError: error)
        }
    }

    /// Unpacks an archive to a new directory safely, checking every blob's digest but not the
    /// store (``importArchive(at:to:limits:progress:)`` also verifies).
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
            throw DeckError(archiveError: error, archive: archive)
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
}

extension DeckError {
    /// The document-level form of an archive-layer failure.
    init(archiveError error: any Error, archive: URL? = nil) {
        switch error {
        case let error as DeckError: self = error
        case ArchiveError.unrecognizedFormat
        where archive.map({ !PackageVerifier.looksLikeArchive($0.path) }) == true:
            // Not damage: this file never was an archive.
            self = .notAPackage(
                path: archive?.path ?? "", reason: "it is neither a package directory nor a package archive")
        case ArchiveError.destinationExists(let path): self = .alreadyExists(path: path)
        case ArchiveError.destinationNotRegular(let path, let kind):
            self = .notARegularFile(path: path, kind: kind)
        case ArchiveError.insufficientSpace(let path, let needed, let available):
            self = .io(
                path: path, operation: "unpacking (it needs \(needed) bytes; \(available) may be used here)",
                errno: ENOSPC)
        case ArchiveError.fileSystem(let path, let operation, let code):
            self = FileSystem.failure(FileSystem.Operation(rawValue: operation) ?? .open, path, code)
            if case .io = self { self = .io(path: path, operation: operation, errno: code) }
        case let error as ArchiveError: self = .archive(error)
        default: self = .wrap(error)
        }
    }
}
