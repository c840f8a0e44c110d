import DeckTestTiming
import Foundation
import Testing

/// spec/format.md section 14, "Reading a package by hand", run as written: every `sh` block of the
/// section, taken from the spec's text (not a copy), runs in order in one bash session, and what it
/// prints must be the output block that follows it, except for the three values the section says
/// differ from package to package.
@Suite("The spec's by-hand walk-through", .timed)
struct SpecWalkthroughTests {
    /// A fenced code block: its info string (`sh`, `json`, or empty) and its text.
    struct Block {
        let info: String
        let text: String
    }

    static var spec: String {
        get throws {
            try String(
                contentsOf: e2eRepositoryRoot.appendingPathComponent("spec/format.md"), encoding: .utf8)
        }
    }

    /// The lines of the section whose heading starts with `heading`, up to the next heading of the
    /// same or a higher level.
    static func section(_ heading: String, of text: String) -> [Substring] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix(heading) }) else { return [] }
        let level = heading.prefix { $0 == "#" }.count
        let end =
            lines[(start + 1)...].firstIndex { line in
                let hashes = line.prefix { $0 == "#" }.count
                return hashes > 0 && hashes <= level && line.dropFirst(hashes).hasPrefix(" ")
            } ?? lines.endIndex
        return Array(lines[start..<end])
    }

    /// The fenced code blocks among `lines`, in order.
    static func blocks(_ lines: [Substring]) -> [Block] {
        var blocks: [Block] = []
        var open: (info: String, lines: [Substring])?
        for line in lines {
            if line.hasPrefix("```") {
                if let current = open {
                    blocks.append(
                        Block(info: current.info, text: current.lines.joined(separator: "\n") + "\n"))
                    open = nil
                } else {
                    open = (String(line.dropFirst(3)).trimmingCharacters(in: .whitespaces), [])
                }
            } else if open != nil {
                open?.lines.append(line)
            }
        }
        return blocks
    }

    /// What legitimately differs between two packages made the same way: when they were made,
    /// which version made them, and the random ids of section 6.10 (the section says so).
    static func normalized(_ text: String) -> String {
        var text = text
        for (pattern, template) in [
            (#"(?m)^(created|modified)\|text\|.*$"#, "$1|text|<time>"),
            (#""generator" : "[^"]*""#, "\"generator\" : \"<generator>\""),
            (#"(?m)^document_id\|text\|.*$"#, "document_id|text|<uuid>"),
            (#"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"#, "<gid>"),
        ] {
            text = text.replacingOccurrences(of: pattern, with: template, options: .regularExpression)
        }
        return text
    }

    @Test func theSectionIsFoundAndEveryCommandBlockShowsItsOutput() throws {
        let blocks = Self.blocks(Self.section("## 14 ", of: try Self.spec))
        let commands = blocks.indices.filter { blocks[$0].info == "sh" }
        #expect(commands.count >= 7, "the walk-through has \(commands.count) sh blocks")
        for index in commands {
            #expect(
                index + 1 < blocks.count && blocks[index + 1].info.isEmpty,
                "sh block \(index) is not followed by its output:\n\(blocks[index].text)")
        }
        #expect(Self.normalized("created|text|2026-11-30T11:11:00.057Z\n") == "created|text|<time>\n")
    }

    @Test func theWalkthroughRunsAsWritten() throws {
        let spec = try Self.spec
        let schema = try #require(
            Self.blocks(Self.section("### 5.6 ", of: spec)).first { $0.info == "json" },
            "no schema file in section 5.6")
        let blocks = Self.blocks(Self.section("## 14 ", of: spec))
        let steps: [(command: String, output: String)] = blocks.indices.compactMap { index in
            guard blocks[index].info == "sh", index + 1 < blocks.count, blocks[index + 1].info.isEmpty else {
                return nil
            }
            return (blocks[index].text, blocks[index + 1].text)
        }
        try #require(steps.count >= 7)

        let directory = try TemporaryDirectory()
        let work = directory.appending("work")
        let outputs = directory.appending("outputs")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: outputs, withIntermediateDirectories: false)
        try schema.text.write(toFile: work + "/flashcards.json", atomically: true, encoding: .utf8)
        // One bash session: `cd` and variables carry from block to block, as for a reader.
        var script = "cd \"$WORK\" || exit 99\n"
        for (number, step) in steps.enumerated() {
            script +=
                "{\n\(step.command)} >\"$OUTPUTS/\(number)\" 2>&1\necho $? >\"$OUTPUTS/\(number).status\"\n"
        }
        let path =
            productsDirectory.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let run = try runTool(
            "bash", ["-c", script], environment: ["WORK": work, "OUTPUTS": outputs, "PATH": path])
        try #require(run.status == 0, "bash: \(run.stderr)")

        for (number, step) in steps.enumerated() {
            let status = try String(contentsOfFile: "\(outputs)/\(number).status", encoding: .utf8)
            let printed = try String(contentsOfFile: "\(outputs)/\(number)", encoding: .utf8)
            #expect(
                status == "0\n", "block \(number) failed (status \(status)):\n\(step.command)\n\(printed)")
            #expect(
                Self.normalized(printed) == Self.normalized(step.output),
                "block \(number) printed what the spec does not show:\n\(step.command)\n--- spec:\n\(step.output)--- printed:\n\(printed)"
            )
        }
        // The files saved along the way are next to the package, as the section says, not in it.
        #expect(try Data(contentsOf: URL(fileURLWithPath: work + "/card1.bin")) == Data("GIF".utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: work + "/card2.bin")) == Data(count: 70_000))
        e2eExpectSuccess(try deck("verify", work + "/Spanish.deck"))
    }
}
