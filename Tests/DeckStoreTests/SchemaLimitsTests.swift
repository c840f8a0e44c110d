import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// The limits of spec section 5.9: schemas at each limit work end to end (create, insert, fetch,
/// verify, reopen), one step beyond is refused with an error naming the limit and the entity.
@Suite("StoreSchema limits", .timed)
struct SchemaLimitsTests {
    /// A chain `E1` > `E2` > … > `En`, each level declaring one attribute.
    static func chain(_ depth: Int) -> StoreSchema {
        StoreSchema(
            entities: (1...depth).map { level in
                Entity(
                    "E\(level)", superentity: level == 1 ? nil : "E\(level - 1)",
                    attributes: [Attribute("a\(level)", .integer, isOptional: true)])
            })
    }

    static func expectInvalid(
        _ schema: StoreSchema, _ fragments: String..., sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do throws(DeckError) {
            _ = try SchemaMapping(schema)
            Issue.record("accepted", sourceLocation: sourceLocation)
        } catch {
            guard case .invalidSchema(let message) = error else {
                Issue.record("expected invalidSchema, got \(error)", sourceLocation: sourceLocation)
                return
            }
            for fragment in fragments {
                #expect(message.contains(fragment), "message: \(message)", sourceLocation: sourceLocation)
            }
            #expect(error.kind == .invalidData, sourceLocation: sourceLocation)
        }
    }

    /// Creates, fills, verifies and reopens a package of `schema`, inserting one record of `entity`.
    static func roundTrip(_ schema: StoreSchema, inserting entity: String, _ values: [String: Value] = [:])
        throws
    {
        try withTestDirectory { dir throws in
            let store = try makeTestStore(in: dir, schema: schema)
            let id = try store.write { tx in try tx.insert(entity, values) }.value
            let url = store.url
            try store.close()
            let reopened = try PackageStore.open(at: url, mode: .readOnly)
            let root = try #require(schema.entities.first?.name)
            try reopened.read { reader throws in
                #expect(try reader.fetch(RecordQuery(root)).map(\.id) == [id])
                #expect(try reader.record(entity, id: id)?.entity == entity)
            }
            try reopened.close()
            let report = try PackageVerifier.verify(at: url)
            #expect(report.findings.isEmpty, "\(report.findings)")
        }
    }

    @Test func inheritanceDepth() throws {
        let limit = StoreSchema.Limits.inheritanceDepth
        try Self.roundTrip(
            Self.chain(limit), inserting: "E\(limit)", ["a1": .integer(1), "a\(limit)": .integer(2)])
        Self.expectInvalid(
            Self.chain(limit + 1), "'E\(limit + 1)' is \(limit + 1) levels deep", "at most \(limit)")
        Self.expectInvalid(Self.chain(StoreSchema.Limits.entities), "'E1000' is 1000 levels deep")
        // The 3,000-level chain a tester tried: refused at once, not after minutes.
        Self.expectInvalid(Self.chain(3_000), "3000 entities")
    }

    @Test func entities() throws {
        let limit = StoreSchema.Limits.entities
        let many = StoreSchema(
            entities: (1...limit).map { Entity("E\($0)", attributes: [Attribute("a", .string)]) })
        try Self.roundTrip(
            StoreSchema(entities: [many.entities[limit - 1]] + many.entities.dropLast()),
            inserting: "E\(limit)",
            ["a": .string("x")])
        var tooMany = many
        tooMany.entities.append(Entity("Extra"))
        Self.expectInvalid(tooMany, "\(limit + 1) entities", "at most \(limit)")
    }

    @Test func propertiesPerHierarchy() throws {
        let limit = StoreSchema.Limits.propertiesPerHierarchy
        // Spread over a root and two siblings: 400 + 300 + 300 attributes, 1,002 columns in all.
        func hierarchy(extra: Int) -> StoreSchema {
            StoreSchema(entities: [
                Entity("Root", attributes: (0..<400).map { Attribute("r\($0)", .integer, isOptional: true) }),
                Entity(
                    "Left", superentity: "Root",
                    attributes: (0..<300).map { Attribute("l\($0)", .string, isOptional: true) }),
                Entity(
                    "Right", superentity: "Root",
                    attributes: (0..<(300 + extra)).map { Attribute("x\($0)", .data, isOptional: true) }),
            ])
        }
        try Self.roundTrip(
            hierarchy(extra: 0), inserting: "Right", ["x299": .data(Data([1])), "r0": .integer(3)])
        Self.expectInvalid(
            hierarchy(extra: 1), "hierarchy 'Root'", "declare \(limit + 1) properties", "at most \(limit)")
        // The tester's 2,100 attributes in one entity.
        Self.expectInvalid(
            StoreSchema(entities: [
                Entity("Wide", attributes: (0..<2_100).map { Attribute("a\($0)", .integer) })
            ]),
            "hierarchy 'Wide'", "2100 properties")
    }

