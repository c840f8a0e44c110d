import DeckKit
import DeckSQLite
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// `ModelContainer.importing(coreDataStoreAt:for:configuration:)`: a real Core Data store
/// (../shared/fixtures/coredata/migration-v3) into an app's own models.
@Suite("Importing a Core Data store into models", .timed, CoreDataFixtures.required)
struct CoreDataModelImportTests {
    final class Post: ModelObject {
        @Attribute var date: Date? = nil
        @Attribute var hexColor: String? = nil
        @Attribute var postID: String? = nil
        @Relationship(deleteRule: .cascade, inverse: \Section.post) var sections: [Section] = []
        required init() {}
    }

    final class Section: ModelObject {
        @Attribute var body: String? = nil
        @Attribute var index: Int? = 0
        @Attribute var title: String? = nil
        @Relationship var post: Post? = nil
        required init() {}
    }

    /// The same, but `Section.index` is text: not what the store holds.
    enum Other {
        final class Post: ModelObject {
            @Attribute var date: Date? = nil
            @Attribute var hexColor: String? = nil
            @Attribute var postID: String? = nil
            @Relationship(deleteRule: .cascade, inverse: \Section.post) var sections: [Section] = []
            required init() {}
        }

        final class Section: ModelObject {
            @Attribute var body: String? = nil
            @Attribute var index: String? = nil
            @Attribute var title: String? = nil
            @Relationship var post: Post? = nil
            required init() {}
        }
    }

    @Test func theStoreOpensAsTheAppsModels() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("Blog.deck")
        let (container, report) = try ModelContainer.importing(
            coreDataStoreAt: try CoreDataFixtures.store("migration-v3"),
            for: Schema([Post.self, Section.self]),
            configuration: ModelConfiguration(url: url))
        #expect(report.rows == 26)
        let context = ModelContext(container)
        let posts = try context.fetch(FetchDescriptor<Post>())
        let sections = try context.fetch(FetchDescriptor<Section>())
        #expect(posts.count == 12)
        #expect(sections.count == 14)
        #expect(sections.allSatisfy { $0.post != nil })
        #expect(posts.reduce(0) { $0 + $1.sections.count } == 14)
        #expect(posts.allSatisfy { $0.postID?.isEmpty == false })

        // The document is the app's from now on: it saves.
        let post = Post()
        post.postID = "new"
        context.insert(post)
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Post>()) == 13)
    }

    @Test func modelsThatDifferAreRefusedNamingTheDifference() throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("Blog.deck")
        let error = #expect(throws: DeckError.self) {
            try ModelContainer.importing(
                coreDataStoreAt: try CoreDataFixtures.store("migration-v3"),
                for: Schema([Other.Post.self, Other.Section.self]),
                configuration: ModelConfiguration(url: url))
        }
        guard case .schemaMismatch(_, let differences) = error else {
            Issue.record("expected schemaMismatch, got \(String(describing: error))")
            return
        }
        #expect(differences == ["Section.index: integer in the Core Data store, string in the models"])
        #expect(try directory.names() == [])
    }

    @Test func anInMemoryContainerCannotTakeAnImport() throws {
        #expect(throws: DeckError.self) {
            try ModelContainer.importing(
                coreDataStoreAt: try CoreDataFixtures.store("migration-v3"),
                for: Schema([Post.self, Section.self]),
                configuration: ModelConfiguration(isStoredInMemoryOnly: true))
        }
    }
}

extension CoreDataFixtures {
    /// Skips a suite, saying why, when the folder is absent.
    static var required: ConditionTrait { .enabled(if: directory != nil, Comment(rawValue: absent)) }
}
