import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// The store tells this process's observers of each commit (but its author), and a read-only
/// store notices another writer's commits by its data version.
@Suite(.timed) struct CommitObserverTests {
    /// The change sets an observer heard of, in order.
    final class Heard: Sendable {
        let changes = Locked<[ChangeSet]>([])
        func append(_ set: ChangeSet) { changes.withLock { $0.append(set) } }
        var all: [ChangeSet] { changes.withLock { $0 } }
    }

    func withStore<T>(_ body: (PackageStore, ScratchDirectory) throws -> T) throws -> T {
        let sandbox = try ScratchDirectory()
        let store = try PackageStore.create(
            at: sandbox.appending("Cards.deck"), contentType: SampleCards.contentType,
            schema: SampleCards.schema)
        defer { try? store.close(discardingChanges: true) }
        return try body(store, sandbox)
    }

    func insertDeck(_ transaction: StoreTransaction, _ title: String) throws -> Int64 {
        try transaction.insert("Deck", ["title": .string(title), "created": .date(.now)])
    }

    @Test func observersHearEachCommitButTheirOwnInOrder() throws {
        try withStore { store, _ in
            let first = Heard()
            let second = Heard()
            let one = store.observeCommits { first.append($0) }
            let two = store.observeCommits { second.append($0) }
            let (a, changesA) = try store.write { try insertDeck($0, "a") }
            // The second observer's own transaction: only the first hears of it.
            let (b, changesB) = try store.write { tx in
                tx.author = two
                return try insertDeck(tx, "b")
            }
            // Nothing changed, or rolled back: no one hears.
            try store.write { _ in }
            let long = try store.beginTransaction()
            _ = try insertDeck(long, "gone")
            long.rollback()
            // A long transaction's commit is heard like a write's.
            let committed = try store.beginTransaction()
            let c = try insertDeck(committed, "c")
            let changesC = try committed.commit()
            #expect(first.all == [changesA, changesB, changesC])
            #expect(second.all == [changesA, changesC])
            #expect(first.all.map { $0.inserted["Deck"] } == [[a], [b], [c]])
            _ = one
        }
    }

    @Test func anObservationThatGoesAwayIsRemoved() throws {
        try withStore { store, _ in
            let heard = Heard()
            var observation: CommitObservation? = store.observeCommits { heard.append($0) }
            #expect(store.commitObservers.count == 1)
            try store.write { _ = try insertDeck($0, "a") }
            observation = nil
            #expect(observation == nil)
            #expect(store.commitObservers.count == 0)
            try store.write { _ = try insertDeck($0, "b") }
            #expect(heard.all.count == 1)
            let kept = store.observeCommits { heard.append($0) }
            kept.cancel()
            #expect(store.commitObservers.count == 0)
        }
    }

    @Test func closingDropsTheObservers() throws {
        try withStore { store, _ in
            let kept = store.observeCommits { _ in }
            #expect(store.commitObservers.count == 1)
            try store.close()
            #expect(store.commitObservers.count == 0)
            _ = kept
        }
    }

    @Test func aReadOnlyStoresDataVersionMovesWithAnotherWritersCommits() throws {
        try withStore { writer, sandbox in
            #expect(writer.dataVersion() == nil)
            try writer.write { _ = try insertDeck($0, "a") }
            let reader = try PackageStore.open(at: sandbox.appending("Cards.deck"), mode: .readOnly)
            defer { try? reader.close() }
            let before = try #require(reader.dataVersion())
            _ = try reader.read { try $0.count(RecordQuery("Deck")) }
            #expect(reader.dataVersion() == before)
            try writer.write { _ = try insertDeck($0, "b") }
            let after = try #require(reader.dataVersion())
            #expect(after != before)
            #expect(reader.dataVersion() == after)
            try reader.close()
            #expect(reader.dataVersion() == nil)
        }
    }
}
