import DeckKit
import DeckTestTiming
import Foundation
import Observation
import Testing

/// Models tell Observation of every read and change, whether they were made, inserted or
/// fetched, and whatever was read before the observing began (a model makes its registrar only
/// when a tracked read needs it).
@Suite("Observing models", .timed)
struct ObservationTests {
    /// Whether `change` makes a tracking scope that ran `read` fire.
    func fires(_ read: () -> Void, after change: () -> Void) -> Bool {
        let changed = ObservedFlag()
        withObservationTracking(read) { changed.set() }
        change()
        return changed.isSet
    }

    func container(_ directory: ScratchDirectory) throws -> ModelContainer {
        try ModelContainer(
            for: Flash.Card.self, Flash.Deck.self,
            configurations: ModelConfiguration(url: directory.appending("observed.deck")))
    }

    @Test("A fetched model, read before and outside any tracking, is observed from its first tracked read")
    func fetchedModel() throws {
        let directory = try ScratchDirectory()
        let container = try container(directory)
        let writer = ModelContext(container)
        writer.insert(Flash.Card(front: "hola"))
        writer.insert(Flash.Card(front: "adiós"))
        try writer.save()

        let context = ModelContext(container)
        let cards = try context.fetch(FetchDescriptor<Flash.Card>(sortBy: [SortDescriptor(\.front)]))
        #expect(cards.map(\.front) == ["adiós", "hola"])
        // Read untracked first, then tracked.
        #expect(fires({ _ = cards[0].front }, after: { cards[0].front = "adieu" }))
        // Never read before: tracked from the start.
        #expect(fires({ _ = cards[1].reviews }, after: { cards[1].reviews += 1 }))
        // A change to another property, or to another model, does not fire.
        #expect(!fires({ _ = cards[1].front }, after: { cards[1].back = "hello" }))
        #expect(!fires({ _ = cards[1].front }, after: { cards[0].front = "au revoir" }))
    }

    @Test("Nested tracking scopes and a read on another thread are observed")
    func nestedAndOtherThread() async throws {
        let card = Flash.Card(front: "one")
        let outer = ObservedFlag()
        let inner = ObservedFlag()
        withObservationTracking {
            withObservationTracking {
                _ = card.front
            } onChange: {
                inner.set()
            }
        } onChange: {
            outer.set()
        }
        card.front = "two"
        #expect(inner.isSet && outer.isSet)

        // Models are not Sendable: a detached task makes, reads and changes its own.
        let firedElsewhere = await Task.detached {
            let other = Flash.Card(front: "three")
            let flag = ObservedFlag()
            withObservationTracking {
                _ = other.front
            } onChange: {
                flag.set()
            }
            other.front = "four"
            return flag.isSet
        }.value
        #expect(firedElsewhere)
    }

    @Test("Changes Deck makes are observed: the other side of a relationship, a rollback")
    func changesDeckMakes() throws {
        let directory = try ScratchDirectory()
        let context = ModelContext(try container(directory))
        let deck = Flash.Deck(title: "Spanish")
        context.insert(deck)
        try context.save()
        let card = Flash.Card(front: "hola")
        // The deck's cards are loaded and observed; setting the card's deck adds it there.
        #expect(fires({ _ = deck.cards }, after: { card.deck = deck }))
        #expect(deck.cards.count == 1)
        try context.save()
        card.front = "buenas"
        #expect(fires({ _ = card.front }, after: { context.rollback() }))
        #expect(card.front == "hola")
    }

    @Test("After thousands of tracking scopes that never fired, models are still observed")
    func abandonedScopes() throws {
        // Each scope reads a model that has no registrar yet, and none of them ever fires: the
        // gate replaces its probes as they go (past its threshold several times here).
        var kept: [Flash.Card] = []
        for index in 0..<3_000 {
            let card = Flash.Card(front: "card \(index)")
            withObservationTracking {
                _ = card.front
            } onChange: {
            }
            if index % 100 == 0 { kept.append(card) }
        }
        // The scopes still observe the models that live.
        let flag = ObservedFlag()
        withObservationTracking {
            _ = kept[3].front
        } onChange: {
            flag.set()
        }
        kept[3].front = "changed"
        #expect(flag.isSet)
    }

    /// Each change Deck makes to a property that has been observed reads how to tell its
    /// observers. That function was kept in a generic lock and came back from each read wrapped in
    /// two more reabstraction thunks, so the calls grew deeper with every change, in any model of
    /// the type, until the stack overflowed (52,000 frames after a 10,000-card test under
    /// AddressSanitizer).
    @Test(
        "After Deck changes a once-observed property 60,000 times (cards joining decks), it is still observed and nothing overflows"
    )
    func manyChangesDeckMakes() {
        let observed = Flash.Deck(title: "observed")
        let changed = ObservedFlag()
        withObservationTracking {
            _ = observed.cards.count
        } onChange: {
            changed.set()
        }
        // A deck each, so that no deck grows long (adding to a deck looks for the card in it).
        for number in 0..<60_000 {
            Flash.Card(front: "\(number)").deck = Flash.Deck(title: "\(number)")
        }
        #expect(!changed.isSet)
        Flash.Card(front: "last").deck = observed
        #expect(changed.isSet)
        #expect(observed.cards.map(\.front) == ["last"])
    }
}
