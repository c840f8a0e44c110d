import DeckSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Bounds on what reading an archive may cost; exceeding one is an
/// ``ArchiveError/limitExceeded(entry:limit:)`` (or, for free space, ``DeckError/io(path:operation:errno:)``
/// with `ENOSPC`).
///
/// Zip bombs are stopped by sizes, not by ratios: every entry's size is declared in its header
/// (a zip's central directory, a tar header), the bytes read must match it, and the declared
/// sizes are checked against ``maxEntryBytes``, ``maxTotalBytes`` and the free space before
/// anything is written. Overlapping zip entries are refused outright (see ``ArchiveEntryRefusal/zipStructure(_:)``)
/// and archives are never unpacked recursively, so any archive Deck writes, however well its
/// values compress, is accepted.
public struct UnpackLimits: Sendable, Equatable {
    /// Most entries in the archive, counting directories and ignored entries.
    public var maxEntries: Int
    /// Most uncompressed bytes in all file entries together.
    public var maxTotalBytes: Int64
    /// Most uncompressed bytes in any one entry.
    public var maxEntryBytes: Int64
    /// Most bytes in `manifest.json` (it is held in memory); the format allows at most 1 MiB.
    public var maxManifestBytes: Int64
    /// Highest ratio of an entry's bytes to the archive bytes read for it, for an entry whose
    /// header declares no size (archives written by Deck and by the usual tools have none).
    public var maxCompressionRatio: Double
    /// The ratio is only checked once an entry has produced this many bytes.
    public var compressionRatioGrace: Int64
    /// Unpacking refuses to leave less than this many bytes free on the file system it writes
    /// to: it checks the declared size of every entry against the space available before
    /// writing it.
    public var minimumFreeBytes: Int64

    /// Limits with the given values; every one defaults to its value in ``default``.
    public init(
        maxEntries: Int = 1_000_000,
        maxTotalBytes: Int64 = 64 << 30,
        maxEntryBytes: Int64 = 64 << 30,
        maxManifestBytes: Int64 = 1 << 20,
        maxCompressionRatio: Double = 200,
        compressionRatioGrace: Int64 = 16 << 20,
        minimumFreeBytes: Int64 = 64 << 20
    ) {
        self.maxEntries = maxEntries
        self.maxTotalBytes = maxTotalBytes
        self.maxEntryBytes = maxEntryBytes
        self.maxManifestBytes = maxManifestBytes
        self.maxCompressionRatio = maxCompressionRatio
        self.compressionRatioGrace = compressionRatioGrace
        self.minimumFreeBytes = minimumFreeBytes
    }

    /// 1 000 000 entries, 64 GiB in total and per entry, 1 MiB of manifest, 64 MiB left free;
    /// ratio 200 after 16 MiB for an entry without a declared size.
    public static let `default` = UnpackLimits()
}

/// A blob found in an archive; its content has been verified against the digest.
package struct ArchivedBlob: Sendable, Hashable {
    /// The blob's name and content hash.
    public let digest: Digest
    /// Its size in bytes.
    public let size: Int64

    package init(digest: Digest, size: Int64) {
        self.digest = digest
        self.size = size
    }
}

/// What reading a package archive found.
package struct ArchiveScanReport: Sendable, Equatable {
    /// The bytes of `manifest.json`.
    public var manifest: Data
    /// Every blob, in archive order.
    public var blobs: [ArchivedBlob]
    /// The size of `store.sqlite`.
    public var storeBytes: Int64
    /// Entries read, including directories and ignored platform junk.
    public var entryCount: Int
    /// Uncompressed bytes of all file entries that were read.
    public var totalBytes: Int64
    /// Whether the archive had a `mimetype` entry (it is optional when reading).
    public var hasMimeType: Bool
    /// The top-level folder that was stripped (`Name.deck`), if the archive had one.
    public var topLevelFolder: String?
    /// The size of a `store.sqlite-wal` entry, if the archive has one (an archive of a package
    /// that was open, or had crashed, when it was made). An empty one is not extracted.
    public var writeAheadLogBytes: Int64?
    /// The size of a `store.sqlite-journal` entry, if the archive has one. An empty one is not
    /// extracted.
    public var rollbackJournalBytes: Int64?

    /// Whether the archived store comes with a non-empty write-ahead log or rollback journal,
    /// which makes it a raw copy of a store in use rather than a snapshot.
    public var hasStoreLog: Bool { (writeAheadLogBytes ?? 0) > 0 || (rollbackJournalBytes ?? 0) > 0 }
}

