import DeckKit
import DeckSamples
import DeckTestTiming
import Foundation
import Testing

/// The flash-cards sample (`DeckSamples`) is what its schema file says. The storage tests use a
/// store-level copy of it (`SampleCards` in DeckStoreTests), checked against the same file.
@Suite(.timed) struct FlashcardsSampleTests {
    @Test func theSampleIsItsSchemaFile() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("samples/flashcards.schema.json")
        #expect(
            try StoreSchema(json: Data(contentsOf: file), source: "flashcards.schema.json")
                == FlashcardsSample.schema)
        #expect(FlashcardsSample.contentType == "org.deck.flashcards")
    }
}
