// DeckBenchmarks: Deck's speed targets, each measured as a ratio against a baseline run in the
// same process and moment (raw SQLite C API, cp + sync, openssl dgst), so a noisy machine
// moves both sides alike. One warm-up, then N timed runs; medians are reported.
//
//     swift run -c release DeckBenchmarks [--runs N] [--filter NAME] [--scale F]
//
// Scripts/benchmark builds in release mode and runs everything.

import CSQLite
import DeckKit
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

struct Options {
    var runs = 5
    var filter: String?
    var scale = 1.0
    var rssGiB = 0
    var sparseBlobs = false
    /// Leave the work directory (its inputs and outputs) for a profiler run of one phase.
    var keep = false
    var workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "deck-bench-\(getpid())"
    ).path

    init() {
        var args = CommandLine.arguments.dropFirst().makeIterator()
        while let arg = args.next() {
            switch arg {
            case "--runs": runs = Int(args.next() ?? "") ?? runs
            case "--filter": filter = args.next()
            case "--scale": scale = Double(args.next() ?? "") ?? scale
            case "--dir": workDirectory = args.next() ?? workDirectory
            case "--rss-gib": rssGiB = Int(args.next() ?? "") ?? rssGiB
            case "--sparse-blobs": sparseBlobs = true
            case "--keep": keep = true
            default:
                print(
                    "usage: DeckBenchmarks [--runs N] [--filter NAME] [--scale F] [--dir DIR] [--rss-gib N] [--keep]"
                )
                exit(64)
            }
        }
    }
}

let options = Options()
#if DEBUG
    print("WARNING: DeckBenchmarks was built in DEBUG mode; figures are meaningless. Use -c release.")
#endif

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

func shell(_ command: String) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    do {
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    } catch {
        return -1
    }
}

func fresh(_ name: String) -> String {
    let path = options.workDirectory + "/" + name
    try? FileManager.default.removeItem(atPath: path)
    return path
}

/// Runs `deck` and `baseline` alternately (warm-up first) and prints medians and the ratio
/// baseline/deck (above 1: Deck is faster).
/// Whether the benchmark called `name` runs (`--filter`).
func selected(_ name: String) -> Bool { options.filter.map { name.contains($0) } ?? true }

func compare(
    _ name: String, target: String, setup: () throws -> Void = {}, deck: () throws -> Void,
    baseline: () throws -> Void
) rethrows {
    guard selected(name) else { return }
    var deckTimes: [Double] = []
    var baseTimes: [Double] = []
    for run in 0...options.runs {
        try setup()
        // Start each pair with nothing dirty in the page cache, so neither side pays for the
        // write-back of what an earlier benchmark (or setup) wrote.
        _ = shell("sync")
        let t0 = now()
        try baseline()
        let t1 = now()
        try deck()
        let t2 = now()
        if run > 0 {
            baseTimes.append(t1 - t0)
            deckTimes.append(t2 - t1)
        }
    }
    let ratio = median(baseTimes) / median(deckTimes)
    print(
        "\(name.padding(toLength: 34, withPad: " ", startingAt: 0)) deck \(String(format: "%8.3f", median(deckTimes))) s"
            + "  baseline \(String(format: "%8.3f", median(baseTimes))) s  ratio \(String(format: "%5.2f", ratio))×"
            + "  (target \(target))")
}

try FileManager.default.createDirectory(atPath: options.workDirectory, withIntermediateDirectories: true)
defer { if !options.keep { try? FileManager.default.removeItem(atPath: options.workDirectory) } }

let rowCount = Int(100_000 * options.scale)

