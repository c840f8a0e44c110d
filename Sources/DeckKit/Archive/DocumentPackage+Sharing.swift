import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Sharing documents as single files (spec: "Sharing"): export, import, pack and unpack.
extension DocumentPackage {
    /// Writes a consistent snapshot of the package at `url` to a new archive at `archive`.
    ///
    /// Works while another process has the document open for writing: the store is copied with
    /// `VACUUM INTO` inside one read transaction, and exactly the blobs that snapshot references
    /// are archived. The same document exported twice gives byte-identical archives.
    ///
    /// - Parameter format: nil infers it from `archive`'s extension, defaulting to zip.
    /// - Parameter progress: receives (bytes archived, bytes to archive).
    public static func export(
        at url: URL, to archive: URL, format: ArchiveFormat? = nil, overwrite: Bool = false,
        progress: ((Int64, Int64) -> Void)? = nil
    ) throws(DeckError) {
        let format = format ?? ArchiveFormat(fileName: archive.lastPathComponent) ?? .zip
        let document = try DocumentPackage.open(at: url, mode: .readOnly)
        defer { try? document.close() }
        let parent = archive.standardizedFileURL.deletingLastPathComponent().path
        guard FileSystem.isDirectory(parent) else { throw DeckError.notFound(path: parent) }
        let snapshot = parent + "/.\(archive.lastPathComponent).store-" + FileSystem.randomSuffix()
        defer { try? FileSystem.unlink(snapshot) }
        // A writer may remove a blob between our snapshot and our reading it; try again then.
        var attempt = 0
        while true {
            attempt += 1
            try? FileSystem.unlink(snapshot)
            let referenced = try document.snapshotStore(to: snapshot)
            do {
                try PackageArchive.pack(
                    directory: document.url, to: archive, format: format,
                    storeSnapshot: URL(fileURLWithPath: snapshot), blobs: referenced, overwrite: overwrite,
                    progress: progress)
                return
            } catch ArchiveError.packageRefused(_, .missing) where attempt < 3 {
                continue
            } catch {
                throw DeckError(archiveError: error)
            }
        }
    }

    /// Copies the committed store into a new file at `path` and returns the blobs it references.
    func snapshotStore(to path: String) throws(DeckError) -> Set<Digest> {
        do {
            try database.run("VACUUM INTO ?", [.text(path)])
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

    /// Makes a package from an archive: unpacked safely under a temporary name next to
    /// `destination`, verified, and only then renamed into place. Returns the package's URL.
    ///
    /// Refuses hostile archives (see ``PackageArchive/unpack(archive:to:limits:validate:)``) and
    /// invalid packages; in every failure nothing is left behind.
    @discardableResult
    ///
    /// - Parameter progress: receives (archive bytes read, archive size).
    public static func importArchive(
        at archive: URL, to destination: URL, limits: UnpackLimits = .default,
        progress: ((Int64, Int64) -> Void)? = nil
    ) throws(DeckError) -> URL {
        try requireArchive(archive)
        do {
            // Every blob's digest is checked while unpacking; the rest is checked here.
            let validate: (URL) throws -> Void = { temporary in
                let report = try PackageVerifier.verify(at: temporary, options: .init(hashBlobs: false))
                if let first = report.findings.first(where: { $0.severity == .corruption }) {
                    let more = report.findings.filter { $0.severity == .corruption }.count - 1
                    throw DeckError.corrupt(
                        path: archive.path,
                        reason: "the archived package is invalid: \(first)"
                            + (more > 0 ? " (and \(more) more)" : ""))
                }
            }
            try PackageArchive.unpack(
                archive: archive, to: destination, limits: limits, validate: validate, progress: progress)
        } catch {
            throw DeckError(archiveError: error, archive: archive)
        }
        return destination.standardizedFileURL
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
        let format = format ?? ArchiveFormat(fileName: archive.lastPathComponent) ?? .zip
        do {
            try PackageArchive.pack(
                directory: directory, to: archive, format: format, overwrite: overwrite, progress: progress)
        } catch {
            throw DeckError(archiveError: error)
        }
    }

    /// Unpacks an archive to a new directory safely, checking every blob's digest but not the
    /// store (``importArchive(at:to:limits:)`` also verifies).
    public static func unpack(
        at archive: URL, to destination: URL, limits: UnpackLimits = .default,
        progress: ((Int64, Int64) -> Void)? = nil
    ) throws(DeckError) {
        try requireArchive(archive)
        do {
            try PackageArchive.unpack(archive: archive, to: destination, limits: limits, progress: progress)
        } catch {
            throw DeckError(archiveError: error, archive: archive)
        }
    }

    static func requireArchive(_ archive: URL) throws(DeckError) {
        let path = archive.standardizedFileURL.path
        guard let st = try FileSystem.status(path) else { throw DeckError.notFound(path: path) }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            throw DeckError.archive("\(path): is a directory, not an archive (use it as a package directly)")
        }
        guard access(path, R_OK) == 0 else { throw DeckError.permissionDenied(path: path, operation: "read") }
    }

    /// The name `deck import` gives a package made from `archive` when no destination is given:
    /// the archive's name without its archive extension, with `.deck` added unless it already
    /// ends in a package extension (`Spanish.zip` → `Spanish.deck`, `Notes.flashcards.zip` →
    /// `Notes.flashcards`).
    public static func defaultImportName(for archive: URL) -> String {
        var name = archive.lastPathComponent
        for suffix in [".tar.gz", ".tar.zst", ".tgz", ".tzst", ".tar", ".zip"]
        where name.lowercased().hasSuffix(suffix) {
            name = String(name.dropLast(suffix.count))
            break
        }
        if name.isEmpty { name = "Imported" }
        return (name as NSString).pathExtension.isEmpty ? name + "." + PackageLayout.defaultExtension : name
    }
}

extension DeckError {
    /// The document-level form of an archive-layer failure.
    init(archiveError error: any Error, archive: URL? = nil) {
        switch error {
        case let error as DeckError: self = error
        case ArchiveError.unreadable(_, let message)
        where message.contains("Unrecognized archive format")
            && archive.map({ !PackageVerifier.looksLikeArchive($0.path) }) == true:
            // Not damage: this file never was an archive.
            self = .notAPackage(
                path: archive?.path ?? "", reason: "it is neither a package directory nor a package archive")
        case ArchiveError.destinationExists(let path): self = .alreadyExists(path: path)
        case ArchiveError.fileSystem(let path, let operation, let code):
            self = FileSystem.failure(FaultInjection.Operation(rawValue: operation) ?? .open, path, code)
            if case .io = self { self = .io(path: path, operation: operation, errno: code) }
        case let error as ArchiveError: self = .archive(error.description)
        default: self = .wrap(error)
        }
    }
}
