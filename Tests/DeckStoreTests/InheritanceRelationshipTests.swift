import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// Relationships to and from a hierarchy whose sibling entities share columns (spec sections 5.8
/// rule 9, 6.5 and 9): `Item` > `Book` (> `Paperback`), `Film`, each pointing at `Person` with a
/// to-one `owner` and a one-to-one `fan` — two relationships each, stored in the shared columns
/// `owner` and `fan` of table `Item` — and films watched by people, many-to-many.
@Suite("Inheritance and relationships", .timed)
struct InheritanceRelationshipTests {
    static func schema(booksRule: DeleteRule = .cascade, filmsRule: DeleteRule = .nullify) -> StoreSchema {
        StoreSchema(entities: [
            Entity(
                "Person", attributes: [Attribute("name", .string, options: [.unique])],
                relationships: [
                    Relationship("books", to: "Book", toMany: true, inverse: "owner", deleteRule: booksRule),
                    Relationship("films", to: "Film", toMany: true, inverse: "owner", deleteRule: filmsRule),
                    Relationship("favoriteBook", to: "Book", inverse: "fan"),
                    Relationship("favoriteFilm", to: "Film", inverse: "fan"),
                    Relationship("watched", to: "Film", toMany: true, inverse: "watchers"),
                ]),
            Entity("Item", attributes: [Attribute("title", .string)]),
            Entity(
                "Book", superentity: "Item", attributes: [Attribute("isbn", .string, options: [.unique])],
                relationships: [
                    Relationship("owner", to: "Person", inverse: "books"),
                    Relationship("fan", to: "Person", inverse: "favoriteBook"),
                ]),
            Entity(
                "Film", superentity: "Item", attributes: [Attribute("minutes", .integer, isOptional: true)],
                relationships: [
                    Relationship("owner", to: "Person", inverse: "films"),
                    Relationship("fan", to: "Person", inverse: "favoriteFilm"),
                    Relationship("watchers", to: "Person", toMany: true, inverse: "watched"),
                ]),
            Entity("Paperback", superentity: "Book"),
        ])
    }

    /// A package with two people, a book, a paperback and a film each; the first person owns and
    /// is a fan of one of each.
    struct Library {
        let store: PackageStore
        let ann: Int64, bob: Int64
        let book: Int64, paperback: Int64, film: Int64
    }

    static func library(in dir: URL, schema: StoreSchema = schema()) throws -> Library {
        let store = try makeTestStore(in: dir, schema: schema)
        let (ann, bob, book, paperback, film) = try store.write { tx in
            let ann = try tx.insert("Person", ["name": .string("Ann")])
            let bob = try tx.insert("Person", ["name": .string("Bob")])
            let book = try tx.insert(
                "Book",
                [
                    "title": .string("Dune"), "isbn": .string("1"), "owner": .reference(ann),
                    "fan": .reference(ann),
                ])
            let paperback = try tx.insert(
                "Paperback", ["title": .string("Emma"), "isbn": .string("2"), "owner": .reference(ann)])
            let film = try tx.insert(
                "Film", ["title": .string("Alien"), "owner": .reference(ann), "fan": .reference(ann)])
            return (ann, bob, book, paperback, film)
        }.value
        return Library(store: store, ann: ann, bob: bob, book: book, paperback: paperback, film: film)
    }