    @Test func expandedProperties() throws {
        let limit = StoreSchema.Limits.expandedProperties
        // 100 attributes inherited by 999 subentities: 1,000 × 100 = 100,000.
        func fanOut(_ subentities: Int) -> StoreSchema {
            StoreSchema(
                entities: [
                    Entity(
                        "Root", attributes: (0..<100).map { Attribute("a\($0)", .integer, isOptional: true) })
                ]
                    + (1...subentities).map { Entity("S\($0)", superentity: "Root") })
        }
        try Self.roundTrip(fanOut(999), inserting: "S999", ["a99": .integer(1)])
        var beyond = fanOut(999)
        beyond.entities[1].attributes = [Attribute("one", .integer, isOptional: true)]
        Self.expectInvalid(beyond, "\(limit + 1) properties and unique constraints", "at most \(limit)")
    }

    @Test func indexes() throws {
        let names = (0..<StoreSchema.Limits.propertiesPerIndex).map { "a\($0)" }
        let attributes = names.map { Attribute($0, .integer) } + [Attribute("z", .integer)]
        let wide = StoreSchema(entities: [
            Entity(
                "T", attributes: attributes, uniqueConstraints: [names],
                indexes: (1..<StoreSchema.Limits.indexesPerEntity).map { [names[$0 % names.count], "z"] })
        ])
        var values: [String: Value] = ["z": .integer(0)]
        for name in names { values[name] = .integer(1) }
        try Self.roundTrip(wide, inserting: "T", values)
        Self.expectInvalid(
            StoreSchema(entities: [Entity("T", attributes: attributes, indexes: [names + ["z"]])]),
            "'T'", "names \(names.count + 1) properties", "at most \(names.count)")
        Self.expectInvalid(
            StoreSchema(entities: [
                Entity(
                    "T", attributes: attributes,
                    indexes: (0...StoreSchema.Limits.indexesPerEntity).map { _ in ["z"] })
            ]),
            "entity 'T' declares \(StoreSchema.Limits.indexesPerEntity + 1) unique constraints and indexes")
    }

    @Test func storeObjects() throws {
        // Seven objects per entity: its table, its global ids' unique index and trigger, a unique
        // index, a relationship's index, a join table and its index.
        func schema(_ count: Int) -> StoreSchema {
            StoreSchema(
                entities: (1...count).map { index in
                    Entity(
                        "E\(index)", attributes: [Attribute("key", .string, options: [.unique])],
                        relationships: [
                            Relationship("link", to: "E\(index % count + 1)"),
                            Relationship("links", to: "E\(index % count + 1)", toMany: true),
                        ])
                })
        }
        let limit = StoreSchema.Limits.storeObjects
        #expect(StoreDDL.statements(for: try SchemaMapping(schema(limit / 7))).count == limit / 7 * 7)
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            try Self.roundTrip(schema(limit / 7), inserting: "E1", ["key": .string("k")])
        }
        print("schema limits: \(limit) store objects: create, insert, reopen, verify in \(elapsed)")
        Self.expectInvalid(
            schema(limit / 7 + 1), "maps to \((limit / 7 + 1) * 7) tables, indexes and triggers",
            "at most \(limit)")
    }

    /// Building the mapping is close to linear: every schema at a limit maps in well under a
    /// second. (No timing assertion: the figures are printed for the record.)
    @Test func mappingsAtTheLimitsAreQuick() throws {
        /// A tree: S1…S9 under the root, then ten children each, down to depth 4.
        func index(of sub: Int) -> String { sub <= 9 ? "Root" : "S\(sub / 10)" }
        let depth = StoreSchema.Limits.inheritanceDepth
        let cases: [(String, StoreSchema)] = [
            ("depth \(depth)", Self.chain(depth)),
            (
                "1,000 entities with relationships",
                StoreSchema(
                    entities: (1...StoreSchema.Limits.entities).map { index in
                        Entity(
                            "E\(index)", attributes: [Attribute("a", .string)],
                            relationships: [
                                Relationship(
                                    "next", to: "E\(index % StoreSchema.Limits.entities + 1)",
                                    inverse: "previous"),
                                Relationship(
                                    "previous", to: "E\((index + 998) % StoreSchema.Limits.entities + 1)",
                                    inverse: "next"),
                            ])
                    })
            ),
            (
                "100,000 inherited properties",
                StoreSchema(
                    entities: [Entity("Root", attributes: (0..<100).map { Attribute("a\($0)", .integer) })]
                        + (1...999).map { Entity("S\($0)", superentity: index(of: $0)) })
            ),
        ]
        for (label, schema) in cases {
            let clock = ContinuousClock()
            var statements = 0
            let elapsed = try clock.measure {
                let mapping = try SchemaMapping(schema)
                statements = StoreDDL.statements(for: mapping).count
            }
            print("schema limits: \(label): mapping and DDL (\(statements) statements) in \(elapsed)")
        }
    }
}
