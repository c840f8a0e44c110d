import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// One invalid schema and a fragment its error message must contain.
struct InvalidSchemaCase: Sendable, CustomTestStringConvertible {
    let label: String
    let entities: [Entity]
    let fragment: String
    var testDescription: String { label }
}

@Suite("StoreSchema", .timed)
struct SchemaTests {
    // MARK: JSON

    static let allTypesSchema = StoreSchema(
        version: "2.3.4",
        entities: [
            Entity(
                "Item",
                attributes: [
                    Attribute(
                        "name", .string, defaultValue: .string("untitled"), options: [.unique, .indexed]),
                    Attribute("count", .integer, defaultValue: .integer(42)),
                    Attribute("negative", .integer, isOptional: true, defaultValue: .integer(-7)),
                    Attribute("ratio", .double, defaultValue: .double(2.5)),
                    Attribute("flag", .bool, defaultValue: .bool(true)),
                    Attribute("off", .bool, defaultValue: .bool(false)),
                    Attribute(
                        "created", .date, defaultValue: .date(Date(timeIntervalSince1970: 1_700_000_000.125))),
                    Attribute("payload", .data, isOptional: true, defaultValue: .data(Data([1, 2, 3, 250]))),
                    Attribute(
                        "image", .data, isOptional: true, options: [.externalStorage],
                        externalThreshold: 1_024,
                        originalName: "picture"),
                    Attribute(
                        "ident", .uuid,
                        defaultValue: .uuid(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!)),
                    Attribute(
                        "link", .url, isOptional: true,
                        defaultValue: .url(URL(string: "https://example.com/a?b=1&c=%20")!)),
                    Attribute("price", .decimal, defaultValue: .decimal(Decimal(string: "12.345")!)),
                    Attribute(
                        "extra", .json, isOptional: true, defaultValue: .json(#"{"a":[1,2,{"b":null}]}"#)),
                    Attribute("plain", .string, isOptional: true),
                ],
                relationships: [
                    Relationship(
                        "owner", to: "Person", inverse: "items", deleteRule: .nullify, originalName: "holder"),
                    Relationship("related", to: "Item", toMany: true, deleteRule: .noAction),
                ],
                uniqueConstraints: [["name", "count"]],
                indexes: [["ratio"], ["flag", "created"]],
                originalName: "Thing"),
            Entity(
                "Person",
                attributes: [Attribute("name", .string)],
                relationships: [
                    Relationship("items", to: "Item", toMany: true, inverse: "owner", deleteRule: .deny)
                ]),
            Entity(
                "Employee", superentity: "Person",
                attributes: [Attribute("salary", .decimal, isOptional: true)]),
            Entity(
                "Manager", superentity: "Employee",
                relationships: [Relationship("reports", to: "Employee", toMany: true, deleteRule: .cascade)]),
        ])

    @Test func jsonRoundTripKeepsEverything() throws {
        let schema = Self.allTypesSchema
        #expect(
            Set(schema.entities[0].attributes.map(\.type)) == Set(AttributeType.allCases),
            "the fixture covers every type")
        let data = try JSONEncoder().encode(schema)
        let decoded = try JSONDecoder().decode(StoreSchema.self, from: data)
        #expect(decoded == schema)
        // Field by field, so a failure says which one.
        for (a, b) in zip(decoded.entities, schema.entities) {
            #expect(a.name == b.name)
            #expect(a.superentity == b.superentity)
            #expect(a.relationships == b.relationships)
            #expect(a.uniqueConstraints == b.uniqueConstraints)
            #expect(a.indexes == b.indexes)
            #expect(a.originalName == b.originalName)
            for (x, y) in zip(a.attributes, b.attributes) { #expect(x == y, "attribute \(y.name)") }
        }
        // And the schema is valid.
        _ = try SchemaMapping(schema)
    }

    @Test func jsonRoundTripIsStable() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let once = try encoder.encode(Self.allTypesSchema)
        let twice = try encoder.encode(try JSONDecoder().decode(StoreSchema.self, from: once))
        #expect(once == twice)
    }

    @Test func decodesAHandWrittenSchemaFileWithDefaults() throws {
        let json = """
            {
              "version": "1.0.0",
              "entities": [
                {
                  "name": "Card",
                  "attributes": [
                    {"name": "front", "type": "string"},
                    {"name": "count", "type": "integer", "default": 1},
                    {"name": "score", "type": "double", "default": 3},
                    {"name": "done", "type": "bool", "default": true},
                    {"name": "due", "type": "date", "default": "2026-11-30T10:00:00Z", "optional": true},
                    {"name": "seen", "type": "date", "default": 0},
                    {"name": "meta", "type": "json", "default": 5},
                    {"name": "image", "type": "data", "optional": true,
                     "options": ["externalStorage", "indexed"], "externalThreshold": 16}
                  ],
                  "relationships": [
                    {"name": "deck", "destination": "Deck"},
                    {"name": "tags", "destination": "Tag", "toMany": true, "deleteRule": "cascade"}
                  ],
                  "indexes": [["front", "count"]]
                },
                {"name": "Deck"},
                {"name": "Tag", "superentity": "Deck"}
              ]
            }
            """
        let schema = try JSONDecoder().decode(StoreSchema.self, from: Data(json.utf8))
        let card = try #require(schema.entity(named: "Card"))
        #expect(
            card.attributes.map(\.name) == [
                "front", "count", "score", "done", "due", "seen", "meta", "image",
            ])
        #expect(card.attributes[0] == Attribute("front", .string))
        #expect(
            card.attributes[1].defaultValue == .integer(1), "an integer default is not mistaken for a bool")
        #expect(card.attributes[2].defaultValue == .double(3))
        #expect(card.attributes[3].defaultValue == .bool(true))
        #expect(card.attributes[4].defaultValue == .date(Date(timeIntervalSince1970: 1_796_032_800)))
        #expect(card.attributes[4].isOptional)
        #expect(card.attributes[5].defaultValue == .date(Date(timeIntervalSince1970: 0)))
        #expect(card.attributes[6].defaultValue == .json("5"))
        #expect(card.attributes[7].options == [.externalStorage, .indexed])
        #expect(card.attributes[7].externalThreshold == 16)
        #expect(card.attributes[7].effectiveExternalThreshold == 16)
        #expect(card.attributes[0].effectiveExternalThreshold == Attribute.defaultExternalThreshold)
        #expect(
            card.relationships[0]
                == Relationship("deck", to: "Deck", toMany: false, inverse: nil, deleteRule: .nullify))
        #expect(card.relationships[1].isToMany)
        #expect(card.relationships[1].deleteRule == .cascade)
        #expect(card.indexes == [["front", "count"]])
        #expect(card.uniqueConstraints.isEmpty)
        let deck = try #require(schema.entity(named: "Deck"))
        #expect(deck.attributes.isEmpty && deck.relationships.isEmpty)
        #expect(schema.entity(named: "Tag")?.superentity == "Deck")
        #expect(schema.entity(named: "Nope") == nil)
    }

    @Test func encodingOmitsDefaults() throws {
        let schema = StoreSchema(entities: [Entity("A", attributes: [Attribute("x", .string)])])
        let text = String(decoding: try JSONEncoder().encode(schema), as: UTF8.self)
        #expect(!text.contains("optional"))
        #expect(!text.contains("options"))
        #expect(!text.contains("default"))
        #expect(!text.contains("uniqueConstraints"))
        #expect(!text.contains("superentity"))
    }

    @Test(arguments: [Int64(9_007_199_254_740_993), .max, .min + 1])
    func largeIntegerDefaultsRoundTripExactly(value: Int64) throws {
        let schema = StoreSchema(entities: [
            Entity("A", attributes: [Attribute("n", .integer, defaultValue: .integer(value))])
        ])
        let decoded = try JSONDecoder().decode(StoreSchema.self, from: try JSONEncoder().encode(schema))
        #expect(decoded.entities[0].attributes[0].defaultValue == .integer(value))
    }

    @Test func aPackageWithALargeIntegerDefaultReopens() throws {
        try withTestDirectory { dir throws in
            let schema = StoreSchema(
                entities: [Entity("A", attributes: [Attribute("n", .integer, defaultValue: .integer(.max))])])
            let url = dir.appendingPathComponent("big.deck")
            // create() validates the schema and then reopens the package it built.
            let package = try PackageStore.create(at: url, contentType: "org.test", schema: schema)
            try package.close()
            let reopened = try PackageStore.open(at: url, mode: .readOnly)
            #expect(reopened.schema == schema)
        }
    }

    static let badJSON: [(String, String)] = [
        ("not JSON", "{"),
        ("unknown type", #"{"entities":[{"name":"A","attributes":[{"name":"x","type":"strng"}]}]}"#),
        (
            "unknown option",
            #"{"entities":[{"name":"A","attributes":[{"name":"x","type":"data","options":["compressed"]}]}]}"#
        ),
        ("missing attribute name", #"{"entities":[{"name":"A","attributes":[{"type":"string"}]}]}"#),
        ("missing entity name", #"{"entities":[{"attributes":[]}]}"#),
        ("missing version", #"{"entities":[]}"#),
        ("entities not a list", #"{"version":"1","entities":{"A":{}}}"#),
        (
            "bad delete rule",
            #"{"version":"1","entities":[{"name":"A","relationships":[{"name":"r","destination":"A","deleteRule":"explode"}]}]}"#
        ),
        ("missing destination", #"{"version":"1","entities":[{"name":"A","relationships":[{"name":"r"}]}]}"#),
        (
            "option not a string",
            #"{"version":"1","entities":[{"name":"A","attributes":[{"name":"x","type":"data","options":[1]}]}]}"#
        ),
    ]

    @Test(arguments: badJSON)
    func badJSONIsADecodingError(label: String, json: String) {
        #expect(throws: DecodingError.self, "\(label)") {
            try JSONDecoder().decode(StoreSchema.self, from: Data(json.utf8))
        }
    }

    /// A bad default is a decoding error that names the attribute and the path (it was a bare
    /// ValueError that named neither).
    @Test(arguments: [
        (#""integer","default":"abc""#, "'abc' is not a valid integer"),
        (
            #""integer","default":1.5"#,
            "'1.5' is not a valid integer: expected an integer, without a fraction"
        ),
        (#""uuid","default":true"#, "'true' is not a valid uuid: expected a uuid value"),
    ])
    func defaultOfTheWrongTypeIsRejectedWhileDecoding(attribute: String, reason: String) {
        let json =
            #"{"version":"1","entities":[{"name":"A","attributes":[{"name":"n","type":"#
            + attribute + "}]}]}"
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(StoreSchema.self, from: Data(json.utf8))
        }
        #expect {
            try StoreSchema(json: Data(json.utf8), source: "s.json")
        } throws: { error in
            let text = "\(error)"
            return text.contains("attribute 'n': invalid default: \(reason)")
                && text.contains("at 'entities[0].attributes[0].default'")
                && text.hasPrefix("invalid schema: s.json: ")
        }
    }

    // MARK: Validation

    static let invalid: [InvalidSchemaCase] = [
        .init(label: "entity name starts with a digit", entities: [Entity("1Card")], fragment: "'1Card'"),
        .init(
            label: "entity name with deck_ prefix", entities: [Entity("deck_meta")], fragment: "'deck_meta'"),
        .init(label: "entity name with DECK_ prefix", entities: [Entity("DECK_x")], fragment: "'DECK_x'"),
        .init(
            label: "entity name with sqlite_ prefix", entities: [Entity("sqlite_master")],
            fragment: "'sqlite_master'"),
        .init(label: "entity name starts with _", entities: [Entity("_Card")], fragment: "'_Card'"),
        .init(label: "entity name with a space", entities: [Entity("Ca rd")], fragment: "'Ca rd'"),
        .init(label: "entity name with a dot", entities: [Entity("Ca.rd")], fragment: "'Ca.rd'"),
        .init(label: "entity name with a quote", entities: [Entity("Ca\"rd")], fragment: "entity name"),
        .init(label: "non-ASCII entity name", entities: [Entity("Café")], fragment: "'Café'"),
        .init(label: "empty entity name", entities: [Entity("")], fragment: "entity name ''"),
        .init(
            label: "entity name over 64 bytes", entities: [Entity(String(repeating: "a", count: 65))],
            fragment: "entity name"),
        .init(
            label: "duplicate entity", entities: [Entity("Card"), Entity("Card")], fragment: "declared twice"),
        .init(
            label: "duplicate entity differing in case", entities: [Entity("Card"), Entity("card")],
            fragment: "declared twice"),
        .init(
            label: "unknown superentity", entities: [Entity("Card", superentity: "Nope")],
            fragment: "inherits from unknown entity 'Nope'"),
        .init(
            label: "inheritance cycle",
            entities: [
                Entity("A", superentity: "B"), Entity("B", superentity: "C"), Entity("C", superentity: "A"),
            ],
            fragment: "inherits from itself"),
        .init(
            label: "entity inherits from itself", entities: [Entity("A", superentity: "A")],
            fragment: "inherits from itself"),
        .init(
            label: "unknown destination",
            entities: [Entity("A", relationships: [Relationship("r", to: "Nope")])],
            fragment: "points to unknown entity 'Nope'"),
        .init(
            label: "inverse the destination does not have",
            entities: [
                Entity("A", relationships: [Relationship("b", to: "B", inverse: "missing")]),
                Entity("B"),
            ],
            fragment: "which 'B' does not have"),
        .init(
            label: "inverse that points elsewhere",
            entities: [
                Entity("A", relationships: [Relationship("b", to: "B", inverse: "c")]),
                Entity("B", relationships: [Relationship("c", to: "C")]),
                Entity("C"),
            ],
            fragment: "cannot be the inverse"),
        .init(
            label: "inverses disagree",
            entities: [
                Entity(
                    "A",
                    relationships: [Relationship("b", to: "B", inverse: "a"), Relationship("b2", to: "B")]),
                Entity("B", relationships: [Relationship("a", to: "A", inverse: "b2")]),
            ],
            fragment: "disagree"),
        .init(
            label: "externalStorage on a string",
            entities: [Entity("A", attributes: [Attribute("s", .string, options: [.externalStorage])])],
            fragment: "externalStorage applies to data attributes only"),
        .init(
            label: "externalThreshold below 1",
            entities: [
                Entity(
                    "A",
                    attributes: [Attribute("d", .data, options: [.externalStorage], externalThreshold: 0)])
            ],
            fragment: "externalThreshold must be at least 1"),
        .init(
            label: "duplicate attribute",
            entities: [Entity("A", attributes: [Attribute("x", .string), Attribute("x", .integer)])],
            fragment: "'A.x' is declared twice"),
        .init(
            label: "duplicate attribute differing in case",
            entities: [Entity("A", attributes: [Attribute("title", .string), Attribute("Title", .string)])],
            fragment: "declared twice"),
        .init(
            label: "attribute and relationship with one name",
            entities: [
                Entity(
                    "A", attributes: [Attribute("r", .string)], relationships: [Relationship("r", to: "A")])
            ],
            fragment: "'A.r' is declared twice"),
        .init(
            label: "subentity redeclares an inherited attribute",
            entities: [
                Entity("Base", attributes: [Attribute("x", .string)]),
                Entity("Sub", superentity: "Base", attributes: [Attribute("x", .string)]),
            ],
            fragment: "'Sub.x' is declared twice"),
        .init(
            label: "property name with deck_ prefix",
            entities: [Entity("A", attributes: [Attribute("deck_x", .string)])], fragment: "'A.deck_x'"),
        .init(
            label: "property name _pk", entities: [Entity("A", attributes: [Attribute("_pk", .integer)])],
            fragment: "'A._pk'"),
        .init(
            label: "property name with a space",
            entities: [Entity("A", attributes: [Attribute("a b", .string)])],
            fragment: "'A.a b'"),
        .init(
            label: "relationship name invalid",
            entities: [Entity("A", relationships: [Relationship("9r", to: "A")])],
            fragment: "'A.9r'"),
        .init(
            label: "unknown attribute in an index",
            entities: [Entity("A", attributes: [Attribute("x", .string)], indexes: [["x", "nope"]])],
            fragment: "unknown attribute 'nope'"),
        .init(
            label: "unknown attribute in a unique constraint",
            entities: [Entity("A", attributes: [Attribute("x", .string)], uniqueConstraints: [["nope"]])],
            fragment: "unknown attribute 'nope'"),
        .init(
            label: "to-many relationship in an index",
            entities: [
                Entity("A", relationships: [Relationship("many", to: "A", toMany: true)], indexes: [["many"]])
            ],
            fragment: "unknown attribute 'many'"),
        .init(
            label: "empty index",
            entities: [Entity("A", attributes: [Attribute("x", .string)], indexes: [[]])],
            fragment: "lists no attributes"),
        .init(
            label: "default of the wrong type",
            entities: [Entity("A", attributes: [Attribute("n", .integer, defaultValue: .string("abc"))])],
            fragment: "'A.n': default value"),
        .init(
            label: "default data for a bool",
            entities: [Entity("A", attributes: [Attribute("b", .bool, defaultValue: .data(Data([1])))])],
            fragment: "'A.b': default value"),
        .init(
            label: "siblings give one column two types",
            entities: [
                Entity("Base"),
                Entity("Left", superentity: "Base", attributes: [Attribute("extra", .string)]),
                Entity("Right", superentity: "Base", attributes: [Attribute("extra", .integer)]),
            ],
            fragment: "conflicts"),
        .init(
            label: "siblings spell a shared column differently",
            entities: [
                Entity("Base"),
                Entity("Left", superentity: "Base", attributes: [Attribute("Shared", .string)]),
                Entity("Right", superentity: "Base", attributes: [Attribute("shared", .string)]),
            ],
            fragment: "'Right.shared' and 'Left.Shared' would both be column 'Shared'"),
        .init(
            label: "a sibling's relationship column differs in case from another's attribute",
            entities: [
                Entity("Base"),
                Entity("Left", superentity: "Base", attributes: [Attribute("owner", .integer)]),
                Entity("Right", superentity: "Base", relationships: [Relationship("Owner", to: "Base")]),
            ],
            fragment: "compare without regard to case"),
        .init(
            label: "two relationships have one inverse",
            entities: [
                Entity(
                    "Person",
                    relationships: [
                        Relationship("books", to: "Book", toMany: true, inverse: "owner"),
                        Relationship("novels", to: "Book", toMany: true, inverse: "owner"),
                    ]),
                Entity("Book", relationships: [Relationship("owner", to: "Person")]),
            ],
            fragment: "'Person.books' and 'Person.novels' both have 'Book.owner' as their inverse"),
        .init(
            label: "an inverse that its destination only inherits",
            entities: [
                Entity(
                    "Owner", relationships: [Relationship("pets", to: "Dog", toMany: true, inverse: "owner")]),
                Entity("Animal", relationships: [Relationship("owner", to: "Owner")]),
                Entity("Dog", superentity: "Animal"),
            ],
            fragment:
                "'Owner.pets' has 'Animal.owner' as its inverse, but the inverse of 'Animal.owner' is none"),
        .init(
            label: "an inverse that points at the declarer's ancestor",
            entities: [
                Entity("Item", relationships: [Relationship("owner", to: "Person")]),
                Entity("Person"),
                Entity(
                    "Employee", superentity: "Person",
                    relationships: [Relationship("items", to: "Item", toMany: true, inverse: "owner")]),
            ],
            fragment: "inverses pair up only when"),
    ]

    @Test(arguments: invalid)
    func invalidSchemasAreRefused(_ example: InvalidSchemaCase) {
        do throws(DeckError) {
            _ = try SchemaMapping(StoreSchema(entities: example.entities))
            Issue.record("accepted: \(example.label)")
        } catch {
            guard case .invalidSchema(let message) = error else {
                Issue.record("expected invalidSchema, got \(error)")
                return
            }
            #expect(message.contains(example.fragment), "message: \(message)")
            #expect(error.description.hasPrefix("invalid schema: "))
            #expect(error.kind == .invalidData)
        }
    }

    @Test func invalidSchemaIsRefusedByCreateWithoutLeavingAnything() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("bad.deck")
            let error = expectDeckError {
                _ = try PackageStore.create(
                    at: url, contentType: "org.test", schema: StoreSchema(entities: [Entity("deck_x")]))
            }
            if case .invalidSchema = error {
            } else {
                Issue.record("expected invalidSchema, got \(String(describing: error))")
            }
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path)
            #expect(leftovers.isEmpty)
        }
    }

    @Test func validNamesAreAccepted() throws {
        let mapping = try SchemaMapping(
            StoreSchema(entities: [
                Entity(
                    "Card2_x", attributes: [Attribute("a1", .string), Attribute("B_b", .string)],
                    relationships: [Relationship("deck", to: "Card2_x")], indexes: [["deck"]]),
                Entity(String(repeating: "z", count: 64)),
                Entity("decks"),  // only the "deck_" prefix is reserved
            ]))
        #expect(mapping.entityNames.count == 3)
    }

    // MARK: Relationship storage

    @Test func oneToManyUsesTheToOneSidesColumn() throws {
        let mapping = try SchemaMapping(flashCardsSchema())
        #expect(mapping.entities["Card"]?.relationship("deck")?.storage == .ownColumn(column: "deck"))
        #expect(
            mapping.entities["Deck"]?.relationship("cards")?.storage
                == .inverseColumn(table: "Card", column: "deck"))
    }

    @Test func manyToManyUsesOneJoinTableNamedAfterTheFirstSide() throws {
        let mapping = try SchemaMapping(flashCardsSchema())
        #expect(
            mapping.entities["Card"]?.relationship("tags")?.storage
                == .joinTable(table: "Card.tags", near: "source", far: "target"))
        #expect(
            mapping.entities["Tag"]?.relationship("cards")?.storage
                == .joinTable(table: "Card.tags", near: "target", far: "source"))
    }

    @Test func unidirectionalRelationships() throws {
        let mapping = try SchemaMapping(
            StoreSchema(entities: [
                Entity(
                    "Note",
                    relationships: [
                        Relationship("links", to: "Note", toMany: true), Relationship("parent", to: "Note"),
                    ])
            ]))
        #expect(
            mapping.entities["Note"]?.relationship("links")?.storage
                == .joinTable(table: "Note.links", near: "source", far: "target"))
        #expect(mapping.entities["Note"]?.relationship("parent")?.storage == .ownColumn(column: "parent"))
    }

    @Test func oneToOneColumnGoesToTheSideThatSortsFirst() throws {
        let mapping = try SchemaMapping(
            StoreSchema(entities: [
                Entity("Person", relationships: [Relationship("passport", to: "Passport", inverse: "owner")]),
                Entity("Passport", relationships: [Relationship("owner", to: "Person", inverse: "passport")]),
            ]))
        // "Passport.owner" < "Person.passport"
        #expect(mapping.entities["Passport"]?.relationship("owner")?.storage == .ownColumn(column: "owner"))
        #expect(
            mapping.entities["Person"]?.relationship("passport")?.storage
                == .inverseColumn(table: "Passport", column: "owner"))

        // Declaration order does not matter; names decide.
        let swapped = try SchemaMapping(
            StoreSchema(entities: [
                Entity("Beta", relationships: [Relationship("a", to: "Alpha", inverse: "b")]),
                Entity("Alpha", relationships: [Relationship("b", to: "Beta", inverse: "a")]),
            ]))
        #expect(swapped.entities["Alpha"]?.relationship("b")?.storage == .ownColumn(column: "b"))
        #expect(
            swapped.entities["Beta"]?.relationship("a")?.storage
                == .inverseColumn(table: "Alpha", column: "b"))
    }

    @Test func relationshipToASubentityUsesTheRootTable() throws {
        let mapping = try SchemaMapping(
            StoreSchema(entities: [
                Entity(
                    "Owner", relationships: [Relationship("pets", to: "Dog", toMany: true, inverse: "owner")]),
                Entity("Animal", attributes: [Attribute("name", .string)]),
                Entity(
                    "Dog", superentity: "Animal",
                    relationships: [Relationship("owner", to: "Owner", inverse: "pets")]),
            ]))
        #expect(
            mapping.entities["Owner"]?.relationship("pets")?.storage
                == .inverseColumn(table: "Animal", column: "owner"))
        #expect(mapping.entities["Dog"]?.table == "Animal")
    }

    @Test func inheritanceResolvesTablesFamiliesAndInheritedProperties() throws {
        let mapping = try SchemaMapping(
            StoreSchema(entities: [
                Entity(
                    "Base", attributes: [Attribute("a", .string)],
                    relationships: [Relationship("link", to: "Base")]),
                Entity("Sub", superentity: "Base", attributes: [Attribute("b", .integer)]),
                Entity("SubSub", superentity: "Sub", attributes: [Attribute("c", .bool)]),
                Entity("Other", superentity: "Base"),
                Entity("Lone"),
            ]))
        let subsub = try #require(mapping.entities["SubSub"])
        #expect(subsub.table == "Base")
        #expect(subsub.attributes.map(\.name) == ["a", "b", "c"])
        #expect(subsub.relationships.map(\.relationship.name) == ["link"])
        #expect(subsub.propertyNames == ["a", "b", "c", "link"])
        #expect(mapping.entities["Base"]?.family == ["Base", "Sub", "SubSub", "Other"])
        #expect(mapping.entities["Sub"]?.family == ["Sub", "SubSub"])
        #expect(mapping.entities["Other"]?.family == ["Other"])
        #expect(mapping.roots.map(\.name) == ["Base", "Lone"])
        #expect(throws: DeckError.self) { try mapping.entity("Nope") }
    }

    @Test func storeTablesFollowTheMapping() throws {
        try withTestDirectory { dir throws in
            var schema = flashCardsSchema()
            schema.entities.append(
                Entity("Special", superentity: "Card", attributes: [Attribute("hint", .string)]))
            let package = try makeTestStore(in: dir, schema: schema)
            let url = package.url
            try package.close()
            let db = try rawStore(url)
            let tables = try db.rows("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
                .compactMap { $0[0].string }
            #expect(
                tables == [
                    "Card", "Card.tags", "Deck", "Tag", "deck_blob", "deck_cells:Card", "deck_cells:Deck",
                    "deck_cells:Tag", "deck_clock", "deck_inserts", "deck_links:Card.tags", "deck_meta",
                    "deck_migration",
                    "deck_rows:Card", "deck_rows:Deck", "deck_rows:Tag", "deck_writer", "sqlite_sequence",
                ])
            let cardColumns = try db.rows("SELECT name FROM pragma_table_info('Card') ORDER BY cid")
                .compactMap { $0[0].string }
            #expect(cardColumns == ["_pk", "_gid", "_entity", "front", "back", "image", "deck", "hint"])
            #expect(
                try db.scalar("SELECT \"notnull\" FROM pragma_table_info('Card') WHERE name = 'hint'")?.int64
                    == 0)
            #expect(
                try db.scalar("SELECT \"notnull\" FROM pragma_table_info('Card') WHERE name = 'front'")?.int64
                    == 1)
            let triggers = try db.rows("SELECT name FROM sqlite_schema WHERE type = 'trigger' ORDER BY name")
                .compactMap { $0[0].string }
            #expect(
                triggers == [
                    "deck_gid:Card:update", "deck_gid:Deck:update", "deck_gid:Tag:update",
                    "deck_refs:Card.image:delete", "deck_refs:Card.image:insert",
                    "deck_refs:Card.image:update", "deck_version:Card.tags:delete",
                    "deck_version:Card.tags:insert",
                    "deck_version:Card:delete", "deck_version:Card:update", "deck_version:Deck:delete",
                    "deck_version:Deck:update", "deck_version:Tag:delete", "deck_version:Tag:update",
                ])
            let meta = try db.scalar("SELECT value FROM deck_meta WHERE key = 'schema'")?.string ?? ""
            #expect(try JSONDecoder().decode(StoreSchema.self, from: Data(meta.utf8)) == schema)
        }
    }

    // MARK: Value parsing

    @Test func parsingValuesAsTheCommandLineWritesThem() throws {
        #expect(try Value(parsing: "42", as: .integer) == .integer(42))
        #expect(try Value(parsing: "-1.5", as: .double) == .double(-1.5))
        #expect(try Value(parsing: "yes", as: .bool) == .bool(true))
        #expect(try Value(parsing: "0", as: .bool) == .bool(false))
        #expect(
            try Value(parsing: "1970-01-02T00:00:00Z", as: .date)
                == .date(Date(timeIntervalSince1970: 86_400)))
        #expect(
            try Value(parsing: "2026-11-30", as: .date) == .date(Date(timeIntervalSince1970: 1_795_996_800)))
        #expect(try Value(parsing: "AQID", as: .data) == .data(Data([1, 2, 3])))
        #expect(try Value(parsing: "12.50", as: .decimal) == .decimal(Decimal(string: "12.5")!))
        #expect(try Value(parsing: "[1, 2]", as: .json) == .json("[1, 2]"))
        for (text, type) in [
            ("x", AttributeType.integer), ("", .double), ("maybe", .bool), ("soon", .date),
            ("%%%", .data), ("not-a-uuid", .uuid), ("no scheme", .url), ("1,5", .decimal), ("{", .json),
        ] {
            #expect(throws: ValueError.self, "\(text) as \(type)") { try Value(parsing: text, as: type) }
        }
    }
}
