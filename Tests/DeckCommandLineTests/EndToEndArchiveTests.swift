import DeckKit
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs an archiver (zip, tar, bsdtar) in `directory` and requires it to succeed.
private func e2eArchiver(_ tool: String, _ arguments: [String], in directory: String) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    try #require(process.terminationStatus == 0, "\(tool) \(arguments) failed")
}

/// The hidden names in a directory (staging items look like that).
private func e2eHidden(_ path: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasPrefix(".") }.sorted()
}

/// `deck` stopped right after making its N-th staging item (a debug build's test hook): it has
/// printed the item's path and waits, reading standard input, for a signal.
final class PausedDeck {
    let process = Process()
    private let input = Pipe()
    private let errors = Pipe()
    private(set) var staged = ""

    init(_ arguments: [String], pauseAt count: Int, environment: [String: String] = [:]) throws {
        process.executableURL = productsDirectory.appendingPathComponent("deck")
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["DECK_TEST_PAUSE_AFTER_STAGING"] = String(count)
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardInput = input
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var text = ""
        while !text.contains("\n") {
            let chunk = errors.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        let prefix = "deck-test: staged "
        try #require(text.hasPrefix(prefix), "deck did not pause: \(text)")
        staged = String(text.dropFirst(prefix.count).prefix { $0 != "\n" })
    }

    /// Sends `signal` and waits for the process to end; returns how it ended.
    func end(with signal: Int32) -> (reason: Process.TerminationReason, status: Int32) {
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        return (process.terminationReason, process.terminationStatus)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// Archives made by other tools, bombs, interrupted commands, odd names and destinations, through
/// the built `deck`.
@Suite("End to end: archives", .timed) struct EndToEndArchiveTests {
    /// A flash-cards package that has been written to after creation (it has `lock` and `tmp/`).
    func usedSample(_ directory: TemporaryDirectory, name: String = "Used.deck") throws -> String {
        let path = try e2eSample(in: directory, name: name)
        e2eExpectSuccess(try deck("insert", path, "Tag", "name=later", "--quiet"))
        try #require(FileManager.default.fileExists(atPath: path + "/lock"))
        return path
    }

    @Test(arguments: [
        ["/usr/bin/zip", "-qr", "x.zip", "Used.deck"],
        ["/usr/bin/tar", "-czf", "x.zip", "Used.deck"],
        ["/usr/bin/bsdtar", "--format", "zip", "-cf", "x.zip", "Used.deck"],
        ["/usr/bin/bsdtar", "-cf", "x.zip", "-C", "Used.deck", "."],
    ])
    func importsAnArchiveOfAUsedPackageMadeByAnotherTool(command: [String]) throws {
        let directory = try TemporaryDirectory()
        _ = try usedSample(directory)
        try e2eArchiver(command[0], Array(command.dropFirst()), in: directory.path)
        let archive = directory.appending("x.zip")
        let verify = try deck("verify", archive)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        e2eExpectSuccess(try deck("import", archive, "-o", directory.appending("Copy.deck")))
        #expect(try deck("query", directory.appending("Copy.deck"), "Tag", "--count").stdout == "6\n")
        #expect(try deck("query", archive, "Tag", "--count").stdout == "6\n")
        #expect(!FileManager.default.fileExists(atPath: directory.appending("Copy.deck/lock")))
    }

    @Test func aPackageZippedAfterItsWriterWasKilledIsRefusedWithAdviceAndUnpacksWithItsLog() throws {
        let directory = try TemporaryDirectory()
        let path = try usedSample(directory)
        // A real writer: save a change, then die without closing.
        let writer = Process()
        writer.executableURL = productsDirectory.appendingPathComponent("deck")
        writer.arguments = ["open", "--shell", path]
        let input = Pipe()
        let output = Pipe()
        writer.standardInput = input
        writer.standardOutput = output
        writer.standardError = FileHandle.nullDevice
        try writer.run()
        input.fileHandleForWriting.write(Data("insert Tag name=logged\nsave\n".utf8))
        var printed = ""
        while !printed.contains("saved") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            printed += String(decoding: chunk, as: UTF8.self)
        }
        try #require(printed.contains("saved"), "the shell did not save: \(printed)")
        kill(writer.processIdentifier, SIGKILL)
        writer.waitUntilExit()
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/store.sqlite-wal")
        let wal = (attributes?[.size] as? NSNumber)?.intValue ?? 0
        try #require(wal > 0, "the killed writer should leave a write-ahead log")
        try e2eArchiver("/usr/bin/zip", ["-qr", "crashed.zip", "Used.deck"], in: directory.path)
        let archive = directory.appending("crashed.zip")

        let imported = try deck("import", archive, "-o", directory.appending("Copy.deck"))
        e2eExpectFailure(imported, status: 65, "store.sqlite-wal", "deck export", "deck unpack")
        let verify = try deck("verify", archive, "--json")
        #expect(verify.status == 65)
        #expect(verify.stdout.contains("archive-store-log"))
        #expect(!FileManager.default.fileExists(atPath: directory.appending("Copy.deck")))
        e2eExpectSuccess(try deck("unpack", archive, "-o", directory.appending("Unpacked.deck"), "--quiet"))
        let logged = try deck(
            "query", directory.appending("Unpacked.deck"), "Tag", "--where", "name = 'logged'", "--count")
        #expect(logged.stdout == "1\n", "\(logged.stderr)")
        #expect(try deck("verify", directory.appending("Unpacked.deck"), "--quiet").status == 0)
        #expect(
            !FileManager.default.fileExists(atPath: directory.appending("Unpacked.deck/store.sqlite-wal")))
        // The advice works: an export of the crashed package imports.
        e2eExpectSuccess(try deck("export", path, "-o", directory.appending("fixed.zip"), "--quiet"))
        e2eExpectSuccess(
            try deck("import", directory.appending("fixed.zip"), "-o", directory.appending("Fixed.deck")))
        #expect(try deck("query", directory.appending("Fixed.deck"), "Tag", "--count").stdout == "7\n")
        #expect(try e2eHidden(directory.path).isEmpty)
    }

    @Test(arguments: ["tar.gz", "tar.zst", "zip"])
    func importsItsOwnExportOfAHighlyCompressibleValue(format: String) throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let zeros = directory.appending("zeros.bin")
        try Data(count: 64 << 20).write(to: URL(fileURLWithPath: zeros))
        e2eExpectSuccess(
            try deck(
                "insert", path, "Card", "front=zeros", "back=z", "creationDate=2026-01-01", "deck=#1",
                "image=@\(zeros)", "--quiet"))
        let archive = directory.appending("z.\(format)")
        e2eExpectSuccess(try deck("export", path, "-o", archive, "--quiet"))
        #expect(try deck("verify", archive, "--quiet").status == 0)
        e2eExpectSuccess(try deck("import", archive, "-o", directory.appending("Copy.deck"), "--quiet"))
        #expect(try deck("verify", directory.appending("Copy.deck"), "--quiet").status == 0)
    }

