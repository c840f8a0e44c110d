import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// A save writes the graph the models hold in memory: the links of every new model that a
/// unique value merges into one record, relationship changes before the deletions of the same
/// save (as two saves in a row would), and what the store and the models say agree after it.
@Suite("A save honours the graph in memory", .timed)
struct SaveGraphTests {
    final class Note: ModelObject {
        @Attribute var title = ""
        @Relationship var tags: [Tag] = []
        required init() {}
        convenience init(_ title: String) {
            self.init()
            self.title = title
        }
    }

    final class Tag: ModelObject {
        @Attribute(.unique) var name = ""
        @Relationship(inverse: \Note.tags) var notes: [Note] = []
        @Relationship var pins: [Pin] = []
        required init() {}
        convenience init(_ name: String) {
            self.init()
            self.name = name
        }
    }

    /// The to-one side of a tag's one-to-many relationship.
    final class Pin: ModelObject {
        @Attribute var label = ""
        @Relationship(inverse: \Tag.pins) var tag: Tag? = nil
        required init() {}
        convenience init(_ label: String) {
            self.init()
            self.label = label
        }
    }

    final class Library: ModelObject {
        @Attribute var name = ""
        @Relationship(deleteRule: .cascade) var shelves: [Shelf] = []
        @Relationship(deleteRule: .deny) var loans: [Loan] = []
        required init() {}
        convenience init(_ name: String) {
            self.init()
            self.name = name
        }
    }

    final class Shelf: ModelObject {
        @Attribute var name = ""
        @Relationship(inverse: \Library.shelves) var library: Library? = nil
        required init() {}
        convenience init(_ name: String) {
            self.init()
            self.name = name
        }
    }

    final class Loan: ModelObject {
        @Attribute var book = ""
        @Relationship(inverse: \Library.loans) var library: Library? = nil
        required init() {}
        convenience init(_ book: String) {
            self.init()
            self.book = book
        }
    }

    static func container(_ types: any PersistentModel.Type..., in directory: ScratchDirectory) throws
        -> ModelContainer
    {
        try ModelContainer(
            for: Schema(types), configurations: [ModelConfiguration(url: directory.appending("test.deck"))])
    }

    /// Each note's tag names and each tag's note titles, sorted, read by `context`.
    static func links(in context: ModelContext) throws -> (
        notes: [String: [String]], tags: [String: [String]]
    ) {
        var notes: [String: [String]] = [:]
        for note in try context.fetch(FetchDescriptor<Note>()) {
            notes[note.title] = note.tags.map(\.name).sorted()
        }
        var tags: [String: [String]] = [:]
        for tag in try context.fetch(FetchDescriptor<Tag>()) {
            tags[tag.name] = tag.notes.map(\.title).sorted()
        }
        return (notes, tags)
    }

    // MARK: Item 2: new models merged by a unique value keep every link

