import DeckSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Packs Deck packages into zip/tar archives and unpacks them safely.
///
/// An archive holds, in this order: `mimetype` (exactly ``mimeType``, stored), `manifest.json`,
/// `store.sqlite`, then `blobs/` and its contents sorted bytewise by path, all at the archive
/// root. Unpacking also accepts archives made by other tools: one top-level folder
/// (`Name.deck/…`) is stripped, `__MACOSX/`, `._*` and `.DS_Store` entries are ignored, and the
/// `mimetype` entry is optional.
package enum PackageArchive {
    /// The content of the `mimetype` entry that starts every package archive.
    package static let mimeType = packageArchiveMimeType

    /// Names in a package directory that are never archived (`mimetype` is what unpacking an
    /// archive with `unzip` leaves; every archive gets its own, first).
    package static let skippedNames: Set<String> = [
        "lock", "tmp", "store.sqlite-wal", "store.sqlite-shm", "store.sqlite-journal", "mimetype",
    ]

    /// Archives the package at `directory` into a new file at `archive`.
    ///
    /// The archive is written to a hidden staging file next to `archive`
    /// (`.NAME.pack-<16 hex>`, see ``StagingFiles``), flushed, and renamed into place; on failure
    /// nothing is left behind. Blobs are stored, `manifest.json` and `store.sqlite` compressed
    /// (zip). Every blob is hashed while it is copied and must match its name. `lock`, `tmp/`,
    /// SQLite's `-wal`, `-shm` and `-journal` files and a `mimetype` file are skipped; anything
    /// else outside the layout, and any symbolic link, is refused.
    ///
    /// - Parameters:
    ///   - storeSnapshot: a consistent copy of the database to archive as `store.sqlite`
    ///     instead of the directory's own `store.sqlite`.
    ///   - blobs: archive only these blobs (each must exist), e.g. those a store snapshot
    ///     references; nil archives every blob file in the directory.
    ///   - overwrite: replace an existing regular file at `archive` (atomically); otherwise an
    ///     existing destination is an error. Anything but a regular file (a directory, FIFO,
    ///     device, socket or symbolic link) is never replaced:
    ///     ``DeckError/notARegularFile(path:kind:)``.
    /// - Throws: ``ArchiveError/packageRefused(path:reason:)`` (in ``DeckError/archive(_:)``)
    ///   with ``PackageRefusal/missing``
    ///   for a blob that vanished while it was being archived (a concurrent writer removed it).
    package static func pack(
        directory: URL, to archive: URL, format: ArchiveFormat, storeSnapshot: URL? = nil,
        blobs: Set<Digest>? = nil, overwrite: Bool = false, progress: ((Int64, Int64) -> Void)? = nil
    ) throws {
        let destination = archive.standardizedFileURL.path
        try checkDestination(destination, overwrite: overwrite)
        let plan = try PackPlan(directory: directory, storeSnapshot: storeSnapshot, selecting: blobs)
        let (parent, _) = ArchiveSystem.split(archive)

        let staging: StagingItem
        do {
            staging = try Staging.make(beside: destination, kind: .pack, isDirectory: false)
        } catch {
            throw error
        }
        do {
            let writer = try ArchiveWriter(url: staging.url, format: format, intoExistingFile: true)
            if let progress {
                let total = plan.totalBytes
                writer.progress = { progress($0, total) }
            }
            try write(plan, to: writer)
            try writer.finish()
            if overwrite {
                // Checked again just before: a regular file (or nothing) is all a rename may replace.
                try checkDestination(destination, overwrite: true)
                do {
                    try FileSystem.rename(staging.path, destination)
                } catch {
                    throw error
                }
            } else {
                try ArchiveSystem.renameNoReplace(staging.path, destination, isDirectory: false)
            }
            staging.release()
        } catch {
            staging.discard()
            throw renamed(error, staging: staging.path, destination: destination)
        }
        // The archive is complete and in place; only the durability of its name is at stake.
        try ArchiveSystem.syncDirectory(parent)
    }

    /// Refuses a destination that exists and is not a regular file (whatever `overwrite` says),
    /// and, without `overwrite`, any destination that exists.
    package static func checkDestination(_ destination: String, overwrite: Bool) throws {
        guard let info = try ArchiveSystem.status(destination) else { return }
        if let kind = ArchiveSystem.describeNonRegular(info) {
            throw DeckError.notARegularFile(path: destination, kind: kind)
        }
        if !overwrite { throw DeckError.alreadyExists(path: destination) }
    }

    /// A file-system failure on a staging path, reported against the destination the user named
    /// (the staging name is hidden and gone by the time the error is read).
    package static func renamed(_ error: any Error, staging: String, destination: String) -> any Error {
        func onStaging(_ path: String) -> Bool { path == staging || path.hasPrefix(staging + "/") }
        switch error {
        case DeckError.io(let path, let operation, let code) where onStaging(path):
            return DeckError.io(path: destination, operation: operation, errno: code)
        case DeckError.permissionDenied(let path, let operation) where onStaging(path):
            return DeckError.permissionDenied(path: destination, operation: operation)
        case DeckError.notFound(let path) where onStaging(path):
            return DeckError.notFound(path: destination)
        default:
            return error
        }
    }

    private static func write(_ plan: PackPlan, to writer: ArchiveWriter) throws {
        try writer.addData(name: PackageItem.mimeTypeName, data: Data(mimeType.utf8), compress: false)
        try writer.addFile(name: PackageItem.manifestName, source: plan.manifest, compress: true)
        try writer.addFile(name: PackageItem.storeName, source: plan.store, compress: true)
        try writer.addDirectory(name: PackageItem.blobsName)
        for fanOut in plan.fanOuts {
            try writer.addDirectory(name: "\(PackageItem.blobsName)/\(fanOut.name)")
            for blob in fanOut.blobs {
                let relative = PackageItem.blob(blob.digest).relativePath
                let hasher = BackgroundSHA256Hasher()
                do {
                    try writer.addFile(name: relative, source: blob.url, compress: false, hasher: hasher)
                } catch let error as DeckError where error.isMissing(blob.url.path) {
                    // Removed since the plan was made: by a concurrent writer's save, or by damage.
                    throw DeckError.archive(.packageRefused(path: relative, reason: .missing))
                }
                let actual = hasher.finalize()
                if actual != blob.digest {
                    throw DeckError.archive(
                        .packageRefused(path: relative, reason: .digestMismatch(actual: actual)))
                }
            }
        }
    }
}

