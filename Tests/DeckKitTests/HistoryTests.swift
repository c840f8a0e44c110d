import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// `ModelContext.fetchHistory` (SwiftData's history API, over the store's change log, spec
/// 20.10): the saves that made the document as it is, by model type, after a token.
@Suite("A document's history, by model type", .timed)
struct HistoryTests {
    typealias Note = SaveGraphTests.Note
    typealias Tag = SaveGraphTests.Tag

    func makeContainer(_ url: URL) throws -> ModelContainer {
        try ModelContainer(
            for: Note.self, Tag.self, SaveGraphTests.Pin.self, configurations: ModelConfiguration(url: url))
    }

    /// The changes of `transactions` as (kind, entity, properties) triples, in order.
    func summary(_ transactions: [DefaultHistoryTransaction]) -> [String] {
        transactions.flatMap(\.changes).map { change in
            switch change {
            case .insert(let insert):
                "insert \(insert.changedPersistentIdentifier.entityName) \(insert.values.keys.sorted())"
            case .update(let update):
                "update \(update.changedPersistentIdentifier.entityName) \(update.updatedAttributes)"
            case .delete(let delete): "delete \(delete.changedPersistentIdentifier.entityName)"
            }
        }
    }

    @Test("Each save's inserts, updates, links and deletes are listed after a token, with their model types")
    @MainActor func savesAfterATokenAreListedByModelType() throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory.appending("notes.deck"))
        let context = container.mainContext
        let shopping = Note("shopping")
        context.insert(shopping)
        try context.save()
        let first = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>())
        #expect(summary(first) == ["insert Note [\"title\"]"])
        let token = try #require(first.last?.token)

        // A rename, a tag on the note (a link: both sides' relationships), then a delete.
        shopping.title = "groceries"
        try context.save()
        let home = Tag("home")
        shopping.tags.append(home)
        try context.save()
        let since = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>(after: token))
        #expect(since.count == 2)
        #expect(
            summary(since) == ["update Note [\"title\"]", "insert Tag [\"name\"]", "update Note [\"tags\"]"])
        // Typed as SwiftData's are: the change of a Note is a DefaultHistoryUpdate<Note>.
        let typed = since.flatMap(\.changes).compactMap { change -> [String]? in
            guard case .update(let update as DefaultHistoryUpdate<Note>) = change else { return nil }
            return update.updatedAttributes
        }
        #expect(typed == [["title"], ["tags"]])
        if case .update(let update)? = since.first?.changes.first {
            #expect(update.values["title"] == .value(.string("groceries")))
            #expect(update.changedPersistentIdentifier == shopping.persistentModelID)
        } else {
            Issue.record("no update: \(since)")
        }
        #expect(since.allSatisfy { $0.author != nil && $0.timestamp.timeIntervalSinceNow < 60 })

        let token2 = try #require(since.last?.token)
        context.delete(home)
        try context.save()
        let deleted = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>(after: token2))
        #expect(summary(deleted) == ["delete Tag", "update Note [\"tags\"]"])
        // Nothing after the last token; the token round-trips through its text.
        let last = try #require(deleted.last?.token)
        #expect(try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>(after: last)).isEmpty)
        #expect(DefaultHistoryToken(last.description) == last)
        let decoded = try JSONDecoder().decode(DefaultHistoryToken.self, from: JSONEncoder().encode(last))
        #expect(decoded == last)
        // The latest one only; a predicate on the transactions.
        var descriptor = HistoryDescriptor<DefaultHistoryTransaction>(after: token)
        descriptor.fetchLimit = 1
        let limited = try context.fetchHistory(descriptor)
        #expect(summary(limited) == ["delete Tag", "update Note [\"tags\"]"])
        // Its token covers the transactions the limit left out too.
        let afterLimited = try #require(limited.last?.token)
        #expect(
            try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>(after: afterLimited))
                .isEmpty)
        let cutoff = since[0].clock
        let later = try context.fetchHistory(
            HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.clock > cutoff }))
        // The save that made the tag lists nothing now: the tag and its link are gone, listed
        // under the delete (the history is the document as it is).
        #expect(summary(later) == ["delete Tag", "update Note [\"tags\"]"])
        for limit in [0, -1] {
            descriptor.fetchLimit = limit
            #expect(throws: DeckError.self) { try context.fetchHistory(descriptor) }
            descriptor.predicate = #Predicate { $0.clock > 0 }
            #expect(throws: DeckError.self) { try context.fetchHistory(descriptor) }
            descriptor.predicate = nil
        }
    }

    @Test("A copy's saves merged in are listed after the token taken before the merge")
    @MainActor func mergedSavesAreListedAfterTheTokenTakenBefore() async throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("notes.deck")
        let container = try makeContainer(url)
        let context = container.mainContext
        context.insert(Note("shopping"))
        try context.save()
        let archive = directory.appending("copy.zip")
        try await DeckDocument.export(at: url, to: archive)
        let copyURL = directory.appending("copy.deck")
        _ = try await DeckDocument.importArchive(at: archive, to: copyURL)
        // There, a note made before the one made here afterwards: an earlier clock.
        let copy = try makeContainer(copyURL)
        let other = ModelContext(copy)
        other.insert(Note("from the copy"))
        try other.save()
        try copy.store.close()
        context.insert(Note("here"))
        try context.save()
        let token = try #require(
            try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>()).last?.token)
        try container.merge(from: copyURL)
        let since = try context.fetchHistory(HistoryDescriptor<DefaultHistoryTransaction>(after: token))
        let inserted = since.flatMap(\.changes).compactMap { change -> PersistentIdentifier? in
            guard case .insert(let insert as DefaultHistoryInsert<Note>) = change else { return nil }
            return insert.changedPersistentIdentifier
        }
        let fromCopy = try #require(
            try context.fetch(FetchDescriptor<Note>(predicate: #Predicate { $0.title == "from the copy" }))
                .first)
        #expect(inserted == [fromCopy.persistentModelID])
    }
}
