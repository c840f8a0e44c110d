import DeckSQLite
import DeckSupport
import Foundation

// The checks of an open store, in three groups: SQLite's own (integrity and foreign keys), the
// structure (metadata, tables, identity, history, storage classes) and the values (cells and blob
// references). With a second connection, the structure runs on the calling thread while SQLite's
// checks and then the values run on another, and the findings are those of the groups run in
// order: SQLite's checks first decide whether the rest counts at all.
extension PackageVerifier {
    /// Checks the store open on `db`. `reader`, when given and `options` allow more than one
    /// thread, opens a second read-only connection to the same store, on which half of the
    /// checks run at the same time; the findings are the same either way.
    static func checkStore(
        _ db: Database, schema: StoreSchema, formatVersion: Int, manifest: Manifest, path: String,
        options: Options, blobFiles: BlobFiles = .directory, reader: (@Sendable () throws -> Database)? = nil,
        report: inout VerificationReport
    ) throws {
        let storePath = path + "/" + PackageLayout.store
        let check = StoreCheck(
            schema: schema, formatVersion: formatVersion, manifest: manifest, path: path,
            storePath: storePath,
            options: options, blobFiles: blobFiles)
        guard options.threads > 1, let reader else {
            guard try check.sqlite(db, report: &report) else { return }
            guard let (mapping, dateEpoch) = try check.structure(db, report: &report) else { return }
            try check.values(db, mapping: mapping, dateEpoch: dateEpoch, report: &report)
            return
        }
        let side = Locked<(sqlite: VerificationReport, values: VerificationReport, outcome: SideOutcome)>(
            (VerificationReport(path: path), VerificationReport(path: path), .notRun))
        let done = DispatchSemaphore(value: 0)
        let context = WorkerContext.capture()
        Thread.detachNewThread {
            defer { done.signal() }
            context.run {
                // A second connection that does not open leaves the half to this thread, after.
                guard let second = try? reader() else { return }
                defer { second.close() }
                check.sideHalf(second, into: side)
            }
        }
        var structure = VerificationReport(path: path)
        let main = Result { try check.structure(db, report: &structure) }
        done.wait()
        if case .notRun = side.withLock({ $0.outcome }) { check.sideHalf(db, into: side) }
        let (sqlite, values, outcome) = side.withLock { $0 }
        report.merge(sqlite)
        switch outcome {
        case .sqliteFailed(let error): throw error
        case .integrityFailed: return
        case .notRun, .finished, .valuesFailed: break
        }
        report.merge(structure)
        guard try main.get() != nil else { return }
        report.merge(values)
        if case .valuesFailed(let error) = outcome { throw error }
    }

    /// How the second thread's half ended.
    enum SideOutcome: @unchecked Sendable {
        /// Not run (the second connection did not open).
        case notRun
        /// SQLite's checks threw this error.
        case sqliteFailed(any Error)
        /// SQLite's checks found the store damaged: nothing else counts.
        case integrityFailed
        case finished
        /// A check of the values threw this error (after SQLite's checks passed).
        case valuesFailed(any Error)
    }
}

/// The checks of one store, by group (see ``PackageVerifier/checkStore(_:schema:formatVersion:manifest:path:options:blobFiles:reader:report:)``).
struct StoreCheck: Sendable {
    let schema: StoreSchema
    let formatVersion: Int
    let manifest: Manifest
    let path: String
    let storePath: String
    let options: PackageVerifier.Options
    let blobFiles: PackageVerifier.BlobFiles

    /// SQLite's own checks: `integrity_check` (`quick_check` when quick) and foreign keys. False
    /// when the integrity check fails: nothing read from the store after that can be trusted.
    func sqlite(_ db: Database, report: inout VerificationReport) throws -> Bool {
        let integrity = try db.rows(options.quick ? "PRAGMA quick_check" : "PRAGMA integrity_check")
        for row in integrity {
            let text = row.first?.string ?? ""
            if text != "ok" { report.add(.corruption, "sqlite-integrity", storePath, text) }
        }
        guard integrity.first?.first?.string == "ok" else { return false }
        // A join table has no rowid: its rows are named by their pair, found in the same order.
        var pairsSeen: [String: Int] = [:]
        for row in try db.rows("PRAGMA foreign_key_check") {
            let table = row[0].string ?? "?"
            let parent = row[2].string ?? "?"
            var object = "\(table) #" + (row[1].int64.map(String.init) ?? "?")
            if row[1].isNull, let key = row[3].int64 {
                let seen = pairsSeen["\(table) \(key)", default: 0]
                pairsSeen["\(table) \(key)"] = seen + 1
                if let pair = try danglingPair(db, table: table, parent: parent, key: key, offset: seen) {
                    object = "\(table) (source \(pair.source), target \(pair.target))"
                }
            }
            report.add(.corruption, "dangling-reference", object, "references a missing \(parent) record")
        }
        return true
    }