extension PackageArchive {
    /// Unpacks a package archive into a new directory at `destination`, refusing anything unsafe.
    ///
    /// The package is built in a hidden staging directory next to `destination`
    /// (`.NAME.unpack-<16 hex>`, see ``StagingFiles``); every entry is checked (see
    /// ``ArchiveEntryRefusal``), every blob hashed while it is written, files and directories are
    /// flushed, `validate` is called with the staging directory, and only then is it renamed to
    /// `destination`, which must not exist. On any error, including one thrown by `validate`,
    /// the staging directory is removed and nothing is left.
    ///
    /// Files are created with `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0644, directories 0755 (less the
    /// umask). `blobs/` always exists in the result. A non-empty `store.sqlite-wal` or
    /// `store.sqlite-journal` is extracted beside the store, as the package had it (importing
    /// refuses such an archive; see ``ArchiveScanReport/hasStoreLog``). If flushing
    /// `destination`'s parent directory fails after the rename, the error is thrown but the
    /// (complete) package stays in place.
    @discardableResult
    package static func unpack(
        archive: URL, to destination: URL, limits: UnpackLimits = .default,
        validate: (URL) throws -> Void = { _ in }, progress: ((Int64, Int64) -> Void)? = nil
    ) throws -> ArchiveScanReport {
        try unpack(
            archive: archive, to: destination, limits: limits, validateScan: { url, _ in try validate(url) },
            progress: progress)
    }

