import DeckSQLite
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Checks a package against the spec without changing it (spec: "Verification").
///
/// ```swift
/// let report = try PackageVerifier.verify(at: url)
/// for finding in report.findings { print(finding) }
/// ```
///
/// Throws only when the path cannot be examined at all (missing, not a package, no
/// permission, too new); everything wrong inside a package is a ``Finding``.
public enum PackageVerifier {
    /// Options for a verification.
    public struct Options: Sendable {
        /// Skip hashing blob files and use SQLite's `quick_check`.
        public var quick: Bool
        /// Hash every blob file (true unless `quick`). An importer that has just checked every
        /// digest while unpacking turns it off and keeps the full `integrity_check`.
        public var hashBlobs: Bool
        /// Threads that hash blob files (default: the number of cores).
        public var threads: Int
        /// Called with (bytes done, bytes total) while hashing, from any thread.
        public var progress: (@Sendable (Int64, Int64) -> Void)?

        public init(
            quick: Bool = false, hashBlobs: Bool? = nil, threads: Int? = nil,
            progress: (@Sendable (Int64, Int64) -> Void)? = nil
        ) {
            self.quick = quick
            self.hashBlobs = hashBlobs ?? !quick
            self.threads = max(1, threads ?? ProcessInfo.processInfo.activeProcessorCount)
            self.progress = progress
        }
    }

    public static func verify(at url: URL, options: Options = Options()) throws(DeckError)
        -> VerificationReport
    {
        let path = url.standardizedFileURL.path
        guard let st = try FileSystem.status(path) else { throw DeckError.notFound(path: path) }
        if (st.st_mode & S_IFMT) == S_IFLNK {
            throw DeckError.notAPackage(
                path: path, reason: "it is a symbolic link; verify its target instead")
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            throw DeckError.notAPackage(path: path, reason: "it is a file, not a package directory")
        }
        guard access(path, R_OK | X_OK) == 0 else {
            throw DeckError.permissionDenied(path: path, operation: "open")
        }
        var report = VerificationReport(path: path)
        try PackageLayout.refuseLinks(packagePath: path)
        let manifest = try Manifest.read(packagePath: path)
        report.manifestFormatVersion = manifest.formatVersion
        try PackageLayout.checkKinds(packagePath: path)
        guard let opened = try openStore(path: path, manifest: manifest, report: &report) else {
            checkSyncConflicts(path: path, report: &report)
            return report
        }
        let (database, schema, formatVersion) = opened
        defer { database.close() }
        do {
            try checkStore(
                database, schema: schema, formatVersion: formatVersion, manifest: manifest, path: path,
                options: options,
                reader: {
                    try PackageDirectory.openStore(
                        path + "/" + PackageLayout.store, mode: .readOnly, packagePath: path)
                }, report: &report)
        } catch DeckError.cancelled {
            throw DeckError.cancelled
        } catch DeckError.permissionDenied(let denied, let operation) {
            // A folder of the package (blobs/ or one of its own) this user may not read: nothing
            // is known to be wrong with the package, as for an unreadable store.
            throw DeckError.permissionDenied(path: denied, operation: operation)
        } catch {
            // The object names the store: the error need not say it again.
            let store = path + "/" + PackageLayout.store
            report.add(
                .corruption, "store-unreadable", store,
                "\(error)".replacingOccurrences(of: " (in \(store))", with: ""))
        }
        checkLeftovers(path: path, report: &report)
        checkSyncConflicts(path: path, report: &report)
        report.findings.sort { ($0.severity, $0.code, $0.object) < ($1.severity, $1.code, $1.object) }
        return report
    }

