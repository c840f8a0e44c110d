import DeckArguments
import DeckTestTiming
import Testing

@Suite("Help rendering", .timed)
struct HelpFormatterTests {
    /// The sample tree from the brief: `query` and `blob get` only.
    static let briefRoot = CommandSpec(
        name: "deck",
        abstract: "Create, query and manage Deck document packages.",
        subcommands: [
            CommandSpec(
                name: "query",
                abstract: "RecordQuery entities in a Deck package.",
                arguments: [
                    ArgumentSpec("PATH", help: "Path to the .deck package."),
                    ArgumentSpec("ENTITY", help: "Name of the entity to query."),
                ],
                options: [
                    .value("where", valueName: "EXPR", help: "Only include rows matching this expression."),
                    .repeatable("sort", valueName: "KEY", help: "Sort by this attribute."),
                    .value("limit", short: "l", valueName: "N", help: "Print at most this many rows."),
                    .flag("json", help: "Print the rows as JSON."),
                    .flag("csv", help: "Print the rows as CSV."),
                ]),
            SampleSpec.blob,
        ])

    @Test func rootHelp() {
        #expect(
            HelpFormatter.help(for: ["deck"], root: Self.briefRoot) == """
                OVERVIEW: Create, query and manage Deck document packages.

                USAGE: deck <subcommand>

                OPTIONS:
                  --version               Show the version.
                  -h, --help              Show help information.

                SUBCOMMANDS:
                  query                   RecordQuery entities in a Deck package.
                  blob                    Work with blobs stored in a package.

                  See 'deck help <subcommand>' for detailed help.
                """)
    }

    @Test func queryHelp() {
        #expect(
            HelpFormatter.help(for: ["deck", "query"], root: Self.briefRoot) == """
                OVERVIEW: RecordQuery entities in a Deck package.

                USAGE: deck query <path> <entity> [--where <expr>] [--sort <key> ...]
                                  [--limit <n>] [--json] [--csv]

                ARGUMENTS:
                  <path>                  Path to the .deck package.
                  <entity>                Name of the entity to query.

                OPTIONS:
                  --where <expr>          Only include rows matching this expression.
                  --sort <key>            Sort by this attribute. (may be repeated)
                  -l, --limit <n>         Print at most this many rows.
                  --json                  Print the rows as JSON.
                  --csv                   Print the rows as CSV.
                  -h, --help              Show help information.
                """)
    }

    @Test func nestedGroupHelp() {
        #expect(
            HelpFormatter.help(for: ["deck", "blob"], root: Self.briefRoot) == """
                OVERVIEW: Work with blobs stored in a package.

                USAGE: deck blob <subcommand>

                OPTIONS:
                  -h, --help              Show help information.

                SUBCOMMANDS:
                  get                     Write a blob to standard output or a file.

                  See 'deck help blob <subcommand>' for detailed help.
                """)
    }

    @Test func nestedLeafHelp() {
        #expect(
            HelpFormatter.help(for: ["deck", "blob", "get"], root: Self.briefRoot) == """
                OVERVIEW: Write a blob to standard output or a file.

                USAGE: deck blob get <path> <digest> [--output <file>]

                ARGUMENTS:
                  <path>                  Path to the .deck package.
                  <digest>                Digest of the blob.

                OPTIONS:
                  -o, --output <file>     Write to FILE ('-' for stdout).
                  -h, --help              Show help information.
                """)
    }

    @Test func discussionExamplesAllowedValuesOptionalAndVariadic() {
        #expect(
            HelpFormatter.help(for: ["deck", "query"], root: SampleSpec.root).contains(
                """
                OVERVIEW: RecordQuery entities in a Deck package.

                Prints the matching entities as a table, or as JSON or CSV. Filters use the Deck
                expression language; several sort keys may be given.

                USAGE: deck query
                """))
        #expect(
            HelpFormatter.help(for: ["deck", "query"], root: SampleSpec.root).hasSuffix(
                """
                  -h, --help              Show help information.

                EXAMPLES:
                  List open tasks as JSON:
                    deck query notes.deck Task --where 'done == false' --json
                """))
        #expect(
            HelpFormatter.help(for: ["deck", "export"], root: SampleSpec.root) == """
                OVERVIEW: Export a package as an archive.

                USAGE: deck export <path> [<destination>] [--format <format>]

                ARGUMENTS:
                  <path>                  Path to the .deck package.
                  <destination>           Archive file to write.

                OPTIONS:
                  -f, --format <format>   Archive format. (values: zip, tar)
                  -h, --help              Show help information.
                """)
        #expect(
            HelpFormatter.help(for: ["deck", "set"], root: SampleSpec.root).contains(
                """
                USAGE: deck set <path> <assignment> ...

                ARGUMENTS:
                  <path>                  Path to the .deck package.
                  <assignment> ...        Assignments of the form key=value.
                """))
    }

    @Test func usageLines() {
        let root = Self.briefRoot
        #expect(HelpFormatter.usage(for: ["deck"], root: root) == "Usage: deck <subcommand>")
        #expect(
            HelpFormatter.usage(for: ["deck", "query"], root: root)
                == "Usage: deck query <path> <entity> [--where <expr>] [--sort <key> ...] [--limit <n>] "
                + "[--json] [--csv]")
        #expect(HelpFormatter.usage(for: ["deck", "blob"], root: root) == "Usage: deck blob <subcommand>")
        #expect(
            HelpFormatter.usage(for: ["deck", "blob", "get"], root: root)
                == "Usage: deck blob get <path> <digest> [--output <file>]")
        #expect(
            HelpFormatter.usage(for: ["deck", "export"], root: SampleSpec.root)
                == "Usage: deck export <path> [<destination>] [--format <format>]")
        #expect(
            HelpFormatter.usage(for: ["deck", "set"], root: SampleSpec.root)
                == "Usage: deck set <path> <assignment> ...")
        let optionalVariadic = CommandSpec(
            name: "tool", abstract: "A tool.",
            arguments: [ArgumentSpec("FILE", help: "Files.", isOptional: true, isVariadic: true)])
        #expect(HelpFormatter.usage(for: ["tool"], root: optionalVariadic) == "Usage: tool [<file> ...]")
    }

    @Test func longTextWrapsAt80ColumnsWithAlignedDescriptions() {
        let spec = CommandSpec(
            name: "deck",
            abstract: String(repeating: "Overview words wrap nicely. ", count: 6),
            discussion: String(repeating: "Discussion text is reflowed. ", count: 6)
                + "\n\nExample block:\n\n    deck query notes.deck Task --json"
                + "\n    deck query notes.deck Note",
            options: [
                .value(
                    "a-very-long-option-name", short: "a", valueName: "VALUE",
                    help: String(repeating: "This description goes on and on. ", count: 5)),
                .flag("b", help: "Short."),
            ])
        let help = HelpFormatter.help(for: ["deck"], root: spec)
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        for line in lines {
            #expect(line.count <= 80, "too long: \(line)")
            #expect(line.last != " ", "trailing space: \(line)")
        }
        #expect(lines[0].hasPrefix("OVERVIEW: Overview words wrap nicely."))
        #expect(lines[1].hasPrefix(String(repeating: " ", count: 10)))
        #expect(lines[1].dropFirst(10).first?.isLetter == true)
        #expect(help.contains("\n    deck query notes.deck Task --json\n    deck query notes.deck Note\n"))
        // A label wider than the column puts the description on the next line, aligned at column 26.
        #expect(
            help.contains(
                "\n  -a, --a-very-long-option-name <value>\n                          This description"))
        let descriptionLines = lines.filter { $0.hasPrefix(String(repeating: " ", count: 26) + "This") }
        #expect(descriptionLines.count == 1)
        #expect(help.contains("\n  --b                     Short.\n"))
    }

    @Test func unknownHelpPathFallsBackToKnownPrefix() {
        #expect(
            HelpFormatter.help(for: ["deck", "nope"], root: Self.briefRoot)
                == HelpFormatter.help(for: ["deck"], root: Self.briefRoot))
    }

    @Test func rendersHelpForEveryParsedHelpRequest() throws {
        guard case .help(let path) = try parseSample("help blob get") else {
            Issue.record("expected help")
            return
        }
        #expect(HelpFormatter.help(for: path, root: SampleSpec.root).hasPrefix("OVERVIEW: Write a blob"))
    }
}