/// Inserts the benchmark's rows with the raw C API into a new store at `path`: the table Deck
/// makes, with a unique index on `front` when `uniqueFront`.
func insertRawRows(at path: String, uniqueFront: Bool) {
    var db: OpaquePointer?
    sqlite3_open(path, &db)
    sqlite3_exec(db, "PRAGMA journal_mode=WAL", nil, nil, nil)
    sqlite3_exec(
        db,
        // The table Deck makes (format 2): keys never reused, a random global id per row.
        "CREATE TABLE Row(_pk INTEGER PRIMARY KEY AUTOINCREMENT, _gid BLOB NOT NULL CHECK (length(_gid) = 16), "
            + "_entity TEXT NOT NULL, front TEXT NOT NULL, "
            + "back TEXT NOT NULL, n INTEGER NOT NULL, created REAL NOT NULL) STRICT; "
            + "CREATE UNIQUE INDEX Row_gid ON Row(_gid)"
            + (uniqueFront ? "; CREATE UNIQUE INDEX Row_front ON Row(front)" : ""),
        nil, nil, nil)
    sqlite3_exec(db, "BEGIN", nil, nil, nil)
    var statement: OpaquePointer?
    sqlite3_prepare_v2(
        db,
        "INSERT INTO Row(_gid, _entity, front, back, n, created) VALUES (randomblob(16), ?, ?, ?, ?, ?)",
        -1, &statement, nil)
    let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    for i in 0..<rowCount {
        sqlite3_bind_text(statement, 1, "Row", -1, transient)
        sqlite3_bind_text(statement, 2, "front \(i)", -1, transient)
        sqlite3_bind_text(statement, 3, "back \(i)", -1, transient)
        sqlite3_bind_int64(statement, 4, Int64(i))
        sqlite3_bind_double(statement, 5, 1_800_000_000)
        sqlite3_step(statement)
        sqlite3_reset(statement)
    }
    sqlite3_finalize(statement)
    sqlite3_exec(db, "COMMIT", nil, nil, nil)
    sqlite3_close(db)
}

// 1. Generic insert of 100k rows in one transaction vs the raw C API with a prepared statement.
let rowSchema = StoreSchema(entities: [
    StoreSchema.Entity(
        "Row",
        attributes: [
            StoreSchema.Attribute("front", .string), StoreSchema.Attribute("back", .string),
            StoreSchema.Attribute("n", .integer),
            StoreSchema.Attribute("created", .date),
        ])
])
try compare(
    "insert \(rowCount) rows", target: "≥ 0.6×",
    deck: {
        let store = try PackageStore.create(
            at: URL(fileURLWithPath: fresh("insert.deck")), contentType: "org.deck.bench", schema: rowSchema)
        try store.write { document in
            let date = Date(timeIntervalSince1970: 1_800_000_000)
            for i in 0..<rowCount {
                try document.insert(
                    "Row",
                    [
                        "front": .string("front \(i)"), "back": .string("back \(i)"), "n": .integer(Int64(i)),
                        "created": .date(date),
                    ])
            }
        }
        try store.close()
    },
    baseline: { insertRawRows(at: fresh("raw.sqlite"), uniqueFront: false) })

// 1a. The same rows with `front` unique, so that each record's global id is made from its value
// (spec 6.10: a SHA-256 and a lookup among the records and tombstones): against the raw C API
// with the unique index, and against Deck given random ids (the cost of making them).
let uniqueRowSchema = StoreSchema(entities: [
    StoreSchema.Entity(
        "Row",
        attributes: [
            StoreSchema.Attribute("front", .string, options: [.unique]),
            StoreSchema.Attribute("back", .string),
            StoreSchema.Attribute("n", .integer), StoreSchema.Attribute("created", .date),
        ])
])
func insertUniqueRows(givingIDs: Bool) throws {
    let store = try PackageStore.create(
        at: URL(fileURLWithPath: fresh(givingIDs ? "given.deck" : "unique.deck")),
        contentType: "org.deck.bench",
        schema: uniqueRowSchema)
    try store.write { document in
        let date = Date(timeIntervalSince1970: 1_800_000_000)
        for i in 0..<rowCount {
            let values: [String: Value] = [
                "front": .string("front \(i)"), "back": .string("back \(i)"), "n": .integer(Int64(i)),
                "created": .date(date),
            ]
            if givingIDs {
                try document.insert("Row", values, globalID: UUID())
            } else {
                try document.insert("Row", values)
            }
        }
    }
    try store.close()
}
try compare(
    "insert \(rowCount) unique rows", target: "≥ 0.5×",
    deck: { try insertUniqueRows(givingIDs: false) },
    baseline: { insertRawRows(at: fresh("raw-unique.sqlite"), uniqueFront: true) })
