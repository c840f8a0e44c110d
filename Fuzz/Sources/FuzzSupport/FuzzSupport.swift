import DeckKit
import DeckSamples
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What every fuzz target shares: a private scratch directory, file helpers, and checks that
/// trap (so libFuzzer records the input as a crash).
public enum Fuzz {
    /// This process's scratch directory, `$DECK_FUZZ_TMPDIR` (else `/dev/shm`, else the temporary
    /// directory) `/deck-fuzz-<pid>`. Everything a target writes goes below it; it is removed at exit.
    ///
    /// `/dev/shm` is preferred because the library fsyncs every file it writes, which on a real
    /// disk would make the targets a hundred times slower.
    public static let root: String = {
        let environment = ProcessInfo.processInfo.environment
        var base = environment["DECK_FUZZ_TMPDIR"] ?? ""
        if base.isEmpty {
            base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NSTemporaryDirectory()
        }
        let path = (base as NSString).standardizingPath + "/deck-fuzz-\(getpid())"
        removeTree(path)
        makeDirectory(path)
        atexit { Fuzz.removeTree(Fuzz.root) }
        return path
    }()

    /// Whether `DECK_FUZZ_VERBOSE` is set: targets then say what each input got (slow).
    public static let verbose =
        ProcessInfo.processInfo.environment["DECK_FUZZ_VERBOSE"].map { !$0.isEmpty && $0 != "0" } ?? false

    /// Prints `message` when ``verbose``; for checking that seeds reach as deep as intended.
    public static func note(_ message: @autoclosure () -> String) {
        if verbose { FileHandle.standardError.write(Data("deck-fuzz: \(message())\n".utf8)) }
    }

    /// Known, reported bugs the oracles may look past, from `DECK_FUZZ_ALLOW` (comma-separated
    /// names; see Fuzz/README.md), so that a long run can find other things. Empty by default:
    /// a known bug that is still there fails the run.
    public static let allowed: Set<String> = Set(
        (ProcessInfo.processInfo.environment["DECK_FUZZ_ALLOW"] ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        })

    /// Whether the known bug `name` is to be tolerated (see ``allowed``).
    public static func allows(_ name: String) -> Bool { allowed.contains(name) }

