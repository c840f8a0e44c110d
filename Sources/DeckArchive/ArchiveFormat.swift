import CArchive
import Foundation

/// A container format Deck can write packages in.
///
/// Reading detects the format from the data, so any of these (and plain tar compressed with
/// bzip2 or xz) can be unpacked whatever the file is called.
public enum ArchiveFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    /// ZIP; entries are stored or deflated one by one.
    case zip
    /// POSIX tar (ustar headers, pax extensions only where ustar cannot express an entry).
    case tar
    /// tar compressed with gzip.
    case tarGzip
    /// tar compressed with Zstandard.
    case tarZstd

    /// Infers the format from a file name: `.zip`, `.tar`, `.tar.gz`/`.tgz`, `.tar.zst`/`.tzst`,
    /// ignoring letter case. Returns nil for any other name.
    public init?(fileName: String) {
        let name = fileName.lowercased()
        if name.hasSuffix(".zip") {
            self = .zip
        } else if name.hasSuffix(".tar") {
            self = .tar
        } else if name.hasSuffix(".tar.gz") || name.hasSuffix(".tgz") {
            self = .tarGzip
        } else if name.hasSuffix(".tar.zst") || name.hasSuffix(".tzst") {
            self = .tarZstd
        } else {
            return nil
        }
    }

    /// A short name for messages: `zip`, `tar`, `tar.gz` or `tar.zst`.
    public var name: String {
        switch self {
        case .zip: return "zip"
        case .tar: return "tar"
        case .tarGzip: return "tar.gz"
        case .tarZstd: return "tar.zst"
        }
    }

    /// The usual file name extension, without the leading dot (same as ``name``).
    public var fileExtension: String { name }

    /// The same as ``name``.
    public var description: String { name }

    /// Whether this libarchive build can write the format in-process (zstd needs libarchive
    /// linked against libzstd; the external `zstd` program is never used).
    public var isAvailable: Bool {
        switch self {
        case .tar: return true
        case .zip, .tarGzip: return archive_zlib_version() != nil
        case .tarZstd: return archive_libzstd_version() != nil
        }
    }
}

extension ArchiveFormat {
    /// True when the file starts like a zip, gzip, zstd or tar file: damage then, not a stranger.
    package static func looksLikeArchive(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 262)) ?? Data())
        if head.starts(with: [0x50, 0x4B]) || head.starts(with: [0x1F, 0x8B])
            || head.starts(with: [0x28, 0xB5, 0x2F, 0xFD])
        {
            return true
        }
        return head.count >= 262 && Array(head[257..<262]) == Array("ustar".utf8)
    }
}
