import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// Models with a property of each type that sorts, their values drawn from small pools so that
/// sorts tie and meet nulls.
enum Sorting {
    final class Item: ModelObject {
        @Attribute var name = ""
        @Attribute var label: String? = nil
        @Attribute var count: Int? = nil
        @Attribute var rank = 0
        @Attribute var score = 0.0
        @Attribute var ratio: Float = 0
        @Attribute var price: Decimal? = nil
        @Attribute var due: Date? = nil
        @Attribute var token: UUID? = nil
        @Relationship(inverse: \Group.items) var group: Group? = nil
        required init() {}
    }

    final class Group: ModelObject {
        @Attribute var title: String? = nil
        @Attribute var rank = 0
        @Relationship var items: [Item] = []
        required init() {}
    }

    static let names = ["apple", "Apple", "Äpfel", "banana", "b", "", "zebra"]
    static let labels = ["a", "B", "é", "e", "É"]
    static let prices = ["1.5", "1.50", "2", "10", "0.1", "0.10000000000000000001"]
    static let tokens = (1...3).compactMap { UUID(uuidString: "00000000-0000-0000-0000-00000000000\($0)") }

    /// Item `index`'s values (the same for the same index, whatever the test).
    static func item(_ index: Int, groups: [Group]) -> Item {
        let item = Item()
        item.name = names[index % names.count]
        item.label = index % 3 == 0 ? nil : labels[index % labels.count]
        item.count = index % 4 == 1 ? nil : (index * 7) % 5
        item.rank = index % 3
        item.score = Double((index * 5) % 4) / 2
        item.ratio = Float((index * 3) % 5) / 3
        item.price = index % 7 == 0 ? nil : Decimal(string: prices[index % prices.count])
        item.due = index % 5 == 2 ? nil : Date(timeIntervalSince1970: Double((index * 11) % 4) * 86_400)
        item.token = index % 4 == 0 ? nil : tokens[index % tokens.count]
        item.group = index % 7 == 3 || groups.isEmpty ? nil : groups[index % groups.count]
        return item
    }

    /// A document of `count` saved items in four groups (one without a title), and its container.
    static func makeItems(_ directory: ScratchDirectory, count: Int = 60) throws -> ModelContainer {
        let container = try ModelContainer(
            for: Item.self, configurations: ModelConfiguration(url: directory.appending("items.deck")))
        let context = ModelContext(container)
        let groups = [(nil, 1), ("Spanish", 0), ("spanish", 1), ("French", 0)].map { title, rank in
            let group = Group()
            group.title = title
            group.rank = rank
            return group
        }
        for group in groups { context.insert(group) }
        for index in 0..<count { context.insert(item(index, groups: groups)) }
        try context.save()
        return container
    }

    /// Every order the store sorts models by: each property type either way, texts with and
    /// without a folding, paths through the group, several keys.
    static let orders: [[SortDescriptor<Item>]] = [
        [SortDescriptor(\.name)], [SortDescriptor(\.name, comparator: .lexical, order: .reverse)],
        [SortDescriptor(\.label), SortDescriptor(\.rank, order: .reverse)],
        [SortDescriptor(\.label, order: .reverse)], [SortDescriptor(\.label, comparator: .lexical)],
        [SortDescriptor(\.count, order: .reverse), SortDescriptor(\.name, comparator: .lexical)],
        [SortDescriptor(\.count)], [SortDescriptor(\.rank)], [SortDescriptor(\.score)],
        [SortDescriptor(\.ratio, order: .reverse)], [SortDescriptor(\.price)],
        [SortDescriptor(\.price, order: .reverse), SortDescriptor(\.due)],
        [SortDescriptor(\.due, order: .reverse)],
        [SortDescriptor(\.token)], [SortDescriptor(\.token, order: .reverse)],
        [SortDescriptor(\.group?.title), SortDescriptor(\.rank)],
        [SortDescriptor(\.group?.title, order: .reverse)],
        [SortDescriptor(\.group?.rank, order: .reverse), SortDescriptor(\.count)],
        [SortDescriptor(\.rank), SortDescriptor(\.count), SortDescriptor(\.label, order: .reverse)],
    ]
}

/// `enumerate(_:batchSize:block:)` visits each selected model once, in the descriptor's order,
/// a batch at a time.
@Suite("Enumerating models in batches", .timed)
struct EnumerateTests {
    typealias Item = Sorting.Item

    /// Thrown by a block that has met more models than a test has: batches that repeat models
    /// fail the test rather than run for ever.
    struct Runaway: Error {}

