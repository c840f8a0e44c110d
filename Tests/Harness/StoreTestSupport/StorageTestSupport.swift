import DeckSQLite
import DeckStore
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

package struct StorageTestError: Error, Equatable {
    package init() {}
}

/// The flash-cards schema used across tests: decks, cards (external images), tags.
package func flashCardsSchema(
    cardsDeleteRule: StoreSchema.DeleteRule = .cascade, threshold: Int = 16,
    tagCardsDeleteRule: StoreSchema.DeleteRule = .nullify
) -> StoreSchema {
    StoreSchema(
        version: "1.0.0",
        entities: [
            StoreSchema.Entity(
                "Deck",
                attributes: [
                    StoreSchema.Attribute("title", .string, options: [.unique]),
                    StoreSchema.Attribute("position", .integer, defaultValue: .integer(0)),
                ],
                relationships: [
                    StoreSchema.Relationship(
                        "cards", to: "Card", toMany: true, inverse: "deck", deleteRule: cardsDeleteRule)
                ]),
            StoreSchema.Entity(
                "Card",
                attributes: [
                    StoreSchema.Attribute("front", .string),
                    StoreSchema.Attribute("back", .string, defaultValue: .string("")),
                    StoreSchema.Attribute(
                        "image", .data, isOptional: true, options: [.externalStorage],
                        externalThreshold: threshold),
                ],
                relationships: [
                    StoreSchema.Relationship("deck", to: "Deck", inverse: "cards"),
                    StoreSchema.Relationship("tags", to: "Tag", toMany: true, inverse: "cards"),
                ]),
            StoreSchema.Entity(
                "Tag",
                attributes: [StoreSchema.Attribute("name", .string, options: [.unique])],
                relationships: [
                    StoreSchema.Relationship(
                        "cards", to: "Card", toMany: true, inverse: "tags", deleteRule: tagCardsDeleteRule)
                ]),
        ])
}

package let flashCardsType = "org.deck.test.flashcards"

/// A package of two decks, three cards (the first with an external image) and a tag on the
/// first card; the ids of the records, by name.
package func makeSmallFlashcards(
    at url: URL, contentType: String = flashCardsType, cardsDeleteRule: StoreSchema.DeleteRule = .cascade,
    tagCardsDeleteRule: StoreSchema.DeleteRule = .nullify
) throws -> [String: Int64] {
    let store = try PackageStore.create(
        at: url, contentType: contentType,
        schema: flashCardsSchema(cardsDeleteRule: cardsDeleteRule, tagCardsDeleteRule: tagCardsDeleteRule))
    defer { try? store.close() }
    return try store.write { t in
        var ids: [String: Int64] = [:]
        ids["spanish"] = try t.insert("Deck", ["title": .string("Spanish")])
        ids["french"] = try t.insert("Deck", ["title": .string("French")])
        ids["verbs"] = try t.insert("Tag", ["name": .string("verbs")])
        ids["hola"] = try t.insert(
            "Card",
            [
                "front": .string("hola"), "back": .string("hello"), "deck": .reference(ids["spanish"]!),
                "image": .data(Data(repeating: 7, count: 100)), "tags": .references([ids["verbs"]!]),
            ])
        ids["adios"] = try t.insert(
            "Card", ["front": .string("adiós"), "deck": .reference(ids["spanish"]!)])
        ids["merci"] = try t.insert(
            "Card", ["front": .string("merci"), "deck": .reference(ids["french"]!)])
        return ids
    }.value
}

/// Creates a package named `name` in `dir` with `schema`, open for reading and writing.
package func makeTestStore(
    in dir: URL, name: String = "test.deck", schema: StoreSchema = flashCardsSchema(),
    contentType: String = flashCardsType
) throws -> PackageStore {
    try PackageStore.create(at: dir.appendingPathComponent(name), contentType: contentType, schema: schema)
}

/// A raw read-write SQLite connection to a (closed) package's store.
package func rawStore(_ package: URL) throws -> Database {
    try Database(path: package.appendingPathComponent(PackageLayout.store).path, mode: .readWrite)
}

/// Deterministic bytes of length `count`, distinct per `seed`.
package func testBytes(_ count: Int, seed: UInt8 = 0) -> Data {
    Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &* 7 &+ 1) })
}

/// Every blob file under `blobs/`, relative to the package.
package func blobFiles(_ package: URL) -> [String] {
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
package func temporaryFiles(_ package: URL) -> [String] {
    (try? FileManager.default.contentsOfDirectory(
        atPath: package.appendingPathComponent(PackageLayout.tmpDirectory).path))?
        .sorted() ?? []
}

/// The expected blob file path (relative to `blobs/`) for `data`.
package func blobName(_ data: Data) -> String {
    let hex = SHA256Hasher.hash(data).hexDigest
    return String(hex.prefix(2)) + "/" + hex
}

/// Flips one bit of the byte at `offset` of the file at `path`.
package func flipByte(at path: String, offset: Int = 0) throws {
    var data = try Data(contentsOf: URL(fileURLWithPath: path))
    data[data.startIndex + offset] ^= 0x01
    try data.write(to: URL(fileURLWithPath: path))
}

/// Truncates the file at `path` to `length` bytes.
package func truncateFile(_ path: String, to length: Int) {
    _ = truncate(path, off_t(length))
}

/// Every record of every root entity, sorted by entity and id, with the bytes of external values.
package struct ContentSnapshot: Equatable {
    package var records: [Record]
    package var blobBytes: [String: Data]
}

/// The committed content of `store`, read in one snapshot.
package func contentSnapshot(_ store: PackageStore) throws -> ContentSnapshot {
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
package func expectDeckError(
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
    package var codes: [String] { findings.map(\.code) }
    package func finding(_ code: String) -> Finding? { findings.first { $0.code == code } }
}

package var runningAsRoot: Bool { geteuid() == 0 }

/// The archive refusal `error` carries (``DeckError/archive(_:)``), or nil.
package func archiveRefusal(_ error: any Error) -> ArchiveError? {
    if case DeckError.archive(let refusal) = error { refusal } else { nil }
}

/// Runs `body` expecting an archive refusal (``DeckError/archive(_:)``): `expected`, or any
/// when nil.
package func expectRefusal(
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
package func expectAlreadyExists(
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