    /// ``unpack(archive:to:limits:validate:progress:)`` with a `validateScan` that also sees what
    /// the pass found.
    @discardableResult
    package static func unpack(
        archive: URL, to destination: URL, limits: UnpackLimits,
        validateScan: (URL, ArchiveScanReport) throws -> Void, progress: ((Int64, Int64) -> Void)?
    ) throws -> ArchiveScanReport {
        let target = destination.standardizedFileURL.path
        if try ArchiveSystem.fileKind(target) != .missing {
            throw DeckError.alreadyExists(path: target)
        }
        let (parent, _) = ArchiveSystem.split(destination)
        let staging: StagingItem
        do {
            staging = try Staging.make(beside: target, kind: .unpack, isDirectory: true)
        } catch {
            throw error
        }
        let temporary = staging.path
        let report: ArchiveScanReport
        do {
            let rootFD = open(temporary, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if rootFD < 0 { throw ArchiveSystem.failure("open", path: temporary, code: errno) }
            defer { close(rootFD) }
            var sink = DirectorySink(root: temporary, rootFD: rootFD, destination: target)
            report = try readPackage(archive: archive, limits: limits, progress: progress, sink: &sink)
            try sink.makeDirectory(PackageItem.blobsName)
            try validateScan(URL(fileURLWithPath: temporary, isDirectory: true), report)
            try sink.syncDirectories()
            try ArchiveSystem.renameNoReplace(temporary, target, isDirectory: true)
            staging.release()
        } catch {
            staging.discard()
            throw renamed(error, staging: temporary, destination: target)
        }
        // The package is complete and in place; only the durability of its name is at stake.
        try ArchiveSystem.syncDirectory(parent)
        return report
    }

    /// Reads a package archive with every check that ``unpack(archive:to:limits:validate:progress:)``
    /// makes, verifying every blob's digest, without writing anything but, if `storeTo` is given,
    /// the `store.sqlite` entry to that new file (so it can be checked with SQLite). `storeTo`
    /// must not exist; it is removed again if the scan fails.
    package static func scan(
        archive: URL, limits: UnpackLimits = .default, storeTo: URL? = nil,
        progress: ((Int64, Int64) -> Void)? = nil
    ) throws -> ArchiveScanReport {
        var sink = ScanSink(storeTo: storeTo)
        do {
            return try readPackage(archive: archive, limits: limits, progress: progress, sink: &sink)
        } catch {
            if let created = sink.createdStore { unlink(created) }
            throw error
        }
    }

    /// The one pass over an archive shared by unpack and scan: validation, limits, hashing.
    /// `progress` receives (archive bytes read, archive size) as the pass goes.
    package static func readPackage(
        archive: URL, limits: UnpackLimits, progress: ((Int64, Int64) -> Void)? = nil,
        sink: inout some PackageSink
    ) throws -> ArchiveScanReport {
        let locale = UTF8LocaleScope()
        return try locale.run {
            let reader = try ArchiveReader(url: archive, maxEntries: limits.maxEntries)
            var pass = PackagePass(limits: limits, reader: reader)
            pass.progress = progress
            // Only for progress reports: not a file-system call whose failure matters.
            let attributes = try? FileManager.default.attributesOfItem(atPath: archive.path)
            pass.archiveSize = (attributes?[.size] as? NSNumber)?.int64Value ?? 0
            defer { pass.buffer.deallocate() }
            while let facts = try reader.nextEntry() {
                try pass.process(facts, sink: &sink)
            }
            return try pass.finish()
        }
    }
}

/// Where the pass puts what it reads.
package protocol PackageSink {
    /// Creates a directory (relative to the package) if it does not exist yet.
    mutating func makeDirectory(_ relativePath: String) throws
    /// Opens the file for `item`, or returns nil to discard its content.
    mutating func openFile(_ item: PackageItem) throws -> OutputFile?
    /// Whether ``openFile(_:)`` writes `item` somewhere (so its bytes count against free space).
    func writes(_ item: PackageItem) -> Bool
    /// A path on the file system written to, for measuring free space; nil when nothing is written.
    var fileSystemPath: String? { get }
    /// The path to name when there is not enough space (what the user asked to write).
    var displayPath: String { get }
}

/// The state of one pass over an archive.
private struct PackagePass {
    package let limits: UnpackLimits
    package let reader: ArchiveReader
    package let buffer = UnsafeMutableRawBufferPointer.allocate(
        byteCount: ArchiveSystem.bufferSize, alignment: 16)
    package var validator = PackageEntryValidator()
    package var report = ArchiveScanReport(
        manifest: Data(), blobs: [], storeBytes: 0, entryCount: 0, totalBytes: 0, hasMimeType: false)
    package var hasManifest = false
    package var hasStore = false
    package var progress: ((Int64, Int64) -> Void)?
    package var archiveSize: Int64 = 0
    /// Bytes the sink has written (or is about to write, for the entry being copied).
    private var written: Int64 = 0
    /// How many bytes may be written in all, once measured: the free space less the reserve.
    private var budget: Int64?
    /// Blobs whose bytes are written and whose hashing may still run on another core; checked
    /// at the latest by finish(), before anything is renamed into place.
    private var pendingBlobs: [(hasher: BackgroundSHA256Hasher, digest: Digest, entry: String)] = []
    /// At most 16 MiB of chunks wait for hashing, across all pending blobs.
    private let hashSlots = DispatchSemaphore(value: 16)

    /// What every SQLite database file starts with.
    package static let sqliteHeader = Array("SQLite format 3\u{0}".utf8)

    package init(limits: UnpackLimits, reader: ArchiveReader) {
        self.limits = limits
        self.reader = reader
    }

    package mutating func process(_ facts: ArchiveEntryFacts, sink: inout some PackageSink) throws {
        report.entryCount += 1
        if report.entryCount > limits.maxEntries {
            throw DeckError.archive(.limitExceeded(entry: facts.name, limit: .entries(limits.maxEntries)))
        }
        guard case .item(let item) = try validator.classify(facts) else {
            try reader.skip()
            return
        }
        switch item {
        case .root:
            try reader.skip()
        case .blobsDirectory, .fanOutDirectory:
            try sink.makeDirectory(item.relativePath)
            try reader.skip()
        case .writeAheadLog, .rollbackJournal:
            if facts.declaredSize == 0 {
                // An empty log holds nothing to apply: not extracted, as if it were absent.
                try reader.skip()
                record(item, size: 0)
                return
            }
            try copy(item, facts: facts, sink: &sink)
        case .mimeType, .manifest, .store, .blob:
            try copy(item, facts: facts, sink: &sink)
        }
    }

    private mutating func record(_ item: PackageItem, size: Int64) {
        if item == .writeAheadLog { report.writeAheadLogBytes = size }
        if item == .rollbackJournal { report.rollbackJournalBytes = size }
    }