    @Test func siblingsShareTheColumnsAndTheDDLIsUnchanged() throws {
        let mapping = try SchemaMapping(Self.schema())
        #expect(mapping.entities["Book"]?.relationship("owner")?.storage == .ownColumn(column: "owner"))
        #expect(mapping.entities["Film"]?.relationship("owner")?.storage == .ownColumn(column: "owner"))
        #expect(
            mapping.entities["Person"]?.relationship("films")?.storage
                == .inverseColumn(table: "Item", column: "owner"))
        #expect(
            mapping.entities["Person"]?.relationship("favoriteBook")?.storage
                == .inverseColumn(table: "Item", column: "fan"))
        let table = try #require(
            StoreDDL.statements(for: mapping).first { $0.hasPrefix("CREATE TABLE \"Item\"") })
        #expect(table.components(separatedBy: "\"owner\" INTEGER").count == 2, "one shared column: \(table)")
    }

    /// Spec 6.1: an entity's columns include its inherited properties, inherited first, so a
    /// subentity declared before its parent gives the parent's attributes their columns.
    @Test func aSubentityDeclaredBeforeItsParentGivesInheritedAttributesTheirColumnsFirst() throws {
        let schema = StoreSchema(entities: [
            Entity("Leaf", superentity: "Middle", attributes: [Attribute("leaf", .string)]),
            Entity("Middle", superentity: "Root", attributes: [Attribute("middle", .string)]),
            Entity("Root", attributes: [Attribute("root", .string)]),
        ])
        let table = try #require(
            StoreDDL.statements(for: try SchemaMapping(schema)).first {
                $0.hasPrefix("CREATE TABLE \"Root\"")
            })
        let columns = table.split(separator: "\n").dropFirst().compactMap { line in
            line.split(separator: "\"").dropFirst().first.map(String.init)
        }
        #expect(columns == ["root", "middle", "leaf"], "\(table)")
    }

    @Test func readingAnInverseReturnsOnlyTheDestinationsRecords() throws {
        try withTestDirectory { dir throws in
            let library = try Self.library(in: dir)
            let store = library.store
            let tx = try store.beginTransaction()
            #expect(
                try tx.related("Person", id: library.ann, "books") == [library.book, library.paperback])
            #expect(try tx.related("Person", id: library.ann, "films") == [library.film])
            #expect(try tx.related("Person", id: library.ann, "favoriteBook") == [library.book])
            #expect(try tx.related("Person", id: library.ann, "favoriteFilm") == [library.film])
            let ann = try #require(try tx.record("Person", id: library.ann))
            #expect(ann["favoriteBook"] == .reference(library.book))
            #expect(ann["favoriteFilm"] == .reference(library.film))
            // Queries through the inverse: membership, emptiness, and paths.
            func people(_ filter: QueryExpression) throws -> [Int64] {
                try tx.fetchIDs(RecordQuery("Person", where: filter))
            }
            #expect(try people(.compare(.property("books"), .equal, .value(.reference(library.film)))) == [])
            #expect(
                try people(.compare(.property("films"), .equal, .value(.reference(library.film)))) == [
                    library.ann
                ])
            #expect(
                try people(
                    .oneOf(
                        .property("books"),
                        [.reference(library.film), .reference(library.paperback)].map(QueryExpression.value)))
                    == [
                        library.ann
                    ])
            #expect(try people(.isNull(.property("books"))) == [library.bob])
            #expect(
                try people(.compare(.property("favoriteBook.title"), .equal, .value(.string("Alien")))) == [])
            #expect(
                try people(.compare(.property("favoriteFilm.title"), .equal, .value(.string("Alien")))) == [
                    library.ann
                ])
            #expect(try people(.isNull(.property("favoriteBook"))) == [library.bob])
            #expect(
                try people(.compare(.property("favoriteBook"), .equal, .value(.reference(library.book)))) == [
                    library.ann
                ])
            // From the other side, each sibling reads its own relationship.
            let items = try tx.fetch(RecordQuery("Item"))
            #expect(items.map(\.entity) == ["Book", "Paperback", "Film"])
            #expect(items.allSatisfy { $0["owner"] == .reference(library.ann) })
            #expect(
                try tx.fetchIDs(
                    RecordQuery(
                        "Book", where: .compare(.property("owner.name"), .equal, .value(.string("Ann")))))
                    == [library.book, library.paperback])
            #expect(
                try tx.fetchIDs(
                    RecordQuery(
                        "Film", where: .compare(.property("owner.name"), .equal, .value(.string("Ann")))))
                    == [library.film])
            // The hierarchy's root has no owner: only its subentities do.
            let rootless = expectDeckError {
                _ = try tx.fetchIDs(
                    RecordQuery(
                        "Item", where: .compare(.property("owner.name"), .equal, .value(.string("Ann")))))
            }
            if case .unknownProperty("Item", "owner", _) = rootless {
            } else {
                Issue.record("expected unknownProperty, got \(String(describing: rootless))")
            }
            #expect(
                try tx.fetchIDs(
                    RecordQuery(
                        "Book", where: .compare(.property("fan.name"), .equal, .value(.string("Ann")))))
                    == [library.book])
            tx.rollback()
            try store.close()
        }
    }

    @Test func settingAnInverseLeavesTheSiblingsRowsAlone() throws {
        try withTestDirectory { dir throws in
            let library = try Self.library(in: dir)
            let store = library.store
            let tx = try store.beginTransaction()
            // Ann gives up her books; her film stays hers.
            try tx.update("Person", id: library.ann, ["books": .references([])])
            #expect(try tx.related("Person", id: library.ann, "films") == [library.film])
            #expect(try tx.record("Film", id: library.film)?["owner"] == .reference(library.ann))
            // Bob becomes the book's fan: the book lets go of Ann, the film keeps her.
            try tx.update("Person", id: library.bob, ["favoriteBook": .reference(library.book)])
            #expect(try tx.related("Person", id: library.ann, "favoriteBook") == [])
            #expect(try tx.related("Person", id: library.ann, "favoriteFilm") == [library.film])
            // One-to-one from the column's side: the paperback takes Bob as its fan, so the book,
            // whose relationship it is too, lets go of him; the film (a sibling) keeps Ann.
            try tx.update("Paperback", id: library.paperback, ["fan": .reference(library.bob)])
            #expect(try tx.record("Book", id: library.book)?["fan"] == .null)
            #expect(try tx.related("Person", id: library.bob, "favoriteBook") == [library.paperback])
            try tx.update("Film", id: library.film, ["fan": .reference(library.bob)])
            #expect(try tx.related("Person", id: library.bob, "favoriteBook") == [library.paperback])
            #expect(try tx.related("Person", id: library.bob, "favoriteFilm") == [library.film])
            #expect(try tx.related("Person", id: library.ann, "favoriteFilm") == [])
            // A record of the wrong sibling is refused as a target.
            let wrong = expectDeckError {
                try tx.update("Person", id: library.ann, ["books": .references([library.film])])
            }
            if case .recordNotFound("Book", library.film) = wrong {
            } else {
                Issue.record("expected recordNotFound, got \(String(describing: wrong))")
            }
            try tx.commit()
            let report = try PackageVerifier.verify(at: store.url)
            #expect(report.findings.isEmpty, "\(report.findings)")
            tx.rollback()
            try store.close()
        }
    }

    @Test func deleteRulesApplyToEachSiblingsOwnRows() throws {
        try withTestDirectory { dir throws in
            let library = try Self.library(in: dir)
            let store = library.store
            let tx = try store.beginTransaction()
            let watcher = try tx.insert(
                "Person", ["name": .string("Cy"), "watched": .references([library.film])])
            #expect(try tx.related("Film", id: library.film, "watchers") == [watcher])
            // Books cascade, films are nullified: deleting Ann deletes her book and paperback only.
            #expect(try tx.delete("Person", id: library.ann) == 3)
            #expect(try tx.fetchIDs(RecordQuery("Item")) == [library.film])
            let film = try #require(try tx.record("Film", id: library.film))
            #expect(film["owner"] == .null)
            #expect(film["fan"] == .null)
            #expect(try tx.related("Film", id: library.film, "watchers") == [watcher])
            try tx.delete("Person", id: watcher)
            #expect(try tx.related("Film", id: library.film, "watchers") == [])
            try tx.commit()
            #expect(try PackageVerifier.verify(at: store.url).findings.isEmpty)
            tx.rollback()
            try store.close()
        }
    }

    @Test func denyOnOneSiblingDoesNotCountTheOthersRows() throws {
        try withTestDirectory { dir throws in
            let library = try Self.library(
                in: dir, schema: Self.schema(booksRule: .nullify, filmsRule: .deny))
            let store = library.store
            let tx = try store.beginTransaction()
            // Bob owns only a book: the films' deny rule does not see it.
            try tx.update("Book", id: library.book, ["owner": .reference(library.bob)])
            #expect(try tx.delete("Person", id: library.bob) == 1)
            #expect(try tx.record("Book", id: library.book)?["owner"] == .null)
            let denied = expectDeckError { try tx.delete("Person", id: library.ann) }
            if case .deleteDenied("Person", library.ann, "films", 1) = denied {
            } else {
                Issue.record("expected deleteDenied for films, got \(String(describing: denied))")
            }
            try tx.update("Film", id: library.film, ["owner": .null])
            #expect(try tx.delete("Person", id: library.ann) == 1)
            #expect(try tx.record("Paperback", id: library.paperback)?["owner"] == .null)
            try tx.commit()
            #expect(try PackageVerifier.verify(at: store.url).findings.isEmpty)
            tx.rollback()
            try store.close()
        }
    }

    @Test func aSharedColumnThatIsAForeignKeyNeverDangles() throws {
        // Person.films is noAction, but the shared column owner is a foreign key (Book.owner, first
        // in schema order, decides): deleting a person clears the film's owner rather than leaving a
        // reference the commit would refuse.
        try withTestDirectory { dir throws in
            let library = try Self.library(
                in: dir, schema: Self.schema(booksRule: .nullify, filmsRule: .noAction))
            let mapping = try SchemaMapping(Self.schema(booksRule: .nullify, filmsRule: .noAction))
            #expect(mapping.foreignKeyColumns.contains("Item.owner"))
            let store = library.store
            let tx = try store.beginTransaction()
            try tx.delete("Person", id: library.ann)
            try tx.commit()
            #expect(try store.read { try $0.record("Film", id: library.film) }?["owner"] == .null)
            #expect(try PackageVerifier.verify(at: store.url).findings.isEmpty)
            tx.rollback()
            try store.close()
        }
        // When the first sibling says noAction, the column is no foreign key, and only the other
        // sibling's rows are cleared.
        try withTestDirectory { dir throws in
            let schema = Self.schema(booksRule: .noAction, filmsRule: .nullify)
            #expect(!(try SchemaMapping(schema)).foreignKeyColumns.contains("Item.owner"))
            let library = try Self.library(in: dir, schema: schema)
            let store = library.store
            let tx = try store.beginTransaction()
            try tx.delete("Person", id: library.ann)
            try tx.commit()
            #expect(try store.read { try $0.record("Film", id: library.film) }?["owner"] == .null)
            #expect(
                try store.read { try $0.record("Book", id: library.book) }?["owner"]
                    == .reference(library.ann))
            tx.rollback()
            try store.close()
        }
    }

    @Test func siblingsMayGiveANameDifferentStorage() throws {
        // Book.link is an attribute, a column of Item; Film.link is a one-to-one relationship whose
        // column is Alpha's ("Alpha.film" < "Film.link"). A fetch of Item reads each one its own way.
        let schema = StoreSchema(entities: [
            Entity("Item"),
            Entity("Book", superentity: "Item", attributes: [Attribute("link", .string, isOptional: true)]),
            Entity(
                "Film", superentity: "Item",
                relationships: [Relationship("link", to: "Alpha", inverse: "film")]),
            Entity("Alpha", relationships: [Relationship("film", to: "Film", inverse: "link")]),
        ])
        try withTestDirectory { dir throws in
            let store = try makeTestStore(in: dir, schema: schema)
            let tx = try store.beginTransaction()
            let book = try tx.insert("Book", ["link": .string("https://example.org")])
            let film = try tx.insert("Film", [:])
            let alpha = try tx.insert("Alpha", ["film": .reference(film)])
            let items = try tx.fetch(RecordQuery("Item"))
            #expect(items.map(\.id) == [book, film])
            #expect(items[0].values == ["link": .string("https://example.org")])
            #expect(items[1].values == ["link": .reference(alpha)])
            #expect(
                try tx.fetchIDs(
                    RecordQuery("Film", where: .compare(.property("link"), .equal, .value(.reference(alpha))))
                )
                    == [
                        film
                    ])
            #expect(try tx.fetchIDs(RecordQuery("Book", where: .isNull(.property("link")))) == [])
            try tx.commit()
            #expect(try PackageVerifier.verify(at: store.url).findings.isEmpty)
            tx.rollback()
            try store.close()
        }
    }

    @Test func aUniqueViolationNamesTheEntityWritten() throws {
        try withTestDirectory { dir throws in
            let library = try Self.library(in: dir)
            let store = library.store
            let tx = try store.beginTransaction()
            for entity in ["Book", "Paperback"] {
                let error = expectDeckError {
                    try tx.insert(entity, ["title": .string("x"), "isbn": .string("1")])
                }
                guard case .uniqueViolation(let name, let properties) = error else {
                    Issue.record("expected uniqueViolation, got \(String(describing: error))")
                    continue
                }
                #expect(name == entity)
                #expect(properties == ["isbn"])
                #expect(error?.description == "\(entity): another record already has the same isbn")
            }
            let update = expectDeckError {
                try tx.update("Paperback", id: library.paperback, ["isbn": .string("1")])
            }
            if case .uniqueViolation("Paperback", ["isbn"]) = update {
            } else {
                Issue.record("expected uniqueViolation, got \(String(describing: update))")
            }
            // A root entity's constraint: the table's name is the entity's.
            let person = expectDeckError { try tx.insert("Person", ["name": .string("Ann")]) }
            if case .uniqueViolation("Person", ["name"]) = person {
            } else {
                Issue.record("expected uniqueViolation, got \(String(describing: person))")
            }
            tx.rollback()
            try store.close()
        }
    }
}
