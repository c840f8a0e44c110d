import DeckStore
import DeckTestTiming
import Testing

@Suite(.timed) struct ArchiveFormatTests {
    @Test(arguments: [
        ("Book.zip", ArchiveFormat.zip),
        ("Book.ZIP", .zip),
        ("Book.deck.tar", .tar),
        ("Book.tar.gz", .tarGzip),
        ("Book.TGZ", .tarGzip),
        ("Book.tar.zst", .tarZstd),
        ("book.tzst", .tarZstd),
        ("Book.Tar.Zst", .tarZstd),
    ])
    func infersFormatFromFileName(name: String, format: ArchiveFormat) {
        #expect(ArchiveFormat(fileName: name) == format)
    }

    @Test(arguments: ["Book", "Book.gz", "Book.zst", "Book.7z", "Book.tar.bz2", "zip", ".tarx", ""])
    func rejectsOtherNames(name: String) {
        #expect(ArchiveFormat(fileName: name) == nil)
    }

    @Test func namesForMessages() {
        #expect(ArchiveFormat.allCases.map(\.name) == ["zip", "tar", "tar.gz", "tar.zst"])
        #expect("\(ArchiveFormat.tarZstd)" == "tar.zst")
    }

    @Test func everyFormatIsAvailableHere() {
        // This libarchive links zlib and libzstd; if that changes, tarZstd must say so.
        for format in ArchiveFormat.allCases {
            #expect(format.isAvailable, "\(format)")
        }
    }
}
