import CSQLite
import DeckKit
import Foundation

/// The peak resident set size since the last ``resetPeakResident()`` (`VmHWM`), in bytes.
func peakResidentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kib * 1024
}

/// Starts a new peak for ``peakResidentBytes()`` (Linux: writing 5 to `/proc/self/clear_refs`).
func resetPeakResident() {
    try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
}

/// Schema evolution's targets (issue 11): adding an optional attribute costs about the same for a
/// million records as for a thousand (within 2×); a table rebuild of a million records runs at
/// ≥ 0.5× the raw SQL of the same rebuild; peak RSS stays under 64 MiB.
func runMigrationBenchmarks() throws {
    guard selected("migrate") else { return }
    let base = Date(timeIntervalSince1970: 1_800_000_000)
    let attributes = [
        StoreSchema.Attribute("front", .string), StoreSchema.Attribute("back", .string),
        StoreSchema.Attribute("n", .integer), StoreSchema.Attribute("created", .date),
    ]
    let v1 = StoreSchema(version: "1.0.0", entities: [StoreSchema.Entity("Card", attributes: attributes)])
    let large = Int(1_000_000 * options.scale)

    /// A package of `rows` cards at v1, made once per size and copied for each run.
    func template(rows: Int) throws -> URL {
        let url = URL(fileURLWithPath: fresh("migrate-template-\(rows).deck"))
        let store = try PackageStore.create(at: url, contentType: "org.deck.bench", schema: v1)
        try store.write { transaction in
            for i in 0..<rows {
                try transaction.insert(
                    "Card",
                    [
                        "front": .string("front \(i)"), "back": .string("back \(i)"),
                        "n": .integer(Int64(i % 7)),
                        "created": .date(base.addingTimeInterval(Double(i))),
                    ])
            }
        }
        try store.close()
        return url
    }
    func copy(_ source: URL, to name: String) throws -> URL {
        let url = URL(fileURLWithPath: options.workDirectory + "/" + name)
        try? FileManager.default.removeItem(at: url)
        try FileManager.default.copyItem(at: source, to: url)
        return url
    }
    func median(of runs: Int, _ body: () throws -> Double) rethrows -> Double {
        var times: [Double] = []
        for _ in 0...runs { times.append(try body()) }
        return times.dropFirst().sorted()[runs / 2]
    }

    // 1. An optional attribute added: ALTER TABLE … ADD COLUMN, whatever the number of records.
    var v2 = v1
    v2.version = "2.0.0"
    v2.entities[0].attributes.append(StoreSchema.Attribute("note", .string, isOptional: true))
    let small = try template(rows: 1000)
    let big = try template(rows: large)
    func addAttribute(_ template: URL) throws -> Double {
        let url = try copy(template, to: "migrate-add.deck")
        _ = shell("sync")
        let start = now()
        let report = try PackageStore.migrate(at: url, to: v2)
        precondition(report.alteredTables == ["Card"], "expected ADD COLUMN, got \(report)")
        return now() - start
    }
    let smallTime = try median(of: options.runs) { try addAttribute(small) }
    resetPeakResident()
    let before = peakResidentBytes()
    let bigTime = try median(of: options.runs) { try addAttribute(big) }
    let addPeak = peakResidentBytes()
    print(
        "migrate: add an optional attribute   1k \(String(format: "%.3f", smallTime)) s  \(large / 1000)k "
            + "\(String(format: "%.3f", bigTime)) s  ratio \(String(format: "%5.2f", bigTime / smallTime))×  "
            + "(target ≤ 2×); peak RSS \(addPeak / 1_048_576) MiB (\(before / 1_048_576) MiB at the start)")

    // 2. A rename (through originalName): the table is rebuilt, against the same rebuild in SQL.
    var v3 = v1
    v3.version = "3.0.0"
    v3.entities[0].attributes[1] = StoreSchema.Attribute("answer", .string, originalName: "back")
    // The rebuilt table's SQL, its indexes and triggers, as the migration leaves them.
    let probe = try copy(big, to: "migrate-probe.deck")
    _ = try PackageStore.migrate(at: probe, to: v3)
    var db: OpaquePointer?
    sqlite3_open_v2(probe.path + "/store.sqlite", &db, SQLITE_OPEN_READONLY, nil)
    var objects: [(type: String, name: String, sql: String)] = []
    var statement: OpaquePointer?
    sqlite3_prepare_v2(
        db, "SELECT type, name, sql FROM sqlite_schema WHERE tbl_name = 'Card' AND sql IS NOT NULL", -1,
        &statement, nil)
    while sqlite3_step(statement) == SQLITE_ROW {
        objects.append(
            (
                String(cString: sqlite3_column_text(statement, 0)),
                String(cString: sqlite3_column_text(statement, 1)),
                String(cString: sqlite3_column_text(statement, 2))
            ))
    }
    sqlite3_finalize(statement)
    sqlite3_close(db)
    guard let table = objects.first(where: { $0.type == "table" }) else {
        fatalError("no Card table in \(probe)")
    }
    let others = objects.filter { $0.type != "table" }.map(\.sql)
    let columns = "_pk, _entity, _gid, front, back, n, created"
    let renamed = "_pk, _entity, _gid, front, answer, n, created"
    let newTable = table.sql.replacingOccurrences(
        of: "CREATE TABLE \"Card\"", with: "CREATE TABLE \"Card_new\""
    )
    .replacingOccurrences(of: "CREATE TABLE Card", with: "CREATE TABLE \"Card_new\"")
    precondition(newTable != table.sql, "could not rename the table in \(table.sql)")
    let rawRebuild =
        "PRAGMA foreign_keys = OFF; BEGIN IMMEDIATE; \(newTable); "
        + "INSERT INTO \"Card_new\"(\(renamed)) SELECT \(columns) FROM \"Card\"; DROP TABLE \"Card\"; "
        + "ALTER TABLE \"Card_new\" RENAME TO \"Card\"; " + others.map { $0 + "; " }.joined()
        + "PRAGMA foreign_key_check; COMMIT"
    try compare(
        "migrate: rebuild \(large / 1000)k rows", target: "≥ 0.5×",
        setup: {
            _ = try copy(big, to: "migrate-rebuild.deck")
            _ = try copy(big, to: "migrate-rebuild-raw.deck")
        },
        deck: {
            let report = try PackageStore.migrate(
                at: URL(fileURLWithPath: options.workDirectory + "/migrate-rebuild.deck"), to: v3)
            precondition(report.rebuiltTables == ["Card"], "expected a rebuild, got \(report)")
        },
        baseline: {
            var db: OpaquePointer?
            sqlite3_open(options.workDirectory + "/migrate-rebuild-raw.deck/store.sqlite", &db)
            let code = sqlite3_exec(db, rawRebuild, nil, nil, nil)
            precondition(code == SQLITE_OK, String(cString: sqlite3_errmsg(db)))
            sqlite3_close(db)
        })
    resetPeakResident()
    _ = try copy(big, to: "migrate-rebuild.deck")
    _ = try PackageStore.migrate(
        at: URL(fileURLWithPath: options.workDirectory + "/migrate-rebuild.deck"), to: v3)
    print("migrate: rebuild peak RSS \(peakResidentBytes() / 1_048_576) MiB (target: under 64 MiB)")
}
