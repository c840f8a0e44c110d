import DeckTestTiming
import Foundation
import Testing

/// `deck completions SHELL`.
@Suite("End to end: deck completions", .timed)
struct EndToEndCompletionsTests {
    /// The path of an installed program, if any.
    static func program(_ name: String) -> String? {
        ["/bin", "/usr/bin", "/usr/local/bin"].map { "\($0)/\(name)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func scriptForEachShell(_ shell: String) throws {
        let result = try deck("completions", shell)
        e2eExpectSuccess(result)
        #expect(!result.stdout.isEmpty)
        #expect(result.stdout.hasSuffix("\n"))
        for command in ["query", "insert", "verify", "completions"] {
            #expect(result.stdout.contains(command), "\(shell) script lacks \(command)")
        }
        #expect(result.stdout.contains("--where"))
    }

    @Test func unknownShell() throws {
        let result = try deck("completions", "tcsh")
        e2eExpectUsageError(result, command: "deck completions", "unknown shell 'tcsh'", "bash, zsh or fish")
    }

    @Test func missingShell() throws {
        e2eExpectUsageError(
            try deck("completions"), command: "deck completions", "Missing expected argument '<shell>'")
    }

    @Test func bashAcceptsTheBashScript() throws {
        let directory = try TemporaryDirectory()
        let result = try deck("completions", "bash")
        e2eExpectSuccess(result)
        let scriptPath = directory.appending("deck.bash")
        try result.stdout.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let bash = try #require(Self.program("bash"), "bash is not installed")
        let syntax = try runProgram(bash, ["-n", scriptPath])
        #expect(syntax.status == 0, "bash -n: \(syntax.output)")
        #expect(syntax.output.isEmpty)
        // Sourcing it registers the completion function.
        let sourced = try runProgram(bash, ["-c", "source \(scriptPath) && complete -p deck"])
        #expect(sourced.status == 0, "\(sourced.output)")
        #expect(sourced.output.contains("deck"))
    }

    @Test func bashCompletesSubcommandsAndOptions() throws {
        let directory = try TemporaryDirectory()
        let scriptPath = directory.appending("deck.bash")
        try (try deck("completions", "bash").stdout).write(
            toFile: scriptPath, atomically: true, encoding: .utf8)
        let bash = try #require(Self.program("bash"), "bash is not installed")
        func complete(_ words: [String]) throws -> [String] {
            let quoted = words.map { "'\($0)'" }.joined(separator: " ")
            let script = """
                source \(scriptPath)
                COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1)
                COMP_LINE="\(words.joined(separator: " "))"; COMP_POINT=${#COMP_LINE}
                fn=$(complete -p deck | sed -E 's/.*-F ([^ ]+).*/\\1/')
                $fn deck "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            let result = try runProgram(bash, ["-c", script])
            #expect(result.status == 0, "\(result.output)")
            return result.output.split(separator: "\n").map(String.init)
        }
        #expect(try complete(["deck", "qu"]) == ["query"])
        #expect(try complete(["deck", "query", "x.deck", "Card", "--cs"]) == ["--csv"])
    }

    @Test(.enabled(if: EndToEndCompletionsTests.program("zsh") != nil, "zsh is not installed"))
    func zshAcceptsTheZshScript() throws {
        let zsh = try #require(Self.program("zsh"))
        let directory = try TemporaryDirectory()
        let scriptPath = directory.appending("_deck")
        try (try deck("completions", "zsh").stdout).write(
            toFile: scriptPath, atomically: true, encoding: .utf8)
        let result = try runProgram(zsh, ["-n", scriptPath])
        #expect(result.status == 0, "\(result.output)")
    }

    @Test(.enabled(if: EndToEndCompletionsTests.program("fish") != nil, "fish is not installed"))
    func fishAcceptsTheFishScript() throws {
        let fish = try #require(Self.program("fish"))
        let directory = try TemporaryDirectory()
        let scriptPath = directory.appending("deck.fish")
        try (try deck("completions", "fish").stdout).write(
            toFile: scriptPath, atomically: true, encoding: .utf8)
        let result = try runProgram(fish, ["--no-execute", scriptPath])
        #expect(result.status == 0, "\(result.output)")
    }

    /// Runs a program and returns its status and combined output.
    func runProgram(_ path: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
