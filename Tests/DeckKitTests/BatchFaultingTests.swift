import DeckKit
import DeckSQLite
import DeckStore
import DeckTestTiming
import Foundation
import Testing

/// Reading a to-one relationship of each fetched model in turn loads the targets in batches: the
/// first read that misses loads the targets of the models fetched after it too.
@Suite("Batch faulting", .timed)
struct BatchFaultingTests {
    final class Shelf: ModelObject {
        @Attribute var name = ""
        @Relationship(inverse: \Book.shelf) var books: [Book] = []
        required init() {}
    }

    final class Book: ModelObject {
        @Attribute var title = ""
        @Attribute var number = 0
        @Relationship var shelf: Shelf? = nil
        required init() {}
    }

    /// The statements this thread runs while `body` runs.
    func statements(_ body: () throws -> Void) rethrows -> [String] {
        try SQLTrace.statements(ofThisThreadDuring: body).1
    }

    /// A container of `shelves` shelves of `perShelf` books each (book `n` on shelf `n / perShelf`),
    /// and every fifth book on no shelf.
    func makeLibrary(shelves: Int, perShelf: Int) throws -> ModelContainer {
        let container = try ModelContainer(
            for: Shelf.self, Book.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        for shelfNumber in 0..<shelves {
            let shelf = Shelf()
            shelf.name = "shelf \(shelfNumber)"
            context.insert(shelf)
            for index in 0..<perShelf {
                let book = Book()
                book.number = shelfNumber * perShelf + index
                book.title = "book \(book.number)"
                context.insert(book)
                if index % 5 != 4 { book.shelf = shelf }
            }
        }
        try context.save()
        return container
    }

    @Test("Each book's shelf is right, in a few statements rather than one per shelf")
    func readsInBatches() throws {
        let shelves = 250
        let perShelf = 5
        let container = try makeLibrary(shelves: shelves, perShelf: perShelf)
        var books: [Book] = []
        var names: [String?] = []
        // Kept while its models are read.
        var context: ModelContext?
        // (The reader connection is traced when it opens: the fetch runs inside.)
        let run = try statements {
            context = ModelContext(container)
            books = try #require(context).fetch(FetchDescriptor<Book>(sortBy: [SortDescriptor(\.number)]))
            names = books.map { $0.shelf?.name }
        }
        #expect(books.count == shelves * perShelf)
        for book in books {
            let expected = book.number % perShelf == 4 ? nil : "shelf \(book.number / perShelf)"
            #expect(names[book.number] == expected)
        }
        // 250 shelves, up to 100 per statement: 3 statements, not 250.
        let shelfReads = run.filter { $0.hasPrefix("SELECT") && $0.contains("FROM \"Shelf\"") }
        #expect(shelfReads.count == 3, "\(shelfReads)")
        // Uniquing holds: one shelf instance per record.
        #expect(books[0].shelf === books[1].shelf)
        #expect(books[0].shelf?.books.count == perShelf - 1)
        withExtendedLifetime((books, context)) {}
    }

    @Test("Reading backwards, or models of another fetch, still reads what each model holds")
    func otherOrders() throws {
        let container = try makeLibrary(shelves: 30, perShelf: 5)
        let context = ModelContext(container)
        let books = try context.fetch(FetchDescriptor<Book>(sortBy: [SortDescriptor(\.number)]))
        // A later fetch of other models: the first fetch's models still load their own.
        let shelves = try context.fetch(FetchDescriptor<Shelf>())
        #expect(shelves.count == 30)
        for book in books.reversed() {
            #expect(book.shelf?.name == (book.number % 5 == 4 ? nil : "shelf \(book.number / 5)"))
        }
        // A change made before the read is kept: the batch only loads what is not loaded.
        let fresh = ModelContext(container)
        let again = try fresh.fetch(FetchDescriptor<Book>(sortBy: [SortDescriptor(\.number)]))
        let moved = again[6]
        let other = try #require(try fresh.fetch(FetchDescriptor<Shelf>()).first { $0.name == "shelf 9" })
        moved.shelf = other
        #expect(again[0].shelf?.name == "shelf 0")
        #expect(moved.shelf === other)
        #expect(again[7].shelf?.name == "shelf 1")
        #expect(fresh.hasChanges)
        try fresh.save()
        let reader = ModelContext(container)
        #expect(try reader.fetch(FetchDescriptor<Book>()).first { $0.number == 6 }?.shelf?.name == "shelf 9")
    }
}
