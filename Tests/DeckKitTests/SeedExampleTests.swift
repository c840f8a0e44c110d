import DeckKit
import DeckTestTiming
import Foundation
import Observation
import Testing

/// The models of the seed documents' SwiftData examples, ported by replacing the macros.
enum Seeds {
    final class Trip: ModelObject {
        @Attribute var name = ""
        @Attribute var destination = ""
        @Relationship(deleteRule: .cascade, inverse: \BucketListItem.trip) var bucketList: [BucketListItem]? =
            []
        required init() {}
    }

    final class BucketListItem: ModelObject {
        @Attribute var title = ""
        @Relationship var trip: Trip? = nil
        required init() {}
    }

    class Person: ModelObject {
        @Attribute var name = ""
        required init() {}
    }

    final class Teacher: Person {
        @Attribute var subject = ""
        @Relationship(deleteRule: .nullify, inverse: \Computer.teacher) var computers: [Computer]? = []
        required init() {}
    }

    final class Computer: ModelObject {
        @Attribute var model = ""
        @Relationship(deleteRule: .nullify) var teacher: Teacher? = nil
        required init() {}
    }

    final class Category: ModelObject {
        @Attribute var name = ""
        @Relationship(deleteRule: .deny, inverse: \Product.category) var products: [Product]? = []
        required init() {}
    }

    final class Product: ModelObject {
        @Attribute var name = ""
        @Relationship var category: Category? = nil
        required init() {}
    }

    final class Article: ModelObject {
        @Attribute var title = ""
        @Relationship(inverse: \Tag.articles) var tags: [Tag]? = []
        required init() {}
    }

    final class Tag: ModelObject {
        @Attribute var name = ""
        @Relationship var articles: [Article]? = []
        required init() {}
    }

    final class Order: ModelObject {
        @Attribute var orderNumber = ""
        @Attribute var status = "new"
        @Attribute var createdAt = Date.now
        @Attribute var total = Decimal(0)
        override class var uniqueConstraints: [[AnyKeyPath]] { [[\Order.orderNumber]] }
        override class var indexes: [[AnyKeyPath]] { [[\Order.status, \Order.createdAt]] }
        required init() {}
    }

    final class Note: ModelObject {
        @Attribute var title = ""
        @Attribute(.externalStorage) var attachment: Data? = nil
        required init() {}
    }
}

/// A container for `types`, in memory or in a package in a temporary directory (removed after).
func withContainer<T>(
    _ types: [any PersistentModel.Type], inMemory: Bool, _ body: (ModelContainer) throws -> T
) throws -> T {
    if inMemory {
        return try body(
            ModelContainer(
                for: Schema(types), configurations: [ModelConfiguration(isStoredInMemoryOnly: true)]))
    }
    return try withModelDirectory { directory in
        let url = directory.appendingPathComponent("seed.deck")
        return try body(ModelContainer(for: Schema(types), configurations: [ModelConfiguration(url: url)]))
    }
}

@Suite("The seed documents' SwiftData examples, in memory and on disk", .timed)
struct SeedExampleTests {
    typealias Trip = Seeds.Trip
    typealias BucketListItem = Seeds.BucketListItem

