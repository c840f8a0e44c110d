import DeckArguments
import DeckTestTiming
import Testing

@Suite("Argument errors", .timed)
struct ArgumentErrorTests {
    @Test(arguments: [
        // Unknown options, with and without suggestions.
        ("query p e --jsno", "Unknown option '--jsno'. Did you mean '--json'?", ["deck", "query"]),
        ("query p e --lmit=5", "Unknown option '--lmit'. Did you mean '--limit'?", ["deck", "query"]),
        ("query p e --hlep", "Unknown option '--hlep'. Did you mean '--help'?", ["deck", "query"]),
        ("query p e --zzzzzz", "Unknown option '--zzzzzz'", ["deck", "query"]),
        ("query p e -x", "Unknown option '-x'", ["deck", "query"]),
        ("query p e -qx", "Unknown option '-x'", ["deck", "query"]),
        ("query p e -json", "Unknown option '-json'. Did you mean '--json'?", ["deck", "query"]),
        ("--verison", "Unknown option '--verison'. Did you mean '--version'?", ["deck"]),
        (
            "blob get p d --outptu x", "Unknown option '--outptu'. Did you mean '--output'?",
            ["deck", "blob", "get"]
        ),
        // Unknown subcommands.
        ("qurey p e", "Unknown subcommand 'qurey'. Did you mean 'query'?", ["deck"]),
        ("hlep", "Unknown subcommand 'hlep'. Did you mean 'help'?", ["deck"]),
        ("frobnicate", "Unknown subcommand 'frobnicate'", ["deck"]),
        ("blob gte p d", "Unknown subcommand 'gte'. Did you mean 'get'?", ["deck", "blob"]),
        ("help qurey", "Unknown subcommand 'qurey'. Did you mean 'query'?", ["deck"]),
        ("help blob gt", "Unknown subcommand 'gt'. Did you mean 'get'?", ["deck", "blob"]),
        // Missing values.
        ("query p e --where", "Missing value for option '--where <expr>'", ["deck", "query"]),
        ("query p e --where --json", "Missing value for option '--where <expr>'", ["deck", "query"]),
        ("query p e --where -- x", "Missing value for option '--where <expr>'", ["deck", "query"]),
        ("query p e -l", "Missing value for option '--limit <n>'", ["deck", "query"]),
        ("query p e -ql", "Missing value for option '--limit <n>'", ["deck", "query"]),
        ("query p e --sort", "Missing value for option '--sort <key>'", ["deck", "query"]),
        // Missing and extra arguments.
        ("query", "Missing expected argument '<path>'", ["deck", "query"]),
        ("query p", "Missing expected argument '<entity>'", ["deck", "query"]),
        ("query p --json", "Missing expected argument '<entity>'", ["deck", "query"]),
        ("set p", "Missing expected argument '<assignment>'", ["deck", "set"]),
        ("blob get p", "Missing expected argument '<digest>'", ["deck", "blob", "get"]),
        ("query p e extra", "Unexpected extra argument 'extra'", ["deck", "query"]),
        ("export p out.zip more", "Unexpected extra argument 'more'", ["deck", "export"]),
        // Invalid values.
        (
            "export p --format xml",
            "Invalid value 'xml' for '--format <format>': expected one of 'zip', 'tar'", ["deck", "export"]
        ),
        (
            "export p -fxml", "Invalid value 'xml' for '--format <format>': expected one of 'zip', 'tar'",
            ["deck", "export"]
        ),
        (
            "export p --format=", "Invalid value '' for '--format <format>': expected one of 'zip', 'tar'",
            ["deck", "export"]
        ),
        // Flags given values.
        ("query p e --json=1", "Flag '--json' does not take a value (got '1')", ["deck", "query"]),
        ("query p e --json=", "Flag '--json' does not take a value (got '')", ["deck", "query"]),
        ("query --help=yes", "Flag '--help' does not take a value (got 'yes')", ["deck", "query"]),
        ("--version=2", "Flag '--version' does not take a value (got '2')", ["deck"]),
        // Repeated single-value options.
        ("query p e --limit 1 --limit 2", "Option '--limit <n>' may only be given once", ["deck", "query"]),
        ("query p e -l1 --limit=1", "Option '--limit <n>' may only be given once", ["deck", "query"]),
        ("export p -f zip -f tar", "Option '--format <format>' may only be given once", ["deck", "export"]),
    ])
    func errorMessages(line: String, message: String, path: [String]) {
        let error = parseError(line)
        #expect(error?.description == message)
        #expect(error?.commandPath == path)
    }