    /// Opens the package's store read-only and checks its identity and metadata, returning it
    /// with its schema and format version; nil, with the finding that says why, when it cannot
    /// be verified (missing, needing recovery, unreadable, another package's, bad metadata).
    static func openStore(path: String, manifest: Manifest, report: inout VerificationReport)
        throws(DeckError)
        -> (Database, StoreSchema, Int)?
    {
        let storePath = path + "/" + PackageLayout.store
        guard try FileSystem.status(storePath) != nil else {
            report.add(.corruption, "store-missing", storePath, "the store is missing")
            return nil
        }
        // A store whose log files a writer did not leave behind (killed while it switched back to
        // rollback mode at close): only a writer may make them, and nothing is lost.
        if let missing = try PackageDirectory.missingLogFileAtRest(storePath, packagePath: path) {
            report.findings.append(
                Finding(
                    severity: .needsRecovery, code: "store-needs-recovery", object: storePath,
                    message:
                        "the store's header says it uses a write-ahead log, but \(missing) is missing (a writer "
                        + "stopped while it switched the store back to rollback mode), so no reader can read it "
                        + "without creating files: open the package for writing once (for example 'deck gc "
                        + "\(path)'), then verify again (if something other than Deck removed the log, the "
                        + "changes it held are gone; the store holds what was checkpointed)"))
            return nil
        }
        let database: Database
        do {
            database = try PackageDirectory.openStore(storePath, mode: .readOnly, packagePath: path)
        } catch let error as DeckError {
            if case .corrupt(_, let reason) = error {
                report.add(.corruption, "store-unreadable", storePath, reason)
                return nil
            }
            throw error
        } catch {
            if let finding = recoveryFinding(error, storePath: storePath, packagePath: path) {
                report.findings.append(finding)
            } else {
                report.add(
                    .corruption, "store-unreadable", storePath, "not a readable SQLite database (\(error))")
            }
            return nil
        }
        do {
            let (schema, formatVersion) = try PackageDirectory.checkStore(
                database, packagePath: path, manifest: manifest, verifying: true)
            report.formatVersion = formatVersion
            return (database, schema, formatVersion)
        } catch let error as DeckError {
            database.close()
            if case .notAPackage(_, let reason) = error {
                report.add(.corruption, "store-identity", storePath, reason)
            } else if case .corrupt(_, let reason) = error {
                report.add(.corruption, "store-metadata", storePath, reason)
            } else {
                throw error
            }
            return nil
        } catch {
            database.close()
            if let finding = recoveryFinding(error, storePath: storePath, packagePath: path) {
                report.findings.append(finding)
            } else {
                report.add(
                    .corruption, "store-unreadable", storePath, "not a readable SQLite database (\(error))")
            }
            return nil
        }
    }

    /// The finding for a store that a reader may not read because it needs recovery: SQLite
    /// refuses a read-only connection (`SQLITE_READONLY_ROLLBACK`) while `store.sqlite-journal`
    /// is a hot journal, one a writer left when it stopped in a transaction in rollback mode (as
    /// in the switch to or from WAL mode, spec: section 10.5). Only a writer may roll it back
    /// (section 11.2), and verification writes nothing: so it is no corruption, but a finding of
    /// its own, saying what to run. Nil for any other failure.
    static func recoveryFinding(_ error: any Error, storePath: String, packagePath: String) -> Finding? {
        let sqlite: SQLiteError
        switch error {
        case let error as SQLiteError: sqlite = error
        case DeckError.sqlite(let error): sqlite = error
        default: return nil
        }
        let journal = storePath + "-journal"
        guard sqlite.code.primary == .readOnly, let st = try? FileSystem.status(journal), st.st_size > 0
        else { return nil }
        return Finding(
            severity: .needsRecovery, code: "store-needs-recovery", object: journal,
            message:
                "a writer stopped in the middle of a transaction and left this rollback journal, which only a "
                + "writer may roll back, so the store cannot be read until then; nothing is known to be lost: "
                + "open the package for writing once (for example 'deck gc \(packagePath)'), then verify again"
        )
    }

