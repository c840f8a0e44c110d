import DeckSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension DeckError {
    /// `error` from reading `archive` as a document: a file in no archive format that does not
    /// look like one either is not damage, it never was an archive.
    package static func reading(_ archive: URL, _ error: any Error) -> DeckError {
        let error = DeckError.wrap(error)
        if case .archive(.unrecognizedFormat) = error, !ArchiveFormat.looksLikeArchive(archive.path) {
            return .notAPackage(
                path: archive.path, reason: "it is neither a package directory nor a package archive")
        }
        return error
    }

    /// Whether this is the failure of a call that found nothing at `path`.
    package func isMissing(_ path: String) -> Bool {
        switch self {
        case .notFound(path), .io(path, _, ENOENT): true
        default: false
        }
    }
}
