import Foundation

/// Why an archive cannot be written, read, packed or unpacked: what the archive layer refuses,
/// carried in ``DeckError/archive(_:)``. (A failure of the file system, an existing destination
/// or a lack of space is a ``DeckError`` case of its own.)
///
/// Every case names the entry (or file) concerned; ``description`` renders it as `<entry>: <why>`,
/// for example `../evil: path escapes the package`.
public enum ArchiveError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An entry of an archive being read was refused. `entry` is the name as stored in the archive.
    case entryRefused(entry: String, reason: ArchiveEntryRefusal)
    /// Reading `entry` went past one of the ``UnpackLimits``.
    case limitExceeded(entry: String, limit: ArchiveLimit)
    /// A required entry (`manifest.json` or `store.sqlite`) is absent from the archive.
    case missingEntry(String)
    /// libarchive could not read the archive (corrupt, truncated or unrecognised data).
    /// `entry` is the entry being read, or the archive's file name when no entry was reached.
    case unreadable(entry: String, message: String)
    /// libarchive failed while writing `entry` (or the archive itself).
    case writeFailed(entry: String, message: String)
    /// A package directory being archived contains something that must not be archived.
    /// `path` is relative to the package directory.
    case packageRefused(path: String, reason: PackageRefusal)
    /// The archive format cannot be used with this libarchive build.
    case unsupportedFormat(format: String, reason: String)
    /// The file is in no archive format libarchive recognises.
    case unrecognizedFormat(path: String)
    /// The path is not an archive at all (`reason` says what it is instead).
    case notAnArchive(path: String, reason: String)

    /// `<entry>: <why>`, e.g. `../evil: path escapes the package`.
    public var description: String {
        switch self {
        case .entryRefused(let entry, let reason):
            return "\(entry): \(reason)"
        case .limitExceeded(let entry, let limit):
            return "\(entry): \(limit)"
        case .missingEntry(let entry):
            return "\(entry): missing from the archive"
        case .unreadable(let entry, let message):
            return "\(entry): \(message)"
        case .writeFailed(let entry, let message):
            return "\(entry): cannot be written to the archive: \(message)"
        case .packageRefused(let path, let reason):
            return "\(path): \(reason)"
        case .unsupportedFormat(let format, let reason):
            return "\(format): \(reason)"
        case .unrecognizedFormat(let path):
            return "\(path): not an archive in a format Deck reads (zip, tar, tar.gz, tar.zst)"
        case .notAnArchive(let path, let reason):
            return "\(path): \(reason)"
        }
    }
}

/// Why an archive entry was refused.
public enum ArchiveEntryRefusal: Sendable, Equatable, CustomStringConvertible {
    /// The entry has an empty name.
    case emptyName
    /// The name is not valid UTF-8.
    case invalidEncoding
    /// The name starts with `/`.
    case absolutePath
    /// The name has a `..` component.
    case escapesPackage
    /// The name has an empty component (`a//b`, or a trailing `/` on a file).
    case emptyComponent
    /// The name has a `.` component other than a leading `./`.
    case dotComponent
    /// The name contains a backslash.
    case backslash
    /// The name contains NUL or another control character.
    case controlCharacter
    /// The entry is a symbolic link.
    case symbolicLink
    /// The entry is a hard link (it has a link target).
    case hardLink
    /// The entry is a character or block device.
    case device
    /// The entry is a FIFO.
    case fifo
    /// The entry is a socket.
    case socket
    /// The entry has a file type other than regular file or directory.
    case unsupportedType
    /// The same name occurs twice.
    case duplicate
    /// The name equals an earlier one except for letter case.
    case caseCollision(with: String)
    /// The name equals an earlier one except for Unicode normalisation (and possibly case).
    case normalizationCollision(with: String)
    /// The archive has a top-level folder and this entry is not inside it.
    case outsideTopLevelFolder(String)
    /// The entry is not part of the package layout.
    case unexpected
    /// The layout wants a regular file here.
    case notARegularFile
    /// The layout wants a directory here.
    case notADirectory
    /// The blob's bytes do not hash to its name.
    case digestMismatch(actual: Digest)
    /// The blob sits in a fan-out directory other than the one named by its first two digits.
    case wrongFanOutDirectory(expected: String)
    /// The `mimetype` entry does not hold exactly the package MIME type, `application/vnd.deck.package`.
    case wrongMimeType
    /// The entry is encrypted.
    case encrypted
    /// `store.sqlite` does not start with the SQLite header (`SQLite format 3` and a NUL).
    case notSQLite
    /// The entry holds a different number of bytes than its header declares.
    case sizeMismatch(declared: Int64, actual: Int64)
    /// The zip's central directory and its local headers disagree, or its entries overlap, leave
    /// gaps or are out of order; `detail` says how.
    case zipStructure(String)

