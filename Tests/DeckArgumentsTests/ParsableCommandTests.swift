import DeckArguments
import DeckTestTiming
import Testing

/// A command tree declared as types: the options and arguments are the properties.
private struct Tool: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "tool", abstract: "A tool.", subcommands: [Find.self, Store.self],
            examples: [CommandExample("Find", command: "tool find x")])
    }
}

private struct Find: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(name: "find", abstract: "Find things.", discussion: "At length.")
    }

    @Argument(.place) var place: String
    @OptionGroup var filter: Filter
    @Flag("json", help: "Print JSON.") var json: Bool
}

/// Options two commands share, declared once.
private struct Filter: ParsableArguments {
    @Argument("kind", help: "The kind.") var kind: String?
    @Option("limit", short: "l", valueName: "n", help: "At most N.") var limit: Int?
    @Option("sort", short: "s", valueName: "key", help: "Sort key.") var sort: [String]
}

private struct Store: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(name: "store", abstract: "Store things.", subcommands: [Put.self])
    }
}

private struct Put: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(name: "put", abstract: "Put things.")
    }

    @Argument(.place) var place: String
    @Argument("item", help: "Items.", isOptional: true) var items: [String]
    @Option("format", valueName: "f", allowedValues: ["a", "b"], completion: .file, help: "Format.")
    var format: String?
    @Flag(.verbose) var verbose: Bool
}

extension Argument where Value == String {
    fileprivate static var place: Self { Self("place", help: "Where.", completion: .directory) }
}

extension Flag {
    fileprivate static var verbose: Flag { Flag("verbose", short: "v", help: "Say more.") }
}

@Suite("Commands declared as types", .timed)
struct ParsableCommandTests {
    private static func parse(_ arguments: [String]) throws -> any ParsableCommand {
        guard case .command(let parsed) = try ArgumentParser.parse(arguments, root: Tool.commandSpec()) else {
            throw UsageError("not a command")
        }
        return try Tool.command(for: parsed)
    }

    @Test func theSpecIsReadFromTheProperties() {
        let spec = Tool.commandSpec()
        #expect(spec.validationProblems() == [])
        #expect(spec.examples == [CommandExample("Find", command: "tool find x")])
        #expect(spec.subcommands.map(\.name) == ["find", "store"])
        let find = spec.subcommands[0]
        #expect(find.discussion == "At length.")
        #expect(
            find.arguments == [
                ArgumentSpec("place", help: "Where.", completion: .directory),
                ArgumentSpec("kind", help: "The kind.", isOptional: true),
            ])
        #expect(
            find.options == [
                .value("limit", short: "l", valueName: "n", help: "At most N."),
                .repeatable("sort", short: "s", valueName: "key", help: "Sort key."),
                .flag("json", help: "Print JSON."),
            ])
        let put = spec.command(at: ["tool", "store", "put"])
        #expect(
            put?.arguments.last == ArgumentSpec("item", help: "Items.", isOptional: true, isVariadic: true))
        #expect(
            put?.options == [
                .value(
                    "format", valueName: "f", allowedValues: ["a", "b"], completion: .file, help: "Format."),
                .flag("verbose", short: "v", help: "Say more."),
            ])
    }

    @Test func theParserFillsTheProperties() throws {
        let find = try #require(
            try Self.parse(["find", "here", "cards", "-l", "5", "--sort", "a", "-s", "b", "--json"]) as? Find)
        #expect(find.place == "here")
        #expect(find.filter.kind == "cards")
        #expect(find.filter.limit == 5)
        #expect(find.filter.sort == ["a", "b"])
        #expect(find.json)

        let bare = try #require(try Self.parse(["find", "here"]) as? Find)
        #expect(bare.filter.kind == nil)
        #expect(bare.filter.limit == nil)
        #expect(bare.filter.sort == [])
        #expect(!bare.json)

        let put = try #require(
            try Self.parse(["store", "put", "p", "x", "y", "-v", "--format", "b"]) as? Put)
        #expect(put.place == "p")
        #expect(put.items == ["x", "y"])
        #expect(put.format == "b")
        #expect(put.verbose)
    }

    @Test func aValueThatDoesNotConvertIsAUsageErrorOfItsCommand() {
        #expect(
            throws: ArgumentError(
                .invalidValue("x", for: "--limit <n>", expected: "an integer"), commandPath: ["tool", "find"])
        ) {
            _ = try Self.parse(["find", "here", "--limit", "x"])
        }
    }

    @Test func commandTypesAreFoundByPath() {
        #expect(Tool.commandType(at: ["tool", "store", "put"]) == Put.self)
        #expect(Tool.commandType(at: ["tool"]) == Tool.self)
        #expect(Tool.commandType(at: ["tool", "nothing"]) == nil)
        #expect(Tool.commandType(at: ["other"]) == nil)
    }

    @Test func outsideAParseThePropertiesAreEmpty() {
        let find = Find()
        #expect(find.place == "")
        #expect(find.filter.limit == nil)
        #expect(!find.json)
    }

    @Test func aUsageErrorBecomesAnArgumentErrorOfTheCommand() {
        let error = UsageError("--a and --b cannot be combined").argumentError(commandPath: ["tool", "find"])
        #expect(
            error == ArgumentError(.custom("--a and --b cannot be combined"), commandPath: ["tool", "find"]))
        #expect(
            HelpFormatter.errorReport(for: error, root: Tool.commandSpec()).hasPrefix(
                "Error: --a and --b cannot be combined\nUsage: tool find <place> [<kind>]"))
    }
}
