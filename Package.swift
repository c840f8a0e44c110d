// swift-tools-version:6.2
import PackageDescription

// The layers (ARCHITECTURE.md): C modules → DeckStore (the format and the storage core) →
// DeckKit (the library users import: it re-exports DeckStore, adds the document layer) →
// DeckCommandLine (the tool, with DeckArguments, a parser that knows nothing of Deck) → deck.
// Arrows only point down; the targets below make the compiler enforce them.
let package = Package(
    name: "Deck",
    products: [
        .library(name: "DeckKit", targets: ["DeckKit"]),
        // The flash-cards document type, for tools outside this package (the fuzz targets).
        .library(name: "DeckSamples", targets: ["DeckSamples"]),
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
        .target(name: "CDeckSystem"),
        .target(
            name: "DeckStore",
            dependencies: ["CSQLite", "CArchive", "CCrypto", "CDeckSystem"]),
        .target(
            name: "DeckKit",
            dependencies: ["DeckStore", "CDeckSystem"]),
        .target(name: "DeckArguments"),
        .target(
            name: "DeckSamples",
            dependencies: ["DeckKit"]),
        .target(
            name: "DeckCommandLine",
            dependencies: ["DeckKit", "DeckArguments", "DeckSamples"]),
        .executableTarget(
            name: "deck",
            dependencies: ["DeckCommandLine"]),
        .executableTarget(
            name: "DeckBenchmarks",
            dependencies: ["DeckKit", "CSQLite"],
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
        .target(
            name: "CDeckFaultVFS",
            dependencies: ["CSQLite"],
            path: "Tests/Harness/FaultVFS"),
        .testTarget(
            name: "DeckStoreTests",
            dependencies: [
                "DeckStore", "DeckKit", "CSQLite", "CDeckFaultVFS", "DeckTestSupport",
            ]),
        .testTarget(
            name: "DeckKitTests",
            dependencies: ["DeckKit", "DeckSamples", "DeckTestSupport"]),
        .testTarget(
            name: "DeckArgumentsTests",
            dependencies: ["DeckArguments"]),
        .testTarget(
            name: "DeckCommandLineTests",
            dependencies: [
                "DeckCommandLine", "DeckKit", "DeckStore", "DeckSamples", "deck", "deck-crashtest",
                "DeckTestSupport",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
