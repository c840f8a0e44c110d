import DeckSupport
import Foundation

/// An entry name split into checked components.
package struct ArchivePath: Equatable {
    /// The components, without a leading `./` and without the trailing `/` of a directory.
    package let components: [String]
    /// Whether the name ended in `/`.
    package let hasTrailingSlash: Bool

    package var joined: String { components.joined(separator: "/") }

    /// Checks the syntax of an entry name: not empty, not absolute, no backslash, no control
    /// character, no empty, `.` or `..` component. A single leading `./` is accepted when
    /// `allowLeadingDot` is set (tar archives made with `tar -C dir .` look like that).
    package static func parse(_ name: String, allowLeadingDot: Bool) throws -> ArchivePath {
        func refuse(_ reason: ArchiveEntryRefusal) -> DeckError {
            .archive(.entryRefused(entry: name, reason: reason))
        }
        if name.isEmpty { throw refuse(.emptyName) }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw refuse(.controlCharacter)
        }
        if name.contains("\\") { throw refuse(.backslash) }
        if name.hasPrefix("/") { throw refuse(.absolutePath) }
        var parts = name.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        var trailingSlash = false
        if parts.count > 1, parts.last == "" {
            parts.removeLast()
            trailingSlash = true
        }
        if allowLeadingDot, parts.first == "." {
            parts.removeFirst()
        }
        // `..` anywhere is the most serious problem, so it is reported before the others.
        if parts.contains("..") { throw refuse(.escapesPackage) }
        if parts.contains("") { throw refuse(.emptyComponent) }
        if parts.contains(".") { throw refuse(.dotComponent) }
        return ArchivePath(components: parts, hasTrailingSlash: trailingSlash)
    }
}

/// A place in the package layout.
package enum PackageItem: Equatable {
    /// The package directory itself (a top-level folder entry, or `./`).
    case root
    /// The `mimetype` signature entry (checked, never written).
    case mimeType
    case manifest
    case store
    case blobsDirectory
    /// `blobs/xx/`.
    case fanOutDirectory(String)
    /// `blobs/xx/<digest>`.
    case blob(Digest)
    /// `store.sqlite-wal`: a write-ahead log copied with the store (from a package that was open
    /// or had crashed when it was archived).
    case writeAheadLog
    /// `store.sqlite-journal`: a rollback journal copied with the store.
    case rollbackJournal

    package static let manifestName = "manifest.json"
    package static let storeName = "store.sqlite"
    package static let blobsName = "blobs"
    package static let mimeTypeName = "mimetype"
    package static let writeAheadLogName = "store.sqlite-wal"
    package static let rollbackJournalName = "store.sqlite-journal"
    /// Names at the package root that are skipped when reading an archive: the writer lock, the
    /// writers' temporary directory (and everything in it) and SQLite's shared-memory index.
    package static let skippedRootNames: Set<String> = ["lock", "tmp", "store.sqlite-shm"]

    package var isDirectory: Bool {
        switch self {
        case .root, .blobsDirectory, .fanOutDirectory: return true
        case .mimeType, .manifest, .store, .blob, .writeAheadLog, .rollbackJournal: return false
        }
    }

    /// The store's write-ahead log or rollback journal.
    package var isStoreLog: Bool { self == .writeAheadLog || self == .rollbackJournal }

    /// The path inside the package directory.
    package var relativePath: String {
        switch self {
        case .root: return ""
        case .mimeType: return Self.mimeTypeName
        case .manifest: return Self.manifestName
        case .store: return Self.storeName
        case .blobsDirectory: return Self.blobsName
        case .fanOutDirectory(let prefix): return "\(Self.blobsName)/\(prefix)"
        case .blob(let digest):
            let hex = digest.hexDigest
            return "\(Self.blobsName)/\(hex.prefix(2))/\(hex)"
        case .writeAheadLog: return Self.writeAheadLogName
        case .rollbackJournal: return Self.rollbackJournalName
        }
    }

    /// Whether `name` is a fan-out directory name: two lowercase hexadecimal digits.
    package static func isFanOutName(_ name: String) -> Bool {
        name.utf8.count == 2 && name.utf8.allSatisfy { isLowercaseHexDigit($0) }
    }

    private static func isLowercaseHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}

