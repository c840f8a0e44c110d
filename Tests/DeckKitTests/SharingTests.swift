import Foundation
import Testing

@testable import DeckKit

/// Document-level sharing: export, import, pack and unpack through `DocumentPackage`.
@Suite struct SharingTests {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "deck-sharing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    func makeSample(_ name: String = "Sample.deck") throws -> URL {
        let document = try DocumentPackage.create(
            at: url(name), contentType: FlashcardsSample.contentType, schema: FlashcardsSample.schema)
        try FlashcardsSample.populate(document)
        try document.close()
        return url(name)
    }

    /// Every record of every entity, with data values loaded, in id order.
    func contents(of url: URL) throws -> [String: [Record]] {
        let document = try DocumentPackage.open(at: url, mode: .readOnly)
        defer { try? document.close() }
        var result: [String: [Record]] = [:]
        for entity in document.schema.entities {
            var records = try document.fetch(Query(entity.name, includesSubentities: false))
            for index in records.indices {
                for (key, value) in records[index].values {
                    if case .blob = value {
                        records[index].values[key] = .data(try document.data(of: value) ?? Data())
                    }
                }
                for relationship in entity.relationships where relationship.isToMany {
                    records[index].values[relationship.name] = .references(
                        try document.related(entity.name, id: records[index].id, relationship.name))
                }
            }
            result[entity.name] = records
        }
        return result
    }

    @Test(arguments: [ArchiveFormat.zip, .tar, .tarGzip, .tarZstd])
    func exportThenImportGivesTheSameDocument(format: ArchiveFormat) throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = try makeSample()
        let archive = url("Sample.\(format.fileExtension)")
        try DocumentPackage.export(at: original, to: archive, format: format)
        let imported = try DocumentPackage.importArchive(at: archive, to: url("Imported.deck"))
        #expect(try contents(of: imported) == contents(of: original))
        #expect(try PackageVerifier.verify(at: imported).findings.isEmpty)
    }

    @Test func exportIsReproducible() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = try makeSample()
        try DocumentPackage.export(at: original, to: url("a.zip"))
        // Opening and closing for writing changes nothing committed; the archive must not change.
        try DocumentPackage.open(at: original).close()
        Thread.sleep(forTimeInterval: 1.1)
        try DocumentPackage.export(at: original, to: url("b.zip"))
        #expect(try Data(contentsOf: url("a.zip")) == Data(contentsOf: url("b.zip")))
        // A different committed state gives a different archive.
        let document = try DocumentPackage.open(at: original)
        try document.insert("Tag", ["name": .string("extra")])
        try document.save()
        try document.close()
        try DocumentPackage.export(at: original, to: url("c.zip"))
        #expect(try Data(contentsOf: url("a.zip")) != Data(contentsOf: url("c.zip")))
    }

    @Test func exportTakesOnlyCommittedChangesAndReferencedBlobs() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = try makeSample()
        let writer = try DocumentPackage.open(at: original)
        try writer.insert(
            "Card",
            [
                "front": .string("unsaved"), "back": .string("x"), "creationDate": .date(.now),
                "image": .data(Data(repeating: 7, count: 100_000)),
            ])
        // The writer holds the lock and an open transaction; export still works and sees the
        // committed state only, without the unsaved card's blob file.
        let archive = url("snapshot.zip")
        try DocumentPackage.export(at: original, to: archive)
        let imported = try DocumentPackage.importArchive(at: archive, to: url("Snapshot.deck"))
        let copy = try DocumentPackage.open(at: imported, mode: .readOnly)
        #expect(try copy.count(Query("Card")) == 10)
        #expect(try copy.info().blobCount == 6)
        try copy.close()
        let scan = try PackageArchive.scan(archive: archive)
        #expect(scan.blobs.count == 6)
        writer.rollback()
        try writer.close()
    }

    @Test func importRefusesAnInvalidPackageAndLeavesNothing() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = try makeSample()
        // Damage a copy: drop one blob file, then archive the raw directory.
        let damaged = url("Damaged.deck")
        try FileManager.default.copyItem(at: original, to: damaged)
        let blobs = try FileManager.default.subpathsOfDirectory(
            atPath: damaged.appendingPathComponent("blobs").path
        )
        .filter { $0.count > 3 }
        let victim = try #require(blobs.first)
        try FileManager.default.removeItem(
            at: damaged.appendingPathComponent("blobs").appendingPathComponent(victim))
        try DocumentPackage.pack(directory: damaged, to: url("damaged.zip"))
        #expect {
            try DocumentPackage.importArchive(at: url("damaged.zip"), to: url("Result.deck"))
        } throws: { error in
            guard case DeckError.corrupt(_, let reason) = error else { return false }
            // The same finding verify reports: the blob the store references is not archived.
            return reason.contains((victim as NSString).lastPathComponent) && reason.contains("holds no")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!left.contains("Result.deck"))
        #expect(!left.contains { $0.hasPrefix(".Result.deck") })
        // The archive itself is a valid archive of an invalid package: verifyArchive says so.
        let report = try PackageVerifier.verifyArchive(at: url("damaged.zip"))
        #expect(!report.isValid)
        #expect(report.findings.contains { $0.code == "blob-missing" })
    }

    @Test func importNeverReplacesAnExistingPath() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = try makeSample()
        try DocumentPackage.export(at: original, to: url("s.zip"))
        #expect(throws: DeckError.self) { try DocumentPackage.importArchive(at: url("s.zip"), to: original) }
        #expect(try PackageVerifier.verify(at: original).isValid)
    }

    @Test func exportNeverReplacesAnArchiveUnlessForced() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = try makeSample()
        try Data("keep me".utf8).write(to: url("taken.zip"))
        #expect {
            try DocumentPackage.export(at: original, to: url("taken.zip"))
        } throws: { error in
            if case DeckError.alreadyExists = error { return true }
            return false
        }
        #expect(try Data(contentsOf: url("taken.zip")) == Data("keep me".utf8))
        try DocumentPackage.export(at: original, to: url("taken.zip"), overwrite: true)
        #expect(try PackageVerifier.verifyArchive(at: url("taken.zip")).isValid)
    }

    @Test func packRefusesALiveDocument() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = try makeSample()
        let writer = try DocumentPackage.open(at: original)
        #expect {
            try DocumentPackage.pack(directory: original, to: url("live.zip"))
        } throws: { error in
            if case DeckError.locked(_, let pid) = error { return pid == getpid() }
            return false
        }
        try writer.close()
        try DocumentPackage.pack(directory: original, to: url("closed.zip"))
        try DocumentPackage.unpack(at: url("closed.zip"), to: url("Unpacked.deck"))
        #expect(try contents(of: url("Unpacked.deck")) == contents(of: original))
    }

    @Test func verifyArchiveFindsTruncationAndGarbage() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = try makeSample()
        try DocumentPackage.export(at: original, to: url("whole.zip"))
        let bytes = try Data(contentsOf: url("whole.zip"))
        for cut in [10, 100, bytes.count / 2, bytes.count - 10] {
            try bytes.prefix(cut).write(to: url("cut.zip"))
            let report = try PackageVerifier.verifyArchive(at: url("cut.zip"))
            #expect(!report.isValid, "cut at \(cut)")
            #expect(throws: DeckError.self) {
                try DocumentPackage.importArchive(at: url("cut.zip"), to: url("Cut.deck"))
            }
            #expect(!FileManager.default.fileExists(atPath: url("Cut.deck").path))
        }
        #expect(throws: DeckError.self) { try PackageVerifier.verifyArchive(at: url("missing.zip")) }
        #expect(throws: DeckError.self) { try PackageVerifier.verifyArchive(at: original) }
    }

    @Test func defaultImportNames() {
        #expect(
            DocumentPackage.defaultImportName(for: URL(fileURLWithPath: "/x/Spanish.zip")) == "Spanish.deck")
        #expect(
            DocumentPackage.defaultImportName(for: URL(fileURLWithPath: "Notes.flashcards.tar.gz"))
                == "Notes.flashcards")
        #expect(DocumentPackage.defaultImportName(for: URL(fileURLWithPath: "a.TAR.ZST")) == "a.deck")
    }
}
