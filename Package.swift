// swift-tools-version:6.2
import PackageDescription

// The layers (ARCHITECTURE.md): C modules → DeckSupport (the one error type and the errors it
// carries, file-system calls, locks, hashing) → DeckSQLite (the SQLite wrapper) and DeckArchive
// (archives over libarchive) → DeckStore (the format and the storage core: schema, package
// directory, blobs, records, queries, migration, verifier) → DeckQueryLanguage (the `--where` text),
// DeckCoreData (reading and importing Core Data stores) and DeckKit (the library users import: it
// re-exports DeckStore and DeckCoreData, adds the document layer) →
// DeckCommandLine (the tool, with DeckArguments, a parser that knows nothing of Deck) → deck.
// Arrows only point down; the targets below make the compiler enforce them.
let package = Package(
    name: "Deck",
    products: [
        .library(name: "DeckKit", targets: ["DeckKit"]),
        // The flash-cards document type, for tools outside this package (the fuzz targets).
        .library(name: "DeckSamples", targets: ["DeckSamples"]),
        // The `--where` text language, for the fuzz targets (the CLI uses it within the package).
        .library(name: "DeckQueryLanguage", targets: ["DeckQueryLanguage"]),
        // The Core Data store reader and importer, for the fuzz targets (DeckKit re-exports it).
        .library(name: "DeckCoreData", targets: ["DeckCoreData"]),
        .executable(name: "deck", targets: ["deck"]),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CArchive", path: "Sources/CArchive",
            providers: [.apt(["libarchive-dev"])]),
        .systemLibrary(
            name: "CCrypto", path: "Sources/CCrypto",
            providers: [.apt(["libssl-dev"])]),
        // Raw DEFLATE, for Core Data's compressed model cache (DeckCoreData).
        .systemLibrary(
            name: "CZlib", path: "Sources/CZlib",
            providers: [.apt(["zlib1g-dev"])]),
        .target(name: "CDeckSystem"),
        // DeckError carries SQLiteError and ArchiveError as cases, so the three errors sit together
        // below both the SQLite wrapper and the archive code, which throw them.
        .target(
            name: "DeckSupport",
            dependencies: ["CSQLite", "CCrypto", "CDeckSystem"]),
        // Connections, statements, values, and the SQL functions every connection gets; nothing of
        // records or schemas.
        .target(
            name: "DeckSQLite",
            dependencies: ["CSQLite", "DeckSupport"]),
        // Reading and writing archives: formats, entry checks, staging; nothing of SQLite or the
        // package directory (the store packs and unpacks through it).
        .target(
            name: "DeckArchive",
            dependencies: ["CArchive", "CDeckSystem", "DeckSupport"]),
        // What a Core Data / SwiftData store says about itself: binary property lists, the
        // keyed-archived model cache, Z_PRIMARYKEY and Z_METADATA, read from a private copy.
        .target(
            name: "DeckCoreData",
            dependencies: ["CZlib", "DeckSupport", "DeckSQLite", "DeckArchive", "DeckStore"]),
        .target(
            name: "DeckStore",
            dependencies: ["CSQLite", "CCrypto", "CDeckSystem", "DeckSupport", "DeckSQLite", "DeckArchive"]),
        // The `--where` and `--sort` text: only the CLI and the fuzz targets parse it; DeckKit
        // builds expressions from predicates instead.
        .target(
            name: "DeckQueryLanguage",
            dependencies: ["DeckStore"]),
        .target(
            name: "DeckKit",
            dependencies: ["DeckStore", "DeckCoreData", "DeckSQLite", "CDeckSystem"]),
        .target(name: "DeckArguments"),
        .target(
            name: "DeckSamples",
            dependencies: ["DeckKit"]),
        .target(
            name: "DeckCommandLine",
            dependencies: ["DeckKit", "DeckArguments", "DeckSamples", "DeckQueryLanguage"]),
        .executableTarget(
            name: "deck",
            dependencies: ["DeckCommandLine"]),
        .executableTarget(
            name: "DeckBenchmarks",
            dependencies: ["DeckKit", "CSQLite", "DeckCoreData", "DeckCoreDataTestSupport"],
            path: "Benchmarks/DeckBenchmarks"),
        .executableTarget(
            name: "deck-crashtest",
            dependencies: ["DeckKit", "DeckTestSupport"],
            path: "Tests/Harness/CrashChild"),
        // Seeds, a seeded generator, waiting for a child's output and scratch directories, for
        // every test target.
        .target(
            name: "DeckTestSupport",
            path: "Tests/Harness/TestSupport"),
        // The `.timed` trait every top-level suite carries: each case's wall time, for CI's table
        // of the slowest suites (Scripts/suite-timing).
        .target(
            name: "DeckTestTiming",
            path: "Tests/Harness/Timing"),
        // The storage tests' fixtures and helpers (sample packages, hand-made archives, expected
        // errors), shared by DeckStoreTests and DeckSharingTests; package API only.
        .target(
            name: "DeckStoreTestSupport",
            dependencies: ["CArchive", "DeckStore", "DeckSQLite", "DeckTestSupport"],
            path: "Tests/Harness/StoreTestSupport"),
        // Writers of Core Data's files (binary property lists, keyed-archived model caches, stores
        // in Core Data's layout), shared by DeckCoreDataTests and the import benchmark; package API.
        .target(
            name: "DeckCoreDataTestSupport",
            dependencies: ["CZlib", "DeckCoreData", "DeckSQLite"],
            path: "Tests/Harness/CoreDataTestSupport"),
        .target(
            name: "CDeckFaultVFS",
            dependencies: ["CSQLite"],
            path: "Tests/Harness/FaultVFS"),
        .testTarget(
            name: "DeckStoreTests",
            dependencies: [
                "DeckStore", "DeckSQLite", "DeckQueryLanguage", "CSQLite", "CDeckFaultVFS",
                "DeckStoreTestSupport", "DeckTestSupport", "DeckTestTiming",
            ]),
        // The document layer's sharing (DeckDocument: export, import, pack, unpack, verify an
        // archive) against hostile archives, foreign tools and injected faults.
        .testTarget(
            name: "DeckSharingTests",
            dependencies: [
                "DeckKit", "DeckStore", "DeckSQLite", "CDeckSystem", "DeckStoreTestSupport",
                "DeckTestSupport", "DeckTestTiming",
            ]),
        // The Core Data reader against the real stores in ../shared/fixtures/coredata, synthetic
        // property lists and archives (its own bplist writer) and hostile input.
        .testTarget(
            name: "DeckCoreDataTests",
            dependencies: [
                "DeckCoreData", "DeckCoreDataTestSupport", "CZlib", "DeckStore", "DeckSupport", "DeckSQLite",
                "DeckTestSupport", "DeckTestTiming",
            ]),
        .testTarget(
            name: "DeckKitTests",
            dependencies: ["DeckKit", "DeckSQLite", "DeckSamples", "DeckTestSupport", "DeckTestTiming"]),
        .testTarget(
            name: "DeckArgumentsTests",
            dependencies: ["DeckArguments", "DeckTestSupport", "DeckTestTiming"]),
        .testTarget(
            name: "DeckCommandLineTests",
            dependencies: [
                "DeckCommandLine", "DeckKit", "DeckStore", "DeckSQLite", "DeckSamples", "deck",
                "deck-crashtest",
                "DeckTestSupport", "DeckTestTiming",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
