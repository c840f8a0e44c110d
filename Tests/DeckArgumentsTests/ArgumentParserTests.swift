import DeckArguments
import DeckTestTiming
import Testing

@Suite("Argument parsing", .timed)
struct ArgumentParserTests {
    @Test func positionalsAndCommandPath() throws {
        let command = try #require(parsedCommand("query notes.deck Task"))
        #expect(command.commandPath == ["deck", "query"])
        #expect(command.subcommandPath == ["query"])
        #expect(command.positional("PATH") == "notes.deck")
        #expect(command.positional("ENTITY") == "Task")
        #expect(command.positionals("PATH") == ["notes.deck"])
        #expect(command.flag("json") == false)
        #expect(command.value("where") == nil)
        #expect(command.values("sort") == [])
        #expect(command.isGiven("where") == false)
        #expect(command.isGiven("json") == false)
    }

    @Test(arguments: [
        ["query", "p", "e", "--where=done == false"],
        ["query", "p", "e", "--where", "done == false"],
        ["query", "--where", "done == false", "p", "e"],
        ["query", "p", "--where=done == false", "e"],
    ])
    func longOptionValueForms(arguments: [String]) throws {
        let command = try #require(parsedCommand(arguments))
        #expect(command.value("where") == "done == false")
        #expect(command.isGiven("where"))
        #expect(command.positional("PATH") == "p")
        #expect(command.positional("ENTITY") == "e")
    }

    @Test(arguments: [
        "query p e -l 5", "query p e -l5", "query p e --limit=5", "query p e --limit 5", "query -l5 p e",
    ])
    func shortAndLongValueForms(line: String) throws {
        let command = try #require(parsedCommand(line))
        #expect(command.value("limit") == "5")
        #expect(try command.value("limit", as: Int.self) == 5)
    }

    @Test func emptyInlineValueIsAValue() throws {
        let command = try #require(parsedCommand("query p e --where="))
        #expect(command.value("where") == "")
    }

    @Test func inlineValueMayContainEqualsSigns() throws {
        let command = try #require(parsedCommand("query p e --where=a=b"))
        #expect(command.value("where") == "a=b")
    }

    @Test func combinedShortFlags() throws {
        let command = try #require(parsedCommand("query -qv p e"))
        #expect(command.flag("quiet"))
        #expect(command.flag("verbose"))
        #expect(!command.flag("json"))
    }

    @Test(arguments: ["query -qvl5 p e", "query -qvl 5 p e", "query -q -v -l5 p e"])
    func combinedShortFlagsEndingInValueOption(line: String) throws {
        let command = try #require(parsedCommand(line))
        #expect(command.flag("quiet") && command.flag("verbose"))
        #expect(command.value("limit") == "5")
        #expect(command.positional("ENTITY") == "e")
    }

    @Test func repeatedFlagIsAccepted() throws {
        let command = try #require(parsedCommand("query p e --json --json"))
        #expect(command.flag("json"))
    }

    @Test func repeatableOptionCollectsInOrder() throws {
        let command = try #require(parsedCommand("query --sort name p -s=x -sdate e --sort=-size"))
        #expect(command.values("sort") == ["name", "=x", "date", "-size"])
        #expect(command.value("sort") == "-size")
    }

    @Test func optionsInterleavedWithPositionals() throws {
        let command = try #require(parsedCommand("query --json p --limit 3 e --csv"))
        #expect(command.flag("json") && command.flag("csv"))
        #expect(command.value("limit") == "3")
        #expect(command.positional("PATH") == "p")
        #expect(command.positional("ENTITY") == "e")
    }

    @Test func doubleDashEndsOptions() throws {
        let command = try #require(parsedCommand("query --csv -- --json -h"))
        #expect(command.flag("csv"))
        #expect(!command.flag("json"))
        #expect(command.positional("PATH") == "--json")
        #expect(command.positional("ENTITY") == "-h")
    }

    @Test func secondDoubleDashIsPositional() throws {
        let command = try #require(parsedCommand("query -- p --"))
        #expect(command.positional("ENTITY") == "--")
    }

    @Test func loneDashIsPositional() throws {
        let command = try #require(parsedCommand("query - Task"))
        #expect(command.positional("PATH") == "-")
    }

    @Test func loneDashIsAnOptionValue() throws {
        let command = try #require(parsedCommand("blob get p abc123 -o -"))
        #expect(command.commandPath == ["deck", "blob", "get"])
        #expect(command.subcommandPath == ["blob", "get"])
        #expect(command.value("output") == "-")
        #expect(command.positional("DIGEST") == "abc123")
    }

