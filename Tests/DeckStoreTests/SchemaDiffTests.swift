import DeckStore
import DeckTestTiming
import Foundation
import Testing

/// The diff engine (spec: section 17): matching by name and `originalName`, the steps in order,
/// and which of them are lightweight.
@Suite(.timed) struct SchemaDiffTests {
    typealias Entity = StoreSchema.Entity
    typealias Attribute = StoreSchema.Attribute
    typealias Relationship = StoreSchema.Relationship

    static let v1 = StoreSchema(
        version: "1.0.0",
        entities: [
            Entity(
                "Card",
                attributes: [
                    Attribute("front", .string), Attribute("back", .string),
                    Attribute("image", .data, isOptional: true, options: [.externalStorage]),
                    Attribute("note", .string, isOptional: true),
                ],
                relationships: [Relationship("deck", to: "Deck", inverse: "cards")]),
            Entity(
                "Deck", attributes: [Attribute("title", .string)],
                relationships: [
                    Relationship("cards", to: "Card", toMany: true, inverse: "deck", deleteRule: .cascade)
                ]),
        ])

    func kinds(_ diff: SchemaDiff) -> [String] {
        diff.steps.map { "\($0.kind.rawValue) \($0.entity)\($0.property.map { "." + $0 } ?? "")" }
    }

    @Test func theSameSchemaHasNoSteps() {
        let diff = SchemaDiff(from: Self.v1, to: Self.v1)
        #expect(diff.steps.isEmpty && diff.isEmpty && diff.isLightweight)
        var later = Self.v1
        later.version = "1.1.0"
        later.entities[0].attributes[0].originalName = "front"
        let versionOnly = SchemaDiff(from: Self.v1, to: later)
        #expect(versionOnly.steps.isEmpty && versionOnly.isEmpty)
    }

