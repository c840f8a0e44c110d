import CSQLite
import DeckCoreData
import DeckCoreDataTestSupport
import DeckKit
import Foundation

/// The Core Data importer's target (issue 24): a store of 100k rows with 1k external data files
/// imported at ≥ 0.5× a raw SQLite copy of the same rows (`INSERT … SELECT` into an attached
/// database) plus a copy of the files; peak RSS under 64 MiB.
func runCoreDataImportBenchmarks() throws {
    let name = "import core data"
    guard selected(name) else { return }
    let rows = Int(100_000 * options.scale)
    let externals = max(1, Int(1_000 * options.scale))
    let folders = max(1, rows / 1000)

    // A model of a handful of attribute types, a to-one relationship (with its to-many inverse)
    // and a binary attribute allowed in external storage.
    let model = CoreDataModel(entities: [
        CoreDataEntity(
            name: "Folder",
            attributes: [CoreDataAttribute(name: "name", type: .string)],
            relationships: [
                CoreDataRelationship(
                    name: "notes", destinationEntityName: "Note", inverseName: "folder", maxCount: 0)
            ]),
        CoreDataEntity(
            name: "Note",
            attributes: [
                CoreDataAttribute(
                    name: "attachment", type: .binaryData, allowsExternalBinaryDataStorage: true),
                CoreDataAttribute(
                    name: "count", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                CoreDataAttribute(name: "created", type: .date),
                CoreDataAttribute(name: "done", type: .boolean),
                CoreDataAttribute(name: "score", type: .double),
                CoreDataAttribute(name: "title", type: .string),
            ],
            relationships: [
                CoreDataRelationship(name: "folder", destinationEntityName: "Folder", inverseName: "notes")
            ]),
    ])
    let storeDirectory = fresh("coredata-store")
    try FileManager.default.createDirectory(atPath: storeDirectory, withIntermediateDirectories: true)
    let storePath = storeDirectory + "/Notes.sqlite"
    let externalDirectory = storeDirectory + "/.Notes_SUPPORT/_EXTERNAL_DATA"
    do {
        let database = try SyntheticStore.write(
            at: storePath,
            entities: [
                CoreDataStoreEntity(
                    number: 1, name: "Folder", parentNumber: 0, maximumPrimaryKey: Int64(folders)),
                CoreDataStoreEntity(number: 2, name: "Note", parentNumber: 0, maximumPrimaryKey: Int64(rows)),
            ],
            metadata: SyntheticStore.metadata(hashes: [:]), modelCache: ModelArchiveWriter.modelCache(model))
        try database.execute(
            "CREATE TABLE ZFOLDER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR )")
        try database.execute(
            """
            CREATE TABLE ZNOTE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCOUNT INTEGER,
            ZDONE INTEGER, ZFOLDER INTEGER, ZCREATED TIMESTAMP, ZSCORE FLOAT, ZTITLE VARCHAR, ZATTACHMENT BLOB )
            """)
        try database.execute("CREATE INDEX ZNOTE_ZFOLDER_INDEX ON ZNOTE (ZFOLDER)")
        try database.execute("BEGIN")
        try database.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(folders))
            INSERT INTO ZFOLDER SELECT i, 1, 1, 'folder ' || i FROM n
            """)
        // Every `stride`th note's attachment is an external file; every 10th of the others has
        // 200 bytes inline (Core Data's 0x01 prefix); the rest are null. A third of the scores
        // and a tenth of the folders are null.
        let stride = max(1, rows / externals)
        try database.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
            INSERT INTO ZNOTE SELECT i, 2, 1, i * 7919 % 100003, i % 2, CASE WHEN i % 10 = 0 THEN NULL
                ELSE i % \(folders) + 1 END, 700000000.0 + i, CASE WHEN i % 3 = 0 THEN NULL ELSE i / 7.0 END,
                'note number ' || i || ' of the benchmark store',
                CASE WHEN i % \(stride) = 0 AND i / \(stride) <= \(externals)
                    THEN CAST(X'02' || CAST(printf('00000000-0000-4000-8000-%012d', i) AS BLOB) || X'00' AS BLOB)
                    WHEN i % 10 = 1 THEN CAST(X'01' || randomblob(200) AS BLOB) ELSE NULL END
            FROM n
            """)
        try database.execute("COMMIT")
        _ = try database.scalar("PRAGMA wal_checkpoint(TRUNCATE)")
        try FileManager.default.createDirectory(atPath: externalDirectory, withIntermediateDirectories: true)
        // 64–256 KiB each, every file distinct.
        var generator = SystemRandomNumberGenerator()
        for k in 1...externals {
            let size = 65_536 + (k * 48_271 % 197_000)
            var bytes = [UInt8](repeating: 0, count: size)
            for j in Swift.stride(from: 0, to: size, by: 8) {
                let word = generator.next() as UInt64
                withUnsafeBytes(of: word) { raw in
                    for b in 0..<min(8, size - j) { bytes[j + b] = raw[b] }
                }
            }
            let file = String(format: "00000000-0000-4000-8000-%012d", k * stride)
            try Data(bytes).write(to: URL(fileURLWithPath: externalDirectory + "/" + file))
        }
    }
    let destination = URL(fileURLWithPath: options.workDirectory + "/coredata-import.deck")
    let rawDirectory = options.workDirectory + "/coredata-raw"
    try compare(
        "\(name) \(rows / 1000)k, \(externals) files", target: "≥ 0.5×",
        setup: {
            try? FileManager.default.removeItem(at: destination)
            try? FileManager.default.removeItem(atPath: rawDirectory)
            try FileManager.default.createDirectory(atPath: rawDirectory, withIntermediateDirectories: true)
        },
        deck: {
            let report = try CoreDataImport.importStore(at: URL(fileURLWithPath: storePath), to: destination)
            precondition(report.entities.reduce(0) { $0 + $1.rows } == rows + folders, "\(report)")
        },
        baseline: {
            // The same rows copied in SQL into a new database, committed (synchronous FULL, as
            // SQLite's default), then `cp -r` of the external folder and an fsync of every file
            // copied (`sync FILE…`).
            var db: OpaquePointer?
            sqlite3_open_v2(storePath, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
            let sql = """
                ATTACH '\(rawDirectory)/store.sqlite' AS new; BEGIN;
                CREATE TABLE new.ZFOLDER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
                CREATE TABLE new.ZNOTE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCOUNT INTEGER,
                    ZDONE INTEGER, ZFOLDER INTEGER, ZCREATED TIMESTAMP, ZSCORE FLOAT, ZTITLE VARCHAR, ZATTACHMENT BLOB );
                INSERT INTO new.ZFOLDER SELECT * FROM main.ZFOLDER;
                INSERT INTO new.ZNOTE SELECT * FROM main.ZNOTE;
                CREATE INDEX new.ZNOTE_ZFOLDER_INDEX ON ZNOTE (ZFOLDER);
                COMMIT
                """
            let code = sqlite3_exec(db, sql, nil, nil, nil)
            precondition(code == SQLITE_OK, String(cString: sqlite3_errmsg(db)))
            sqlite3_close(db)
            let copied = shell(
                "cp -r '\(externalDirectory)' '\(rawDirectory)/external' && sync '\(rawDirectory)'/external/*"
            )
            precondition(copied == 0, "cp -r of the external data failed")
        })
    guard selected("\(name) \(rows / 1000)k, \(externals) files") else { return }
    try? FileManager.default.removeItem(at: destination)
    _ = shell("sync")
    resetPeakResident()
    let before = peakResidentBytes()
    _ = try CoreDataImport.importStore(at: URL(fileURLWithPath: storePath), to: destination)
    // The first phase on its own: the private copy of the store and its external data, and the
    // plan read from it; the rest of the import is the load into the package, its commit and
    // its verification.
    _ = shell("sync")
    let openStart = now()
    let store = try CoreDataStore.open(at: URL(fileURLWithPath: storePath))
    _ = try store.importPlan()
    store.close()
    print("\(name): of which open (private copy) and plan \(String(format: "%.3f", now() - openStart)) s")
    print(
        "\(name): peak RSS \(peakResidentBytes() / 1_048_576) MiB (\(before / 1_048_576) MiB at the start; "
            + "target: under 64 MiB)")
}
