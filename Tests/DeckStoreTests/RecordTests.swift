import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// The flash-cards schema plus `Sample`, an entity with one optional attribute of every type.
func recordsSchema(cardsDeleteRule: DeleteRule = .cascade) -> StoreSchema {
    var schema = flashCardsSchema(cardsDeleteRule: cardsDeleteRule)
    schema.entities.append(
        Entity(
            "Sample",
            attributes: [
                Attribute("s", .string, isOptional: true),
                Attribute("i", .integer, isOptional: true),
                Attribute("d", .double, isOptional: true),
                Attribute("b", .bool, isOptional: true),
                Attribute("t", .date, isOptional: true),
                Attribute("raw", .data, isOptional: true),
                Attribute("u", .uuid, isOptional: true),
                Attribute("link", .url, isOptional: true),
                Attribute("price", .decimal, isOptional: true),
                Attribute("meta", .json, isOptional: true),
            ]))
    return schema
}

/// Titles (or another string attribute) of records, in order.
private func strings(_ records: [Record], _ key: String) -> [String?] {
    records.map { if case .string(let s)? = $0[key] { s } else { nil } }
}

@Suite("Records", .timed)
struct RecordTests {
    // MARK: Round trips

    static let sampleValues: [String: Value] = [
        "s": .string("héllo — 日本 🃏 'quoted' \"double\""),
        "i": .integer(Int64.min + 1),
        "d": .double(-123.456e-7),
        "b": .bool(true),
        "t": .date(Date(timeIntervalSince1970: 1_700_000_000.5)),
        "raw": .data(Data([0, 1, 2, 0xFF])),
        "u": .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!),
        "link": .url(URL(string: "https://example.com/a%20b?q=1&r=ü#frag")!),
        "price": .decimal(Decimal(string: "12345.6789")!),
        "meta": .json(#"{"a":[1,2,{"b":null}],"c":"d"}"#),
    ]

