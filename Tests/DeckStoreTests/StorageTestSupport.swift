import DeckSQLite
import Foundation
import Testing

@testable import DeckStore

#if canImport(Glibc)
    import Glibc
#endif

struct StorageTestError: Error, Equatable {}

/// The flash-cards schema used across tests: decks, cards (external images), tags.
func flashCardsSchema(
    cardsDeleteRule: DeleteRule = .cascade, threshold: Int = 16
) -> StoreSchema {
    StoreSchema(
        version: "1.0.0",
        entities: [
            Entity(
                "Deck",
                attributes: [
                    Attribute("title", .string, options: [.unique]),
                    Attribute("position", .integer, defaultValue: .integer(0)),
                ],
                relationships: [
                    Relationship(
                        "cards", to: "Card", toMany: true, inverse: "deck", deleteRule: cardsDeleteRule)
                ]),
            Entity(
                "Card",
                attributes: [
                    Attribute("front", .string),
                    Attribute("back", .string, defaultValue: .string("")),
                    Attribute(
                        "image", .data, isOptional: true, options: [.externalStorage],
                        externalThreshold: threshold),
                ],
                relationships: [
                    Relationship("deck", to: "Deck", inverse: "cards"),
                    Relationship("tags", to: "Tag", toMany: true, inverse: "cards"),
                ]),
            Entity(
                "Tag",
                attributes: [Attribute("name", .string, options: [.unique])],
                relationships: [Relationship("cards", to: "Card", toMany: true, inverse: "tags")]),
        ])
}

let flashCardsType = "org.deck.test.flashcards"

/// Creates a package named `name` in `dir` with `schema`, open for reading and writing.
func makeTestStore(
    in dir: URL, name: String = "test.deck", schema: StoreSchema = flashCardsSchema(),
    contentType: String = flashCardsType
) throws -> PackageStore {
    try PackageStore.create(at: dir.appendingPathComponent(name), contentType: contentType, schema: schema)
}

extension PackageStore {
    /// The connection the writer uses (a read-only store's first reader): it sees an open
    /// transaction's changes. For tests that look at the raw tables and blob files.
    private var connection: StoreConnection {
        get throws {
            guard let connection = writer ?? state.withLock({ $0.readers.first }) else {
                throw DeckError.closed(path: url.path)
            }
            return connection
        }
    }
    /// The writer's SQLite connection.
    var database: Database { get throws { try connection.database } }
    /// The writer's blob store (it tracks the files written since the last commit).
    var blobs: BlobStore { get throws { try connection.blobs } }
}

/// A raw read-write SQLite connection to a (closed) package's store.
func rawStore(_ package: URL) throws -> Database {
    try Database(path: package.appendingPathComponent(PackageLayout.store).path, mode: .readWrite)
}

/// Deterministic bytes of length `count`, distinct per `seed`.
func testBytes(_ count: Int, seed: UInt8 = 0) -> Data {
    Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &* 7 &+ 1) })
}

/// Every blob file under `blobs/`, relative to the package.
func blobFiles(_ package: URL) -> [String] {
    let root = package.appendingPathComponent(PackageLayout.blobsDirectory).path
    guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
    var files: [String] = []
    for case let name as String in enumerator {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: root + "/" + name, isDirectory: &isDirectory),
            !isDirectory.boolValue
        {
            files.append(name)
        }
    }
    return files.sorted()
}

/// Files in `tmp/`.
func temporaryFiles(_ package: URL) -> [String] {
    (try? FileManager.default.contentsOfDirectory(
        atPath: package.appendingPathComponent(PackageLayout.tmpDirectory).path))?
        .sorted() ?? []
}

/// The expected blob file path (relative to `blobs/`) for `data`.
func blobName(_ data: Data) -> String {
    let hex = SHA256Hasher.hash(data).hexDigest
    return String(hex.prefix(2)) + "/" + hex
}

/// Flips one bit of the byte at `offset` of the file at `path`.
func flipByte(at path: String, offset: Int = 0) throws {
    var data = try Data(contentsOf: URL(fileURLWithPath: path))
    data[data.startIndex + offset] ^= 0x01
    try data.write(to: URL(fileURLWithPath: path))
}

/// Truncates the file at `path` to `length` bytes.
func truncateFile(_ path: String, to length: Int) {
    _ = truncate(path, off_t(length))
}

/// Every record of every root entity, sorted by entity and id, with the bytes of external values.
struct ContentSnapshot: Equatable {
    var records: [Record]
    var blobBytes: [String: Data]
}

/// The committed content of `store`, read in one snapshot.
func contentSnapshot(_ store: PackageStore) throws -> ContentSnapshot {
    try store.read { reader throws in
        var records: [Record] = []
        var blobBytes: [String: Data] = [:]
        for root in store.schema.entities where root.superentity == nil {
            for record in try reader.fetch(RecordQuery(root.name)) {
                records.append(record)
                for value in record.values.values {
                    if case .blob(let reference) = value {
                        blobBytes[reference.digest.hexDigest] = try reader.data(for: reference)
                    }
                }
            }
        }
        return ContentSnapshot(records: records, blobBytes: blobBytes)
    }
}

/// Runs `body` expecting a `DeckError`, and returns it (nil, with an issue recorded, otherwise).
@discardableResult
func expectDeckError(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> DeckError? {
    do {
        try body()
        Issue.record("expected a DeckError, but nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as DeckError {
        return error
    } catch {
        Issue.record("expected a DeckError, got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// Codes of the findings in a report.
extension VerificationReport {
    var codes: [String] { findings.map(\.code) }
    func finding(_ code: String) -> Finding? { findings.first { $0.code == code } }
}

var runningAsRoot: Bool { geteuid() == 0 }

/// The archive refusal `error` carries (``DeckError/archive(_:)``), or nil.
func archiveRefusal(_ error: any Error) -> ArchiveError? {
    if case DeckError.archive(let refusal) = error { refusal } else { nil }
}

/// Runs `body` expecting an archive refusal (``DeckError/archive(_:)``): `expected`, or any
/// when nil.
func expectRefusal(
    _ expected: ArchiveError?, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    let context = comment.map { "\($0.rawValue): " } ?? ""
    do {
        try body()
        Issue.record(
            "\(context)expected an archive refusal, but nothing was thrown", sourceLocation: sourceLocation)
    } catch {
        guard let refusal = archiveRefusal(error) else {
            Issue.record(
                "\(context)expected an archive refusal, got \(error)", sourceLocation: sourceLocation)
            return
        }
        if let expected, refusal != expected {
            Issue.record("\(context)expected \(expected), got \(refusal)", sourceLocation: sourceLocation)
        }
    }
}

/// Runs `body` expecting ``DeckError/alreadyExists(path:)`` for `path`.
func expectAlreadyExists(
    _ path: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) {
    let error = expectDeckError(sourceLocation: sourceLocation, body)
    guard case .alreadyExists(path)? = error else {
        Issue.record(
            "expected alreadyExists(\(path)), got \(String(describing: error))",
            sourceLocation: sourceLocation)
        return
    }
}
