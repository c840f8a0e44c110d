import DeckSQLite
import DeckStore
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@Suite("Verifier", .timed)
struct VerifierTests {
    static let blobA = testBytes(100, seed: 1)
    static let blobB = testBytes(200, seed: 2)

    /// A closed package: one deck, one tag, four cards (blob A twice, blob B once, one inline image).
    private func populatedPackage(in dir: URL) throws -> URL {
        let package = try makeTestStore(in: dir)
        try package.write { tx in
            let deck = try tx.insert("Deck", ["title": .string("Spanish")])
            let tag = try tx.insert("Tag", ["name": .string("verbs")])
            try tx.insert(
                "Card",
                [
                    "front": .string("a"), "image": .data(Self.blobA), "deck": .reference(deck),
                    "tags": .references([tag]),
                ])
            try tx.insert(
                "Card", ["front": .string("b"), "image": .data(Self.blobB), "deck": .reference(deck)])
            try tx.insert("Card", ["front": .string("c"), "image": .data(Self.blobA)])
            try tx.insert("Card", ["front": .string("d"), "image": .data(testBytes(5))])
        }
        try package.close()
        return package.url
    }

    private func blobPath(_ url: URL, _ data: Data) -> String {
        url.appendingPathComponent("blobs/" + blobName(data)).path
    }