    @Test("Two new tags of one name, each on its own new note: one record linked to both notes")
    func newTagsOfOneName() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Note.self, Tag.self, Pin.self, in: directory)
        let context = ModelContext(container)
        let first = Note("n1")
        let second = Note("n2")
        context.insert(first)
        context.insert(second)
        first.tags = [Tag("home")]
        second.tags = [Tag("home")]
        try context.save()
        let stored = try Self.links(in: ModelContext(container))
        #expect(stored.notes == ["n1": ["home"], "n2": ["home"]])
        #expect(stored.tags == ["home": ["n1", "n2"]])
        // The models here say the same: both notes hold the one record, which holds both notes.
        #expect(first.tags.map(\.persistentModelID) == second.tags.map(\.persistentModelID))
        let tags = try context.fetch(FetchDescriptor<Tag>())
        #expect(tags.count == 1)
        #expect(tags.first?.notes.map(\.title).sorted() == ["n1", "n2"])
        #expect(try Self.links(in: context) == stored)
    }

    @Test("Two new tags of one name on saved notes, the notes' side not loaded as new")
    func newTagsOnSavedNotes() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Note.self, Tag.self, Pin.self, in: directory)
        do {
            let context = ModelContext(container)
            context.insert(Note("n1"))
            context.insert(Note("n2"))
            try context.save()
        }
        let context = ModelContext(container)
        let notes = try context.fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title)]))
        let first = Tag("home")
        let second = Tag("home")
        context.insert(first)
        context.insert(second)
        first.notes = [notes[0]]
        second.notes = [notes[1]]
        try context.save()
        let stored = try Self.links(in: ModelContext(container))
        #expect(stored.notes == ["n1": ["home"], "n2": ["home"]])
        #expect(stored.tags == ["home": ["n1", "n2"]])
        #expect(try Self.links(in: context) == stored)
    }

    @Test("Two new tags of one name, each with its own new pin (one-to-many): both pins keep the tag")
    func newTagsWithPins() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Note.self, Tag.self, Pin.self, in: directory)
        let context = ModelContext(container)
        let first = Tag("home")
        let second = Tag("home")
        context.insert(first)
        context.insert(second)
        Pin("a").tag = first
        Pin("b").tag = second
        try context.save()
        let reader = ModelContext(container)
        let pins = try reader.fetch(FetchDescriptor<Pin>(sortBy: [SortDescriptor(\.label)]))
        #expect(pins.map { $0.tag?.name } == ["home", "home"])
        let tags = try reader.fetch(FetchDescriptor<Tag>())
        #expect(tags.count == 1)
        #expect(tags.first?.pins.map(\.label).sorted() == ["a", "b"])
        let here = try context.fetch(FetchDescriptor<Tag>())
        #expect(here.count == 1)
        #expect(here.first?.pins.map(\.label).sorted() == ["a", "b"])
    }

    /// A label whose list of stickers holds at least two.
    final class Label: ModelObject {
        @Attribute(.unique) var name = ""
        @Relationship(minimumModelCount: 2) var stickers: [Sticker] = []
        required init() {}
        convenience init(_ name: String) {
            self.init()
            self.name = name
        }
    }

    final class Sticker: ModelObject {
        @Attribute var shape = ""
        @Relationship(inverse: \Label.stickers) var label: Label? = nil
        required init() {}
        convenience init(_ shape: String) {
            self.init()
            self.shape = shape
        }
    }

    @Test("A minimum count holds for the merged record: two new labels of one name, one sticker each")
    func mergedBounds() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Label.self, Sticker.self, in: directory)
        let context = ModelContext(container)
        let first = Label("round")
        let second = Label("round")
        context.insert(first)
        context.insert(second)
        first.stickers = [Sticker("a")]
        second.stickers = [Sticker("b")]
        try context.save()
        let labelsContext = ModelContext(container)
        let labels = try labelsContext.fetch(FetchDescriptor<Label>())
        #expect(labels.map { $0.stickers.map(\.shape).sorted() } == [["a", "b"]])
    }

    // MARK: Item 4: relationship changes before deletions

    @Test("A shelf moved from library A to B, then A deleted, in one save: the shelf stays, in B")
    func moveThenDeleteCascade() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Library.self, Shelf.self, Loan.self, in: directory)
        do {
            let context = ModelContext(container)
            let first = Library("A")
            context.insert(first)
            context.insert(Library("B"))
            Shelf("fiction").library = first
            Shelf("poetry").library = first
            try context.save()
        }
        let context = ModelContext(container)
        let libraries = try context.fetch(FetchDescriptor<Library>(sortBy: [SortDescriptor(\.name)]))
        let fiction = try #require(
            try context.fetch(FetchDescriptor<Shelf>(predicate: #Predicate { $0.name == "fiction" })).first)
        fiction.library = libraries[1]
        context.delete(libraries[0])
        try context.save()
        #expect(!context.hasChanges)
        let reader = ModelContext(container)
        let shelves = try reader.fetch(FetchDescriptor<Shelf>())
        #expect(shelves.map(\.name) == ["fiction"])
        #expect(shelves.first?.library?.name == "B")
        #expect(try reader.fetch(FetchDescriptor<Library>()).map(\.name) == ["B"])
        #expect(fiction.library?.name == "B")
        #expect(libraries[1].shelves.map(\.name) == ["fiction"])
    }

    @Test("A shelf moved to a new library, then its old one deleted, in one save")
    func moveToNewThenDelete() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Library.self, Shelf.self, Loan.self, in: directory)
        do {
            let context = ModelContext(container)
            let first = Library("A")
            context.insert(first)
            Shelf("fiction").library = first
            try context.save()
        }
        let context = ModelContext(container)
        let old = try #require(try context.fetch(FetchDescriptor<Library>()).first)
        let fiction = try #require(old.shelves.first)
        let new = Library("C")
        context.insert(new)
        new.shelves.append(fiction)
        context.delete(old)
        try context.save()
        let reader = ModelContext(container)
        #expect(try reader.fetch(FetchDescriptor<Shelf>()).map { $0.library?.name } == ["C"])
        #expect(try reader.fetch(FetchDescriptor<Library>()).map(\.name) == ["C"])
    }

    @Test("A shelf moved into a library deleted in the same save goes with it (cascade), as in two saves")
    func moveIntoDeleted() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Library.self, Shelf.self, Loan.self, in: directory)
        do {
            let context = ModelContext(container)
            context.insert(Library("A"))
            let second = Library("B")
            context.insert(second)
            Shelf("fiction").library = second
            Loan("Dune").library = second
            try context.save()
        }
        let context = ModelContext(container)
        let libraries = try context.fetch(FetchDescriptor<Library>(sortBy: [SortDescriptor(\.name)]))
        let fiction = try #require(libraries[1].shelves.first)
        let loan = try #require(libraries[1].loans.first)
        fiction.library = libraries[0]
        loan.library = libraries[0]
        loan.library = nil
        context.delete(libraries[0])
        try context.save()
        #expect(fiction.isDeleted)
        #expect(!loan.isDeleted && loan.library == nil)
        let reader = ModelContext(container)
        #expect(try reader.fetch(FetchDescriptor<Shelf>()).isEmpty)
        #expect(try reader.fetch(FetchDescriptor<Library>()).map(\.name) == ["B"])
        #expect(try reader.fetch(FetchDescriptor<Loan>()).map { $0.library?.name } == [nil])
    }

    @Test("A deny rule does not see a loan moved away in memory before the delete")
    func moveThenDeleteDeny() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Library.self, Shelf.self, Loan.self, in: directory)
        do {
            let context = ModelContext(container)
            let first = Library("A")
            context.insert(first)
            context.insert(Library("B"))
            Loan("Dune").library = first
            try context.save()
        }
        let context = ModelContext(container)
        let libraries = try context.fetch(FetchDescriptor<Library>(sortBy: [SortDescriptor(\.name)]))
        let loan = try #require(libraries[0].loans.first)
        loan.library = libraries[1]
        context.delete(libraries[0])
        try context.save()
        let reader = ModelContext(container)
        #expect(try reader.fetch(FetchDescriptor<Loan>()).map { $0.library?.name } == ["B"])
        #expect(try reader.fetch(FetchDescriptor<Library>()).map(\.name) == ["B"])
    }

    @Test("A deny rule still refuses a loan that stays, and the save writes nothing")
    func denyStillRefuses() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Library.self, Shelf.self, Loan.self, in: directory)
        do {
            let context = ModelContext(container)
            let first = Library("A")
            context.insert(first)
            context.insert(Library("B"))
            Loan("Dune").library = first
            Loan("Emma").library = first
            try context.save()
        }
        let context = ModelContext(container)
        let libraries = try context.fetch(FetchDescriptor<Library>(sortBy: [SortDescriptor(\.name)]))
        let dune = try #require(libraries[0].loans.first { $0.book == "Dune" })
        dune.library = libraries[1]
        context.delete(libraries[0])
        #expect {
            try context.save()
        } throws: { error in
            guard case .deleteDenied(let entity, _, let relationship, let count) = error as? DeckError else {
                return false
            }
            return entity == "Library" && relationship == "loans" && count == 1
        }
        #expect(context.hasChanges)
        let reader = ModelContext(container)
        #expect(try reader.fetch(FetchDescriptor<Library>()).count == 2)
        #expect(
            try reader.fetch(FetchDescriptor<Loan>(sortBy: [SortDescriptor(\.book)])).map { $0.library?.name }
                == ["A", "A"])
    }

    @Test("A new tag that takes the unique name of a tag deleted in the same save is a new record")
    func deletedThenSameName() throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Note.self, Tag.self, Pin.self, in: directory)
        do {
            let context = ModelContext(container)
            let note = Note("n1")
            context.insert(note)
            note.tags = [Tag("home")]
            try context.save()
        }
        let context = ModelContext(container)
        let old = try #require(try context.fetch(FetchDescriptor<Tag>()).first)
        let oldID = old.persistentModelID
        context.delete(old)
        let new = Tag("home")
        context.insert(new)
        try context.save()
        let reader = ModelContext(container)
        let tags = try reader.fetch(FetchDescriptor<Tag>())
        #expect(tags.map(\.persistentModelID) == [new.persistentModelID])
        #expect(tags.first?.persistentModelID != oldID)
        #expect(tags.first?.notes.isEmpty == true)
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func add() { lock.withLock { value += 1 } }
        var count: Int { lock.withLock { value } }
    }

    /// How many times a failed autosave can be tried again within `elapsed` of its first try:
    /// after a pause of a second, then of twice the pause before, up to a minute.
    static func retriesAllowed(in elapsed: Duration) -> Int {
        var retries = 0
        var pause = Duration.seconds(1)
        var due = pause
        while due <= elapsed {
            retries += 1
            pause = min(pause * 2, .seconds(60))
            due += pause
        }
        return retries
    }

    @MainActor
    @Test("A failed autosave is not retried at once; the next change, which fixes it, is autosaved")
    func autosaveAfterFailure() async throws {
        let directory = try ScratchDirectory()
        let container = try Self.container(Library.self, Shelf.self, Loan.self, in: directory)
        do {
            let context = ModelContext(container)
            let first = Library("A")
            context.insert(first)
            context.insert(Library("B"))
            Loan("Dune").library = first
            try context.save()
        }
        let context = container.mainContext
        context.autosaveDelay = .milliseconds(5)
        let libraries = try context.fetch(FetchDescriptor<Library>(sortBy: [SortDescriptor(\.name)]))
        let loan = try #require(libraries[0].loans.first)
        let attempts = Counter()
        let observer = NotificationCenter.default.addObserver(
            forName: ModelContext.willSave, object: context, queue: nil
        ) { _ in attempts.add() }
        defer { NotificationCenter.default.removeObserver(observer) }
        let start = ContinuousClock.now
        context.delete(libraries[0])
        let deadline = ContinuousClock.now + .seconds(600)
        while context.lastAutosaveError == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        guard case .deleteDenied? = context.lastAutosaveError else {
            Issue.record("expected deleteDenied, got \(String(describing: context.lastAutosaveError))")
            return
        }
        // Many quiet intervals later it has tried them again no sooner than the pause allows: a
        // second after the failure, then after twice the pause before. (How long the 40 sleeps
        // take depends on the machine's load; the bound follows the time they took.)
        for _ in 0..<40 { try await Task.sleep(for: .milliseconds(5)) }
        let retries = attempts.count - 1
        let allowed = Self.retriesAllowed(in: ContinuousClock.now - start)
        #expect(retries >= 0 && retries <= allowed, "\(retries) retries where the pauses allow \(allowed)")
        #expect(context.hasChanges)
        // Moving the loan away is a change: the autosave runs again, and the save goes through.
        loan.library = libraries[1]
        while context.hasChanges, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(!context.hasChanges)
        #expect(context.lastAutosaveError == nil)
        let reader = ModelContext(container)
        #expect(try reader.fetch(FetchDescriptor<Library>()).map(\.name) == ["B"])
        #expect(try reader.fetch(FetchDescriptor<Loan>()).map { $0.library?.name } == ["B"])
    }
}
