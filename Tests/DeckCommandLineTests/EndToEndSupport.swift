import DeckKit
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

// Helpers for the end-to-end tests of the built `deck` (EndToEnd*.swift). Every name here starts
// with `e2e` so it cannot collide with helpers of other test files in this module.

/// The repository root, found from this file's location (Tests/DeckCommandLineTests/…).
let e2eRepositoryRoot: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // DeckCommandLineTests
    .deletingLastPathComponent()  // Tests
    .deletingLastPathComponent()

/// The flash-cards schema file shipped in the repository.
var e2eSampleSchemaPath: String {
    e2eRepositoryRoot.appendingPathComponent("samples/flashcards.schema.json").path
}

/// Runs the built `deck` with an argument array (the `deck(...)` helper takes a variadic list).
@discardableResult
func e2eDeck(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) throws
    -> RunResult
{
    try runProduct("deck", arguments, stdin: stdin, environment: environment)
}

/// Creates the flash-cards sample (`deck new NAME --sample flashcards`) in `directory` and returns
/// its absolute path.
func e2eSample(in directory: TemporaryDirectory, name: String = "Spanish.deck") throws -> String {
    let path = directory.appending(name)
    let result = try deck("new", path, "--sample", "flashcards")
    try #require(result.status == 0, "deck new --sample failed: \(result.stderr)")
    return path
}

/// Parses `text` as a JSON object.
func e2eJSONObject(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any]
{
    let value = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
    return try #require(value as? [String: Any], "not a JSON object: \(text)", sourceLocation: sourceLocation)
}

/// Parses `text` as a JSON array of objects.
func e2eJSONArray(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [[String: Any]]
{
    let value = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
    return try #require(
        value as? [[String: Any]], "not a JSON array of objects: \(text)", sourceLocation: sourceLocation)
}

/// Checks a `deck: <what>: <why>` failure: the status, nothing on standard output, and every
/// fragment on standard error.
func e2eExpectFailure(
    _ result: RunResult, status: Int32, _ fragments: String...,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(
        result.status == status, "status \(result.status), stderr: \(result.stderr)",
        sourceLocation: sourceLocation)
    #expect(result.stdout.isEmpty, "unexpected stdout: \(result.stdout)", sourceLocation: sourceLocation)
    #expect(result.stderr.hasPrefix("deck: "), "stderr: \(result.stderr)", sourceLocation: sourceLocation)
    #expect(result.stderr.hasSuffix("\n"), "stderr: \(result.stderr)", sourceLocation: sourceLocation)
    for fragment in fragments {
        #expect(
            result.stderr.contains(fragment), "stderr lacks '\(fragment)': \(result.stderr)",
            sourceLocation: sourceLocation)
    }
}

/// Checks a usage error: status 64, nothing on standard output, and standard error of the form
/// `Error: …` / `Usage: deck COMMAND …` / `  See 'deck COMMAND --help' for more information.`
func e2eExpectUsageError(
    _ result: RunResult, command: String, _ fragments: String...,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(
        result.status == 64, "status \(result.status), stderr: \(result.stderr)",
        sourceLocation: sourceLocation)
    #expect(result.stdout.isEmpty, "unexpected stdout: \(result.stdout)", sourceLocation: sourceLocation)
    let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    #expect(
        lines.first?.hasPrefix("Error: ") == true, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
    #expect(
        lines.contains { $0.hasPrefix("Usage: \(command)") },
        "no usage line for '\(command)': \(result.stderr)",
        sourceLocation: sourceLocation)
    #expect(
        result.stderr.contains("See '\(command) --help'"), "no help pointer: \(result.stderr)",
        sourceLocation: sourceLocation)
    for fragment in fragments {
        #expect(
            lines.first?.contains(fragment) == true, "error line lacks '\(fragment)': \(result.stderr)",
            sourceLocation: sourceLocation)
    }
}

/// Checks success: status 0, empty standard error.
func e2eExpectSuccess(_ result: RunResult, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(
        result.status == 0, "status \(result.status), stderr: \(result.stderr)",
        sourceLocation: sourceLocation)
    #expect(result.stderr.isEmpty, "unexpected stderr: \(result.stderr)", sourceLocation: sourceLocation)
}

/// The blob files of a package (`blobs/xx/<64 hex>`), by hexadecimal digest.
func e2eBlobFiles(_ packagePath: String) throws -> [String: String] {
    let blobs = packagePath + "/blobs"
    var result: [String: String] = [:]
    for prefix in try FileManager.default.contentsOfDirectory(atPath: blobs) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: blobs + "/" + prefix, isDirectory: &isDirectory),
            isDirectory.boolValue
        else { continue }
        for name in try FileManager.default.contentsOfDirectory(atPath: blobs + "/" + prefix)
        where name.count == 64 {
            result[name] = blobs + "/" + prefix + "/" + name
        }
    }
    return result
}

/// The lowercase hexadecimal SHA-256 of `data`.
func e2eSHA256(_ data: Data) -> String { SHA256Hasher.hash(data).hexDigest }

/// Writes `data` as a well-named blob file no record references (an orphan) and returns its path.
@discardableResult
func e2eWriteOrphanBlob(_ packagePath: String, _ data: Data) throws -> String {
    let hex = e2eSHA256(data)
    let directory = "\(packagePath)/blobs/\(hex.prefix(2))"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let path = directory + "/" + hex
    try data.write(to: URL(fileURLWithPath: path))
    return path
}

/// Inverts every bit of the byte at `offset` of the file at `path`.
func e2eFlipByte(_ path: String, at offset: Int) throws {
    _ = chmod(path, 0o644)
    var data = try Data(contentsOf: URL(fileURLWithPath: path))
    data[offset] ^= 0xFF
    try data.write(to: URL(fileURLWithPath: path))
}

/// `count` bytes of deterministic noise (does not compress, differs per seed).
func e2eNoise(_ count: Int, seed: UInt64) -> Data {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    var data = Data(capacity: count)
    for _ in 0..<count {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        data.append(UInt8(truncatingIfNeeded: state))
    }
    return data
}

/// Parses RFC 4180 CSV (CRLF or LF line ends, quoted fields with doubled quotes).
func e2eParseCSV(_ text: String) -> [[String]] {
    var rows: [[String]] = []
    var row: [String] = []
    var field = ""
    var quoted = false
    var index = text.startIndex
    while index < text.endIndex {
        let c = text[index]
        if quoted {
            if c == "\"" {
                let next = text.index(after: index)
                if next < text.endIndex && text[next] == "\"" {
                    field.append("\"")
                    index = next
                } else {
                    quoted = false
                }
            } else {
                field.append(c)
            }
        } else if c == "\"" {
            quoted = true
        } else if c == "," {
            row.append(field)
            field = ""
        } else if c == "\r\n" || c == "\n" {
            row.append(field)
            rows.append(row)
            row = []
            field = ""
        } else {
            field.append(c)
        }
        index = text.index(after: index)
    }
    if !field.isEmpty || !row.isEmpty {
        row.append(field)
        rows.append(row)
    }
    return rows
}

/// The `_id`s of a `--json` query result, in order.
func e2eIDs(_ json: String) throws -> [Int] {
    try e2eJSONArray(json).map { ($0["_id"] as? Int) ?? -1 }
}

/// The values of one column of a `--json` query result, in order.
func e2eColumn(_ json: String, _ key: String) throws -> [String] {
    try e2eJSONArray(json).map { "\($0[key] ?? "nil")" }
}
