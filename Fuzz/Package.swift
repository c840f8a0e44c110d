// swift-tools-version:6.0
// Fuzz targets for DeckKit (libFuzzer). Build and run them with `Scripts/fuzz`; see Fuzz/README.md.
//
// Each executable defines `LLVMFuzzerTestOneInput`. Built with `-sanitize=fuzzer` and
// `-D DECK_LIBFUZZER`, its `main` hands over to libFuzzer (`LLVMFuzzerRunDriver`); built without,
// a small `main` replays the input files named on the command line, so a plain `swift build` here
// works too and `FuzzX file…` reproduces a finding under any build.
import PackageDescription

let targets = ["FuzzManifest", "FuzzSchema", "FuzzWhere", "FuzzArchive", "FuzzStore", "FuzzModelCache"]

let package = Package(
    name: "DeckFuzz",
    products: targets.map { .executable(name: $0, targets: [$0]) },
    dependencies: [
        .package(name: "Deck", path: "..")
    ],
    targets: [
        .target(
            name: "FuzzSupport",
            dependencies: [
                .product(name: "DeckKit", package: "Deck"), .product(name: "DeckSamples", package: "Deck"),
            ])
    ]
        + targets.map {
            .executableTarget(
                name: $0,
                dependencies: [
                    "FuzzSupport", .product(name: "DeckKit", package: "Deck"),
                    .product(name: "DeckSamples", package: "Deck"),
                ]
                    // The `--where` text language is not part of DeckKit.
                    + ($0 == "FuzzWhere" ? [.product(name: "DeckQueryLanguage", package: "Deck")] : [])
                    // Nor is the Core Data reader.
                    + ($0 == "FuzzModelCache" ? [.product(name: "DeckCoreData", package: "Deck")] : []))
        },
    swiftLanguageModes: [.v6]
)
