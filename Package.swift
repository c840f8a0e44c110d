// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Deck",
    products: [
        .library(name: "DeckKit", targets: ["DeckKit"]),
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
            name: "DeckKit",
            dependencies: ["CSQLite", "CArchive", "CCrypto", "CDeckSystem"]),
        .target(
            name: "DeckCommandLine",
            dependencies: ["DeckKit"]),
        .executableTarget(
            name: "deck",
            dependencies: ["DeckCommandLine"]),
        .executableTarget(
            name: "DeckBenchmarks",
            dependencies: ["DeckKit", "CSQLite"],
            path: "Benchmarks/DeckBenchmarks"),
        .executableTarget(
            name: "deck-crashtest",
            dependencies: ["DeckKit"],
            path: "Tests/Harness/CrashChild"),
        .target(
            name: "CDeckFaultVFS",
            dependencies: ["CSQLite"],
            path: "Tests/Harness/FaultVFS"),
        .testTarget(
            name: "DeckKitTests",
            dependencies: ["DeckKit", "CSQLite", "CDeckFaultVFS"]),
        .testTarget(
            name: "DeckCommandLineTests",
            dependencies: ["DeckCommandLine", "DeckKit", "deck", "deck-crashtest"]),
    ],
    swiftLanguageModes: [.v6]
)
