import DeckStore
import DeckTestTiming
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Two real Syncthing instances (Scripts/bootstrap installs it), on 127.0.0.1 only, share a
/// folder holding a package. The same document is edited on both while they are disconnected;
/// once they reconnect, Syncthing keeps one version as `store.sqlite` and the other beside it as
/// a conflict copy (spec section 2.4), which `deck verify` reports (`sync-conflict`, the package
/// still valid) and `deck diff --conflicts` compares with the store. Not run under the
/// sanitizers (Scripts/sanitize leaves the end-to-end suites to the plain pass).
@Suite("End to end: Syncthing's conflict copies", .timed)
struct EndToEndSyncthingTests {
    /// One side's package after its edit, before the two reconnect.
    struct Edited {
        /// The SHA-256 of `store.sqlite` and of `lock`.
        let store: String
        let lock: String
        /// The store's modification time, which Syncthing compares first to pick the winner.
        let modified: timespec
        /// The global id of the card the side added.
        let card: String
    }

    @Test func editsOnTwoDevicesLeaveAConflictCopyThatDeckReportsAndCompares() throws {
        try #require(syncthingExecutable != nil, "syncthing is not installed: run Scripts/bootstrap")
        let started = ContinuousClock.now
        let pair = try SyncthingPair()
        defer {
            let left = pair.stop()
            #expect(left.isEmpty, "Syncthing processes still running after SIGKILL: \(left)")
        }
        let (a, b) = (pair.a, pair.b)
        let folder = SyncthingPair.folderID
        let written = try pair.writtenConfigurationProblems()
        try #require(written.isEmpty, "not on 127.0.0.1 only: \(written)")
        try pair.start()
        let running = try pair.runningConfigurationProblems()
        try #require(running.isEmpty, "not on 127.0.0.1 only, or an outside contact on: \(running)")
        try pair.waitUntil("A and B are connected", seconds: 30) {
            try a.isConnected(to: b) && b.isConnected(to: a)
        }

        // A makes the package in the shared folder; B receives all of it.
        let packageA = a.folder + "/Spanish.deck"
        let packageB = b.folder + "/Spanish.deck"
        e2eExpectSuccess(try deck("new", packageA, "--sample", "flashcards"))
        try a.scan(folder)
        try pair.waitUntil("B has A's package and both are idle", seconds: 30) {
            let tree = SyncthingPair.tree(a.folder)
            return try tree["Spanish.deck/store.sqlite"] != nil && tree == SyncthingPair.tree(b.folder)
                && a.isSettled(folder, peer: b) && b.isSettled(folder, peer: a)
        }

        // Apart, each side edits the same document differently: A first, then B. B pauses A
        // (closing the connection and refusing A's redials) and later resumes it, dialing A at
        // once: were both to pause and resume, both would dial at the same moment, each from its
        // listening port, making one TCP connection (a simultaneous open) on which both are TLS
        // clients, which Syncthing 1.19 drops only after 20 s.
        try b.pause(a)
        try pair.waitUntil("A and B are disconnected", seconds: 15) {
            try !a.isConnected(to: b) && !b.isConnected(to: a)
        }
        let editedA = try edit(packageA, front: "casa", back: "house", hola: "hello (A)")
        try a.scan(folder)
        let editedB = try edit(packageB, front: "libro", back: "book", hola: "hello (B)")
        try b.scan(folder)
        // Syncthing keeps the version with the later modification time as the file.
        try #require(
            (editedA.modified.tv_sec, editedA.modified.tv_nsec)
                < (editedB.modified.tv_sec, editedB.modified.tv_nsec),
            "B's store is not newer than A's: \(editedA.modified) \(editedB.modified)")

        // Together again: Syncthing resolves the conflict on the losing side, and the copy it
        // makes there travels to the other.
        try b.resume(a)
        try pair.waitUntil(
            "both hold the same files with a conflict copy of the store", seconds: 40
        ) {
            let tree = SyncthingPair.tree(a.folder)
            let copies = tree.keys.compactMap {
                SyncConflictCopy.recognize(($0 as NSString).lastPathComponent)
            }
            return try copies.contains(where: \.isStore) && tree == SyncthingPair.tree(b.folder)
                && a.isSettled(folder, peer: b) && b.isSettled(folder, peer: a)
        }