    @Test func keyValueArgumentsStayPositional() throws {
        let command = try #require(
            parsedCommand(["set", "p", "title=Hello", "count=-1", "note=--x", "a==b"]))
        #expect(command.positionals("ASSIGNMENT") == ["title=Hello", "count=-1", "note=--x", "a==b"])
        #expect(command.positional("ASSIGNMENT") == "title=Hello")
    }

    @Test(arguments: [
        ("query p e --offset -1", "-1"),
        ("query p e --offset=-1", "-1"),
        ("query p e --offset -2.5", "-2.5"),
        ("query p e --offset -.5", "-.5"),
        ("query p e --offset -0", "-0"),
    ])
    func negativeNumbersAreOptionValues(line: String, expected: String) throws {
        let command = try #require(parsedCommand(line))
        #expect(command.value("offset") == expected)
    }

    @Test func negativeNumbersAreTypedValues() throws {
        let command = try #require(parsedCommand("query p e --offset -12 -l -3"))
        #expect(try command.value("offset", as: Int.self) == -12)
        #expect(try command.value("limit", as: Int.self) == -3)
    }

    @Test func negativeNumbersArePositionals() throws {
        let command = try #require(parsedCommand("set p -1 -2.5"))
        #expect(command.positionals("ASSIGNMENT") == ["-1", "-2.5"])
    }

    @Test func optionalArgument() throws {
        let without = try #require(parsedCommand("export p"))
        #expect(without.positional("DESTINATION") == nil)
        #expect(without.positionals("DESTINATION") == [])
        let with = try #require(parsedCommand("export p out.zip --format zip"))
        #expect(with.positional("DESTINATION") == "out.zip")
        #expect(with.value("format") == "zip")
    }

    @Test func parentOptionBeforeSubcommand() throws {
        let command = try #require(parsedCommand("--no-color query p e"))
        #expect(command.flag("no-color"))
        let plain = try #require(parsedCommand("query p e"))
        #expect(!plain.flag("no-color"))
    }

    @Test func rootOptionsAreNotAcceptedAfterSubcommand() {
        #expect(parseError("query p e --no-color")?.description == "Unknown option '--no-color'")
    }

    // MARK: Help and version

    @Test(arguments: [
        ("", ["deck"]),
        ("--help", ["deck"]),
        ("-h", ["deck"]),
        ("help", ["deck"]),
        ("--help query", ["deck"]),
        ("help query", ["deck", "query"]),
        ("help blob get", ["deck", "blob", "get"]),
        ("help blob --help", ["deck", "blob"]),
        ("query --help", ["deck", "query"]),
        ("query -h", ["deck", "query"]),
        ("query p e --json --help", ["deck", "query"]),
        ("query -qh", ["deck", "query"]),
        ("query --jsno --help", ["deck", "query"]),
        ("query p e extra -h", ["deck", "query"]),
        ("query --where -h", ["deck", "query"]),
        ("blob", ["deck", "blob"]),
        ("blob --help", ["deck", "blob"]),
        ("blob get -h", ["deck", "blob", "get"]),
        ("--no-color blob", ["deck", "blob"]),
    ])
    func helpRequests(line: String, path: [String]) throws {
        #expect(try parseSample(line) == .help(path))
    }

    @Test func helpAfterDoubleDashIsPositional() throws {
        let command = try #require(parsedCommand("query p -- --help"))
        #expect(command.positional("ENTITY") == "--help")
    }

    @Test func version() throws {
        #expect(try parseSample("--version") == .version)
        #expect(try parseSample("--no-color --version") == .version)
        #expect(parseError("query --version")?.description == "Unknown option '--version'")
    }

    // MARK: Typed access

    @Test func typedValues() throws {
        let command = try #require(parsedCommand("query p e --limit 10 --offset 2.5 -s 3 -s 4"))
        #expect(try command.value("limit", as: Int.self) == 10)
        #expect(try command.value("offset", as: Double.self) == 2.5)
        #expect(try command.values("sort", as: Int.self) == [3, 4])
        #expect(try command.value("where", as: Int.self) == nil)
        #expect(try command.values("sort", as: String.self) == ["3", "4"])
    }

    @Test func typedPositionals() throws {
        let command = try #require(parsedCommand("set 7 1 2 3"))
        #expect(try command.positional("PATH", as: Int.self) == 7)
        #expect(try command.positionals("ASSIGNMENT", as: Int.self) == [1, 2, 3])
        let export = try #require(parsedCommand("export p"))
        #expect(try export.positional("DESTINATION", as: Int.self) == nil)
    }

    @Test(arguments: [
        ("query p e --limit abc", "Invalid value 'abc' for '--limit <n>': expected an integer"),
        ("query p e --limit 1.5", "Invalid value '1.5' for '--limit <n>': expected an integer"),
        ("query p e --limit=", "Invalid value '' for '--limit <n>': expected an integer"),
    ])
    func typedValueErrors(line: String, message: String) throws {
        let command = try #require(parsedCommand(line))
        do {
            _ = try command.value("limit", as: Int.self)
            Issue.record("expected an error")
        } catch {
            #expect(error.description == message)
            #expect(error.commandPath == ["deck", "query"])
        }
    }

    @Test func typedErrorDescriptions() throws {
        let command = try #require(parsedCommand("query p e --where x --offset y -s 1 -s z"))
        #expect(
            throws: ArgumentError(
                .invalidValue("y", for: "--offset <n>", expected: "a number"), commandPath: ["deck", "query"])
        ) {
            try command.value("offset", as: Double.self)
        }
        #expect(
            throws: ArgumentError(
                .invalidValue("x", for: "--where <expr>", expected: "a non-negative integer"),
                commandPath: ["deck", "query"])
        ) {
            try command.value("where", as: UInt.self)
        }
        #expect(
            throws: ArgumentError(
                .invalidValue("x", for: "--where <expr>", expected: "'true' or 'false'"),
                commandPath: ["deck", "query"])
        ) {
            try command.value("where", as: Bool.self)
        }
        #expect(
            throws: ArgumentError(
                .invalidValue("z", for: "--sort <key>", expected: "an integer"),
                commandPath: ["deck", "query"])
        ) {
            try command.values("sort", as: Int.self)
        }
        #expect(
            throws: ArgumentError(
                .invalidValue("p", for: "<path>", expected: "an integer"), commandPath: ["deck", "query"])
        ) {
            try command.positional("PATH", as: Int.self)
        }
        #expect(
            throws: ArgumentError(
                .invalidValue("x", for: "--where <expr>", expected: "a value of type Int8"),
                commandPath: ["deck", "query"])
        ) {
            try command.value("where", as: Int8.self)
        }
    }

    @Test func customTypeDescription() throws {
        let command = try #require(parsedCommand("query p e --where soon"))
        #expect(
            throws: ArgumentError(
                .invalidValue("soon", for: "--where <expr>", expected: "a weekday such as 'mon'"),
                commandPath: ["deck", "query"])
        ) {
            try command.value("where", as: Weekday.self)
        }
        #expect(
            try parsedCommand("query p e --where tue")?.value("where", as: Weekday.self)
                == Weekday(rawValue: "tue"))
    }

    @Test func usageErrorCarriesCommandPath() throws {
        let command = try #require(parsedCommand("query p e --json --csv"))
        let error = command.usageError("'--json' and '--csv' cannot be used together")
        #expect(error.description == "'--json' and '--csv' cannot be used together")
        #expect(error.commandPath == ["deck", "query"])
    }

    @Test func undeclaredNameIsAProgrammerError() async {
        await #expect(processExitsWith: .failure) {
            let command = parsedCommand("query p e")
            _ = command?.flag("nonexistent")
        }
        await #expect(processExitsWith: .failure) {
            _ = parsedCommand("query p e")?.value("json")
        }
        await #expect(processExitsWith: .failure) {
            _ = parsedCommand("query p e")?.positional("NOPE")
        }
    }

    @Test func looksLikeOption() {
        #expect(ArgumentParser.looksLikeOption("--json"))
        #expect(ArgumentParser.looksLikeOption("-q"))
        #expect(ArgumentParser.looksLikeOption("--"))
        #expect(ArgumentParser.looksLikeOption("-1x"))
        #expect(!ArgumentParser.looksLikeOption("-"))
        #expect(!ArgumentParser.looksLikeOption("-1"))
        #expect(!ArgumentParser.looksLikeOption("-1e3"))
        #expect(!ArgumentParser.looksLikeOption("key=-v"))
        #expect(!ArgumentParser.looksLikeOption("file"))
    }
}

/// A custom value type for the typed-conversion tests.
private struct Weekday: LosslessStringConvertible, ArgumentValueDescribing, Equatable {
    static let expectedArgumentDescription = "a weekday such as 'mon'"
    let rawValue: String

    init?(rawValue: String) {
        guard ["mon", "tue", "wed", "thu", "fri", "sat", "sun"].contains(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    init?(_ description: String) {
        self.init(rawValue: description)
    }

    var description: String { rawValue }
}
