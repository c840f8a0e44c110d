import DeckTestTiming
import Foundation
import Testing

/// `deck compat` end to end: the three answers an older app gets (spec section 19), a document
/// that needs a migration, JSON, and bad input; the document never changes.
@Suite("End to end: deck compat", .timed)
struct EndToEndCompatTests {
    typealias Schemas = EndToEndMigrationTests

    /// The sample migrated to version 2 (an added optional attribute), `breaking` or not, with
    /// the version 1 schema file.
    static func laterSample(in directory: TemporaryDirectory, breaking: Bool) throws -> (
        package: String, v1: String
    ) {
        let (package, old, new) = try Schemas.schemas(in: directory) { schema in
            Schemas.attributes(&schema, of: "Card") {
                $0.append(["name": "hint", "type": "string", "optional": true])
            }
        }
        let plan = directory.appending("plan.json")
        try Data("{\"breaking\": \(breaking)}".utf8).write(to: URL(fileURLWithPath: plan))
        e2eExpectSuccess(try deck("migrate", package, "--to", new, "--plan", plan))
        return (package, old)
    }

    @Test func anAdditiveLaterDocumentIsReadWriteForTheOlderApp() throws {
        let directory = try TemporaryDirectory()
        let (package, v1) = try Self.laterSample(in: directory, breaking: false)
        let before = try EndToEndMigrateTests.content(package)
        let result = try deck("compat", package, "--app", v1)
        e2eExpectSuccess(result)
        #expect(result.stdout == "app 1.0.0, document 2.0.0: read-write\n")
        let json = try e2eJSONObject(try deck("compat", package, "--app", v1, "--json").stdout)
        #expect(json["access"] as? String == "readWrite" && json["needsVersion"] is NSNull)
        #expect(json["document"] as? String == "2.0.0" && json["app"] as? String == "1.0.0")
        #expect(try EndToEndMigrateTests.content(package) == before)
    }

    @Test func aBreakingLaterDocumentIsReadOnlyForTheOlderApp() throws {
        let directory = try TemporaryDirectory()
        let (package, v1) = try Self.laterSample(in: directory, breaking: true)
        let result = try deck("compat", package, "--app", v1)
        #expect(result.status == 1 && result.stderr.isEmpty)
        #expect(result.stdout.hasPrefix("app 1.0.0, document 2.0.0: read-only\n"))
        #expect(result.stdout.contains("compatibility floor is 2.0.0"))
        let json = try e2eJSONObject(try deck("compat", package, "--app", v1, "--json").stdout)
        #expect(json["access"] as? String == "readOnly" && (json["reasons"] as? [String])?.count == 1)
        // The app of the document's own schema, and a later one, may write it.
        e2eExpectSuccess(try deck("compat", package, "--app", package))
    }

    @Test func aLaterDocumentTheOlderAppCannotReadNeedsANewerApp() throws {
        let directory = try TemporaryDirectory()
        let (package, old, new) = try Schemas.schemas(in: directory) { schema in
            Schemas.attributes(&schema, of: "Card") { attributes in
                attributes[0]["originalName"] = attributes[0]["name"]
                attributes[0]["name"] = "question"
            }
        }
        e2eExpectSuccess(try deck("migrate", package, "--to", new))
        let result = try deck("compat", package, "--app", old)
        #expect(result.status == 1)
        #expect(
            result.stdout == """
                app 1.0.0, document 2.0.0: refused: the document needs version 2.0.0 of the app
                  Card.front: not in the document

                """)
        let json = try e2eJSONObject(try deck("compat", package, "--app", old, "--json").stdout)
        #expect(
            json["access"] as? String == "needsNewerApplication" && json["needsVersion"] as? String == "2.0.0"
        )
        // The other way round: the version 2 app needs the version 1 document migrated.
        let sample = try e2eSample(in: directory, name: "Other.deck")
        let back = try deck("compat", sample, "--app", new)
        #expect(back.status == 1 && back.stdout.contains("needs a migration"))
        #expect(back.stdout.contains("Card.question: missing from the document"))
    }

    @Test func badInputIsAClearError() throws {
        let directory = try TemporaryDirectory()
        let package = try e2eSample(in: directory)
        e2eExpectUsageError(try deck("compat", package), command: "deck compat", "--app")
        e2eExpectFailure(
            try deck("compat", package, "--app", directory.appending("missing.json")), status: 66,
            "missing.json")
        let garbage = directory.appending("garbage.json")
        try Data("{\"entities\": [".utf8).write(to: URL(fileURLWithPath: garbage))
        e2eExpectFailure(try deck("compat", package, "--app", garbage), status: 65, "invalid schema")
        e2eExpectFailure(
            try deck("compat", directory.appending("nothing.deck"), "--app", package), status: 66,
            "nothing.deck")
    }
}
