import DeckKit
import DeckTestTiming
import Foundation
import Observation
import Testing

/// The fronts of cards, sorted: what the observed fetches here are compared by.
@MainActor func cardFronts(_ cards: [Flash.Card]) -> [String] { cards.map(\.front).sorted() }

/// A screen's list of cards, as an app would keep one: it iterates `context.fetchUpdates` in a
/// task on the main actor and keeps each element's fronts.
@MainActor final class ObservedCardList {
    let context: ModelContext
    let descriptor: FetchDescriptor<Flash.Card>
    private(set) var elements: [[String]] = []
    private(set) var error: DeckError?
    private(set) var isFinished = false
    private(set) var task: Task<Void, Never>?

    init(_ context: ModelContext, _ descriptor: FetchDescriptor<Flash.Card> = FetchDescriptor()) {
        self.context = context
        self.descriptor = descriptor
    }

    func start() {
        task = Task {
            do throws(DeckError) {
                for try await cards in context.fetchUpdates(descriptor, pollingEvery: .milliseconds(10)) {
                    elements.append(cardFronts(cards))
                }
            } catch {
                self.error = error
            }
            isFinished = true
        }
    }

    /// Waits (leaving the main actor free) until `count` elements came, failing after a minute.
    func waitFor(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await waitForEvent(sourceLocation: sourceLocation) {
            self.elements.count >= count || self.error != nil
        }
        #expect(error == nil, sourceLocation: sourceLocation)
    }
}

/// Waits on the main actor, leaving it free, until `condition` holds; records an issue after a
/// minute (a bound for an event that never comes, not a measure of time).
@MainActor func waitForEvent(
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: @MainActor () -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("the awaited event did not come within a minute", sourceLocation: sourceLocation)
            return
        }
        try await Task.sleep(for: .milliseconds(2))
    }
}

/// Lets the main actor run what is already queued on it (a commit's wake-up of an observed
/// fetch, queued before this), so that what comes next is a separate event.
@MainActor func letQueuedWorkRun() async {
    for _ in 0..<20 { await Task.yield() }
}

/// Saves cards in a context of its own, off the main actor.
actor CardWriter: ModelActor {
    nonisolated let modelContainer: ModelContainer
    nonisolated let modelExecutor: any ModelExecutor

    init(modelContainer: ModelContainer) {
        self.modelContainer = modelContainer
        modelExecutor = DefaultSerialModelExecutor(modelContext: ModelContext(modelContainer))
    }

    func add(_ fronts: [String]) throws {
        for front in fronts { modelContext.insert(Flash.Card(front: front)) }
        try modelContext.save()
    }

    /// Iterates the cards' updates in the actor's own context until `count` cards are there,
    /// telling `counts` each element's count.
    func watch(until count: Int, counts: AsyncStream<Int>.Continuation) async throws {
        for try await cards in modelContext.fetchUpdates(FetchDescriptor<Flash.Card>()) {
            counts.yield(cards.count)
            if cards.count >= count { break }
        }
        counts.finish()
    }
}

/// `ModelContext.fetchUpdates` and `QueryResults`: the results of a fetch follow what is saved,
/// once per change of them.
@Suite("Observed fetches", .timeLimit(.minutes(5)), .timed)
@MainActor struct ObservedFetchTests {
    typealias Card = Flash.Card
    typealias Deck = Flash.Deck

