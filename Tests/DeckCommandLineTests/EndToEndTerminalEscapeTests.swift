import DeckTestTiming
import Foundation
import Testing

/// Text from a package that would drive a terminal: a window title, a clipboard write (OSC 52),
/// a screen clear, an 8-bit CSI, a right-to-left override, a carriage return, a tab and a line
/// break.
let e2eHostile = "A\u{1B}]0;owned\u{07}B\u{1B}]52;c;ZXZpbA==\u{07}C\u{1B}[2J\u{9B}31mD\u{202E}E\rF\tG\nH"
/// What text output shows for it (the line break as `\n`: a value stays on its line).
let e2eHostileShown =
    "A\\x1b]0;owned\\x07B\\x1b]52;c;ZXZpbA==\\x07C\\x1b[2J\\x9b31mD\\u202eE\\rF\\tG\\nH"

/// Characters that must never reach a terminal raw from text output.
func e2eTerminalControls(in text: String) -> [String] {
    text.unicodeScalars.filter { scalar in
        let v = scalar.value
        return (v < 0x20 && v != 0x0A) || v == 0x7F || (0x80...0x9F).contains(v) || v == 0x202E
    }.map { "U+" + String($0.value, radix: 16) }
}

/// The bidirectional controls and the line and paragraph separators in `text`.
func bidiAndSeparators(in text: String) -> [String] {
    let listed: Set<UInt32> = [0x61C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E]
    return text.unicodeScalars.filter { listed.contains($0.value) || (0x2066...0x2069).contains($0.value) }
        .map { "U+" + String($0.value, radix: 16) }
}

