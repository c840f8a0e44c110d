import CDeckSystem
import DeckSupport
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Removal of the hidden temporary files and directories ("staging items") that export, import,
/// pack, unpack, package creation and reading an archive write before renaming a result into
/// place (spec: "Staging files").
///
/// Every staging item is registered while it exists, so that a signal handler can remove it,
/// and holds an exclusive `flock(2)` for its whole life, so that a later run can tell a stale
/// item (no lock: its process is gone) from one a live process is writing. The next run that
/// stages for the same name removes the stale ones.
public enum StagingFiles {
    /// Installs handlers for `SIGINT`, `SIGTERM` and `SIGHUP` that remove every staging item
    /// this process is writing and then let the signal end the process as it would have (so the
    /// exit status still says which signal it was), and unblocks them on the calling thread (a
    /// parent that starts the process from a thread that blocks signals passes its mask on). A
    /// signal the process inherited as ignored (`nohup`, a background job) stays ignored.
    ///
    /// Call it once, early, from the main thread: the cleanup runs there (a signal delivered to
    /// another thread is passed on to it), so no staging item is created while it runs.
    public static func removeOnTerminationSignals() {
        deck_staging_install_signal_handlers()
    }

    #if DEBUG
        /// Calls `action` with the path of the `count`-th staging item this process creates, right
        /// after creating it (tests use it to interrupt a command at a known point). Debug builds
        /// only.
        @_spi(Testing)
        public static func afterCreating(_ count: Int, _ action: @escaping @Sendable (String) -> Void) {
            Staging.hook.withLock { $0 = (count, action) }
        }
    #endif
}

