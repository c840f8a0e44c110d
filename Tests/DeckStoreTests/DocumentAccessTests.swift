import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// The application's schema of the access rules' tests: decks of cards, at version 1.
private func appSchema(version: String = "1.0.0") -> StoreSchema {
    StoreSchema(
        version: version,
        entities: [
            StoreSchema.Entity(
                "Deck", attributes: [StoreSchema.Attribute("title", .string)],
                relationships: [
                    StoreSchema.Relationship(
                        "cards", to: "Card", toMany: true, inverse: "deck", deleteRule: .cascade)
                ], uniqueConstraints: [["title"]]),
            StoreSchema.Entity(
                "Card",
                attributes: [
                    StoreSchema.Attribute("front", .string),
                    StoreSchema.Attribute("back", .string, isOptional: true),
                    StoreSchema.Attribute("level", .integer, defaultValue: .integer(0)),
                    StoreSchema.Attribute("code", .string, isOptional: true, options: [.unique]),
                ],
                relationships: [StoreSchema.Relationship("deck", to: "Deck", inverse: "cards")]),
        ])
}

/// A document schema at version 2: the application's, changed by `change`.
private func documentSchema(version: String = "2.0.0", _ change: (inout StoreSchema) -> Void = { _ in })
    -> StoreSchema
{
    var schema = appSchema(version: version)
    change(&schema)
    return schema
}

/// Changes entity `name` of `schema`.
private func edit(_ schema: inout StoreSchema, _ name: String, _ change: (inout StoreSchema.Entity) -> Void) {
    guard let index = schema.entities.firstIndex(where: { $0.name == name }) else { return }
    change(&schema.entities[index])
}

/// What an access is, for the table: its case, and the version a refusal names.
private func kind(_ access: DocumentAccess) -> String {
    switch access {
    case .readWrite: "read-write"
    case .readOnly: "read-only"
    case .needsNewerApplication(let version, _): "needs " + version
    case .needsMigration: "needs a migration"
    }
}

/// One case of the rules: a document's schema and floor, and the access a version 1 app gets.
struct AccessCase: CustomTestStringConvertible, Sendable {
    let name: String
    let document: StoreSchema
    let floor: String?
    let expected: String
    /// A text one of the reasons must contain (none for read-write).
    let reason: String?

    var testDescription: String { name }
}