try compare(
    "unique rows: ids made vs given", target: "≥ 0.7× (the ids cost ≤ 30%)",
    deck: { try insertUniqueRows(givingIDs: false) },
    baseline: { try insertUniqueRows(givingIDs: true) })

// 1c. Readers beside a writer: four reader threads fetching vs one (reads should scale with
// cores), and the writer's insert rate with the four readers running vs alone (≥ 0.8×). Each
// figure is a count over a fixed interval; medians of the runs.
if selected("readers and writer") {
    let package = options.workDirectory + "/concurrent.deck"
    try? FileManager.default.removeItem(atPath: package)
    let store = try PackageStore.create(
        at: URL(fileURLWithPath: package), contentType: "org.deck.bench", schema: rowSchema)
    try store.write { document in
        for i in 0..<rowCount {
            try document.insert(
                "Row",
                [
                    "front": .string("front \(i)"), "back": .string("back \(i)"), "n": .integer(Int64(i)),
                    "created": .date(Date(timeIntervalSince1970: 1_800_000_000)),
                ])
        }
    }
    let interval = 2.0
    let stop = Atomic<Bool>(false)
    /// Runs `readers` reader threads (and the writer if asked) for `interval`; returns
    /// (fetches of 200 rows, rows inserted).
    func round(readers: Int, writer: Bool) -> (reads: Int, writes: Int) {
        stop.store(false, ordering: .relaxed)
        let reads = Atomic<Int>(0)
        let writes = Atomic<Int>(0)
        let group = DispatchGroup()
        // Threads of their own: the global queue runs only as many busy blocks as there are cores.
        func spawn(_ body: @escaping @Sendable () -> Void) {
            group.enter()
            Thread {
                body()
                group.leave()
            }.start()
        }
        for r in 0..<readers {
            spawn {
                var offset = r * 997
                while !stop.load(ordering: .relaxed) {
                    offset = (offset + 7919) % max(1, rowCount - 200)
                    let rows =
                        (try? store.read { try $0.fetch(RecordQuery("Row", limit: 200, offset: offset)) })
                        ?? []
                    if rows.count == 200 { reads.add(1, ordering: .relaxed) }
                }
            }
        }
        if writer {
            spawn {
                var i = 0
                while !stop.load(ordering: .relaxed) {
                    do {
                        try store.write { document in
                            for _ in 0..<100 {
                                i += 1
                                try document.insert(
                                    "Row",
                                    [
                                        "front": .string("w \(i)"), "back": .string(""),
                                        "n": .integer(Int64(i)),
                                        "created": .date(Date(timeIntervalSince1970: 1_800_000_000)),
                                    ])
                            }
                        }
                    } catch {
                        print("writer: \(error)")
                        return
                    }
                    writes.add(100, ordering: .relaxed)
                }
            }
        }
        Thread.sleep(forTimeInterval: interval)
        stop.store(true, ordering: .relaxed)
        group.wait()
        return (reads.load(ordering: .relaxed), writes.load(ordering: .relaxed))
    }
    var one: [Double] = []
    var four: [Double] = []
    var solo: [Double] = []
    var beside: [Double] = []
    for _ in 0..<max(1, options.runs) {
        one.append(Double(round(readers: 1, writer: false).reads) / interval)
        four.append(Double(round(readers: 4, writer: false).reads) / interval)
        solo.append(Double(round(readers: 0, writer: true).writes) / interval)
        beside.append(Double(round(readers: 4, writer: true).writes) / interval)
    }
    try store.close()
    func figure(_ value: Double) -> String { String(format: "%9.0f", value) }
    print(
        "reads/s (200 rows) 1 reader \(figure(median(one)))  4 readers \(figure(median(four)))  "
            + "ratio \(String(format: "%5.2f", median(four) / median(one)))×  (\(ProcessInfo.processInfo.activeProcessorCount) cores)"
    )
    print(
        "writer rows/s alone \(figure(median(solo)))  beside 4 readers \(figure(median(beside)))  "
            + "ratio \(String(format: "%5.2f", median(beside) / median(solo)))×  (target ≥ 0.8×)")
}

