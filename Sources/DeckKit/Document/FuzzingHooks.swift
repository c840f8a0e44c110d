import Foundation

/// The store internals the fuzz targets (the `Fuzz/` package, built with libFuzzer flags and so
/// outside this package) check against each other. Not for apps: reached only with
/// `@_spi(Fuzzing) import DeckKit`, and left out of the documentation.
@_spi(Fuzzing)
public enum FuzzingHooks {
    /// What reading an archive found: equal for two passes that saw the same entries.
    public struct ScanResult: Equatable, Sendable, CustomStringConvertible {
        let report: ArchiveScanReport
        public var description: String { "\(report)" }
    }

    /// One pass over an archive as unpacking makes it, writing nothing but, if given, the
    /// archived store to `storeTo`.
    public static func scan(archive: URL, storeTo: URL?) throws -> ScanResult {
        ScanResult(report: try PackageArchive.scan(archive: archive, storeTo: storeTo))
    }

    /// Unpacks an archive without the verifier's checks (those are ``DeckDocument``'s).
    public static func unpack(archive: URL, to destination: URL) throws -> ScanResult {
        ScanResult(report: try PackageArchive.unpack(archive: archive, to: destination))
    }

    /// The fixed names of a package directory (spec: section 2).
    public static let storeName = PackageLayout.store
    public static let manifestName = PackageLayout.manifest
    public static let blobsDirectoryName = PackageLayout.blobsDirectory
}