/// What an archive entry looks like, as far as validation is concerned.
package struct ArchiveEntryFacts {
    package enum Kind: Equatable {
        case regular
        case directory
        case symbolicLink
        case device
        case fifo
        case socket
        case unknown
    }

    /// The entry name as stored in the archive (UTF-8).
    package let name: String
    package let kind: Kind
    /// Whether the entry carries a hard-link target.
    package let isHardLink: Bool
    /// Whether the entry carries a symbolic-link target.
    package let isSymbolicLink: Bool
    /// The declared uncompressed size, if the header has one.
    package let declaredSize: Int64?
}

/// What to do with an archive entry.
package enum EntryDisposition: Equatable {
    /// Platform junk (`__MACOSX/`, `._*`, `.DS_Store`), `lock`, `tmp/…` or
    /// `store.sqlite-shm`: skipped silently.
    case ignore
    case item(PackageItem)
}

/// The single validation path for archive entries, shared by unpack and scan.
///
/// Checks run in this order: name syntax, platform junk, entry type, duplicates (exact, then
/// NFC-lowercased), top-level folder, package layout (where `lock`, `tmp/…` and
/// `store.sqlite-shm` are skipped).
package struct PackageEntryValidator {
    private enum Prefix {
        case undecided
        case none
        case folder(String)
    }

    private var prefix = Prefix.undecided
    /// NFC-lowercased full name → the first name seen with that key.
    private var seen: [String: String] = [:]

    /// The top-level folder that is being stripped, once decided.
    package var topLevelFolder: String? {
        if case .folder(let name) = prefix { return name }
        return nil
    }

    /// First components that mean "the contents are at the archive root".
    private static let rootNames: Set<String> = Set([
        PackageItem.mimeTypeName, PackageItem.manifestName, PackageItem.storeName, PackageItem.blobsName,
        PackageItem.writeAheadLogName, PackageItem.rollbackJournalName,
    ]).union(PackageItem.skippedRootNames)

    package mutating func classify(_ facts: ArchiveEntryFacts) throws -> EntryDisposition {
        let name = facts.name
        func refuse(_ reason: ArchiveEntryRefusal) -> DeckError {
            .archive(.entryRefused(entry: name, reason: reason))
        }
        let path = try ArchivePath.parse(name, allowLeadingDot: true)
        if Self.isPlatformJunk(path) { return .ignore }

        if facts.isHardLink { throw refuse(.hardLink) }
        if facts.isSymbolicLink { throw refuse(.symbolicLink) }
        switch facts.kind {
        case .regular, .directory: break
        case .symbolicLink: throw refuse(.symbolicLink)
        case .device: throw refuse(.device)
        case .fifo: throw refuse(.fifo)
        case .socket: throw refuse(.socket)
        case .unknown: throw refuse(.unsupportedType)
        }
        let isDirectory = facts.kind == .directory
        if path.hasTrailingSlash && !isDirectory { throw refuse(.emptyComponent) }

        try recordName(path.joined, entry: name)

        var components = path.components
        switch prefix {
        case .undecided:
            if let first = components.first, !Self.rootNames.contains(first) {
                // A lone file at the root cannot be a top-level folder.
                if components.count == 1 && !isDirectory { throw refuse(.unexpected) }
                prefix = .folder(first)
                components.removeFirst()
            } else {
                prefix = .none
            }
        case .none:
            break
        case .folder(let folder):
            guard let first = components.first, first.utf8.elementsEqual(folder.utf8) else {
                throw refuse(.outsideTopLevelFolder(folder))
            }
            components.removeFirst()
        }
        if let first = components.first, PackageItem.skippedRootNames.contains(first) {
            // `lock` and `tmp/…` exist in every package that was ever written to; whatever is
            // in them is never extracted (it has passed every check above all the same). Only
            // in the shapes a package has them: `tmp` is a directory, and everything under it is
            // ignored; `lock` and `store.sqlite-shm` are files, and a directory of their name (or
            // anything under one) is outside the layout: no writer makes one, and one extracted
            // or ignored would hide what an archive holds where a package has a lock file.
            if first == "tmp" {
                if components.count == 1 && !isDirectory {
                    throw DeckError.archive(.entryRefused(entry: name, reason: .notADirectory))
                }
            } else if components.count > 1 || isDirectory {
                throw DeckError.archive(
                    .entryRefused(
                        entry: name, reason: components.count > 1 ? .unexpected : .notARegularFile))
            }
            return .ignore
        }
        return .item(try Self.layoutItem(components, isDirectory: isDirectory, entry: name))
    }

    private mutating func recordName(_ joined: String, entry: String) throws {
        let key = joined.precomposedStringWithCanonicalMapping.lowercased()
        guard let previous = seen[key] else {
            seen[key] = joined
            return
        }
        // Swift compares strings by canonical equivalence; an exact duplicate means the same bytes.
        if previous.utf8.elementsEqual(joined.utf8) {
            throw DeckError.archive(.entryRefused(entry: entry, reason: .duplicate))
        }
        if previous.lowercased().utf8.elementsEqual(joined.lowercased().utf8) {
            throw DeckError.archive(.entryRefused(entry: entry, reason: .caseCollision(with: previous)))
        }
        throw DeckError.archive(.entryRefused(entry: entry, reason: .normalizationCollision(with: previous)))
    }

    private static func isPlatformJunk(_ path: ArchivePath) -> Bool {
        guard let last = path.components.last else { return false }
        return path.components.contains("__MACOSX") || last.hasPrefix("._") || last == ".DS_Store"
    }

    /// Maps package-relative components to a layout item, or refuses them.
    private static func layoutItem(_ components: [String], isDirectory: Bool, entry: String) throws
        -> PackageItem
    {
        func refuse(_ reason: ArchiveEntryRefusal) -> DeckError {
            .archive(.entryRefused(entry: entry, reason: reason))
        }
        func file(_ item: PackageItem) throws -> PackageItem {
            if isDirectory { throw refuse(.notARegularFile) }
            return item
        }
        func directory(_ item: PackageItem) throws -> PackageItem {
            if !isDirectory { throw refuse(.notADirectory) }
            return item
        }
        switch components.count {
        case 0:
            return try directory(.root)
        case 1:
            switch components[0] {
            case PackageItem.mimeTypeName: return try file(.mimeType)
            case PackageItem.manifestName: return try file(.manifest)
            case PackageItem.storeName: return try file(.store)
            case PackageItem.blobsName: return try directory(.blobsDirectory)
            case PackageItem.writeAheadLogName: return try file(.writeAheadLog)
            case PackageItem.rollbackJournalName: return try file(.rollbackJournal)
            default: throw refuse(.unexpected)
            }
        case 2 where components[0] == PackageItem.blobsName && PackageItem.isFanOutName(components[1]):
            return try directory(.fanOutDirectory(components[1]))
        case 3 where components[0] == PackageItem.blobsName && PackageItem.isFanOutName(components[1]):
            guard let digest = Digest(hex: components[2]) else { throw refuse(.unexpected) }
            let expected = String(components[2].prefix(2))
            if components[1] != expected {
                throw refuse(.wrongFanOutDirectory(expected: "\(PackageItem.blobsName)/\(expected)/"))
            }
            return try file(.blob(digest))
        default:
            throw refuse(.unexpected)
        }
    }
}
