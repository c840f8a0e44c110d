import DeckTestTiming
import Foundation
import Testing

/// `deck migrate` end to end: lightweight migrations, dry runs, refusals (exit 65, nothing
/// changed), plan files good and bad, schema files bad.
@Suite("End to end: deck migrate", .timed)
struct EndToEndMigrateTests {
    typealias Schemas = EndToEndMigrationTests

    /// Every file of a package with its bytes.
    static func files(_ package: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: package)
        while let name = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: package + "/" + name, isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                result[name] = try Data(contentsOf: URL(fileURLWithPath: package + "/" + name))
            }
        }
        return result
    }

    /// What the package holds, as `deck query` prints every card, and its schema version.
    static func content(_ package: String) throws -> String {
        let cards = try deck("query", package, "Card", "--json")
        let inspect = try e2eJSONObject(try deck("inspect", package, "--json").stdout)
        return cards.stdout + "\(inspect["schemaVersion"] ?? "")"
    }

    static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    @Test func aLightweightMigrationRunsAndIsRecorded() throws {
        let directory = try TemporaryDirectory()
        let (package, _, new) = try Schemas.schemas(in: directory) { schema in
            Schemas.attributes(&schema, of: "Card") { attributes in
                attributes[0]["originalName"] = attributes[0]["name"]
                attributes[0]["name"] = "question"
                attributes.append(["name": "hint", "type": "string", "optional": true])
            }
        }
        let fronts = try e2eColumn(try deck("query", package, "Card", "--json").stdout, "front")
        let result = try deck("migrate", package, "--to", new)
        e2eExpectSuccess(result)
        #expect(
            result.stdout == """
                \(package): migrated 1.0.0 → 2.0.0 (2 step(s))
                  rename attribute Card.front → question
                  add attribute Card.hint (string, optional)
                rebuilt: Card

                """)
        #expect(try e2eColumn(try deck("query", package, "Card", "--json").stdout, "question") == fronts)
        let inspect = try deck("inspect", package)
        #expect(inspect.stdout.contains("1. 1.0.0 → 2.0.0"))
        e2eExpectSuccess(try deck("verify", package))
        // Again: nothing to do.
        let again = try deck("migrate", package, "--to", new, "--json")
        e2eExpectSuccess(again)
        #expect(try e2eJSONObject(again.stdout)["unchanged"] as? Bool == true)
    }

    @Test func aDryRunChangesNoByte() throws {
        let directory = try TemporaryDirectory()
        let (package, _, new) = try Schemas.schemas(in: directory) { schema in
            Schemas.attributes(&schema, of: "Card") {
                $0.append(["name": "hint", "type": "string", "optional": true])
            }
        }
        let before = try Self.files(package)
        let result = try deck("migrate", package, "--to", new, "--dry-run", "--json")
        e2eExpectSuccess(result)
        let json = try e2eJSONObject(result.stdout)
        #expect(json["dryRun"] as? Bool == true && (json["steps"] as? [Any])?.count == 1)
        #expect(try Self.files(package) == before)
    }

    @Test func aStepThatNeedsACustomStageExits65NamingIt() throws {
        let directory = try TemporaryDirectory()
        let (package, _, new) = try Schemas.schemas(in: directory) { schema in
            Schemas.attributes(&schema, of: "Card") { $0[1]["type"] = "integer" }
        }
        let before = try Self.content(package)
        e2eExpectFailure(
            try deck("migrate", package, "--to", new), status: 65, "cannot migrate",
            "Card.back: type string → integer",
            "custom stage")
        #expect(try Self.content(package) == before)
        e2eExpectSuccess(try deck("verify", package))
    }

    @Test func aRemovalNeedsThePlansAgreement() throws {
        let directory = try TemporaryDirectory()
        let (package, _, new) = try Schemas.schemas(in: directory) { schema in
            Schemas.attributes(&schema, of: "Card") { $0.remove(at: 1) }
        }
        let before = try Self.content(package)
        e2eExpectFailure(
            try deck("migrate", package, "--to", new), status: 65, "remove attribute Card.back",
            "add \"Card.back\" to the plan's removals")
        #expect(try Self.content(package) == before)
        let plan = directory.appending("plan.json")
        try Self.write(#"{"removals": ["Card.back"], "breaking": true}"#, to: plan)
        let result = try deck("migrate", package, "--to", new, "--plan", plan)
        e2eExpectSuccess(result)
        #expect(result.stdout.contains("compatibility floor raised to 2.0.0"))
        let info = try e2eJSONObject(try deck("inspect", package, "--json").stdout)
        #expect(info["schemaFloor"] as? String == "2.0.0")
        e2eExpectSuccess(try deck("verify", package))
    }

    @Test func aPlanCanRenameWhatTheSchemaDoesNot() throws {
        let directory = try TemporaryDirectory()
        let (package, _, new) = try Schemas.schemas(in: directory) { schema in
            Schemas.attributes(&schema, of: "Card") { $0[1]["name"] = "answer" }
        }
        let backs = try e2eColumn(try deck("query", package, "Card", "--json").stdout, "back")
        let plan = directory.appending("plan.json")
        try Self.write(#"{"renames": {"Card.answer": "back"}}"#, to: plan)
        e2eExpectSuccess(try deck("migrate", package, "--to", new, "--plan", plan))
        #expect(try e2eColumn(try deck("query", package, "Card", "--json").stdout, "answer") == backs)
    }

    @Test(arguments: [
        (#"{"removals": ["Card.back"], "breaking": "yes"}"#, "'breaking' is a string, not true or false"),
        (#"{"removals": ["Card.back"#, "not valid JSON"),
        (#"{"removals": [], "removals": ["Card.back"]}"#, "appears twice"),
        (#"{"renames": {"Card.answer": "Card.back"}}"#, "give the old name alone"),
        (#"{"removals": ["Card.back.x"]}"#, "is not Entity or Entity.property"),
        (#"{"stages": []}"#, "unknown member 'stages'"),
        (#"["Card.back"]"#, "a plan is a JSON object"),
        ("\u{FEFF}{}", "byte-order mark"),
    ])
    func aBadPlanFileIsRefusedAndChangesNothing(plan text: String, message: String) throws {
        let directory = try TemporaryDirectory()
        let (package, _, new) = try Schemas.schemas(in: directory) { schema in
            Schemas.attributes(&schema, of: "Card") { $0.remove(at: 1) }
        }
        let before = try Self.files(package)
        let plan = directory.appending("plan.json")
        try Self.write(text, to: plan)
        e2eExpectFailure(
            try deck("migrate", package, "--to", new, "--plan", plan), status: 65, "invalid migration plan",
            plan, message)
        #expect(try Self.files(package) == before)
    }

    @Test func badSchemaAndPlanPathsAreRefused() throws {
        let directory = try TemporaryDirectory()
        let (package, _, new) = try Schemas.schemas(in: directory) { _ in }
        let before = try Self.files(package)
        // A truncated schema file, a hostile one (a table name that is SQL), a directory as plan.
        let truncated = directory.appending("truncated.json")
        let full = try String(contentsOfFile: new, encoding: .utf8)
        try Self.write(String(full.prefix(full.count / 2)), to: truncated)
        e2eExpectFailure(try deck("migrate", package, "--to", truncated), status: 65, "truncated.json")
        let hostile = directory.appending("hostile.json")
        try Self.write(
            full.replacingOccurrences(of: #""name":"Card""#, with: #""name":"Card\"; DROP TABLE Deck; --""#),
            to: hostile)
        #expect(full.contains(#""name":"Card""#))
        e2eExpectFailure(try deck("migrate", package, "--to", hostile), status: 65, "invalid schema")
        e2eExpectFailure(
            try deck("migrate", package, "--to", new, "--plan", directory.path), status: 65, "not a plan file"
        )
        e2eExpectFailure(
            try deck("migrate", package, "--to", new, "--plan", directory.appending("missing.json")),
            status: 66)
        e2eExpectUsageError(try deck("migrate", package), command: "deck migrate", "--to")
        #expect(try Self.files(package) == before)
    }
}