/// What ``PackageArchive/pack(directory:to:format:storeSnapshot:overwrite:)`` will archive, after
/// checking the package directory against the layout.
private struct PackPlan {
    package struct Blob {
        package let digest: Digest
        package let url: URL
    }

    package struct FanOut {
        package let name: String
        package let blobs: [Blob]
    }

    package let manifest: URL
    package let store: URL
    package let fanOuts: [FanOut]

    /// The bytes of every file to archive, for progress reports.
    package var totalBytes: Int64 {
        ([manifest, store] + fanOuts.flatMap { $0.blobs.map(\.url) }).reduce(0) { sum, url in
            let attributes = try? FileManager.default.attributesOfItem(atPath: url.path)
            return sum + ((attributes?[.size] as? NSNumber)?.int64Value ?? 0)
        }
    }

    package init(directory: URL, storeSnapshot: URL?, selecting selection: Set<Digest>?) throws {
        let root = directory.standardizedFileURL.path
        func refuse(_ relative: String, _ reason: PackageRefusal) -> DeckError {
            .archive(.packageRefused(path: relative, reason: reason))
        }
        func require(_ relative: String, _ expected: ArchiveSystem.FileKind) throws {
            switch try ArchiveSystem.fileKind("\(root)/\(relative)") {
            case expected: return
            case .missing: throw refuse(relative, .missing)
            case .symbolicLink: throw refuse(relative, .symbolicLink)
            default: throw refuse(relative, expected == .directory ? .notADirectory : .notARegularFile)
            }
        }
        guard try ArchiveSystem.fileKind(root) == .directory else {
            throw DeckError.archive(.packageRefused(path: root, reason: .notADirectory))
        }
        var hasBlobs = false
        for name in try ArchiveSystem.directoryNames(root) {
            switch name {
            case PackageItem.manifestName:
                try require(name, .regular)
            case PackageItem.storeName:
                if storeSnapshot == nil { try require(name, .regular) }
            case PackageItem.blobsName:
                try require(name, .directory)
                hasBlobs = true
            case _
            where PackageArchive.skippedNames.contains(name) || name == ".DS_Store" || name.hasPrefix("._"):
                // Not part of the package; readers ignore these Finder files as well.
                continue
            default:
                throw try ArchiveSystem.fileKind("\(root)/\(name)") == .symbolicLink
                    ? refuse(name, .symbolicLink) : refuse(name, .unexpected)
            }
        }
        try require(PackageItem.manifestName, .regular)
        if storeSnapshot == nil { try require(PackageItem.storeName, .regular) }
        manifest = URL(fileURLWithPath: "\(root)/\(PackageItem.manifestName)")
        store = storeSnapshot ?? URL(fileURLWithPath: "\(root)/\(PackageItem.storeName)")

        var fanOuts: [FanOut] = []
        if hasBlobs {
            for name in try ArchiveSystem.directoryNames("\(root)/\(PackageItem.blobsName)") {
                let relative = "\(PackageItem.blobsName)/\(name)"
                guard PackageItem.isFanOutName(name) else {
                    throw try ArchiveSystem.fileKind("\(root)/\(relative)") == .symbolicLink
                        ? refuse(relative, .symbolicLink) : refuse(relative, .unexpected)
                }
                try require(relative, .directory)
                var blobs: [Blob] = []
                for blobName in try ArchiveSystem.directoryNames("\(root)/\(relative)") {
                    let blobPath = "\(relative)/\(blobName)"
                    try require(blobPath, .regular)
                    guard let digest = Digest(hex: blobName), blobName.hasPrefix(name) else {
                        throw refuse(blobPath, .unexpected)
                    }
                    if let selection, !selection.contains(digest) { continue }
                    blobs.append(Blob(digest: digest, url: URL(fileURLWithPath: "\(root)/\(blobPath)")))
                }
                if !blobs.isEmpty || selection == nil { fanOuts.append(FanOut(name: name, blobs: blobs)) }
            }
        }
        if let selection {
            let found = Set(fanOuts.flatMap { $0.blobs.map(\.digest) })
            if let missing = selection.subtracting(found).min() {
                throw refuse(PackageItem.blob(missing).relativePath, .missing)
            }
        }
        self.fanOuts = fanOuts
    }
}
