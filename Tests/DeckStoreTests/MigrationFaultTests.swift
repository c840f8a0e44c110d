import CDeckFaultVFS
import CSQLite
import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

#if canImport(Glibc)
    import Glibc
#endif

/// I/O failures injected into migrations (spec: section 18.2, "any failure … rolls the
/// transaction back … the document is exactly as it was"). Four migrations of the small
/// flash-cards package of ``MigrationExecutorTests`` — an attribute added with `ADD COLUMN`, a
/// rebuild with renames and a join table, an external value moved inline, a custom stage that
/// writes — each run once for every fault point: every file-system call Deck makes on the
/// package (``FaultInjection``, any operation) and every read, write, sync and truncation of its
/// SQLite files (the fault VFS of Tests/Harness/FaultVFS), failed one at a time, until a run
/// makes fewer calls than the fault waits for and so goes through clean.
///
/// After each failure: the error is an I/O `DeckError`; the package is exactly as it was, or (a
/// failure Deck does not report, such as a blob file left after the commit, section 10.3 step 4)
/// the migrated one; it verifies; and an unfaulted migration then gives the expected document.
@Suite(.timed) struct MigrationFaultTests {
    /// The migrations under test, each from the flash-cards schema (version 1.0.0).
    enum Migration: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Tag gains an optional attribute with a default: `ALTER TABLE … ADD COLUMN`.
        case addColumn
        /// Card.front becomes question, Tag becomes Label: Card, Label and the join table
        /// `Card.tags` (its foreign key now names Label) are rebuilt.
        case rebuild
        /// Card.image loses external storage: both blob files are read into their cells, and
        /// their rows and files go at the commit.
        case inline
        /// Card gains `hint`; a custom stage adds a card with an external image before (old
        /// schema) and after (new schema) the reshaping, and fills every hint from the old backs.
        case stage

        var testDescription: String { rawValue }

        var target: StoreSchema {
            var schema = flashCardsSchema()
            schema.version = "1.1.0"
            switch self {
            case .addColumn:
                schema.entities[2].attributes.append(
                    Attribute("color", .string, isOptional: true, defaultValue: .string("red")))
            case .rebuild:
                schema.entities[1].attributes[0] = Attribute("question", .string, originalName: "front")
                schema.entities[2].name = "Label"
                schema.entities[2].originalName = "Tag"
                schema.entities[1].relationships[1].destination = "Label"
            case .inline:
                schema.entities[1].attributes[2].options = []
            case .stage:
                schema.entities[1].attributes.append(Attribute("hint", .string, isOptional: true))
            }
            return schema
        }

        /// A new stage for each run (a stage is not `Sendable`, and holds no state).
        var stage: StoreMigrationStage? {
            guard self == .stage else { return nil }
            return StoreMigrationStage(
                name: "hints",
                willMigrate: { tx in
                    try tx.insert(
                        "Card",
                        [
                            "front": .string("antes"), "image": .data(testBytes(60, seed: 7)),
                            "deck": .reference(1),
                        ])
                },
                didMigrate: { context in
                    for (id, back) in try context.oldValues(entity: "Card", attribute: "back") {
                        guard case .string(let text) = back else { continue }
                        try context.transaction.update("Card", id: id, ["hint": .string("back: " + text)])
                    }
                    try context.transaction.insert(
                        "Card",
                        [
                            "front": .string("después"), "image": .data(testBytes(70, seed: 8)),
                            "hint": .string("added"), "deck": .reference(2),
                        ])
                })
        }