    /// The `offset`-th pair of join table `table` whose foreign key `key` (its id in
    /// `pragma_foreign_key_list`) names no `parent` record; nil when the table is not shaped so.
    private func danglingPair(_ db: Database, table: String, parent: String, key: Int64, offset: Int) throws
        -> (source: Int64, target: Int64)?
    {
        let keys = try db.rows(
            "SELECT \"from\", coalesce(\"to\", '_pk') FROM pragma_foreign_key_list(?) WHERE id = ?",
            [.text(table), .integer(key)])
        guard let column = keys.first?[0].string, let referenced = keys.first?[1].string,
            ["source", "target"].contains(column)
        else { return nil }
        let rows = try db.rows(
            "SELECT source, target FROM \(quote(table)) WHERE \(quote(column)) NOT IN "
                + "(SELECT \(quote(referenced)) FROM \(quote(parent))) LIMIT 1 OFFSET ?",
            [.integer(Int64(offset))])
        guard let pair = rows.first, let source = pair[0].int64, let target = pair[1].int64 else {
            return nil
        }
        return (source, target)
    }

    /// The metadata, the tables against the schema, identity, the migration history and the
    /// cells' storage classes. Returns the schema's mapping and the dates' epoch, or nil when the
    /// stored schema is invalid (reported; the values cannot be checked then).
    func structure(_ db: Database, report: inout VerificationReport) throws
        -> (mapping: SchemaMapping, dateEpoch: DateEpoch)?
    {
        // One read transaction: a writer may commit between two statements, and the version
        // check compares the clock with the versions it gave (a reader in WAL mode reads one
        // state for the transaction's length).
        let begun = !db.isInTransaction
        if begun { try db.execute("BEGIN DEFERRED") }
        defer { if begun { try? db.execute("COMMIT") } }
        func add(_ code: String, _ message: String) { report.add(.corruption, code, storePath, message) }
        let meta = try StoreMetadata.read(db, packagePath: path)
        if let problem = meta.contentTypeProblem(manifest: manifest) { add("content-type-mismatch", problem) }
        for problem in [
            meta.schemaVersionProblem(schema), meta.timestampProblem("created"),
            meta.timestampProblem("modified"), meta.documentIDProblem(formatVersion: formatVersion),
        ] {
            if let problem { add("meta-invalid", problem) }
        }
        let mapping: SchemaMapping
        do {
            mapping = try SchemaMapping(schema)
        } catch {
            add("schema-invalid", "the stored schema is invalid: \(error)")
            return nil
        }
        let tables = try TableCheck.run(
            db, mapping: mapping, formatVersion: formatVersion, storePath: storePath, report: &report)
        if formatVersion >= 2 {
            try TableCheck.checkIdentity(
                db, mapping: mapping, tables: tables, storePath: storePath, report: &report)
        }
        if formatVersion >= 3 {
            // The history is read only when its table is the derived one (TableCheck reported it
            // otherwise).
            let history = try db.scalar(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'deck_migration'")
            if history?.int64 == 1 {
                let problems = try SchemaBookkeeping.problems(db, meta: meta, schema: schema)
                for problem in problems.meta { add("meta-invalid", problem) }
                for (object, message) in problems.history {
                    report.add(.corruption, "migration-history", object, message)
                }
            }
        }
        try StorageClassCheck.run(db, mapping: mapping, tables: tables, report: &report)
        if formatVersion >= VersionDDL.firstFormatVersion {
            try VersionCheck.run(db, mapping: mapping, report: &report)
        }
        return (mapping, dateEpoch(meta))
    }

    /// The epoch the store's dates count from (spec 4.2), by its metadata `meta`. A version 4
    /// store without a valid one was refused as corrupt when it was opened.
    func dateEpoch(_ meta: StoreMetadata) -> DateEpoch {
        (try? meta.dateEpoch(formatVersion: formatVersion, packagePath: path)) ?? .unix
    }

    /// The values themselves, cell by cell, and the blob references against `deck_blob` and the
    /// blob files.
    func values(
        _ db: Database, mapping: SchemaMapping, dateEpoch: DateEpoch, report: inout VerificationReport
    ) throws {
        try CellCheck.run(db, mapping: mapping, dateEpoch: dateEpoch, report: &report)
        try BlobCheck.run(
            db, mapping: mapping, path: path, options: options, blobFiles: blobFiles, report: &report)
    }

    /// The second thread's half: SQLite's checks, then (when they pass) the values, on `db`.
    func sideHalf(
        _ db: Database,
        into side: Locked<
            (sqlite: VerificationReport, values: VerificationReport, outcome: PackageVerifier.SideOutcome)
        >
    ) {
        var sqliteReport = VerificationReport(path: path)
        var valuesReport = VerificationReport(path: path)
        let outcome: PackageVerifier.SideOutcome
        do {
            guard try sqlite(db, report: &sqliteReport) else {
                side.withLock { $0 = (sqliteReport, valuesReport, .integrityFailed) }
                return
            }
        } catch {
            side.withLock { $0 = (sqliteReport, valuesReport, .sqliteFailed(error)) }
            return
        }
        do {
            // A schema that does not map is the structure's finding; the values wait for it.
            if let mapping = try? SchemaMapping(schema) {
                let meta = try StoreMetadata.read(db, packagePath: path)
                try values(db, mapping: mapping, dateEpoch: dateEpoch(meta), report: &valuesReport)
            }
            outcome = .finished
        } catch {
            outcome = .valuesFailed(error)
        }
        side.withLock { $0 = (sqliteReport, valuesReport, outcome) }
    }
}
