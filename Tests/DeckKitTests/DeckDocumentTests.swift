import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// Sharing a package as one file, as a library user does it: `DeckDocument` export, import,
/// verify and reading an archive in place. Public API only.
@Suite(.timed) struct DeckDocumentTests {
    @Test(arguments: ["Cards.zip", "Cards.tar", "Cards.tar.gz"])
    func anExportedPackageImportsAsTheSameDocument(archiveName: String) throws {
        let directory = try ScratchDirectory()
        let original = try makeCardsPackage(in: directory)
        let archive = directory.appending(archiveName)
        var reported: [(Int64, Int64)] = []
        try DeckDocument.export(at: original, to: archive) { reported.append(($0, $1)) }
        #expect(try DeckDocument.isArchiveFile(archive))
        #expect(!(try DeckDocument.isArchiveFile(original)))
        // Progress ends at its total.
        let last = try #require(reported.last)
        #expect(last.0 == last.1 && last.1 > 0, "\(reported)")

        #expect(try DeckDocument.verify(at: archive).isValid)
        let copy = try DeckDocument.importArchive(at: archive, to: directory.appending("Copy.deck"))
        #expect(copy.lastPathComponent == "Copy.deck")
        #expect(try DeckDocument.verify(at: copy).isValid)
        #expect(try cardContents(copy) == cardContents(original))
        let manifest = try PackageStore.open(at: copy, mode: .readOnly)
        #expect(manifest.manifest.contentType == "org.example.cards")
        try manifest.close()
        // Only the package, the copy and the archive: no staging files are left.
        #expect(directory.names == [archiveName, "Cards.deck", "Copy.deck"].sorted())
    }

    @Test func theSameDocumentExportsToTheSameBytes() throws {
        let directory = try ScratchDirectory()
        let original = try makeCardsPackage(in: directory)
        try DeckDocument.export(at: original, to: directory.appending("a.zip"))
        // Opening for writing and closing without a change commits nothing new.
        try PackageStore.open(at: original, mode: .readWrite).close()
        try DeckDocument.export(at: original, to: directory.appending("b.zip"))
        #expect(
            try Data(contentsOf: directory.appending("a.zip"))
                == Data(contentsOf: directory.appending("b.zip")))
    }

    @Test func anArchiveIsReadInPlace() throws {
        let directory = try ScratchDirectory()
        let original = try makeCardsPackage(in: directory)
        let archive = directory.appending("Cards.zip")
        try DeckDocument.export(at: original, to: archive)
        let count = try DeckDocument.withReadOnlyStore(at: archive) { store in
            #expect(store.mode == .readOnly)
            return try store.read { try $0.count(RecordQuery("Card")) }
        }
        #expect(count == 3)
        // The archive's private copy is gone afterwards.
        #expect(directory.names == ["Cards.deck", "Cards.zip"])
    }

    @Test func exportRefusesToReplaceAnArchiveUnlessAsked() throws {
        let directory = try ScratchDirectory()
        let original = try makeCardsPackage(in: directory)
        let archive = directory.appending("Cards.zip")
        try Data("not mine to replace".utf8).write(to: archive)
        let error = deckError { try DeckDocument.export(at: original, to: archive) }
        guard case .alreadyExists(let path)? = error else {
            Issue.record("expected alreadyExists, got \(String(describing: error))")
            return
        }
        #expect(path == archive.standardizedFileURL.path)
        #expect(error?.kind == .alreadyExists)
        #expect(try Data(contentsOf: archive) == Data("not mine to replace".utf8))
        try DeckDocument.export(at: original, to: archive, overwrite: true)
        #expect(try DeckDocument.verifyArchive(at: archive).isValid)
    }

    @Test func importRefusesAnExistingDestinationAndLeavesItAlone() throws {
        let directory = try ScratchDirectory()
        let original = try makeCardsPackage(in: directory)
        let archive = directory.appending("Cards.zip")
        try DeckDocument.export(at: original, to: archive)
        let before = try cardContents(original)
        let error = deckError { try DeckDocument.importArchive(at: archive, to: original) }
        guard case .alreadyExists(let path)? = error else {
            Issue.record("expected alreadyExists, got \(String(describing: error))")
            return
        }
        #expect(path == original.standardizedFileURL.path)
        #expect(try cardContents(original) == before)
        #expect(directory.names == ["Cards.deck", "Cards.zip"])
    }

    @Test func aDamagedArchiveFailsVerificationAndIsNotImported() throws {
        let directory = try ScratchDirectory()
        let original = try makeCardsPackage(in: directory)
        let archive = directory.appending("Cards.tar")
        try DeckDocument.export(at: original, to: archive)
        // Flip one byte of the first blob's contents (an uncompressed tar holds them as they are).
        var bytes = try Data(contentsOf: archive)
        let image = sampleBytes(4_000, seed: 1)
        let offset = try #require(bytes.range(of: image.prefix(256))?.lowerBound)
        bytes[offset + 100] ^= 0xff
        try bytes.write(to: archive)

        let report = try DeckDocument.verify(at: archive)
        #expect(!report.isValid)
        #expect(report.findings.contains { $0.severity == .corruption }, "\(report.findings)")

        let destination = directory.appending("Copy.deck")
        let error = deckError { try DeckDocument.importArchive(at: archive, to: destination) }
        #expect(error?.kind == .invalidData, "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        #expect(directory.names == ["Cards.deck", "Cards.tar"])
    }

    @Test func aFileThatIsNoArchiveIsNotAPackage() throws {
        let directory = try ScratchDirectory()
        let text = directory.appending("notes.txt")
        try Data("just some notes\n".utf8).write(to: text)
        for operation in ["verify", "import"] {
            let error = deckError {
                if operation == "verify" {
                    _ = try DeckDocument.verify(at: text)
                } else {
                    try DeckDocument.importArchive(at: text, to: directory.appending("Notes.deck"))
                }
            }
            guard case .notAPackage(let path, _)? = error else {
                Issue.record("\(operation): expected notAPackage, got \(String(describing: error))")
                continue
            }
            #expect(path == text.standardizedFileURL.path, "\(operation)")
            #expect(error?.kind == .cannotOpen, "\(operation)")
        }
        #expect(directory.names == ["notes.txt"])
    }

    @Test func importNamesFollowTheArchive() {
        let cases = [
            ("Spanish.zip", "Spanish.deck"), ("Notes.flashcards.zip", "Notes.flashcards"),
            ("Spanish.deck", "Spanish-imported.deck"), ("backup", "backup.deck"),
            ("BACKUP.TAR.GZ", "BACKUP.deck"),
        ]
        for (archive, expected) in cases {
            #expect(DeckDocument.defaultImportName(for: URL(fileURLWithPath: "/tmp/" + archive)) == expected)
        }
    }
}
