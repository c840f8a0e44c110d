// The bytes are a package's store.sqlite; the manifest and blob files are those of the populated
// flash-cards sample (so a store that names its blobs reaches the blob checks). Opening
// read-only, info(), fetching every entity the stored schema names, reading its change log
// (`deck log`: after its own token, empty) and verifying must give results or DeckErrors, never
// a crash or a hang; so must comparing it with the sample's store
// (`deck diff`), as another copy and as a conflict copy; and merging it into a copy of the sample
// (`deck merge`, also as a conflict copy) must leave that copy valid, whatever the store claims.
@_spi(Fuzzing) import DeckKit
import Foundation
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let template = Fuzz.flashcardsTemplate
    let work = Fuzz.root + "/work"
    let packagePath = work + "/p.flashcards"
    Fuzz.removeTree(work)
    Fuzz.makeDirectory(work)
    Fuzz.copyTree(template, to: packagePath)
    Fuzz.write(Fuzz.data(bytes, size), to: packagePath + "/" + FuzzingHooks.storeName)
    let url = URL(fileURLWithPath: packagePath)

    let opened = Result { () throws(DeckError) in try PackageStore.open(at: url, mode: .readOnly) }
    Fuzz.note("open: \(opened.map { _ in "ok" })")
    if let package = try? opened.get() {
        _ = try? package.info()
        for entity in package.schema.entities {
            _ = try? package.read { reader in
                if let records = try? reader.fetch(RecordQuery(entity.name)) {
                    // Reading external values goes through the blob store and its digest check.
                    for record in records.prefix(4) {
                        for value in record.values.values { _ = try? reader.data(of: value) }
                    }
                }
                _ = try? reader.count(RecordQuery(entity.name))
            }
        }
        // deck log: whatever the bookkeeping claims, a log or an error, never a crash; and the
        // log after its own token lists nothing.
        let log = Result { () throws(DeckError) in try ChangeLog(of: package) }
        Fuzz.note("log: \(log.map { "\($0.transactions.count) transactions" })")
        if let token = try? log.get().token, let since = try? ChangeLog(of: package, after: token),
            !since.transactions.isEmpty
        {
            fatalError("the log after its own token lists \(since.transactions.count) transactions")
        }
        _ = try? ChangeLog(of: package, last: 2)
        try? package.close()
    }
    // deck diff: the store against the sample's, and as a sync service's conflict copy beside the
    // sample's store (in a package of the sample's manifest and store only: no blob is read).
    let sample = URL(fileURLWithPath: template)
    let difference = Result { () throws(DeckError) in
        try DocumentDifference(between: sample, and: url, differentDocuments: true)
    }
    Fuzz.note("diff: \(difference.map { "\($0.records.count) records" })")
    let conflicted = work + "/q.flashcards"
    Fuzz.makeDirectory(conflicted)
    for name in [FuzzingHooks.manifestName, FuzzingHooks.storeName] {
        try? FileManager.default.copyItem(atPath: template + "/" + name, toPath: conflicted + "/" + name)
    }
    let copyName = "store.sync-conflict-20261203-101500-ABCDEFG.sqlite"
    Fuzz.write(Fuzz.data(bytes, size), to: conflicted + "/" + copyName)
    if let copy = SyncConflictCopy.recognize(copyName) {
        _ = try? DocumentDifference(between: URL(fileURLWithPath: conflicted), andConflictCopy: copy)
    }
    // deck merge: into a copy of the sample, as another copy, as the ancestor of the sample and as
    // a conflict copy. Refused or done, the copy merged into verifies.
    let target = work + "/m.flashcards"
    Fuzz.copyTree(template, to: target)
    let targetURL = URL(fileURLWithPath: target)
    if let store = try? PackageStore.open(at: targetURL) {
        let merged = Result { () throws(DeckError) in
            try DocumentMerge.merge(from: url, into: store, differentDocuments: true)
        }
        Fuzz.note("merge: \(merged.map { "\($0.insertedRecords) inserted, \($0.deletedRecords) deleted" })")
        // The sample merged in with the input as the common ancestor (read from a snapshot,
        // upgraded and migrated there; trusted, so it may delete, but never corrupt).
        let withAncestor = Result { () throws(DeckError) in
            try DocumentMerge.merge(from: sample, into: store, differentDocuments: true, ancestor: url)
        }
        Fuzz.note("merge with the input as ancestor: \(withAncestor.map { "\($0.deletedRecords) deleted" })")
        Fuzz.write(Fuzz.data(bytes, size), to: target + "/" + copyName)
        _ = try? DocumentMerge.mergeConflictCopies(into: store)
        try? store.close()
        if let after = try? PackageVerifier.verify(at: targetURL, options: Fuzz.verifyOptions), !after.isValid
        {
            fatalError("a merge left the copy merged into corrupt: \(after.findings)")
        }
    }
    let report = try? PackageVerifier.verify(at: url, options: Fuzz.verifyOptions)
    Fuzz.note(
        "verify: \(report.map { $0.isValid ? "valid" : "corrupt: \($0.findings.map(\.code))" } ?? "error")")
    _ = try? PackageVerifier.verify(at: url, options: PackageVerifier.Options(quick: true, threads: 1))
    Fuzz.removeTree(work)
    return 0
}

#if DECK_LIBFUZZER
    /// libFuzzer's `main` (see ``Fuzz/runLibFuzzer(_:_:_:)``).
    @_cdecl("FuzzStore_main")
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
