// The bytes are an archive file (zip or tar, any supported compression). the archive scan,
// unpack and DeckDocument.verifyArchive must give a result or an error, and:
//   - unpacking writes nothing outside its destination: afterwards the destination's parent
//     holds only the archive and, if unpack succeeded, the complete destination; a canary
//     directory beside it and every other directory up to the scratch root stay as they were;
//   - an unpacked package holds only directories and regular files (no links, devices, fifos);
//   - a failed scan leaves no `storeTo` file, a failed unpack no destination or temporary;
//   - scan and unpack agree (the same report, or both fail);
//   - verifyArchive leaves nothing in the temporary directory.
@_spi(Fuzzing) import DeckKit
import Foundation
import FuzzSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Directories above the work directory, so that `../` several levels up still lands in the
/// scratch root, where the check sees it.
let jail = Fuzz.root + "/jail/1/2/3/4/5/6/7/8"
let work = jail + "/work"
/// `work` relative to the scratch root, which is what ``Fuzz/walk(_:)`` gives.
let workRelative = String(work.dropFirst(Fuzz.root.count + 1))

/// Whether a path from ``Fuzz/walk(_:)`` of the scratch root is the work directory or below it.
func isInWork(_ relative: String) -> Bool {
    relative == workRelative || relative.hasPrefix(workRelative + "/")
}
let canary = jail + "/canary"
/// `$TMPDIR` for this process (verifyArchive writes its temporary store there).
let temporaryDirectory = Fuzz.root + "/tmp"

/// The scratch root as it must look between inputs.
nonisolated(unsafe) var expectedRoot: [String] = []

let setUp: Void = {
    var path = Fuzz.root
    for part in jail.dropFirst(Fuzz.root.count + 1).split(separator: "/") {
        path += "/" + part
        Fuzz.makeDirectory(path)
    }
    Fuzz.makeDirectory(canary)
    Fuzz.makeDirectory(temporaryDirectory)
    setenv("TMPDIR", temporaryDirectory, 1)
    expectedRoot = describe(Fuzz.walk(Fuzz.root).filter { !isInWork($0.path) })
}()

func describe(_ entries: [(path: String, kind: mode_t)]) -> [String] {
    entries.map { "\($0.path) (\(String($0.kind, radix: 8)))" }
}

/// Fails unless everything under `package` is a directory or a regular file.
func checkOnlyFilesAndDirectories(_ package: String) {
    for entry in Fuzz.walk(package) where entry.kind != S_IFDIR && entry.kind != S_IFREG {
        Fuzz.fail("unpack created \(entry.path) of type \(String(entry.kind, radix: 8)) in the package")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    _ = setUp
    let archive = work + "/input.archive"
    let destination = work + "/out.deck"
    let scanStore = work + "/scan.sqlite"
    Fuzz.removeTree(work)
    Fuzz.makeDirectory(work)
    Fuzz.write(Fuzz.data(bytes, size), to: archive)
    let archiveURL = URL(fileURLWithPath: archive)

    // scan, with the store copied out.
    var scanned: FuzzingHooks.ScanResult?
    do {
        scanned = try FuzzingHooks.scan(archive: archiveURL, storeTo: URL(fileURLWithPath: scanStore))
    } catch {
        Fuzz.note("scan: \(error)")
        Fuzz.check(!Fuzz.exists(scanStore), "scan failed (\(error)) but left its storeTo file")
    }
    Fuzz.removeTree(scanStore)

    // unpack.
    var unpacked: FuzzingHooks.ScanResult?
    do {
        unpacked = try FuzzingHooks.unpack(archive: archiveURL, to: URL(fileURLWithPath: destination))
    } catch {
        Fuzz.note("unpack: \(error)")
        Fuzz.check(!Fuzz.exists(destination), "unpack failed (\(error)) but the destination exists")
    }
    let left = Fuzz.list(work)
    let allowed = unpacked == nil ? ["input.archive"] : ["input.archive", "out.deck"]
    Fuzz.check(left == allowed, "after unpack the destination's parent holds \(left), expected \(allowed)")
    Fuzz.check(
        Fuzz.list(canary).isEmpty, "unpack wrote into the canary directory: \(Fuzz.walk(canary).map(\.path))")
    let root = describe(Fuzz.walk(Fuzz.root).filter { !isInWork($0.path) })
    Fuzz.check(
        root == expectedRoot,
        "unpack wrote outside its destination: \(Set(root).symmetricDifference(expectedRoot))")

    if unpacked != nil {
        Fuzz.check(
            Fuzz.kind(destination) == S_IFDIR, "unpack succeeded but the destination is not a directory")
        checkOnlyFilesAndDirectories(destination)
        Fuzz.check(
            Fuzz.kind(destination + "/" + FuzzingHooks.blobsDirectoryName) == S_IFDIR,
            "an unpacked package has no blobs/ directory")
        // What unpacking made may still be refused by open; it must not crash it.
        let url = URL(fileURLWithPath: destination)
        if let store = try? PackageStore.open(at: url, mode: .readOnly) {
            for entity in store.schema.entities {
                _ = try? store.read { try $0.fetch(RecordQuery(entity.name)) }
            }
            try? store.close()
        }
        let report = try? PackageVerifier.verify(at: url, options: Fuzz.verifyOptions)
        Fuzz.note(
            "unpacked; verify: \(report.map { $0.isValid ? "valid" : "corrupt: \($0.findings)" } ?? "error")")
    }
    switch (scanned, unpacked) {
    case (let s?, let u?):
        Fuzz.check(s == u, "scan and unpack report differently: \(s) vs \(u)")
    case (nil, nil):
        break
    case (let s, let u):
        Fuzz.fail("scan \(s == nil ? "fails" : "succeeds") but unpack \(u == nil ? "fails" : "succeeds")")
    }

    _ = try? DeckDocument.verifyArchive(at: archiveURL, options: Fuzz.verifyOptions)
    let temporaries = Fuzz.list(temporaryDirectory)
    Fuzz.check(temporaries.isEmpty, "verifyArchive left temporary files: \(temporaries)")
    Fuzz.removeTree(work)
    return 0
}

#if DECK_LIBFUZZER
    /// libFuzzer's `main` (see ``Fuzz/runLibFuzzer(_:_:_:)``).
    @_cdecl("FuzzArchive_main")
    public func libFuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>)
        -> CInt
    {
        Fuzz.runLibFuzzer(argc, argv, fuzz)
    }
#else
    /// Built without libFuzzer: replays the input files named on the command line.
    @main struct Replay {
        static func main() { Fuzz.replay(fuzz) }
    }
#endif