private let accessCases: [AccessCase] = [
    AccessCase(
        name: "the same shape at a later version", document: documentSchema(), floor: "1.0.0",
        expected: "read-write", reason: nil),
    AccessCase(
        name: "an added optional attribute",
        document: documentSchema {
            edit(&$0, "Card") { $0.attributes.append(.init("hint", .string, isOptional: true)) }
        },
        floor: "1.0.0", expected: "read-write", reason: nil),
    AccessCase(
        name: "an added attribute with a default",
        document: documentSchema {
            edit(&$0, "Card") { $0.attributes.append(.init("reviews", .integer, defaultValue: .integer(0))) }
        }, floor: "1.0.0", expected: "read-write", reason: nil),
    AccessCase(
        name: "an added date attribute with a dynamic default",
        document: documentSchema {
            edit(&$0, "Card") { $0.attributes.append(.init("seen", .date, dynamicDefault: .now)) }
        }, floor: "1.0.0", expected: "read-write", reason: nil),
    AccessCase(
        name: "an added required attribute without a default",
        document: documentSchema { edit(&$0, "Card") { $0.attributes.append(.init("topic", .string)) } },
        floor: "1.0.0", expected: "read-only", reason: "Card.topic: in the document only"),
    AccessCase(
        name: "an added entity and an added subentity",
        document: documentSchema {
            $0.entities.append(.init("Tag", attributes: [.init("name", .string)]))
            $0.entities.append(
                .init("ImageCard", superentity: "Card", attributes: [.init("caption", .string)]))
        }, floor: "1.0.0", expected: "read-write", reason: nil),
    AccessCase(
        name: "an added relationship",
        document: documentSchema {
            $0.entities.append(.init("Tag", attributes: [.init("name", .string)]))
            edit(&$0, "Card") { $0.relationships.append(.init("tags", to: "Tag", toMany: true)) }
        }, floor: "1.0.0", expected: "read-write", reason: nil),
    AccessCase(
        name: "an added unique constraint",
        document: documentSchema { edit(&$0, "Card") { $0.uniqueConstraints.append(["front", "back"]) } },
        floor: "1.0.0", expected: "read-only", reason: "Card: the document's unique constraint on front, back"
    ),
    AccessCase(
        name: "an added optional unique attribute without a default",
        document: documentSchema {
            edit(&$0, "Card") {
                $0.attributes.append(.init("slug", .string, isOptional: true, options: [.unique]))
            }
        }, floor: "1.0.0", expected: "read-write", reason: nil),
    AccessCase(
        name: "a removed attribute",
        document: documentSchema { edit(&$0, "Card") { $0.attributes.removeFirst() } },
        floor: "1.0.0", expected: "needs 2.0.0", reason: "Card.front: not in the document"),
    AccessCase(
        name: "a removed entity",
        document: documentSchema {
            $0.entities.removeFirst()
            edit(&$0, "Card") { $0.relationships = [] }
        }, floor: "1.0.0", expected: "needs 2.0.0", reason: "Deck: not in the document"),
    AccessCase(
        name: "a removed relationship",
        document: documentSchema {
            edit(&$0, "Card") { $0.relationships = [] }
            edit(&$0, "Deck") {
                $0.relationships = [.init("cards", to: "Card", toMany: true, deleteRule: .cascade)]
            }
        }, floor: "1.0.0", expected: "needs 2.0.0", reason: "Card.deck: not in the document"),
    AccessCase(
        name: "a type change",
        document: documentSchema { edit(&$0, "Card") { $0.attributes[2].type = .double } },
        floor: "1.0.0", expected: "needs 2.0.0",
        reason: "Card.level: double in the document, integer in the app"),
    AccessCase(
        name: "a required attribute made optional",
        document: documentSchema { edit(&$0, "Card") { $0.attributes[0].isOptional = true } },
        floor: "1.0.0", expected: "needs 2.0.0", reason: "Card.front: optional in the document"),
    AccessCase(
        name: "an optional attribute made required",
        document: documentSchema {
            edit(&$0, "Card") {
                $0.attributes[1].isOptional = false
                $0.attributes[1].defaultValue = .string("")
            }
        }, floor: "1.0.0", expected: "read-only",
        reason: "Card.back: required in the document, optional in the app"),
    AccessCase(
        name: "an attribute no longer unique",
        document: documentSchema { edit(&$0, "Card") { $0.attributes[3].options = [] } },
        floor: "1.0.0", expected: "read-only",
        reason: "Card.code: not unique in the document, unique in the app"),
    AccessCase(
        name: "a unique constraint dropped",
        document: documentSchema { edit(&$0, "Deck") { $0.uniqueConstraints = [] } },
        floor: "1.0.0", expected: "read-only", reason: "Deck: the app's unique constraint on title"),
    AccessCase(
        name: "another delete rule",
        document: documentSchema { edit(&$0, "Deck") { $0.relationships[0].deleteRule = .nullify } },
        floor: "1.0.0", expected: "read-only",
        reason: "Deck.cards: delete rule nullify in the document, cascade"),
    AccessCase(
        name: "a to-one made to-many",
        document: documentSchema {
            edit(&$0, "Card") { $0.relationships[0] = .init("deck", to: "Deck", toMany: true) }
            edit(&$0, "Deck") {
                $0.relationships = [.init("cards", to: "Card", toMany: true, deleteRule: .cascade)]
            }
        }, floor: "1.0.0", expected: "needs 2.0.0",
        reason: "Card.deck: to-many Deck in the document, to-one Deck"),
    AccessCase(
        name: "links kept another way (a one-sided pair)",
        document: documentSchema {
            edit(&$0, "Card") { $0.relationships[0].inverse = nil }
            edit(&$0, "Deck") { $0.relationships[0].inverse = nil }
        }, floor: "1.0.0", expected: "read-only", reason: "keeps its links another way"),
    AccessCase(
        name: "an entity moved under another",
        document: documentSchema {
            $0.entities.append(.init("Item", attributes: [.init("added", .date, isOptional: true)]))
            edit(&$0, "Card") { $0.superentity = "Item" }
        }, floor: "1.0.0", expected: "needs 2.0.0", reason: "Card: inherits from Item in the document"),
    AccessCase(
        name: "a floor above the app's version", document: documentSchema(), floor: "2.0.0",
        expected: "read-only", reason: "compatibility floor is 2.0.0, above the app's version 1.0.0"),
    AccessCase(
        name: "no floor (a version 2 store): the document's version",
        document: documentSchema(), floor: nil, expected: "read-only", reason: "compatibility floor is 2.0.0"),
    AccessCase(
        name: "a floor above the document's version counts as its version",
        document: documentSchema(), floor: "9.0.0", expected: "read-only",
        reason: "compatibility floor is 2.0.0"),
    AccessCase(
        name: "unreadable below the floor names the floor",
        document: documentSchema(version: "3.0.0") { edit(&$0, "Card") { $0.attributes.removeFirst() } },
        floor: "2.0.0", expected: "needs 2.0.0", reason: "Card.front"),
    AccessCase(
        name: "unreadable at or above the floor names the document's version",
        document: documentSchema(version: "3.0.0") { edit(&$0, "Card") { $0.attributes.removeFirst() } },
        floor: "1.0.0", expected: "needs 3.0.0", reason: "Card.front"),
    AccessCase(
        name: "versions compare as numbers, not text",
        document: documentSchema(version: "1.10.0") { edit(&$0, "Card") { $0.attributes.removeFirst() } },
        floor: "1.0.0", expected: "needs 1.10.0", reason: "Card.front"),
    AccessCase(
        name: "an earlier document of another shape",
        document: documentSchema(version: "0.9.0") {
            edit(&$0, "Card") { $0.attributes.removeFirst() }
        }, floor: "0.9.0", expected: "needs a migration", reason: "Card.front: missing from the document"),
    AccessCase(
        name: "a document of another shape at the app's version",
        document: documentSchema(version: "1.0.0") {
            edit(&$0, "Card") { $0.attributes.append(.init("hint", .string, isOptional: true)) }
        }, floor: "1.0.0", expected: "needs a migration",
        reason: "Card.hint: in the document, not in the models"),
    AccessCase(
        name: "the app's schema", document: appSchema(), floor: "1.0.0", expected: "read-write", reason: nil),
]