    /// Expects exactly one finding with `code`, of `severity`, and returns it.
    @discardableResult
    private func expectOnly(
        _ report: VerificationReport, _ code: String, _ severity: Finding.Severity,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Finding? {
        #expect(report.codes == [code], "findings: \(report.findings)", sourceLocation: sourceLocation)
        let finding = report.finding(code)
        #expect(finding?.severity == severity, sourceLocation: sourceLocation)
        #expect(report.isValid == (severity == .untidy), sourceLocation: sourceLocation)
        return finding
    }

    @Test func aFreshPackageWithDataVerifiesClean() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            let report = try PackageVerifier.verify(at: url)
            #expect(report.isValid)
            #expect(report.findings.isEmpty, "findings: \(report.findings)")
            #expect(report.path == url.standardizedFileURL.path)
            #expect(report.records == 6)
            #expect(report.blobsChecked == 2)
            #expect(report.bytesChecked == 300)
        }
    }

    @Test func anEmptyPackageVerifiesClean() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            try package.close()
            let report = try PackageVerifier.verify(at: package.url)
            #expect(report.findings.isEmpty, "findings: \(report.findings)")
            #expect(report.records == 0)
        }
    }

    @Test func verifyingChangesNothing() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            try Data("x".utf8).write(to: url.appendingPathComponent("blobs/stray.txt"))
            let store = url.appendingPathComponent("store.sqlite")
            let before = try Data(contentsOf: store)
            let names = try FileManager.default.contentsOfDirectory(atPath: url.path).sorted()
            _ = try PackageVerifier.verify(at: url)
            #expect(try Data(contentsOf: store) == before)
            #expect(try FileManager.default.contentsOfDirectory(atPath: url.path).sorted() == names)
            #expect(blobFiles(url).contains("stray.txt"))
        }
    }

    /// A package whose store has a hot rollback journal, as a writer killed in a transaction in
    /// rollback mode leaves it (the switch to or from WAL mode of an upgrade or a migration): the
    /// store and journal are copied while a transaction that changed every card is open, with
    /// more pages changed than the cache holds (so that SQLite has synced the journal's header
    /// and written pages to the store: a journal whose header is still zeros is not hot).
    static func packageWithHotJournal(from url: URL, in dir: URL) throws -> URL {
        let copy = dir.appendingPathComponent("hot.deck")
        try FileManager.default.copyItem(at: url, to: copy)
        let db = try rawStore(url)
        defer { db.close() }
        try db.execute(
            "PRAGMA journal_mode=DELETE; PRAGMA cache_size=1; BEGIN IMMEDIATE; "
                + "UPDATE \"Card\" SET front = front || hex(zeroblob(20000))")
        let store = PackageLayout.store
        for name in [store, store + "-journal"] {
            let target = copy.appendingPathComponent(name)
            try? FileManager.default.removeItem(at: target)
            try FileManager.default.copyItem(at: url.appendingPathComponent(name), to: target)
        }
        try db.execute("ROLLBACK")
        return copy
    }

    /// A hot rollback journal is no corruption: nothing is lost, but only a writer may roll it
    /// back, so verify reports that the package needs recovery (its own severity, not valid), and
    /// after a writer opened it once it verifies clean with every value.
    @Test func aHotJournalNeedsRecoveryAndIsNotCorruption() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            let hot = try Self.packageWithHotJournal(from: url, in: dir)
            let report = try PackageVerifier.verify(at: hot)
            #expect(report.codes == ["store-needs-recovery"], "findings: \(report.findings)")
            #expect(report.findings.first?.severity == .needsRecovery)
            #expect(report.findings.first?.message.contains("deck gc") == true)
            #expect(!report.isValid && report.needsRecovery)
            let writer = try PackageStore.open(at: hot)
            try writer.close()
            let after = try PackageVerifier.verify(at: hot)
            #expect(after.isValid && after.findings.isEmpty && !after.needsRecovery, "\(after.findings)")
            let fronts = { (url: URL) throws -> [String] in
                let store = try PackageStore.open(at: url, mode: .readOnly)
                defer { try? store.close() }
                return try store.read {
                    try $0.fetch(RecordQuery("Card")).map { $0["front"]?.description ?? "" }
                }
            }
            #expect(try fronts(hot) == fronts(url))
        }
    }

    @Test func aFlippedByteInABlobIsCorruption() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            try flipByte(at: blobPath(url, Self.blobB), offset: 17)
            let report = try PackageVerifier.verify(at: url)
            let finding = expectOnly(report, "blob-corrupt", .corruption)
            #expect(finding?.object == SHA256Hasher.hash(Self.blobB).hexDigest)
            #expect(report.blobsChecked == 2)
        }
    }

    @Test func aDeletedBlobIsMissing() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            try FileManager.default.removeItem(atPath: blobPath(url, Self.blobA))
            let report = try PackageVerifier.verify(at: url)
            let finding = expectOnly(report, "blob-missing", .corruption)
            #expect(finding?.object == SHA256Hasher.hash(Self.blobA).hexDigest)
            #expect(finding?.message.contains(blobName(Self.blobA)) == true)
        }
    }

    @Test func anOrphanBlobFileIsUntidy() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            let orphan = testBytes(64, seed: 77)
            let path = blobPath(url, orphan)
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try orphan.write(to: URL(fileURLWithPath: path))
            let report = try PackageVerifier.verify(at: url)
            let finding = expectOnly(report, "blob-orphan", .untidy)
            #expect(finding?.object == path)
        }
    }

    @Test func strayFilesInBlobsAreUntidy() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            let blobs = url.appendingPathComponent("blobs")
            try Data("notes".utf8).write(to: blobs.appendingPathComponent("README.txt"))
            let fan = String(SHA256Hasher.hash(Self.blobA).hexDigest.prefix(2))
            try Data("x".utf8).write(to: blobs.appendingPathComponent("\(fan)/not-a-digest"))
            // A well-formed digest in the wrong fan-out directory is stray too.
            let misplaced = SHA256Hasher.hash(Data("misplaced".utf8)).hexDigest
            let wrongFan = misplaced.hasPrefix("00") ? "01" : "00"
            try FileManager.default.createDirectory(
                at: blobs.appendingPathComponent(wrongFan), withIntermediateDirectories: true)
            try Data("misplaced".utf8).write(to: blobs.appendingPathComponent("\(wrongFan)/\(misplaced)"))
            let report = try PackageVerifier.verify(at: url)
            #expect(
                report.codes == ["stray-file", "stray-file", "stray-file"], "findings: \(report.findings)")
            #expect(report.findings.allSatisfy { $0.severity == .untidy })
            #expect(report.isValid)
            #expect(
                Set(report.findings.map { URL(fileURLWithPath: $0.object).lastPathComponent }) == [
                    "README.txt", "not-a-digest", misplaced,
                ])
        }
    }

    @Test func aFileInTmpIsATemporary() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            let tmp = url.appendingPathComponent("tmp")
            try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
            try Data("partial".utf8).write(to: tmp.appendingPathComponent("blob-1234.part"))
            let report = try PackageVerifier.verify(at: url)
            let finding = expectOnly(report, "temporary", .untidy)
            #expect(finding?.object == tmp.appendingPathComponent("blob-1234.part").path)
        }
    }

    @Test func aLiveWritersTemporariesAreNotReported() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            let writer = try PackageStore.open(at: url, mode: .readWrite)
            let tmp = url.appendingPathComponent("tmp")
            try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
            try Data("in progress".utf8).write(to: tmp.appendingPathComponent("blob-live.part"))
            let report = try PackageVerifier.verify(at: url)
            #expect(report.findings.isEmpty, "findings: \(report.findings)")
            try writer.close()
        }
    }

    @Test func refsChangedByRawSQLAreAMismatch() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            let digest = SHA256Hasher.hash(Self.blobA).hexDigest
            try rawStore(url).run("UPDATE deck_blob SET refs = 5 WHERE digest = ?", [.text(digest)])
            let report = try PackageVerifier.verify(at: url)
            let finding = expectOnly(report, "refcount-mismatch", .corruption)
            #expect(finding?.object == digest)
            #expect(finding?.message.contains("5") == true)
            #expect(finding?.message.contains("2") == true)
        }
    }

    @Test func aWrongBlobSizeIsCorruption() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            try rawStore(url).run(
                "UPDATE deck_blob SET size = 99 WHERE digest = ?",
                [.text(SHA256Hasher.hash(Self.blobB).hexDigest)])
            expectOnly(try PackageVerifier.verify(at: url), "blob-size", .corruption)
        }
    }

    @Test func aReferenceMissingFromDeckBlobIsUnregistered() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            try rawStore(url).run(
                "DELETE FROM deck_blob WHERE digest = ?", [.text(SHA256Hasher.hash(Self.blobB).hexDigest)])
            let report = try PackageVerifier.verify(at: url)
            // The file is now also an orphan as far as deck_blob knows.
            #expect(report.codes.contains("blob-unregistered"), "findings: \(report.findings)")
            #expect(!report.isValid)
        }
    }

    @Test func aDroppedTriggerIsMissing() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            try rawStore(url).execute(#"DROP TRIGGER "deck_refs:Card.image:insert""#)
            let finding = expectOnly(try PackageVerifier.verify(at: url), "trigger-missing", .corruption)
            #expect(finding?.object == "deck_refs:Card.image:insert")
        }
    }

    @Test func aDroppedIndexIsUntidyAndAnExtraTableIsCorruption() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            try rawStore(url).execute(#"DROP INDEX "Card.deck.index""#)
            expectOnly(try PackageVerifier.verify(at: url), "index-missing", .untidy)
            // Re-created by hand with another definition: altered, not the derived index.
            try rawStore(url).execute(#"CREATE INDEX "Card.deck.index" ON Card(deck)"#)
            expectOnly(try PackageVerifier.verify(at: url), "index-altered", .corruption)
            try rawStore(url).execute(
                #"DROP INDEX "Card.deck.index"; CREATE INDEX "Card.deck.index" ON "Card"("deck"); CREATE TABLE scratch(x);"#
            )
            expectOnly(try PackageVerifier.verify(at: url), "table-unknown", .corruption)
        }
    }

    @Test func aRowWithAnUnknownEntity() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            try rawStore(url).run("UPDATE Card SET _entity = 'Ghost' WHERE front = 'd'")
            let finding = expectOnly(try PackageVerifier.verify(at: url), "entity-unknown", .corruption)
            #expect(finding?.object == "Card")
            #expect(finding?.message.contains("Ghost") == true)
            #expect(finding?.message.hasSuffix("(the first: #4)") == true, "\(finding?.message ?? "")")
            // No reader takes the row for a record of any entity (spec 6.1): fetches, counts and
            // conditions of the hierarchy leave it out.
            let document = try PackageStore.open(at: url, mode: .readOnly)
            defer { try? document.close() }
            try document.read { reader throws in
                let fronts = try reader.fetch(RecordQuery("Card")).compactMap { $0["front"]?.description }
                #expect(!fronts.isEmpty && !fronts.contains("d"), "\(fronts)")
                #expect(try reader.count(RecordQuery("Card")) == fronts.count)
            }
        }
    }

    @Test func aDanglingToOneReference() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            let db = try rawStore(url)
            try db.execute("PRAGMA foreign_keys = OFF")
            try db.run(
                "INSERT INTO Card(_gid, _entity, front, back, deck) VALUES (randomblob(16), 'Card', 'ghost', '', 999)"
            )
            let id = db.lastInsertRowID
            db.close()
            let report = try PackageVerifier.verify(at: url)
            let finding = expectOnly(report, "dangling-reference", .corruption)
            #expect(finding?.object == "Card #\(id)")
            #expect(finding?.message.contains("Deck") == true)
        }
    }

    /// A join table's rows have no rowid: a dangling pair is named by its source and target.
    @Test func aDanglingManyToManyPairIsNamedByItsPair() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            let db = try rawStore(url)
            try db.execute("PRAGMA foreign_keys = OFF")
            let card = try #require(try db.scalar("SELECT min(_pk) FROM Card")?.int64)
            try db.run(
                #"INSERT INTO "Card.tags"(source, target) VALUES (?, 998), (?, 999)"#,
                [.integer(card), .integer(card)])
            db.close()
            let report = try PackageVerifier.verify(at: url)
            #expect(
                report.findings.map(\.object).sorted() == [
                    "Card.tags (source \(card), target 998)", "Card.tags (source \(card), target 999)",
                ], "\(report.findings)")
            #expect(report.codes == ["dangling-reference", "dangling-reference"])
        }
    }

    @Test func aNoActionDeleteIsReportedAsADanglingReference() throws {
        // DeleteRule.noAction is documented as "related records keep a dangling reference
        // (PackageVerifier reports it)".
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir, schema: flashCardsSchema(cardsDeleteRule: .noAction))
            let card = try package.write { tx in
                let deck = try tx.insert("Deck", ["title": .string("gone")])
                let card = try tx.insert("Card", ["front": .string("a"), "deck": .reference(deck)])
                try tx.delete("Deck", id: deck)
                return card
            }.value
            try package.close()
            let report = try PackageVerifier.verify(at: package.url)
            let finding = report.finding("dangling-reference")
            #expect(finding != nil, "findings: \(report.findings)")
            #expect(finding?.object == "Card #\(card)")
        }
    }

    @Test func aTruncatedStoreIsUnreadable() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            truncateFile(url.appendingPathComponent("store.sqlite").path, to: 100)
            let report = try PackageVerifier.verify(at: url)
            #expect(!report.isValid)
            #expect(
                report.codes.contains("store-unreadable") || report.codes.contains("sqlite-integrity"),
                "findings: \(report.findings)")
        }
    }

    @Test func aStoreWithADamagedPageFailsTheIntegrityCheck() throws {
        try withTestDirectory { dir throws in
            let package = try makeTestStore(in: dir)
            try package.write { tx in
                for i in 0..<500 {
                    try tx.insert("Card", ["front": .string(String(repeating: "card \(i) ", count: 20))])
                }
            }
            try package.close()
            let store = package.url.appendingPathComponent("store.sqlite").path
            // Overwrite the middle of the last page (a table leaf) with garbage.
            var data = try Data(contentsOf: URL(fileURLWithPath: store))
            let pageSize = 4_096
            let start = data.count - pageSize + 8
            for i in 0..<64 { data[start + i] = 0xFF }
            try data.write(to: URL(fileURLWithPath: store))
            let report = try PackageVerifier.verify(at: package.url)
            #expect(!report.isValid, "findings: \(report.findings)")
            #expect(
                report.codes.contains("sqlite-integrity") || report.codes.contains("store-unreadable"),
                "findings: \(report.findings)")
        }
    }

    /// The checks run on two connections at once (SQLite's checks and the values on a second
    /// one) when more than one thread is allowed: they must find exactly what they find one after
    /// another, and nothing but the integrity finding when the store is damaged.
    @Test func twoConnectionsFindWhatOneFinds() throws {
        try withTestDirectory { dir throws in
            var damages: [(String, (URL) throws -> Void)] = [
                ("nothing", { _ in }),
                ("refs", { try rawStore($0).run("UPDATE deck_blob SET refs = 5") }),
                (
                    "trigger and cell",
                    { url in
                        try rawStore(url).execute(#"DROP TRIGGER "deck_refs:Card.image:insert""#)
                        try rawStore(url).run("UPDATE deck_blob SET size = 99")
                        try rawStore(url).run("UPDATE Card SET _entity = 'Ghost' WHERE front = 'd'")
                    }
                ),
                (
                    "content type",
                    { try rawStore($0).run("UPDATE deck_meta SET value = 'x.y' WHERE key = 'content_type'") }
                ),
            ]
            damages.append(
                (
                    "page",
                    { url in
                        // Enough cards that the last page is one of theirs (a table leaf), then garbage in it.
                        let package = try PackageStore.open(at: url)
                        try package.write { tx in
                            for i in 0..<500 {
                                try tx.insert(
                                    "Card", ["front": .string(String(repeating: "card \(i) ", count: 20))])
                            }
                        }
                        try package.close()
                        let store = url.appendingPathComponent("store.sqlite").path
                        var data = try Data(contentsOf: URL(fileURLWithPath: store))
                        for i in 0..<64 { data[data.count - 4_096 + 8 + i] = 0xFF }
                        try data.write(to: URL(fileURLWithPath: store))
                    }
                ))
            for (index, (name, damage)) in damages.enumerated() {
                let folder = dir.appendingPathComponent("\(index)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
                let url = try populatedPackage(in: folder)
                try damage(url)
                for quick in [false, true] {
                    let one = try PackageVerifier.verify(at: url, options: .init(quick: quick, threads: 1))
                    let two = try PackageVerifier.verify(at: url, options: .init(quick: quick, threads: 2))
                    if name == "page" {
                        // SQLite's check of this page either lists what it finds or stops at it
                        // with SQLITE_CORRUPT, from one run to the next: only the codes are fixed.
                        for report in [one, two] {
                            #expect(Set(report.codes).isSubset(of: ["sqlite-integrity", "store-unreadable"]))
                            // The finding's object is the store; its message does not name it again.
                            #expect(!report.findings.contains { $0.message.contains("(in \($0.object))") })
                        }
                    } else {
                        #expect(two.findings == one.findings, "\(name), quick \(quick)")
                        #expect(two.records == one.records && two.blobsChecked == one.blobsChecked, "\(name)")
                        #expect(two.bytesChecked == one.bytesChecked, "\(name)")
                    }
                    if name == "nothing" {
                        #expect(two.findings.isEmpty && two.records == 6, "\(two.records)")
                    }
                    if name != "nothing" { #expect(!two.isValid, "\(name)") }
                }
            }
        }
    }

    /// A folder of blobs this user may not read is a permission error (exit 66), as an unreadable
    /// store is, not corruption blamed on the store.
    @Test(.enabled(if: geteuid() != 0, "root bypasses file permissions"))
    func anUnreadableBlobFolderIsAPermissionError() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            let folder = (blobPath(url, Self.blobA) as NSString).deletingLastPathComponent
            try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: folder)
            defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder) }
            for threads in [1, 2] {
                let error = #expect(throws: DeckError.self) {
                    try PackageVerifier.verify(at: url, options: .init(threads: threads))
                }
                guard case .permissionDenied(folder, _) = error else {
                    Issue.record("expected permissionDenied(\(folder)), got \(String(describing: error))")
                    continue
                }
            }
        }
    }

    @Test func aMissingStoreAndAForeignStore() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            let store = url.appendingPathComponent("store.sqlite")
            let saved = try Data(contentsOf: store)
            try FileManager.default.removeItem(at: store)
            expectOnly(try PackageVerifier.verify(at: url), "store-missing", .corruption)

            let other = try Database(path: store.path, mode: .create)
            try other.execute("CREATE TABLE t(x)")
            other.close()
            expectOnly(try PackageVerifier.verify(at: url), "store-identity", .corruption)

            try FileManager.default.removeItem(at: store)
            try saved.write(to: store)
            try rawStore(url).execute("PRAGMA user_version = \(PackageLayout.formatVersion + 1)")
            expectOnly(try PackageVerifier.verify(at: url), "store-metadata", .corruption)
        }
    }

    @Test func aContentTypeMismatch() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            try rawStore(url).run("UPDATE deck_meta SET value = 'org.other.type' WHERE key = 'content_type'")
            let finding = expectOnly(
                try PackageVerifier.verify(at: url), "content-type-mismatch", .corruption)
            #expect(finding?.message.contains("org.other.type") == true)
            #expect(finding?.message.contains(flashCardsType) == true)
        }
    }

    @Test func quickModeSkipsHashingButFindsMissingBlobs() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            try flipByte(at: blobPath(url, Self.blobB), offset: 0)
            let quick = try PackageVerifier.verify(at: url, options: .init(quick: true))
            #expect(quick.blobsChecked == 0)
            #expect(quick.bytesChecked == 0)
            #expect(quick.findings.isEmpty, "quick mode does not hash, so a same-size flip goes unseen")
            let full = try PackageVerifier.verify(at: url, options: .init(quick: false, threads: 1))
            #expect(full.codes == ["blob-corrupt"])

            try FileManager.default.removeItem(atPath: blobPath(url, Self.blobA))
            let quickAgain = try PackageVerifier.verify(at: url, options: .init(quick: true))
            #expect(quickAgain.codes == ["blob-missing"])
            #expect(quickAgain.blobsChecked == 0)
        }
    }

    @Test func progressIsReportedUpToTheTotal() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            let seen = Locked<[(Int64, Int64)]>([])
            let report = try PackageVerifier.verify(
                at: url,
                options: .init(
                    threads: 2, progress: { done, total in seen.withLock { $0.append((done, total)) } }))
            #expect(report.isValid)
            let calls = seen.withLock { $0 }
            #expect(calls.count == 2)
            #expect(calls.allSatisfy { $0.1 == 300 })
            #expect(calls.map(\.0).max() == 300)
        }
    }

    @Test func findingsAreSortedCorruptionFirst() throws {
        try withTestDirectory { dir throws in
            let url = try populatedPackage(in: dir)
            try Data("x".utf8).write(to: url.appendingPathComponent("blobs/zzz.txt"))
            try FileManager.default.removeItem(atPath: blobPath(url, Self.blobA))
            try rawStore(url).run("UPDATE Card SET _entity = 'Ghost' WHERE front = 'd'")
            let report = try PackageVerifier.verify(at: url)
            #expect(report.codes == ["blob-missing", "entity-unknown", "stray-file"])
            #expect(report.findings.map(\.severity) == [.corruption, .corruption, .untidy])
            #expect(report.findings[0].description.hasPrefix("corruption: "))
        }
    }

    // MARK: Paths that are not packages

    @Test func verifyingAFileIsNotAPackage() throws {
        try withTestDirectory { dir throws in
            let file = dir.appendingPathComponent("plain.txt")
            try Data("hi".utf8).write(to: file)
            let error = expectDeckError { _ = try PackageVerifier.verify(at: file) }
            if case .notAPackage(let path, _) = error {
                #expect(path == file.path)
            } else {
                Issue.record("expected notAPackage, got \(String(describing: error))")
            }
            let empty = dir.appendingPathComponent("empty.deck")
            try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: false)
            let emptyError = expectDeckError { _ = try PackageVerifier.verify(at: empty) }
            if case .notAPackage = emptyError {
            } else {
                Issue.record("expected notAPackage, got \(String(describing: emptyError))")
            }
        }
    }

    @Test func verifyingAMissingPathIsNotFound() throws {
        try withTestDirectory { dir throws in
            let missing = dir.appendingPathComponent("missing.deck")
            let error = expectDeckError { _ = try PackageVerifier.verify(at: missing) }
            if case .notFound(let path) = error {
                #expect(path == missing.path)
            } else {
                Issue.record("expected notFound, got \(String(describing: error))")
            }
        }
    }
}
