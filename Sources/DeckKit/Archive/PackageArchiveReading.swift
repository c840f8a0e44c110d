import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Bounds on what reading an archive may cost; exceeding one is an
/// ``ArchiveError/limitExceeded(entry:limit:)``.
public struct UnpackLimits: Sendable, Equatable {
    /// Most entries in the archive, counting directories and ignored entries.
    public var maxEntries: Int
    /// Most uncompressed bytes in all file entries together.
    public var maxTotalBytes: Int64
    /// Most uncompressed bytes in any one entry.
    public var maxEntryBytes: Int64
    /// Most bytes in `manifest.json` (it is held in memory).
    public var maxManifestBytes: Int64
    /// Highest ratio of uncompressed bytes so far to archive bytes read so far (zip bombs).
    public var maxCompressionRatio: Double
    /// The ratio is only checked once this many uncompressed bytes have been read.
    public var compressionRatioGrace: Int64

    /// Limits with the given values; every one defaults to its value in ``default``.
    public init(
        maxEntries: Int = 1_000_000,
        maxTotalBytes: Int64 = 64 << 30,
        maxEntryBytes: Int64 = 64 << 30,
        maxManifestBytes: Int64 = 16 << 20,
        maxCompressionRatio: Double = 200,
        compressionRatioGrace: Int64 = 16 << 20
    ) {
        self.maxEntries = maxEntries
        self.maxTotalBytes = maxTotalBytes
        self.maxEntryBytes = maxEntryBytes
        self.maxManifestBytes = maxManifestBytes
        self.maxCompressionRatio = maxCompressionRatio
        self.compressionRatioGrace = compressionRatioGrace
    }

    /// 1 000 000 entries, 64 GiB in total and per entry, 16 MiB of manifest, ratio 200 after 16 MiB.
    public static let `default` = UnpackLimits()
}

/// A blob found in an archive; its content has been verified against the digest.
public struct ArchivedBlob: Sendable, Hashable {
    /// The blob's name and content hash.
    public let digest: Digest
    /// Its size in bytes.
    public let size: Int64
}

/// What reading a package archive found.
public struct ArchiveScanReport: Sendable, Equatable {
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
}

