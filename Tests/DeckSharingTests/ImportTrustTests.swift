import DeckKit
import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// Import trusts an archived store no more than an open trusts a package: schema objects the
/// stored schema does not derive are refused (issue 8; spec sections 4.1, 13, 15, 16.4). The
/// store-level checks are DeckStoreTests' "Store trust" suites.
@Suite("Store trust: imported schema objects", .timed)
struct ImportTrustTests {
    /// A closed package with two cards sharing one external image, and one deck.
    func package(in dir: URL) throws -> URL {
        let image = testBytes(100, seed: 1)
        let package = try makeTestStore(in: dir)
        try package.write { tx in
            let deck = try tx.insert("Deck", ["title": .string("Spanish")])
            try tx.insert("Card", ["front": .string("a"), "image": .data(image), "deck": .reference(deck)])
            try tx.insert("Card", ["front": .string("b"), "image": .data(image)])
        }
        try package.close()
        return package.url
    }

    @Test func importRefusesAPackageWithAPlantedTrigger() throws {
        try withTestDirectory { dir throws in
            let url = try package(in: dir)
            try rawStore(url).execute(
                "CREATE TRIGGER wipe AFTER INSERT ON \"Deck\" BEGIN UPDATE deck_blob SET refs = 0; END")
            let archive = dir.appendingPathComponent("hostile.zip")
            // Export opens the document first, so it refuses; a raw pack carries the store as is.
            expectDeckError { try DeckDocument.export(at: url, to: archive) }
            try DeckDocument.pack(directory: url, to: archive)
            let destination = dir.appendingPathComponent("Imported.deck")
            let error = expectDeckError {
                _ = try DeckDocument.importArchive(at: archive, to: destination)
            }
            #expect(error?.description.contains("wipe") == true, "\(String(describing: error))")
            #expect(!FileManager.default.fileExists(atPath: destination.path))
        }
    }
}