        var copyName = ""
        for package in [packageA, packageB] {
            let copies = SyncConflictCopy.find(in: URL(fileURLWithPath: package))
            let stores = copies.filter(\.isStore)
            let locks = copies.filter { $0.original == "lock" }
            try #require(stores.count == 1, "\(copies)")
            let copy = stores[0]
            copyName = copy.name
            #expect(copy.service == "Syncthing")
            // Spec 2.4's mark (7 characters among A–Z and 0–9); Syncthing's short ids are
            // base 32 (A–Z, 2–7), the first 7 characters of a device id.
            #expect(
                copy.name.range(
                    of: #"^store\.sync-conflict-[0-9]{8}-[0-9]{6}-[A-Z2-7]{7}\.sqlite$"#,
                    options: .regularExpression) != nil, "\(copy.name)")
            #expect([a.shortID, b.shortID].contains(String(copy.name.dropLast(".sqlite".count).suffix(7))))
            // Two writers' pids in `lock` differ: a conflict copy of it too, and of nothing else
            // (the manifest and the blob files are the same on both sides).
            #expect(locks.count == (editedA.lock == editedB.lock ? 0 : 1), "\(copies)")
            #expect(copies.count == stores.count + locks.count, "\(copies)")

            // B's later edit won the store; A's is in the copy, byte for byte.
            #expect(try digest(package + "/store.sqlite") == editedB.store)
            #expect(try digest(package + "/" + copy.name) == editedA.store)
            #expect(try digest(package + "/lock") == editedB.lock)
            for lock in locks { #expect(try digest(package + "/" + lock.name) == editedA.lock) }

            try expectVerifyReports(package, copies: copies)
            try expectDiffShowsTheOtherSide(package, copy: copy.name, editedA: editedA, editedB: editedB)
        }

        // Whose short id the copy's name carries, and who made it: the losing side (A) moves its
        // file aside and pulls the winner's, and Syncthing names the copy after the device that
        // made the winning version (B), not after the one whose edits it holds (A; Syncthing's
        // database says who last changed each file).
        let named = String(copyName.dropLast(".sqlite".count).suffix(7))
        #expect(named == b.shortID, "\(copyName): A is \(a.shortID), B \(b.shortID)")
        let madeBy = try a.modifiedBy("Spanish.deck/" + copyName, in: folder)
        #expect(madeBy == a.shortID, "the copy was made by \(madeBy ?? "?"), not A (\(a.shortID))")
        #expect(try a.modifiedBy("Spanish.deck/store.sqlite", in: folder) == b.shortID)

        // `deck merge --conflicts` on A folds A's edits (in the copy) into the store and removes
        // the copies; Syncthing carries the merged store and the removals to B: one document with
        // both sides' changes, the same on both, and no conflict copy left.
        let merged = try deck("merge", "--conflicts", packageA)
        e2eExpectSuccess(merged)
        #expect(merged.stdout.hasPrefix("merged \(copyName): 1 record inserted"), "\(merged.stdout)")
        // Both changed hola's back: B's later change stands, A's is reported as lost.
        #expect(merged.stdout.contains(#"kept "hello (B)", lost "hello (A)""#), "\(merged.stdout)")
        try a.scan(folder)
        try pair.waitUntil("B has the merged store and no conflict copy, and both are idle", seconds: 40) {
            let tree = SyncthingPair.tree(a.folder)
            let copies = tree.keys.filter {
                SyncConflictCopy.recognize(($0 as NSString).lastPathComponent) != nil
            }
            return try copies.isEmpty && tree == SyncthingPair.tree(b.folder) && a.isSettled(folder, peer: b)
                && b.isSettled(folder, peer: a)
        }
        for package in [packageA, packageB] {
            let verified = try deck("verify", package)
            e2eExpectSuccess(verified)
            #expect(!verified.stdout.contains("sync-conflict"), "\(package): \(verified.stdout)")
            let cards = try deck("query", package, "Card", "--where", "front == 'casa' or front == 'libro'")
            #expect(cards.stdout.contains("(2 records)"), "\(package): \(cards.stdout)")
            let hola = try deck("query", package, "Card", "--where", "front == 'hola'", "--json")
            #expect(hola.stdout.contains(#""back":"hello (B)""#), "\(package): \(hola.stdout)")
        }
        #expect(try digest(packageA + "/store.sqlite") == digest(packageB + "/store.sqlite"))
        func seconds(_ duration: Duration) -> String {
            String(
                format: "%.1f s",
                Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
        }
        print(
            "End to end: Syncthing (\(SyncthingPair.version)): B's later edit won store.sqlite; A's is in "
                + "\(copyName), named after \(named == b.shortID ? "B (the winner)" : "A (the loser)") "
                + "and made by A; \(seconds(ContinuousClock.now - started)); waited "
                + pair.waits.map { "\(seconds($0.time)) until \($0.what)" }.joined(separator: ", "))
    }

