import DeckSQLite
import DeckStore
import DeckTestTiming
import Foundation
import Testing

/// `deck log` end to end: each change under the last transaction that made it, text and JSON,
/// `--last` and `--after`, a merged copy's changes under their own writer, refusals, archives, and
/// a log read while another process writes.
@Suite("End to end: deck log", .timed)
struct EndToEndLogTests {
    /// One transaction of a text log: its header line and the lines under it.
    struct Transaction: Equatable {
        var header: String
        var lines: [String]

        /// The clock the header names (`transaction CLOCK by …`).
        var clock: Int64? {
            header.split(separator: " ").dropFirst().first.flatMap { Int64($0) }
        }

        /// The writer the header names (`… by WRITER, about …`), or nil.
        var writer: String? {
            guard let range = header.range(of: " by ") else { return nil }
            return String(header[range.upperBound...].prefix { $0 != "," })
        }
    }

    /// A text log split into its transactions and its token (the last line, `token: …`).
    static func parse(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> (
        transactions: [Transaction], token: String
    ) {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        try #require(lines.last == "", "no final line feed: \(text)", sourceLocation: sourceLocation)
        lines.removeLast()
        let popped = lines.popLast()
        let last = try #require(popped, "empty log", sourceLocation: sourceLocation)
        try #require(last.hasPrefix("token: "), "no token line: \(text)", sourceLocation: sourceLocation)
        var transactions: [Transaction] = []
        // An empty log says so, on the one line before the token.
        if lines == ["no changes"] { return ([], String(last.dropFirst("token: ".count))) }
        for line in lines {
            if line.hasPrefix("transaction ") {
                transactions.append(Transaction(header: line, lines: []))
            } else {
                try #require(
                    line.hasPrefix("  ") && !transactions.isEmpty, "a line outside a transaction: \(line)",
                    sourceLocation: sourceLocation)
                transactions[transactions.count - 1].lines.append(line)
            }
        }
        return (transactions, String(last.dropFirst("token: ".count)))
    }

    /// The global id of the one record of `entity` that `condition` finds.
    static func gid(_ package: String, _ entity: String, _ condition: String) throws -> String {
        let records = try e2eJSONArray(
            try deck("query", package, entity, "--where", condition, "--json").stdout)
        try #require(records.count == 1, "\(condition): \(records)")
        return try #require(records[0]["_gid"] as? String)
    }