    @Test func errorKinds() {
        #expect(parseError("query p e --jsno")?.kind == .unknownOption("--jsno", suggestion: "--json"))
        #expect(parseError("qurey")?.kind == .unknownSubcommand("qurey", suggestion: "query"))
        #expect(parseError("query p e --where")?.kind == .missingValue(option: "--where <expr>"))
        #expect(parseError("query p")?.kind == .missingArgument("<entity>"))
        #expect(parseError("query p e f")?.kind == .unexpectedArgument("f"))
        #expect(
            parseError("export p --format 7z")?.kind
                == .invalidValue("7z", for: "--format <format>", expected: "one of 'zip', 'tar'"))
        #expect(parseError("query p e --csv=no")?.kind == .flagGivenValue(flag: "--csv", value: "no"))
        #expect(parseError("query p e --where a --where b")?.kind == .repeatedOption("--where <expr>"))
    }

    /// `""` where a file or directory goes (`-o ""`, a quoted empty variable) names no path: a
    /// usage error, not the current directory. An empty value of another kind is a value.
    @Test func anEmptyPathIsAUsageError() {
        let expected = "a path, not an empty string"
        #expect(
            parseError(["blob", "get", "p", "d", "-o", ""])?.kind
                == .invalidValue("", for: "--output <file>", expected: expected))
        #expect(
            parseError(["blob", "get", "p", "d", "--output="])?.kind
                == .invalidValue("", for: "--output <file>", expected: expected))
        #expect(
            parseError(["blob", "get", "", "d"])?.kind == .invalidValue("", for: "<path>", expected: expected)
        )
        #expect(
            parseError(["export", "p", ""])?.kind
                == .invalidValue("", for: "<destination>", expected: expected))
        #expect(parseError(["blob", "get", "p", ""]) == nil)
    }

    @Test func customMessage() {
        let error = ArgumentError(
            .custom("Choose either '--json' or '--csv'"), commandPath: ["deck", "query"])
        #expect(error.description == "Choose either '--json' or '--csv'")
        #expect("\(error)" == "Choose either '--json' or '--csv'")
    }

    @Test func errorReportFormat() throws {
        let error = try #require(parseError("query p e --jsno"))
        #expect(
            HelpFormatter.errorReport(for: error, root: SampleSpec.root) == """
                Error: Unknown option '--jsno'. Did you mean '--json'?
                Usage: deck query <path> <entity> [--where <expr>] [--sort <key> ...] [--limit <n>] \
                [--offset <n>] [--json] [--csv] [--quiet] [--verbose]
                  See 'deck query --help' for more information.
                """)
    }

    @Test func errorReportForNestedAndRootCommands() throws {
        let nested = try #require(parseError("blob get p"))
        #expect(
            HelpFormatter.errorReport(for: nested, root: SampleSpec.root) == """
                Error: Missing expected argument '<digest>'
                Usage: deck blob get <path> <digest> [--output <file>]
                  See 'deck blob get --help' for more information.
                """)
        let root = try #require(parseError("qurey"))
        #expect(
            HelpFormatter.errorReport(for: root, root: SampleSpec.root) == """
                Error: Unknown subcommand 'qurey'. Did you mean 'query'?
                Usage: deck [--no-color] <subcommand>
                  See 'deck --help' for more information.
                """)
    }

    @Test func errorReportWithUnknownPathFallsBackToKnownPrefix() {
        let error = ArgumentError(.custom("Oops"), commandPath: ["deck", "blob", "nope"])
        #expect(
            HelpFormatter.errorReport(for: error, root: SampleSpec.root) == """
                Error: Oops
                Usage: deck blob <subcommand>
                  See 'deck blob --help' for more information.
                """)
    }
}
