import DeckArguments
import DeckTestTiming
import Testing

@Suite("Command specs", .timed)
struct CommandSpecTests {
    @Test func sampleSpecIsValid() {
        #expect(SampleSpec.root.validationProblems() == [])
        #expect(HelpFormatterTests.briefRoot.validationProblems() == [])
    }

    @Test func reportsProblems() {
        let bad = CommandSpec(
            name: "deck", abstract: "",
            options: [
                .flag("json", help: ""), .flag("json", help: ""), .flag("help", help: ""),
                .flag("version", help: ""), .flag("x", short: "h", help: ""),
                .flag("y", short: "1", help: ""),
                .flag("z", short: "q", help: ""), .flag("w", short: "q", help: ""), .flag("--bad", help: ""),
                OptionSpec(long: "f", kind: .flag, allowedValues: ["a"], help: ""),
            ],
            subcommands: [
                CommandSpec(
                    name: "query", abstract: "",
                    arguments: [
                        ArgumentSpec("A", help: "", isVariadic: true),
                        ArgumentSpec("B", help: "", isOptional: true),
                        ArgumentSpec("C", help: ""), ArgumentSpec("C", help: ""),
                    ],
                    options: [.flag("json", help: ""), .flag("version", help: "")]),
                CommandSpec(name: "query", abstract: ""),
                CommandSpec(name: "help", abstract: ""),
                CommandSpec(
                    name: "group", abstract: "", arguments: [ArgumentSpec("X", help: "")],
                    subcommands: [CommandSpec(name: "-x", abstract: "")]),
            ])
        let problems = bad.validationProblems()
        let expected = [
            "'deck': duplicate option '--json'",
            "'deck': option '--help' is reserved",
            "'deck': option '--version' is reserved",
            "'deck': invalid or reserved short option '-h'",
            "'deck': invalid or reserved short option '-1'",
            "'deck': duplicate short option '-q'",
            "'deck': invalid long option name '--bad'",
            "'deck': flag '--f' cannot have allowed values",
            "'deck query': only the last argument may be variadic ('A')",
            "'deck query': required argument 'C' follows an optional one",
            "'deck query': duplicate argument 'C'",
            "'deck query': option '--json' shadows an option of a parent command",
            "'deck': duplicate subcommand 'query'",
            "'deck': subcommand name 'help' is reserved",
            "'deck group': a command with subcommands cannot have positional arguments",
            "'deck group': invalid subcommand name '-x'",
        ]
        for message in expected {
            #expect(problems.contains(message), "missing: \(message)")
        }
        // `--version` is only reserved on the root.
        #expect(!problems.contains("'deck query': option '--version' is reserved"))
    }

    @Test func lookups() {
        let root = SampleSpec.root
        #expect(root.command(at: ["deck", "blob", "get"])?.name == "get")
        #expect(root.command(at: ["deck"])?.name == "deck")
        #expect(root.command(at: ["deck", "nope"]) == nil)
        #expect(root.command(at: ["other"]) == nil)
        #expect(root.command(at: []) == nil)
        #expect(root.subcommand(named: "query")?.abstract == "RecordQuery entities in a Deck package.")
        #expect(SampleSpec.query.option(named: "limit")?.short == "l")
        #expect(SampleSpec.query.option(named: "nope") == nil)
    }

    @Test func displayNames() {
        #expect(OptionSpec.flag("json", help: "").displayName == "--json")
        #expect(OptionSpec.value("limit", valueName: "N", help: "").displayName == "--limit <n>")
        #expect(OptionSpec.repeatable("sort", valueName: "KEY", help: "").displayName == "--sort <key>")
        #expect(ArgumentSpec("PATH", help: "").displayName == "<path>")
        #expect(OptionKind.flag.valueName == nil)
        #expect(OptionKind.repeatable(valueName: "K").valueName == "K")
    }

    @Test func effectiveCompletion() {
        #expect(
            OptionSpec.value("f", valueName: "F", allowedValues: ["a"], completion: .file, help: "")
                .effectiveCompletion
                == .values(["a"]))
        #expect(
            OptionSpec.value("f", valueName: "F", completion: .file, help: "").effectiveCompletion == .file)
        #expect(OptionSpec.value("f", valueName: "F", help: "").effectiveCompletion == CompletionHint.none)
    }
}