    /// The global ids of every record the package holds (decks, cards and tags).
    static func allIDs(_ package: String) throws -> Set<String> {
        var ids: Set<String> = []
        for entity in ["Deck", "Card", "Tag"] {
            for record in try e2eJSONArray(try deck("query", package, entity, "--json").stdout) {
                ids.insert(try #require(record["_gid"] as? String))
            }
        }
        return ids
    }

    /// The global ids of the tags the card with `front` is linked to, read from the store itself
    /// (sorted: the order of a log's link lines).
    static func tags(of front: String, in package: String) throws -> [String] {
        let database = try Database(path: package + "/store.sqlite", mode: .readOnly)
        defer { database.close() }
        let rows = try database.rows(
            "SELECT t._gid FROM \"Card.tags\" l JOIN Card c ON c._pk = l.source JOIN Tag t ON t._pk = l.target "
                + "WHERE c.front = ?", [.text(front)])
        return try rows.map { row in
            guard case .blob(let bytes) = row[0], bytes.count == 16 else {
                throw CocoaError(.coderInvalidValue)
            }
            return NSUUID(uuidBytes: [UInt8](bytes)).uuidString.lowercased()
        }.sorted()
    }

    /// The sample after `deck update` of hola's back and `deck delete` of adiós: its path, hola's
    /// and adiós's global ids, and the tags adiós was linked to.
    static func editedSample(in directory: TemporaryDirectory) throws -> (
        path: String, hola: String, adios: String, tags: [String]
    ) {
        let path = try e2eSample(in: directory)
        let hola = try gid(path, "Card", "front == 'hola'")
        let adios = try gid(path, "Card", "front == 'adiós'")
        let tags = try Self.tags(of: "adiós", in: path)
        try #require(!tags.isEmpty, "the sample's adiós has no tags")
        e2eExpectSuccess(try deck("update", path, "Card", "back=hello there", "--where", "front == 'hola'"))
        e2eExpectSuccess(try deck("delete", path, "Card", "--where", "front == 'adiós'"))
        return (path, hola, adios, tags)
    }

    @Test func eachChangeIsListedUnderTheLastTransactionThatMadeIt() throws {
        let directory = try TemporaryDirectory()
        let (path, hola, adios, tags) = try Self.editedSample(in: directory)

        // The last two transactions: the update, with the value it left, and the delete, with the
        // links it removed; each by its own writer session.
        let last = try deck("log", path, "--last", "2")
        e2eExpectSuccess(last)
        let (transactions, token) = try Self.parse(last.stdout)
        try #require(transactions.count == 2, "\(last.stdout)")
        let (update, delete) = (transactions[0], transactions[1])
        #expect(update.lines == ["  updated Card \(hola)", "    back: \"hello there\""])
        #expect(
            delete.lines
                == ["  deleted Card \(adios)"] + tags.map { "  unlinked Card.tags \(adios) → \($0)" })
        let updateClock = try #require(update.clock)
        let deleteClock = try #require(delete.clock)
        #expect(updateClock < deleteClock)
        let (updateWriter, deleteWriter) = (try #require(update.writer), try #require(delete.writer))
        #expect(updateWriter != deleteWriter && UUID(uuidString: updateWriter) != nil)
        // About when: the clock's wall-clock term, in the last hour.
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = try #require(
            update.header.range(of: ", about ").map {
                formatter.date(from: String(update.header[$0.upperBound...]))
            }
                ?? nil, "\(update.header)")
        #expect(Int64((date.timeIntervalSince1970 * 1000).rounded()) == updateClock >> 16)
        #expect(abs(date.timeIntervalSinceNow) < 3600)

        // The same in JSON.
        let json = try deck("log", path, "--last", "2", "--json")
        e2eExpectSuccess(json)
        let object = try e2eJSONObject(json.stdout)
        #expect(object["token"] as? String == token)
        let items = try #require(object["transactions"] as? [[String: Any]])
        try #require(items.count == 2)
        #expect(items[0]["clock"] as? Int64 == updateClock && items[1]["clock"] as? Int64 == deleteClock)
        #expect(
            items[0]["writer"] as? String == updateWriter && items[1]["writer"] as? String == deleteWriter)
        #expect(items[0]["date"] as? String == formatter.string(from: date))
        let updates = try #require(items[0]["changes"] as? [[String: Any]])
        #expect(updates.count == 1)
        #expect(
            updates.first?["kind"] as? String == "updated" && updates.first?["entity"] as? String == "Card")
        #expect(updates.first?["_gid"] as? String == hola)
        #expect((updates.first?["cells"] as? [String: Any])?.keys.sorted() == ["back"])
        #expect((updates.first?["cells"] as? [String: Any])?["back"] as? String == "hello there")
        let deletes = try #require(items[1]["changes"] as? [[String: Any]])
        try #require(deletes.count == 1 + tags.count)
        #expect(deletes[0].keys.sorted() == ["_gid", "entity", "kind"])
        #expect(
            deletes[0]["kind"] as? String == "deleted" && deletes[0]["entity"] as? String == "Card"
                && deletes[0]["_gid"] as? String == adios)
        for (change, tag) in zip(deletes.dropFirst(), tags) {
            #expect(change.keys.sorted() == ["_gid", "entity", "kind", "relationship", "target"])
            #expect(change["kind"] as? String == "unlinked" && change["entity"] as? String == "Card")
            #expect(change["_gid"] as? String == adios && change["relationship"] as? String == "Card.tags")
            #expect(change["target"] as? String == tag)
        }

        // The whole log: the sample's insert, then the two. The insert lists every record the
        // package holds, and hola without its back, which moved to the update.
        let all = try deck("log", path)
        e2eExpectSuccess(all)
        let full = try Self.parse(all.stdout)
        try #require(full.transactions.count == 3, "\(all.stdout)")
        #expect(Array(full.transactions.dropFirst()) == transactions)
        #expect(full.token == token)
        let first = full.transactions[0]
        #expect(try #require(first.clock) < updateClock)
        #expect(first.writer != nil && first.writer != updateWriter && first.writer != deleteWriter)
        let changes = first.lines.filter { !$0.hasPrefix("    ") }
        #expect(changes.allSatisfy { $0.hasPrefix("  inserted ") || $0.hasPrefix("  linked Card.tags ") })
        let inserted = changes.filter { $0.hasPrefix("  inserted ") }.compactMap {
            $0.split(separator: " ").last.map(String.init)
        }
        #expect(inserted.count == Set(inserted).count)
        let held = try Self.allIDs(path)
        #expect(Set(inserted) == held)
        #expect(!inserted.contains(adios))
        let holaCells = first.lines.drop { $0 != "  inserted Card \(hola)" }.dropFirst().prefix {
            $0.hasPrefix("    ")
        }
        #expect(holaCells.contains("    front: \"hola\""), "\(holaCells)")
        #expect(!holaCells.contains { $0.hasPrefix("    back:") }, "\(holaCells)")
        // Another card's insert keeps its back.
        let gracias = try Self.gid(path, "Card", "front == 'gracias'")
        let graciasCells = first.lines.drop { $0 != "  inserted Card \(gracias)" }.dropFirst().prefix {
            $0.hasPrefix("    ")
        }
        #expect(graciasCells.contains("    back: \"thank you\""), "\(graciasCells)")
        let firstJSON = try #require(
            (try e2eJSONObject(try deck("log", path, "--json").stdout)["transactions"] as? [[String: Any]])?
                .first)
        let holaInsert = try #require(
            (firstJSON["changes"] as? [[String: Any]])?.first { $0["_gid"] as? String == hola })
        #expect(holaInsert["kind"] as? String == "inserted")
        let cells = try #require(holaInsert["cells"] as? [String: Any])
        #expect(cells["front"] as? String == "hola" && cells["back"] == nil)

        // After the update's clock: the delete only. After the last: nothing, and exit 0.
        let after = try deck("log", path, "--after", String(updateClock))
        e2eExpectSuccess(after)
        #expect(try Self.parse(after.stdout).transactions == [delete])
        let none = try deck("log", path, "--after", String(deleteClock))
        e2eExpectSuccess(none)
        #expect(none.stdout.hasPrefix("no changes\ntoken: "), "\(none.stdout)")
        #expect(try Self.parse(none.stdout).transactions.isEmpty)
        let noneJSON = try deck("log", path, "--after", String(deleteClock), "--json")
        e2eExpectSuccess(noneJSON)
        #expect((try e2eJSONObject(noneJSON.stdout)["transactions"] as? [Any])?.isEmpty == true)
        // The log's own token leaves out everything it saw.
        let since = try deck("log", path, "--after=\(token)")
        e2eExpectSuccess(since)
        #expect(since.stdout == "no changes\ntoken: \(token)\n")
        // Nothing was written.
        #expect(try deck("log", path).stdout == all.stdout)
    }

    @Test func aMergedEditIsListedUnderTheOtherCopysWriterAndClock() throws {
        let directory = try TemporaryDirectory()
        let here = try e2eSample(in: directory)
        let there = directory.appending("Copy.deck")
        try FileManager.default.copyItem(atPath: here, toPath: there)
        let adios = try Self.gid(here, "Card", "front == 'adiós'")
        let hola = try Self.gid(here, "Card", "front == 'hola'")
        // The other copy's edit comes first, so its clock is below this copy's edit.
        e2eExpectSuccess(try deck("update", there, "Card", "back=bye", "--where", "front == 'adiós'"))
        e2eExpectSuccess(try deck("update", here, "Card", "back=hi", "--where", "front == 'hola'"))
        let theirs = try Self.parse(try deck("log", there, "--last", "1").stdout).transactions
        try #require(theirs.count == 1)
        #expect(theirs[0].lines == ["  updated Card \(adios)", "    back: \"bye\""])
        let ours = try Self.parse(try deck("log", here, "--last", "1").stdout)
        try #require(ours.transactions.count == 1)
        #expect(ours.transactions[0].lines == ["  updated Card \(hola)", "    back: \"hi\""])
        let theirClock = try #require(theirs[0].clock)
        let ourClock = try #require(ours.transactions[0].clock)
        #expect(theirClock < ourClock)

        e2eExpectSuccess(try deck("merge", here, there))
        let merged = try deck("log", here)
        e2eExpectSuccess(merged)
        let log = try Self.parse(merged.stdout).transactions
        // The other copy's edit, as its own log has it: the same clock, writer and value.
        #expect(log.filter { $0.writer == theirs[0].writer } == theirs)
        #expect(log.filter { $0.clock == ourClock } == ours.transactions)
        #expect(log.map(\.header).suffix(2) == [theirs[0].header, ours.transactions[0].header])
        let json = try e2eJSONObject(try deck("log", here, "--json").stdout)
        let item = try #require(
            (json["transactions"] as? [[String: Any]])?.first { $0["writer"] as? String == theirs[0].writer })
        #expect(item["clock"] as? Int64 == theirClock)
        // A clock read before the merge leaves the merged edit out (its clock is below); the token
        // of a log read before the merge does not.
        #expect(
            try Self.parse(try deck("log", here, "--after", String(ourClock)).stdout).transactions.isEmpty)
        let since = try deck("log", here, "--after=\(ours.token)")
        e2eExpectSuccess(since)
        #expect(try Self.parse(since.stdout).transactions == theirs)
    }

    @Test func wrongArgumentsAndWhatIsNoPackageAreRefused() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        e2eExpectUsageError(
            try deck("log", path, "--last", "0"), command: "deck log", "--last must be at least 1")
        e2eExpectUsageError(
            try deck("log", path, "--last", "-1"), command: "deck log", "--last must be at least 1")
        e2eExpectUsageError(try deck("log", path, "--after", "-5"), command: "deck log", "--after")
        e2eExpectUsageError(try deck("log", path, "--after", "soon"), command: "deck log", "--after")
        e2eExpectUsageError(try deck("log", path, "--last", "two"), command: "deck log", "--last")
        e2eExpectUsageError(try deck("log"), command: "deck log")
        e2eExpectUsageError(try deck("log", path, path), command: "deck log")

        let missing = directory.appending("missing.deck")
        e2eExpectFailure(try deck("log", missing), status: 66, missing, "no such file")
        // What is no package is refused as `deck verify` refuses it, named.
        let text = directory.appending("notes.txt")
        try Data("not a package".utf8).write(to: URL(fileURLWithPath: text))
        let empty = directory.appending("Empty.deck")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
        for bad in [text, empty] {
            let verify = try deck("verify", bad)
            #expect(verify.status != 0)
            e2eExpectFailure(try deck("log", bad), status: verify.status, bad, "not a Deck package")
        }

        // An archive is read as the package it holds: the same log.
        let log = try deck("log", path)
        let logJSON = try deck("log", path, "--json")
        for (name, command) in [("Spanish.tar", "pack"), ("Spanish.zip", "export")] {
            let archive = directory.appending(name)
            e2eExpectSuccess(try deck(command, path, "-o", archive))
            let read = try deck("log", archive)
            e2eExpectSuccess(read)
            #expect(read.stdout == log.stdout)
            #expect(try deck("log", archive, "--json").stdout == logJSON.stdout)
        }
        // An archive cut short is refused, named.
        let cut = directory.appending("cut.zip")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: directory.appending("Spanish.zip")))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: cut))
        e2eExpectFailure(try deck("log", cut), status: 66, "\(cut): not a Deck package")
    }

    @Test func aPackageBeforeFormat5IsRefusedUntilAWriterUpgradesIt() throws {
        let directory = try TemporaryDirectory()
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures")
        for (version, name) in [
            (1, "Flashcards.flashcards"), (2, "Flashcards.flashcards"), (3, "Dates.deck"),
            (4, "Flashcards.flashcards"),
        ] {
            let path = directory.appending("v\(version)-" + name)
            try FileManager.default.copyItem(
                atPath: fixtures.appendingPathComponent("v\(version)/" + name).path, toPath: path)
            let before = try Data(contentsOf: URL(fileURLWithPath: path + "/store.sqlite"))
            e2eExpectFailure(
                try deck("log", path), status: 65, path, "format version \(version)",
                "open it for writing once")
            e2eExpectFailure(try deck("log", path, "--json"), status: 65, path)
            // Nothing was written: the store is as it was.
            #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/store.sqlite")) == before)
        }

        // Upgraded by a writer, what the package held is listed under the origin.
        let path = directory.appending("v4-Flashcards.flashcards")
        e2eExpectSuccess(try deck("gc", path, "-q"))
        let upgraded = try deck("log", path)
        e2eExpectSuccess(upgraded)
        let log = try Self.parse(upgraded.stdout).transactions
        try #require(log.count == 1, "\(upgraded.stdout)")
        #expect(log[0].header == "transaction 0 (the origin: before the package kept versions)")
        let changes = log[0].lines.filter { !$0.hasPrefix("    ") }
        #expect(changes.allSatisfy { $0.hasPrefix("  inserted ") || $0.hasPrefix("  linked ") })
        let inserted = changes.filter { $0.hasPrefix("  inserted ") }.compactMap {
            $0.split(separator: " ").last.map(String.init)
        }
        let held = try Self.allIDs(path)
        #expect(Set(inserted) == held && inserted.count == held.count)
        let json = try e2eJSONObject(try deck("log", path, "--json").stdout)
        let origin = try #require((json["transactions"] as? [[String: Any]])?.first)
        #expect(origin["clock"] as? Int == 0 && origin["writer"] is NSNull && origin["date"] is NSNull)
        // The next write is listed after it, by its writer.
        e2eExpectSuccess(try deck("insert", path, "Tag", "name=new"))
        let next = try Self.parse(try deck("log", path, "--last", "1").stdout).transactions
        try #require(next.count == 1)
        #expect(next[0].writer != nil && next[0].lines.first?.hasPrefix("  inserted Tag ") == true)
        #expect(next[0].lines.dropFirst() == ["    name: \"new\""])
    }

    @Test func aLogWhileAnotherProcessWritesReadsTheLastCommit() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let before = try deck("log", path)
        e2eExpectSuccess(before)
        let beforeJSON = try deck("log", path, "--json")
        // This process holds the writer, with a transaction open.
        let holder = try PackageStore.open(at: URL(fileURLWithPath: path), mode: .readWrite)
        defer { try? holder.close() }
        e2eExpectFailure(try deck("insert", path, "Tag", "name=blocked"), status: 75, "is locked by")
        let transaction = try holder.beginTransaction()
        let pending = UUID()
        try transaction.insert("Tag", ["name": .string("pending")], globalID: pending)
        let during = try deck("log", path)
        e2eExpectSuccess(during)
        #expect(during.stdout == before.stdout)
        #expect(try deck("log", path, "--json").stdout == beforeJSON.stdout)
        _ = try transaction.commit()
        // Committed, the holder's transaction is the last, by a writer of its own.
        let after = try deck("log", path)
        e2eExpectSuccess(after)
        let log = try Self.parse(after.stdout).transactions
        let previous = try Self.parse(before.stdout).transactions
        try #require(log.count == previous.count + 1, "\(after.stdout)")
        #expect(Array(log.dropLast()) == previous)
        let last = try #require(log.last)
        #expect(last.writer != nil && !previous.contains { $0.writer == last.writer })
        #expect(
            last.lines == ["  inserted Tag \(pending.uuidString.lowercased())", "    name: \"pending\""])
        try holder.close()
        #expect(try deck("log", path).stdout == after.stdout)
    }

    /// Three bugs found while these tests were written, fixed: `--last` counted clocks no
    /// transaction lists (a merge's own range of keys), a token began with `-` (so a command
    /// line took it for an option), and an archive's refusal named its staging directory.
    @Test func lastCountsTransactionsTokensAreArgumentsAndArchivesAreNamed() throws {
        let directory = try TemporaryDirectory()
        let here = try e2eSample(in: directory)
        let there = directory.appending("Copy.deck")
        try FileManager.default.copyItem(atPath: here, toPath: there)
        e2eExpectSuccess(try deck("insert", there, "Tag", "name=new"))
        e2eExpectSuccess(try deck("merge", here, there))
        let all = try Self.parse(try deck("log", here).stdout)
        try #require(all.transactions.count == 2, "the sample's insert and the merged one")
        for n in 1...3 {
            let last = try Self.parse(try deck("log", here, "--last", String(n)).stdout)
            #expect(
                last.transactions.map(\.header) == all.transactions.suffix(n).map(\.header), "--last \(n)")
        }

        let token = all.token
        #expect(!token.hasPrefix("-"), "a token begins with a dash only when it is -1")
        let since = try deck("log", here, "--after", token)
        #expect(since.status == 0, "\(since.stderr)")
        #expect(since.stdout == "no changes\ntoken: \(token)\n")

        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/v4/Flashcards.flashcards")
        let old = directory.appending("Old.flashcards")
        try FileManager.default.copyItem(atPath: fixture.path, toPath: old)
        let archive = directory.appending("v4.zip")
        e2eExpectSuccess(try deck("export", old, "-o", archive))
        let refused = try deck("log", archive)
        #expect(refused.status == 65, "\(refused.stderr)")
        #expect(refused.stderr.hasPrefix("deck: \(archive): "), "\(refused.stderr)")
    }
}
