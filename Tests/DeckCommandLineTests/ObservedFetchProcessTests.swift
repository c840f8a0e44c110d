import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// Notes, some pinned: the models of the observed fetch across processes.
enum Watched {
    final class Note: ModelObject {
        @DeckKit.Attribute var text = ""
        @DeckKit.Attribute var pinned = false

        convenience init(text: String, pinned: Bool) {
            self.init()
            self.text = text
            self.pinned = pinned
        }
    }
}

/// Keeps the texts of each element of an observed fetch of pinned notes, iterated in a task on
/// the main actor.
@MainActor final class PinnedNotes {
    let context: ModelContext
    private(set) var elements: [[String]] = []
    private(set) var error: DeckError?
    private var task: Task<Void, Never>?

    init(_ context: ModelContext) { self.context = context }

    func start() {
        let pinned = FetchDescriptor<Watched.Note>(
            predicate: #Predicate { $0.pinned }, sortBy: [SortDescriptor(\.text)])
        task = Task {
            do throws(DeckError) {
                for try await notes in context.fetchUpdates(pinned, pollingEvery: .milliseconds(10)) {
                    elements.append(notes.map(\.text))
                }
            } catch {
                self.error = error
            }
        }
    }

    func stop() { task?.cancel() }

    /// Waits, leaving the main actor free, until `count` elements came (a minute at most).
    func waitFor(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while elements.count < count && error == nil {
            guard ContinuousClock.now < deadline else {
                Issue.record(
                    "no element \(count) within a minute: \(elements)", sourceLocation: sourceLocation)
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(error == nil, sourceLocation: sourceLocation)
    }
}

/// `ModelContext.fetchUpdates` on a document open read-only follows what another process
/// (`deck`) commits to it.
@Suite("Observed fetches across processes", .timeLimit(.minutes(5)), .timed)
@MainActor struct ObservedFetchProcessTests {
    @Test("Yields after another process's commits that change its results, and not for others")
    func yieldsAfterAnotherProcessCommits() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Notes.deck")
        let url = URL(fileURLWithPath: path)
        do {
            let writer = try ModelContainer(
                for: Watched.Note.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(writer)
            context.insert(Watched.Note(text: "first", pinned: true))
            try context.save()
        }
        let reader = try ModelContainer(
            for: Watched.Note.self, configurations: ModelConfiguration(url: url, allowsSave: false))
        let notes = PinnedNotes(ModelContext(reader))
        notes.start()
        try await notes.waitFor(1)
        // A note the fetch does not return: no element. (The observer gets several turns to
        // look before the next commit.)
        let unpinned = try deck("insert", path, "Note", "text=later", "pinned=false")
        try #require(unpinned.status == 0, "\(unpinned.stderr)")
        for _ in 0..<10 { try await Task.sleep(for: .milliseconds(10)) }
        let pinned = try deck("insert", path, "Note", "text=second", "pinned=true")
        try #require(pinned.status == 0, "\(pinned.stderr)")
        try await notes.waitFor(2)
        // A changed value of a note it returns.
        let renamed = try deck("update", path, "Note", "text=premier", "--where", "text == \"first\"")
        try #require(renamed.status == 0, "\(renamed.stderr)")
        try await notes.waitFor(3)
        notes.stop()
        #expect(notes.elements == [["first"], ["first", "second"], ["premier", "second"]])
    }
}
