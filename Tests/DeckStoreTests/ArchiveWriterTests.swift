import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.timed) struct ArchiveWriterTests {
    @Test(arguments: ArchiveFormat.allCases)
    func writesFilesDataAndDirectories(format: ArchiveFormat) throws {
        let sandbox = try ScratchDirectory()
        let source = sandbox.appending("source.bin")
        let big = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try big.write(to: source)
        let url = sandbox.appending("out.\(format.fileExtension)")
        let writer = try ArchiveWriter(url: url, format: format)
        try writer.addData(name: "hello.txt", data: Data("hi".utf8), compress: true)
        try writer.addDirectory(name: "dir")
        try writer.addFile(name: "dir/big.bin", source: source, compress: false)
        try writer.finish()

        let listing = try RawArchive.listing(of: url)
        #expect(listing.map(\.name) == ["hello.txt", "dir/", "dir/big.bin"])
        #expect(listing.map(\.size) == [2, 0, Int64(big.count)])
        for entry in listing {
            #expect(entry.uid == 0 && entry.gid == 0)
            #expect(entry.userName ?? "" == "" && entry.groupName ?? "" == "")
            #expect(entry.mode & 0o7777 == (entry.name.hasSuffix("/") ? 0o755 : 0o644))
            if format != .zip {
                // (libarchive's zip reader reports atime/ctime 0 itself; the zip bytes are checked below.)
                #expect(!entry.hasAccessTime && !entry.hasChangeTime)
                #expect(entry.modificationTime == ArchiveWriter.fixedModificationTime)
            }
        }
        if format == .zip {
            // Extra fields: "UT" with no timestamps at all, then "ux" with uid 0 and gid 0.
            let expectedExtra: [UInt8] =
                [0x55, 0x54, 1, 0, 0] + [0x75, 0x78, 11, 0, 1, 4, 0, 0, 0, 0, 4, 0, 0, 0, 0]
            for record in try ZipCentralDirectory(Data(contentsOf: url)).records {
                #expect(record.extra == expectedExtra, "\(record.name)")
                #expect(record.dosDate == 0x21 && record.dosTime == 0)
            }
        }
    }

    @Test(arguments: ["", "/abs", "../up", "a/../b", "a//b", "./a", "a\\b", "a\u{7}b", "x/."])
    func refusesUnsafeNames(name: String) throws {
        let sandbox = try ScratchDirectory()
        let writer = try ArchiveWriter(url: sandbox.appending("out.zip"), format: .zip)
        expectRefusal(nil) {
            try writer.addData(name: name, data: Data(), compress: false)
        }
        // The writer is unusable after an error.
        expectRefusal(nil) {
            try writer.addData(name: "fine", data: Data(), compress: false)
        }
    }

    @Test func refusesAnExistingFile() throws {
        let sandbox = try ScratchDirectory()
        let url = sandbox.appending("out.tar")
        try Data("keep".utf8).write(to: url)
        expectAlreadyExists(url.path) {
            _ = try ArchiveWriter(url: url, format: .tar)
        }
        #expect(try Data(contentsOf: url) == Data("keep".utf8))
    }

    @Test func refusesSymbolicLinkSources() throws {
        let sandbox = try ScratchDirectory()
        try Data("x".utf8).write(to: sandbox.appending("real"))
        try FileManager.default.createSymbolicLink(
            atPath: sandbox.appending("link").path, withDestinationPath: "real")
        let writer = try ArchiveWriter(url: sandbox.appending("out.tar"), format: .tar)
        #expect(throws: DeckError.self) {
            try writer.addFile(name: "link", source: sandbox.appending("link"), compress: false)
        }
    }

    @Test func cannotBeUsedAfterFinish() throws {
        let sandbox = try ScratchDirectory()
        let writer = try ArchiveWriter(url: sandbox.appending("out.zip"), format: .zip)
        try writer.finish()
        expectRefusal(nil) { try writer.addDirectory(name: "late") }
        expectRefusal(nil) { try writer.finish() }
    }

    @Test func zipCompressionIsChosenPerEntry() throws {
        let sandbox = try ScratchDirectory()
        let url = sandbox.appending("out.zip")
        let text = Data(String(repeating: "compressible ", count: 1000).utf8)
        let writer = try ArchiveWriter(url: url, format: .zip)
        try writer.addData(name: "stored", data: text, compress: false)
        try writer.addData(name: "deflated", data: text, compress: true)
        try writer.addData(name: "stored-again", data: text, compress: false)
        try writer.finish()
        let directory = try ZipCentralDirectory(Data(contentsOf: url))
        #expect(directory.records.map(\.name) == ["stored", "deflated", "stored-again"])
        #expect(directory.records.map(\.method) == [0, 8, 0])
    }

    @Test func gzipHeaderHasNoTimestamp() throws {
        let sandbox = try ScratchDirectory()
        let url = sandbox.appending("out.tar.gz")
        let writer = try ArchiveWriter(url: url, format: .tarGzip)
        try writer.addData(name: "a", data: Data("a".utf8), compress: true)
        try writer.finish()
        let bytes = [UInt8](try Data(contentsOf: url))
        #expect(Array(bytes[0..<2]) == [0x1f, 0x8b])
        #expect(Array(bytes[4..<8]) == [0, 0, 0, 0])
    }

    /// Names ustar cannot hold get a pax header; it must carry no time or host data either.
    @Test func longAndNonASCIINamesInTar() throws {
        let sandbox = try ScratchDirectory()
        let long = String(repeating: "x", count: 150)
        let accented = "Caf\u{e9}/\u{65e5}\u{672c}.txt"
        var outputs: [Data] = []
        for index in 0..<2 {
            let url = sandbox.appending("out\(index).tar")
            let writer = try ArchiveWriter(url: url, format: .tar)
            try writer.addData(name: long, data: Data("l".utf8), compress: true)
            try writer.addData(name: accented, data: Data("a".utf8), compress: true)
            try writer.finish()
            #expect(try RawArchive.names(of: url) == [long, accented])
            outputs.append(try Data(contentsOf: url))
        }
        #expect(outputs[0] == outputs[1])
        let text = String(decoding: outputs[0], as: UTF8.self)
        #expect(text.contains("PaxHeader"))
        #expect(!text.contains("time="))
    }
}
