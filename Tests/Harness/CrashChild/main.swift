// deck-crashtest: the child process of the kill-mid-save tests and of Scripts/crash-soak.
//
//     deck-crashtest PACKAGE SEED
//
// Opens PACKAGE (made by the parent with `CrashSchema`) and works forever in batches: inserts
// cards with data of random sizes (most above the blob threshold), updates and deletes some,
// inserts one `Commit` record numbered by the batch, and saves. After each save it prints
// "committed N" and flushes, so the parent knows which batches must survive a SIGKILL.

import DeckKit
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func run() throws {
    guard CommandLine.arguments.count > 1 else {
        FileHandle.standardError.write(Data("usage: deck-crashtest PACKAGE SEED\n".utf8))
        exit(64)
    }
    var generator = SplitMix(
        seed: UInt64(CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : "1") ?? 1)
    let url = URL(fileURLWithPath: CommandLine.arguments[1])
    let document = try DocumentPackage.open(at: url, mode: .readWrite)
    let newest = try document.fetch(Query("Commit", sort: [SortKey("sequence", ascending: false)], limit: 1))
    var batch: Int64 = if case .integer(let n)? = newest.first?["sequence"] { n } else { 0 }
    while true {
        batch += 1
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
        let ids = try document.fetchIDs(Query("Card"))
        if ids.count > 20, let victim = ids.randomElement(using: &generator) {
            try document.delete("Card", id: victim)
        }
        if let target = ids.randomElement(using: &generator) {
            try document.update("Card", id: target, ["front": .string("updated in \(batch)")])
        }
        try document.insert("Commit", ["sequence": .integer(batch)])
        try document.save()
        let line = Array("committed \(batch)\n".utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    }
}

do {
    try run()
} catch {
    FileHandle.standardError.write(Data("deck-crashtest: \(error)\n".utf8))
    exit(1)
}