    /// The decision on what an archive holds, once its entries have passed the pass over the
    /// archive: made here for both ``verifyArchive(at:options:)`` and import, on the archived
    /// store (a private copy: `storePath`) and the blobs the pass found and hashed.
    ///
    /// Refuses (as corruption) a non-empty write-ahead log or rollback journal beside the store
    /// (the archive is a raw copy of a package in use, not a snapshot), a manifest over 1 MiB or
    /// not valid, and anything the store checks find. A store whose header says WAL mode is
    /// switched to rollback mode first (it is a private copy with no log: nothing changes).
    package static func verifyArchived(
        _ scan: ArchiveScanReport, storePath: String, archivePath path: String, options: Options
    ) throws(DeckError) -> VerificationReport {
        var report = VerificationReport(path: path)
        func add(_ code: String, _ object: String, _ message: String) {
            report.findings.append(
                Finding(severity: .corruption, code: code, object: object, message: message))
        }
        if scan.hasStoreLog {
            let wal = (scan.writeAheadLogBytes ?? 0) > 0
            let name = wal ? PackageItem.writeAheadLogName : PackageItem.rollbackJournalName
            let bytes = (wal ? scan.writeAheadLogBytes : scan.rollbackJournalBytes) ?? 0
            add(
                "archive-store-log", path + ":" + name,
                "the archive holds the store's \(wal ? "write-ahead log" : "rollback journal") (\(bytes) bytes), "
                    + "so it was made from a package that was open or had crashed and its store is not a "
                    + "snapshot; share the original with 'deck export', or unpack this archive with "
                    + "'deck unpack', which applies the log")
            return report
        }
        guard scan.manifest.count <= Manifest.maximumSize else {
            add("manifest-invalid", path, "\(PackageLayout.manifest) is larger than 1 MiB")
            return report
        }
        let manifest: Manifest
        do {
            manifest = try Manifest.decode(scan.manifest, packagePath: path)
        } catch .tooNew(let p, let v, let s) {
            throw DeckError.tooNew(path: p, version: v, supported: s)
        } catch {
            add("manifest-invalid", path, "\(error)")
            return report
        }
        let object = path + ":" + PackageLayout.store
        do {
            // The private copy is ours: failing to read or rewrite it is an I/O error, not a
            // finding about the archive.
            try settleJournalMode(storePath)
        } catch let error as DeckError {
            throw error
        } catch {
            add("store-unreadable", object, "\(error)")
            return report
        }
        do {
            let database = try Database(path: storePath, mode: .readOnly)
            defer { database.close() }
            report.manifestFormatVersion = manifest.formatVersion
            let (schema, formatVersion) = try PackageDirectory.checkStore(
                database, packagePath: path, manifest: manifest, verifying: true)
            report.formatVersion = formatVersion
            let archived = Dictionary(
                scan.blobs.map { ($0.digest, $0.size) }, uniquingKeysWith: { a, _ in a })
            try checkStore(
                database, schema: schema, formatVersion: formatVersion, manifest: manifest, path: path,
                options: options, blobFiles: .archived(archived),
                reader: { try Database(path: storePath, mode: .readOnly) }, report: &report)
        } catch DeckError.notAPackage(_, let reason) {
            add("store-identity", object, reason)
        } catch DeckError.corrupt(_, let reason) {
            add("store-metadata", object, reason)
        } catch {
            add("store-unreadable", object, "\(error)")
        }
        report.findings.sort { ($0.severity, $0.code, $0.object) < ($1.severity, $1.code, $1.object) }
        return report
    }

    /// Rewrites a private store copy whose header says WAL mode (bytes 18 and 19 are 2) into
    /// rollback mode, as a closing writer would, so that reading it creates no `-wal`/`-shm`.
    static func settleJournalMode(_ storePath: String) throws {
        let fd = try FileSystem.open(storePath, O_RDONLY | O_NOFOLLOW)
        defer { FileSystem.close(fd) }
        var versions: [UInt8] = [0, 0]
        let count = versions.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 2, 18) }
        guard count == 2, versions != [1, 1] else { return }
        let database = try Database(path: storePath, mode: .readWrite)
        defer { database.close() }
        _ = try database.pragma("journal_mode=DELETE")
    }

    /// Where the blob files to check are.
    enum BlobFiles {
        /// In the package directory: listed, sized and hashed here.
        case directory
        /// In an archive, already hashed while it was scanned: digest → size.
        case archived([Digest: Int64])
    }

    /// Copies of the package's files that a file-sync service made beside them (spec 2.4):
    /// another device's version, which readers ignore and nothing may remove unmerged.
    static func checkSyncConflicts(path: String, report: inout VerificationReport) {
        for copy in SyncConflictCopy.find(inPackage: path) {
            let message =
                copy.isLock
                ? "\(copy.service)'s conflict copy of lock: it holds nothing of the document (another "
                    + "device's writer wrote lock too); garbage collection removes it"
                : "\(copy.service)'s conflict copy of \(copy.original): another device's version, "
                    + "whose edits are not in this package (readers ignore it); keep it until they are merged"
            report.add(.untidy, "sync-conflict", path + "/" + copy.name, message)
        }
    }

    /// Temporaries, and a `-wal` left by a writer that is gone.
    static func checkLeftovers(path: String, report: inout VerificationReport) {
        let tmp = path + "/" + PackageLayout.tmpDirectory
        let writer = WriterLock.holder(packagePath: path)
        if writer == nil, let names = try? FileSystem.list(tmp) {
            for name in names.sorted() {
                report.findings.append(
                    Finding(
                        severity: .untidy, code: "temporary", object: tmp + "/" + name,
                        message: "left by an interrupted writer; opening for writing or 'deck gc' removes it")
                )
            }
        }
        let wal = path + "/" + PackageLayout.store + "-wal"
        if writer == nil, let st = try? FileSystem.status(wal), st.st_size > 0 {
            report.findings.append(
                Finding(
                    severity: .untidy, code: "wal-present", object: wal,
                    message:
                        "a write-ahead log remains without a writer; the next writer folds it into the store")
            )
        }
    }
}
