import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A directory of its own for one test, under the system's temporary directory, removed with
/// everything in it when the value goes away — even the parts a test made unreadable or
/// unwritable (permissions are restored first). The one scratch-directory helper of every test
/// target.
public final class ScratchDirectory: Sendable {
    /// The directory.
    public let url: URL

    /// Creates an empty directory with a unique name.
    public init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("deck-tests-" + UUID().uuidString, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    }

    deinit { Self.remove(url) }

    /// The directory's path.
    public var path: String { url.path }

    /// The URL of `name` inside the directory (which need not exist).
    public func appending(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// The names directly in the directory, hidden ones (staging leftovers) included, sorted.
    public func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url.path).sorted()
    }

    /// Removes the tree at `url`, first giving back the permissions a test may have taken away.
    public static func remove(_ url: URL) {
        if let enumerator = FileManager.default.enumerator(atPath: url.path) {
            for case let name as String in enumerator {
                _ = chmod(url.path + "/" + name, 0o755)
            }
        }
        _ = chmod(url.path, 0o755)
        try? FileManager.default.removeItem(at: url)
    }
}

/// Runs `body` with the URL of a fresh ``ScratchDirectory``, removed when `body` returns or throws.
public func withTestDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let directory = try ScratchDirectory()
    return try withExtendedLifetime(directory) { try body(directory.url) }
}
