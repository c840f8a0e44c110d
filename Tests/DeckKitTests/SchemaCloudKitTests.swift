import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// Models for the CloudKit check: a to-many relationship declared as a non-optional array, one
/// with a minimum count, a unique attribute, a relationship without an inverse.
enum CloudKitModels {
    final class Album: ModelObject {
        @Attribute(.unique) var title = ""
        @Attribute var year = 2026
        @Relationship(inverse: \Song.album) var songs: [Song] = []
        @Relationship(inverse: \Sticker.album, minimumModelCount: 1) var stickers: [Sticker]? = []
        @Relationship var cover: Picture? = nil
        required init() {}
    }

    final class Song: ModelObject {
        @Attribute var name = ""
        @Relationship var album: Album? = nil
        required init() {}
    }

    final class Sticker: ModelObject {
        @Attribute var text: String? = nil
        @Relationship var album: Album? = nil
        required init() {}
    }

    /// Nothing points back at an album from here.
    final class Picture: ModelObject {
        @Attribute var data = Data()
        required init() {}
    }
}

@Suite(.timed) struct SchemaCloudKitTests {
    static func findings(_ types: any PersistentModel.Type...) throws -> [String] {
        try Schema(types).cloudKitFindings().map { "\($0.code.rawValue) \($0.location)" }
    }

    @Test func typedModelsFindingsNameEntityAndProperty() throws {
        let findings = try Schema(CloudKitModels.Album.self).cloudKitFindings()
        #expect(
            findings.map { "\($0.code.rawValue) \($0.location)" } == [
                "unique-attribute Album.title", "relationship-without-inverse Album.cover",
                "relationship-not-optional Album.songs", "relationship-not-optional Album.stickers",
            ])
        // The non-optional attributes (year, and name and data on the related models) have the
        // values init() gives them: no attribute-without-default.
        #expect(!findings.contains { $0.code == .attributeWithoutDefault })
        let songs = try #require(findings.first { $0.property == "songs" })
        #expect(songs.entity == "Album" && songs.message.contains("non-optional array"))
        let stickers = try #require(findings.first { $0.property == "stickers" })
        #expect(stickers.message.contains("minimumModelCount of 1"))
        #expect(!stickers.message.contains("non-optional array"))
    }

    /// The seed documents' examples: only the deny rule of Category and the unique order number
    /// of Order break CloudKit's rules (the seeds' own CloudKit chapter says as much).
    @Test func seedExamples() throws {
        #expect(try Self.findings(Seeds.Trip.self, Seeds.BucketListItem.self).isEmpty)
        #expect(try Self.findings(Seeds.Teacher.self, Seeds.Computer.self, Seeds.Person.self).isEmpty)
        #expect(try Self.findings(Seeds.Article.self, Seeds.Tag.self).isEmpty)
        #expect(try Self.findings(Seeds.Note.self).isEmpty)
        #expect(try Self.findings(Seeds.Category.self) == ["deny-delete-rule Category.products"])
        #expect(try Self.findings(Seeds.Order.self) == ["unique-constraint Order"])
    }

    /// What the typed check finds agrees with the store check of the same schema, apart from what
    /// only the types say.
    @Test func agreesWithTheStoreSchemaCheck() throws {
        let schema = Schema(Seeds.Category.self, Seeds.Order.self)
        let store = try #require(schema.storeSchema)
        #expect(
            try schema.cloudKitFindings().map(\.code)
                == store.cloudKitFindings().map(\.code).filter { $0 != .attributeWithoutDefault })
    }

    final class Broken: ModelObject {
        @Attribute var name = ""
        @Relationship var missing: Int? = nil
        required init() {}
    }

    @Test func modelsThatCannotBeStoredAreAnError() {
        #expect {
            try Schema(Broken.self).cloudKitFindings()
        } throws: { error in
            guard case DeckError.invalidSchema(let reason) = error else { return false }
            return reason.contains("missing")
        }
    }
}