    @Test("Trip and BucketListItem: the inverse declared on one side, cascade", arguments: [true, false])
    func tripCascade(inMemory: Bool) throws {
        try withContainer([Trip.self], inMemory: inMemory) { container in
            let context = ModelContext(container)
            let trip = Trip()
            trip.name = "Japan"
            context.insert(trip)
            for title in ["Fuji", "Kyoto"] {
                let item = BucketListItem()
                item.title = title
                item.trip = trip
            }
            #expect(trip.bucketList?.map(\.title) == ["Fuji", "Kyoto"])
            try context.save()
            let fresh = ModelContext(container)
            let trips = try fresh.fetch(FetchDescriptor<Trip>())
            #expect(trips.first?.bucketList?.map(\.title).sorted() == ["Fuji", "Kyoto"])
            fresh.delete(try #require(trips.first))
            try fresh.save()
            #expect(try fresh.fetchCount(FetchDescriptor<BucketListItem>()) == 0)
            #expect(try DeckDocument.verify(at: container.store.url).findings.isEmpty)
        }
    }

    @Test("Person and Teacher: a polymorphic fetch; two saves in a row with a subclass relationship")
    func inheritance() throws {
        for inMemory in [true, false] {
            try withContainer([Seeds.Person.self, Seeds.Teacher.self], inMemory: inMemory) { container in
                let context = ModelContext(container)
                let person = Seeds.Person()
                person.name = "Ana"
                let teacher = Seeds.Teacher()
                teacher.name = "Luis"
                teacher.subject = "Maths"
                context.insert(person)
                context.insert(teacher)
                let laptop = Seeds.Computer()
                laptop.model = "ThinkPad"
                laptop.teacher = teacher
                try context.save()
                laptop.model = "ThinkPad X1"
                teacher.subject = "Physics"
                try context.save()
                let desktop = Seeds.Computer()
                desktop.model = "Desktop"
                teacher.computers?.append(desktop)
                try context.save()

                let fresh = ModelContext(container)
                let people = try fresh.fetch(FetchDescriptor<Seeds.Person>(sortBy: [SortDescriptor(\.name)]))
                #expect(people.map(\.name) == ["Ana", "Luis"])
                #expect(!(people[0] is Seeds.Teacher))
                let found = try #require(people[1] as? Seeds.Teacher)
                #expect(found.subject == "Physics")
                #expect(Set(found.computers?.map(\.model) ?? []) == ["ThinkPad X1", "Desktop"])
                #expect(try fresh.fetch(FetchDescriptor<Seeds.Teacher>()).map(\.name) == ["Luis"])
                // Nullify: deleting the teacher keeps the computers, without a teacher.
                fresh.delete(found)
                try fresh.save()
                let computers = try fresh.fetch(FetchDescriptor<Seeds.Computer>())
                #expect(computers.count == 2)
                #expect(computers.allSatisfy { $0.teacher == nil })
            }
        }
    }

    @Test("Category and Product: deny refuses the delete and keeps the changes", arguments: [true, false])
    func deny(inMemory: Bool) throws {
        try withContainer([Seeds.Category.self], inMemory: inMemory) { container in
            let context = ModelContext(container)
            let category = Seeds.Category()
            category.name = "Books"
            let product = Seeds.Product()
            product.name = "Dune"
            product.category = category
            context.insert(category)
            try context.save()
            context.delete(category)
            #expect {
                try context.save()
            } throws: { error in
                guard case .deleteDenied(let entity, _, let relationship, let count) = error as? DeckError
                else {
                    return false
                }
                return entity == "Category" && relationship == "products" && count == 1
            }
            #expect(context.hasChanges)
            #expect(try ModelContext(container).fetchCount(FetchDescriptor<Seeds.Category>()) == 1)
            // Deleting the product too lets the category go, whatever the order of the deletes.
            context.delete(product)
            try context.save()
            #expect(try ModelContext(container).fetchCount(FetchDescriptor<Seeds.Category>()) == 0)
        }
    }

    @Test("Article and Tag: many-to-many, both sides in step", arguments: [true, false])
    func manyToMany(inMemory: Bool) throws {
        try withContainer([Seeds.Article.self], inMemory: inMemory) { container in
            let context = ModelContext(container)
            let swift = Seeds.Tag()
            swift.name = "swift"
            let linux = Seeds.Tag()
            linux.name = "linux"
            let first = Seeds.Article()
            first.title = "Deck"
            first.tags = [swift, linux]
            let second = Seeds.Article()
            second.title = "SQLite"
            context.insert(first)
            context.insert(second)
            linux.articles?.append(second)
            #expect(second.tags?.map(\.name) == ["linux"])
            #expect(swift.articles?.map(\.title) == ["Deck"])
            try context.save()

            let fresh = ModelContext(container)
            // A many-to-many relationship prefetched (a join table).
            var descriptor = FetchDescriptor<Seeds.Tag>(sortBy: [SortDescriptor(\.name)])
            descriptor.relationshipKeyPathsForPrefetching = [\Seeds.Tag.articles]
            let tags = try fresh.fetch(descriptor)
            #expect(tags.map(\.name) == ["linux", "swift"])
            #expect(Set(tags[0].articles?.map(\.title) ?? []) == ["Deck", "SQLite"])
            #expect(tags[1].articles?.map(\.title) == ["Deck"])
            // Removing a tag from an article takes the article from the tag, before the save.
            let article = try #require(tags[0].articles?.first { $0.title == "SQLite" })
            article.tags = []
            #expect(tags[0].articles?.map(\.title) == ["Deck"])
            try fresh.save()
            let third = ModelContext(container)
            let linuxArticles = try third.fetch(FetchDescriptor<Seeds.Tag>(sortBy: [SortDescriptor(\.name)]))[
                0]
            #expect(linuxArticles.articles?.map(\.title) == ["Deck"])
        }
    }

