import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// A change that the next save would refuse does not stop the context's fetches: as in
/// SwiftData, a pending change is checked when it is saved, and a list screen keeps working.
@Suite("Fetches with a pending change a save would refuse", .timed)
struct PendingChangeFetchTests {
    typealias Note = SaveGraphTests.Note
    typealias Tag = SaveGraphTests.Tag
    typealias Pin = SaveGraphTests.Pin
    typealias Library = SaveGraphTests.Library
    typealias Shelf = SaveGraphTests.Shelf
    typealias Loan = SaveGraphTests.Loan

    /// A bounded list: a save refuses more than two models in it.
    final class Crate: ModelObject {
        @Attribute var label = ""
        @Relationship(maximumModelCount: 2) var bottles: [Bottle] = []
        required init() {}
    }

    final class Bottle: ModelObject {
        @Attribute var wine = ""
        @Relationship(inverse: \Crate.bottles) var crate: Crate? = nil
        required init() {}
    }

    @Test("A delete that a deny rule refuses: fetches and counts answer as if it were done, the save refuses")
    func deniedDelete() throws {
        let directory = try ScratchDirectory()
        let container = try SaveGraphTests.container(Library.self, Shelf.self, Loan.self, in: directory)
        do {
            let context = ModelContext(container)
            let first = Library("A")
            context.insert(first)
            context.insert(Library("B"))
            Loan("Dune").library = first
            Shelf("fiction").library = first
            try context.save()
        }
        let context = ModelContext(container)
        let first = try #require(
            try context.fetch(FetchDescriptor<Library>(predicate: #Predicate { $0.name == "A" })).first)
        context.delete(first)
        context.insert(Shelf("new"))
        #expect(try context.fetch(FetchDescriptor<Library>()).map(\.name) == ["B"])
        #expect(try context.fetchCount(FetchDescriptor<Library>()) == 1)
        #expect(
            try context.fetch(FetchDescriptor<Shelf>(sortBy: [SortDescriptor(\.name)])).map(\.name) == ["new"]
        )
        #expect(try context.fetch(FetchDescriptor<Loan>()).map(\.book) == ["Dune"])
        #expect(throws: DeckError.self) { try context.save() }
        #expect(context.hasChanges)
        // Nothing was written; the context still has its changes and its fetches still work.
        let reader = ModelContext(container)
        #expect(
            try reader.fetch(FetchDescriptor<Library>(sortBy: [SortDescriptor(\.name)])).map(\.name) == [
                "A", "B",
            ])
        #expect(try context.fetchCount(FetchDescriptor<Shelf>()) == 1)
        // Deleting what holds it back lets the save go through.
        for loan in try context.fetch(FetchDescriptor<Loan>()) { context.delete(loan) }
        try context.save()
        #expect(try reader.fetch(FetchDescriptor<Library>()).map(\.name) == ["B"])
    }

    @Test("A rename onto another record's unique value: fetches and counts still answer, the save refuses")
    func uniqueRename() throws {
        let directory = try ScratchDirectory()
        let container = try SaveGraphTests.container(Note.self, Tag.self, Pin.self, in: directory)
        do {
            let context = ModelContext(container)
            context.insert(Tag("home"))
            context.insert(Tag("work"))
            context.insert(Note("n1"))
            try context.save()
        }
        let context = ModelContext(container)
        let work = try #require(
            try context.fetch(FetchDescriptor<Tag>(predicate: #Predicate { $0.name == "work" })).first)
        work.name = "home"
        context.insert(Note("n2"))
        #expect(
            try context.fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)])).map(\.title) == [
                "n1", "n2",
            ])
        #expect(try context.fetchCount(FetchDescriptor<Tag>()) == 2)
        #expect(try context.fetch(FetchDescriptor<Tag>()).count == 2)
        #expect {
            try context.save()
        } throws: { error in
            guard case .uniqueViolation(let entity, _)? = error as? DeckError else { return false }
            return entity == "Tag"
        }
        #expect(context.hasChanges)
        #expect(work.name == "home")
    }

    @Test("A list over its maximum count: fetches still answer, the save refuses")
    func overMaximum() throws {
        let directory = try ScratchDirectory()
        let container = try SaveGraphTests.container(Crate.self, Bottle.self, in: directory)
        let context = ModelContext(container)
        let crate = Crate()
        crate.label = "reds"
        context.insert(crate)
        for wine in ["a", "b", "c"] {
            let bottle = Bottle()
            bottle.wine = wine
            bottle.crate = crate
        }
        #expect(try context.fetchCount(FetchDescriptor<Bottle>()) == 3)
        #expect(try context.fetch(FetchDescriptor<Crate>()).map(\.label) == ["reds"])
        #expect {
            try context.save()
        } throws: { error in
            guard case .invalidValue(let entity, let property, _)? = error as? DeckError else { return false }
            return entity == "Crate" && property == "bottles"
        }
        #expect(context.hasChanges)
    }
}