/// Creates, claims, tracks and sweeps staging items.
package enum Staging {
    /// What a staging item beside a destination is for; part of its name.
    package enum Kind: String, CaseIterable {
        /// An archive being written (a file).
        case pack
        /// A store snapshot being taken for an export (a directory holding `store.sqlite`).
        case store
        /// A package being unpacked (a directory).
        case unpack
        /// A package being created (a directory).
        case creating
        /// A blob's bytes being copied out (`deck blob get -o`; a file).
        case blob
    }

    /// Hex digits in the random part of every staging name.
    package static let suffixLength = 16
    /// The longest file name the file systems Deck runs on accept (`NAME_MAX`).
    package static let maximumNameBytes = 255

    #if DEBUG
        fileprivate static let hook = Locked<(count: Int, action: @Sendable (String) -> Void)?>(nil)
        private static let created = Atomic<Int>(0)
    #endif

    /// `.NAME.KIND-<16 hex digits>`, where NAME is the destination's name, shortened (see
    /// ``base(for:kind:)``) so that the whole name fits in 255 bytes.
    package static func name(for target: String, kind: Kind, suffix: String) -> String {
        "." + base(for: target, kind: kind) + "." + kind.rawValue + "-" + suffix
    }

    /// The destination's name if it fits, else its longest prefix (whole characters) that leaves
    /// room for `~` and the first 8 hex digits of the SHA-256 of the full name (UTF-8).
    package static func base(for target: String, kind: Kind) -> String {
        let room = maximumNameBytes - (3 + kind.rawValue.utf8.count + suffixLength)
        if target.utf8.count <= room { return target }
        let hash = SHA256Hasher.hash(Data(target.utf8)).hexDigest.prefix(8)
        var prefix = String.UnicodeScalarView()
        var bytes = 0
        for scalar in target.unicodeScalars {
            let size = String(scalar).utf8.count
            if bytes + size > room - 9 { break }
            prefix.append(scalar)
            bytes += size
        }
        return String(prefix) + "~" + hash
    }

    /// 16 random lowercase hex digits.
    package static func randomSuffix() -> String {
        let hex = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        return String(repeating: "0", count: suffixLength - hex.count) + hex
    }

    /// Whether `name` ends in exactly ``suffixLength`` lowercase hex digits after `prefix`.
    package static func hasSuffix(_ name: String, after prefix: String) -> Bool {
        let bytes = Array(name.utf8)
        let head = Array(prefix.utf8)
        guard bytes.count == head.count + suffixLength, bytes.starts(with: head) else { return false }
        return bytes[head.count...].allSatisfy {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
        }
    }

    /// What every staging name for the destination named `target` starts with, one per kind.
    package static func prefixes(for target: String) -> [String] {
        Kind.allCases.map { "." + base(for: target, kind: $0) + "." + $0.rawValue + "-" }
    }

    /// Creates a staging item of `kind` beside `destination` (a full path), after removing the
    /// stale staging items left there for the same name. A file is created with permission bits
    /// `mode` (less the umask).
    package static func make(
        beside destination: String, kind: Kind, isDirectory: Bool, mode: mode_t = 0o644
    ) throws(DeckError) -> StagingItem {
        let parent = (destination as NSString).deletingLastPathComponent
        let directory = parent.isEmpty ? "." : parent
        let target = (destination as NSString).lastPathComponent
        let prefixes = prefixes(for: target)
        removeStale(in: directory) { name in prefixes.contains { hasSuffix(name, after: $0) } }
        return try make(in: directory, isDirectory: isDirectory, mode: mode) {
            name(for: target, kind: kind, suffix: $0)
        }
    }

    /// Creates `deck-PURPOSE-<16 hex digits>` in the temporary directory (`TMPDIR`, else `/tmp`),
    /// after removing stale ones of the same purpose; with `mode` (0700 for a copy of someone's
    /// data that no other user may read).
    package static func makeScratchDirectory(purpose: String, mode: mode_t = 0o755) throws(DeckError)
        -> StagingItem
    {
        var directory = FileManager.default.temporaryDirectory.path
        while directory.count > 1 && directory.hasSuffix("/") { directory.removeLast() }
        let prefix = "deck-\(purpose)-"
        removeStale(in: directory) { hasSuffix($0, after: prefix) }
        return try make(in: directory, isDirectory: true, directoryMode: mode) { prefix + $0 }
    }

    private static func make(
        in directory: String, isDirectory: Bool, mode: mode_t = 0o644, directoryMode: mode_t = 0o755,
        name: (String) -> String
    ) throws(DeckError) -> StagingItem {
        for _ in 0..<16 {
            let path = directory + "/" + name(randomSuffix())
            // Registered before it exists, so a signal at any moment after creation removes it.
            let slot = deck_staging_add(path)
            do {
                if isDirectory {
                    try FileSystem.mkdir(path, mode: directoryMode, existingOK: false)
                } else {
                    FileSystem.close(
                        try FileSystem.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode))
                }
            } catch .alreadyExists {
                deck_staging_remove(slot)
                continue
            } catch {
                deck_staging_remove(slot)
                throw error
            }
            switch claim(path) {
            case .claimed(let lock):
                let item = StagingItem(path: path, isDirectory: isDirectory, lock: lock, slot: slot)
                runHook(path)
                return item
            case .taken:
                // Another run's sweep took it between our creating and locking it; it removes it.
                deck_staging_remove(slot)
                continue
            case .failed(let code):
                try? FileSystem.removeTree(path)
                deck_staging_remove(slot)
                throw FileSystem.failure(.open, path, code)
            }
        }
        throw DeckError.io(path: directory, operation: "create a temporary name", errno: EEXIST)
    }

    /// Runs the hook of ``StagingFiles/afterCreating(_:_:)`` (debug builds only).
    @inline(__always)
    private static func runHook(_ path: String) {
        #if DEBUG
            let number = created.add(1, ordering: .relaxed).newValue
            let action = hook.withLock { current -> (@Sendable (String) -> Void)? in
                guard let current, current.count == number else { return nil }
                return current.action
            }
            action?(path)
        #endif
    }

    package enum Claim {
        case claimed(Int32)
        /// Someone else holds the lock, or the name no longer refers to what was opened.
        case taken
        case failed(Int32)
    }

    /// Opens `path` (never following a link) and takes an exclusive, non-blocking `flock` on it,
    /// checking that the name still refers to the object locked.
    package static func claim(_ path: String) -> Claim {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return errno == ENOENT || errno == ELOOP ? .taken : .failed(errno) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            close(fd)
            return code == EWOULDBLOCK ? .taken : .failed(code)
        }
        var opened = stat()
        var named = stat()
        guard fstat(fd, &opened) == 0, lstat(path, &named) == 0, opened.st_dev == named.st_dev,
            opened.st_ino == named.st_ino
        else {
            close(fd)
            return .taken
        }
        return .claimed(fd)
    }

    /// Removes every regular file or directory in `directory` whose name `matches` and that no
    /// process holds locked: its writer is gone (killed, crashed, or the machine went down).
    package static func removeStale(in directory: String, where matches: (String) -> Bool) {
        guard let names = try? FileSystem.list(directory) else { return }
        for name in names where matches(name) {
            let path = directory + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0,
                info.st_mode & S_IFMT == S_IFREG || info.st_mode & S_IFMT == S_IFDIR
            else { continue }
            guard case .claimed(let fd) = claim(path) else { continue }
            // Through descriptors, never following a link: the item may come from anyone.
            _ = deck_staging_remove_tree(path)
            close(fd)
        }
    }
}

/// One staging item of this process: registered for signal cleanup and locked until it is
/// released (it became the result) or discarded (removed). Discarded when it goes away unless
/// released first.
package final class StagingItem {
    /// The item's full path.
    package let path: String
    package let isDirectory: Bool
    private var lock: Int32
    private var slot: Int32
    private var finished = false

    fileprivate init(path: String, isDirectory: Bool, lock: Int32, slot: Int32) {
        self.path = path
        self.isDirectory = isDirectory
        self.lock = lock
        self.slot = slot
    }

    package var url: URL { URL(fileURLWithPath: path, isDirectory: isDirectory) }

    deinit {
        discard()
    }

    /// The item was renamed into place (or is otherwise no longer ours to remove): stop tracking
    /// it and drop its lock.
    package func release() {
        guard !finished else { return }
        finished = true
        deck_staging_remove(slot)
        close(lock)
        lock = -1
    }

    /// Removes the item (a file, or a directory with everything in it) and releases it.
    package func discard() {
        guard !finished else { return }
        do {
            try FileSystem.removeTree(path)
        } catch {
            // One more time: an injected fault fires once, a real one is reported by nobody.
            try? FileSystem.removeTree(path)
        }
        release()
    }
}

@available(*, unavailable)
extension StagingItem: Sendable {}
