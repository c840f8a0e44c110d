import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// Schema defaults (spec 5.4): exact reading, the canonical stored form, `dynamicDefault`, and
/// the messages schema files get.
@Suite("StoreSchema defaults", .timed)
struct SchemaDefaultTests {
    /// A schema file with one entity `A` holding the attribute object `attribute`.
    private func file(_ attribute: String) -> Data {
        Data((#"{"version":"1","entities":[{"name":"A","attributes":["# + attribute + "]}]}").utf8)
    }

    private func decode(_ attribute: String) throws -> Attribute {
        let schema = try StoreSchema(json: file(attribute), source: "s.json")
        return try #require(schema.entities.first?.attributes.first)
    }

    private func message(_ data: Data) -> String {
        do {
            _ = try StoreSchema(json: data, source: "s.json")
            return ""
        } catch {
            return error.description
        }
    }

    /// The stored JSON of an attribute (its canonical form).
    private func stored(_ attribute: Attribute) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(attribute), as: UTF8.self)
    }

    @Test(arguments: [
        (#"{"name":"x","type":"decimal","default":"1.50"}"#, #""default":"1.5""#),
        (#"{"name":"x","type":"decimal","default":1.50}"#, #""default":"1.5""#),
        (
            #"{"name":"x","type":"decimal","default":0.100000000000000000000000000000000001}"#,
            #""default":"0.100000000000000000000000000000000001""#
        ),
        (#"{"name":"x","type":"decimal","default":-0}"#, #""default":"0""#),
        (#"{"name":"x","type":"decimal","default":"1e3"}"#, #""default":"1000""#),
        (#"{"name":"x","type":"double","default":"-0"}"#, #""default":0"#),
        (#"{"name":"x","type":"double","default":1.50}"#, #""default":1.5"#),
        (#"{"name":"x","type":"double","default":"0.1"}"#, #""default":0.1"#),
        (#"{"name":"x","type":"integer","default":3e2}"#, #""default":300"#),
        (#"{"name":"x","type":"integer","default":"+7"}"#, #""default":7"#),
        (
            #"{"name":"x","type":"integer","default":-9223372036854775808}"#,
            #""default":-9223372036854775808"#
        ),
        (#"{"name":"x","type":"date","default":"2026-11-30"}"#, #""default":1795996800"#),
        (#"{"name":"x","type":"date","default":"1970-01-01T00:00:00.1Z"}"#, #""default":0.1"#),
        (#"{"name":"x","type":"date","default":0.1}"#, #""default":0.1"#),
        (
            #"{"name":"x","type":"uuid","default":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F"}"#,
            #""default":"e621e1f8-c36c-495a-93fc-0c247a3e6e5f""#
        ),
        (
            #"{"name":"x","type":"url","default":"http://münchen.de/"}"#,
            #""default":"http://xn--mnchen-3ya.de/""#
        ),
        (#"{"name":"x","type":"json","default":" [1, 2] "}"#, #""default":" [1, 2] ""#),
        (#"{"name":"x","type":"json","default":12.50}"#, #""default":"12.50""#),
        (#"{"name":"x","type":"bool","default":"YES"}"#, #""default":true"#),
        (#"{"name":"x","type":"string","default":null}"#, #"{"name":"x","type":"string"}"#),
    ])
    func defaultsAreStoredInCanonicalForm(attribute: String, stored expected: String) throws {
        let decoded = try decode(attribute)
        let text = try stored(decoded)
        #expect(text.contains(expected), "\(text)")
        // The stored form reads back as the same value, through either decoder.
        let again = try JSONDecoder().decode(Attribute.self, from: Data(text.utf8))
        #expect(again == decoded)
        #expect(try stored(again) == text)
    }

    @Test(arguments: [
        (
            #"{"name":"price","type":"decimal","default":123456789012345678901234567890123456789012}"#,
            "attribute 'price': invalid default: '123456789012345678901234567890123456789012' is not a valid decimal: expected a decimal with at most 38 significant digits"
        ),
        (
            #"{"name":"ratio","type":"double","default":1e400}"#,
            "attribute 'ratio': invalid default: '1e400' is not a valid double: expected a finite number"
        ),
        (
            #"{"name":"count","type":"integer","default":99999999999999999999}"#,
            "attribute 'count': invalid default: '99999999999999999999' is not a valid integer: expected an integer from"
        ),
        (#"{"name":"count","type":"integer","default":1.5}"#, "attribute 'count': invalid default: '1.5'"),
        (
            #"{"name":"when","type":"date","default":"soon"}"#,
            "attribute 'when': invalid default: 'soon' is not a valid date"
        ),
        (#"{"name":"when","type":"date","default":1e300}"#, "outside the years 0000 to 9999"),
        (
            #"{"name":"when","type":"date","default":{"now":true}}"#,
            "expected a JSON string, number, boolean or null"
        ),
        (#"{"name":"meta","type":"json","default":[1]}"#, "as a string holding its JSON text"),
        (
            #"{"name":"blob","type":"data","externalThreshold":1.5}"#,
            "attribute 'blob': externalThreshold must be a whole number of bytes, not 1.5"
        ),
        (#"{"name":"blob","type":"data","externalThreshold":1e400}"#, "not 1e400"),
        (
            #"{"name":"blob","type":"data","externalThreshold":99999999999999999999}"#,
            "not 99999999999999999999"
        ),
        (#"{"name":"blob","type":"data","externalThreshold":"64"}"#, "must be a number of bytes"),
        (
            #"{"name":"x","type":"integer","options":["unique","bogus"]}"#,
            "unknown attribute option 'bogus' (expected one of: unique, externalStorage, indexed) at 'entities[0].attributes[0].options[1]'"
        ),
        (
            #"{"name":"x","type":"date","dynamicDefault":"later"}"#,
            "unknown dynamicDefault 'later' (expected one of: now)"
        ),
    ])
    func badDefaultsAndNumbersAreNamed(attribute: String, fragment: String) {
        let text = message(file(attribute))
        #expect(text.hasPrefix("invalid schema: s.json: "), "\(text)")
        #expect(text.contains(fragment), "\(text)")
        #expect(!text.contains("not valid JSON"), "\(text)")
    }

    @Test func jSONThatIsNotValidSaysWhere() {
        let duplicate = Data(#"{"version":"1","entities":[{"name":"A","name":"B"}]}"#.utf8)
        #expect(
            message(duplicate)
                == "invalid schema: s.json: not valid JSON: duplicate member name 'name' in an object at line 1, column 40"
        )
        let broken = Data("{\"version\":\"1\",\n \"entities\":[,]}".utf8)
        #expect(
            message(broken)
                == "invalid schema: s.json: not valid JSON: expected a JSON value, found ',' at line 2, column 14"
        )
        #expect(message(Data([0xEF, 0xBB, 0xBF] + Array("{}".utf8))).contains("byte-order mark"))
        #expect(message(Data([0x7B, 0xFF, 0x7D])).contains("not valid UTF-8"))
    }

    @Test func dynamicDefaultNow() throws {
        let attribute = try decode(#"{"name":"created","type":"date","dynamicDefault":"now"}"#)
        #expect(attribute.dynamicDefault == .now)
        #expect(attribute.defaultValue == nil)
        #expect(try stored(attribute) == #"{"dynamicDefault":"now","name":"created","type":"date"}"#)
        #expect(
            message(file(#"{"name":"n","type":"integer","dynamicDefault":"now"}"#))
                == "invalid schema: 'A.n': dynamicDefault 'now' applies to date attributes only")
        #expect(
            message(file(#"{"name":"t","type":"date","default":0,"dynamicDefault":"now"}"#))
                == "invalid schema: 'A.t': give either a default or a dynamicDefault, not both")
        #expect(message(file(#"{"name":"m","type":"json","default":"null"}"#)).contains("omit the default"))
        // A reader that predates the member ignores it: the rest of the attribute is unchanged.
        struct OldAttribute: Decodable, Equatable {
            var name: String
            var type: String
        }
        let old = try JSONDecoder().decode(OldAttribute.self, from: Data(try stored(attribute).utf8))
        #expect(old == OldAttribute(name: "created", type: "date"))
    }

    @Test func insertsGetTheTimeOfTheInsert() throws {
        let schema = StoreSchema(entities: [
            Entity(
                "Sample",
                attributes: [
                    Attribute("s", .string),
                    Attribute("created", .date, dynamicDefault: .now),
                ])
        ])
        try withTestDirectory { dir throws in
            let store = try makeTestStore(in: dir, schema: schema)
            defer { try? store.close() }
            let tx = try store.beginTransaction()
            defer { tx.rollback() }
            let before = Date().timeIntervalSince1970
            let id = try tx.insert("Sample", ["s": .string("a")])
            let after = Date().timeIntervalSince1970
            guard case .date(let created)? = try tx.record("Sample", id: id)?["created"] else {
                Issue.record("no date")
                return
            }
            #expect(
                created.timeIntervalSince1970 >= before - 0.001
                    && created.timeIntervalSince1970 <= after + 0.001)
            #expect(created.description.count == 24, "\(created)")
            // A given value wins.
            let given = try tx.insert(
                "Sample", ["s": .string("b"), "created": .date(Timestamp(timeIntervalSince1970: 5))])
            #expect(
                try tx.record("Sample", id: given)?["created"]
                    == .date(Timestamp(timeIntervalSince1970: 5)))
        }
    }

    @Test func theFlashcardsSampleDefaultsCreationDateToNow() throws {
        let card = try #require(SampleCards.schema.entity(named: "Card"))
        #expect(card.attributes.first { $0.name == "creationDate" }?.dynamicDefault == .now)
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("samples/flashcards.schema.json")
        #expect(
            try StoreSchema(json: Data(contentsOf: file), source: "flashcards.schema.json")
                == SampleCards.schema)
        try withTestDirectory { dir throws in
            let package = try PackageStore.create(
                at: dir.appendingPathComponent("S.flashcards"), contentType: SampleCards.contentType,
                schema: SampleCards.schema)
            let tx = try package.beginTransaction()
            defer { tx.rollback() }
            let id = try tx.insert("Card", ["front": .string("a"), "back": .string("b")])
            #expect(try tx.record("Card", id: id)?["creationDate"]?.kindName == "date")
        }
    }
}
