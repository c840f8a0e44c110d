// deck-crashtest: the child process of the kill-mid-save and concurrency tests.
//
//     deck-crashtest PACKAGE SEED            write forever
//     deck-crashtest PACKAGE SEED --read N   check N snapshots, then exit
//     deck-crashtest PACKAGE SEED --upgrade  open for writing (which upgrades a version 1 package),
//                                            print "upgraded", close
//     deck-crashtest DIRECTORY SEED --create-race
//                                            for each line "go N" on standard input, open or create
//                                            DIRECTORY/race-N.deck with a ModelContainer of
//                                            `RaceNote` and print "opened N", "locked N" or
//                                            "failed N: ERROR" (the parent does the same at once)
//     deck-crashtest PACKAGE SEED --migrate SCHEMA.json
//                                            migrate to the schema in SCHEMA.json (no plan), print
//                                            "migrated VERSION"
//
// Writing: opens PACKAGE (made by the parent with the tests' `crashSchema`) and works forever
// in batches: inserts cards with data of random sizes (most above the blob threshold), updates
// and deletes some, inserts one `Commit` record numbered by the batch, records the card count
// and batch in the single `Stats` record, and saves. After each save it prints "committed N",
// so the parent knows which batches must survive a SIGKILL.
//
// Reading: opens PACKAGE read-only and, N times, checks inside one snapshot that `Stats` agrees
// with what is stored (card count, newest commit). A reader that could see a half-done batch
// would find them disagreeing. Prints "checked N snapshots" or the disagreement (exit 1).

import DeckKit
import DeckTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