// 1b. `deck query --json` over those rows vs `sqlite3 -json` on the same table (both processes).
let deckBinary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    .appendingPathComponent("deck").path
if selected("query --json \(rowCount) rows") {
    let package = options.workDirectory + "/insert.deck"
    if !FileManager.default.fileExists(atPath: package) {
        let store = try PackageStore.create(
            at: URL(fileURLWithPath: package), contentType: "org.deck.bench", schema: rowSchema)
        try store.write { document in
            for i in 0..<rowCount {
                try document.insert(
                    "Row",
                    [
                        "front": .string("front \(i)"), "back": .string("back \(i)"), "n": .integer(Int64(i)),
                        "created": .date(Date(timeIntervalSince1970: 1_800_000_000)),
                    ])
            }
        }
        try store.close()
    }
    try compare(
        "query --json \(rowCount) rows", target: "≥ 0.33×",
        deck: { _ = shell("'\(deckBinary)' query '\(package)' Row --json > /dev/null") },
        baseline: { _ = shell("sqlite3 -json '\(package)/store.sqlite' 'SELECT * FROM Row' > /dev/null") })
}

// 1c. A contains test on 100k rows: the Unicode-aware folding ([cd], the deck_match function)
// against the ASCII one ([c], SQLite's lower and instr), on ASCII text and on text where every
// row holds non-ASCII letters. "ratio" is the ASCII query's time over the Unicode one's.
for (label, accented) in [("ascii text", false), ("accented text", true)]
where selected("contains[cd] vs [c] \(rowCount) rows, \(label)") {
    let package = options.workDirectory + "/fold-\(accented).deck"
    let store = try PackageStore.create(
        at: URL(fileURLWithPath: package), contentType: "org.deck.bench", schema: rowSchema)
    try store.write { document in
        for i in 0..<rowCount {
            try document.insert(
                "Row",
                [
                    "front": .string(
                        accented ? "Crème brûlée n° \(i) à la café" : "Creme brulee no \(i) a la cafe"),
                    "back": .string("back \(i)"), "n": .integer(Int64(i)),
                    "created": .date(Date(timeIntervalSince1970: 1_800_000_000)),
                ])
        }
    }
    func count(_ folding: QueryExpression.TextComparison) throws {
        let matched = try store.read { reader in
            try reader.count(RecordQuery("Row", where: .property("front").contains("99 A LA", folding)))
        }
        precondition(matched > 0 || folding == .asciiCaseInsensitive || !accented)
    }
    try compare(
        "contains[cd] vs [c] \(rowCount) rows, \(label)", target: "(measured)",
        deck: { try count(.caseAndDiacriticInsensitive) }, baseline: { try count(.asciiCaseInsensitive) })
    try store.close()
}

