import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// The CloudKit-compatibility check of a store schema: each rule found where it is broken and
/// only there.
@Suite(.timed) struct SchemaLintTests {
    /// A schema that passes every rule: defaults or optional attributes, inverses, no deny.
    static let compatible = StoreSchema(entities: [
        Entity(
            "Trip",
            attributes: [
                Attribute("name", .string, defaultValue: .string("")),
                Attribute("start", .date, dynamicDefault: .now),
                Attribute("notes", .string, isOptional: true),
                Attribute("photo", .data, isOptional: true, options: [.externalStorage, .indexed]),
            ],
            relationships: [
                Relationship("items", to: "Item", toMany: true, inverse: "trip", deleteRule: .cascade)
            ]),
        Entity(
            "Item",
            attributes: [Attribute("done", .bool, defaultValue: .bool(false))],
            // The inverse is named on Trip only, and inferred here (spec 6.5).
            relationships: [Relationship("trip", to: "Trip", deleteRule: .noAction)]),
    ])

    static func codes(_ schema: StoreSchema) throws -> [String] {
        try schema.cloudKitFindings().map { "\($0.code.rawValue) \($0.location)" }
    }

    @Test func aCompatibleSchemaHasNoFindings() throws {
        #expect(try Self.compatible.cloudKitFindings().isEmpty)
        #expect(try StoreSchema(entities: []).cloudKitFindings().isEmpty)
    }

    @Test func uniqueAttribute() throws {
        var schema = Self.compatible
        schema.entities[0].attributes[0].options = [.unique]
        let findings = try schema.cloudKitFindings()
        #expect(findings.map(\.code) == [.uniqueAttribute])
        #expect(findings.first?.entity == "Trip" && findings.first?.property == "name")
        #expect(findings.first?.message.contains("unique") == true)
        // `indexed` alone is fine.
        schema.entities[0].attributes[0].options = [.indexed]
        #expect(try schema.cloudKitFindings().isEmpty)
    }

    @Test func uniqueConstraint() throws {
        var schema = Self.compatible
        schema.entities[0].uniqueConstraints = [["name", "start"]]
        let findings = try schema.cloudKitFindings()
        #expect(findings.map(\.code) == [.uniqueConstraint])
        #expect(findings.first?.entity == "Trip" && findings.first?.property == nil)
        #expect(findings.first?.message.contains("(name, start)") == true)
        #expect(findings.first?.description.hasPrefix("Trip: ") == true)
        // A composite index is fine.
        schema.entities[0].uniqueConstraints = []
        schema.entities[0].indexes = [["name", "start"]]
        #expect(try schema.cloudKitFindings().isEmpty)
    }