extension PackageArchive {
    /// Unpacks a package archive into a new directory at `destination`, refusing anything unsafe.
    ///
    /// The package is built in a hidden temporary directory next to `destination`; every entry
    /// is checked (see ``ArchiveEntryRefusal``), every blob hashed while it is written, files and
    /// directories are flushed, `validate` is called with the temporary directory, and only then
    /// is it renamed to `destination`, which must not exist. On any error, including one thrown
    /// by `validate`, the temporary directory is removed and nothing is left.
    ///
    /// Files are created with `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0644, directories 0755 (less the
    /// umask). `blobs/` always exists in the result. If flushing `destination`'s parent directory
    /// fails after the rename, the error is thrown but the (complete) package stays in place.
    @discardableResult
    public static func unpack(
        archive: URL, to destination: URL, limits: UnpackLimits = .default,
        validate: (URL) throws -> Void = { _ in }, progress: ((Int64, Int64) -> Void)? = nil
    ) throws -> ArchiveScanReport {
        let target = destination.standardizedFileURL.path
        if try ArchiveSystem.fileKind(target) != .missing {
            throw ArchiveError.destinationExists(path: target)
        }
        let (parent, name) = ArchiveSystem.split(destination)

        var temporary: String?
        for _ in 0..<16 where temporary == nil {
            let path = "\(parent)/.\(name).unpack-\(ArchiveSystem.randomSuffix())"
            if try ArchiveSystem.makeDirectory(path) { temporary = path }
        }
        guard let temporary else {
            throw ArchiveError.fileSystem(path: parent, operation: "create temporary directory", code: EEXIST)
        }
        let report: ArchiveScanReport
        do {
            let rootFD = open(temporary, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if rootFD < 0 { throw ArchiveError.fileSystem(path: temporary, operation: "open", code: errno) }
            defer { close(rootFD) }
            var sink = DirectorySink(root: temporary, rootFD: rootFD)
            report = try readPackage(archive: archive, limits: limits, progress: progress, sink: &sink)
            try sink.makeDirectory(PackageItem.blobsName)
            try validate(URL(fileURLWithPath: temporary, isDirectory: true))
            try sink.syncDirectories()
            try ArchiveSystem.renameNoReplace(temporary, target, isDirectory: true)
        } catch {
            ArchiveSystem.removeTree(temporary)
            throw error
        }
        // The package is complete and in place; only the durability of its name is at stake.
        try ArchiveSystem.syncDirectory(parent)
        return report
    }

    /// Reads a package archive with every check that ``unpack(archive:to:limits:validate:)``
    /// makes, verifying every blob's digest, without writing anything but, if `storeTo` is given,
    /// the `store.sqlite` entry to that new file (so it can be checked with SQLite). `storeTo`
    /// must not exist; it is removed again if the scan fails.
    public static func scan(
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
    static func readPackage(
        archive: URL, limits: UnpackLimits, progress: ((Int64, Int64) -> Void)? = nil,
        sink: inout some PackageSink
    ) throws -> ArchiveScanReport {
        let locale = UTF8LocaleScope()
        return try locale.run {
            let reader = try ArchiveReader(url: archive)
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
protocol PackageSink {
    /// Creates a directory (relative to the package) if it does not exist yet.
    mutating func makeDirectory(_ relativePath: String) throws
    /// Opens the file for `item`, or returns nil to discard its content.
    mutating func openFile(_ item: PackageItem) throws -> OutputFile?
}

/// The state of one pass over an archive.
private struct PackagePass {
    let limits: UnpackLimits
    let reader: ArchiveReader
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: ArchiveSystem.bufferSize, alignment: 16)
    var validator = PackageEntryValidator()
    var report = ArchiveScanReport(
        manifest: Data(), blobs: [], storeBytes: 0, entryCount: 0, totalBytes: 0, hasMimeType: false)
    var hasManifest = false
    var hasStore = false
    var progress: ((Int64, Int64) -> Void)?
    var archiveSize: Int64 = 0
    /// Blobs whose bytes are written and whose hashing may still run on another core; checked
    /// at the latest by finish(), before anything is renamed into place.
    private var pendingBlobs: [(hasher: BackgroundSHA256Hasher, digest: Digest, entry: String)] = []
    /// At most 16 MiB of chunks wait for hashing, across all pending blobs.
    private let hashSlots = DispatchSemaphore(value: 16)

    init(limits: UnpackLimits, reader: ArchiveReader) {
        self.limits = limits
        self.reader = reader
    }

    mutating func process(_ facts: ArchiveEntryFacts, sink: inout some PackageSink) throws {
        report.entryCount += 1
        if report.entryCount > limits.maxEntries {
            throw ArchiveError.limitExceeded(entry: facts.name, limit: .entries(limits.maxEntries))
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
        case .mimeType, .manifest, .store, .blob:
            try copy(item, facts: facts, sink: &sink)
        }
    }

    private mutating func copy(_ item: PackageItem, facts: ArchiveEntryFacts, sink: inout some PackageSink)
        throws
    {
        let name = facts.name
        if let size = facts.declaredSize {
            try checkSize(size, of: item, entry: name)
            if size > limits.maxTotalBytes - report.totalBytes {
                throw ArchiveError.limitExceeded(entry: name, limit: .totalBytes(limits.maxTotalBytes))
            }
        }
        let output = try sink.openFile(item)
        var hasher: BackgroundSHA256Hasher?
        var kept: Data?
        switch item {
        case .blob: hasher = BackgroundSHA256Hasher(slots: hashSlots)
        case .manifest, .mimeType: kept = Data()
        default: break
        }
        var size: Int64 = 0
        while true {
            let count = try reader.read(into: buffer)
            if count == 0 { break }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            size += Int64(count)
            report.totalBytes += Int64(count)
            try checkSize(size, of: item, entry: name)
            try checkTotals(entry: name)
            hasher?.update(chunk)
            kept?.append(contentsOf: chunk)
            progress?(reader.compressedBytesRead, archiveSize)
            try output?.write(chunk)
        }
        switch item {
        case .mimeType:
            if kept != Data(PackageArchive.mimeType.utf8) {
                throw ArchiveError.entryRefused(entry: name, reason: .wrongMimeType)
            }
            report.hasMimeType = true
        case .manifest:
            report.manifest = kept ?? Data()
            hasManifest = true
        case .store:
            report.storeBytes = size
            hasStore = true
        case .blob(let digest):
            if let hasher { pendingBlobs.append((hasher, digest, name)) }
            // Keep a bounded number of blobs in flight; the oldest is almost surely done.
            while pendingBlobs.count > 64 { try checkOldestBlob() }
            report.blobs.append(ArchivedBlob(digest: digest, size: size))
        case .root, .blobsDirectory, .fanOutDirectory:
            break
        }
        try output?.finish()
    }

    private func checkSize(_ size: Int64, of item: PackageItem, entry: String) throws {
        if size > limits.maxEntryBytes {
            throw ArchiveError.limitExceeded(entry: entry, limit: .entryBytes(limits.maxEntryBytes))
        }
        switch item {
        case .manifest where size > limits.maxManifestBytes:
            throw ArchiveError.limitExceeded(entry: entry, limit: .manifestBytes(limits.maxManifestBytes))
        case .mimeType where size > Int64(PackageArchive.mimeType.utf8.count):
            throw ArchiveError.entryRefused(entry: entry, reason: .wrongMimeType)
        default:
            break
        }
    }

    private func checkTotals(entry: String) throws {
        if report.totalBytes > limits.maxTotalBytes {
            throw ArchiveError.limitExceeded(entry: entry, limit: .totalBytes(limits.maxTotalBytes))
        }
        if report.totalBytes > limits.compressionRatioGrace {
            let ratio = Double(report.totalBytes) / Double(max(1, reader.compressedBytesRead))
            if ratio > limits.maxCompressionRatio {
                throw ArchiveError.limitExceeded(
                    entry: entry, limit: .compressionRatio(limits.maxCompressionRatio))
            }
        }
    }

    /// Waits for the oldest pending blob's digest and compares it with its name.
    private mutating func checkOldestBlob() throws {
        let (hasher, digest, entry) = pendingBlobs.removeFirst()
        let actual = hasher.finalize()
        if actual != digest {
            throw ArchiveError.entryRefused(entry: entry, reason: .digestMismatch(actual: actual))
        }
    }

    mutating func finish() throws -> ArchiveScanReport {
        while !pendingBlobs.isEmpty { try checkOldestBlob() }
        if !hasManifest { throw ArchiveError.missingEntry(PackageItem.manifestName) }
        if !hasStore { throw ArchiveError.missingEntry(PackageItem.storeName) }
        report.topLevelFolder = validator.topLevelFolder
        return report
    }
}

/// Unpack: writes the package into a directory this process has just created.
private struct DirectorySink: PackageSink {
    let root: String
    let rootFD: Int32
    private var created: Set<String> = []
    private var directories: [String] = []

    init(root: String, rootFD: Int32) {
        self.root = root
        self.rootFD = rootFD
    }

    mutating func makeDirectory(_ relativePath: String) throws {
        if created.contains(relativePath) { return }
        if let slash = relativePath.lastIndex(of: "/") {
            try makeDirectory(String(relativePath[..<slash]))
        }
        if mkdirat(rootFD, relativePath, 0o755) != 0 {
            throw ArchiveError.fileSystem(path: "\(root)/\(relativePath)", operation: "mkdir", code: errno)
        }
        created.insert(relativePath)
        directories.append(relativePath)
    }

    mutating func openFile(_ item: PackageItem) throws -> OutputFile? {
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
    func syncDirectories() throws {
        try ArchiveSystem.syncFileSystem(root)
    }
}

/// Scan: discards everything but the store, which goes to `storeTo` if given.
private struct ScanSink: PackageSink {
    let storeTo: URL?
    private(set) var createdStore: String?

    init(storeTo: URL?) {
        self.storeTo = storeTo
    }

    mutating func makeDirectory(_ relativePath: String) throws {}

    mutating func openFile(_ item: PackageItem) throws -> OutputFile? {
        guard case .store = item, let storeTo else { return nil }
        let path = storeTo.path
        let fd = try ArchiveSystem.createExclusive(path)
        createdStore = path
        return OutputFile(fd: fd, path: path, syncOnFinish: false)
    }
}