    @Test func everyAttributeTypeRoundTrips() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let id = try tx.insert("Sample", Self.sampleValues)
            let record = try #require(try tx.record("Sample", id: id))
            #expect(record.entity == "Sample")
            #expect(record.id == id)
            for (name, value) in Self.sampleValues.sorted(by: { $0.key < $1.key }) {
                #expect(record[name] == value, "attribute \(name)")
            }
            // And after save, close and reopen.
            try tx.commit()
            let url = package.url
            tx.rollback()
            try package.close()
            let reopened = try PackageStore.open(at: url, mode: .readOnly)
            #expect(try reopened.read { try $0.record("Sample", id: id) }?.values == record.values)
        }
    }

    @Test func edgeValuesRoundTrip() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let values: [[String: Value]] = [
                [
                    "s": .string(""), "i": .integer(.max), "d": .double(0), "b": .bool(false),
                    "raw": .data(Data()),
                ],
                [
                    "i": .integer(0), "d": .double(.greatestFiniteMagnitude),
                    "t": .date(Date(timeIntervalSince1970: -86_400)),
                ],
                [
                    "price": .decimal(Decimal(string: "-0.000001")!), "meta": .json("[null]"),
                    "s": .string(String(repeating: "x", count: 100_000)),
                ],
            ]
            for expected in values {
                let id = try tx.insert("Sample", expected)
                let record = try #require(try tx.record("Sample", id: id))
                for (name, value) in expected { #expect(record[name] == value, "attribute \(name)") }
                // Attributes not given read as null.
                for name in ["s", "i", "d", "b", "t", "raw", "u", "link", "price", "meta"]
                where expected[name] == nil {
                    #expect(record[name] == .null, "attribute \(name)")
                }
            }
        }
    }

    @Test func valuesAreCoercedWhereTheTypeAllows() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let id = try tx.insert(
                "Sample",
                [
                    "d": .integer(3), "i": .string("42"), "b": .string("true"), "price": .integer(7),
                    "t": .string("1970-01-02T00:00:00Z"),
                    "u": .string("e621e1f8-c36c-495a-93fc-0c247a3e6e5f"),
                ])
            let record = try #require(try tx.record("Sample", id: id))
            #expect(record["d"] == .double(3))
            #expect(record["i"] == .integer(42))
            #expect(record["b"] == .bool(true))
            #expect(record["price"] == .decimal(7))
            #expect(record["t"] == .date(Date(timeIntervalSince1970: 86_400)))
            #expect(record["u"] == .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!))
        }
    }

    @Test func insertFetchUpdateDeleteCount() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            var tx = try package.beginTransaction()
            defer { tx.rollback() }
            #expect(try tx.count(RecordQuery("Deck")) == 0)
            let a = try tx.insert("Deck", ["title": .string("A")])
            let b = try tx.insert("Deck", ["title": .string("B"), "position": .integer(5)])
            #expect(a != b)
            #expect(tx.hasChanges)
            #expect(try tx.count(RecordQuery("Deck")) == 2)
            #expect(try tx.fetchIDs(RecordQuery("Deck")) == [a, b])

            try tx.update("Deck", id: a, ["position": .integer(9)])
            let updated = try #require(try tx.record("Deck", id: a))
            #expect(updated["title"] == .string("A"), "values not named keep theirs")
            #expect(updated["position"] == .integer(9))

            #expect(try tx.delete("Deck", id: b) == 1)
            #expect(try tx.record("Deck", id: b) == nil)
            #expect(try tx.count(RecordQuery("Deck")) == 1)
            try tx.commit()
            tx = try package.beginTransaction()
            #expect(!tx.hasChanges)

            var visited: [Int64] = []
            try tx.forEach(RecordQuery("Deck")) { visited.append($0.id) }
            #expect(visited == [a])
        }
    }

    @Test func bulkUpdateAndDeleteByQuery() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            for i in 0..<10 {
                try tx.insert("Deck", ["title": .string("d\(i)"), "position": .integer(Int64(i))])
            }
            let low = RecordQuery("Deck", where: .compare(.property("position"), .less, .value(.integer(4))))
            #expect(try tx.update(low, ["position": .integer(100)]) == 4)
            #expect(
                try tx.count(
                    RecordQuery("Deck", where: .compare(.property("position"), .equal, .value(.integer(100))))
                )
                    == 4)
            #expect(
                try tx.delete(
                    RecordQuery("Deck", where: .compare(.property("position"), .equal, .value(.integer(100))))
                )
                    == 4)
            #expect(try tx.count(RecordQuery("Deck")) == 6)
            // A window applies to bulk deletes.
            #expect(
                try tx.delete(
                    RecordQuery("Deck", sort: [SortKey("position", ascending: false)], limit: 2))
                    == 2)
            #expect(
                strings(try tx.fetch(RecordQuery("Deck", sort: [SortKey("position")])), "title") == [
                    "d4", "d5", "d6", "d7",
                ])
        }
    }

    @Test func updatingOrDeletingAMissingRecordIsRecordNotFound() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let tag = try tx.insert("Tag", ["name": .string("t")])
            for body in [
                { try tx.update("Deck", id: 999, ["title": .string("x")]) },
                { _ = try tx.delete("Deck", id: 999) },
                // An id of another entity is not a Deck.
                { try tx.update("Deck", id: tag, ["title": .string("x")]) },
            ] as [() throws -> Void] {
                let error = expectDeckError(body)
                if case .recordNotFound(let entity, _) = error {
                    #expect(entity == "Deck")
                } else {
                    Issue.record("expected recordNotFound, got \(String(describing: error))")
                }
            }
            #expect(try tx.record("Deck", id: 999) == nil)
        }
    }

    // MARK: Defaults, optionality, names, types

    @Test func defaultsFillMissingAttributes() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let deck = try tx.insert("Deck", ["title": .string("A")])
            let card = try tx.insert("Card", ["front": .string("hola")])
            #expect(try tx.record("Deck", id: deck)?["position"] == .integer(0))
            #expect(try tx.record("Card", id: card)?["back"] == .string(""))
            #expect(try tx.record("Card", id: card)?["image"] == .null)
            #expect(try tx.record("Card", id: card)?["deck"] == .null)
            // An explicit value beats the default.
            let other = try tx.insert("Card", ["front": .string("x"), "back": .string("y")])
            #expect(try tx.record("Card", id: other)?["back"] == .string("y"))
        }
    }

    @Test func requiredAttributesNeedAValue() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let kept = try tx.insert("Deck", ["title": .string("kept")])
            var error = expectDeckError { try tx.insert("Card", ["back": .string("no front")]) }
            guard case .invalidValue(let entity, let property, let reason) = error else {
                Issue.record("expected invalidValue, got \(String(describing: error))")
                return
            }
            #expect(entity == "Card")
            #expect(property == "front")
            #expect(reason.contains("required"))
            error = expectDeckError { try tx.insert("Card", ["front": .null]) }
            if case .invalidValue(_, "front", _) = error {
            } else {
                Issue.record("got \(String(describing: error))")
            }

            let card = try tx.insert("Card", ["front": .string("f")])
            error = expectDeckError { try tx.update("Card", id: card, ["front": .null]) }
            if case .invalidValue(_, "front", _) = error {
            } else {
                Issue.record("got \(String(describing: error))")
            }
            #expect(try tx.record("Card", id: card)?["front"] == .string("f"))
            // Optional attributes take null.
            try tx.update("Card", id: card, ["image": .null])
            // Earlier unsaved work survived the failures.
            #expect(try tx.record("Deck", id: kept) != nil)
            #expect(try tx.count(RecordQuery("Card")) == 1)
        }
    }

    /// An unknown entity is reported with the entities that exist, so a caller (the `deck` tool)
    /// can suggest the closest one.
    @Test func unknownEntityListsTheKnownEntities() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let error = expectDeckError { try tx.insert("Crad", ["front": .string("x")]) }
            guard case .unknownEntity(let name, let known) = error else {
                Issue.record("expected unknownEntity, got \(String(describing: error))")
                return
            }
            #expect(name == "Crad")
            #expect(Set(known) == Set(package.schema.entities.map(\.name)))
            #expect(error?.description == "unknown entity 'Crad'")
            for body in [
                { _ = try tx.fetch(RecordQuery("Dekc")) },
                { _ = try tx.count(RecordQuery("deck")) },
                { _ = try tx.delete("Tga", id: 1) },
            ] as [() throws -> Void] {
                let error = expectDeckError(body)
                if case .unknownEntity(_, let known) = error {
                    #expect(known.contains("Card"))
                } else {
                    Issue.record("expected unknownEntity, got \(String(describing: error))")
                }
            }
        }
    }

    /// An unknown attribute is reported with the entity's properties, wherever it is named.
    @Test func unknownPropertyListsTheEntitysProperties() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let error = expectDeckError { try tx.insert("Card", ["fornt": .string("x")]) }
            guard case .unknownProperty(let entity, let name, let known) = error else {
                Issue.record("expected unknownProperty, got \(String(describing: error))")
                return
            }
            #expect(entity == "Card")
            #expect(name == "fornt")
            #expect(known.contains("front") && known.contains("tags"))
            #expect(try tx.count(RecordQuery("Card")) == 0, "nothing was inserted")
            let filterError = expectDeckError {
                _ = try tx.fetch(
                    RecordQuery("Card", where: .compare(.property("bakc"), .equal, .value(.string("x")))))
            }
            guard case .unknownProperty("Card", "bakc", let filterKnown) = filterError else {
                Issue.record("expected unknownProperty, got \(String(describing: filterError))")
                return
            }
            #expect(filterKnown.contains("back"))
            let sortError = expectDeckError {
                _ = try tx.fetch(RecordQuery("Card", sort: [SortKey("xyzzy")]))
            }
            guard case .unknownProperty("Card", "xyzzy", _) = sortError else {
                Issue.record("expected unknownProperty, got \(String(describing: sortError))")
                return
            }
            let relatedError = expectDeckError { _ = try tx.related("Deck", id: 1, "crads") }
            guard case .unknownProperty("Deck", "crads", let relatedKnown) = relatedError else {
                Issue.record("expected unknownProperty, got \(String(describing: relatedError))")
                return
            }
            #expect(relatedKnown.contains("cards"))
        }
    }

    @Test(arguments: [
        ("i", Value.string("abc")), ("i", .bool(true)), ("i", .double(1.5)), ("d", .string("one")),
        ("b", .integer(2)),
        ("b", .string("maybe")), ("t", .string("yesterday")), ("raw", .string("x")),
        ("u", .string("not-a-uuid")),
        ("link", .string("no scheme")), ("price", .string("1,5")), ("meta", .string("{broken")),
        ("s", .integer(1)),
        ("s", .data(Data([1]))), ("raw", .reference(1)),
    ])
    func typeMismatchesAreInvalidValues(attribute: String, value: Value) throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let error = expectDeckError { try tx.insert("Sample", [attribute: value]) }
            guard case .invalidValue(let entity, let property, let reason) = error else {
                Issue.record("expected invalidValue, got \(String(describing: error))")
                return
            }
            #expect(entity == "Sample")
            #expect(property == attribute)
            #expect(!reason.isEmpty)
            #expect(try tx.count(RecordQuery("Sample")) == 0)
        }
    }

    @Test func relationshipValuesOfTheWrongShapeAreInvalid() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let deck = try tx.insert("Deck", ["title": .string("A")])
            let bodies: [() throws -> Void] = [
                { try tx.insert("Card", ["front": .string("x"), "deck": .references([deck])]) },
                { try tx.insert("Card", ["front": .string("x"), "deck": .string("A")]) },
                { try tx.insert("Card", ["front": .string("x"), "tags": .reference(1)]) },
            ]
            for body in bodies {
                let error = expectDeckError(body)
                if case .invalidValue = error {
                } else {
                    Issue.record("expected invalidValue, got \(String(describing: error))")
                }
            }
            let missing = expectDeckError {
                try tx.insert("Card", ["front": .string("x"), "deck": .reference(12345)])
            }
            if case .recordNotFound("Deck", 12345) = missing {
            } else {
                Issue.record("expected recordNotFound, got \(String(describing: missing))")
            }
            // A record of the wrong entity is not a Deck either.
            let tag = try tx.insert("Tag", ["name": .string("t")])
            let wrong = expectDeckError {
                try tx.insert("Card", ["front": .string("x"), "deck": .reference(tag + 1000)])
            }
            if case .recordNotFound = wrong {
            } else {
                Issue.record("expected recordNotFound, got \(String(describing: wrong))")
            }
            #expect(try tx.count(RecordQuery("Card")) == 0)
        }
    }

    // MARK: Filters

    /// Samples: (s, i, d): ("Apple", 1, 1.5), ("banana", 2, nil), ("Cherry pie", 3, 3.5), (nil, 4, 4.0), ("apple tart", 5, -1)
    private func samples(_ tx: StoreTransaction) throws -> [Int64] {
        let rows: [(Value, Int64, Value)] = [
            (.string("Apple"), 1, .double(1.5)), (.string("banana"), 2, .null),
            (.string("Cherry pie"), 3, .double(3.5)),
            (.null, 4, .double(4)), (.string("apple tart"), 5, .double(-1)),
        ]
        return try rows.map { s, i, d in
            try tx.insert("Sample", ["s": s, "i": .integer(i), "d": d, "b": .bool(i % 2 == 0)])
        }
    }

    private func matching(_ reader: StoreReader, _ filter: QueryExpression) throws -> [Int64] {
        try reader.fetch(RecordQuery("Sample", where: filter, sort: [SortKey("i")])).compactMap {
            if case .integer(let i)? = $0["i"] { i } else { nil }
        }
    }

    @Test func comparisonFilters() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            _ = try samples(tx)
            #expect(try matching(tx, .compare(.property("i"), .equal, .value(.integer(3)))) == [3])
            #expect(
                try matching(tx, .compare(.property("i"), .notEqual, .value(.integer(3)))) == [
                    1, 2, 4, 5,
                ])
            #expect(try matching(tx, .compare(.property("i"), .less, .value(.integer(3)))) == [1, 2])
            #expect(
                try matching(tx, .compare(.property("i"), .lessOrEqual, .value(.integer(3)))) == [
                    1, 2, 3,
                ])
            #expect(try matching(tx, .compare(.property("i"), .greater, .value(.integer(3)))) == [4, 5])
            #expect(
                try matching(tx, .compare(.property("i"), .greaterOrEqual, .value(.integer(3)))) == [
                    3, 4, 5,
                ])
            #expect(
                try matching(tx, .compare(.property("d"), .greater, .value(.double(1.5)))) == [3, 4])
            #expect(try matching(tx, .compare(.property("d"), .less, .value(.integer(0)))) == [5])
            #expect(try matching(tx, .compare(.property("s"), .equal, .value(.string("banana")))) == [2])
            #expect(
                try matching(tx, .compare(.property("s"), .notEqual, .value(.string("banana")))) == [
                    1, 3, 4, 5,
                ],
                "!= includes nulls")
            #expect(
                try matching(tx, .compare(.property("s"), .greater, .value(.string("a")))) == [2, 5],
                "text compares by bytes")
            #expect(try matching(tx, .compare(.property("b"), .equal, .value(.bool(true)))) == [2, 4])
            #expect(try matching(tx, .compare(.property("s"), .equal, .value(.null))) == [4])
            #expect(
                try matching(tx, .compare(.property("s"), .notEqual, .value(.null))) == [1, 2, 3, 5])
            #expect(try matching(tx, true) == [1, 2, 3, 4, 5])
            let error = expectDeckError {
                _ = try matching(tx, .compare(.property("s"), .less, .value(.null)))
            }
            if case .invalidQuery = error {
            } else {
                Issue.record("expected invalidQuery, got \(String(describing: error))")
            }
            let mismatch = expectDeckError {
                _ = try matching(tx, .compare(.property("i"), .equal, .value(.string("three"))))
            }
            if case .invalidValue = mismatch {
            } else {
                Issue.record("expected invalidValue, got \(String(describing: mismatch))")
            }
        }
    }

    @Test func nullFilters() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            _ = try samples(tx)
            #expect(try matching(tx, .isNull(.property("d"))) == [2])
            #expect(try matching(tx, .isNull(.property("s"))) == [4])
            #expect(try matching(tx, .not(.isNull(.property("d")))) == [1, 3, 4, 5])
            #expect(try matching(tx, .isNull(.property("u"))) == [1, 2, 3, 4, 5])
        }
    }

    @Test func textFilters() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            _ = try samples(tx)
            #expect(
                try matching(tx, .text(.property("s"), .contains, .value(.string("pp")), .exact)) == [
                    1, 5,
                ])
            #expect(
                try matching(tx, .text(.property("s"), .contains, .value(.string("Apple")), .exact)) == [
                    1
                ])
            #expect(
                try matching(
                    tx, .text(.property("s"), .contains, .value(.string("APPLE")), .asciiCaseInsensitive)
                ) == [1, 5])
            #expect(
                try matching(tx, .text(.property("s"), .contains, .value(.string("%")), .exact)) == [],
                "no LIKE wildcards")
            #expect(
                try matching(tx, .text(.property("s"), .beginsWith, .value(.string("apple")), .exact))
                    == [5])
            #expect(
                try matching(
                    tx,
                    .text(.property("s"), .beginsWith, .value(.string("apple")), .asciiCaseInsensitive)) == [
                        1, 5,
                    ])
            #expect(
                try matching(
                    tx,
                    .text(.property("s"), .beginsWith, .value(.string("_pple")), .asciiCaseInsensitive)) == []
            )
            #expect(
                try matching(tx, .text(.property("s"), .endsWith, .value(.string("pie")), .exact)) == [3]
            )
            #expect(
                try matching(tx, .text(.property("s"), .endsWith, .value(.string("PIE")), .exact)) == [])
            #expect(
                try matching(
                    tx, .text(.property("s"), .endsWith, .value(.string("PIE")), .asciiCaseInsensitive))
                    == [3])
            #expect(
                try matching(tx, .text(.property("s"), .endsWith, .value(.string("e")), .exact)) == [
                    1, 3,
                ])
            #expect(
                try matching(
                    tx, .text(.property("s"), .endsWith, .value(.string("an apple tart")), .exact)) == []
            )
            let error = expectDeckError {
                _ = try matching(tx, .text(.property("i"), .contains, .value(.string("1")), .exact))
            }
            if case .invalidQuery = error {
            } else {
                Issue.record("expected invalidQuery, got \(String(describing: error))")
            }
        }
    }

    @Test func textFiltersOnUnicode() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            try tx.insert("Sample", ["s": .string("日本語のテキスト"), "i": .integer(1)])
            try tx.insert("Sample", ["s": .string("Ünïcödé 🃏 cards"), "i": .integer(2)])
            #expect(
                try matching(tx, .text(.property("s"), .beginsWith, .value(.string("日本")), .exact)) == [
                    1
                ])
            #expect(
                try matching(
                    tx, .text(.property("s"), .endsWith, .value(.string("テキスト")), .asciiCaseInsensitive))
                    == [1])
            #expect(
                try matching(tx, .text(.property("s"), .contains, .value(.string("🃏")), .exact)) == [2])
            #expect(
                try matching(
                    tx,
                    .text(.property("s"), .endsWith, .value(.string("🃏 CARDS")), .asciiCaseInsensitive)) == [
                        2
                    ])
        }
    }

    @Test func oneOfAndBooleanCombinations() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            _ = try samples(tx)
            #expect(
                try matching(
                    tx,
                    .oneOf(
                        .property("i"), [.integer(1), .integer(3), .integer(99)].map(QueryExpression.value)))
                    == [1, 3])
            #expect(
                try matching(
                    tx,
                    .oneOf(.property("s"), [.string("banana"), .string("Apple")].map(QueryExpression.value)))
                    == [1, 2])
            #expect(try matching(tx, .oneOf(.property("i"), [].map(QueryExpression.value))) == [])
            #expect(
                try matching(
                    tx,
                    .and([
                        .compare(.property("i"), .greater, .value(.integer(1))),
                        .compare(.property("d"), .greater, .value(.integer(0))),
                    ])) == [
                        3, 4,
                    ])
            #expect(
                try matching(
                    tx,
                    .or([
                        .compare(.property("i"), .equal, .value(.integer(1))),
                        .compare(.property("s"), .equal, .value(.string("banana"))),
                    ])) == [
                        1, 2,
                    ])
            #expect(
                try matching(tx, .not(.compare(.property("i"), .greater, .value(.integer(2))))) == [
                    1, 2,
                ])
            #expect(try matching(tx, .and([])) == [1, 2, 3, 4, 5])
            #expect(try matching(tx, .or([])) == [])
            #expect(
                try matching(
                    tx,
                    .or([
                        .and([
                            .compare(.property("i"), .greater, .value(.integer(3))),
                            .not(.isNull(.property("s"))),
                        ]),
                        .not(
                            .or([
                                .compare(.property("i"), .greater, .value(.integer(1))),
                                .isNull(.property("d")),
                            ])),
                    ])) == [1, 5])
            #expect(
                try matching(tx, .not(.not(.compare(.property("i"), .equal, .value(.integer(2)))))) == [
                    2
                ])
        }
    }

    @Test func notIsTheComplementOfItsOperandEvenWithNulls() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            _ = try samples(tx)
            // Record 4 has s = null: it is not "banana", so .not(s == banana) holds for it,
            // as .compare(.property(s), .notEqual, .value(banana)) already does.
            #expect(
                try matching(tx, .not(.compare(.property("s"), .equal, .value(.string("banana"))))) == [
                    1, 3, 4, 5,
                ])
            #expect(
                try matching(tx, .not(.compare(.property("d"), .greater, .value(.integer(2))))) == [
                    1, 2, 5,
                ])
            #expect(
                try matching(tx, .not(.text(.property("s"), .contains, .value(.string("a")), .exact)))
                    == [1, 3, 4])
        }
    }

    @Test func decimalsCompareAndSortAsNumbers() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            for (i, text) in ["10", "9.5", "100", "-1", "2"].enumerated() {
                try tx.insert(
                    "Sample", ["i": .integer(Int64(i)), "price": .decimal(Decimal(string: text)!)])
            }
            let sorted = try tx.fetch(RecordQuery("Sample", sort: [SortKey("price")])).map {
                $0["price"]
            }
            #expect(sorted == ["-1", "2", "9.5", "10", "100"].map { .decimal(Decimal(string: $0)!) })
            #expect(
                try tx.count(
                    RecordQuery("Sample", where: .compare(.property("price"), .greater, .value(.decimal(9)))))
                    == 3)
        }
    }

    @Test func datesAndUUIDsFilter() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let id = UUID()
            for i in 0..<5 {
                try tx.insert(
                    "Sample",
                    [
                        "i": .integer(Int64(i)), "t": .date(Date(timeIntervalSince1970: Double(i) * 1_000)),
                        "u": i == 3 ? .uuid(id) : .uuid(UUID()),
                    ])
            }
            #expect(
                try matching(
                    tx,
                    .compare(
                        .property("t"), .greaterOrEqual, .value(.date(Date(timeIntervalSince1970: 2_000)))))
                    == [
                        2, 3, 4,
                    ])
            #expect(try matching(tx, .compare(.property("u"), .equal, .value(.uuid(id)))) == [3])
            #expect(
                try matching(
                    tx, .compare(.property("u"), .equal, .value(.string(id.uuidString.uppercased()))))
                    == [3])
        }
    }

    @Test func dottedPathsFollowToOneRelationships() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let spanish = try tx.insert("Deck", ["title": .string("Spanish"), "position": .integer(2)])
            let french = try tx.insert("Deck", ["title": .string("French"), "position": .integer(1)])
            let c1 = try tx.insert("Card", ["front": .string("hola"), "deck": .reference(spanish)])
            let c2 = try tx.insert("Card", ["front": .string("bonjour"), "deck": .reference(french)])
            let c3 = try tx.insert("Card", ["front": .string("adiós"), "deck": .reference(spanish)])
            let c4 = try tx.insert("Card", ["front": .string("loose")])

            func cards(_ filter: QueryExpression, sort: [SortKey] = []) throws -> [Int64] {
                try tx.fetchIDs(RecordQuery("Card", where: filter, sort: sort))
            }
            #expect(
                try cards(.compare(.property("deck.title"), .equal, .value(.string("Spanish")))) == [c1, c3])
            #expect(
                try cards(
                    .text(.property("deck.title"), .beginsWith, .value(.string("fr")), .asciiCaseInsensitive))
                    == [c2])
            #expect(
                try cards(.compare(.property("deck.position"), .greater, .value(.integer(1)))) == [c1, c3])
            #expect(try cards(.isNull(.property("deck"))) == [c4])
            #expect(try cards(.isNull(.property("deck.title"))) == [c4])
            #expect(try cards(.compare(.property("deck"), .equal, .value(.reference(french)))) == [c2])
            #expect(
                try cards(.compare(.property("deck"), .notEqual, .value(.reference(french)))) == [c1, c3, c4])
            #expect(
                try cards(
                    .oneOf(
                        .property("deck"),
                        [.reference(french), .reference(spanish)].map(QueryExpression.value))) == [
                        c1, c2, c3,
                    ])
            // Sorting by a dotted path: French (c2) before Spanish (c1, c3); no deck (null) first.
            #expect(try cards(true, sort: [SortKey("deck.title"), SortKey("front")]) == [c4, c2, c3, c1])

            // The to-many side filters by membership.
            let decks = try tx.fetchIDs(
                RecordQuery("Deck", where: .compare(.property("cards"), .equal, .value(.reference(c3)))))
            #expect(decks == [spanish])
            #expect(try tx.fetchIDs(RecordQuery("Deck", where: .isNull(.property("cards")))) == [])

            for (key, kind) in [
                ("front.x", "attribute"), ("cards.front", "to-many"), ("deck.nope", "unknown"),
            ] {
                let error = expectDeckError {
                    _ = try tx.fetch(
                        RecordQuery(key.hasPrefix("cards") ? "Deck" : "Card", where: .isNull(.property(key))))
                }
                #expect(error != nil, "\(key) (\(kind)) must be refused")
            }
        }
    }

    @Test func toManyMembershipFilters() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let verbs = try tx.insert("Tag", ["name": .string("verbs")])
            let nouns = try tx.insert("Tag", ["name": .string("nouns")])
            let c1 = try tx.insert(
                "Card", ["front": .string("a"), "tags": .references([verbs, nouns])])
            let c2 = try tx.insert("Card", ["front": .string("b"), "tags": .references([nouns])])
            let c3 = try tx.insert("Card", ["front": .string("c")])
            #expect(
                try tx.fetchIDs(
                    RecordQuery("Card", where: .compare(.property("tags"), .equal, .value(.reference(verbs))))
                )
                    == [
                        c1
                    ])
            #expect(
                try tx.fetchIDs(
                    RecordQuery("Card", where: .compare(.property("tags"), .equal, .value(.reference(nouns))))
                )
                    == [
                        c1, c2,
                    ])
            #expect(
                try tx.fetchIDs(
                    RecordQuery(
                        "Card", where: .compare(.property("tags"), .notEqual, .value(.reference(verbs)))))
                    == [c2, c3])
            #expect(try tx.fetchIDs(RecordQuery("Card", where: .isNull(.property("tags")))) == [c3])
            #expect(
                try tx.fetchIDs(
                    RecordQuery("Tag", where: .compare(.property("cards"), .equal, .value(.reference(c2)))))
                    == [
                        nouns
                    ])
            let error = expectDeckError {
                _ = try tx.fetch(
                    RecordQuery("Card", where: .compare(.property("tags"), .greater, .value(.reference(1)))))
            }
            if case .invalidQuery = error {
            } else {
                Issue.record("expected invalidQuery, got \(String(describing: error))")
            }
            let sortError = expectDeckError {
                _ = try tx.fetch(RecordQuery("Card", sort: [SortKey("tags")]))
            }
            if case .invalidQuery = sortError {
            } else {
                Issue.record("expected invalidQuery, got \(String(describing: sortError))")
            }
        }
    }

    // MARK: Sorting and windows

    @Test func sortAscendingDescendingAndStable() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            // (front, back): ties on back are broken by insertion order (the record id).
            let rows = [("e", "2"), ("b", "1"), ("d", "2"), ("a", "1"), ("c", "2"), ("f", "1")]
            var ids: [String: Int64] = [:]
            for (front, back) in rows {
                ids[front] = try tx.insert("Card", ["front": .string(front), "back": .string(back)])
            }

            func fronts(_ sort: [SortKey], limit: Int? = nil, offset: Int = 0) throws -> [String?] {
                strings(
                    try tx.fetch(RecordQuery("Card", sort: sort, limit: limit, offset: offset)), "front")
            }
            #expect(try fronts([SortKey("front")]) == ["a", "b", "c", "d", "e", "f"])
            #expect(try fronts([SortKey("front", ascending: false)]) == ["f", "e", "d", "c", "b", "a"])
            #expect(try fronts([]) == ["e", "b", "d", "a", "c", "f"], "no sort: record id order")
            #expect(try fronts([SortKey("back")]) == ["b", "a", "f", "e", "d", "c"], "stable within ties")
            #expect(
                try fronts([SortKey("back", ascending: false)]) == ["e", "d", "c", "b", "a", "f"],
                "stable within ties")
            #expect(
                try fronts([SortKey("back"), SortKey("front", ascending: false)]) == [
                    "f", "b", "a", "e", "d", "c",
                ])
            // Windows.
            #expect(try fronts([SortKey("front")], limit: 2) == ["a", "b"])
            #expect(try fronts([SortKey("front")], limit: 2, offset: 3) == ["d", "e"])
            #expect(try fronts([SortKey("front")], offset: 4) == ["e", "f"])
            #expect(try fronts([SortKey("front")], limit: 10, offset: 5) == ["f"])
            #expect(try fronts([SortKey("front")], limit: 3, offset: 10) == [])
            #expect(try fronts([SortKey("front")], limit: 0) == [])
            #expect(try tx.count(RecordQuery("Card", limit: 4, offset: 1)) == 4)
            #expect(try tx.count(RecordQuery("Card", offset: 4)) == 2)
            #expect(
                try tx.fetchIDs(RecordQuery("Card", sort: [SortKey("front")], limit: 1)) == [
                    try #require(ids["a"])
                ])
        }
    }

    @Test func nullsSortFirstAscendingAndLastDescending() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema())
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            _ = try samples(tx)
            let ascending = try tx.fetch(RecordQuery("Sample", sort: [SortKey("d")])).map { $0["i"] }
            #expect(ascending == [.integer(2), .integer(5), .integer(1), .integer(3), .integer(4)])
            let descending = try tx.fetch(RecordQuery("Sample", sort: [SortKey("d", ascending: false)]))
                .map {
                    $0["i"]
                }
            #expect(descending == [.integer(4), .integer(3), .integer(1), .integer(5), .integer(2)])
        }
    }

    // MARK: Relationships

    @Test func toOneWithToManyInverse() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let d1 = try tx.insert("Deck", ["title": .string("one")])
            let d2 = try tx.insert("Deck", ["title": .string("two")])
            let c1 = try tx.insert("Card", ["front": .string("a"), "deck": .reference(d1)])
            let c2 = try tx.insert("Card", ["front": .string("b"), "deck": .integer(d1)])
            #expect(try tx.related("Deck", id: d1, "cards") == [c1, c2])
            #expect(try tx.related("Card", id: c1, "deck") == [d1])
            #expect(try tx.record("Card", id: c1)?["deck"] == .reference(d1))

            try tx.update("Card", id: c1, ["deck": .reference(d2)])
            #expect(try tx.related("Deck", id: d1, "cards") == [c2])
            #expect(try tx.related("Deck", id: d2, "cards") == [c1])

            try tx.update("Card", id: c2, ["deck": .null])
            #expect(try tx.related("Deck", id: d1, "cards") == [])
            #expect(try tx.related("Card", id: c2, "deck") == [])
            #expect(try tx.record("Card", id: c2)?["deck"] == .null)
        }
    }

    @Test func settingTheToManySideMovesTheToOneSide() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let c1 = try tx.insert("Card", ["front": .string("a")])
            let c2 = try tx.insert("Card", ["front": .string("b")])
            let c3 = try tx.insert("Card", ["front": .string("c")])
            let d1 = try tx.insert(
                "Deck", ["title": .string("one"), "cards": .references([c1, c2, c1])])
            #expect(try tx.related("Deck", id: d1, "cards") == [c1, c2])
            #expect(try tx.record("Card", id: c2)?["deck"] == .reference(d1))

            let d2 = try tx.insert("Deck", ["title": .string("two"), "cards": .references([c2, c3])])
            #expect(try tx.related("Deck", id: d1, "cards") == [c1], "c2 moved to d2")
            #expect(try tx.related("Deck", id: d2, "cards") == [c2, c3])

            try tx.update("Deck", id: d2, ["cards": .references([c3])])
            #expect(try tx.record("Card", id: c2)?["deck"] == .null)
            try tx.update("Deck", id: d2, ["cards": .references([])])
            #expect(try tx.related("Deck", id: d2, "cards") == [])
            #expect(try tx.record("Card", id: c3)?["deck"] == .null)
        }
    }

    @Test func manyToManyBothDirections() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let t1 = try tx.insert("Tag", ["name": .string("t1")])
            let t2 = try tx.insert("Tag", ["name": .string("t2")])
            let c1 = try tx.insert("Card", ["front": .string("a"), "tags": .references([t2, t1])])
            let c2 = try tx.insert("Card", ["front": .string("b")])
            #expect(try tx.related("Card", id: c1, "tags") == [t1, t2])
            #expect(try tx.related("Tag", id: t1, "cards") == [c1])

            try tx.update("Tag", id: t1, ["cards": .references([c1, c2])])
            #expect(try tx.related("Card", id: c2, "tags") == [t1])
            #expect(
                try tx.related("Card", id: c1, "tags") == [t1, t2],
                "setting t1's cards keeps c1's other tags")

            try tx.update("Card", id: c1, ["tags": .references([t2])])
            #expect(try tx.related("Tag", id: t1, "cards") == [c2])
            #expect(try tx.related("Tag", id: t2, "cards") == [c1])

            // Deleting either side removes its links only.
            try tx.delete("Card", id: c1)
            #expect(try tx.related("Tag", id: t2, "cards") == [])
            try tx.delete("Tag", id: t1)
            #expect(try tx.related("Card", id: c2, "tags") == [])
            #expect(try tx.count(RecordQuery("Card")) == 1)
            try tx.commit()
        }
    }

    static let oneToOneSchema = StoreSchema(entities: [
        Entity(
            "Person", attributes: [Attribute("name", .string)],
            relationships: [Relationship("passport", to: "Passport", inverse: "owner")]),
        Entity(
            "Passport", attributes: [Attribute("number", .string)],
            relationships: [Relationship("owner", to: "Person", inverse: "passport")]),
    ])

    @Test func oneToOneIsExclusive() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: Self.oneToOneSchema)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let p1 = try tx.insert("Person", ["name": .string("Ann")])
            let p2 = try tx.insert("Person", ["name": .string("Bob")])
            let a = try tx.insert("Passport", ["number": .string("A")])
            let b = try tx.insert("Passport", ["number": .string("B")])

            // From the side without the column.
            try tx.update("Person", id: p1, ["passport": .reference(a)])
            #expect(try tx.record("Passport", id: a)?["owner"] == .reference(p1))
            #expect(try tx.record("Person", id: p1)?["passport"] == .reference(a))
            try tx.update("Person", id: p2, ["passport": .reference(a)])
            #expect(try tx.related("Person", id: p1, "passport") == [], "Ann lost passport A to Bob")
            #expect(try tx.related("Passport", id: a, "owner") == [p2])

            // From the side with the column.
            try tx.update("Passport", id: b, ["owner": .reference(p2)])
            #expect(try tx.related("Person", id: p2, "passport") == [b])
            #expect(try tx.related("Passport", id: a, "owner") == [], "A let go of Bob")
            #expect(
                try tx.fetchIDs(
                    RecordQuery(
                        "Passport", where: .compare(.property("owner"), .equal, .value(.reference(p2)))))
                    == [b])

            // Each person has at most one passport and vice versa.
            let owners = try tx.fetch(RecordQuery("Passport")).compactMap {
                if case .reference(let id)? = $0["owner"] { id } else { nil }
            }
            #expect(Set(owners).count == owners.count)
            try tx.commit()
        }
    }

    @Test func deleteRuleCascade() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema(cardsDeleteRule: .cascade))
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            // Fillers, so no card shares its id with a deck (see cascadeIsNotConfusedByEqualIdsInOtherTables).
            for i in 0..<5 { try tx.insert("Card", ["front": .string("filler \(i)")]) }
            let d1 = try tx.insert("Deck", ["title": .string("one")])
            let d2 = try tx.insert("Deck", ["title": .string("two")])
            let tag = try tx.insert("Tag", ["name": .string("t")])
            for i in 0..<3 {
                try tx.insert(
                    "Card", ["front": .string("a\(i)"), "deck": .reference(d1), "tags": .references([tag])])
            }
            let other = try tx.insert(
                "Card", ["front": .string("b"), "deck": .reference(d2), "tags": .references([tag])])

            #expect(try tx.delete("Deck", id: d1) == 4)
            #expect(
                try tx.fetchIDs(
                    RecordQuery(
                        "Card",
                        where: .not(.text(.property("front"), .beginsWith, .value(.string("filler")), .exact))
                    )
                ) == [other])
            #expect(try tx.count(RecordQuery("Card")) == 6)
            #expect(try tx.fetchIDs(RecordQuery("Deck")) == [d2])
            #expect(
                try tx.related("Tag", id: tag, "cards") == [other], "links of deleted cards are gone")
            try tx.commit()
        }
    }

    @Test func cascadeIsNotConfusedByEqualIdsInOtherTables() throws {
        try withTestDirectory { dir throws in
            // Record ids are per table: deck #1 and card #1 are different records.
            let package = try makeTestStore(in: dir, schema: recordsSchema(cardsDeleteRule: .cascade))
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let deck = try tx.insert("Deck", ["title": .string("one")])
            let c1 = try tx.insert("Card", ["front": .string("a"), "deck": .reference(deck)])
            let c2 = try tx.insert("Card", ["front": .string("b"), "deck": .reference(deck)])
            #expect(deck == c1, "the test needs a card whose id equals the deck's")
            #expect(try tx.delete("Deck", id: deck) == 3)
            #expect(
                try tx.fetchIDs(RecordQuery("Card")) == [],
                "both cards of the deleted deck are deleted (left: c1 = \(c1), c2 = \(c2))")
        }
    }

    @Test func deleteRuleNullify() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema(cardsDeleteRule: .nullify))
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let d1 = try tx.insert("Deck", ["title": .string("one")])
            let c1 = try tx.insert("Card", ["front": .string("a"), "deck": .reference(d1)])
            let c2 = try tx.insert("Card", ["front": .string("b"), "deck": .reference(d1)])
            #expect(try tx.delete("Deck", id: d1) == 1)
            #expect(try tx.fetchIDs(RecordQuery("Card")) == [c1, c2])
            #expect(try tx.fetch(RecordQuery("Card")).map { $0["deck"] } == [.null, .null])
            try tx.commit()
            tx.rollback()
            try package.close()
            #expect(try PackageVerifier.verify(at: package.url).isValid)
        }
    }

    @Test func deleteRuleDenyRefusesAndDeletesNothing() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema(cardsDeleteRule: .deny))
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let d1 = try tx.insert("Deck", ["title": .string("one")])
            let empty = try tx.insert("Deck", ["title": .string("empty")])
            try tx.insert("Card", ["front": .string("a"), "deck": .reference(d1)])
            try tx.insert("Card", ["front": .string("b"), "deck": .reference(d1)])
            let error = expectDeckError { try tx.delete("Deck", id: d1) }
            guard case .deleteDenied(let entity, let id, let relationship, let count) = error else {
                Issue.record("expected deleteDenied, got \(String(describing: error))")
                return
            }
            #expect(entity == "Deck")
            #expect(id == d1)
            #expect(relationship == "cards")
            #expect(count == 2)
            #expect(try tx.count(RecordQuery("Deck")) == 2)
            #expect(try tx.related("Deck", id: d1, "cards").count == 2)
            // A bulk delete that hits the denied record is undone whole.
            let bulk = expectDeckError {
                try tx.delete(RecordQuery("Deck", sort: [SortKey("title", ascending: false)]))
            }
            if case .deleteDenied = bulk {
            } else {
                Issue.record("expected deleteDenied, got \(String(describing: bulk))")
            }
            #expect(try tx.count(RecordQuery("Deck")) == 2)
            // Without related records, deny does not apply.
            #expect(try tx.delete("Deck", id: empty) == 1)
            try tx.commit()
        }
    }

    @Test func deleteRuleNoActionLeavesTheReference() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: recordsSchema(cardsDeleteRule: .noAction))
            var tx = try package.beginTransaction()
            defer { tx.rollback() }
            let d1 = try tx.insert("Deck", ["title": .string("one")])
            let c1 = try tx.insert("Card", ["front": .string("a"), "deck": .reference(d1)])
            #expect(try tx.delete("Deck", id: d1) == 1)
            try tx.commit()
            tx = try package.beginTransaction()
            #expect(try tx.count(RecordQuery("Deck")) == 0)
            #expect(
                try tx.record("Card", id: c1)?["deck"] == .reference(d1),
                "noAction keeps the dangling reference")
        }
    }

    @Test func deletingTheToOneSideNeverLeavesADanglingColumn() throws {
        try withTestDirectory { dir throws in
            // Card.deck is nullify (the default); deleting a card must not touch its deck.
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let d1 = try tx.insert("Deck", ["title": .string("one")])
            let c1 = try tx.insert("Card", ["front": .string("a"), "deck": .reference(d1)])
            try tx.delete("Card", id: c1)
            #expect(try tx.fetchIDs(RecordQuery("Deck")) == [d1])
            #expect(try tx.related("Deck", id: d1, "cards") == [])
            try tx.commit()
        }
    }

    // MARK: Inheritance

    static let animalSchema = StoreSchema(entities: [
        Entity("Animal", attributes: [Attribute("name", .string, options: [.unique])]),
        Entity("Dog", superentity: "Animal", attributes: [Attribute("breed", .string)]),
        Entity(
            "Puppy", superentity: "Dog", attributes: [Attribute("weeks", .integer, defaultValue: .integer(8))]
        ),
        Entity(
            "Cat", superentity: "Animal",
            attributes: [Attribute("lives", .integer, defaultValue: .integer(9))]),
    ])

    @Test func fetchingAParentReturnsSubentityRecordsWithTheirOwnAttributes() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: Self.animalSchema)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let generic = try tx.insert("Animal", ["name": .string("thing")])
            let rex = try tx.insert("Dog", ["name": .string("Rex"), "breed": .string("collie")])
            let bit = try tx.insert("Puppy", ["name": .string("Bit"), "breed": .string("pug")])
            let tom = try tx.insert("Cat", ["name": .string("Tom")])

            let animals = try tx.fetch(RecordQuery("Animal"))
            #expect(animals.map(\.id) == [generic, rex, bit, tom])
            #expect(animals.map(\.entity) == ["Animal", "Dog", "Puppy", "Cat"])
            #expect(animals[0].values == ["name": .string("thing")])
            #expect(animals[1].values == ["name": .string("Rex"), "breed": .string("collie")])
            #expect(
                animals[2].values == ["name": .string("Bit"), "breed": .string("pug"), "weeks": .integer(8)])
            #expect(animals[3].values == ["name": .string("Tom"), "lives": .integer(9)])

            #expect(try tx.fetchIDs(RecordQuery("Dog")) == [rex, bit])
            #expect(try tx.fetchIDs(RecordQuery("Dog", includesSubentities: false)) == [rex])
            #expect(try tx.fetchIDs(RecordQuery("Animal", includesSubentities: false)) == [generic])
            #expect(try tx.count(RecordQuery("Cat")) == 1)
            #expect(try tx.record("Animal", id: bit)?.entity == "Puppy")
            #expect(try tx.record("Cat", id: rex) == nil)
            #expect(
                try tx.fetchIDs(
                    RecordQuery("Dog", where: .compare(.property("breed"), .equal, .value(.string("pug")))))
                    == [bit]
            )
            #expect(
                try tx.fetchIDs(
                    RecordQuery(
                        "Animal",
                        where: .text(
                            .property("name"), .beginsWith, .value(.string("r")), .asciiCaseInsensitive)))
                    == [rex])
        }
    }

    @Test func inheritanceUpdatesDeletesAndConstraints() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: Self.animalSchema)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let rex = try tx.insert("Dog", ["name": .string("Rex"), "breed": .string("collie")])
            let tom = try tx.insert("Cat", ["name": .string("Tom")])

            // Subentity attributes are required where declared so.
            let missing = expectDeckError { try tx.insert("Dog", ["name": .string("NoBreed")]) }
            if case .invalidValue("Dog", "breed", _) = missing {
            } else {
                Issue.record("got \(String(describing: missing))")
            }
            // A parent's unique attribute spans the hierarchy.
            let duplicate = expectDeckError { try tx.insert("Cat", ["name": .string("Rex")]) }
            if case .uniqueViolation = duplicate {
            } else {
                Issue.record("expected uniqueViolation, got \(String(describing: duplicate))")
            }
            // The parent entity updates a subentity record's inherited attributes.
            try tx.update("Animal", id: rex, ["name": .string("Rex II")])
            #expect(try tx.record("Dog", id: rex)?["name"] == .string("Rex II"))
            // A sibling entity cannot reach it.
            let wrong = expectDeckError { try tx.update("Cat", id: rex, ["lives": .integer(1)]) }
            if case .recordNotFound = wrong {
            } else {
                Issue.record("expected recordNotFound, got \(String(describing: wrong))")
            }
            // The parent entity cannot name the subentity's attributes.
            let unknown = expectDeckError { try tx.update("Animal", id: rex, ["breed": .string("x")]) }
            if case .unknownProperty = unknown {
            } else {
                Issue.record("expected unknownProperty, got \(String(describing: unknown))")
            }
            #expect(try tx.delete("Animal", id: tom) == 1)
            #expect(try tx.fetchIDs(RecordQuery("Animal")) == [rex])
            try tx.commit()
        }
    }

    // MARK: Unique and upsert

    @Test func uniqueViolations() throws {
        try withTestDirectory { dir throws in
            let schema = StoreSchema(entities: [
                Entity(
                    "Word",
                    attributes: [
                        Attribute("text", .string), Attribute("language", .string),
                        Attribute("code", .string, isOptional: true, options: [.unique]),
                    ],
                    uniqueConstraints: [["text", "language"]])
            ])
            let package = try makeTestStore(in: dir, schema: schema)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let first = try tx.insert(
                "Word", ["text": .string("gift"), "language": .string("en"), "code": .string("G1")])
            try tx.insert("Word", ["text": .string("gift"), "language": .string("de")])
            // A null code twice is fine.
            try tx.insert("Word", ["text": .string("other"), "language": .string("de")])

            var error = expectDeckError {
                try tx.insert("Word", ["text": .string("gift"), "language": .string("en")])
            }
            guard case .uniqueViolation(let entity, let properties) = error else {
                Issue.record("expected uniqueViolation, got \(String(describing: error))")
                return
            }
            #expect(entity == "Word")
            #expect(properties == ["text", "language"])
            error = expectDeckError {
                try tx.insert(
                    "Word", ["text": .string("x"), "language": .string("en"), "code": .string("G1")])
            }
            if case .uniqueViolation("Word", ["code"]) = error {
            } else {
                Issue.record("expected uniqueViolation(code), got \(String(describing: error))")
            }
            let other = try tx.insert("Word", ["text": .string("y"), "language": .string("en")])
            error = expectDeckError { try tx.update("Word", id: other, ["code": .string("G1")]) }
            if case .uniqueViolation = error {
            } else {
                Issue.record("expected uniqueViolation, got \(String(describing: error))")
            }
            #expect(try tx.count(RecordQuery("Word")) == 4)
            #expect(try tx.record("Word", id: first)?["code"] == .string("G1"))
            try tx.commit()
        }
    }

    @Test func upsertUpdatesTheRecordWithTheSameUniqueValue() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let (id, inserted) = try tx.upsert("Deck", ["title": .string("A"), "position": .integer(1)])
            #expect(inserted)
            let again = try tx.upsert("Deck", ["title": .string("A"), "position": .integer(2)])
            #expect(again.id == id)
            #expect(!again.inserted)
            #expect(try tx.count(RecordQuery("Deck")) == 1)
            #expect(try tx.record("Deck", id: id)?["position"] == .integer(2))
            let other = try tx.upsert("Deck", ["title": .string("B")])
            #expect(other.inserted)
            #expect(other.id != id)
            // Without a unique value among the values, upsert inserts.
            let card1 = try tx.upsert("Card", ["front": .string("same")])
            let card2 = try tx.upsert("Card", ["front": .string("same")])
            #expect(card1.inserted && card2.inserted && card1.id != card2.id)
        }
    }

    @Test func upsertWithACompositeConstraint() throws {
        try withTestDirectory { dir throws in
            let schema = StoreSchema(entities: [
                Entity(
                    "Word",
                    attributes: [
                        Attribute("text", .string), Attribute("language", .string),
                        Attribute("note", .string, isOptional: true),
                    ],
                    uniqueConstraints: [["text", "language"]]),
                Entity(
                    "Verb", superentity: "Word", attributes: [Attribute("tense", .string, isOptional: true)]),
            ])
            let package = try makeTestStore(in: dir, schema: schema)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let a = try tx.upsert("Word", ["text": .string("gift"), "language": .string("en")])
            let b = try tx.upsert("Word", ["text": .string("gift"), "language": .string("de")])
            let c = try tx.upsert(
                "Word", ["text": .string("gift"), "language": .string("en"), "note": .string("present")])
            #expect(a.inserted && b.inserted && !c.inserted)
            #expect(c.id == a.id)
            #expect(try tx.record("Word", id: a.id)?["note"] == .string("present"))
            // A subentity honours its ancestors' constraints.
            let v1 = try tx.upsert("Verb", ["text": .string("run"), "language": .string("en")])
            let v2 = try tx.upsert(
                "Verb", ["text": .string("run"), "language": .string("en"), "tense": .string("present")])
            #expect(v1.inserted && !v2.inserted && v1.id == v2.id)
            #expect(try tx.count(RecordQuery("Word")) == 3)
        }
    }

    // MARK: Save and rollback

    @Test func rollbackDiscardsChangesAndNewBlobFiles() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            var tx = try package.beginTransaction()
            defer { tx.rollback() }
            let kept = try tx.insert(
                "Card", ["front": .string("kept"), "image": .data(testBytes(64, seed: 1))])
            try tx.commit()
            tx = try package.beginTransaction()
            let url = package.url
            #expect(blobFiles(url) == [blobName(testBytes(64, seed: 1))])

            try tx.insert("Card", ["front": .string("new"), "image": .data(testBytes(64, seed: 2))])
            try tx.update(
                "Card", id: kept, ["front": .string("changed"), "image": .data(testBytes(64, seed: 3))])
            try tx.insert("Deck", ["title": .string("new deck")])
            #expect(blobFiles(url).count == 3)
            #expect(tx.hasChanges)

            tx.rollback()
            tx = try package.beginTransaction()
            #expect(!tx.hasChanges)
            #expect(try tx.count(RecordQuery("Card")) == 1)
            #expect(try tx.count(RecordQuery("Deck")) == 0)
            #expect(try tx.record("Card", id: kept)?["front"] == .string("kept"))
            #expect(blobFiles(url) == [blobName(testBytes(64, seed: 1))], "only the committed blob remains")
            #expect(
                try tx.data(of: try #require(tx.record("Card", id: kept)?["image"]))
                    == testBytes(64, seed: 1))
            tx.rollback()  // nothing to roll back: harmless
            tx.rollback()  // ended already: harmless too
            try package.close()
            #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
        }
    }

    @Test func changesBecomeVisibleToReadersOnlyAfterSave() throws {
        try withTestDirectory { dir throws in
            let writer = try makeTestStore(in: dir)
            var tx = try writer.beginTransaction()
            defer { tx.rollback() }
            let url = writer.url
            let reader = try PackageStore.open(at: url, mode: .readOnly)
            let id = try tx.insert("Deck", ["title": .string("draft")])
            #expect(try tx.count(RecordQuery("Deck")) == 1, "the writer sees its own changes")
            #expect(try reader.read { try $0.count(RecordQuery("Deck")) } == 0)
            try tx.commit()
            tx = try writer.beginTransaction()
            #expect(try reader.read { try $0.count(RecordQuery("Deck")) } == 1)

            try tx.update("Deck", id: id, ["title": .string("final")])
            #expect(try reader.read { try $0.record("Deck", id: id) }?["title"] == .string("draft"))
            tx.rollback()
            tx = try writer.beginTransaction()
            try tx.delete("Deck", id: id)
            #expect(try reader.read { try $0.count(RecordQuery("Deck")) } == 1)
            try tx.commit()
            #expect(try reader.read { try $0.count(RecordQuery("Deck")) } == 0)
            try reader.close()
            tx.rollback()
            try writer.close()
        }
    }

    @Test func aFailedFirstChangeLeavesNoUnsavedChanges() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            var tx = try package.beginTransaction()
            defer { tx.rollback() }
            try tx.insert("Deck", ["title": .string("A")])
            try tx.commit()
            tx = try package.beginTransaction()
            #expect(!tx.hasChanges)
            expectDeckError { try tx.insert("Deck", ["title": .string("A")]) }
            #expect(!tx.hasChanges, "nothing changed, so there is nothing to save")
            // ... and so ending it loses nothing, and maintenance that needs a clean state runs.
            tx.rollback()
            _ = try package.collectGarbage(dryRun: true)
        }
    }

    @Test func aFailedChangeKeepsEarlierUnsavedChanges() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            try tx.insert("Deck", ["title": .string("A")])
            expectDeckError { try tx.insert("Deck", ["title": .string("A")]) }
            expectDeckError {
                try tx.insert(
                    "Card", ["front": .string("x"), "deck": .reference(999), "image": .data(testBytes(100))])
            }
            try tx.insert("Deck", ["title": .string("B")])
            try tx.commit()
            tx.rollback()
            try package.close()
            let reopened = try PackageStore.open(at: package.url, mode: .readOnly)
            #expect(
                strings(
                    try reopened.read { try $0.fetch(RecordQuery("Deck", sort: [SortKey("title")])) }, "title"
                ) == [
                    "A", "B",
                ])
            #expect(try reopened.read { try $0.count(RecordQuery("Card")) } == 0)
            #expect(try PackageVerifier.verify(at: package.url).isValid)
        }
    }
}