    @Test func additiveChangesAreLightweight() {
        var v2 = Self.v1
        v2.entities[0].attributes.append(Attribute("hint", .string, isOptional: true))
        v2.entities[0].attributes.append(Attribute("level", .integer, defaultValue: .integer(1)))
        v2.entities.append(Entity("Tag", attributes: [Attribute("name", .string, options: [.unique])]))
        v2.entities[0].relationships.append(Relationship("tags", to: "Tag", toMany: true))
        let diff = SchemaDiff(from: Self.v1, to: v2)
        #expect(
            kinds(diff) == [
                "addEntity Tag", "addAttribute Card.hint", "addAttribute Card.level",
                "addRelationship Card.tags",
            ])
        #expect(diff.isLightweight && !diff.isEmpty)
    }

    @Test func aRequiredAttributeWithoutDefaultNeedsACustomStage() throws {
        var v2 = Self.v1
        v2.entities[0].attributes.append(Attribute("level", .integer))
        let diff = SchemaDiff(from: Self.v1, to: v2)
        let step = try #require(diff.steps.first)
        #expect(step.kind == .addAttribute && !step.isLightweight)
        #expect(step.reason?.contains("no default") == true)
        #expect(!diff.isLightweight)
    }

    @Test func renamesFollowOriginalNameAndChainsKeepEachValue() {
        // front → question and back → front in one step: the old `front` goes to `question`,
        // never to the new `front`.
        var v2 = Self.v1
        v2.entities[0].attributes[0] = Attribute("question", .string, originalName: "front")
        v2.entities[0].attributes[1] = Attribute("front", .string, originalName: "back")
        v2.entities[1] = Entity(
            "Pile", attributes: [Attribute("name", .string, originalName: "title")],
            relationships: [
                Relationship("cards", to: "Card", toMany: true, inverse: "pile", deleteRule: .cascade)
            ],
            originalName: "Deck")
        v2.entities[0].relationships[0] = Relationship(
            "pile", to: "Pile", inverse: "cards", originalName: "deck")
        let diff = SchemaDiff(from: Self.v1, to: v2)
        #expect(
            kinds(diff) == [
                "renameEntity Pile", "renameAttribute Card.question", "renameAttribute Card.front",
                "renameRelationship Card.pile", "renameAttribute Pile.name",
            ], "\(diff.steps.map(\.summary))")
        #expect(diff.isLightweight)
        #expect(
            diff.propertyOrigins["Card.question"] == "front" && diff.propertyOrigins["Card.front"] == "back")
        #expect(diff.entityOrigins["Pile"] == "Deck")
        // A plan's renames do the same where the schema has no originalName.
        var v3 = Self.v1
        v3.entities[0].attributes[0].name = "question"
        let planned = SchemaDiff(from: Self.v1, to: v3, renames: ["Card.question": "front"])
        #expect(kinds(planned) == ["renameAttribute Card.question"])
        let unplanned = SchemaDiff(from: Self.v1, to: v3)
        #expect(kinds(unplanned) == ["addAttribute Card.question", "removeAttribute Card.front"])
        #expect(!unplanned.isLightweight, "a new required attribute without default")
    }

    @Test func optionalityTypesAndOptions() {
        var v2 = Self.v1
        v2.entities[0].attributes[3].isOptional = false
        v2.entities[0].attributes[3].defaultValue = .string("")
        v2.entities[0].attributes[1].isOptional = true
        v2.entities[0].attributes[2].externalThreshold = 1024
        v2.entities[1].attributes[0].options = [.unique]
        v2.entities[0].attributes[0].options = [.indexed]
        let diff = SchemaDiff(from: Self.v1, to: v2)
        #expect(
            kinds(diff) == [
                "addIndex Card.front", "makeOptional Card.back", "changeExternalStorage Card.image",
                "makeRequired Card.note", "changeDefault Card.note", "addUnique Deck.title",
            ], "\(diff.steps.map(\.summary))")
        #expect(diff.isLightweight)
        #expect(diff.steps.filter(\.needsDataCheck).map(\.kind) == [.addUnique])

        var noDefault = Self.v1
        noDefault.entities[0].attributes[3].isOptional = false
        let required = SchemaDiff(from: Self.v1, to: noDefault)
        #expect(required.steps.map(\.kind) == [.makeRequired] && !required.isLightweight)

        var retyped = Self.v1
        retyped.entities[0].attributes[3].type = .integer
        let typed = SchemaDiff(from: Self.v1, to: retyped)
        #expect(typed.steps.map(\.kind) == [.changeAttributeType] && !typed.isLightweight)
        #expect(typed.steps.first?.reason?.contains("custom stage") == true)
    }

    @Test func relationshipChanges() {
        var v2 = Self.v1
        v2.entities[1].relationships[0].deleteRule = .nullify
        let rule = SchemaDiff(from: Self.v1, to: v2)
        #expect(rule.steps.map(\.kind) == [.changeDeleteRule] && rule.isLightweight)

        // To-one ↔ to-many: Card.deck becomes Card.decks, a many-to-many.
        var v3 = Self.v1
        v3.entities[0].relationships[0].isToMany = true
        v3.entities[1].relationships[0].deleteRule = .nullify
        let many = SchemaDiff(from: Self.v1, to: v3)
        #expect(many.steps.map(\.kind) == [.makeToMany, .changeDeleteRule], "\(many.steps.map(\.summary))")
        #expect(many.isLightweight)

        var v4 = Self.v1
        v4.entities.append(Entity("Box"))
        v4.entities[0].relationships[0] = Relationship("deck", to: "Box")
        v4.entities[1].relationships = []
        let moved = SchemaDiff(from: Self.v1, to: v4)
        #expect(moved.steps.contains { $0.kind == .changeDestination && !$0.isLightweight })
    }

    @Test func inheritanceWithinAHierarchyIsLightweightAcrossIsNot() {
        let base = StoreSchema(
            version: "1",
            entities: [
                Entity("Item", attributes: [Attribute("title", .string)]),
                Entity("Book", superentity: "Item"), Entity("Paperback", superentity: "Item"),
                Entity("Person", attributes: [Attribute("name", .string)]),
            ])
        var within = base
        within.entities[2].superentity = "Book"
        let inside = SchemaDiff(from: base, to: within)
        #expect(inside.steps.map(\.kind) == [.changeSuperentity] && inside.isLightweight)
        var across = base
        across.entities[2].superentity = "Person"
        let outside = SchemaDiff(from: base, to: across)
        #expect(outside.steps.map(\.kind) == [.changeSuperentity] && !outside.isLightweight)
        #expect(outside.steps.first?.reason?.contains("hierarchy") == true)
    }

    @Test func constraintsIndexesAndOrder() {
        var v2 = Self.v1
        v2.entities[0].uniqueConstraints = [["front", "back"]]
        v2.entities[0].indexes = [["back"]]
        v2.entities[1].attributes.insert(Attribute("subtitle", .string, isOptional: true), at: 0)
        let diff = SchemaDiff(from: Self.v1, to: v2)
        #expect(
            kinds(diff) == [
                "addUniqueConstraint Card.front+back", "addCompositeIndex Card.back",
                "addAttribute Deck.subtitle",
            ], "\(diff.steps.map(\.summary))")
        var reordered = Self.v1
        reordered.entities[0].attributes.swapAt(0, 1)
        let order = SchemaDiff(from: Self.v1, to: reordered)
        #expect(order.steps.map(\.kind) == [.reorder] && order.isLightweight && !order.isEmpty)
        // A constraint over a renamed attribute is the same constraint.
        var constrained = Self.v1
        constrained.entities[0].uniqueConstraints = [["front", "back"]]
        var renamed = constrained
        renamed.entities[0].attributes[0] = Attribute("question", .string, originalName: "front")
        renamed.entities[0].uniqueConstraints = [["question", "back"]]
        #expect(SchemaDiff(from: constrained, to: renamed).steps.map(\.kind) == [.renameAttribute])
    }

    @Test func removalsAreLightweightAndSaySoInTheirSummary() {
        var v2 = Self.v1
        v2.entities[0].attributes.removeLast()
        v2.entities[0].relationships = []
        v2.entities[1].relationships = []
        let diff = SchemaDiff(from: Self.v1, to: v2)
        #expect(
            kinds(diff) == [
                "removeAttribute Card.note", "removeRelationship Card.deck", "removeRelationship Deck.cards",
            ])
        #expect(diff.isLightweight && diff.steps.allSatisfy { $0.summary.contains("deleted") })
        let gone = SchemaDiff(from: Self.v1, to: StoreSchema(version: "2", entities: [Self.v1.entities[1]]))
        #expect(gone.steps.first?.kind == .removeEntity)
    }

    /// Two schemas of `entities` entities of 99 attributes, the second renaming, retyping,
    /// removing and adding one attribute of every entity.
    static func wide(entities: Int) -> (StoreSchema, StoreSchema) {
        let old = StoreSchema(
            version: "1.0.0",
            entities: (0..<entities).map { index in
                Entity(
                    "E\(index)",
                    attributes: (0..<99).map {
                        Attribute("a\($0)", $0 == 1 ? .string : .integer, isOptional: true)
                    })
            })
        var new = old
        new.version = "2.0.0"
        for index in new.entities.indices {
            new.entities[index].attributes[0].name = "b0"
            new.entities[index].attributes[0].originalName = "a0"
            new.entities[index].attributes[1].type = .integer
            new.entities[index].attributes.removeLast()
            new.entities[index].attributes.append(Attribute("z", .string, isOptional: true))
        }
        return (old, new)
    }

    /// Comparing two schemas at the limits (1,000 entities of 99 attributes, both valid) finishes
    /// and finds every step, as a migration plan's check of the models does: comparing was
    /// quadratic in the properties (minutes at the limits). No timing assertion: the figures are
    /// printed for the record.
    @Test func schemasAtTheLimitsCompareInLinearTime() throws {
        for count in [300, StoreSchema.Limits.entities] {
            let (old, new) = Self.wide(entities: count)
            let clock = ContinuousClock()
            var diff: SchemaDiff?
            var differences: [String] = []
            let elapsed = clock.measure {
                diff = SchemaDiff(from: old, to: new)
                differences = SchemaComparison.differences(stored: old, models: new)
            }
            print("schema diff: \(count) entities × 99 attributes: \(elapsed)")
            let steps = try #require(diff).steps
            #expect(steps.count == count * 4)
            #expect(
                Set(steps.map(\.kind)) == [
                    .renameAttribute, .changeAttributeType, .removeAttribute, .addAttribute,
                ])
            #expect(differences.count == count * 5)
            if count == StoreSchema.Limits.entities {
                try old.validate()
                try new.validate()
            }
        }
    }
}