    /// The identifiers of the models `descriptor` selects, met by enumerating in batches of `size`.
    func enumerated(
        _ context: ModelContext, _ descriptor: FetchDescriptor<Item>, size: Int,
        also: (Item) throws -> Void = { _ in }
    ) throws -> [PersistentIdentifier] {
        var seen: [PersistentIdentifier] = []
        try context.enumerate(descriptor, batchSize: size) { item in
            seen.append(item.persistentModelID)
            guard seen.count <= 1_000 else { throw Runaway() }
            try also(item)
        }
        return seen
    }

    /// The identifiers of one fetch of `descriptor`.
    func fetched(_ context: ModelContext, _ descriptor: FetchDescriptor<Item>) throws
        -> [PersistentIdentifier]
    {
        try context.fetch(descriptor).map(\.persistentModelID)
    }

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
            guard seen.count <= 1_000 else { throw Runaway() }
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

    @Test("Every order the store sorts by, in batches of every size: what one sorted fetch gives")
    func everyOrder() throws {
        let directory = try ScratchDirectory()
        let context = ModelContext(try Sorting.makeItems(directory))
        for order in Sorting.orders {
            let descriptor = FetchDescriptor<Item>(sortBy: order)
            let expected = try fetched(context, descriptor)
            #expect(expected.count == 60)
            for size in [1, 2, 3, 7, 60, 100] {
                #expect(
                    try enumerated(context, descriptor, size: size) == expected,
                    "\(order), batches of \(size)")
            }
        }
    }

    @Test("Nulls and ties at batch borders: each in its place, ties by record")
    func nullsAndTies() throws {
        let directory = try ScratchDirectory()
        let container = try ModelContainer(
            for: Item.self, configurations: ModelConfiguration(url: directory.appending("nulls.deck")))
        let context = ModelContext(container)
        let labels: [String?] = [nil, nil, nil, "a", "a", nil, "b", nil, "b", nil]
        var items: [Item] = []
        for label in labels {
            let item = Item()
            item.label = label
            context.insert(item)
            items.append(item)
        }
        try context.save()
        let ids = items.map(\.persistentModelID)
        func inOrder(_ indexes: [Int]) -> [PersistentIdentifier] { indexes.map { ids[$0] } }
        // Nulls first ascending and last descending, and in each group the order of insertion.
        let ascending = inOrder([0, 1, 2, 5, 7, 9, 3, 4, 6, 8])
        let descending = inOrder([6, 8, 3, 4, 0, 1, 2, 5, 7, 9])
        for size in 1...5 {
            for folding in [false, true] {
                let forward =
                    folding ? SortDescriptor<Item>(\.label) : SortDescriptor(\.label, comparator: .lexical)
                let reverse =
                    folding
                    ? SortDescriptor<Item>(\.label, order: .reverse)
                    : SortDescriptor(\.label, comparator: .lexical, order: .reverse)
                #expect(try enumerated(context, FetchDescriptor(sortBy: [forward]), size: size) == ascending)
                #expect(try enumerated(context, FetchDescriptor(sortBy: [reverse]), size: size) == descending)
            }
        }
    }

    @Test("Sorted, with an offset and a limit: the offset before the first batch, the limit over all")
    func sortedWindow() throws {
        let directory = try ScratchDirectory()
        let context = ModelContext(try Sorting.makeItems(directory))
        var descriptor = FetchDescriptor<Item>(sortBy: [SortDescriptor(\.rank), SortDescriptor(\.label)])
        descriptor.fetchOffset = 3
        descriptor.fetchLimit = 12
        let expected = try fetched(context, descriptor)
        #expect(expected.count == 12)
        for size in 1...13 {
            #expect(try enumerated(context, descriptor, size: size) == expected, "batches of \(size)")
        }
        descriptor.fetchLimit = 0
        #expect(try enumerated(context, descriptor, size: 5).isEmpty)
        descriptor.fetchLimit = -1
        #expect(throws: DeckError.self) { try enumerated(context, descriptor, size: 5) }
    }

    @Test("Sorted, the block deleting each model it meets: none skipped, none met twice")
    func sortedDeleting() throws {
        for (includePending, saving) in [(true, false), (true, true), (false, true)] {
            let directory = try ScratchDirectory()
            let context = ModelContext(try Sorting.makeItems(directory))
            var descriptor = FetchDescriptor<Item>(
                sortBy: [SortDescriptor(\.rank, order: .reverse), SortDescriptor(\.label)])
            descriptor.includePendingChanges = includePending
            let expected = try fetched(context, descriptor)
            var met = 0
            let seen = try enumerated(context, descriptor, size: 4) { item in
                context.delete(item)
                met += 1
                if saving && met % 3 == 0 { try context.save() }
            }
            #expect(seen == expected, "including pending changes: \(includePending), saving: \(saving)")
            try context.save()
            #expect(try context.fetchCount(FetchDescriptor<Item>()) == 0)
        }
    }

    @Test("Sorted, the block deleting models it has not met yet: they are not met")
    func sortedDeletingAhead() throws {
        let directory = try ScratchDirectory()
        let context = ModelContext(try Sorting.makeItems(directory))
        let descriptor = FetchDescriptor<Item>(sortBy: [SortDescriptor(\.score), SortDescriptor(\.name)])
        let expected = try context.fetch(descriptor)
        // Meeting the first model, the block deletes every third one after its batch of 5 (those
        // of the batch are already read).
        let doomed = Set(stride(from: 6, to: expected.count, by: 3).map { expected[$0].persistentModelID })
        let seen = try enumerated(context, descriptor, size: 5) { item in
            if item === expected[0] {
                for model in expected where doomed.contains(model.persistentModelID) { context.delete(model) }
            }
        }
        #expect(seen == expected.map(\.persistentModelID).filter { !doomed.contains($0) })
    }

    @Test(
        "Sorted, the block changing a sort property: a model moved after the batches read is met again, one moved before them is not met"
    )
    func sortedMoving() throws {
        for includePending in [true, false] {
            let directory = try ScratchDirectory()
            let context = ModelContext(try Sorting.makeItems(directory, count: 20))
            var descriptor = FetchDescriptor<Item>(sortBy: [SortDescriptor(\.count), SortDescriptor(\.name)])
            descriptor.includePendingChanges = includePending
            let expected = try context.fetch(descriptor)
            let first = expected[0]
            let late = expected[15]
            let seen = try enumerated(context, descriptor, size: 4) { item in
                guard item === first else { return }
                // The first model moves to the end, a model not yet met to the front.
                first.count = 100
                late.count = nil
                late.name = ""
            }
            let ids = expected.map(\.persistentModelID)
            if includePending {
                #expect(seen == ids.filter { $0 != late.persistentModelID } + [first.persistentModelID])
            } else {
                // Unsaved changes do not reach the store's order: nothing moves.
                #expect(seen == ids)
            }
        }
    }

    @Test(
        "Unsaved models, with pending changes included: in their place, whatever the block inserts or deletes"
    )
    func unsavedModels() throws {
        let directory = try ScratchDirectory()
        let container = try Sorting.makeItems(directory, count: 30)
        let orders: [[SortDescriptor<Item>]] = [
            [SortDescriptor(\.rank)], [SortDescriptor(\.label, order: .reverse)],
            [SortDescriptor(\.group?.title), SortDescriptor(\.score, order: .reverse)],
        ]
        for order in orders {
            for size in [1, 2, 3, 7] {
                let context = ModelContext(container)
                let groups = try context.fetch(FetchDescriptor<Sorting.Group>())
                // Unsaved models that tie with saved ones and with each other.
                for index in 0..<12 { context.insert(Sorting.item(index, groups: groups)) }
                let descriptor = FetchDescriptor<Item>(sortBy: order)
                let expected = try fetched(context, descriptor)
                #expect(expected.count == 42)
                #expect(
                    try enumerated(context, descriptor, size: size) == expected,
                    "\(order), batches of \(size)")
                // Deleting each model met, the unsaved ones too (which gives the others new ids in
                // each batch's transaction).
                let seen = try enumerated(context, descriptor, size: size) { context.delete($0) }
                #expect(seen == expected, "deleting: \(order), batches of \(size)")
                #expect(try context.fetchCount(FetchDescriptor<Item>()) == 0)
                context.rollback()
            }
        }
    }

    @Test("Unsaved models the block inserts are met when they sort after the batches read")
    func insertingWhileEnumerating() throws {
        let directory = try ScratchDirectory()
        let context = ModelContext(try Sorting.makeItems(directory, count: 20))
        let descriptor = FetchDescriptor<Item>(sortBy: [SortDescriptor(\.rank), SortDescriptor(\.name)])
        var inserted: [Item] = []
        var seen: [String] = []
        try context.enumerate(descriptor, batchSize: 3) { item in
            seen.append(item.name)
            guard seen.count <= 1_000 else { throw Runaway() }
            guard inserted.count < 2 else { return }
            // One that sorts before everything, one after everything.
            let before = Item()
            before.rank = -1
            before.name = "before"
            let after = Item()
            after.rank = 9
            after.name = "after"
            context.insert(before)
            context.insert(after)
            inserted += [before, after]
        }
        #expect(seen.count == 21)
        #expect(!seen.contains("before"))
        #expect(seen.last == "after")
    }
}
