import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Moves the modification (and access) time of `path` by `seconds`, explicitly, and requires it
/// to have changed: tests that need different mtimes set them instead of sleeping until the clock
/// has moved on.
package func shiftModificationTime(
    of path: String, by seconds: Int, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    var before = stat()
    try #require(lstat(path, &before) == 0, "stat \(path)", sourceLocation: sourceLocation)
    var times = [
        timespec(tv_sec: before.st_atim.tv_sec + seconds, tv_nsec: before.st_atim.tv_nsec),
        timespec(tv_sec: before.st_mtim.tv_sec + seconds, tv_nsec: before.st_mtim.tv_nsec),
    ]
    try #require(
        utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) == 0, "utimensat \(path)",
        sourceLocation: sourceLocation)
    var after = stat()
    try #require(lstat(path, &after) == 0, sourceLocation: sourceLocation)
    try #require(
        after.st_mtim.tv_sec == before.st_mtim.tv_sec + seconds, "the mtime of \(path) did not move",
        sourceLocation: sourceLocation)
}

/// ``shiftModificationTime(of:by:sourceLocation:)`` for `directory` and everything in it.
package func shiftModificationTimes(
    under directory: URL, by seconds: Int, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    var paths = [directory.path]
    if let enumerator = FileManager.default.enumerator(atPath: directory.path) {
        for case let name as String in enumerator { paths.append(directory.path + "/" + name) }
    }
    for path in paths { try shiftModificationTime(of: path, by: seconds, sourceLocation: sourceLocation) }
}