    static func makeContainer() throws -> ModelContainer {
        try ModelContainer(
            for: Card.self, Deck.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
    }

    @Test("Yields the results, then again after a save in another context")
    func yieldsAfterAnotherContextsSave() async throws {
        let container = try Self.makeContainer()
        let list = ObservedCardList(container.mainContext)
        list.start()
        try await list.waitFor(1)
        let other = ModelContext(container)
        other.insert(Card(front: "hola"))
        try other.save()
        try await list.waitFor(2)
        #expect(list.elements == [[], ["hola"]])
        // A change of a saved value, and a deletion.
        let hola = try #require(try other.fetch(FetchDescriptor<Card>()).first)
        hola.front = "¡hola!"
        try other.save()
        try await list.waitFor(3)
        other.delete(hola)
        try other.save()
        try await list.waitFor(4)
        #expect(list.elements == [[], ["hola"], ["¡hola!"], []])
        list.task?.cancel()
    }

    @Test("Yields after a save of its own context, and of an actor's context on another thread")
    func yieldsAfterItsOwnAndAnActorsSave() async throws {
        let container = try Self.makeContainer()
        let list = ObservedCardList(ModelContext(container))
        list.start()
        try await list.waitFor(1)
        list.context.insert(Card(front: "hola"))
        try list.context.save()
        try await list.waitFor(2)
        try await CardWriter(modelContainer: container).add(["gato"])
        try await list.waitFor(3)
        #expect(list.elements == [[], ["hola"], ["gato", "hola"]])
        list.task?.cancel()
    }

    @Test("Does not yield for commits that change other entities or records it does not return")
    func doesNotYieldForOtherChanges() async throws {
        let container = try Self.makeContainer()
        let other = ModelContext(container)
        let merci = Card(front: "merci", back: "fr")
        other.insert(merci)
        try other.save()
        let spanish = ObservedCardList(
            container.mainContext, FetchDescriptor<Card>(predicate: #Predicate { $0.back == "es" }))
        let all = ObservedCardList(container.mainContext)
        spanish.start()
        all.start()
        try await spanish.waitFor(1)
        try await all.waitFor(1)
        // Another entity: neither yields.
        other.insert(Deck(title: "Spanish"))
        try other.save()
        await letQueuedWorkRun()
        // A record the predicate does not return, inserted and changed: only `all` yields.
        other.insert(Card(front: "bonjour", back: "fr"))
        try other.save()
        await letQueuedWorkRun()
        merci.front = "merci bien"
        try other.save()
        await letQueuedWorkRun()
        other.insert(Card(front: "hola", back: "es"))
        try other.save()
        try await spanish.waitFor(2)
        try await all.waitFor(4)
        #expect(spanish.elements == [[], ["hola"]])
        #expect(
            all.elements == [
                ["merci"], ["bonjour", "merci"], ["bonjour", "merci bien"],
                ["bonjour", "hola", "merci bien"],
            ])
        spanish.task?.cancel()
        all.task?.cancel()
    }

    @Test("A burst of saves yields once")
    func coalescesABurst() async throws {
        let container = try Self.makeContainer()
        let list = ObservedCardList(container.mainContext)
        list.start()
        try await list.waitFor(1)
        // Twenty commits while the observer cannot run (this test holds the main actor).
        let other = ModelContext(container)
        for index in 0..<20 {
            other.insert(Card(front: "card \(index)"))
            try other.save()
        }
        try await list.waitFor(2)
        other.insert(Card(front: "last"))
        try other.save()
        try await list.waitFor(3)
        #expect(list.elements.map(\.count) == [0, 20, 21])
    }

    @Test("Yields after a commit another connection made to a document open read-only")
    func yieldsAfterAnotherConnectionsCommit() async throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        let writer = try ModelContainer(
            for: Card.self, Deck.self, configurations: ModelConfiguration(url: url))
        try ModelContext(writer).save()
        let reader = try ModelContainer(
            for: Card.self, Deck.self, configurations: ModelConfiguration(url: url, allowsSave: false))
        let list = ObservedCardList(
            ModelContext(reader), FetchDescriptor<Card>(predicate: #Predicate { $0.back == "es" }))
        list.start()
        try await list.waitFor(1)
        let other = ModelContext(writer)
        let merci = Card(front: "merci", back: "fr")
        other.insert(merci)
        try other.save()
        // Long enough for several checks of the store: no yield for a record it does not return.
        for _ in 0..<10 { try await Task.sleep(for: .milliseconds(10)) }
        other.insert(Card(front: "hola", back: "es"))
        try other.save()
        try await list.waitFor(2)
        #expect(list.elements == [[], ["hola"]])
        list.task?.cancel()
    }

    @Test(
        "Ending the iterating task stops the observation and lets the context go", arguments: [false, true])
    func cancellationStopsEverything(readOnly: Bool) async throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("cards.deck")
        let container = try ModelContainer(
            for: Card.self, Deck.self, configurations: ModelConfiguration(url: url))
        try ModelContext(container).save()
        let observed =
            readOnly
            ? try ModelContainer(
                for: Card.self, Deck.self, configurations: ModelConfiguration(url: url, allowsSave: false))
            : container
        weak var weakContext: ModelContext?
        var list: ObservedCardList? = ObservedCardList(ModelContext(observed))
        weakContext = list?.context
        list?.start()
        try await list?.waitFor(1)
        list?.task?.cancel()
        try await waitForEvent { list?.isFinished == true }
        #expect(list?.error == nil)
        list = nil
        // Nothing holds the context: no task runs the fetch, no poll of the store is left.
        #expect(weakContext == nil)
        // Commits after that are heard by nobody.
        let other = ModelContext(container)
        other.insert(Card(front: "hola"))
        try other.save()
    }

    @Test("QueryResults updates its models and tells Observation; it stops when it goes away")
    func queryResultsFollowsTheDocument() async throws {
        let container = try Self.makeContainer()
        weak var weakContext: ModelContext?
        weak var weakResults: QueryResults<Card>?
        do {
            let context = ModelContext(container)
            weakContext = context
            let results = try QueryResults(
                FetchDescriptor<Card>(), in: context, pollingEvery: .milliseconds(10))
            weakResults = results
            #expect(results.models.isEmpty)
            let changed = ObservedFlag()
            withObservationTracking {
                _ = results.models
            } onChange: {
                changed.set()
            }
            let other = ModelContext(container)
            other.insert(Card(front: "hola"))
            try other.save()
            try await waitForEvent { changed.isSet }
            #expect(cardFronts(results.models) == ["hola"])
            #expect(results.error == nil)
        }
        #expect(weakResults == nil)
        // Its task ends with it, and lets its context go.
        try await waitForEvent { weakContext == nil }
    }

    @Test("A ModelActor iterates the updates of its own context")
    func aModelActorObserves() async throws {
        let container = try Self.makeContainer()
        let (counts, continuation) = AsyncStream.makeStream(of: Int.self)
        let watcher = CardWriter(modelContainer: container)
        let watching = Task { try await watcher.watch(until: 2, counts: continuation) }
        var iterator = counts.makeAsyncIterator()
        #expect(await iterator.next() == 0)
        let other = ModelContext(container)
        other.insert(Card(front: "hola"))
        other.insert(Card(front: "adiós"))
        try other.save()
        #expect(await iterator.next() == 2)
        try await watching.value
    }
}

/// The observed-fetch section of `GettingStarted.md`, run.
@Suite("Observed fetch example", .timeLimit(.minutes(5)), .timed)
@MainActor struct ObservedFetchExampleTests {
    typealias Card = ReadmeModels.Card
    typealias Importer = ReadmeModels.Importer

    @Test func gettingStartedObservedFetchRuns() async throws {
        let container = try ModelContainer(
            for: Card.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = container.mainContext
        var seen: [[String]] = []
        // GETTING-STARTED-OBSERVE-BEGIN
        let importer = Importer(modelContainer: container)
        Task { try await importer.importCards([("gato", "cat"), ("perro", "dog")]) }

        let byFront = FetchDescriptor<Card>(sortBy: [SortDescriptor(\.front)])
        for try await cards in context.fetchUpdates(byFront) {
            print(cards.map(\.front))  // [], then ["gato", "perro"]
            if cards.count == 2 { break }
        }
        // GETTING-STARTED-OBSERVE-END
        seen.append(try context.fetch(byFront).map(\.front))
        // GETTING-STARTED-QUERY-RESULTS-BEGIN
        let results = try QueryResults(byFront, in: context)
        withObservationTracking {
            print(results.models.map(\.front))  // ["gato", "perro"]
        } onChange: {
            print("the cards changed")
        }
        // GETTING-STARTED-QUERY-RESULTS-END
        seen.append(results.models.map(\.front))
        #expect(seen == [["gato", "perro"], ["gato", "perro"]])
    }

    @Test func theExamplesAreInTheArticle() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let article = try String(
            contentsOf: root.appendingPathComponent("Sources/DeckKit/DeckKit.docc/GettingStarted.md"),
            encoding: .utf8)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        for name in ["GETTING-STARTED-OBSERVE", "GETTING-STARTED-QUERY-RESULTS"] {
            let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
            guard let begin = lines.firstIndex(where: { $0.hasSuffix("// \(name)-BEGIN") }),
                let end = lines.firstIndex(where: { $0.hasSuffix("// \(name)-END") })
            else {
                Issue.record("no \(name) markers")
                continue
            }
            let indentation = lines[begin].prefix { $0 == " " }.count
            let block = lines[(begin + 1)..<end].map { String($0.dropFirst(min(indentation, $0.count))) }
                .joined(separator: "\n")
            #expect(article.contains("```swift\n" + block + "\n```"), "GettingStarted.md lacks \(name)")
        }
    }
}