    @Test func nonOptionalAttributeWithoutDefault() throws {
        var schema = Self.compatible
        schema.entities[0].attributes[0].defaultValue = nil
        schema.entities[0].attributes[1].dynamicDefault = nil
        #expect(
            try Self.codes(schema) == [
                "attribute-without-default Trip.name", "attribute-without-default Trip.start",
            ])
        // Optional without a default, and a dynamic default, are both fine.
        schema.entities[0].attributes[0].isOptional = true
        schema.entities[0].attributes[1].dynamicDefault = .now
        #expect(try schema.cloudKitFindings().isEmpty)
    }

    @Test func relationshipWithoutInverse() throws {
        var schema = Self.compatible
        schema.entities[0].relationships[0].inverse = nil
        // Neither side names the other now: both lack an inverse.
        #expect(
            try Self.codes(schema) == [
                "relationship-without-inverse Trip.items", "relationship-without-inverse Item.trip",
            ])
        // Named on the other side only: inferred, so fine.
        schema.entities[1].relationships[0].inverse = "items"
        #expect(try schema.cloudKitFindings().isEmpty)
    }

    @Test func denyDeleteRule() throws {
        var schema = Self.compatible
        schema.entities[0].relationships[0].deleteRule = .deny
        #expect(try Self.codes(schema) == ["deny-delete-rule Trip.items"])
        for rule in [DeleteRule.cascade, .nullify, .noAction] {
            schema.entities[0].relationships[0].deleteRule = rule
            #expect(try schema.cloudKitFindings().isEmpty, "\(rule)")
        }
    }

    /// Inherited properties are reported once, on the entity that declares them; a subentity's
    /// own are reported on it.
    @Test func inheritedPropertiesAreReportedOnce() throws {
        var schema = Self.compatible
        schema.entities[0].attributes[0].options = [.unique]
        schema.entities.append(
            Entity(
                "Cruise", superentity: "Trip",
                attributes: [Attribute("ship", .string)]))
        #expect(
            try Self.codes(schema) == ["unique-attribute Trip.name", "attribute-without-default Cruise.ship"])
    }

    /// Findings come in schema order: entity by entity, attributes, relationships, constraints.
    @Test func findingsAreInSchemaOrder() throws {
        let schema = StoreSchema(entities: [
            Entity(
                "A", attributes: [Attribute("x", .string, options: [.unique])],
                relationships: [Relationship("b", to: "B", deleteRule: .deny)], uniqueConstraints: [["x"]]),
            Entity("B", attributes: [Attribute("y", .integer)]),
        ])
        #expect(
            try Self.codes(schema) == [
                "unique-attribute A.x", "attribute-without-default A.x", "relationship-without-inverse A.b",
                "deny-delete-rule A.b", "unique-constraint A", "attribute-without-default B.y",
            ])
        // A unique attribute's missing default is explained: typed models give it none, so "give it
        // a default" alone would be advice its author cannot follow.
        let messages = try schema.cloudKitFindings().filter { $0.code == .attributeWithoutDefault }.map(
            \.message)
        #expect(messages.first?.contains("a unique attribute has none") == true)
        #expect(messages.last?.hasSuffix("give it a default or make it optional") == true)
        #expect(messages.last?.contains("unique") == false)
    }

    @Test func anInvalidSchemaIsAnError() {
        let schema = StoreSchema(entities: [
            Entity("A", relationships: [Relationship("b", to: "Missing")])
        ])
        #expect {
            try schema.cloudKitFindings()
        } throws: { error in
            guard case DeckError.invalidSchema(let reason) = error else { return false }
            return reason.contains("Missing")
        }
    }

    /// The flash-cards sample is not CloudKit-compatible, and this is what it breaks: unique deck
    /// titles and tag names, and required text without defaults. Its relationships all have
    /// inverses and no deny rule; `creationDate` defaults to now, `reviewCount` to 0.
    @Test func flashcardsSample() throws {
        #expect(
            try Self.codes(SampleCards.schema) == [
                "unique-attribute Deck.title", "attribute-without-default Deck.title",
                "attribute-without-default Deck.created", "attribute-without-default Card.front",
                "attribute-without-default Card.back", "unique-attribute Tag.name",
                "attribute-without-default Tag.name",
            ])
    }

    /// The sample's schema file says the same as the sample's code.
    @Test func flashcardsSchemaFile() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("samples/flashcards.schema.json")
        let schema = try StoreSchema(contentsOf: url)
        #expect(try schema.cloudKitFindings() == SampleCards.schema.cloudKitFindings())
    }

    @Test func codesAreStable() {
        #expect(
            SchemaFinding.Code.allCases.map(\.rawValue) == [
                "unique-attribute", "unique-constraint", "attribute-without-default",
                "relationship-not-optional",
                "relationship-without-inverse", "deny-delete-rule",
            ])
    }

    // MARK: Reading schema files

    @Test func schemaFileThatIsNotRegularIsRefused() throws {
        let sandbox = try ScratchDirectory()
        #expect {
            try StoreSchema(contentsOf: sandbox.url)
        } throws: { error in
            guard case DeckError.invalidSchema(let reason) = error else { return false }
            return reason.contains("a directory")
        }
        let fifo = sandbox.appending("fifo")
        #expect(mkfifo(fifo.path, 0o644) == 0)
        #expect {
            try StoreSchema(contentsOf: fifo)
        } throws: { error in
            guard case DeckError.invalidSchema(let reason) = error else { return false }
            return reason.contains("FIFO")
        }
        #expect {
            try StoreSchema(contentsOf: sandbox.appending("missing.json"))
        } throws: { error in
            guard case DeckError.notFound = error else { return false }
            return true
        }
    }
}
