import DeckTestTiming
import Foundation
import Testing

/// `deck --version`, help in all its spellings, and command-line usage errors.
@Suite("End to end: help, version and usage errors", .timed)
struct EndToEndHelpTests {
    static let subcommands = [
        "new", "open", "inspect", "verify", "lint", "gc", "query", "insert", "update", "delete", "blob",
        "completions",
    ]

    @Test func versionPrintsNameAndVersion() throws {
        let result = try deck("--version")
        e2eExpectSuccess(result)
        #expect(result.stdout == "deck 0.1.0\n")
    }

    @Test func rootHelpListsEveryCommand() throws {
        let result = try deck("--help")
        e2eExpectSuccess(result)
        #expect(result.stdout.hasPrefix("OVERVIEW: "))
        #expect(result.stdout.contains("USAGE: deck <subcommand>"))
        #expect(result.stdout.contains("--version"))
        #expect(result.stdout.contains("-h, --help"))
        for name in Self.subcommands {
            #expect(result.stdout.contains("\n  \(name) "), "help lacks \(name)")
        }
        #expect(result.stdout.contains("See 'deck help <subcommand>' for detailed help."))
    }

    @Test func bareDeckPrintsTheRootHelp() throws {
        let bare = try deck()
        e2eExpectSuccess(bare)
        let help = try deck("--help")
        #expect(bare.stdout == help.stdout)
        #expect(bare.stdout.contains("SUBCOMMANDS:"))
    }

    @Test func helpCommandEqualsHelpFlag() throws {
        let viaCommand = try deck("help")
        e2eExpectSuccess(viaCommand)
        let viaFlag = try deck("--help")
        #expect(viaCommand.stdout == viaFlag.stdout)
        #expect(try deck("-h").stdout == viaFlag.stdout)
    }

    @Test func helpForQueryInEverySpelling() throws {
        let a = try deck("help", "query")
        let b = try deck("query", "--help")
        let c = try deck("query", "-h")
        for result in [a, b, c] {
            e2eExpectSuccess(result)
            #expect(result.stdout == a.stdout)
        }
        let text = a.stdout
        #expect(text.hasPrefix("OVERVIEW: Print the records of an entity."))
        #expect(text.contains("USAGE: deck query <path> <entity>"))
        for option in [
            "--where <expr>", "--sort <key[:desc]>", "--limit <n>", "--offset <n>", "--json", "--csv",
            "--count",
        ] {
            #expect(text.contains(option), "help lacks \(option)")
        }
        #expect(text.contains("ARGUMENTS:"))
        #expect(text.contains("EXAMPLES:"))
        // --version belongs to the root only.
        #expect(!text.contains("--version"))
    }

    @Test func helpIsAcceptedEvenWhenTheRestOfTheLineIsWrong() throws {
        let result = try deck("query", "--bogus", "--help")
        e2eExpectSuccess(result)
        #expect(result.stdout.contains("USAGE: deck query"))
    }

    @Test func helpForANestedCommand() throws {
        let result = try deck("help", "blob", "get")
        e2eExpectSuccess(result)
        #expect(result.stdout.contains("USAGE: deck blob get <path> <digest>"))
        #expect(result.stdout.contains("--output <file>"))
    }

    /// Help text is printed like any other output: it ends with a line break, so the shell prompt
    /// does not land on its last line.
    @Test(arguments: [["--help"], [], ["help", "query"], ["query", "--help"], ["blob"]])
    func helpEndsWithANewline(_ arguments: [String]) throws {
        let result = try e2eDeck(arguments)
        e2eExpectSuccess(result)
        #expect(result.stdout.hasSuffix("\n"), "help for \(arguments) does not end with a newline")
    }

    @Test func unknownCommandSuggestsTheClosestOne() throws {
        let result = try deck("qeury", "x.deck", "Card")
        e2eExpectUsageError(result, command: "deck", "Unknown subcommand 'qeury'", "Did you mean 'query'?")
    }

