import Foundation
import Testing

@_spi(Testing) @testable import DeckKit

/// File-system failures injected into export and import. These live in the serialized
/// `CrashTests` suite (an extension of it), because `FaultInjection` is process-global.
extension CrashTests {
    /// The calls export makes through `FileSystem` (it creates no directories).
    static let exportOperations: [FaultInjection.Operation] = [.open, .read, .write, .fsync, .rename, .stat]
    /// The calls import makes through `FileSystem` (libarchive reads the archive's descriptor itself).
    static let importOperations: [FaultInjection.Operation] = [.open, .write, .fsync, .rename, .mkdir, .stat]

    /// A flash-cards package in a fresh directory, and that directory.
    fileprivate func sharedSample() throws -> (URL, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "deck-sharefault-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent("Sample.deck")
        let document = try DocumentPackage.create(
            at: url, contentType: FlashcardsSample.contentType, schema: FlashcardsSample.schema)
        try FlashcardsSample.populate(document)
        try document.close()
        return (directory, url)
    }

    /// Names in `directory` that only an interrupted export or import would leave.
    fileprivate func leftovers(_ directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(".") }
    }

    @Test(arguments: exportOperations)
    func aFailedExportLeavesNoArchiveAndAnIntactDocument(operation: FaultInjection.Operation) throws {
        let (directory, url) = try sharedSample()
        defer { try? FileManager.default.removeItem(at: directory) }
        let before = try Data(contentsOf: url.appendingPathComponent("store.sqlite"))
        var fired = 0
        for (attempt, errno) in [(0, ENOSPC), (1, EIO), (2, EACCES), (5, ENOSPC), (20, EIO)] {
            let archive = directory.appendingPathComponent("out-\(attempt).zip")
            FaultInjection.arm(
                operation, pathContains: directory.lastPathComponent, skip: attempt, errno: errno)
            var thrown: (any Error)?
            do { try DocumentPackage.export(at: url, to: archive) } catch { thrown = error }
            let (_, didFire) = FaultInjection.disarm()
            if didFire {
                fired += 1
                #expect(thrown is DeckError, "\(operation) #\(attempt): \(String(describing: thrown))")
                // Either no archive, or (a fault after the final rename) a complete, valid one.
                if FileManager.default.fileExists(atPath: archive.path) {
                    #expect(
                        try PackageVerifier.verifyArchive(at: archive).isValid, "\(operation) #\(attempt)")
                }
            } else {
                #expect(thrown == nil)
                #expect(try PackageVerifier.verifyArchive(at: archive).isValid)
            }
            let left = try leftovers(directory)
            #expect(left.isEmpty, "\(operation) #\(attempt): \(left)")
        }
        #expect(fired > 0, "no \(operation) call was made by export; the test proved nothing")
        #expect(try Data(contentsOf: url.appendingPathComponent("store.sqlite")) == before)
        #expect(try PackageVerifier.verify(at: url).findings.isEmpty)
    }

    @Test(arguments: importOperations)
    func aFailedImportLeavesNothing(operation: FaultInjection.Operation) throws {
        let (directory, url) = try sharedSample()
        defer { try? FileManager.default.removeItem(at: directory) }
        let archive = directory.appendingPathComponent("in.zip")
        try DocumentPackage.export(at: url, to: archive)
        var fired = 0
        for (attempt, errno) in [(0, ENOSPC), (1, EIO), (2, EACCES), (4, ENOSPC), (9, EIO), (30, EACCES)] {
            let destination = directory.appendingPathComponent("Imported-\(attempt).deck")
            FaultInjection.arm(
                operation, pathContains: directory.lastPathComponent, skip: attempt, errno: errno)
            var thrown: (any Error)?
            do { try DocumentPackage.importArchive(at: archive, to: destination) } catch { thrown = error }
            let (_, didFire) = FaultInjection.disarm()
            if didFire {
                fired += 1
                #expect(thrown is DeckError, "\(operation) #\(attempt): \(String(describing: thrown))")
                // Either nothing, or (a fault after the final rename) a complete, valid package.
                if FileManager.default.fileExists(atPath: destination.path) {
                    #expect(try PackageVerifier.verify(at: destination).isValid)
                }
            } else {
                #expect(thrown == nil)
                #expect(try PackageVerifier.verify(at: destination).isValid)
            }
            let left = try leftovers(directory)
            #expect(left.isEmpty, "\(operation) #\(attempt): \(left)")
        }
        #expect(fired > 0, "no \(operation) call was made by import; the test proved nothing")
    }
}