        /// Checks that an unfaulted run did what this migration is for, so that the sweeps
        /// compare against the right document.
        func expectDone(_ report: MigrationReport, before: DocumentState, after: DocumentState) {
            #expect(after.version == "1.1.0" && after.fingerprint == target.fingerprint, "\(self)")
            #expect(after.migrations.count == 1 && after.migrations.first?[3] == .text("1.1.0"), "\(self)")
            switch self {
            case .addColumn:
                #expect(report.alteredTables == ["Tag"] && report.rebuiltTables.isEmpty)
                let tags = after.records["Tag"] ?? [:]
                #expect(tags.count == 2 && tags.values.allSatisfy { $0["color"] == .string("red") })
                #expect(after.files == before.files)
            case .rebuild:
                #expect(Set(report.rebuiltTables) == ["Card", "Label"])
                for (id, old) in before.records["Card"] ?? [:] {
                    #expect(after.records["Card"]?[id]?["question"] == old["front"])
                    #expect(after.records["Card"]?[id]?["tags"] == old["tags"])
                }
                #expect(
                    after.records["Label"]?.mapValues { $0["cards"] }
                        == before.records["Tag"]?.mapValues { $0["cards"] })
                #expect(after.files == before.files)
            case .inline:
                #expect(report.inlinedValues == 2 && Set(report.rebuiltTables) == ["Card"])
                #expect(after.records == before.records, "values compare by their bytes")
                #expect(before.files.count == 2 && after.files.isEmpty && after.blobRows.isEmpty)
            case .stage:
                #expect(report.stage == "hints")
                let cards = after.records["Card"] ?? [:]
                #expect(cards.count == 5 && cards[1]?["hint"] == .string("back: hello"))
                #expect(
                    cards[4]?["image"] == .data(testBytes(60, seed: 7))
                        && cards[4]?["hint"] == .string("back: "))
                #expect(
                    cards[5]?["image"] == .data(testBytes(70, seed: 8))
                        && cards[5]?["hint"] == .string("added"))
                #expect(after.files.count == 4 && after.migrations.first?[6] == .text("hints"))
            }
        }
    }

    /// The fault points: Deck's file-system calls, and each kind of SQLite file I/O.
    enum Fault: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case fileSystem, sqliteRead, sqliteWrite, sqliteSync, sqliteTruncate

        var testDescription: String { rawValue }

        /// The fault VFS's operation number (see CDeckFaultVFS.h), nil for file-system calls.
        var vfsOperation: Int32? {
            switch self {
            case .fileSystem: nil
            case .sqliteRead: 1
            case .sqliteWrite: 2
            case .sqliteSync: 3
            case .sqliteTruncate: 4
            }
        }

        /// The errno (file system) or SQLite error code of the `point`-th fault: the file-system
        /// errnos and the two write errors (a full disk, an I/O error) take turns.
        func code(_ point: Int) -> Int32 {
            switch self {
            case .fileSystem: [ENOSPC, EIO, EACCES][point % 3]
            case .sqliteRead: SQLITE_IOERR | (1 << 8)
            case .sqliteWrite: point % 2 == 0 ? SQLITE_FULL : SQLITE_IOERR | (3 << 8)
            case .sqliteSync: SQLITE_IOERR | (4 << 8)
            case .sqliteTruncate: SQLITE_IOERR | (6 << 8)
            }
        }
    }

    /// What a migration may change in a package: every record with its values (external ones
    /// by their bytes), `deck_meta`, `deck_migration`, `deck_blob`, and every blob file's bytes.
    struct DocumentState: Equatable {
        var records: [String: [Int64: [String: Value]]]
        var meta: [String: SQLValue]
        var migrations: [[SQLValue]]
        var blobRows: [[SQLValue]]
        var files: [String: Data]

        var version: String? { meta["schema_version"]?.string }
        var fingerprint: String? { meta["schema_fingerprint"]?.string }

        /// The state without what a run sets to its own time: `deck_meta.modified` and
        /// `deck_migration.applied`.
        var timeless: DocumentState {
            var state = self
            state.meta["modified"] = nil
            state.migrations = migrations.map { row in
                row.enumerated().filter { $0.offset != 5 }.map(\.element)
            }
            return state
        }

        /// Reads the state of the (closed) package at `url`.
        init(_ url: URL) throws {
            records = try MigrationExecutorTests.records(url)
            let db = try Database(path: url.appendingPathComponent(PackageLayout.store).path, mode: .readOnly)
            defer { db.close() }
            meta = [:]
            for row in try db.rows("SELECT key, value FROM deck_meta") {
                if let key = row[0].string { meta[key] = row[1] }
            }
            migrations = try db.rows("SELECT * FROM deck_migration ORDER BY sequence")
            blobRows = try db.rows("SELECT digest, size, refs FROM deck_blob ORDER BY digest")
            let blobs = url.appendingPathComponent(PackageLayout.blobsDirectory)
            files = [:]
            for name in blobFiles(url) {
                files[name] = try Data(contentsOf: blobs.appendingPathComponent(name))
            }
        }
    }

    /// Checks that `thrown` is the I/O failure `fault` causes: an `.io` error for a file-system
    /// call, a `.sqlite` error of kind `.io` for SQLite's files.
    func expectIOFailure(
        _ thrown: any Error, _ fault: Fault, _ context: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let error = thrown as? DeckError else {
            Issue.record("\(context): not a DeckError: \(thrown)", sourceLocation: sourceLocation)
            return
        }
        switch (fault, error) {
        case (.fileSystem, .io): break
        case (.fileSystem, _):
            Issue.record("\(context): expected an .io error, got \(error)", sourceLocation: sourceLocation)
        case (_, .sqlite(let sqlite)):
            #expect(error.kind == .io, "\(context): \(sqlite)", sourceLocation: sourceLocation)
        default:
            Issue.record("\(context): expected a .sqlite error, got \(error)", sourceLocation: sourceLocation)
        }
    }

    /// Runs `migration` on the package at `url` with fault `fault` armed for its `point`-th
    /// matching call on paths containing `fragment`; says whether it fired and what the
    /// migration threw.
    func migrate(
        _ url: URL, _ migration: Migration, fault: Fault, point: Int, fragment: String
    ) -> (fired: Bool, error: (any Error)?) {
        let run = {
            _ = try PackageStore.migrate(at: url, to: migration.target, stage: migration.stage)
        }
        guard let operation = fault.vfsOperation else {
            let outcome = FaultInjection.inject(
                nil, pathContains: fragment, skip: point, errno: fault.code(point), run)
            return (outcome.fired, outcome.error)
        }
        #expect(deck_fault_vfs_arm(operation, fragment, Int32(point), fault.code(point)) == SQLITE_OK)
        var thrown: (any Error)?
        do { try run() } catch { thrown = error }
        return (deck_fault_vfs_disarm(fragment) == 1, thrown)
    }

    /// Replaces the package at `url` with a copy of `pristine`.
    func restore(_ url: URL, from pristine: URL) throws {
        if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
        try FileManager.default.copyItem(at: pristine, to: url)
    }

    @Test(arguments: Migration.allCases, Fault.allCases)
    func aMigrationThatFailsAtAnyFaultPointLeavesTheOldOrTheNewDocument(
        migration: Migration, fault: Fault
    ) throws {
        #expect(deck_fault_vfs_install() == SQLITE_OK)
        try withTestDirectory { dir in
            let fragment = dir.lastPathComponent
            let pristine = try MigrationExecutorTests.makePackage(
                in: try Self.subdirectory("pristine", of: dir))
            let before = try DocumentState(pristine)
            // The expected document: the migration run once without a fault.
            let reference = dir.appendingPathComponent("reference.deck")
            try restore(reference, from: pristine)
            let report = try PackageStore.migrate(at: reference, to: migration.target, stage: migration.stage)
            let after = try DocumentState(reference)
            migration.expectDone(report, before: before, after: after)
            let url = dir.appendingPathComponent("work.deck")
            // Every fault point, or every fifth in a sampled pass (TestSweep; five, so that the
            // errnos and SQLite codes that take turns by point still all come up): a point past
            // the last one still ends the sweep with a clean run.
            let step = TestSweep.step(sampled: 5)
            var points = 0
            // Packages already checked, by their files' bytes and whether the migration threw:
            // every check below depends on nothing else, so a package left as one before was is
            // not checked again (most failures leave exactly the package they started with).
            var checked: Set<[String: Data]> = []
            // A package left as the pristine one was (byte for byte) needs no copy.
            let pristineFiles = try Self.files(pristine)
            var isPristine = false
            while points < 2_000 {
                if !isPristine { try restore(url, from: pristine) }
                let (fired, thrown) = self.migrate(
                    url, migration, fault: fault, point: points, fragment: fragment)
                let context = "\(migration), \(fault) fault point \(points)"
                guard fired else {
                    // Past the last fault point: the run went through.
                    #expect(thrown == nil, "\(context): \(String(describing: thrown))")
                    #expect(try DocumentState(url).timeless == after.timeless, "\(context)")
                    try MigrationExecutorTests.expectValid(url)
                    break
                }
                points += step
                if let thrown { expectIOFailure(thrown, fault, context) }
                var files = try Self.files(url)
                isPristine = files == pristineFiles
                files["(threw)"] = thrown == nil ? nil : Data()
                guard checked.insert(files).inserted else { continue }
                isPristine = false
                try expectOldOrNew(
                    url, committed: thrown == nil, before: before, after: after, migration, context)
            }
            #expect(points < 2_000, "\(migration), \(fault): the sweep did not end")
            print(
                "MigrationFaultTests: \(migration), \(fault): \(points) fault points"
                    + (step > 1 ? " (every \(step)th tried)" : "") + ", \(checked.count) packages checked"
            )
            #expect(points > Self.minimumPoints[fault] ?? 0, "\(migration), \(fault): too few fault points")
        }
    }

    /// Checks the package at `url` after a failed migration: the old document when the migration
    /// threw, otherwise (a failure it does not report comes after its commit: a blob file that
    /// could not be removed, a checkpoint at close) the new one, perhaps with orphan blob files
    /// (spec 10.3, step 4); that it verifies; and that an unfaulted migration then gives the new one.
    func expectOldOrNew(
        _ url: URL, committed: Bool, before: DocumentState, after: DocumentState, _ migration: Migration,
        _ context: String
    ) throws {
        let state = try DocumentState(url)
        if committed {
            var kept = state.timeless
            #expect(after.files.allSatisfy { kept.files[$0.key] == $0.value }, "\(context)")
            kept.files = after.files
            #expect(kept == after.timeless, "\(context): not the migrated document")
        } else {
            #expect(state == before, "\(context): the failed migration changed the document")
        }
        let verified = try PackageVerifier.verify(at: url)
        let allowed: Set<String> = committed ? ["blob-orphan"] : []
        #expect(
            verified.isValid && Set(verified.codes).isSubset(of: allowed), "\(context): \(verified.findings)")
        let again = try PackageStore.migrate(at: url, to: migration.target, stage: migration.stage)
        #expect(again.isUnchanged == committed, "\(context)")
        var final = try DocumentState(url).timeless
        if committed { final.files = final.files.filter { after.files[$0.key] != nil } }
        #expect(final == after.timeless, "\(context): the second migration")
    }

    /// Every file of the package at `url` with its bytes, but the writer lock's (the pid of the
    /// last process that held it).
    static func files(_ url: URL) throws -> [String: Data] {
        var files = try FormatUpgradeTests.snapshot(url).mapValues(\.0)
        if files[PackageLayout.lockFile] != nil { files[PackageLayout.lockFile] = Data() }
        return files
    }

    /// A sweep must reach more fault points than this, or the faults missed the migration (the
    /// smallest sweeps have 25 file-system calls, 29 reads, 31 writes, 10 syncs and 2 truncations).
    static let minimumPoints: [Fault: Int] = [
        .fileSystem: 20, .sqliteRead: 20, .sqliteWrite: 20, .sqliteSync: 5, .sqliteTruncate: 1,
    ]

    /// A new directory `name` in `dir`.
    static func subdirectory(_ name: String, of dir: URL) throws -> URL {
        let url = dir.appendingPathComponent(name, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        return url
    }
}
