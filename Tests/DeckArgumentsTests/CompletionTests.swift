import DeckArguments
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// Runs shells on generated completion scripts.
enum ShellRunner {
    /// The full path of `name` on `PATH` (or in common locations), if installed.
    static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories =
            path.split(separator: ":").map(String.init) + ["/bin", "/usr/bin", "/usr/local/bin"]
        return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs `executable` with `arguments` in `directory`; returns the exit status and combined output.
    static func run(_ executable: String, _ arguments: [String], in directory: URL? = nil) throws -> (
        Int32, String
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Writes `text` to a file `name` in `directory` and returns its path.
    static func temporaryFile(_ text: String, name: String, in directory: ScratchDirectory) throws -> String {
        let file = directory.appending(name)
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }
}

/// A spec with awkward names and help texts, to exercise quoting.
private let awkwardSpec = CommandSpec(
    name: "deck-tool",
    abstract: "It's a \"tool\" with [brackets], $dollars, `ticks` and colons: here.",
    options: [
        .flag("dry-run", short: "n", help: "Don't do it; say what would happen (it's safe)."),
        .value(
            "mode", valueName: "MODE", allowedValues: ["fast", "slow:safe", "it's"],
            help: "Mode [default: fast]."),
    ],
    subcommands: [
        CommandSpec(
            name: "list-items", abstract: "List items: all of them (even 'hidden').",
            arguments: [ArgumentSpec("KIND", help: "Kind.", completion: .values(["a", "b"]))],
            options: [
                .repeatable("tag", valueName: "TAG", completion: .values(["x", "y"]), help: "Tag \\ filter.")
            ]),
        CommandSpec(name: "empty", abstract: ""),
    ])

@Suite("Completion scripts", .timed)
struct CompletionTests {
    static let hasZsh = ShellRunner.find("zsh") != nil
    static let hasFish = ShellRunner.find("fish") != nil

    @Test(arguments: [SampleSpec.root, awkwardSpec])
    func bashScriptIsSyntacticallyValid(spec: CommandSpec) throws {
        let bash = try #require(ShellRunner.find("bash"))
        let scratch = try ScratchDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let file = try ShellRunner.temporaryFile(
            CompletionScript.generate(for: spec, shell: .bash), name: "deck.bash", in: scratch)
        let (status, output) = try ShellRunner.run(bash, ["-n", file])
        #expect(status == 0, "\(output)")
    }

    @Test(.enabled(if: hasZsh, "zsh is not installed"), arguments: [SampleSpec.root, awkwardSpec])
    func zshScriptIsSyntacticallyValid(spec: CommandSpec) throws {
        let zsh = try #require(ShellRunner.find("zsh"))
        let scratch = try ScratchDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let file = try ShellRunner.temporaryFile(
            CompletionScript.generate(for: spec, shell: .zsh), name: "_deck", in: scratch)
        let (status, output) = try ShellRunner.run(zsh, ["-n", file])
        #expect(status == 0, "\(output)")
    }

    @Test(.enabled(if: hasFish, "fish is not installed"), arguments: [SampleSpec.root, awkwardSpec])
    func fishScriptIsSyntacticallyValid(spec: CommandSpec) throws {
        let fish = try #require(ShellRunner.find("fish"))
        let scratch = try ScratchDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let file = try ShellRunner.temporaryFile(
            CompletionScript.generate(for: spec, shell: .fish), name: "deck.fish", in: scratch)
        let (status, output) = try ShellRunner.run(fish, ["--no-execute", file])
        #expect(status == 0, "\(output)")
    }