// 2. Saving 2,000 external values of 256 KiB vs cp -r + sync of the same files.
let blobCount = Int(2_000 * options.scale)
let blobSize = 256 * 1024
let blobSchema = StoreSchema(entities: [
    StoreSchema.Entity(
        "Item", attributes: [StoreSchema.Attribute("payload", .data, options: [.externalStorage])])
])
let sourceDirectory = options.workDirectory + "/source"
try FileManager.default.createDirectory(atPath: sourceDirectory, withIntermediateDirectories: true)
var payloads: [Data] = []
for i in 0..<blobCount where selected("save \(blobCount) × 256 KiB blobs") {
    var bytes = [UInt8](repeating: UInt8(i & 0xff), count: blobSize)
    withUnsafeBytes(of: UInt64(i)) { for (j, b) in $0.enumerated() { bytes[j] = b } }
    let data = Data(bytes)
    payloads.append(data)
    _ = FileManager.default.createFile(atPath: sourceDirectory + "/\(i).bin", contents: data)
}
try compare(
    "save \(blobCount) × 256 KiB blobs", target: "≥ 0.7×",
    deck: {
        let store = try PackageStore.create(
            at: URL(fileURLWithPath: fresh("blobs.deck")), contentType: "org.deck.bench", schema: blobSchema)
        try store.write { document in
            for payload in payloads { try document.insert("Item", ["payload": .data(payload)]) }
        }
        try store.close()
    },
    baseline: {
        _ = shell("cp -r '\(sourceDirectory)' '\(fresh("copy"))' && sync")
    })
payloads.removeAll()

// 3. verify of a ~500 MB package vs openssl dgst -sha256 over the same blob bytes.
let verifyBlobs = Int(500 * options.scale)
let verifyPackage = fresh("verify.deck")
if selected("verify \(verifyBlobs) MiB package") {
    let store = try PackageStore.create(
        at: URL(fileURLWithPath: verifyPackage), contentType: "org.deck.bench", schema: blobSchema)
    try store.write { document in
        for i in 0..<verifyBlobs {
            var bytes = [UInt8](repeating: 0, count: 1 << 20)
            for j in stride(from: 0, to: bytes.count, by: 4096) {
                bytes[j] = UInt8(truncatingIfNeeded: i &* 31 &+ j)
            }
            withUnsafeBytes(of: UInt64(i)) { for (j, b) in $0.enumerated() { bytes[j] = b } }
            try document.insert("Item", ["payload": .data(Data(bytes))])
        }
    }
    try store.close()
}
try compare(
    "verify \(verifyBlobs) MiB package", target: "≥ 1.0×",
    deck: {
        let report = try PackageVerifier.verify(at: URL(fileURLWithPath: verifyPackage))
        precondition(report.isValid && report.blobsChecked == verifyBlobs)
    },
    baseline: {
        _ = shell("find '\(verifyPackage)/blobs' -type f -print0 | xargs -0 openssl dgst -sha256 > /dev/null")
    })

// 4. open + close of a package with 1M rows and 10k blobs vs an empty package.
let bigRows = Int(1_000_000 * options.scale)
let bigBlobs = Int(10_000 * options.scale)
let bigPackage = fresh("big.deck")
let emptyPackage = fresh("empty.deck")
if selected("open + close (1M rows, 10k blobs)") {
    let smallBlobSchema = StoreSchema(entities: [
        StoreSchema.Entity(
            "Row",
            attributes: [
                StoreSchema.Attribute("front", .string), StoreSchema.Attribute("n", .integer),
                StoreSchema.Attribute(
                    "payload", .data, isOptional: true, options: [.externalStorage], externalThreshold: 1_024),
            ])
    ])
    try PackageStore.create(
        at: URL(fileURLWithPath: emptyPackage), contentType: "org.deck.bench", schema: smallBlobSchema
    )
    .close()
    let store = try PackageStore.create(
        at: URL(fileURLWithPath: bigPackage), contentType: "org.deck.bench", schema: smallBlobSchema)
    try store.write { document in
        for i in 0..<bigRows {
            var values: [String: Value] = ["front": .string("row \(i)"), "n": .integer(Int64(i))]
            if i < bigBlobs {
                values["payload"] = .data(Data(repeating: UInt8(i & 0xff), count: 2_048) + Data("\(i)".utf8))
            }
            try document.insert("Row", values)
        }
    }
    try store.close()
}
try compare(
    "open + close (1M rows, 10k blobs)", target: "≥ 0.5× of empty",
    deck: {
        for _ in 0..<20 {
            try PackageStore.open(at: URL(fileURLWithPath: bigPackage), mode: .readWrite).close()
        }
    },
    baseline: {
        for _ in 0..<20 {
            try PackageStore.open(at: URL(fileURLWithPath: emptyPackage), mode: .readWrite).close()
        }
    })

