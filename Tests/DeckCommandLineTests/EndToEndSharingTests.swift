import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// `deck export`, `import`, `pack`, `unpack`, and the reading commands on archives.
@Suite("End to end: sharing", .timed) struct EndToEndSharingTests {
    func sample(_ directory: TemporaryDirectory) throws -> String {
        let path = directory.appending("Spanish.deck")
        let result = try deck("new", path, "--sample", "flashcards")
        #expect(result.status == 0)
        return path
    }

    @Test(arguments: ["zip", "tar", "tar.gz", "tar.zst"])
    func exportImportRoundTrip(format: String) throws {
        let directory = try TemporaryDirectory()
        let path = try sample(directory)
        let archive = directory.appending("Spanish.\(format)")
        let export = try deck("export", path, "-o", archive)
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.stdout == "Exported \(path) to \(archive)\n")
        #expect(export.stderr.isEmpty)
        let verify = try deck("verify", archive)
        #expect(verify.status == 0)
        #expect(verify.stdout.contains("valid"))
        let imported = directory.appending("Copy.deck")
        let result = try deck("import", archive, "-o", imported, "--json")
        #expect(result.status == 0)
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect((json?["package"] as? String)?.hasSuffix("Copy.deck") == true)
        #expect(try deck("query", imported, "Card", "--count").stdout == "10\n")
        #expect(try deck("query", archive, "Card", "--count").stdout == "10\n")
        #expect(try deck("inspect", archive).stdout.contains(archive))
    }

    @Test func exportTwiceIsByteIdenticalAndRefusesToReplaceWithoutForce() throws {
        let directory = try TemporaryDirectory()
        let path = try sample(directory)
        let a = directory.appending("a.zip")
        #expect(try deck("export", path, "-o", a).status == 0)
        let again = try deck("export", path, "-o", a)
        #expect(again.status == 73)
        #expect(again.stderr.contains("already exists"))
        #expect(try deck("export", path, "-o", a, "--force", "--quiet").status == 0)
        let b = directory.appending("b.zip")
        #expect(try deck("export", path, "--output=\(b)", "--format", "zip").status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: a)) == Data(contentsOf: URL(fileURLWithPath: b)))
    }

    @Test func importWithoutOutputNamesThePackageAfterTheArchive() throws {
        let directory = try TemporaryDirectory()
        let path = try sample(directory)
        let archive = directory.appending("Lesson.zip")
        #expect(try deck("export", path, "-o", archive).status == 0)
        let process = try runProduct("deck", ["import", archive], currentDirectory: directory.path)
        #expect(process.status == 0, "\(process.stderr)")
        #expect(FileManager.default.fileExists(atPath: directory.appending("Lesson.deck/manifest.json")))
    }

    @Test func packAndUnpackTheRawDirectory() throws {
        let directory = try TemporaryDirectory()
        let path = try sample(directory)
        let archive = directory.appending("raw.tar")
        let pack = try deck("pack", path, "-o", archive, "--quiet")
        #expect(pack.status == 0, "\(pack.stderr)")
        let unpacked = directory.appending("Unpacked.deck")
        let unpack = try deck("unpack", archive, "-o", unpacked, "--json")
        #expect(unpack.status == 0, "\(unpack.stderr)")
        #expect(try deck("verify", unpacked).status == 0)
        // Unpacking over an existing directory is refused and changes nothing.
        let again = try deck("unpack", archive, "-o", unpacked)
        #expect(again.status == 73)
    }

    /// `deck pack` and `deck export` in two time zones, with different source metadata in
    /// between, give byte-identical archives. Each `deck` is a child process with its own `TZ`, so
    /// no other test sees the change. Control: bsdtar (the same libarchive) zipping a dated file
    /// does depend on `TZ`, so the switch reaches the library and the test proves something.
    @Test func packingIsReproducibleAcrossTimeZones() throws {
        let directory = try TemporaryDirectory()
        let path = try sample(directory)
        let formats = ["zip", "tar", "tar.gz", "tar.zst"]
        func archive(_ zone: String) throws {
            for format in formats {
                for command in ["pack", "export"] {
                    let result = try e2eDeck(
                        [
                            command, path, "-o", directory.appending("\(command)-\(zone).\(format)"),
                            "--quiet",
                        ],
                        environment: ["TZ": zone])
                    e2eExpectSuccess(result)
                }
            }
        }
        try archive("UTC0")
        // Different source metadata, set explicitly: times three days back, other permissions.
        for file in ["manifest.json", "store.sqlite"] {
            let url = URL(fileURLWithPath: path + "/" + file)
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSinceNow: -3 * 86_400), .posixPermissions: 0o600],
                ofItemAtPath: url.path)
        }
        try archive("JST-9")
        for format in formats {
            for command in ["pack", "export"] {
                let first = try Data(
                    contentsOf: URL(fileURLWithPath: directory.appending("\(command)-UTC0.\(format)")))
                let second = try Data(
                    contentsOf: URL(fileURLWithPath: directory.appending("\(command)-JST-9.\(format)")))
                #expect(first == second, "\(command) \(format) archives differ between time zones")
            }
        }

        let dated = directory.appending("dated")
        try FileManager.default.createDirectory(atPath: dated, withIntermediateDirectories: false)
        try Data("x".utf8).write(to: URL(fileURLWithPath: dated + "/file"))
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: 631_152_000)], ofItemAtPath: dated + "/file")
        var controls: [Data] = []
        for zone in ["UTC0", "JST-9"] {
            let out = directory.appending("control-\(zone).zip")
            let result = try runExecutable(
                URL(fileURLWithPath: "/usr/bin/bsdtar"),
                ["--format", "zip", "-cf", out, "-C", dated, "file"],
                environment: ["TZ": zone])
            try #require(result.status == 0, "bsdtar: \(result.stderr)")
            controls.append(try Data(contentsOf: URL(fileURLWithPath: out)))
        }
        #expect(
            controls[0] != controls[1], "TZ had no effect on libarchive in a child; the test proves nothing")
    }

    @Test func packRefusesADocumentOpenForWriting() throws {
        let directory = try TemporaryDirectory()
        let path = try sample(directory)
        let writer = try PackageStore.open(at: URL(fileURLWithPath: path), mode: .readWrite)
        defer { try? writer.close() }
        let pack = try deck("pack", path, "-o", directory.appending("live.zip"))
        #expect(pack.status == 75)
        #expect(pack.stderr.contains("locked by pid \(getpid())"))
        // export takes a snapshot instead, and works.
        #expect(try deck("export", path, "-o", directory.appending("snapshot.zip")).status == 0)
    }

    @Test func badArchivesAreRefusedWithoutLeavingAnything() throws {
        let directory = try TemporaryDirectory()
        let path = try sample(directory)
        let archive = directory.appending("good.zip")
        #expect(try deck("export", path, "-o", archive).status == 0)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
        let cut = directory.appending("cut.zip")
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: cut))
        let importCut = try deck("import", cut, "-o", directory.appending("Cut.deck"))
        #expect(importCut.status == 65)
        #expect(importCut.stderr.hasPrefix("deck: "))
        let verifyCut = try deck("verify", cut)
        #expect(verifyCut.status == 65)
        let text = directory.appending("notes.txt")
        try Data("hello".utf8).write(to: URL(fileURLWithPath: text))
        let importText = try deck("import", text, "-o", directory.appending("Text.deck"))
        #expect(importText.status == 66)
        #expect(importText.stderr.contains("neither a package directory nor a package archive"))
        #expect(try deck("import", directory.appending("missing.zip")).status == 66)
        #expect(try deck("export", path).status == 64)
        #expect(try deck("export", path, "-o", directory.appending("x.rar"), "--format", "rar").status == 64)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.hasPrefix(".")
        }
        #expect(left.isEmpty, "\(left)")
    }
}
