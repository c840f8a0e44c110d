// The bytes are a package's manifest.json: the rest of the package is a valid copy of a template.
// Opening (read-only) and verifying must give a result or a DeckError, never a crash or a hang.
@_spi(Fuzzing) import DeckKit
import Foundation
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let template = Fuzz.noteTemplate
    let work = Fuzz.root + "/work"
    let packagePath = work + "/p.deck"
    Fuzz.removeTree(work)
    Fuzz.makeDirectory(work)
    Fuzz.copyTree(template, to: packagePath)
    Fuzz.write(Fuzz.data(bytes, size), to: packagePath + "/" + FuzzingHooks.manifestName)
    let url = URL(fileURLWithPath: packagePath)

    var opened = false
    do {
        let store = try PackageStore.open(at: url, mode: .readOnly)
        opened = true
        _ = try? store.info()
        for entity in store.schema.entities {
            _ = try? store.read { try $0.count(RecordQuery(entity.name)) }
        }
        try store.close()
        Fuzz.note("opened")
    } catch {
        // Any DeckError is an acceptable answer to a bad manifest.
        Fuzz.note("open: \(error)")
    }
    if let report = try? PackageVerifier.verify(at: url, options: Fuzz.verifyOptions) {
        Fuzz.note("verify: \(report.isValid ? "valid" : "corrupt") \(report.findings)")
        // A manifest that opens is one the verifier must not call corrupt, and the reverse.
        Fuzz.check(
            !opened || report.isValid,
            "the package opened, but verify reports corruption: \(report.findings)")
    }
    Fuzz.removeTree(work)
    return 0
}

#if DECK_LIBFUZZER
    /// libFuzzer's `main` (see ``Fuzz/runLibFuzzer(_:_:_:)``).
    @_cdecl("FuzzManifest_main")
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