/// Text output escapes what a package holds, everywhere; `--json` and `--csv` stay exact.
@Suite("End to end: terminal escapes from a package", .timed)
struct EndToEndTerminalEscapeTests {
    /// A package whose schema version, a default and the values of a record carry `e2eHostile`,
    /// planted with sqlite3 as a hostile package would be, plus a stray blob file and a temporary
    /// with hostile names.
    func hostilePackage(_ directory: TemporaryDirectory) throws -> String {
        let schema = directory.appending("notes.json")
        try """
        {"version":"1","entities":[{"name":"Note","attributes":[{"name":"title","type":"string"},\
        {"name":"body","type":"string","default":"plain"}]}]}
        """.write(toFile: schema, atomically: true, encoding: .utf8)
        let path = directory.appending("Notes.deck")
        e2eExpectSuccess(try deck("new", path, "--schema", schema))
        e2eExpectSuccess(try deck("insert", path, "Note", "title=\(e2eHostile)", "body=\(e2eHostile)"))
        let store = path + "/store.sqlite"
        let hostileSQL =
            "CAST(X'\(Data(e2eHostile.utf8).map { String(format: "%02x", $0) }.joined())' AS TEXT)"
        let update = try runTool(
            "sqlite3",
            [
                store,
                "UPDATE deck_meta SET value = json_set(value, '$.version', \(hostileSQL), "
                    + "'$.entities[0].attributes[1].default', \(hostileSQL)) WHERE key = 'schema'; "
                    // The stored schema's version and deck_meta's must agree (spec 4.2).
                    + "UPDATE deck_meta SET value = \(hostileSQL) WHERE key = 'schema_version'",
            ])
        try #require(update.status == 0, "\(update.stderr)")
        // The bookkeeping agrees with the new schema (spec 4.2): its fingerprint, as deck computes
        // it, and a floor at its version.
        let info = try e2eJSONObject(try deck("inspect", path, "--json").stdout)
        let fingerprint = try #require(info["schemaFingerprint"] as? String)
        let bookkeeping = try runTool(
            "sqlite3",
            [
                store,
                "UPDATE deck_meta SET value = '\(fingerprint)' WHERE key = 'schema_fingerprint'; "
                    + "UPDATE deck_meta SET value = \(hostileSQL) WHERE key = 'schema_floor'",
            ])
        try #require(bookkeeping.status == 0, "\(bookkeeping.stderr)")
        try FileManager.default.createDirectory(atPath: path + "/blobs/ab", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: path + "/tmp", withIntermediateDirectories: true)
        try #require(
            FileManager.default.createFile(
                atPath: path + "/blobs/ab/" + "x\u{1B}]0;owned\u{07}", contents: nil))
        try #require(
            FileManager.default.createFile(atPath: path + "/tmp/" + "t\u{1B}[2J\u{202E}", contents: nil))
        return path
    }

    func expectEscaped(_ result: RunResult, _ what: String, sourceLocation: SourceLocation = #_sourceLocation)
    {
        #expect(
            e2eTerminalControls(in: result.stdout).isEmpty,
            "raw controls on stdout of \(what): \(e2eTerminalControls(in: result.stdout))",
            sourceLocation: sourceLocation)
        #expect(
            e2eTerminalControls(in: result.stderr).isEmpty,
            "raw controls on stderr of \(what): \(e2eTerminalControls(in: result.stderr))",
            sourceLocation: sourceLocation)
    }

    @Test func textOutputShowsEscapes() throws {
        let directory = try TemporaryDirectory()
        let path = try hostilePackage(directory)

        let open = try deck("open", path)
        e2eExpectSuccess(open)
        expectEscaped(open, "open")
        #expect(open.stdout.contains("schema: \(e2eHostileShown)\n"), "\(open.stdout)")

        let inspect = try deck("inspect", path)
        expectEscaped(inspect, "inspect")
        #expect(inspect.stdout.contains("default \(e2eHostileShown)"), "\(inspect.stdout)")

        let query = try deck("query", path, "Note")
        expectEscaped(query, "query")
        #expect(query.stdout.contains("A\\x1b]0;owned\\x07B\\x1b]52;c;ZXZpbA==\\x"), "\(query.stdout)")
        #expect(query.stdout.split(separator: "\n").count == 4, "a value broke the table: \(query.stdout)")

        let verify = try deck("verify", path)
        expectEscaped(verify, "verify")
        #expect(verify.stdout.contains("/blobs/ab/x\\x1b]0;owned\\x07: "), "\(verify.stdout)")
        #expect(verify.stdout.contains("/tmp/t\\x1b[2J\\u202e: "), "\(verify.stdout)")

        let gc = try deck("gc", path, "--dry-run")
        expectEscaped(gc, "gc --dry-run")
        #expect(gc.stdout.contains("would remove \(path)/tmp/t\\x1b[2J\\u202e\n"), "\(gc.stdout)")

        let shell = try deck(
            "open", path, "--shell", stdin: "show Note 1\nquery Note\nschema Note\nquery Nte\u{1B}[2J\n")
        expectEscaped(shell, "the shell")
        #expect(shell.stdout.contains("  title  \(e2eHostileShown)\n"), "\(shell.stdout)")
        #expect(shell.stderr.contains("Nte\\x1b[2J"), "\(shell.stderr)")

        // Errors on standard error: the entity name is the user's, the message the tool's.
        let error = try deck("query", path, "No\u{1B}]0;x\u{07}te")
        e2eExpectFailure(error, status: 65, "No\\x1b]0;x\\x07te")
        expectEscaped(error, "an error")
    }

    @Test func jsonAndCSVStayExact() throws {
        let directory = try TemporaryDirectory()
        let path = try hostilePackage(directory)
        let json = try deck("query", path, "Note", "--json")
        e2eExpectSuccess(json)
        // JSON escapes the C0 controls itself; the values decode to the stored text exactly.
        #expect(!json.stdout.contains("\u{1B}"))
        let record = try #require(try e2eJSONArray(json.stdout).first)
        #expect(record["title"] as? String == e2eHostile)
        #expect(record["body"] as? String == e2eHostile)
        let info = try e2eJSONObject(try deck("inspect", path, "--json").stdout)
        #expect(info["schemaVersion"] as? String == e2eHostile)

        let csv = try deck("query", path, "Note", "--csv")
        e2eExpectSuccess(csv)
        let rows = e2eParseCSV(csv.stdout)
        #expect(rows.count == 2)
        #expect(rows.last?[2] == e2eHostile)

        let shell = try deck("open", path, "--shell", stdin: "query Note --json\nquery Note\n")
        let lines = shell.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let shellRecord = try #require(try e2eJSONArray(lines[0...2].joined(separator: "\n")).first)
        #expect(shellRecord["title"] as? String == e2eHostile)
        // Text again after the exact command.
        #expect(shell.stdout.contains(e2eHostileShown.prefix(20)))
    }

    /// JSON allows C1 controls, bidirectional controls and the line and paragraph separators raw,
    /// but a terminal acts on them: `--json` writes them as `\uXXXX`, in strings of its own and
    /// in JSON text it passes on (a json attribute's value, the schema), and the values still
    /// decode to the stored text exactly. Text output escapes the same characters.
    @Test func jsonEscapesWhatATerminalActsOn() throws {
        let controls =
            "C1\u{80}\u{85}\u{9B}31m\u{9F} bidi\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}"
            + "\u{2066}\u{2067}\u{2068}\u{2069}\u{200E}\u{200F}\u{61C} seps\u{2028}\u{2029} del\u{7F} é—€"
        let escaped =
            #"C1\u0080\u0085\u009b31m\u009f bidi\u202a\u202b\u202c\u202d\u202e"#
            + #"\u2066\u2067\u2068\u2069\u200e\u200f\u061c seps\u2028\u2029 del\u007f é—€"#
        let directory = try TemporaryDirectory()
        let schema = directory.appending("notes.json")
        try """
        {"version":"\(controls)","entities":[{"name":"Note","attributes":[{"name":"title","type":"string"},\
        {"name":"extra","type":"json","optional":true}]}]}
        """.write(toFile: schema, atomically: true, encoding: .utf8)
        let path = directory.appending("Notes.deck")
        e2eExpectSuccess(try deck("new", path, "--schema", schema))
        let jsonValue = "{\"k\":\"\(controls)\"}"
        e2eExpectSuccess(
            try deck("insert", path, "Note", "title=\(controls)", "extra=\(jsonValue)", "--quiet"))

        let json = try deck("query", path, "Note", "--json")
        e2eExpectSuccess(json)
        #expect(e2eTerminalControls(in: json.stdout).isEmpty, "\(json.stdout)")
        #expect(bidiAndSeparators(in: json.stdout).isEmpty, "\(json.stdout)")
        #expect(json.stdout.contains("\"title\":\"\(escaped)\""), "\(json.stdout)")
        #expect(json.stdout.contains(#"{"k":"\#(escaped)"}"#), "\(json.stdout)")
        let record = try #require(try e2eJSONArray(json.stdout).first)
        #expect(record["title"] as? String == controls)
        #expect((record["extra"] as? [String: Any])?["k"] as? String == controls)

        let inspect = try deck("inspect", path, "--json")
        e2eExpectSuccess(inspect)
        #expect(e2eTerminalControls(in: inspect.stdout).isEmpty)
        #expect(bidiAndSeparators(in: inspect.stdout).isEmpty)
        let info = try e2eJSONObject(inspect.stdout)
        #expect(info["schemaVersion"] as? String == controls)
        #expect((info["schema"] as? [String: Any])?["version"] as? String == controls)

        // Text output: the same characters, escaped for reading (a table cell is cut; the schema
        // version that open prints is not).
        let text = try deck("query", path, "Note")
        e2eExpectSuccess(text)
        #expect(e2eTerminalControls(in: text.stdout).isEmpty)
        #expect(bidiAndSeparators(in: text.stdout).isEmpty)
        #expect(text.stdout.contains(#"C1\x80\x85\x9b31m\x9f bidi\u202a"#), "\(text.stdout)")
        let open = try deck("open", path)
        e2eExpectSuccess(open)
        #expect(e2eTerminalControls(in: open.stdout).isEmpty)
        #expect(bidiAndSeparators(in: open.stdout).isEmpty)
        #expect(
            open.stdout.contains(
                #"schema: C1\x80\x85\x9b31m\x9f bidi\u202a\u202b\u202c\u202d\u202e"#
                    + #"\u2066\u2067\u2068\u2069\u200e\u200f\u061c seps\u2028\u2029 del\x7f é—€"#),
            "\(open.stdout)")
    }

    @Test func coloursSurviveOnATerminalWhileThePackageIsEscaped() throws {
        let directory = try TemporaryDirectory()
        let path = try hostilePackage(directory)
        let output = try e2eRunOnTerminal(["verify", path])
        // verify colours "untidy" (yellow) and its verdict (green) on a terminal.
        #expect(output.contains("\u{1B}[33muntidy\u{1B}[39m"), "\(output)")
        #expect(output.contains("\u{1B}[32mvalid\u{1B}[39m"), "\(output)")
        // Every other escape is the package's, shown escaped.
        let withoutStyles = output.replacingOccurrences(
            of: "\u{1B}\\[[0-9]+m", with: "", options: .regularExpression
        ).replacingOccurrences(of: "\r\n", with: "\n")
        #expect(e2eTerminalControls(in: withoutStyles).isEmpty, "\(withoutStyles)")
        #expect(withoutStyles.contains("/tmp/t\\x1b[2J\\u202e: "), "\(withoutStyles)")
    }
}

/// Runs the built `deck` with standard output and error on a pseudo-terminal (made by
/// util-linux `script`, in Debian's essential set) and returns what it wrote there.
func e2eRunOnTerminal(_ arguments: [String]) throws -> String {
    func quoted(_ word: String) -> String { "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'" }
    let command = ([productsDirectory.appendingPathComponent("deck").path] + arguments).map(quoted)
        .joined(separator: " ")
    let result = try runTool(
        "script", ["-q", "-e", "-c", command, "/dev/null"], environment: ["TERM": "xterm"])
    try #require(result.status == 0, "script: \(result.stderr)")
    return result.stdout
}