@Suite("Document access: how an older app opens a later document (spec section 19)", .timed)
struct DocumentAccessTests {
    @Test(arguments: accessCases)
    func access(_ testCase: AccessCase) throws {
        try testCase.document.validate()
        let access = DocumentAccess(
            document: testCase.document, floor: testCase.floor, application: appSchema())
        #expect(kind(access) == testCase.expected, "\(access)")
        let reasons: [String]
        switch access {
        case .readWrite: reasons = []
        case .readOnly(let found), .needsNewerApplication(_, let found), .needsMigration(let found):
            reasons = found
        }
        if let reason = testCase.reason {
            #expect(reasons.contains { $0.contains(reason) }, "\(reasons)")
        } else {
            #expect(reasons.isEmpty)
        }
    }

    @Test("A store reports its floor, and an app below it gets read-only")
    func storeAccess() throws {
        let sandbox = try ScratchDirectory()
        let url = sandbox.appending("cards.deck")
        let store = try PackageStore.create(
            at: url, contentType: "org.example.cards", schema: documentSchema())
        defer { try? store.close() }
        #expect(try store.read { try $0.compatibilityFloor() } == "2.0.0")
        guard case .readOnly(let reasons) = try store.access(forApplication: appSchema()) else {
            Issue.record("expected read-only")
            return
        }
        #expect(reasons.first?.contains("compatibility floor is 2.0.0") == true)
        #expect(try store.access(forApplication: appSchema(version: "2.0.0")) == .readWrite)
        #expect(try store.access(forApplication: appSchema(version: "2.1.0")) == .readWrite)
    }

    // Review findings (issue 11, spec section 19): each fails until it is fixed.

    @Test("A floor below a breaking migration of the history is not trusted (a lying floor)")
    func lyingFloorBelowBreakingHistory() throws {
        let sandbox = try ScratchDirectory()
        let url = sandbox.appending("cards.deck")
        try PackageStore.create(at: url, contentType: "org.example.cards", schema: appSchema()).close()
        _ = try PackageStore.migrate(at: url, to: documentSchema(), plan: MigrationPlan(isBreaking: true))
        let db = try rawStore(url)
        try db.run("UPDATE deck_meta SET value = '1.0.0' WHERE key = 'schema_floor'")
        db.close()
        // The verifier says the floor lies (a breaking migration to 2.0.0 is in the history)...
        #expect(!(try PackageVerifier.verify(at: url).findings.isEmpty))
        // ...so no app below 2.0.0 may write on its strength.
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        #expect(try store.access(forApplication: appSchema()) != .readWrite)
    }

    @Test("Read-write means an older app can insert: an added unique attribute with a default")
    func addedUniqueAttributeWithDefault() throws {
        let sandbox = try ScratchDirectory()
        let url = sandbox.appending("cards.deck")
        try PackageStore.create(at: url, contentType: "org.example.cards", schema: appSchema()).close()
        let later = documentSchema {
            edit(&$0, "Card") {
                $0.attributes.append(.init("slug", .string, defaultValue: .string(""), options: [.unique]))
            }
        }
        _ = try PackageStore.migrate(at: url, to: later)
        let store = try PackageStore.open(at: url)
        defer { try? store.close() }
        guard try store.access(forApplication: appSchema()) == .readWrite else { return }
        // The app names only what it knows (section 19): every card it inserts gets the same slug.
        #expect(throws: Never.self) {
            try store.write { transaction in
                try transaction.insert("Card", ["front": .string("uno")])
                try transaction.insert("Card", ["front": .string("dos")])
            }
        }
    }
}
