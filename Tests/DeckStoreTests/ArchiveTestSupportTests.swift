import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

/// The hand-made archives the archive suites build (ArchiveTestSupport.swift) are what they say.
@Suite(.timed) struct ArchiveTestSupportTests {
    @Test func rawArchiveRoundTripsNames() throws {
        let sandbox = try ScratchDirectory()
        let url = sandbox.appending("raw.tar")
        try RawArchive.write([.file("a", "x"), .directory("d/"), .file("d/b", "y")], format: .pax, to: url)
        #expect(try RawArchive.names(of: url) == ["a", "d/", "d/b"])
    }
}