    /// The bytes libFuzzer passes, as `Data`.
    public static func data(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> Data {
        Data(bytes: bytes, count: size)
    }

    /// Stops the process with a message: libFuzzer reports the input as a crash ("deadly signal").
    public static func fail(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
        FileHandle.standardError.write(
            Data("\n==DECK-FUZZ== invariant violated at \(file):\(line): \(message)\n".utf8))
        abort()
    }

    /// Checks an invariant of the library under test; a violation is a finding.
    public static func check(
        _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
        file: StaticString = #fileID, line: UInt = #line
    ) {
        if !condition() { fail(message(), file: file, line: line) }
    }

    /// Stops the process because the harness itself cannot work (not a finding in DeckKit).
    public static func setupFailed(_ message: String) -> Never {
        FileHandle.standardError.write(Data("deck-fuzz: setup failed: \(message)\n".utf8))
        exit(2)
    }

    // MARK: Files

    public static func makeDirectory(_ path: String) {
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            setupFailed("mkdir \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Removes `path` and everything below it, without following links; quiet if it is missing.
    /// Restores permissions on the way, in case an input made a directory unreadable.
    public static func removeTree(_ path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            chmod(path, 0o755)
            for name in list(path) { removeTree(path + "/" + name) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }

    /// The names in a directory (without `.` and `..`), sorted; empty if it cannot be read.
    public static func list(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// The file type bits of `path` (`S_IFREG`, …), not following links; nil if it does not exist.
    public static func kind(_ path: String) -> mode_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : nil
    }

    public static func exists(_ path: String) -> Bool { kind(path) != nil }

    /// Writes `data` to a new file at `path` (replacing one that is there).
    public static func write(_ data: Data, to path: String) {
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        if fd < 0 { setupFailed("create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = systemWrite(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { setupFailed("write \(path): \(String(cString: strerror(errno)))") }
                offset += n
            }
        }
    }

    public static func read(_ path: String) -> Data {
        guard let data = FileManager.default.contents(atPath: path) else { setupFailed("read \(path)") }
        return data
    }

    /// Copies a tree of directories and regular files (a package template).
    public static func copyTree(_ source: String, to destination: String) {
        switch kind(source) {
        case S_IFDIR:
            makeDirectory(destination)
            for name in list(source) { copyTree(source + "/" + name, to: destination + "/" + name) }
        case S_IFREG:
            write(read(source), to: destination)
        default:
            setupFailed("cannot copy \(source): not a directory or regular file")
        }
    }

    /// Every path below `root` (relative, sorted), with its file type; does not follow links.
    public static func walk(_ root: String) -> [(path: String, kind: mode_t)] {
        var result: [(String, mode_t)] = []
        func visit(_ relative: String) {
            let full = relative.isEmpty ? root : root + "/" + relative
            for name in list(full) {
                let child = relative.isEmpty ? name : relative + "/" + name
                let k = kind(root + "/" + child) ?? 0
                result.append((child, k))
                if k == S_IFDIR { visit(child) }
            }
        }
        visit("")
        return result
    }

    // MARK: Templates

    /// Creates a package with `schema` at `path` (if it does not exist yet), lets `fill` add
    /// records, saves and closes it. For templates made once per process.
    public static func makePackage(
        at path: String, contentType: String, schema: StoreSchema,
        fill: (StoreTransaction) throws -> Void = { _ in }
    ) {
        guard !exists(path) else { return }
        do {
            let store = try PackageStore.create(
                at: URL(fileURLWithPath: path), contentType: contentType, schema: schema)
            try store.write { try fill($0) }
            try store.close()
        } catch {
            setupFailed("making the template package \(path): \(error)")
        }
    }

    /// The populated flash-cards sample, made once per process under the scratch directory.
    public static let flashcardsTemplate: String = {
        let path = root + "/template.flashcards"
        makePackage(at: path, contentType: FlashcardsSample.contentType, schema: FlashcardsSample.schema) {
            try FlashcardsSample.populate($0)
        }
        return path
    }()

    /// Verifier options for the targets: one thread, so runs are deterministic.
    public static let verifyOptions = PackageVerifier.Options(quick: false, threads: 1)

    // MARK: Running without libFuzzer

    /// The `main` of a target built without `-sanitize=fuzzer`: runs `body` on every file named on
    /// the command line (directories are walked), so inputs can be replayed under any build.
    public static func replay(_ body: (UnsafePointer<UInt8>, Int) -> CInt) {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.isEmpty {
            print("usage: \(CommandLine.arguments[0]) INPUT-FILE-OR-DIRECTORY…")
            print("(built without -sanitize=fuzzer: replays the inputs once each; see Scripts/fuzz)")
            exit(64)
        }
        var files: [String] = []
        for argument in arguments {
            if kind(argument) == S_IFDIR {
                files += walk(argument).filter { $0.kind == S_IFREG }.map { argument + "/" + $0.path }
            } else {
                files.append(argument)
            }
        }
        for file in files {
            let data = read(file)
            print("Running: \(file) (\(data.count) bytes)")
            _ = data.withUnsafeBytes { raw -> CInt in
                // A zero-length input still needs a valid pointer.
                var empty: UInt8 = 0
                let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
                return base.map { body($0, raw.count) } ?? body(&empty, 0)
            }
        }
        print("Executed \(files.count) inputs; no crash.")
    }
}

/// `write(2)`, named so it does not collide with ``Fuzz/write(_:to:)``.
private func systemWrite(_ fd: CInt, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.write(fd, buffer, count)
    #elseif canImport(Musl)
        Musl.write(fd, buffer, count)
    #else
        Darwin.write(fd, buffer, count)
    #endif
}

// MARK: Running under libFuzzer

#if DECK_LIBFUZZER

    /// libFuzzer's entry point for programs that have their own `main` (LLVM 12 and later).
    @_silgen_name("LLVMFuzzerRunDriver")
    private func llvmFuzzerRunDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
    ) -> CInt

    extension Fuzz {
        /// Hands the process to libFuzzer.
        ///
        /// SwiftPM links every executable with `main` aliased to `<Module>_main` (so tests can link
        /// executables), which keeps libFuzzer's own `main` out; so each target, built with
        /// `-D DECK_LIBFUZZER`, defines `<Module>_main` and calls this.
        public static func runLibFuzzer(
            _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
            _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
        ) -> CInt {
            var argc = argc
            var argv = argv
            return llvmFuzzerRunDriver(&argc, &argv, callback)
        }
    }
#endif
