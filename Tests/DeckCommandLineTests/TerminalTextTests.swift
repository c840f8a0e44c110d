import DeckCommandLine
import DeckTestTiming
import Testing

@Suite("Terminal text escaping", .timed)
struct TerminalTextTests {
    @Test(arguments: [
        ("a\u{1B}]0;title\u{07}b", "a\\x1b]0;title\\x07b"),
        ("\u{1B}]52;c;ZXZpbA==\u{07}", "\\x1b]52;c;ZXZpbA==\\x07"),
        ("\u{1B}[2J\u{1B}[H", "\\x1b[2J\\x1b[H"),
        ("nul\u{0}", "nul\\x00"),
        ("tab\there", "tab\\there"),
        ("cr\rover", "cr\\rover"),
        ("del\u{7F}", "del\\x7f"),
        ("c1 csi\u{9B}31m", "c1 csi\\x9b31m"),
        ("\u{80}\u{85}\u{9F}", "\\x80\\x85\\x9f"),
        ("rlo\u{202E}cba", "rlo\\u202ecba"),
        ("\u{202A}\u{202B}\u{202C}\u{202D}", "\\u202a\\u202b\\u202c\\u202d"),
        ("\u{2066}\u{2067}\u{2068}\u{2069}", "\\u2066\\u2067\\u2068\\u2069"),
        ("\u{200E}\u{200F}\u{61C}", "\\u200e\\u200f\\u061c"),
        ("line\u{2028}para\u{2029}", "line\\u2028para\\u2029"),
        ("\u{1B}", "\\x1b"),
    ])
    func controlsAndBidiOverridesBecomeVisible(input: String, expected: String) {
        #expect(TerminalText.escape(input) == expected)
        #expect(TerminalText.field(input) == expected)
    }

    @Test(arguments: [
        "", "plain ASCII", "adiós ¡hola! ¿qué? «»  ", "日本語", "emoji 👍🏽 and 🇪🇸",
        "… — → ≥ ⏎ ‰ ‹›", "Arabic سلام", "\u{A0}non-breaking", "\u{200B}zero width",
        "C:\\path\\x1b literally",
    ])
    func printableTextIsLeftAlone(input: String) {
        #expect(TerminalText.escape(input) == input)
        #expect(TerminalText.field(input) == input)
    }

    @Test func lineFeedsAreKeptOrShown() {
        #expect(TerminalText.escape("one\ntwo\n") == "one\ntwo\n")
        #expect(TerminalText.field("one\ntwo\n") == "one\\ntwo\\n")
        #expect(TerminalText.escape("crlf\r\n") == "crlf\\r\n")
        #expect(TerminalText.field("crlf\r\n") == "crlf\\r\\n")
    }

    @Test func everyScalarBelowU3000IsEscapedExactlyWhenItShouldBe() {
        let escaped: Set<UInt32> = Set(0x00...0x1F).union([0x7F]).union(0x80...0x9F)
            .union([0x61C, 0x200E, 0x200F, 0x2028, 0x2029]).union(0x202A...0x202E).union(0x2066...0x2069)
        for value in UInt32(0)..<0x3000 {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let text = "<" + String(Character(scalar)) + ">"
            let result = TerminalText.field(text)
            if escaped.contains(value) {
                #expect(result != text, "U+\(String(value, radix: 16)) not escaped")
                #expect(
                    result.unicodeScalars.allSatisfy { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F })
            } else {
                #expect(result == text, "U+\(String(value, radix: 16)) escaped as \(result)")
            }
        }
    }

    @Test func aLineEscapesItsPiecesButKeepsItsStyles() {
        let style = TerminalStyle(isEnabled: true)
        var line = TerminalLine("deck:", style: style.bold)
        line.append(" bad \u{1B}]0;x\u{07}", style: style.red)
        #expect(line.rendered == "\u{1B}[1mdeck:\u{1B}[22m\u{1B}[31m bad \\x1b]0;x\\x07\u{1B}[39m")
        #expect(TerminalLine("plain").rendered == "plain")
    }
}
