import DeckSupport
import Foundation

/// A copy of one of a package's top-level files that a file-sync service made beside it when
/// two devices changed the file before the service had carried one change to the other (spec
/// section 2.4). The service keeps one version under the file's name and the other under a
/// name of its own, in the package directory: readers ignore such names (section 2.2), so the
/// other device's edits are in no store until they are merged; verification reports them
/// (`sync-conflict`). Blob files never conflict: a blob's name is its content's digest.
public struct SyncConflictCopy: Sendable, Hashable {
    /// The copy's name in the package directory.
    public let name: String
    /// The fixed name (spec section 2.1) it is a copy of: `store.sqlite`, `manifest.json`, …
    public let original: String
    /// The service whose naming it follows: Syncthing, Nextcloud, Dropbox, ownCloud or iCloud
    /// Drive.
    public let service: String

    /// Whether it is a copy of the store (which ``DocumentDifference`` can compare with it).
    public var isStore: Bool { original == PackageLayout.store }

    /// Whether it is a copy of `lock`, which holds nothing of the document: garbage collection
    /// removes it.
    public var isLock: Bool { original == PackageLayout.lockFile }

    /// The top-level files a service may make conflict copies of.
    static let originals = [
        PackageLayout.store, PackageLayout.store + "-wal", PackageLayout.store + "-shm",
        PackageLayout.store + "-journal", PackageLayout.manifest, PackageLayout.lockFile,
    ]

    /// The conflict copy `name` is, if it follows one of the services' namings for one of the
    /// package's files. For `store.sqlite` (the part before the last dot, then the rest):
    /// - Syncthing: `store.sync-conflict-20261203-101500-ABCDEFG.sqlite` (date, time, the first
    ///   7 characters of the device id);
    /// - Nextcloud: `store (conflicted copy 2026-12-03 101500).sqlite`;
    /// - Dropbox: `store (Alice's conflicted copy 2026-12-03).sqlite` (any parenthesis that says
    ///   "conflicted copy");
    /// - ownCloud: `store_conflict-20261203-101500.sqlite`;
    /// - iCloud Drive: `store 2.sqlite` (a space and a number).
    public static func recognize(_ name: String) -> SyncConflictCopy? {
        for original in originals {
            let dot = original.lastIndex(of: ".")
            let base = dot.map { String(original[..<$0]) } ?? original
            let tail = dot.map { String(original[$0...]) } ?? ""
            guard name.count > original.count, name.hasPrefix(base), name.hasSuffix(tail) else { continue }
            let middle = Array(name.dropFirst(base.count).dropLast(tail.count).utf8)
            if let service = service(of: middle) {
                return SyncConflictCopy(name: name, original: original, service: service)
            }
        }
        return nil
    }

    /// The service whose conflict mark `middle` is (what it put between the name's base and its
    /// extension).
    private static func service(of middle: [UInt8]) -> String? {
        var scanner = Scanner(middle)
        if scanner.take(".sync-conflict-"), scanner.digits(8), scanner.take("-"), scanner.digits(6),
            scanner.take("-"), scanner.count(7, of: { isUpper($0) || isDigit($0) }), scanner.atEnd
        {
            return "Syncthing"
        }
        scanner = Scanner(middle)
        if scanner.take(" (conflicted copy "), scanner.digits(4), scanner.take("-"), scanner.digits(2),
            scanner.take("-"), scanner.digits(2), scanner.take(" "), scanner.digits(6), scanner.take(")"),
            scanner.atEnd
        {
            return "Nextcloud"
        }
        if middle.starts(with: Array(" (".utf8)), middle.last == UInt8(ascii: ")"),
            String(decoding: middle, as: UTF8.self).contains("conflicted copy")
        {
            return "Dropbox"
        }
        scanner = Scanner(middle)
        if scanner.take("_conflict-"), scanner.digits(8), scanner.take("-"), scanner.digits(6), scanner.atEnd
        {
            return "ownCloud"
        }
        scanner = Scanner(middle)
        if scanner.take(" "), middle.count > 1, middle.count <= 6,
            scanner.count(middle.count - 1, of: isDigit),
            middle[1] != UInt8(ascii: "0")
        {
            return "iCloud Drive"
        }
        return nil
    }

    /// The conflict copies in the package directory at `url`, by name (none when it cannot be
    /// listed).
    public static func find(in url: URL) -> [SyncConflictCopy] { find(inPackage: url.path) }

    /// The conflict copies in the package directory at `path`, by name.
    package static func find(inPackage path: String) -> [SyncConflictCopy] {
        guard let names = try? FileSystem.list(path) else { return [] }
        return names.compactMap(recognize).sorted { $0.name < $1.name }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
    private static func isUpper(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) }

    /// Reads a name's bytes left to right.
    private struct Scanner {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { position == bytes.count }

        /// Takes `text` if the bytes go on with it.
        mutating func take(_ text: String) -> Bool {
            let expected = Array(text.utf8)
            guard bytes.count - position >= expected.count,
                bytes[position..<position + expected.count].elementsEqual(expected)
            else { return false }
            position += expected.count
            return true
        }

        /// Takes `n` bytes that each pass `test`.
        mutating func count(_ n: Int, of test: (UInt8) -> Bool) -> Bool {
            guard n >= 0, bytes.count - position >= n, bytes[position..<position + n].allSatisfy(test) else {
                return false
            }
            position += n
            return true
        }

        mutating func digits(_ n: Int) -> Bool { count(n) { (0x30...0x39).contains($0) } }
    }
}