    /// Refuses to write `bytes` more if that would leave less than the reserve free.
    private mutating func reserve(_ bytes: Int64, sink: some PackageSink) throws {
        guard bytes > 0, let location = sink.fileSystemPath else { return }
        if budget == nil {
            let free = ArchiveSystem.availableBytes(location) ?? Int64.max
            budget = free > limits.minimumFreeBytes ? free - limits.minimumFreeBytes : 0
        }
        let allowed = budget ?? Int64.max
        if bytes > allowed - min(written, allowed) {
            throw DeckError.io(
                path: sink.displayPath,
                operation: "unpacking (it needs \(written + bytes) bytes; \(allowed) may be used here)",
                errno: ENOSPC)
        }
        written += bytes
    }

    private mutating func copy(_ item: PackageItem, facts: ArchiveEntryFacts, sink: inout some PackageSink)
        throws
    {
        let name = facts.name
        let declared = facts.declaredSize
        if let size = declared {
            try checkSize(size, of: item, entry: name)
            if size > limits.maxTotalBytes - report.totalBytes {
                throw DeckError.archive(.limitExceeded(entry: name, limit: .totalBytes(limits.maxTotalBytes)))
            }
            if sink.writes(item) { try reserve(size, sink: sink) }
        }
        let output = try sink.openFile(item)
        var hasher: BackgroundSHA256Hasher?
        var kept: Data?
        switch item {
        case .blob: hasher = BackgroundSHA256Hasher(slots: hashSlots)
        case .manifest, .mimeType: kept = Data()
        default: break
        }
        var head: [UInt8] = []
        var size: Int64 = 0
        let compressedAtStart = reader.compressedBytesRead
        while true {
            let count = try reader.read(into: buffer)
            if count == 0 { break }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            size += Int64(count)
            report.totalBytes += Int64(count)
            if let declared, size > declared {
                throw DeckError.archive(
                    .entryRefused(
                        entry: name, reason: .sizeMismatch(declared: declared, actual: size)))
            }
            try checkSize(size, of: item, entry: name)
            try checkTotals(entry: name)
            if declared == nil {
                try checkRatio(size, compressed: reader.compressedBytesRead - compressedAtStart, entry: name)
                if sink.writes(item) { try reserve(Int64(count), sink: sink) }
            }
            if item == .store && head.count < Self.sqliteHeader.count {
                head += chunk.prefix(Self.sqliteHeader.count - head.count)
                if !Self.sqliteHeader.starts(with: head) {
                    throw DeckError.archive(.entryRefused(entry: name, reason: .notSQLite))
                }
            }
            hasher?.update(chunk)
            kept?.append(contentsOf: chunk)
            progress?(reader.compressedBytesRead, archiveSize)
            try Cancellation.checkCurrent()
            try output?.write(chunk)
        }
        if let declared, size != declared {
            throw DeckError.archive(
                .entryRefused(
                    entry: name, reason: .sizeMismatch(declared: declared, actual: size)))
        }
        switch item {
        case .mimeType:
            if kept != Data(PackageArchive.mimeType.utf8) {
                throw DeckError.archive(.entryRefused(entry: name, reason: .wrongMimeType))
            }
            report.hasMimeType = true
        case .manifest:
            report.manifest = kept ?? Data()
            hasManifest = true
        case .store:
            if head.count < Self.sqliteHeader.count {
                throw DeckError.archive(.entryRefused(entry: name, reason: .notSQLite))
            }
            report.storeBytes = size
            hasStore = true
        case .blob(let digest):
            if let hasher { pendingBlobs.append((hasher, digest, name)) }
            // Keep a bounded number of blobs in flight; the oldest is almost surely done.
            while pendingBlobs.count > 64 { try checkOldestBlob() }
            report.blobs.append(ArchivedBlob(digest: digest, size: size))
        case .writeAheadLog, .rollbackJournal:
            record(item, size: size)
        case .root, .blobsDirectory, .fanOutDirectory:
            break
        }
        try output?.finish()
    }

    private func checkSize(_ size: Int64, of item: PackageItem, entry: String) throws {
        if size > limits.maxEntryBytes {
            throw DeckError.archive(.limitExceeded(entry: entry, limit: .entryBytes(limits.maxEntryBytes)))
        }
        switch item {
        case .manifest where size > limits.maxManifestBytes:
            throw DeckError.archive(
                .limitExceeded(entry: entry, limit: .manifestBytes(limits.maxManifestBytes)))
        case .mimeType where size > Int64(PackageArchive.mimeType.utf8.count):
            throw DeckError.archive(.entryRefused(entry: entry, reason: .wrongMimeType))
        default:
            break
        }
    }

