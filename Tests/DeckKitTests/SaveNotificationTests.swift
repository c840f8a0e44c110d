import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// `ModelContext.willSave` and `didSave`, as SwiftData posts them.
@Suite("Save notifications", .timed)
struct SaveNotificationTests {
    typealias Card = Flash.Card
    typealias Deck = Flash.Deck

    /// What a context posted: each notification's name and, for `didSave`, its identifiers.
    final class Recorder: @unchecked Sendable {
        struct Posted: Equatable {
            var name: Notification.Name
            var inserted: Set<PersistentIdentifier> = []
            var updated: Set<PersistentIdentifier> = []
            var deleted: Set<PersistentIdentifier> = []
        }
        private let lock = NSLock()
        private var list: [Posted] = []
        private var tokens: [any NSObjectProtocol] = []

        /// Records what `context` posts, and nothing any other context posts.
        init(_ context: ModelContext) {
            for name in [ModelContext.willSave, ModelContext.didSave] {
                tokens.append(
                    NotificationCenter.default.addObserver(forName: name, object: context, queue: nil) {
                        [unowned self] notification in
                        func ids(_ key: ModelContext.NotificationKey) -> Set<PersistentIdentifier> {
                            Set(notification.userInfo?[key.rawValue] as? [PersistentIdentifier] ?? [])
                        }
                        let posted = Posted(
                            name: notification.name, inserted: ids(.insertedIdentifiers),
                            updated: ids(.updatedIdentifiers), deleted: ids(.deletedIdentifiers))
                        lock.withLock { list.append(posted) }
                    })
            }
        }

        deinit { for token in tokens { NotificationCenter.default.removeObserver(token) } }

        /// What was posted since the last call.
        func take() -> [Posted] {
            lock.withLock {
                defer { list = [] }
                return list
            }
        }
    }

    @Test("A save posts willSave, then didSave with the identifiers it inserted, updated and deleted")
    func insertsUpdatesAndDeletes() throws {
        let container = try ModelContainer(
            for: Deck.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let other = ModelContext(container)
        let recorder = Recorder(context)
        let otherRecorder = Recorder(other)

        let spanish = Deck(title: "Spanish")
        let hola = Card(front: "hola")
        spanish.cards.append(hola)
        let french = Deck(title: "French")
        let merci = Card(front: "merci")
        french.cards.append(merci)
        context.insert(spanish)
        context.insert(french)
        try context.save()
        let ids = [
            spanish.persistentModelID, hola.persistentModelID, french.persistentModelID,
            merci.persistentModelID,
        ]
        #expect(
            recorder.take() == [
                .init(name: ModelContext.willSave),
                .init(name: ModelContext.didSave, inserted: Set(ids)),
            ])

        // A change, and a delete whose rule cascades to a card this context holds.
        hola.back = "hello"
        context.delete(french)
        try context.save()
        let posted = recorder.take()
        #expect(posted.map(\.name) == [ModelContext.willSave, ModelContext.didSave])
        #expect(posted.last?.inserted == [])
        #expect(posted.last?.updated.contains(hola.persistentModelID) == true)
        #expect(posted.last?.deleted == [french.persistentModelID, merci.persistentModelID])

        // Nothing to save: nothing posted. The other context posted nothing at all.
        try context.save()
        #expect(recorder.take().isEmpty)
        #expect(otherRecorder.take().isEmpty)
        #expect(try other.fetchCount(FetchDescriptor<Card>()) == 1)
    }

    @Test("A save that fails posts willSave and no didSave; a read-only context posts nothing")
    func failures() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        let container = try ModelContainer(for: Deck.self, configurations: ModelConfiguration(url: url))
        let context = ModelContext(container)
        let recorder = Recorder(context)
        let card = Card(front: "perro")
        context.insert(card)
        let photo = directory.appending("photo.bin")
        try Data(repeating: 7, count: 100_000).write(to: photo)
        try context.setExternalStorage(\.image, of: card, contentsOf: photo)
        try FileManager.default.removeItem(at: photo)
        #expect(throws: DeckError.self) { try context.save() }
        #expect(recorder.take().map(\.name) == [ModelContext.willSave])
        #expect(context.hasChanges)

        let reader = ModelContext(
            try ModelContainer(
                for: Deck.self, configurations: ModelConfiguration(url: url, allowsSave: false)))
        let readerRecorder = Recorder(reader)
        reader.insert(Card(front: "gato"))
        #expect(throws: DeckError.self) { try reader.save() }
        #expect(readerRecorder.take().isEmpty)
    }
}