func run() throws {
    guard CommandLine.arguments.count > 1 else {
        FileHandle.standardError.write(Data("usage: deck-crashtest PACKAGE SEED\n".utf8))
        exit(64)
    }
    // Every random choice (sizes, bytes, victims) follows from SEED, so a run replays.
    let seedText = CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : "1"
    guard let seed = TestSeed.parse(seedText) else {
        FileHandle.standardError.write(
            Data("deck-crashtest: SEED must be an unsigned integer, not \(seedText)\n".utf8))
        exit(64)
    }
    var generator = SeededGenerator(seed: seed)
    let url = URL(fileURLWithPath: CommandLine.arguments[1])
    if CommandLine.arguments.count > 4, CommandLine.arguments[3] == "--read" {
        try read(url, checks: Int(CommandLine.arguments[4]) ?? 100)
        return
    }
    if CommandLine.arguments.count > 3, CommandLine.arguments[3] == "--create-race" {
        createRace(in: url)
        return
    }
    if CommandLine.arguments.count > 3, CommandLine.arguments[3] == "--upgrade" {
        let store = try PackageStore.open(at: url, mode: .readWrite)
        let line = Array("upgraded \(store.storeFormatVersion)\n".utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        try store.close()
        return
    }
    if CommandLine.arguments.count > 4, CommandLine.arguments[3] == "--migrate" {
        let schemaURL = URL(fileURLWithPath: CommandLine.arguments[4])
        let schema = try StoreSchema(json: try Data(contentsOf: schemaURL), source: schemaURL.path)
        let report = try PackageStore.migrate(at: url, to: schema)
        let line = Array("migrated \(report.toVersion)\n".utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        return
    }
    let store = try PackageStore.open(at: url, mode: .readWrite)
    let newest = try store.read {
        try $0.fetch(RecordQuery("Commit", sort: [SortKey("sequence", ascending: false)], limit: 1))
    }
    var batch: Int64 = if case .integer(let n)? = newest.first?["sequence"] { n } else { 0 }
    while true {
        batch += 1
        try store.write { document in try writeBatch(batch, on: document, using: &generator) }
        let line = Array("committed \(batch)\n".utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        // Now and then the other operations that write: gc, export, import. A kill during any
        // of them must leave the document, and any archive or imported package, whole.
        if batch % 5 == 0 { _ = try store.collectGarbage() }
        if batch % 7 == 0 {
            let archive = url.deletingLastPathComponent().appendingPathComponent("export.zip")
            try DeckDocument.export(at: url, to: archive, overwrite: true)
            let imported = url.deletingLastPathComponent().appendingPathComponent("imported-\(batch).deck")
            try DeckDocument.importArchive(at: archive, to: imported)
            // Out of the way atomically first, so a kill mid-removal leaves no partial "imported-".
            let trash = url.deletingLastPathComponent().appendingPathComponent(".trash-\(batch)")
            try FileManager.default.moveItem(at: imported, to: trash)
            try FileManager.default.removeItem(at: trash)
        }
    }
}

/// One batch, in one transaction: cards with data of random sizes inserted, some deleted, one
/// updated, a `Commit` numbered by the batch, and the `Stats` record.
func writeBatch(_ batch: Int64, on document: StoreTransaction, using generator: inout SeededGenerator) throws
{
    let inserts = Int.random(in: 1...6, using: &generator)
    for _ in 0..<inserts {
        var bytes = [UInt8](repeating: 0, count: Int.random(in: 100...300_000, using: &generator))
        for i in stride(from: 0, to: bytes.count, by: 8) {
            bytes[i] = UInt8.random(in: 0...255, using: &generator)
        }
        try document.insert(
            "Card",
            ["front": .string("card \(batch)"), "image": .data(Data(bytes)), "batch": .integer(batch)])
    }
    let ids = try document.fetchIDs(RecordQuery("Card"))
    // Keep the document small (about 40 cards) so that a long run verifies quickly.
    var deleted: Set<Int64> = []
    for _ in 0..<max(ids.count > 20 ? 1 : 0, ids.count - 40) {
        if let victim = ids.randomElement(using: &generator) {
            if (try? document.delete("Card", id: victim)) != nil { deleted.insert(victim) }
        }
    }
    // A card the loop above deleted is gone: update one that is still there.
    if let target = ids.filter({ !deleted.contains($0) }).randomElement(using: &generator) {
        try document.update("Card", id: target, ["front": .string("updated in \(batch)")])
    }
    try document.insert("Commit", ["sequence": .integer(batch)])
    let stats: [String: Value] = [
        "key": .integer(1), "cards": .integer(Int64(try document.count(RecordQuery("Card")))),
        "sequence": .integer(batch),
    ]
    try document.upsert("Stats", stats)
}

/// The model of the create race (the parent's test declares the same).
final class RaceNote: ModelObject {
    @DeckKit.Attribute var title = ""
    required init() {}
}

/// The child's side of the create race: one container per "go N" line, kept until the next.
func createRace(in directory: URL) {
    var container: ModelContainer?
    while let line = readLine() {
        guard line.hasPrefix("go ") else { continue }
        let round = line.dropFirst(3)
        container = nil
        let outcome: String
        do {
            container = try ModelContainer(
                for: RaceNote.self,
                configurations: ModelConfiguration(
                    url: directory.appendingPathComponent("race-\(round).deck")))
            outcome = "opened \(round)"
        } catch .locked {
            outcome = "locked \(round)"
        } catch {
            outcome = "failed \(round): \(error)"
        }
        let text = Array((outcome + "\n").utf8)
        _ = text.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    }
    _ = container
}

func integer(_ value: Value?) -> Int64 {
    if case .integer(let n)? = value { n } else { -1 }
}

func read(_ url: URL, checks: Int) throws {
    let store = try PackageStore.open(at: url, mode: .readOnly)
    for check in 0..<checks {
        try store.read { document in
            guard let stats = try document.fetch(RecordQuery("Stats")).first else { return }
            let cards = Int64(try document.count(RecordQuery("Card")))
            let newest = try document.fetch(
                RecordQuery("Commit", sort: [SortKey("sequence", ascending: false)], limit: 1))
            let sequence = integer(newest.first?["sequence"])
            if cards != integer(stats["cards"]) || sequence != integer(stats["sequence"]) {
                let message =
                    "snapshot \(check): stats say \(integer(stats["cards"])) cards at batch "
                    + "\(integer(stats["sequence"])), store has \(cards) cards at batch \(sequence)\n"
                FileHandle.standardError.write(Data(message.utf8))
                exit(1)
            }
        }
    }
    try store.close()
    print("checked \(checks) snapshots")
}

do {
    try run()
} catch {
    FileHandle.standardError.write(Data("deck-crashtest: \(error)\n".utf8))
    exit(1)
}