    /// Adds a card and changes the "hola" card's back with the `deck` CLI, then checks that the
    /// package is at rest (the CLI closed it: no log beside the store, nothing in `tmp/`).
    private func edit(_ package: String, front: String, back: String, hola: String) throws -> Edited {
        e2eExpectSuccess(try deck("insert", package, "Card", "front=\(front)", "back=\(back)"))
        let updated = try deck("update", package, "Card", "back=\(hola)", "--where", "front == 'hola'")
        e2eExpectSuccess(updated)
        #expect(updated.stdout == "Updated 1 record\n")
        let names = try FileManager.default.contentsOfDirectory(atPath: package)
        #expect(names.filter { $0.hasPrefix("store.sqlite-") }.isEmpty, "not at rest: \(names)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: package + "/tmp").isEmpty)
        let cards = try e2eJSONArray(
            try deck("query", package, "Card", "--where", "front == '\(front)'", "--json").stdout)
        let card = try #require(cards.first?["_gid"] as? String, "\(cards)")
        var info = stat()
        try #require(stat(package + "/store.sqlite", &info) == 0)
        return Edited(
            store: try digest(package + "/store.sqlite"), lock: try digest(package + "/lock"),
            modified: info.st_mtim, card: card)
    }

    /// `deck verify` finds one `sync-conflict` for each copy, and nothing else: untidy, so the
    /// package is valid and the exit status 0.
    private func expectVerifyReports(_ package: String, copies: [SyncConflictCopy]) throws {
        let text = try deck("verify", package)
        e2eExpectSuccess(text)
        for copy in copies {
            #expect(
                text.stdout.contains(
                    "untidy: \(package)/\(copy.name): Syncthing's conflict copy of \(copy.original): "),
                "\(text.stdout)")
        }
        #expect(
            text.stdout.hasSuffix(
                "0 corruption, \(copies.count) untidy (format \(PackageStore.formatVersion))\n"),
            "\(text.stdout)")
        let json = try deck("verify", package, "--json")
        e2eExpectSuccess(json)
        let report = try e2eJSONObject(json.stdout)
        #expect(report["valid"] as? Bool == true)
        let findings = try #require(report["findings"] as? [[String: Any]])
        #expect(findings.map { $0["code"] as? String } == copies.map { _ in "sync-conflict" })
        #expect(findings.map { $0["severity"] as? String } == copies.map { _ in "untidy" })
        #expect(
            Set(findings.compactMap { $0["object"] as? String })
                == Set(copies.map { package + "/" + $0.name }))
    }

    /// `deck diff --conflicts` compares the store (B's edits, "first") with the copy (A's,
    /// "second"): B's card only in the store, A's only in the copy, and the "hola" card's back
    /// changed from B's value to A's.
    private func expectDiffShowsTheOtherSide(
        _ package: String, copy: String, editedA: Edited, editedB: Edited
    ) throws {
        let text = try deck("diff", package, "--conflicts")
        #expect(text.status == 1, "\(text.stdout) \(text.stderr)")
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "== \(copy) (Syncthing's conflict copy)", "\(text.stdout)")
        #expect(lines.contains("- Card \(editedB.card)"), "\(text.stdout)")
        #expect(lines.contains("+ Card \(editedA.card)"), "\(text.stdout)")
        #expect(lines.contains("    back: \"hello (B)\" → \"hello (A)\""), "\(text.stdout)")
        #expect(lines.last == "3 records differ (- first only, + second only, ~ both, changed)")

        let json = try deck("diff", package, "--conflicts", "--json")
        #expect(json.status == 1, "\(json.stderr)")
        let conflicts = try #require(try e2eJSONObject(json.stdout)["conflicts"] as? [[String: Any]])
        try #require(conflicts.count == 1, "\(json.stdout)")
        #expect(conflicts[0]["copy"] as? String == copy)
        #expect(conflicts[0]["service"] as? String == "Syncthing")
        let difference = try #require(conflicts[0]["difference"] as? [String: Any])
        let records = try #require(difference["records"] as? [[String: Any]])
        func only(_ side: String) -> [String] {
            records.filter { $0["only"] as? String == side }.compactMap { $0["_gid"] as? String }
        }
        #expect(only("first") == [editedB.card])
        #expect(only("second") == [editedA.card])
        let changed = records.compactMap { $0["cells"] as? [[String: Any]] }
        #expect(changed.count == 1)
        #expect(
            changed.first?.map { "\($0["name"] ?? "") \($0["first"] ?? "") → \($0["second"] ?? "")" }
                == ["back hello (B) → hello (A)"])
    }

    private func digest(_ path: String) throws -> String {
        e2eSHA256(try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