    /// A human-readable message.
    public var description: String {
        switch self {
        case .emptyName: return "empty entry name"
        case .invalidEncoding: return "entry name is not valid UTF-8"
        case .absolutePath: return "absolute paths are not allowed"
        case .escapesPackage: return "path escapes the package"
        case .emptyComponent: return "empty path component"
        case .dotComponent: return "'.' path components are not allowed"
        case .backslash: return "backslashes are not allowed in entry names"
        case .controlCharacter: return "control characters are not allowed in entry names"
        case .symbolicLink: return "symbolic links are not allowed in a package archive"
        case .hardLink: return "hard links are not allowed in a package archive"
        case .device: return "device files are not allowed in a package archive"
        case .fifo: return "FIFOs are not allowed in a package archive"
        case .socket: return "sockets are not allowed in a package archive"
        case .unsupportedType: return "unsupported entry type"
        case .duplicate: return "duplicate entry"
        case .caseCollision(let other): return "differs only by case from \(other)"
        case .normalizationCollision(let other): return "differs only by Unicode normalisation from \(other)"
        case .outsideTopLevelFolder(let folder): return "not inside the archive's top-level folder \(folder)/"
        case .unexpected: return "not part of the package layout"
        case .notARegularFile: return "must be a regular file"
        case .notADirectory: return "must be a directory"
        case .digestMismatch(let actual): return "content does not match its digest (got \(actual.hexDigest))"
        case .wrongFanOutDirectory(let expected):
            return "blob is in the wrong fan-out directory (expected \(expected))"
        case .wrongMimeType: return "mimetype entry must contain exactly \(packageArchiveMimeType)"
        case .encrypted: return "encrypted entries are not allowed in a package archive"
        case .notSQLite: return "not a SQLite database (it does not start with the SQLite header)"
        case .sizeMismatch(let declared, let actual):
            return "holds \(actual) bytes, but its header declares \(declared)"
        case .zipStructure(let detail):
            return "the zip's central directory and local headers disagree: \(detail)"
        }
    }
}

/// Which of the ``UnpackLimits`` was exceeded; the associated value is the limit in force.
public enum ArchiveLimit: Sendable, Equatable, CustomStringConvertible {
    /// More entries than ``UnpackLimits/maxEntries``.
    case entries(Int)
    /// One entry larger than ``UnpackLimits/maxEntryBytes``.
    case entryBytes(Int64)
    /// More uncompressed bytes than ``UnpackLimits/maxTotalBytes``.
    case totalBytes(Int64)
    /// `manifest.json` larger than ``UnpackLimits/maxManifestBytes``.
    case manifestBytes(Int64)
    /// Uncompressed/compressed ratio above ``UnpackLimits/maxCompressionRatio`` in an entry
    /// whose header declares no size.
    case compressionRatio(Double)

    /// A human-readable message.
    public var description: String {
        switch self {
        case .entries(let max): return "archive has more than \(max) entries"
        case .entryBytes(let max): return "entry is larger than \(max) bytes"
        case .totalBytes(let max): return "archive expands to more than \(max) bytes"
        case .manifestBytes(let max): return "manifest is larger than \(max) bytes"
        case .compressionRatio(let max): return "compression ratio exceeds \(max) (possible zip bomb)"
        }
    }
}

/// Why a package directory cannot be archived.
public enum PackageRefusal: Sendable, Equatable, CustomStringConvertible {
    /// The item is a symbolic link.
    case symbolicLink
    /// The item is not part of the package layout.
    case unexpected
    /// The layout wants a regular file here.
    case notARegularFile
    /// The layout wants a directory here.
    case notADirectory
    /// A required item is absent.
    case missing
    /// The blob's bytes do not hash to its name.
    case digestMismatch(actual: Digest)

    /// A human-readable message.
    public var description: String {
        switch self {
        case .symbolicLink: return "symbolic links are not allowed in a package"
        case .unexpected: return "not part of the package layout"
        case .notARegularFile: return "must be a regular file"
        case .notADirectory: return "must be a directory"
        case .missing: return "missing from the package"
        case .digestMismatch(let actual): return "content does not match its digest (got \(actual.hexDigest))"
        }
    }
}

/// The whole content of a package archive's `mimetype` entry (spec: "Archives";
/// `PackageArchive.mimeType`), here so that the refusal of another can name it.
package let packageArchiveMimeType = "application/vnd.deck.package"
