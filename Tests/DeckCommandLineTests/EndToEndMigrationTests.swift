import DeckTestTiming
import Foundation
import Testing

/// `deck diff-schema` end to end: packages and schema files, text and JSON, exit statuses.
@Suite("End to end: deck diff-schema", .timed)
struct EndToEndMigrationTests {
    /// The sample's stored schema as a file, and a version 2 of it with `change` applied.
    static func schemas(in directory: TemporaryDirectory, change: (inout [String: Any]) -> Void) throws
        -> (package: String, old: String, new: String)
    {
        let package = try e2eSample(in: directory)
        let inspect = try deck("inspect", package, "--json")
        let info = try #require(
            JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any])
        var schema = try #require(info["schema"] as? [String: Any])
        let old = directory.appending("v1.json")
        try JSONSerialization.data(withJSONObject: schema).write(to: URL(fileURLWithPath: old))
        schema["version"] = "2.0.0"
        change(&schema)
        let new = directory.appending("v2.json")
        try JSONSerialization.data(withJSONObject: schema).write(to: URL(fileURLWithPath: new))
        return (package, old, new)
    }

    /// Applies `body` to the attributes of entity `name`.
    static func attributes(
        _ schema: inout [String: Any], of name: String, _ body: (inout [[String: Any]]) -> Void
    ) {
        guard var entities = schema["entities"] as? [[String: Any]],
            let index = entities.firstIndex(where: { $0["name"] as? String == name }),
            var attributes = entities[index]["attributes"] as? [[String: Any]]
        else { return }
        body(&attributes)
        entities[index]["attributes"] = attributes
        schema["entities"] = entities
    }

    @Test func lightweightChangesExitZero() throws {
        let directory = try TemporaryDirectory()
        let (package, old, new) = try Self.schemas(in: directory) { schema in
            Self.attributes(&schema, of: "Card") { attributes in
                attributes[0]["originalName"] = attributes[0]["name"]
                attributes[0]["name"] = "question"
                attributes.append(["name": "hint", "type": "string", "optional": true])
            }
        }
        let result = try deck("diff-schema", package, new)
        e2eExpectSuccess(result)
        #expect(
            result.stdout == """
                1.0.0 → 2.0.0: 2 step(s), all lightweight
                  lightweight  rename attribute Card.front → question
                  lightweight  add attribute Card.hint (string, optional)

                """)
        let same = try deck("diff-schema", package, old)
        e2eExpectSuccess(same)
        #expect(same.stdout == "1.0.0 → 1.0.0: the same schema\n")
        let json = try deck("diff-schema", old, new, "--json")
        e2eExpectSuccess(json)
        let object = try #require(
            JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["lightweight"] as? Bool == true && object["identical"] as? Bool == false)
        #expect(object["forward"] as? Bool == true)
        let steps = try #require(object["steps"] as? [[String: Any]])
        #expect(steps.map { $0["kind"] as? String } == ["renameAttribute", "addAttribute"])
        #expect(steps.first?["property"] as? String == "question" && steps.first?["reason"] is NSNull)
        let from = try #require(object["from"] as? [String: Any])
        #expect((from["fingerprint"] as? String)?.count == 64)
    }

    /// An archive is read as the reading commands read it (as `deck import` checks it), on
    /// either side, also as `deck migrate --to`'s schema.
    @Test func anArchiveOnEitherSide() throws {
        let directory = try TemporaryDirectory()
        let (package, _, new) = try Self.schemas(in: directory) { schema in
            Self.attributes(&schema, of: "Card") { attributes in
                attributes.append(["name": "hint", "type": "string", "optional": true])
            }
        }
        let archive = directory.appending("Shared.zip")
        e2eExpectSuccess(try deck("export", package, "-o", archive))
        let same = try deck("diff-schema", archive, package)
        e2eExpectSuccess(same)
        #expect(same.stdout == "1.0.0 → 1.0.0: the same schema\n")
        let forward = try deck("diff-schema", archive, new)
        e2eExpectSuccess(forward)
        #expect(forward.stdout.contains("add attribute Card.hint (string, optional)"))
        let tar = directory.appending("Shared.tar.gz")
        e2eExpectSuccess(try deck("export", package, "-o", tar))
        e2eExpectSuccess(try deck("diff-schema", package, tar))
        let noMigration = try deck("migrate", package, "--to", archive)
        e2eExpectSuccess(noMigration)
    }

    @Test func backwardsIsNoted() throws {
        let directory = try TemporaryDirectory()
        let (_, old, new) = try Self.schemas(in: directory) { schema in
            Self.attributes(&schema, of: "Card") { attributes in
                attributes.append(["name": "hint", "type": "string", "optional": true])
            }
        }
        // From 2.0.0 back to 1.0.0: the steps are listed, and that migrate would refuse them.
        let result = try deck("diff-schema", new, old)
        e2eExpectSuccess(result)
        #expect(
            result.stdout
                == "2.0.0 → 1.0.0: 1 step(s), all lightweight\n"
                + "  lightweight  remove attribute Card.hint (its values are deleted)\n"
                + "note: version 1.0.0 is not after 2.0.0: deck migrate refuses this direction (give the new "
                + "schema a higher version)\n")
        let json = try deck("diff-schema", new, old, "--json")
        let object = try #require(
            JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["forward"] as? Bool == false)
    }

    @Test func aStepThatNeedsACustomStageExitsOneWithTheReason() throws {
        let directory = try TemporaryDirectory()
        let (package, _, new) = try Self.schemas(in: directory) { schema in
            Self.attributes(&schema, of: "Card") { attributes in
                attributes.append(["name": "level", "type": "integer"])
            }
        }
        let result = try deck("diff-schema", package, new)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stdout.contains("1 need(s) a custom stage"))
        #expect(result.stdout.contains("  custom       add attribute Card.level (integer)\n"))
        #expect(result.stdout.contains("no default"))
    }

    @Test func badArgumentsAreRefused() throws {
        let directory = try TemporaryDirectory()
        let package = try e2eSample(in: directory)
        let usage = try deck("diff-schema", package)
        #expect(usage.status == 64 && usage.stderr.contains("Missing expected argument '<new>'"))
        e2eExpectFailure(try deck("diff-schema", package, directory.appending("none.json")), status: 66)
        let invalid = directory.appending("bad.json")
        try Data("{\"version\": 1}".utf8).write(to: URL(fileURLWithPath: invalid))
        e2eExpectFailure(try deck("diff-schema", package, invalid), status: 65)
    }
}
