/// Word-wrapping helpers shared by help rendering.
enum TextWrapping {
    /// Wraps `words` to `width` columns. The first line starts with `firstPrefix`, later lines with
    /// `continuationPrefix`. A word longer than the available space gets a line of its own.
    static func wrap(
        words: [String], width: Int, firstPrefix: String, continuationPrefix: String
    ) -> [String] {
        var lines: [String] = []
        var current = firstPrefix
        var lineHasWord = false
        for word in words {
            if lineHasWord && current.count + 1 + word.count > width {
                lines.append(current)
                current = continuationPrefix + word
            } else {
                current += (lineHasWord ? " " : "") + word
            }
            lineHasWord = true
        }
        lines.append(current)
        return lines.map(trimmingTrailingSpaces)
    }

    /// Wraps free text (split on whitespace) to `width` columns with a uniform indent.
    static func wrap(_ text: String, width: Int, indent: Int) -> [String] {
        let prefix = String(repeating: " ", count: indent)
        return wrap(words: splitWords(text), width: width, firstPrefix: prefix, continuationPrefix: prefix)
    }

    /// Renders a paragraph-structured text: paragraphs are separated by blank lines and reflowed,
    /// except paragraphs containing an indented line, which are kept verbatim (for code samples).
    static func paragraphs(_ text: String, width: Int, indent: Int) -> [String] {
        let prefix = String(repeating: " ", count: indent)
        var output: [String] = []
        var block: [Substring] = []
        func flush() {
            guard !block.isEmpty else { return }
            if !output.isEmpty { output.append("") }
            if block.contains(where: { $0.first?.isWhitespace == true }) {
                output += block.map { trimmingTrailingSpaces(prefix + $0) }
            } else {
                output += wrap(block.joined(separator: " "), width: width, indent: indent)
            }
            block = []
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.allSatisfy(\.isWhitespace) {
                flush()
            } else {
                block.append(line)
            }
        }
        flush()
        return output
    }

    /// A two-column row: `label` at `indent`, `text` starting at `column` (on the next line if the
    /// label is too wide), wrapped to `width`.
    static func row(label: String, text: String, indent: Int, column: Int, width: Int) -> [String] {
        let labelPart = String(repeating: " ", count: indent) + label
        let hangingPrefix = String(repeating: " ", count: column)
        let words = splitWords(text)
        if words.isEmpty {
            return [labelPart]
        }
        if labelPart.count + 2 <= column {
            let first = labelPart + String(repeating: " ", count: column - labelPart.count)
            return wrap(words: words, width: width, firstPrefix: first, continuationPrefix: hangingPrefix)
        }
        return [labelPart]
            + wrap(words: words, width: width, firstPrefix: hangingPrefix, continuationPrefix: hangingPrefix)
    }

    static func splitWords(_ text: String) -> [String] {
        text.split(whereSeparator: \.isWhitespace).map(String.init)
    }

    static func trimmingTrailingSpaces<S: StringProtocol>(_ line: S) -> String {
        var result = String(line)
        while result.last == " " {
            result.removeLast()
        }
        return result
    }
}
