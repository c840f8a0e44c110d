import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension DeckError {
    /// The document-level form of an archive-layer failure.
    package init(archiveError error: any Error, archive: URL? = nil) {
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
            self = FileSystem.failure(FaultInjection.Operation(rawValue: operation) ?? .open, path, code)
            if case .io = self { self = .io(path: path, operation: operation, errno: code) }
        case let error as ArchiveError: self = .archive(error)
        default: self = .wrap(error)
        }
    }
}
