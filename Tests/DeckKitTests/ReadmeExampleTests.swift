import DeckKit
import Foundation
import Testing

/// The README's library example, compiled and run. `readmeExampleIsInReadme` keeps the README's
/// copy identical to the code between the markers.
@Suite struct ReadmeExampleTests {
    static func example(directory: URL) throws -> [String] {
        // README-EXAMPLE-BEGIN
        let schema = StoreSchema(entities: [
            StoreSchema.Entity(
                "Note",
                attributes: [
                    StoreSchema.Attribute("title", .string, options: [.unique]),
                    StoreSchema.Attribute("body", .string, defaultValue: .string("")),
                    StoreSchema.Attribute("created", .date),
                    StoreSchema.Attribute("scan", .data, isOptional: true, options: [.externalStorage]),
                ])
        ])
        let url = directory.appendingPathComponent("Notes.deck")
        let notes = try PackageStore.create(at: url, contentType: "org.example.notes", schema: schema)
        let (_, changes) = try notes.write { transaction in
            try transaction.insert("Note", ["title": .string("Groceries"), "created": .date(.now)])
            try transaction.insert(
                "Note",
                [
                    "title": .string("Receipt"), "created": .date(.now),
                    "scan": .data(Data(repeating: 0xAB, count: 200_000)),  // stored as a blob file
                ])
        }
        precondition(changes.inserted["Note"]?.count == 2)

        let titles = try notes.read { reader in
            try reader.fetch(
                RecordQuery(
                    "Note",
                    where: .property("title").beginsWith("re", .asciiCaseInsensitive),
                    sort: [SortKey("title")])
            ).compactMap { $0["title"]?.description }
        }
        try notes.close()

        let report = try DeckDocument.verify(at: url)
        precondition(report.isValid)
        // README-EXAMPLE-END
        return titles
    }

    @Test func readmeExampleRuns() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "deck-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try Self.example(directory: directory) == ["Receipt"])
    }

    @Test func readmeExampleIsInReadme() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: here, encoding: .utf8)
        guard let begin = source.range(of: "// README-EXAMPLE-BEGIN\n"),
            let end = source.range(of: "        // README-EXAMPLE-END")
        else {
            Issue.record("markers missing")
            return
        }
        let body = source[begin.upperBound..<end.lowerBound].split(
            separator: "\n", omittingEmptySubsequences: false
        )
        .map { $0.hasPrefix("        ") ? String($0.dropFirst(8)) : String($0) }.joined(separator: "\n")
        #expect(readme.contains(body), "README.md's library example differs from ReadmeExampleTests.swift")
    }
}
