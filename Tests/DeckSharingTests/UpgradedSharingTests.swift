import DeckKit
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// Sharing a package that was upgraded from format version 1 (Tests/Fixtures/v1) keeps its
/// identity (spec: sections 6.10 and 16); DeckStoreTests' FormatUpgradeTests test the upgrade.
@Suite(.timed) struct UpgradedSharingTests {
    /// A copy of the version 1 fixture `name` in `dir`.
    static func copy(_ name: String, to dir: URL) throws -> URL {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/v1")
        let url = dir.appendingPathComponent(name)
        try FileManager.default.copyItem(at: fixtures.appendingPathComponent(name), to: url)
        return url
    }

    @Test func exportAndImportKeepTheDocumentAndGlobalIDs() throws {
        try withTestDirectory { dir throws in
            let url = try Self.copy("Library.deck", to: dir)
            try PackageStore.open(at: url).close()
            let archive = dir.appendingPathComponent("Library.zip")
            try DeckDocument.export(at: url, to: archive)
            let copy = try DeckDocument.importArchive(
                at: archive, to: dir.appendingPathComponent("Copy.deck"))
            func identity(_ url: URL) throws -> (UUID?, [UUID?]) {
                let store = try PackageStore.open(at: url, mode: .readOnly)
                defer { try? store.close() }
                return (
                    store.documentID, try store.read { try $0.fetch(RecordQuery("Person")).map(\.globalID) }
                )
            }
            let original = try identity(url)
            let imported = try identity(copy)
            #expect(original.0 != nil && original.0 == imported.0)
            #expect(!original.1.isEmpty && original.1 == imported.1)
        }
    }
}
