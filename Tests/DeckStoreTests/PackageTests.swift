import DeckSQLite
import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Package directory", .timed)
struct PackageTests {
    // MARK: Create

    @Test func createLaysOutAPackage() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("notes.deck")
            let package = try PackageStore.create(
                at: url, contentType: "org.example.notes", schema: flashCardsSchema())
            #expect(package.mode == .readWrite)
            #expect(package.manifest.contentType == "org.example.notes")
            #expect(package.schema == flashCardsSchema())
            try package.close()

            var isDirectory: ObjCBool = false
            #expect(
                FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
                    && isDirectory.boolValue)
            #expect(FileManager.default.fileExists(atPath: url.appendingPathComponent("manifest.json").path))
            #expect(FileManager.default.fileExists(atPath: url.appendingPathComponent("store.sqlite").path))
            #expect(
                FileManager.default.fileExists(
                    atPath: url.appendingPathComponent("blobs").path, isDirectory: &isDirectory)
                    && isDirectory.boolValue)
            // Nothing was left beside it.
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["notes.deck"])

            let db = try rawStore(url)
            #expect(try db.pragma("application_id")?.int64 == 0x4445_434B)
            #expect(try db.pragma("user_version")?.int64 == Int64(PackageLayout.formatVersion))
            #expect(try db.pragma("integrity_check") == .text("ok"))
            #expect(
                try db.scalar("SELECT value FROM deck_meta WHERE key = 'content_type'")
                    == .text("org.example.notes"))
            #expect(
                try db.scalar("SELECT value FROM deck_meta WHERE key = 'format_version'")
                    == .integer(Int64(PackageLayout.formatVersion)))
            #expect(
                try db.scalar("SELECT value FROM deck_meta WHERE key = 'date_epoch'") == .integer(978_307_200)
            )
            // The document id: a canonical, lowercase UUID.
            let documentID = try db.scalar("SELECT value FROM deck_meta WHERE key = 'document_id'")?.string
            #expect(documentID.map { UUID(uuidString: $0)?.uuidString.lowercased() == $0 } == true)
            #expect(
                try db.scalar("SELECT value FROM deck_meta WHERE key = 'schema_version'") == .text("1.0.0"))
            #expect(
                try db.scalar("SELECT count(*) FROM deck_meta WHERE key IN ('created', 'modified')")
                    == .integer(2))

            let manifestData = try Data(contentsOf: url.appendingPathComponent("manifest.json"))
            #expect(manifestData.last == 0x0A, "the manifest ends with a newline")
            let manifest = try JSONDecoder().decode(Manifest.self, from: manifestData)
            #expect(manifest.format == "org.deck.package")
            #expect(manifest.formatVersion == PackageLayout.formatVersion)
            #expect(manifest.minimumReaderVersion == 4)
            #expect(manifest.contentType == "org.example.notes")
            let object = try JSONSerialization.jsonObject(with: manifestData) as? [String: Any]
            let keys = Set((object ?? [:]).keys)
            #expect(keys.isSuperset(of: ["format", "formatVersion", "minimumReaderVersion", "contentType"]))
        }
    }

    @Test func createOverAnExistingDirectoryFailsAndLeavesItAlone() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("taken.deck")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            let precious = url.appendingPathComponent("precious.txt")
            try Data("keep me".utf8).write(to: precious)

            let error = expectDeckError {
                _ = try PackageStore.create(at: url, contentType: "org.test", schema: flashCardsSchema())
            }
            guard case .alreadyExists(let path) = error else {
                Issue.record("expected alreadyExists, got \(String(describing: error))")
                return
            }
            #expect(path == url.path)
            #expect(try FileManager.default.contentsOfDirectory(atPath: url.path) == ["precious.txt"])
            #expect(try Data(contentsOf: precious) == Data("keep me".utf8))
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["taken.deck"])
        }
    }

    @Test func createOverAnExistingPackageOrFileFails() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            try package.write { tx in
                try tx.insert("Deck", ["title": .string("keep")])
            }
            try package.close()
            let url = package.url
            let error = expectDeckError { _ = try makeTestStore(in: dir) }
            if case .alreadyExists = error {
            } else {
                Issue.record("expected alreadyExists, got \(String(describing: error))")
            }
            let reopened = try PackageStore.open(at: url, mode: .readOnly)
            #expect(try reopened.read { try $0.count(RecordQuery("Deck")) } == 1)

            let file = dir.appendingPathComponent("file.deck")
            try Data("x".utf8).write(to: file)
            let fileError = expectDeckError { _ = try makeTestStore(in: dir, name: "file.deck") }
            if case .alreadyExists = fileError {
            } else {
                Issue.record("expected alreadyExists, got \(String(describing: fileError))")
            }
            #expect(try Data(contentsOf: file) == Data("x".utf8))
        }
    }

    @Test func createInAMissingParentFailsWithoutLeftovers() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("no/such/parent/x.deck")
            let error = expectDeckError {
                _ = try PackageStore.create(at: url, contentType: "org.test", schema: flashCardsSchema())
            }
            guard case .notFound(let path) = error else {
                Issue.record("expected notFound, got \(String(describing: error))")
                return
            }
            #expect(path.hasSuffix("no/such/parent"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
        }
    }

    @Test(arguments: ["", "has space", "caf\u{E9}", String(repeating: "a", count: 256)])
    func createRefusesABadContentType(contentType: String) throws {
        try withTestDirectory { dir throws in
            let error = expectDeckError {
                _ = try PackageStore.create(
                    at: dir.appendingPathComponent("x.deck"), contentType: contentType,
                    schema: flashCardsSchema())
            }
            if case .invalidSchema = error {
            } else {
                Issue.record("expected invalidSchema, got \(String(describing: error))")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
        }
    }

    // MARK: Open errors

    @Test func openingAMissingPathIsNotFound() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("missing.deck")
            for mode in [PackageStore.Mode.readWrite, .readOnly] {
                let error = expectDeckError { _ = try PackageStore.open(at: url, mode: mode) }
                guard case .notFound(let path) = error else {
                    Issue.record("expected notFound, got \(String(describing: error))")
                    continue
                }
                #expect(path == url.path)
                #expect(error?.kind == .cannotOpen)
            }
            #expect(!FileManager.default.fileExists(atPath: url.path))
        }
    }

    @Test func openingARegularFileIsNotAPackage() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("file.deck")
            try Data("hello".utf8).write(to: url)
            let error = expectDeckError { _ = try PackageStore.open(at: url) }
            guard case .notAPackage(let path, let reason) = error else {
                Issue.record("expected notAPackage, got \(String(describing: error))")
                return
            }
            #expect(path == url.path)
            #expect(reason.contains("file"))
            #expect(try Data(contentsOf: url) == Data("hello".utf8))
        }
    }

    @Test func openingAnEmptyDirectoryIsNotAPackage() throws {
        try withTestDirectory { dir throws in
            let url = dir.appendingPathComponent("empty.deck")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            for mode in [PackageStore.Mode.readWrite, .readOnly] {
                let error = expectDeckError { _ = try PackageStore.open(at: url, mode: mode) }
                guard case .notAPackage(_, let reason) = error else {
                    Issue.record("expected notAPackage, got \(String(describing: error))")
                    continue
                }
                #expect(reason.contains("manifest.json"))
            }
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: url.path).isEmpty,
                "a failed open creates nothing")
        }
    }

    /// A closed package whose manifest is replaced by `manifest`.
    private func packageWithManifest(in dir: URL, _ manifest: String) throws -> URL {
        let package = try makeTestStore(in: dir)
        let url = package.url
        try package.close()
        try Data(manifest.utf8).write(to: url.appendingPathComponent("manifest.json"))
        return url
    }

    @Test(arguments: [
        "this is not json",
        "{}",
        #"{"format":"org.other.thing","formatVersion":1,"minimumReaderVersion":1,"contentType":"x"}"#,
        #"{"format":"org.deck.package","formatVersion":"one","minimumReaderVersion":1,"contentType":"x"}"#,
        "[1, 2, 3]",
    ])
    func aBadManifestIsNotAPackage(manifest: String) throws {
        try withTestDirectory { dir throws in
            let url = try packageWithManifest(in: dir, manifest)
            let error = expectDeckError { _ = try PackageStore.open(at: url) }
            guard case .notAPackage(let path, let reason) = error else {
                Issue.record("expected notAPackage, got \(String(describing: error))")
                return
            }
            #expect(path == url.path)
            #expect(reason.contains("manifest"))
        }
    }

    @Test func aManifestThatIsADirectoryIsNotAPackage() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            try package.close()
            let manifest = url.appendingPathComponent("manifest.json")
            try FileManager.default.removeItem(at: manifest)
            try FileManager.default.createDirectory(at: manifest, withIntermediateDirectories: false)
            let error = expectDeckError { _ = try PackageStore.open(at: url, mode: .readOnly) }
            if case .notAPackage = error {
            } else {
                Issue.record("expected notAPackage, got \(String(describing: error))")
            }
        }
    }

    @Test(arguments: [PackageStore.Mode.readWrite, .readOnly])
    func aManifestRequiringANewerReaderIsTooNew(mode: PackageStore.Mode) throws {
        try withTestDirectory { dir throws in
            let url = try packageWithManifest(
                in: dir,
                #"{"format":"org.deck.package","formatVersion":99,"minimumReaderVersion":99,"contentType":"org.test"}"#
            )
            let error = expectDeckError { _ = try PackageStore.open(at: url, mode: mode) }
            guard case .tooNew(let path, let version, let supported) = error else {
                Issue.record("expected tooNew, got \(String(describing: error))")
                return
            }
            #expect(path == url.path)
            #expect(version == 99)
            #expect(supported == PackageLayout.formatVersion)
            #expect(error?.description.contains("upgrade") == true)
        }
    }

    @Test func aNewerFormatThatOldReadersMayReadOpensReadOnlyOnly() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            try package.write { tx in
                try tx.insert("Deck", ["title": .string("t")])
            }
            let url = package.url
            try package.close()
            let current = PackageLayout.formatVersion
            let later = current + 1
            try Data(
                #"{"format":"org.deck.package","formatVersion":\#(later),"minimumReaderVersion":\#(current),"contentType":"org.deck.test.flashcards"}"#
                    .utf8
            )
            .write(to: url.appendingPathComponent("manifest.json"))
            // A later version's bookkeeping: a deck_ table and deck_meta key this version ignores.
            try rawStore(url).execute(
                "PRAGMA user_version = \(later); UPDATE deck_meta SET value = \(later) WHERE key = 'format_version'; "
                    + "CREATE TABLE deck_history(step INTEGER PRIMARY KEY, schema TEXT) STRICT; "
                    + "CREATE INDEX deck_history_schema ON deck_history(schema); "
                    + "INSERT INTO deck_meta VALUES ('schema_later', 'x')")

            let reader = try PackageStore.open(at: url, mode: .readOnly)
            #expect(try reader.read { try $0.count(RecordQuery("Deck")) } == 1)
            try reader.close()
            let error = expectDeckError { _ = try PackageStore.open(at: url, mode: .readWrite) }
            if case .tooNew(_, later, current) = error {
            } else {
                Issue.record("expected tooNew(\(later), \(current)), got \(String(describing: error))")
            }
            // The exception is for deck_ names only, and only in a newer store.
            try rawStore(url).execute("CREATE TABLE planted(x)")
            let planted = expectDeckError { _ = try PackageStore.open(at: url, mode: .readOnly) }
            if case .corrupt(_, let reason) = planted {
                #expect(reason.contains("planted"))
            } else {
                Issue.record("expected corrupt, got \(String(describing: planted))")
            }
            try rawStore(url).execute(
                "DROP TABLE planted; PRAGMA user_version = \(current); "
                    + "UPDATE deck_meta SET value = \(current) WHERE key = 'format_version'"
            )
            let refused = expectDeckError { _ = try PackageStore.open(at: url, mode: .readOnly) }
            if case .corrupt(_, let reason) = refused {
                #expect(reason.contains("deck_history"))
            } else {
                Issue.record("expected corrupt, got \(String(describing: refused))")
            }
        }
    }

    @Test func inconsistentManifestVersionsAreCorrupt() throws {
        try withTestDirectory { dir throws in
            let url = try packageWithManifest(
                in: dir,
                #"{"format":"org.deck.package","formatVersion":1,"minimumReaderVersion":2,"contentType":"x"}"#
            )
            let error = expectDeckError { _ = try PackageStore.open(at: url, mode: .readOnly) }
            if case .corrupt = error {
            } else {
                Issue.record("expected corrupt, got \(String(describing: error))")
            }
        }
    }

    @Test(arguments: [PackageStore.Mode.readWrite, .readOnly])
    func aMissingStoreIsCorrupt(mode: PackageStore.Mode) throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            try package.close()
            try FileManager.default.removeItem(at: url.appendingPathComponent("store.sqlite"))
            let error = expectDeckError { _ = try PackageStore.open(at: url, mode: mode) }
            guard case .corrupt(let path, let reason) = error else {
                Issue.record("expected corrupt, got \(String(describing: error))")
                return
            }
            #expect(path == url.path)
            #expect(reason.contains("store.sqlite"))
            #expect(
                !FileManager.default.fileExists(atPath: url.appendingPathComponent("store.sqlite").path),
                "open must not create a store")
        }
    }

    @Test(arguments: [PackageStore.Mode.readWrite, .readOnly])
    func aTruncatedStoreIsCorrupt(mode: PackageStore.Mode) throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            try package.write { tx in
                for i in 0..<200 { try tx.insert("Deck", ["title": .string("deck \(i)")]) }
            }
            let url = package.url
            try package.close()
            let store = url.appendingPathComponent("store.sqlite").path
            truncateFile(store, to: 100)
            let error = expectDeckError { _ = try PackageStore.open(at: url, mode: mode) }
            if case .corrupt = error {
            } else {
                Issue.record("expected corrupt, got \(String(describing: error))")
            }
            #expect(error?.kind == .invalidData)
            #expect(
                (try FileManager.default.attributesOfItem(atPath: store)[.size] as? Int) == 100,
                "open leaves the damage alone")
        }
    }

    @Test func aStoreThatIsAnotherSQLiteDatabaseIsNotAPackage() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            try package.close()
            let store = url.appendingPathComponent("store.sqlite").path
            try FileManager.default.removeItem(atPath: store)
            let other = try Database(path: store, mode: .create)
            try other.execute("CREATE TABLE notes(text); INSERT INTO notes VALUES ('hi');")
            other.close()
            for mode in [PackageStore.Mode.readWrite, .readOnly] {
                let error = expectDeckError { _ = try PackageStore.open(at: url, mode: mode) }
                guard case .notAPackage(_, let reason) = error else {
                    Issue.record("expected notAPackage, got \(String(describing: error))")
                    continue
                }
                #expect(reason.contains("application_id"))
            }
        }
    }

    @Test func aStoreWithAnotherFormatVersionOrNoSchemaIsCorrupt() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            try package.close()
            try rawStore(url).execute("PRAGMA user_version = 7")
            var error = expectDeckError { _ = try PackageStore.open(at: url, mode: .readOnly) }
            if case .corrupt(_, let reason) = error {
                #expect(reason.contains("7"))
            } else {
                Issue.record("expected corrupt, got \(String(describing: error))")
            }
            try rawStore(url).execute(
                "PRAGMA user_version = \(PackageLayout.formatVersion); DELETE FROM deck_meta WHERE key = 'schema';"
            )
            error = expectDeckError { _ = try PackageStore.open(at: url, mode: .readOnly) }
            if case .corrupt(_, let reason) = error {
                #expect(reason.contains("schema"))
            } else {
                Issue.record("expected corrupt, got \(String(describing: error))")
            }
            try rawStore(url).execute("INSERT INTO deck_meta VALUES ('schema', '{not json')")
            error = expectDeckError { _ = try PackageStore.open(at: url, mode: .readOnly) }
            if case .corrupt = error {
            } else {
                Issue.record("expected corrupt, got \(String(describing: error))")
            }
        }
    }

    @Test func aSymbolicLinkToAPackageIsRefused() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            try package.close()
            let link = dir.appendingPathComponent("link.deck")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: url)
            let error = expectDeckError { _ = try PackageStore.open(at: link) }
            if case .notAPackage(_, let reason) = error {
                #expect(reason.contains("link"))
            } else {
                Issue.record("expected notAPackage, got \(String(describing: error))")
            }
        }
    }

    // Root bypasses file permissions (access(2) and open(2) succeed regardless of mode bits),
    // so these can only be checked as an ordinary user.
    @Test(.enabled(if: geteuid() != 0, "root bypasses file permissions"))
    func anUnreadableDirectoryIsPermissionDenied() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            try package.close()
            #expect(chmod(url.path, 0o000) == 0)
            defer { _ = chmod(url.path, 0o755) }
            for mode in [PackageStore.Mode.readWrite, .readOnly] {
                let error = expectDeckError { _ = try PackageStore.open(at: url, mode: mode) }
                if case .permissionDenied(let path, _) = error {
                    #expect(path == url.path)
                } else {
                    Issue.record("expected permissionDenied, got \(String(describing: error))")
                }
            }
        }
    }

    @Test(.enabled(if: geteuid() != 0, "root bypasses file permissions"))
    func aReadOnlyDirectoryOpensForReadingOnly() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            try package.write { tx in
                try tx.insert("Deck", ["title": .string("t")])
            }
            let url = package.url
            try package.close()
            #expect(chmod(url.path, 0o555) == 0)
            defer { _ = chmod(url.path, 0o755) }
            let error = expectDeckError { _ = try PackageStore.open(at: url, mode: .readWrite) }
            if case .permissionDenied = error {
            } else {
                Issue.record("expected permissionDenied, got \(String(describing: error))")
            }
            let reader = try PackageStore.open(at: url, mode: .readOnly)
            #expect(try reader.read { try $0.count(RecordQuery("Deck")) } == 1)
        }
    }

    // MARK: Writers and readers

    @Test func aSecondWriterIsLockedOutAndReadersStillWork() throws {
        try withTestDirectory { dir throws in
            let writer = try makeTestStore(in: dir)
            let url = writer.url
            try writer.write { tx in try tx.insert("Deck", ["title": .string("committed")]) }
            let pending = try writer.beginTransaction()
            try pending.insert("Deck", ["title": .string("pending")])

            let error = expectDeckError { _ = try PackageStore.open(at: url, mode: .readWrite) }
            guard case .locked(let path, let pid) = error else {
                Issue.record("expected locked, got \(String(describing: error))")
                return
            }
            #expect(path == url.path)
            #expect(pid == getpid())
            #expect(error?.description.contains("pid \(getpid())") == true)
            #expect(error?.kind == .busy)
            #expect(WriterLock.holder(packagePath: url.path) == getpid())

            // Readers are not blocked, and see only the committed state.
            let reader = try PackageStore.open(at: url, mode: .readOnly)
            #expect(
                try reader.read { try $0.fetch(RecordQuery("Deck")) }.map { $0["title"] } == [
                    .string("committed")
                ])
            #expect(try reader.read { try $0.info() }.lockHolder == getpid())
            try reader.close()

            // The failed attempt did not disturb the writer.
            try pending.commit()
            try writer.close()
            #expect(WriterLock.holder(packagePath: url.path) == nil)

            let next = try PackageStore.open(at: url, mode: .readWrite)
            try next.write { tx in
                #expect(try tx.count(RecordQuery("Deck")) == 2)
                try tx.insert("Deck", ["title": .string("third")])
            }
            try next.close()
        }
    }

    @Test func closingTheWriterReleasesTheLockEvenWithoutAnExplicitClose() throws {
        try withTestDirectory { dir throws in
            var url: URL?
            do {
                let writer = try makeTestStore(in: dir)
                url = writer.url
                try writer.write { tx in try tx.insert("Deck", ["title": .string("x")]) }
            }  // deinit closes
            let reopened = try PackageStore.open(at: try #require(url), mode: .readWrite)
            #expect(try reopened.read { try $0.count(RecordQuery("Deck")) } == 1)
            try reopened.close()
        }
    }

    @Test func closeLeavesASingleFileStore() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            try package.write { tx in for i in 0..<50 { try tx.insert("Deck", ["title": .string("d\(i)")]) } }
            _ = try package.read { try $0.fetch(RecordQuery("Deck")) }
            let unsaved = try package.beginTransaction()
            try unsaved.insert("Deck", ["title": .string("unsaved")])
            try package.close(discardingChanges: true)
            try package.close()  // safe twice
            let names = try FileManager.default.contentsOfDirectory(atPath: url.path)
            #expect(!names.contains("store.sqlite-wal"))
            #expect(!names.contains("store.sqlite-shm"))
            let db = try rawStore(url)
            #expect(try db.pragma("journal_mode") == .text("delete"))
            #expect(try db.scalar("SELECT count(*) FROM Deck")?.int64 == 50, "close discards unsaved changes")
        }
    }

    @Test func aClosedPackageRefusesWork() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            try package.close()
            let checks: [(String, () throws -> Void)] = [
                ("insert", { try package.write { tx in try tx.insert("Deck", ["title": .string("x")]) } }),
                ("read", { _ = try package.read { try $0.count(RecordQuery("Deck")) } }),
                ("write", { try package.write { _ in } }),
                ("transaction", { _ = try package.beginTransaction() }),
                ("gc", { _ = try package.collectGarbage() }),
            ]
            for (name, body) in checks {
                let error = expectDeckError(body)
                guard case .closed(let path) = error else {
                    Issue.record("\(name): expected closed, got \(String(describing: error))")
                    continue
                }
                #expect(path == package.url.path)
            }
            // Closing again does nothing.
            try package.close()
        }
    }

    @Test func readOnlyOpenRefusesChanges() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let id = try package.write { tx in try tx.insert("Deck", ["title": .string("x")]) }.value
            let url = package.url
            try package.close()

            let reader = try PackageStore.open(at: url, mode: .readOnly)
            #expect(reader.mode == .readOnly)
            let checks: [(String, () throws -> Void)] = [
                ("insert", { try reader.write { tx in try tx.insert("Deck", ["title": .string("y")]) } }),
                (
                    "update",
                    { try reader.write { tx in try tx.update("Deck", id: id, ["title": .string("z")]) } }
                ),
                ("delete", { try reader.write { tx in try tx.delete("Deck", id: id) } }),
                ("upsert", { try reader.write { tx in try tx.upsert("Deck", ["title": .string("x")]) } }),
                ("write", { try reader.write { _ in } }),
                ("transaction", { _ = try reader.beginTransaction() }),
                ("gc", { _ = try reader.collectGarbage() }),
            ]
            for (name, body) in checks {
                let error = expectDeckError(body)
                guard case .readOnly(let path) = error else {
                    Issue.record("\(name): expected readOnly, got \(String(describing: error))")
                    continue
                }
                #expect(path == url.path)
            }
            #expect(
                try reader.read { try $0.fetch(RecordQuery("Deck")) }.map { $0["title"] } == [.string("x")])
            try reader.close()
            // A reader takes no lock and leaves no lock holder behind.
            #expect(WriterLock.holder(packagePath: url.path) == nil)
        }
    }

    @Test func openingForWritingRemovesTemporariesButReadingDoesNot() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            let url = package.url
            try package.close()
            let tmp = url.appendingPathComponent("tmp")
            try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
            try Data("junk".utf8).write(to: tmp.appendingPathComponent("blob-123.part"))
            try FileManager.default.createDirectory(
                at: tmp.appendingPathComponent("nested"), withIntermediateDirectories: true)
            try Data("junk".utf8).write(to: tmp.appendingPathComponent("nested/file"))

            try PackageStore.open(at: url, mode: .readOnly).close()
            #expect(temporaryFiles(url) == ["blob-123.part", "nested"])
            try PackageStore.open(at: url, mode: .readWrite).close()
            #expect(temporaryFiles(url).isEmpty)
        }
    }

    @Test func infoSummarisesThePackage() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            try package.write { tx in
                let deck = try tx.insert("Deck", ["title": .string("d")])
                try tx.insert(
                    "Card", ["front": .string("a"), "deck": .reference(deck), "image": .data(testBytes(100))])
                try tx.insert("Card", ["front": .string("b"), "image": .data(testBytes(100))])
                try tx.insert("Card", ["front": .string("c"), "image": .data(testBytes(5))])
            }
            let info = try package.read { try $0.info() }
            #expect(info.entities.map(\.name) == ["Deck", "Card", "Tag"])
            #expect(info.entities.map(\.records) == [1, 3, 0])
            #expect(info.blobCount == 1)
            #expect(info.blobBytes == 100)
            #expect(info.referencedBytes == 200)
            #expect(info.externalValues == 2)
            #expect(info.inlineValues == 1)
            #expect(info.manifest.contentType == flashCardsType)
            #expect(info.schemaVersion == "1.0.0")
            #expect(info.lockHolder == getpid())
            try package.close()
        }
    }
}