// 4b. Open of a document whose schema is at the entity limit (spec 5.9: 1,000 entities, 9,000
// store objects with the version bookkeeping) vs the raw C API opening its store and reading its
// schema. Deck also compares every object with those the schema derives (spec 4.1), which SQLite
// makes in memory for it.
let limitPackage = fresh("entity-limit.deck")
if selected("open at the entity limit") {
    let schema = StoreSchema(
        entities: (1...StoreSchema.Limits.entities).map {
            StoreSchema.Entity("E\($0)", attributes: [StoreSchema.Attribute("a", .string)])
        })
    try PackageStore.create(
        at: URL(fileURLWithPath: limitPackage), contentType: "org.deck.bench", schema: schema
    ).close()
}
try compare(
    "open at the entity limit", target: "none (watch)",
    deck: { try PackageStore.open(at: URL(fileURLWithPath: limitPackage), mode: .readOnly).close() },
    baseline: {
        var db: OpaquePointer?
        guard sqlite3_open_v2(limitPackage + "/store.sqlite", &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK,
            sqlite3_exec(db, "SELECT count(*) FROM sqlite_schema", nil, nil, nil) == SQLITE_OK
        else { fatalError("the raw C API could not read the store at the entity limit") }
        sqlite3_close(db)
    })

// 5–6. Export a 1 GiB document to zip vs bsdtar (blobs stored either way), and import it vs
// bsdtar -x (Deck also checks every blob's digest and verifies the store before the rename).
let shareBlobs = Int(64 * options.scale)
let sharePackage = fresh("share.deck")
if selected("export 1 GiB to zip") || selected("import 1 GiB zip") {
    let store = try PackageStore.create(
        at: URL(fileURLWithPath: sharePackage), contentType: "org.deck.bench", schema: blobSchema)
    try store.write { document in
        // Blob files are usually media, so the bytes are incompressible (from a fixed-seed
        // generator: every run archives the same data). `--sparse-blobs` uses mostly-zero blobs.
        let chunk = 16 << 20
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for i in 0..<shareBlobs {
            var words = [UInt64](repeating: 0, count: chunk / 8)
            if options.sparseBlobs {
                for j in stride(from: 0, to: words.count, by: 64) { words[j] = UInt64(i &* 131 &+ j) }
            } else {
                for j in words.indices {
                    state &+= 0x9E37_79B9_7F4A_7C15
                    var z = state
                    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                    words[j] = z ^ (z >> 31)
                }
            }
            words[0] = UInt64(i)
            try document.insert("Item", ["payload": .data(words.withUnsafeBytes { Data($0) })])
        }
    }
    try store.close()
}
try compare(
    "export 1 GiB to zip", target: "≥ 0.9×",
    deck: {
        try DeckDocument.export(
            at: URL(fileURLWithPath: sharePackage), to: URL(fileURLWithPath: fresh("e.zip")))
    },
    baseline: {
        // Deck's export makes the archive durable (fsync) before it appears; so does the baseline.
        _ = shell(
            "cd '\(sharePackage)' && bsdtar --format zip --options zip:compression=store -cf '\(fresh("b.zip"))' "
                + "manifest.json store.sqlite blobs && sync")
    })
try compare(
    "import 1 GiB zip", target: "≥ 0.8×",
    setup: {
        if !FileManager.default.fileExists(atPath: options.workDirectory + "/e.zip") {
            try DeckDocument.export(
                at: URL(fileURLWithPath: sharePackage), to: URL(fileURLWithPath: fresh("e.zip")))
        }
        _ = fresh("i.deck")
        _ = shell("rm -rf '\(fresh("x"))' && mkdir '\(options.workDirectory)/x'")
    },
    deck: {
        try DeckDocument.importArchive(
            at: URL(fileURLWithPath: options.workDirectory + "/e.zip"),
            to: URL(fileURLWithPath: fresh("i.deck")))
    },
    baseline: {
        _ = shell("bsdtar -xf '\(options.workDirectory)/e.zip' -C '\(options.workDirectory)/x' && sync")
    })

// 7. Peak memory of `deck export` and `deck import` on a large document (--rss-gib, default 0:
// skipped). Runs the deck binary next to this one under /usr/bin/time.
if options.rssGiB > 0 {
    let big = fresh("rss.deck")
    let source = fresh("rss.bin")
    let gib = options.rssGiB
    _ = shell("head -c \(gib)G /dev/urandom > '\(source)'")
    let store = try PackageStore.create(
        at: URL(fileURLWithPath: big), contentType: "org.deck.bench", schema: blobSchema)
    try store.write { document in
        try document.insert("Item", ["payload": .file(URL(fileURLWithPath: source))])
    }
    try store.close()
    try? FileManager.default.removeItem(atPath: source)
    let deckBinary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("deck").path
    for (label, command) in [
        ("export", "'\(deckBinary)' export '\(big)' -o '\(fresh("rss.zip"))'"),
        ("import", "'\(deckBinary)' import '\(options.workDirectory)/rss.zip' -o '\(fresh("rss2.deck"))'"),
    ] {
        let report = fresh("rss-\(label).txt")
        let t0 = now()
        _ = shell("/usr/bin/time -f %M -o '\(report)' \(command) > /dev/null")
        let kib =
            Int(
                (try? String(contentsOfFile: report, encoding: .utf8))?.trimmingCharacters(
                    in: .whitespacesAndNewlines) ?? "") ?? -1
        print(
            "deck \(label) of a \(gib) GiB document: peak RSS \(kib / 1024) MiB (target < 64 MiB), \(String(format: "%.1f", now() - t0)) s"
        )
    }
}

// Upgrading a format 1 package of 1M rows to the current format (open for writing, which upgrades, and
// close) vs the same table rewrite as raw SQL through the C API, on copies of one package.
let upgradeRows = Int(1_000_000 * options.scale)
if selected("upgrade v1 → v\(PackageStore.formatVersion), \(upgradeRows) rows") {
    // A current package gives the schema text and the table's SQL; a format 1 package is then
    // written by hand as version 1 lays it out (spec: section 12.3).
    let template = fresh("template.deck")
    try PackageStore.create(
        at: URL(fileURLWithPath: template), contentType: "org.deck.bench", schema: rowSchema
    )
    .close()
    var db: OpaquePointer?
    func exec(_ sql: String) {
        var message: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(db, sql, nil, nil, &message) != SQLITE_OK {
            print("upgrade benchmark: \(message.map { String(cString: $0) } ?? "?") in \(sql.prefix(80))")
            exit(1)
        }
    }
    func text(_ sql: String) -> String {
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        return sqlite3_step(statement) == SQLITE_ROW ? String(cString: sqlite3_column_text(statement, 0)) : ""
    }
    sqlite3_open(template + "/store.sqlite", &db)
    let schemaText = text("SELECT value FROM deck_meta WHERE key = 'schema'")
    let tableV2 = text("SELECT sql FROM sqlite_schema WHERE name = 'Row'")
    sqlite3_close(db)
    let tableV1 = tableV2.replacingOccurrences(
        of: "_pk INTEGER PRIMARY KEY AUTOINCREMENT,\n    _gid BLOB NOT NULL CHECK (length(_gid) = 16),",
        with: "_pk INTEGER PRIMARY KEY,")
    let v1 = fresh("v1.deck")
    try FileManager.default.createDirectory(atPath: v1 + "/blobs", withIntermediateDirectories: true)
    // The manifest as version 1 wrote it (the fixtures in Tests/Fixtures/v1 have the same fields),
    // not the template's edited: what a current manifest holds changes with every format version.
    let manifest = """
        {
          "contentType" : "org.deck.bench",
          "format" : "org.deck.package",
          "formatVersion" : 1,
          "generator" : "DeckKit 0.1.0",
          "minimumReaderVersion" : 1
        }
        """
    try manifest.write(toFile: v1 + "/manifest.json", atomically: true, encoding: .utf8)
    sqlite3_open(v1 + "/store.sqlite", &db)
    let quotedSchema = schemaText.replacingOccurrences(of: "'", with: "''")
    exec(
        """
        PRAGMA application_id = 1145389899; PRAGMA user_version = 1; BEGIN;
        CREATE TABLE deck_meta(key TEXT PRIMARY KEY NOT NULL, value ANY) STRICT, WITHOUT ROWID;
        CREATE TABLE deck_blob(
            digest TEXT PRIMARY KEY NOT NULL CHECK (length(digest) = 64 AND digest NOT GLOB '*[^0-9a-f]*'),
            size INTEGER NOT NULL CHECK (size >= 0),
            refs INTEGER NOT NULL DEFAULT 0 CHECK (refs >= 0)
        ) STRICT, WITHOUT ROWID;
        INSERT INTO deck_meta VALUES ('format_version', 1), ('content_type', 'org.deck.bench'),
            ('schema', '\(quotedSchema)'), ('schema_version', '1.0.0'),
            ('created', '2026-12-01T00:00:00.000Z'), ('modified', '2026-12-01T00:00:00.000Z');
        \(tableV1);
        WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < \(upgradeRows))
        INSERT INTO Row(_entity, front, back, n, created)
            SELECT 'Row', 'front ' || n, 'back ' || n, n, 1800000000.0 FROM i;
        COMMIT;
        """)
    sqlite3_close(db)
    // The same rewrite, by hand: what the upgrade does to the one entity table and deck_meta
    // (the format 3 bookkeeping it also adds, two keys and an empty table, is left out).
    let rewrite = """
        PRAGMA foreign_keys = OFF; PRAGMA legacy_alter_table = ON; BEGIN IMMEDIATE;
        ALTER TABLE "Row" RENAME TO deck_upgrade_previous;
        \(tableV2);
        INSERT INTO "Row"(_pk, _gid, _entity, "front", "back", "n", "created")
            SELECT _pk, randomblob(16), _entity, "front", "back", "n", "created"
            FROM deck_upgrade_previous ORDER BY _pk;
        DROP TABLE deck_upgrade_previous;
        CREATE UNIQUE INDEX "Row._gid.unique" ON "Row"(_gid);
        INSERT INTO deck_meta VALUES ('document_id', '00000000-0000-4000-8000-000000000000');
        UPDATE deck_meta SET value = 2 WHERE key = 'format_version';
        PRAGMA user_version = 2;
        COMMIT;
        """
    try compare(
        "upgrade v1 → v\(PackageStore.formatVersion), \(upgradeRows) rows", target: "≥ 0.5×",
        setup: {
            for name in ["upgrade-deck.deck", "upgrade-raw.deck"] {
                _ = shell(
                    "rm -rf '\(options.workDirectory)/\(name)' && cp -r '\(v1)' '\(options.workDirectory)/\(name)'"
                )
            }
        },
        deck: {
            let store = try PackageStore.open(
                at: URL(fileURLWithPath: options.workDirectory + "/upgrade-deck.deck"))
            precondition(
                store.storeFormatVersion == PackageStore.formatVersion,
                "upgraded to \(store.storeFormatVersion)")
            try store.close()
        },
        baseline: {
            sqlite3_open(options.workDirectory + "/upgrade-raw.deck/store.sqlite", &db)
            exec(rewrite)
            sqlite3_close(db)
        })
}

try runModelBenchmarks()
try runMigrationBenchmarks()
try runCoreDataImportBenchmarks()
try runDiffBenchmarks()
try runMergeBenchmarks()
try runLogBenchmarks()
try runFullLogBenchmark()

var usage = rusage()
getrusage(RUSAGE_SELF.rawValue, &usage)
print("peak RSS of the benchmark process: \(usage.ru_maxrss / 1024) MiB")