    @Test(arguments: [["-S", "-czf"], ["-S", "--format=posix", "-cf"]])
    func gnuTarSparseEntriesImportAsTheBytesTheyStandFor(options: [String]) throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory, name: "Sparse.deck")
        var value = e2eNoise(8192, seed: 1)
        value.append(Data(count: 256 << 20))
        value.append(e2eNoise(8192, seed: 2))
        let file = directory.appending("holes.bin")
        try value.write(to: URL(fileURLWithPath: file))
        e2eExpectSuccess(
            try deck(
                "insert", path, "Card", "front=holes", "back=h", "creationDate=2026-01-01", "deck=#1",
                "image=@\(file)", "--quiet"))
        // Make the blob file sparse: the same bytes, with the zeros as a hole.
        let hex = e2eSHA256(value)
        let blob = try #require(try e2eBlobFiles(path)[hex])
        try FileManager.default.removeItem(atPath: blob)
        let fd = open(blob, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        try #require(fd >= 0)
        let tail = off_t(8192 + (256 << 20))
        let head = value.prefix(8192).withUnsafeBytes { pwrite(fd, $0.baseAddress, 8192, 0) }
        let end = value.suffix(8192).withUnsafeBytes { pwrite(fd, $0.baseAddress, 8192, tail) }
        close(fd)
        try #require(head == 8192 && end == 8192)
        try e2eArchiver("/usr/bin/tar", options + ["x.tar", "Sparse.deck"], in: directory.path)
        let archive = directory.appending("x.tar")
        let size =
            (try FileManager.default.attributesOfItem(atPath: archive)[.size] as? NSNumber)?.intValue ?? 0
        #expect(size < value.count / 200, "the archive should hold the hole as a sparse map (\(size) bytes)")
        #expect(try deck("verify", archive, "--quiet").status == 0)
        e2eExpectSuccess(try deck("import", archive, "-o", directory.appending("Copy.deck"), "--quiet"))
        let copied = try #require(try e2eBlobFiles(directory.appending("Copy.deck"))[hex])
        #expect(try Data(contentsOf: URL(fileURLWithPath: copied)) == value)
    }

    @Test func aZipNameWithABackslashIsRefused() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory, name: "B.deck")
        try Data("x".utf8).write(to: URL(fileURLWithPath: path + "/blobs\\evil"))
        try e2eArchiver("/usr/bin/zip", ["-qr", "b.zip", "B.deck"], in: directory.path)
        let result = try deck("import", directory.appending("b.zip"), "-o", directory.appending("Out.deck"))
        e2eExpectFailure(result, status: 65, "B.deck/blobs\\evil", "backslashes are not allowed")
        #expect(try deck("verify", directory.appending("b.zip")).status == 65)
    }

    @Test func verifyAndImportAgreeOnAnOversizedManifest() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory, name: "M.deck")
        let manifest = URL(fileURLWithPath: path + "/manifest.json")
        var bytes = try Data(contentsOf: manifest)
        bytes.append(Data(repeating: 0x20, count: 2 << 20))
        try bytes.write(to: manifest)
        try e2eArchiver("/usr/bin/tar", ["-cf", "m.tar", "M.deck"], in: directory.path)
        let archive = directory.appending("m.tar")
        let verify = try deck("verify", archive)
        #expect(verify.status == 65, "\(verify.stdout)")
        e2eExpectFailure(
            try deck("import", archive, "-o", directory.appending("Out.deck")), status: 65, "manifest")
    }

    // MARK: Default names, long names, destinations

    @Test func importWithoutOutputNeverPicksTheInputItself() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        e2eExpectSuccess(try deck("export", path, "-o", directory.appending("Notes.flashcards"), "--quiet"))
        let before = try Data(contentsOf: URL(fileURLWithPath: directory.appending("Notes.flashcards")))
        let imported = try runProduct(
            "deck", ["import", "Notes.flashcards"], currentDirectory: directory.path)
        e2eExpectSuccess(imported)
        #expect(imported.stdout == "Imported Notes.flashcards as Notes.deck\n")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.appending("Notes.flashcards"))) == before)
        #expect(try deck("verify", directory.appending("Notes.deck"), "--quiet").status == 0)
        // An archive named like a package gets a name of its own.
        try FileManager.default.moveItem(
            atPath: directory.appending("Notes.flashcards"), toPath: directory.appending("Lesson.deck"))
        let again = try runProduct("deck", ["import", "Lesson.deck"], currentDirectory: directory.path)
        #expect(again.stdout == "Imported Lesson.deck as Lesson-imported.deck\n", "\(again.stderr)")
        // Text is not an archive, and no package named after it appears.
        try Data("hello".utf8).write(to: URL(fileURLWithPath: directory.appending("notes.txt")))
        let text = try runProduct("deck", ["import", "notes.txt"], currentDirectory: directory.path)
        e2eExpectFailure(text, status: 66, "notes.txt")
        #expect(!FileManager.default.fileExists(atPath: directory.appending("notes.deck")))
        #expect(try e2eHidden(directory.path).isEmpty)
    }

    @Test func namesOf255BytesWorkForEveryCommand() throws {
        let directory = try TemporaryDirectory()
        let stem = String(repeating: "\u{e9}", count: 125) + "x"
        let package = directory.appending(stem + ".new")
        #expect(try deck("new", package, "--sample", "flashcards").status == 0)
        let zip = directory.appending(stem + ".zip")
        e2eExpectSuccess(try deck("export", package, "-o", zip, "--quiet"))
        e2eExpectSuccess(try deck("export", package, "-o", zip, "--force", "--quiet"))
        let tar = directory.appending(stem + ".tar")
        e2eExpectSuccess(try deck("pack", package, "-o", tar, "--quiet"))
        e2eExpectSuccess(try deck("import", zip, "-o", directory.appending(stem + ".imp"), "--quiet"))
        e2eExpectSuccess(try deck("unpack", tar, "-o", directory.appending(stem + ".unp"), "--quiet"))
        #expect(try deck("verify", directory.appending(stem + ".imp"), "--quiet").status == 0)
        #expect(try deck("query", zip, "Card", "--count").stdout == "10\n")
        #expect(try e2eHidden(directory.path).isEmpty)
    }

    @Test func exportAndPackRefuseDestinationsThatAreNotRegularFiles() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        try #require(mkfifo(directory.appending("fifo.zip"), 0o644) == 0)
        try FileManager.default.createDirectory(
            atPath: directory.appending("dir.zip"), withIntermediateDirectories: false)
        var targets = [("fifo.zip", "a FIFO"), ("dir.zip", "a directory")]
        if mknod(directory.appending("null.zip"), S_IFCHR | 0o666, dev_t((1 << 8) | 3)) == 0 {
            targets.append(("null.zip", "a character device"))
        }
        for (name, kind) in targets {
            for command in ["export", "pack"] {
                let result = try deck(command, path, "-o", directory.appending(name), "--force")
                e2eExpectFailure(result, status: 73, directory.appending(name), "is \(kind)")
            }
            var info = stat()
            #expect(
                lstat(directory.appending(name), &info) == 0 && info.st_mode & S_IFMT != S_IFREG, "\(name)")
        }
        #expect(try e2eHidden(directory.path).isEmpty)
    }

    /// A sanitizer's runtime cannot start in a process limited by `ulimit -f`.
    @Test(
        .disabled(
            if: ProcessInfo.processInfo.environment["DECK_SANITIZER"] != nil,
            "a sanitizer's runtime cannot start under ulimit -f"))
    func aWriteFailureIsAnIOErrorOnTheRealPath() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        e2eExpectSuccess(try deck("export", path, "-o", directory.appending("s.zip"), "--quiet"))
        // A file-size limit (with SIGXFSZ ignored) makes the writes fail as a full disk would.
        func limited(_ arguments: [String]) throws -> RunResult {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments =
                [
                    "-c", "trap '' XFSZ; ulimit -f 64; exec \"$0\" \"$@\"",
                    productsDirectory.appendingPathComponent("deck").path,
                ]
                + arguments
            let out = Pipe()
            let err = Pipe()
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let errors = err.fileHandleForReading.readDataToEndOfFile()
            let output = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return RunResult(
                status: process.terminationStatus, stdout: String(decoding: output, as: UTF8.self),
                stderr: String(decoding: errors, as: UTF8.self))
        }
        let export = try limited(["export", path, "-o", directory.appending("big.zip")])
        e2eExpectFailure(export, status: 74, directory.appending("big.zip"), "File too large")
        #expect(!export.stderr.contains("VACUUM") && !export.stderr.contains("SQLite"))
        #expect(!export.stderr.contains("cannot be written to the archive"))
        let imported = try limited([
            "import", directory.appending("s.zip"), "-o", directory.appending("Big.deck"),
        ])
        e2eExpectFailure(imported, status: 74, directory.appending("Big.deck"), "File too large")
        #expect(!FileManager.default.fileExists(atPath: directory.appending("big.zip")))
        #expect(!FileManager.default.fileExists(atPath: directory.appending("Big.deck")))
        #expect(try e2eHidden(directory.path).isEmpty)
    }

    // MARK: Interrupted commands

    #if DEBUG
        @Test(arguments: [(1, SIGINT), (2, SIGTERM)])
        func anInterruptedExportLeavesNothingAndALiveOneIsNotSwept(pauseAt: Int, signal: Int32) throws {
            let directory = try TemporaryDirectory()
            let path = try e2eSample(in: directory)
            let archive = directory.appending("out.zip")
            let paused = try PausedDeck(["export", path, "-o", archive], pauseAt: pauseAt)
            #expect(paused.staged.hasPrefix(directory.path + "/.out.zip."))
            #expect(FileManager.default.fileExists(atPath: paused.staged))
            // Another export to the same name sweeps stale staging items: not this live one.
            e2eExpectSuccess(try deck("export", path, "-o", archive, "--force", "--quiet"))
            #expect(FileManager.default.fileExists(atPath: paused.staged))
            let (reason, status) = paused.end(with: signal)
            #expect(reason == .uncaughtSignal && status == signal)
            #expect(try e2eHidden(directory.path).isEmpty)
            #expect(try deck("verify", archive, "--quiet").status == 0)
        }

        @Test func aKilledExportLeavesStaleItemsThatTheNextRunRemoves() throws {
            let directory = try TemporaryDirectory()
            let path = try e2eSample(in: directory)
            let archive = directory.appending("out.zip")
            let paused = try PausedDeck(["export", path, "-o", archive], pauseAt: 2)
            let (reason, status) = paused.end(with: SIGKILL)
            #expect(reason == .uncaughtSignal && status == SIGKILL)
            // The snapshot directory and the half-written archive stay behind...
            #expect(try e2eHidden(directory.path).count == 2)
            // ...until the next export to that name, which finds them unlocked.
            e2eExpectSuccess(try deck("export", path, "-o", archive, "--quiet"))
            #expect(try e2eHidden(directory.path).isEmpty)
        }

        @Test func interruptedImportUnpackPackAndNewLeaveNothing() throws {
            let directory = try TemporaryDirectory()
            let path = try e2eSample(in: directory)
            let archive = directory.appending("s.zip")
            e2eExpectSuccess(try deck("export", path, "-o", archive, "--quiet"))
            let commands: [([String], String)] = [
                (["import", archive, "-o", directory.appending("I.deck")], "I.deck"),
                (["unpack", archive, "-o", directory.appending("U.deck")], "U.deck"),
                (["pack", path, "-o", directory.appending("p.tar")], "p.tar"),
                (["new", directory.appending("N.deck"), "--sample", "flashcards"], "N.deck"),
            ]
            for (arguments, result) in commands {
                let paused = try PausedDeck(arguments, pauseAt: 1)
                #expect(paused.staged.hasPrefix(directory.path + "/.\(result)."), "\(arguments[0])")
                let (reason, status) = paused.end(with: SIGHUP)
                #expect(reason == .uncaughtSignal && status == SIGHUP, "\(arguments[0])")
                #expect(
                    !FileManager.default.fileExists(atPath: directory.appending(result)), "\(arguments[0])")
                #expect(try e2eHidden(directory.path).isEmpty, "\(arguments[0])")
            }
        }

        /// `blob get -o` stages the bytes beside the destination as a staging item: a signal
        /// removes it, and one a kill left behind goes with the next copy to that name.
        @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
        func anInterruptedBlobGetLeavesNothing(signal: Int32) throws {
            let directory = try TemporaryDirectory()
            let path = try e2eSample(in: directory)
            let digest = try #require(try e2eBlobFiles(path).keys.sorted().first)
            let out = directory.appending("hola.jpg")
            let paused = try PausedDeck(["blob", "get", path, digest, "-o", out], pauseAt: 1)
            #expect(paused.staged.hasPrefix(directory.path + "/.hola.jpg.blob-"), "\(paused.staged)")
            #expect(FileManager.default.fileExists(atPath: paused.staged))
            // Another copy to the same name leaves this live one alone.
            e2eExpectSuccess(try deck("blob", "get", path, digest, "-o", out))
            #expect(FileManager.default.fileExists(atPath: paused.staged))
            let (reason, status) = paused.end(with: signal)
            #expect(reason == .uncaughtSignal && status == signal)
            #expect(try e2eHidden(directory.path).isEmpty)
            #expect(e2eSHA256(try Data(contentsOf: URL(fileURLWithPath: out))) == digest)
        }

        @Test func aKilledBlobGetLeavesAStaleFileThatTheNextRunRemoves() throws {
            let directory = try TemporaryDirectory()
            let path = try e2eSample(in: directory)
            let digest = try #require(try e2eBlobFiles(path).keys.sorted().first)
            let out = directory.appending("hola.jpg")
            let paused = try PausedDeck(["blob", "get", path, digest, "-o", out], pauseAt: 1)
            let (reason, status) = paused.end(with: SIGKILL)
            #expect(reason == .uncaughtSignal && status == SIGKILL)
            #expect(try e2eHidden(directory.path).count == 1)
            #expect(!FileManager.default.fileExists(atPath: out))
            e2eExpectSuccess(try deck("blob", "get", path, digest, "-o", out))
            #expect(try e2eHidden(directory.path).isEmpty)
            #expect(e2eSHA256(try Data(contentsOf: URL(fileURLWithPath: out))) == digest)
        }

        @Test func interruptedReadingOfAnArchiveLeavesNothingInTheTemporaryDirectory() throws {
            let directory = try TemporaryDirectory()
            let path = try e2eSample(in: directory)
            let archive = directory.appending("s.zip")
            e2eExpectSuccess(try deck("export", path, "-o", archive, "--quiet"))
            let scratch = directory.appending("tmp")
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false)
            let runs: [([String], Int)] = [
                (["query", archive, "Card", "--count"], 1), (["query", archive, "Card", "--count"], 2),
                (["inspect", archive], 2), (["verify", archive], 1),
            ]
            for (arguments, pauseAt) in runs {
                let paused = try PausedDeck(arguments, pauseAt: pauseAt, environment: ["TMPDIR": scratch])
                #expect(
                    paused.staged.hasPrefix(scratch + "/"), "\(arguments[0]) \(pauseAt): \(paused.staged)")
                let (reason, status) = paused.end(with: SIGINT)
                #expect(reason == .uncaughtSignal && status == SIGINT, "\(arguments[0]) \(pauseAt)")
                #expect(
                    try FileManager.default.contentsOfDirectory(atPath: scratch).isEmpty, "\(arguments[0])")
            }
        }
    #endif
}
