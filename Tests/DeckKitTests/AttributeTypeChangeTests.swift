import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// A document whose stored attribute is of another type than the models declare (an app that
/// changed a property's type without a migration, or a package from elsewhere): opening it with
/// those models is a clear error, and the document keeps every value.
@Suite("An attribute of another type in the document", .timed)
struct AttributeTypeChangeTests {
    enum Old {
        final class Card: ModelObject {
            @Attribute var title = ""
            @Attribute(.externalStorage) var front: Data? = nil
            required init() {}
        }
    }

    enum New {
        final class Card: ModelObject {
            @Attribute var title = ""
            @Attribute var front = ""
            required init() {}
        }
    }

    @Test(
        "External data where the models declare a string: the open fails, naming the attribute, and the blob survives"
    )
    func dataWhereStringIsDeclared() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("typed.deck")
        let image = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        do {
            let container = try ModelContainer(
                for: Old.Card.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            let card = Old.Card()
            card.title = "one"
            card.front = image
            context.insert(card)
            try context.save()
        }
        let error = #expect(throws: DeckError.self) {
            try ModelContainer(for: New.Card.self, configurations: ModelConfiguration(url: url))
        }
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains("Card.front: data in the document, string in the models"))
        #expect(message.contains("migrat"))
        // Nothing was changed: the old models read every value, the blob's bytes included.
        let container = try ModelContainer(for: Old.Card.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let cards = try context.fetch(FetchDescriptor<Old.Card>())
        #expect(cards.map(\.title) == ["one"])
        #expect(cards.map(\.front) == [image])
    }
}