    @Test func unknownCommandWithoutAnyCloseMatch() throws {
        let result = try deck("zzzzzzzz")
        e2eExpectUsageError(result, command: "deck", "Unknown subcommand 'zzzzzzzz'")
        #expect(!result.stderr.contains("Did you mean"))
    }

    @Test func helpForAnUnknownCommandIsAUsageError() throws {
        let result = try deck("help", "qurey")
        e2eExpectUsageError(result, command: "deck", "Unknown subcommand 'qurey'", "Did you mean 'query'?")
    }

    @Test func unknownOptionSuggestsTheClosestOne() throws {
        let result = try deck("query", "x.deck", "Card", "--jsno")
        e2eExpectUsageError(
            result, command: "deck query", "Unknown option '--jsno'", "Did you mean '--json'?")
        #expect(result.stderr.contains("Usage: deck query <path> <entity>"))
    }

    @Test func longOptionWrittenWithOneDash() throws {
        let result = try deck("query", "x.deck", "Card", "-json")
        e2eExpectUsageError(result, command: "deck query", "Unknown option '-json'", "Did you mean '--json'?")
    }

    @Test func versionIsARootOption() throws {
        let result = try deck("query", "--version")
        e2eExpectUsageError(result, command: "deck query", "Unknown option '--version'")
    }

    @Test func missingArguments() throws {
        e2eExpectUsageError(try deck("query"), command: "deck query", "Missing expected argument '<path>'")
        e2eExpectUsageError(
            try deck("query", "x.deck"), command: "deck query", "Missing expected argument '<entity>'")
        e2eExpectUsageError(try deck("new"), command: "deck new", "Missing expected argument '<path>'")
        e2eExpectUsageError(
            try deck("blob", "get", "x.deck"), command: "deck blob get",
            "Missing expected argument '<digest>'")
    }

    @Test func missingOptionValue() throws {
        let result = try deck("query", "x.deck", "Card", "--where")
        e2eExpectUsageError(result, command: "deck query", "Missing value for option '--where <expr>'")
    }

    @Test func extraArgument() throws {
        let result = try deck("verify", "a.deck", "b.deck")
        e2eExpectUsageError(result, command: "deck verify", "Unexpected extra argument 'b.deck'")
    }

    @Test func limitMustBeAnInteger() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Card", "--limit", "abc")
        e2eExpectUsageError(
            result, command: "deck query", "Invalid value 'abc' for '--limit <n>': expected an integer")
    }

    @Test func aLimitThatIsNotAnIntegerIsRefusedBeforeThePackageIsOpened() throws {
        // Like the other usage errors the parser finds: the command line first, then the package.
        let result = try deck("query", "missing.deck", "Card", "--offset", "1.5")
        e2eExpectUsageError(
            result, command: "deck query", "Invalid value '1.5' for '--offset <n>': expected an integer")
    }

    @Test func limitMustNotBeNegative() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try deck("query", path, "Card", "--limit", "-1")
        e2eExpectUsageError(result, command: "deck query", "--limit must not be negative")
    }

    @Test func flagGivenAValue() throws {
        let result = try deck("query", "x.deck", "Card", "--json=yes")
        e2eExpectUsageError(result, command: "deck query", "Flag '--json' does not take a value")
    }

    @Test func singleValueOptionGivenTwice() throws {
        let result = try deck("query", "x.deck", "Card", "--limit", "1", "--limit", "2")
        e2eExpectUsageError(result, command: "deck query", "may only be given once")
    }

    @Test func usageErrorsComeBeforeTouchingThePackage() throws {
        // The package does not exist, but the usage error is what the user hears about.
        let directory = try TemporaryDirectory()
        let result = try deck("query", directory.appending("missing.deck"), "Card", "--nope")
        e2eExpectUsageError(result, command: "deck query", "Unknown option '--nope'")
        #expect(!FileManager.default.fileExists(atPath: directory.appending("missing.deck")))
    }
}
