import DeckArguments
import DeckTestTiming
import Testing

@Suite("Closest match", .timed)
struct ClosestMatchTests {
    @Test(
        arguments: [
            ("jsno", ["json", "csv", "where"], "json"),
            ("JSON", ["json", "csv"], "json"),
            ("task", ["Note", "Task"], "Task"),
            ("qurey", ["query", "blob"], "query"),
            ("limt", ["limit", "offset"], "limit"),
            ("limi", ["limit", "list"], "limit"),
            ("attachmnet", ["attachment", "attachments"], "attachment"),
            ("cretaed", ["created", "modified"], "created"),
            ("modifed", ["created", "modified"], "modified"),
            ("descripton", ["description", "title"], "description"),
        ] as [(String, [String], String)])
    func suggests(input: String, candidates: [String], expected: String) {
        #expect(closestMatch(to: input, in: candidates) == expected)
    }

    @Test(
        arguments: [
            ("zzzz", ["json", "csv"]),
            ("x", ["y", "z"]),
            ("", ["json"]),
            ("json", []),
            ("qu", ["query"]),
            ("abcdef", ["ghijkl"]),
        ] as [(String, [String])])
    func rejectsDistantCandidates(input: String, candidates: [String]) {
        #expect(closestMatch(to: input, in: candidates) == nil)
    }

    @Test func prefersTheClosestThenTheFirst() {
        #expect(closestMatch(to: "sort", in: ["sorts", "sort"]) == "sort")
        #expect(closestMatch(to: "cat", in: ["bat", "car"]) == "bat")
        #expect(closestMatch(to: "cats", in: ["bats", "cat"]) == "bats")
        #expect(closestMatch(to: "abcdefg", in: ["abxdxfg", "abcdxfg"]) == "abcdxfg")
    }

    @Test func thresholdGrowsWithLength() {
        // Two edits are accepted for 6- to 8-character inputs, three from 9 characters.
        #expect(closestMatch(to: "entyty", in: ["entity"]) == "entity")
        #expect(closestMatch(to: "enxyty", in: ["entity"]) == "entity")
        #expect(closestMatch(to: "exxyty", in: ["entity"]) == nil)
        #expect(closestMatch(to: "attrxbxtx", in: ["attribute"]) == "attribute")
        #expect(closestMatch(to: "abc", in: ["xbc"]) == "xbc")
        #expect(closestMatch(to: "abc", in: ["xyc"]) == nil)
    }
}
