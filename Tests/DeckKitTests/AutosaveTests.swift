import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// The main context saves by itself after a quiet interval, and as its container goes away;
/// other contexts save when told.
// A task's sleep ends through the queue where the tests that are ready to run wait: when Swift
// Testing starts the whole suite at once, the autosave's quiet interval and the polls below end
// only after nearly every other test has run (more than ten minutes under ThreadSanitizer).
// Scripts/test and Scripts/sanitize run at most eight tests at once, so they end on time.
@Suite("Autosave of the main context", .timed)
@MainActor struct AutosaveTests {
    func makeContainer(_ url: URL, allowsSave: Bool = true) throws -> ModelContainer {
        try ModelContainer(
            for: Flash.Card.self, Flash.Deck.self,
            configurations: ModelConfiguration(url: url, allowsSave: allowsSave))
    }

    /// The cards saved in the document, as a context of its own sees them.
    func savedCount(_ container: ModelContainer) throws -> Int {
        try ModelContext(container).fetchCount(FetchDescriptor<Flash.Card>())
    }

    /// Waits (on the main actor, so the autosave can run) until `condition` holds, or ten minutes.
    ///
    /// The limit only ends a test whose autosave never comes: a sleep's end can wait for the
    /// tests ahead of it in the queue (see above), and no test here depends on how long it takes.
    func waitUntil(_ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(600)
        while try !condition(), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test("The main context autosaves; a context of one's own does not")
    func defaults() throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory.appending("cards.deck"))
        #expect(container.mainContext.autosaveEnabled)
        #expect(container.mainContext.autosaveDelay == .seconds(1))
        #expect(!ModelContext(container).autosaveEnabled)
    }

    @Test("An insert is saved once the quiet interval has passed, not before")
    func savesAfterTheQuietInterval() async throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory.appending("cards.deck"))
        let context = container.mainContext
        context.autosaveDelay = .milliseconds(20)
        context.insert(Flash.Card(front: "hola"))
        // Nothing has run on the main actor since: the autosave cannot have happened yet.
        #expect(try savedCount(container) == 0)
        try await waitUntil { !context.hasChanges }
        #expect(!context.hasChanges)
        #expect(try savedCount(container) == 1)
        #expect(context.lastAutosaveError == nil)
    }

    @Test("A change to a saved model and a delete are autosaved too")
    func changesAndDeletesAreAutosaved() async throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory.appending("cards.deck"))
        let context = container.mainContext
        context.autosaveDelay = .milliseconds(20)
        let card = Flash.Card(front: "hola")
        let other = Flash.Card(front: "adiós")
        context.insert(card)
        context.insert(other)
        try context.save()
        card.back = "hello"
        context.delete(other)
        #expect(context.hasChanges)
        try await waitUntil { !context.hasChanges }
        let savedContext = ModelContext(container)
        let saved = try savedContext.fetch(FetchDescriptor<Flash.Card>())
        #expect(
            saved.map(\.back) == ["hello"],
            "changes pending: \(context.hasChanges), last autosave error: \(String(describing: context.lastAutosaveError))"
        )
    }

    @Test("Turning autosave off keeps the changes pending until a save")
    func disabled() async throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory.appending("cards.deck"))
        let context = container.mainContext
        context.autosaveDelay = .milliseconds(10)
        context.autosaveEnabled = false
        context.insert(Flash.Card(front: "hola"))
        try await Task.sleep(for: .milliseconds(100))
        #expect(context.hasChanges)
        #expect(try savedCount(container) == 0)
        // Turned on again, it saves what is pending.
        context.autosaveEnabled = true
        try await waitUntil { !context.hasChanges }
        #expect(try savedCount(container) == 1)
    }

    @Test("The main context's changes are saved when its container goes away")
    func savesWhenTheContainerGoesAway() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        do {
            let container = try makeContainer(url)
            container.mainContext.insert(Flash.Card(front: "kept"))
        }
        let reopened = try makeContainer(url)
        let cardsContext = ModelContext(reopened)
        let cards = try cardsContext.fetch(FetchDescriptor<Flash.Card>())
        #expect(cards.map(\.front) == ["kept"])
    }

    @Test("A failed autosave is reported and the changes stay pending")
    func failureIsReported() async throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        try makeContainer(url).mainContext.save()
        let container = try makeContainer(url, allowsSave: false)
        let context = container.mainContext
        context.autosaveDelay = .milliseconds(10)
        context.insert(Flash.Card(front: "hola"))
        try await waitUntil { context.lastAutosaveError != nil }
        guard case .readOnly = context.lastAutosaveError else {
            Issue.record("expected readOnly, got \(String(describing: context.lastAutosaveError))")
            return
        }
        #expect(context.hasChanges)
    }

    @Test("A container that goes away off the main actor saves its main context there, then closes")
    func containerGoesAwayOnAnotherThread() async throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        var container: ModelContainer? = try makeContainer(url)
        // The main context goes with its container (one kept elsewhere would keep the document
        // open, and autosave by itself).
        weak var context: ModelContext?
        do {
            let main = try #require(container?.mainContext)
            main.insert(Flash.Card(front: "kept"))
            context = main
        }
        // The last reference goes away on another thread.
        struct Handoff: @unchecked Sendable { var container: ModelContainer? }
        var handoff = Handoff(container: container)
        container = nil
        let released = Task.detached { [handoff] in
            var last = handoff
            last.container = nil
        }
        handoff.container = nil
        await released.value
        // The save and the close run on the main actor, which this test leaves free while it waits.
        try await waitUntil { context == nil }
        var reopened: ModelContainer?
        try await waitUntil {
            reopened = try? makeContainer(url)
            return reopened != nil
        }
        let cards = try ModelContext(try #require(reopened)).fetch(FetchDescriptor<Flash.Card>())
        #expect(cards.map(\.front) == ["kept"])
    }

    @Test("The autosave waits for another writer without blocking the main actor")
    func autosaveDoesNotBlockTheMainActor() async throws {
        let directory = try ScratchDirectory()
        let container = try makeContainer(directory.appending("cards.deck"))
        let context = container.mainContext
        context.autosaveDelay = .milliseconds(10)
        // Another writer holds the document's writer.
        let transaction = try container.store.beginTransaction()
        context.insert(Flash.Card(front: "hola"))
        // Let the autosave start and wait; the main actor keeps running this test meanwhile.
        var ticks = 0
        while ticks < 20 {
            try await Task.sleep(for: .milliseconds(10))
            ticks += 1
        }
        #expect(context.hasChanges)
        transaction.rollback()
        try await waitUntil { !context.hasChanges }
        #expect(try savedCount(container) == 1)
    }
}
