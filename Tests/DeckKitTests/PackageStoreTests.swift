import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// The store's scopes as a library user sees them: `read { }`, `write { }` with change sets, long
/// transactions, closing. Public API only.
@Suite(.timed) struct PackageStoreTests {
    static let schema = StoreSchema(entities: [
        StoreSchema.Entity(
            "Deck",
            attributes: [StoreSchema.Attribute("title", .string, options: [.unique])],
            relationships: [
                StoreSchema.Relationship(
                    "cards", to: "Card", toMany: true, inverse: "deck", deleteRule: .cascade)
            ]),
        StoreSchema.Entity(
            "Card",
            attributes: [
                StoreSchema.Attribute("front", .string),
                StoreSchema.Attribute(
                    "image", .data, isOptional: true, options: [.externalStorage], externalThreshold: 16),
            ],
            relationships: [StoreSchema.Relationship("deck", to: "Deck", inverse: "cards")]),
    ])

    /// A fresh store in its own directory, closed (discarding) and removed afterwards.
    func withStore<T>(_ body: (PackageStore, URL) throws -> T) throws -> T {
        let scratch = try ScratchDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let directory = scratch.url
        let url = directory.appendingPathComponent("Cards.deck")
        let store = try PackageStore.create(at: url, contentType: "org.example.cards", schema: Self.schema)
        defer { try? store.close(discardingChanges: true) }
        return try body(store, url)
    }

    func count(_ store: PackageStore, _ entity: String) throws -> Int {
        try store.read { try $0.count(RecordQuery(entity)) }
    }