    private func checkTotals(entry: String) throws {
        if report.totalBytes > limits.maxTotalBytes {
            throw DeckError.archive(.limitExceeded(entry: entry, limit: .totalBytes(limits.maxTotalBytes)))
        }
    }

    /// For an entry without a declared size only: its bytes against the archive bytes read for it.
    private func checkRatio(_ size: Int64, compressed: Int64, entry: String) throws {
        guard size > limits.compressionRatioGrace else { return }
        if Double(size) / Double(max(1, compressed)) > limits.maxCompressionRatio {
            throw DeckError.archive(
                .limitExceeded(
                    entry: entry, limit: .compressionRatio(limits.maxCompressionRatio)))
        }
    }

    /// Waits for the oldest pending blob's digest and compares it with its name.
    private mutating func checkOldestBlob() throws {
        let (hasher, digest, entry) = pendingBlobs.removeFirst()
        let actual = hasher.finalize()
        if actual != digest {
            throw DeckError.archive(.entryRefused(entry: entry, reason: .digestMismatch(actual: actual)))
        }
    }

    package mutating func finish() throws -> ArchiveScanReport {
        while !pendingBlobs.isEmpty { try checkOldestBlob() }
        if !hasManifest { throw DeckError.archive(.missingEntry(PackageItem.manifestName)) }
        if !hasStore { throw DeckError.archive(.missingEntry(PackageItem.storeName)) }
        report.topLevelFolder = validator.topLevelFolder
        return report
    }
}

/// Unpack: writes the package into a directory this process has just created.
private struct DirectorySink: PackageSink {
    package let root: String
    package let rootFD: Int32
    package let displayPath: String
    private var created: Set<String> = []
    private var directories: [String] = []

    package init(root: String, rootFD: Int32, destination: String) {
        self.root = root
        self.rootFD = rootFD
        self.displayPath = destination
    }

    package var fileSystemPath: String? { root }

    package func writes(_ item: PackageItem) -> Bool { item != .mimeType }

    package mutating func makeDirectory(_ relativePath: String) throws {
        if created.contains(relativePath) { return }
        if let slash = relativePath.lastIndex(of: "/") {
            try makeDirectory(String(relativePath[..<slash]))
        }
        if mkdirat(rootFD, relativePath, 0o755) != 0 {
            throw ArchiveSystem.failure("mkdir", path: "\(root)/\(relativePath)", code: errno)
        }
        created.insert(relativePath)
        directories.append(relativePath)
    }

    package mutating func openFile(_ item: PackageItem) throws -> OutputFile? {
        if case .mimeType = item { return nil }
        let relative = item.relativePath
        if let slash = relative.lastIndex(of: "/") {
            try makeDirectory(String(relative[..<slash]))
        }
        let fd = try ArchiveSystem.createExclusive(relative, relativeTo: rootFD)
        // Made durable all at once by syncDirectories(), before the rename.
        return OutputFile(fd: fd, path: "\(root)/\(relative)", syncOnFinish: false)
    }

    /// Makes every file and directory made durable: one `syncfs` of the file system, which is
    /// what thousands of `fsync`s would achieve, at the cost of one.
    package func syncDirectories() throws {
        try ArchiveSystem.syncFileSystem(root)
    }
}

/// Scan: discards everything but the store, which goes to `storeTo` if given.
private struct ScanSink: PackageSink {
    package let storeTo: URL?
    private(set) var createdStore: String?

    package init(storeTo: URL?) {
        self.storeTo = storeTo
    }

    package var fileSystemPath: String? { storeTo.map { $0.deletingLastPathComponent().path } }
    package var displayPath: String { storeTo?.path ?? "" }

    package func writes(_ item: PackageItem) -> Bool { item == .store && storeTo != nil }

    package mutating func makeDirectory(_ relativePath: String) throws {}

    package mutating func openFile(_ item: PackageItem) throws -> OutputFile? {
        guard case .store = item, let storeTo else { return nil }
        let path = storeTo.path
        let fd = try ArchiveSystem.createExclusive(path)
        createdStore = path
        return OutputFile(fd: fd, path: path, syncOnFinish: false)
    }
}
