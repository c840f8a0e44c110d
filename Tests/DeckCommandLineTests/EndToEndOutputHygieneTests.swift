import DeckTestTiming
import Foundation
import Testing

/// With standard output and error on pipes (and with or without NO_COLOR), no command writes
/// terminal escape sequences or carriage-return progress lines.
@Suite("End to end: plain output on pipes", .timed)
struct EndToEndOutputHygieneTests {
    /// Runs a broad set of commands, successes and failures, and returns every result by name.
    func runEverything(environment: [String: String]) throws -> [(String, RunResult)] {
        let directory = try TemporaryDirectory()
        let path = directory.appending("Spanish.deck")
        let image = directory.appending("photo.bin")
        try e2eNoise(70_000, seed: 3).write(to: URL(fileURLWithPath: image))
        var results: [(String, RunResult)] = []
        func run(_ arguments: String..., stdin: String? = nil) throws {
            results.append(
                (
                    arguments.joined(separator: " "),
                    try e2eDeck(arguments, stdin: stdin, environment: environment)
                ))
        }
        try run("new", path, "--sample", "flashcards")
        try run("--version")
        try run("--help")
        try run()
        try run("help", "query")
        try run("query", "--help")
        try run("qeury")
        try run("query", path, "Card", "--jsno")
        try run("query", path)
        try run("query", path, "Card", "--limit", "abc")
        try run("new", path)
        try run("open", path)
        try run("open", path, "--json")
        try run("inspect", path)
        try run("inspect", path, "--json")
        try run("open", directory.appending("nowhere"))
        try run("verify", path)
        try run("verify", path, "--json")
        try run("query", path, "Card")
        try run("query", path, "Card", "--csv")
        try run("query", path, "Card", "--json", "--where", "front contains 'el'")
        try run("query", path, "Card", "--count")
        try run("query", path, "Crad")
        try run("query", path, "Card", "--where", "front = 'x' and")
        try run("query", path, "Card", "--json", "--csv")
        try run("insert", path, "Card", "front=f", "back=b", "creationDate=2026-11-30", "image=@" + image)
        try run("insert", path, "Card", "frnt=x")
        try run("insert", path, "Tag", "name=greeting")
        try run("update", path, "Card", "--where", "front = f", "back=c")
        try run("update", path, "Card", "back=c")
        try run("delete", path, "Card", "--where", "front = f")
        try run("blob", "get", path, "nothex")
        try run("gc", path, "--dry-run")
        try run("gc", path)
        try run("completions", "bash")
        try run("completions", "tcsh")
        try run(
            "open", path, "--shell",
            stdin: "entities\nquery Tag\nbogus\nhelp\ninsert Tag name=x\nquit\nquit!\n")
        return results
    }

    func expectNoEscapes(_ results: [(String, RunResult)], sourceLocation: SourceLocation = #_sourceLocation)
    {
        #expect(results.count > 30, sourceLocation: sourceLocation)
        for (command, result) in results {
            #expect(
                !result.stdout.contains("\u{1B}"), "ESC on stdout of deck \(command)",
                sourceLocation: sourceLocation)
            #expect(
                !result.stderr.contains("\u{1B}"), "ESC on stderr of deck \(command)",
                sourceLocation: sourceLocation)
            // CSV lines end in CRLF by design; nothing else should carry a bare carriage return.
            let stdoutWithoutCRLF = result.stdout.replacingOccurrences(of: "\r\n", with: "\n")
            #expect(
                !stdoutWithoutCRLF.contains("\r"), "CR on stdout of deck \(command)",
                sourceLocation: sourceLocation)
            #expect(
                !result.stderr.contains("\r"), "CR on stderr of deck \(command)",
                sourceLocation: sourceLocation)
        }
    }

    @Test func noEscapesWithoutNOCOLOR() throws {
        // runProduct removes NO_COLOR; pipes alone must be enough. TERM is set to something colourful.
        let results = try runEverything(environment: ["TERM": "xterm-256color"])
        expectNoEscapes(results)
        // Sanity: the run really exercised both successes and failures.
        #expect(results.contains { $0.1.status == 0 })
        #expect(results.contains { $0.1.status == 64 })
        #expect(results.contains { $0.1.status == 65 })
        #expect(results.contains { $0.1.status == 66 })
        #expect(results.contains { $0.1.status == 73 })
    }

    @Test func noEscapesWithNOCOLOR() throws {
        let results = try runEverything(environment: ["NO_COLOR": "1", "TERM": "xterm-256color"])
        expectNoEscapes(results)
    }

    /// Runs `deck ARGUMENTS` on a pseudo-terminal through util-linux `script`; returns the
    /// terminal's bytes (stdout and stderr together), or nil when `script` is not installed.
    func onTerminal(_ arguments: [String], environment: [String: String]) throws -> String? {
        let script = "/usr/bin/script"
        guard FileManager.default.isExecutableFile(atPath: script) else { return nil }
        let command = ([productsDirectory.appendingPathComponent("deck").path] + arguments)
            .map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = ["-qec", command, "/dev/null"]
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "NO_COLOR")
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test func noColorAndDumbTerminalsSilenceColourOnATerminal() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let failing = ["query", path, "Crad"]
        guard let coloured = try onTerminal(failing, environment: ["TERM": "xterm-256color"]) else { return }
        // On a terminal the error may be coloured; whatever it is, NO_COLOR and TERM=dumb remove it.
        #expect(coloured.contains("unknown entity 'Crad'"), "\(coloured)")
        let noColor = try #require(
            try onTerminal(failing, environment: ["TERM": "xterm-256color", "NO_COLOR": "1"]))
        #expect(noColor.contains("deck: unknown entity 'Crad'"), "\(noColor)")
        #expect(!noColor.contains("\u{1B}"), "NO_COLOR output has escapes: \(noColor.debugDescription)")
        let dumb = try #require(try onTerminal(failing, environment: ["TERM": "dumb"]))
        #expect(!dumb.contains("\u{1B}"), "TERM=dumb output has escapes: \(dumb.debugDescription)")
        let verify = try #require(
            try onTerminal(["verify", path], environment: ["TERM": "xterm", "NO_COLOR": "1"]))
        #expect(verify.contains(": valid: 17 records"), "\(verify)")
        #expect(!verify.contains("\u{1B}"), "NO_COLOR verify has escapes: \(verify.debugDescription)")
    }

    @Test func noColorDoesNotChangeTheOutput() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        for arguments in [
            ["query", path, "Card"], ["verify", path], ["help", "query"], ["query", path, "Crad"],
        ] {
            let plain = try e2eDeck(arguments)
            let noColor = try e2eDeck(arguments, environment: ["NO_COLOR": "1"])
            #expect(plain.stdout == noColor.stdout, "\(arguments)")
            #expect(plain.stderr == noColor.stderr, "\(arguments)")
            #expect(plain.status == noColor.status, "\(arguments)")
        }
    }
}