    @Test func aRecordKeepsTheGlobalIdItIsGivenAndATakenOneIsRefused() throws {
        try withStore { store, _ in
            let gid = UUID()
            let id = try store.write { try $0.insert("Card", ["front": .string("hola")], globalID: gid) }
                .value
            #expect(try store.read { try $0.recordID("Card", globalID: gid) } == id)
            #expect(try store.read { try $0.record("Card", id: id)?.globalID } == gid)
            #expect(try store.read { try $0.recordID("Card", globalID: UUID()) } == nil)
            #expect {
                try store.write { try $0.insert("Card", ["front": .string("again")], globalID: gid) }
            } throws: { error in
                guard case .invalidValue("Card", "_gid", _) = error as? DeckError else { return false }
                return true
            }
            #expect(try count(store, "Card") == 1)
        }
    }

    @Test func aWriteReturnsItsValueAndWhatItChanged() throws {
        try withStore { store, _ in
            let (ids, inserted) = try store.write { tx in
                let deck = try tx.insert("Deck", ["title": .string("Spanish")])
                let card = try tx.insert("Card", ["front": .string("hola"), "deck": .reference(deck)])
                return (deck, card)
            }
            #expect(inserted.inserted == ["Deck": [ids.0], "Card": [ids.1]])
            #expect(inserted.updated.isEmpty && inserted.deleted.isEmpty)

            let updated = try store.write { tx in
                try tx.update("Card", id: ids.1, ["front": .string("adiós")])
            }.changes
            #expect(updated.updated == ["Card": [ids.1]])
            #expect(updated.inserted.isEmpty && updated.count == 1)

            // The cascade is part of the change set.
            let deleted = try store.write { tx in try tx.delete("Deck", id: ids.0) }
            #expect(deleted.value == 2)
            #expect(deleted.changes.deleted == ["Deck": [ids.0], "Card": [ids.1]])
        }
    }

    @Test func theOtherSideOfAChangedRelationshipIsUpdated() throws {
        try withStore { store, _ in
            let (spanish, french) = try store.write { tx in
                (
                    try tx.insert("Deck", ["title": .string("Spanish")]),
                    try tx.insert("Deck", ["title": .string("French")])
                )
            }.value
            // A new record's to-one target sees it in its to-many side.
            let (card, inserted) = try store.write { tx in
                try tx.insert("Card", ["front": .string("hola"), "deck": .reference(spanish)])
            }
            #expect(inserted.inserted == ["Card": [card]])
            #expect(inserted.updated == ["Deck": [spanish]])
            // A move: the deck it leaves and the one it joins.
            let moved = try store.write { tx in try tx.update("Card", id: card, ["deck": .reference(french)])
            }
            #expect(moved.changes.updated == ["Card": [card], "Deck": [spanish, french]])
            // A delete that the nullify rule lets go of: the deck loses a card.
            let deleted = try store.write { tx in try tx.delete("Card", id: card) }.changes
            #expect(deleted.deleted == ["Card": [card]])
            #expect(deleted.updated == ["Deck": [french]])
        }
    }

    @Test func aChangeSetIsTheNetDifference() throws {
        try withStore { store, _ in
            let kept = try store.write { try $0.insert("Deck", ["title": .string("kept")]) }.value
            let changes = try store.write { tx in
                let gone = try tx.insert("Deck", ["title": .string("gone")])
                try tx.update("Deck", id: gone, ["title": .string("gone again")])
                try tx.delete("Deck", id: gone)
                let fresh = try tx.insert("Deck", ["title": .string("fresh")])
                try tx.update("Deck", id: fresh, ["title": .string("fresher")])
                try tx.update("Deck", id: kept, ["title": .string("changed")])
                try tx.delete("Deck", id: kept)
                return fresh
            }
            #expect(changes.changes.inserted == ["Deck": [changes.value]])
            #expect(changes.changes.updated.isEmpty)
            #expect(changes.changes.deleted == ["Deck": [kept]])
        }
    }

    @Test func aWriteThatThrowsKeepsNothingOfItself() throws {
        struct Stop: Error {}
        try withStore { store, url in
            #expect(throws: Stop.self) {
                try store.write { tx in
                    try tx.insert("Deck", ["title": .string("doomed")])
                    try tx.insert(
                        "Card", ["front": .string("x"), "image": .data(Data(repeating: 7, count: 4096))])
                    throw Stop()
                }
            }
            #expect(try count(store, "Deck") == 0)
            #expect(try count(store, "Card") == 0)
            // The blob file the failed write made is gone as well.
            let files = FileManager.default.enumerator(atPath: url.appendingPathComponent("blobs").path)?
                .compactMap { $0 as? String }.filter { !$0.hasSuffix("/") && $0.count > 40 }
            #expect(files ?? [] == [])
            // The store stays usable.
            try store.write { try $0.insert("Deck", ["title": .string("fine")]) }
            #expect(try count(store, "Deck") == 1)
        }
    }

    @Test func aFailingChangeIsUndoneWholeAndTheRestOfTheWriteCommits() throws {
        try withStore { store, _ in
            let changes = try store.write { tx in
                try tx.insert("Deck", ["title": .string("one")])
                #expect(throws: DeckError.self) { try tx.insert("Deck", ["title": .string("one")]) }
                try tx.insert("Deck", ["title": .string("two")])
            }.changes
            #expect(changes.inserted["Deck"]?.count == 2)
            #expect(try count(store, "Deck") == 2)
        }
    }

    @Test func readsSeeOnlyCommittedStates() throws {
        try withStore { store, _ in
            try store.write { try $0.insert("Deck", ["title": .string("committed")]) }
            let transaction = try store.beginTransaction()
            try transaction.insert("Deck", ["title": .string("pending")])
            // The transaction sees its own change; a read scope sees the committed state.
            #expect(try transaction.count(RecordQuery("Deck")) == 2)
            #expect(try count(store, "Deck") == 1)
            try transaction.commit()
            #expect(try count(store, "Deck") == 2)
        }
    }

    @Test func aReadIsOneSnapshotWhileTheWriterCommits() throws {
        try withStore { store, _ in
            try store.write { try $0.insert("Deck", ["title": .string("a")]) }
            let transaction = try store.beginTransaction()
            let (before, after) = try store.read { reader in
                let before = try reader.count(RecordQuery("Deck"))
                try transaction.insert("Deck", ["title": .string("b")])
                try transaction.commit()
                return (before, try reader.count(RecordQuery("Deck")))
            }
            #expect(before == 1 && after == 1)
            #expect(try count(store, "Deck") == 2)
        }
    }

    @Test func aLongTransactionAccumulatesUntilCommitOrRollback() throws {
        try withStore { store, _ in
            let transaction = try store.beginTransaction()
            #expect(transaction.isOpen && !transaction.hasChanges)
            let first = try transaction.insert("Deck", ["title": .string("first")])
            try transaction.insert("Card", ["front": .string("c"), "deck": .reference(first)])
            #expect(transaction.hasChanges)
            #expect(transaction.changes.inserted["Card"]?.count == 1)
            let committed = try transaction.commit()
            #expect(committed.inserted["Deck"] == [first])
            #expect(!transaction.isOpen)
            // Ended: every use is misuse, not a silent no-op.
            #expect {
                try transaction.insert("Deck", ["title": .string("late")])
            } throws: { error in
                guard let error = error as? DeckError else { return false }
                return error.kind == .misuse
            }
            #expect(throws: DeckError.self) { try transaction.commit() }

            let second = try store.beginTransaction()
            try second.insert("Deck", ["title": .string("discarded")])
            second.rollback()
            #expect(!second.isOpen)
            #expect(try count(store, "Deck") == 1)
        }
    }

    @Test func commitInsideAWriteScopeIsMisuse() throws {
        try withStore { store, _ in
            try store.write { tx in
                try tx.insert("Deck", ["title": .string("x")])
                #expect {
                    try tx.commit()
                } throws: { error in
                    (error as? DeckError)?.kind == .misuse
                }
            }
            #expect(try count(store, "Deck") == 1)
        }
    }

    @Test func aScopesReaderIsDeadAfterTheScope() throws {
        try withStore { store, _ in
            var escaped: StoreReader?
            try store.read { escaped = $0 }
            let reader = try #require(escaped)
            #expect {
                try reader.count(RecordQuery("Deck"))
            } throws: { error in
                (error as? DeckError)?.kind == .misuse
            }
            var leaked: StoreTransaction?
            try store.write { leaked = $0 }
            #expect(throws: DeckError.self) { try leaked?.insert("Deck", ["title": .string("late")]) }
            #expect(try count(store, "Deck") == 0)
        }
    }

    @Test func aWriteInsideAWriteOnOneThreadIsRefusedNotADeadlock() throws {
        try withStore { store, _ in
            try store.write { _ in
                #expect {
                    try store.write { _ in }
                } throws: { error in
                    (error as? DeckError)?.kind == .misuse
                }
            }
            let transaction = try store.beginTransaction()
            #expect { try store.write { _ in } } throws: { ($0 as? DeckError)?.kind == .misuse }
            transaction.rollback()
            try store.write { try $0.insert("Deck", ["title": .string("after")]) }
        }
    }

    @Test func closingWithUnsavedChangesIsAnErrorUnlessDiscarding() throws {
        try withStore { store, url in
            let transaction = try store.beginTransaction()
            try transaction.insert("Deck", ["title": .string("unsaved")])
            #expect {
                try store.close()
            } throws: { error in
                guard case DeckError.unsavedChanges(let path) = error else { return false }
                return path == url.path
            }
            // Still open, the change still there.
            #expect(!store.isClosed && transaction.isOpen)
            #expect(try transaction.count(RecordQuery("Deck")) == 1)
            try transaction.commit()
            try store.close()
            #expect(store.isClosed)

            let reopened = try PackageStore.open(at: url)
            let again = try reopened.beginTransaction()
            try again.insert("Deck", ["title": .string("dropped")])
            try reopened.close(discardingChanges: true)
            #expect(!again.isOpen)
            let check = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? check.close() }
            #expect(
                try check.read { try $0.fetch(RecordQuery("Deck")).map { $0["title"] } } == [
                    .string("unsaved")
                ])
        }
    }

    @Test func closingWithAnOpenTransactionWithoutChangesEndsIt() throws {
        try withStore { store, _ in
            let transaction = try store.beginTransaction()
            try store.close()
            #expect(!transaction.isOpen && store.isClosed)
        }
    }

    @Test func aClosedStoreRefusesEveryScope() throws {
        try withStore { store, url in
            try store.close()
            for body in [
                { _ = try store.read { _ in } },
                { _ = try store.write { _ in } },
                { _ = try store.beginTransaction() },
                { _ = try store.info() },
            ] as [() throws -> Void] {
                #expect {
                    try body()
                } throws: { error in
                    guard case DeckError.closed(let path) = error else { return false }
                    return path == url.path
                }
            }
            try store.close()  // twice: nothing
        }
    }

    @Test func aReadOnlyStoreReadsAndRefusesWrites() throws {
        try withStore { store, url in
            try store.write { try $0.insert("Deck", ["title": .string("x")]) }
            try store.close()
            let reader = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? reader.close() }
            #expect(reader.mode == .readOnly)
            #expect(try count(reader, "Deck") == 1)
            for body in [
                { _ = try reader.write { _ in } },
                { _ = try reader.beginTransaction() },
                { _ = try reader.collectGarbage() },
            ] as [() throws -> Void] {
                #expect {
                    try body()
                } throws: { error in
                    guard case DeckError.readOnly = error else { return false }
                    return true
                }
            }
            // A dry run only reads.
            #expect(try reader.collectGarbage(dryRun: true).orphanFiles.isEmpty)
        }
    }

    @Test func writersOfOneProcessQueue() async throws {
        try await withStoreAsync { store in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        for n in 0..<25 {
                            try store.write { tx in
                                try tx.insert("Deck", ["title": .string("w\(worker)-\(n)")])
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try count(store, "Deck") == 100)
        }
    }

    @Test func readsRunBesideALongTransactionOnOtherThreads() async throws {
        try await withStoreAsync { store in
            try await store.write { try $0.insert("Deck", ["title": .string("seed")]) }
            let transaction = try store.beginTransaction()
            try transaction.insert("Deck", ["title": .string("pending")])
            // Eight reads at once on four reader connections, while the writer holds its turn.
            let counts = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<8 { group.addTask { try store.read { try $0.count(RecordQuery("Deck")) } } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(counts == Array(repeating: 1, count: 8))
            try transaction.commit()
        }
    }

    @Test func aWriterOnAnotherThreadQueuesBehindALongTransaction() throws {
        try withStore { store, _ in
            let transaction = try store.beginTransaction()
            let first = try transaction.insert("Deck", ["title": .string("first")])
            let done = DispatchSemaphore(value: 0)
            let outcome = Outcome()
            DispatchQueue.global().async {
                defer { done.signal() }
                outcome.set(
                    Result { try store.write { try $0.insert("Deck", ["title": .string("second")]) }.value })
            }
            try transaction.commit()
            done.wait()
            let second = try outcome.get().get()
            #expect(second > first)
            #expect(try count(store, "Deck") == 2)
        }
    }

    /// A result handed from one thread to another.
    final class Outcome: @unchecked Sendable {
        private let lock = NSLock()
        private var result: Result<Int64, any Error>?
        func set(_ value: Result<Int64, any Error>) { lock.withLock { result = value } }
        func get() throws -> Result<Int64, any Error> { try #require(lock.withLock { result }) }
    }

    func withStoreAsync(_ body: (PackageStore) async throws -> Void) async throws {
        let scratch = try ScratchDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let directory = scratch.url
        let store = try PackageStore.create(
            at: directory.appendingPathComponent("Cards.deck"), contentType: "org.example.cards",
            schema: Self.schema)
        defer { try? store.close(discardingChanges: true) }
        try await body(store)
    }
}
