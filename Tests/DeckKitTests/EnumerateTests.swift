import DeckKit
import Foundation
import Testing

/// `enumerate(_:batchSize:block:)` visits each selected model once, in the descriptor's order,
/// a batch at a time.
@Suite("Enumerating models in batches")
struct EnumerateTests {
    /// A document with cards "card 0" … "card 22", inserted in that order.
    func makeCards(_ directory: ScratchDirectory) throws -> ModelContainer {
        let container = try ModelContainer(
            for: Flash.Card.self, configurations: ModelConfiguration(url: directory.appending("cards.deck")))
        let context = ModelContext(container)
        for index in 0..<23 { context.insert(Flash.Card(front: "card \(index)")) }
        try context.save()
        return container
    }

    func fronts(
        _ context: ModelContext, _ descriptor: FetchDescriptor<Flash.Card>, batchSize: Int,
        also: (Flash.Card) -> Void = { _ in }
    ) throws -> [String] {
        var seen: [String] = []
        try context.enumerate(descriptor, batchSize: batchSize) { card in
            seen.append(card.front)
            also(card)
        }
        return seen
    }

    @Test("Without sort descriptors: every model once, in insertion order, with the offset and limit")
    func unsorted() throws {
        let directory = try ScratchDirectory()
        let context = ModelContext(try makeCards(directory))
        #expect(try fronts(context, FetchDescriptor(), batchSize: 5) == (0..<23).map { "card \($0)" })
        var window = FetchDescriptor<Flash.Card>()
        window.fetchOffset = 3
        window.fetchLimit = 12
        #expect(try fronts(context, window, batchSize: 5) == (3..<15).map { "card \($0)" })
        let odd = FetchDescriptor<Flash.Card>(predicate: #Predicate { $0.front.contains("1") })
        #expect(
            try fronts(context, odd, batchSize: 2) == [
                "card 1", "card 10", "card 11", "card 12", "card 13", "card 14", "card 15", "card 16",
                "card 17", "card 18", "card 19", "card 21",
            ])
    }

    @Test("Sorted: every model once, in the descriptor's order")
    func sorted() throws {
        let directory = try ScratchDirectory()
        let context = ModelContext(try makeCards(directory))
        let descriptor = FetchDescriptor<Flash.Card>(sortBy: [SortDescriptor(\.front, order: .reverse)])
        #expect(try fronts(context, descriptor, batchSize: 4) == (0..<23).map { "card \($0)" }.sorted(by: >))
    }

    @Test("Models the block deletes do not make it skip any")
    func deletingWhileEnumerating() throws {
        let directory = try ScratchDirectory()
        let context = ModelContext(try makeCards(directory))
        let seen = try fronts(context, FetchDescriptor(), batchSize: 5) { context.delete($0) }
        #expect(seen == (0..<23).map { "card \($0)" })
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Flash.Card>()) == 0)
    }

    @Test("A batch size below one is refused")
    func badBatchSize() throws {
        let directory = try ScratchDirectory()
        let context = ModelContext(try makeCards(directory))
        #expect(throws: DeckError.self) {
            try context.enumerate(FetchDescriptor<Flash.Card>(), batchSize: 0) { _ in }
        }
    }
}