    @Test(
        "Order: a unique order number upserts; the composite index is in the store", arguments: [true, false])
    func uniqueOrder(inMemory: Bool) throws {
        try withContainer([Seeds.Order.self], inMemory: inMemory) { container in
            let entity = try #require(container.store.schema.entity(named: "Order"))
            #expect(entity.uniqueConstraints == [["orderNumber"]])
            #expect(entity.indexes == [["status", "createdAt"]])
            let context = ModelContext(container)
            let order = Seeds.Order()
            order.orderNumber = "A-1"
            order.total = Decimal(string: "19.99")!
            context.insert(order)
            try context.save()
            let again = Seeds.Order()
            again.orderNumber = "A-1"
            again.status = "paid"
            again.total = Decimal(string: "21.50")!
            context.insert(again)
            let told = ObservedFlag()
            withObservationTracking {
                _ = order.status
            } onChange: {
                told.set()
            }
            try context.save()
            #expect(again.persistentModelID == order.persistentModelID)
            // The instance the context held before reads the record the upsert saved (it kept
            // "new" and 19.99), and its observers hear of it; a fetch here gives the upserted one.
            #expect(order.status == "paid" && order.total == Decimal(string: "21.50")!)
            #expect(told.isSet)
            #expect(!order.hasChanges && !context.hasChanges)
            #expect(try context.fetch(FetchDescriptor<Seeds.Order>()).map { $0 === again } == [true])
            let ordersContext = ModelContext(container)
            let orders = try ordersContext.fetch(FetchDescriptor<Seeds.Order>())
            #expect(orders.count == 1)
            #expect(orders.first?.status == "paid")
            #expect(orders.first?.total == Decimal(string: "21.50")!)
            #expect(try DeckDocument.verify(at: container.store.url).findings.isEmpty)
        }
    }

    @Test(
        "Note: a large attachment goes to a blob file, a small one inline; both load lazily",
        arguments: [true, false])
    func externalStorage(inMemory: Bool) throws {
        try withContainer([Seeds.Note.self], inMemory: inMemory) { container in
            let context = ModelContext(container)
            let large = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let big = Seeds.Note()
            big.title = "big"
            big.attachment = large
            let small = Seeds.Note()
            small.title = "small"
            small.attachment = Data("tiny".utf8)
            context.insert(big)
            context.insert(small)
            try context.save()
            let records = try container.store.read {
                try $0.fetch(RecordQuery("Note", sort: [SortKey("title")]))
            }
            guard case .blob(let reference) = records[0]["attachment"] else {
                Issue.record(
                    "the large attachment is not a blob: \(String(describing: records[0]["attachment"]))")
                return
            }
            #expect(reference.size == Int64(large.count))
            #expect(records[1]["attachment"] == .data(Data("tiny".utf8)))

            let fresh = ModelContext(container)
            let notes = try fresh.fetch(FetchDescriptor<Seeds.Note>(sortBy: [SortDescriptor(\.title)]))
            #expect(notes[0].attachment == large)
            #expect(notes[1].attachment == Data("tiny".utf8))
            #expect(fresh.lastLoadError == nil)
            // Replacing it unreferences the old blob: gc may then remove its file.
            notes[0].attachment = nil
            try fresh.save()
            #expect(try DeckDocument.verify(at: container.store.url).findings.isEmpty)
        }
    }
}