    /// Completes `words` (the last one being the word under the cursor) with the generated bash script.
    private func bashComplete(_ words: [String], spec: CommandSpec = SampleSpec.root) throws -> [String] {
        let bash = try #require(ShellRunner.find("bash"))
        let script = CompletionScript.generate(for: spec, shell: .bash)
        let scratch = try ScratchDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let file = try ShellRunner.temporaryFile(script, name: "deck.bash", in: scratch)
        let directory = URL(fileURLWithPath: file).deletingLastPathComponent()
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("notes.deck"), withIntermediateDirectories: true)
        try Data().write(to: directory.appendingPathComponent("notes.zip"))
        let quotedWords = words.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let function = "_" + spec.name.replacingOccurrences(of: "-", with: "_")
        let driver = """
            source \(file)
            COMP_WORDS=(\(quotedWords.joined(separator: " ")))
            COMP_CWORD=\(words.count - 1)
            \(function)
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let (status, output) = try ShellRunner.run(bash, ["-c", driver], in: directory)
        #expect(status == 0, "\(output)")
        return output.split(separator: "\n").map(String.init).sorted()
    }

    @Test func bashCompletesSubcommands() throws {
        #expect(try bashComplete(["deck", ""]) == ["blob", "export", "help", "query", "set"])
        #expect(try bashComplete(["deck", "qu"]) == ["query"])
        #expect(try bashComplete(["deck", "--no-color", "qu"]) == ["query"])
        #expect(try bashComplete(["deck", "blob", ""]) == ["get"])
        #expect(try bashComplete(["deck", "help", ""]) == ["blob", "export", "query", "set"])
    }

    @Test func bashCompletesOptions() throws {
        #expect(try bashComplete(["deck", "-"]) == ["--help", "--no-color", "--version"])
        #expect(try bashComplete(["deck", "query", "--w"]) == ["--where"])
        #expect(try bashComplete(["deck", "query", "notes.deck", "--l"]) == ["--limit"])
        #expect(try bashComplete(["deck", "blob", "get", "--"]) == ["--help", "--output"])
    }

    @Test func bashCompletesAllowedValues() throws {
        #expect(try bashComplete(["deck", "export", "p", "--format", ""]) == ["tar", "zip"])
        #expect(try bashComplete(["deck", "export", "p", "-f", "t"]) == ["tar"])
        // `--format=` is split into three words by bash's COMP_WORDBREAKS.
        #expect(try bashComplete(["deck", "export", "p", "--format", "=", "z"]) == ["zip"])
        #expect(try bashComplete(["deck", "export", "p", "--format", "="]) == ["tar", "zip"])
    }

    @Test func bashCompletesFilesAndDirectoriesByPosition() throws {
        #expect(try bashComplete(["deck", "query", "no"]) == ["notes.deck"])
        #expect(try bashComplete(["deck", "query", "--limit", "5", "notes.deck", "no"]) == [])
        #expect(try bashComplete(["deck", "export", "notes.deck", "no"]) == ["notes.deck", "notes.zip"])
        #expect(try bashComplete(["deck", "blob", "get", "-o", "notes.z"]) == ["notes.zip"])
        #expect(try bashComplete(["deck", "blob", "get", "--output", "=", "x", "no"]) == ["notes.deck"])
        #expect(try bashComplete(["deck", "query", "--where", "no"]) == [])
        #expect(try bashComplete(["deck", "set", "notes.deck", "a=1", "no"]) == [])
    }

    @Test func bashHandlesAwkwardNames() throws {
        #expect(try bashComplete(["deck-tool", "li"], spec: awkwardSpec) == ["list-items"])
        #expect(
            try bashComplete(["deck-tool", "--mode", ""], spec: awkwardSpec) == ["fast", "it's", "slow:safe"])
        #expect(try bashComplete(["deck-tool", "list-items", ""], spec: awkwardSpec) == ["a", "b"])
        #expect(try bashComplete(["deck-tool", "list-items", "--tag", ""], spec: awkwardSpec) == ["x", "y"])
    }

    @Test func bashContent() {
        let script = CompletionScript.generate(for: SampleSpec.root, shell: .bash)
        #expect(script.hasPrefix("# bash completion for deck"))
        #expect(script.hasSuffix("complete -F _deck 'deck'\n"))
        for word in [
            "'query'", "'blob'", "'get'", "'export'", "'set'", "--where", "--sort", "--limit", "--json",
            "--output", "'zip tar'", "__deck_directories", "__deck_files",
        ] {
            #expect(script.contains(word), "missing \(word)")
        }
    }

    @Test func zshContent() {
        let script = CompletionScript.generate(for: SampleSpec.root, shell: .zsh)
        #expect(script.hasPrefix("#compdef deck\n"))
        let expected = [
            "_deck() {", "_deck_query() {", "_deck_blob() {", "_deck_blob_get() {",
            "'query:RecordQuery entities in a Deck package.'",
            "'get:Write a blob to standard output or a file.'",
            "'help:Show help information for a subcommand.'",
            "'--where=[Only include rows matching this expression.]:expr: '",
            "'*'{-s+,--sort=}'[Sort by this attribute.]:key: '",
            "'(-l --limit)'{-l+,--limit=}'[Print at most this many rows.]:n: '",
            "'--json[Print the rows as JSON.]'",
            "'(-f --format)'{-f+,--format=}'[Archive format.]:format:(zip tar)'",
            "{-o+,--output=}'[Write to FILE ('\\''-'\\'' for stdout).]:file:_files'",
            "':path:_files -/'", "'::destination:_files'", "'*:assignment: '",
            "'--version[Show the version.]'",
            "'(-h --help)'{-h,--help}'[Show help information.]'",
            "compdef _deck 'deck'",
        ]
        for fragment in expected {
            #expect(script.contains(fragment), "missing \(fragment)")
        }
        #expect(!script.contains("_deck_query() {\n    local curcontext"))
    }

    @Test func zshEscapesAwkwardText() {
        let script = CompletionScript.generate(for: awkwardSpec, shell: .zsh)
        #expect(
            script.contains(
                "'(-n --dry-run)'{-n,--dry-run}'[Don'\\''t do it; say what would happen (it'\\''s safe).]'"))
        #expect(script.contains("'--mode=[Mode \\[default: fast\\].]:mode:(fast slow\\:safe it\\'\\''s)'"))
        #expect(script.contains("'list-items:List items: all of them (even '\\''hidden'\\'').'"))
        #expect(script.contains("_deck_tool_list_items() {"))
    }

    @Test func fishContent() {
        let script = CompletionScript.generate(for: SampleSpec.root, shell: .fish)
        let expected = [
            "complete -c 'deck' -f",
            "complete -c 'deck' -n '__deck_using_command deck' -a 'query' -d 'RecordQuery entities in a Deck",
            "complete -c 'deck' -n '__deck_using_command deck blob' -a 'get'",
            "complete -c 'deck' -n '__deck_using_command deck help' -a 'query blob export set'",
            "complete -c 'deck' -n '__deck_using_command deck query' -l 'where' -x -d",
            "complete -c 'deck' -n '__deck_using_command deck query' -s 's' -l 'sort' -x",
            "complete -c 'deck' -n '__deck_using_command deck query' -s 'l' -l 'limit' -x",
            "complete -c 'deck' -n '__deck_using_command deck query' -l 'json' -d 'Print the rows as JSON.'",
            "complete -c 'deck' -n '__deck_using_command deck export' -s 'f' -l 'format' -x -a 'zip tar'",
            "complete -c 'deck' -n '__deck_using_command deck blob get' -s 'o' -l 'output' -r -F",
            "complete -c 'deck' -n '__deck_using_command deck query' -a '(__fish_complete_directories)'",
            "complete -c 'deck' -n '__deck_using_command deck export' -F",
            "complete -c 'deck' -n '__deck_using_command deck' -l version",
            "complete -c 'deck' -n '__deck_using_command deck blob get' -s h -l help",
            "contains -- $argv[2] '--where' '--sort' '-s' '--limit' '-l' '--offset'",
        ]
        for fragment in expected {
            #expect(script.contains(fragment), "missing \(fragment)")
        }
    }

    @Test func fishEscapesAwkwardText() {
        let script = CompletionScript.generate(for: awkwardSpec, shell: .fish)
        #expect(script.contains("-d 'Don\\'t do it; say what would happen (it\\'s safe).'"))
        #expect(script.contains("-l 'tag' -x -a 'x y' -d 'Tag \\\\ filter.'"))
        #expect(script.contains("function __deck_tool_command_path"))
    }

    @Test func everyShellIsSupported() {
        for shell in CompletionShell.allCases {
            let script = CompletionScript.generate(for: SampleSpec.root, shell: shell)
            #expect(script.hasSuffix("\n"))
            #expect(script.contains("query") && script.contains("blob") && script.contains("get"))
        }
        #expect(CompletionShell(rawValue: "zsh") == .zsh)
        #expect(CompletionShell.allCases.map(\.rawValue) == ["bash", "zsh", "fish"])
    }
}
