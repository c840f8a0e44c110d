import DeckSQLite
import DeckStoreTestSupport
import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@_spi(Testing) @testable import DeckStore

/// Copies of a document at different schema versions (spec section 20.9): the copy at the
/// earlier version is migrated first, in a scratch copy when it is the one merged in, and what
/// that migration changed takes the versions of what it was computed from, so that the result
/// does not depend on which copy was migrated, when, or by whom.
@Suite("Merging copies at different schema versions", .timed) struct MergeSchemaVersionTests {
    static let seed = TestSeed("MergeSchemaVersionTests", filter: "MergeSchemaVersionTests")

    /// Version 1.1.0 of the flash-cards schema: `Card.back` renamed `answer`, `Card.hint` added.
    static func laterSchema(
        version: String = "1.1.0", imageExternal: Bool = true,
        cardsDeleteRule: StoreSchema.DeleteRule = .cascade
    ) -> StoreSchema {
        var schema = flashCardsSchema(cardsDeleteRule: cardsDeleteRule)
        schema.version = version
        schema.entities[1].attributes[1].name = "answer"
        schema.entities[1].attributes[1].originalName = "back"
        schema.entities[1].attributes.append(StoreSchema.Attribute("hint", .string, isOptional: true))
        if !imageExternal { schema.entities[1].attributes[2].options.remove(.externalStorage) }
        return schema
    }

    /// The newer app's migration to `laterSchema()`: a custom stage gives every card a hint.
    static var hints: StoreMigrationStage {
        StoreMigrationStage(
            name: "hints",
            didMigrate: { context in
                for (id, front) in try context.oldValues(entity: "Card", attribute: "front") {
                    guard case .string(let text) = front else { continue }
                    try context.transaction.update(
                        "Card", id: id, ["hint": .string("starts with " + text.prefix(1))])
                }
            })
    }

    static var migrateWithHints: MergeMigration.Migrator {
        MergeMigration.Migrator(runsStages: true) { url, schema throws(DeckError) in
            _ = try PackageStore.migrate(at: url, to: schema, stage: hints)
        }
    }

    /// A package of the small flash cards at 1.0.0 (`old.deck`, an older app's copy) and a copy
    /// of it migrated to `schema` (`new.deck`, the newer app's), with their records' ids.
    static func copies(
        in dir: URL, later schema: StoreSchema = laterSchema(), plan: MigrationPlan = MigrationPlan(),
        stage: StoreMigrationStage? = nil
    ) throws -> (old: URL, new: URL, ids: [String: Int64]) {
        let old = dir.appendingPathComponent("old.deck")
        let ids = try makeSmallFlashcards(at: old)
        let new = try MergeTests.copy(old, to: "new.deck")
        _ = try PackageStore.migrate(at: new, to: schema, plan: plan, stage: stage)
        return (old, new, ids)
    }

    static func schemaVersion(_ url: URL) throws -> String {
        let store = try PackageStore.open(at: url, mode: .readOnly)
        defer { try? store.close() }
        return store.schema.version
    }

    @Test func anOlderAppsCopyIsMigratedAndMergedTheSameWhicheverCopyIsMigrated() throws {
        try withTestDirectory { dir in
            let (old, new, ids) = try Self.copies(in: dir, stage: Self.hints)
            try MergeTests.write(new) { t in try t.update("Card", id: ids["hola"]!, ["answer": .string("hi")])
            }
            try MergeTests.write(old) { t in
                try t.update(
                    "Card", id: ids["merci"]!, ["back": .string("thanks"), "front": .string("Merci")])
                _ = try t.insert("Card", ["front": .string("gracias"), "deck": .reference(ids["spanish"]!)])
                _ = try t.delete("Card", id: ids["adios"]!)
                // Later than the new copy's edit of the same cell, under its old name.
                try t.update("Card", id: ids["hola"]!, ["back": .string("hey")])
            }
            // Later than the old copy's edit of the card.
            try MergeTests.write(new) { t in
                try t.update("Card", id: ids["hola"]!, ["hint": .string("a greeting")])
            }
            let oldBefore = try MergeTests.dump(old)
            let merged = try MergeTests.copy(new, to: "merged.deck")
            let store = try PackageStore.open(at: merged)
            let report = try DocumentMerge.merge(
                from: old, into: store, differentDocuments: false, blobs: nil, migrator: Self.migrateWithHints
            )
            try store.close()
            #expect(try MergeTests.dump(old) == oldBefore, "the copy merged in is never written")
            #expect(try Self.schemaVersion(merged) == "1.1.0")
            #expect(report.insertedRecords == 1 && report.deletedRecords == 1)
            // The cell follows its rename: the old copy's later edit of `back` wins over `answer`.
            let conflicts = Set(
                report.conflicts.map {
                    "\($0.property): kept \($0.kept), lost \($0.lost), here \($0.lostHere)"
                })
            // A value the migration computed has the version of the record it was computed
            // from: the new copy's later edit of hola's hint wins over it (and it is reported);
            // the old copy's edit of merci, later than the new copy's migration, wins over the
            // hint that migration computed.
            #expect(
                conflicts == [
                    "answer: kept hey, lost hi, here true",
                    "hint: kept a greeting, lost starts with h, here false",
                    "hint: kept starts with M, lost starts with m, here true",
                ])
            let cards = try MergeTests.cards(merged)
            #expect(Set(cards.keys) == ["hola", "Merci", "gracias"])
            #expect(cards["Merci"]?["answer"] == .string("thanks"))
            #expect(cards["hola"]?["hint"] == .string("a greeting"))
            // ...and the old copy's edit of merci, made after the new copy migrated, carries
            // through the stage: its hint is computed from the new front.
            #expect(cards["Merci"]?["hint"] == .string("starts with M"))
            #expect(cards["gracias"]?["hint"] == .string("starts with g"))
            // Idempotent: the old copy migrated again (another scratch copy, another session)
            // brings nothing new.
            let before = try MergeTests.dump(merged)
            let again = try PackageStore.open(at: merged)
            #expect(
                try DocumentMerge.merge(
                    from: old, into: again, differentDocuments: false, blobs: nil,
                    migrator: Self.migrateWithHints
                ).isEmpty)
            try again.close()
            #expect(try MergeTests.dump(merged) == before)
            // Commutative: the old copy migrated as a merge migrates it, the new one merged in.
            let other = try MergeTests.copy(old, to: "other.deck")
            try MergeMigration.migrate(
                other, to: Self.laterSchema(), with: Self.migrateWithHints, path: old.path)
            try MergeTests.merge(new, into: other)
            try MergeTests.expectSame(merged, other)
        }
    }

    @Test func aConflictCopyAnOlderAppLeftIsMigratedAndFoldedIn() throws {
        try withTestDirectory { dir in
            let (old, new, ids) = try Self.copies(in: dir)
            try MergeTests.write(old) { t in
                try t.update("Card", id: ids["merci"]!, ["back": .string("thanks")])
                _ = try t.insert(
                    "Card", ["front": .string("gracias"), "image": .data(testBytes(500, seed: 9))])
            }
            // What a file-sync service leaves when the older app's device saved too: its store
            // beside this one's, its blob files among this one's.
            let blobs = old.appendingPathComponent(PackageLayout.blobsDirectory)
            for file in blobFiles(old) {
                let target = new.appendingPathComponent(PackageLayout.blobsDirectory).appendingPathComponent(
                    file)
                if !FileManager.default.fileExists(atPath: target.path) {
                    try FileManager.default.createDirectory(
                        at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try FileManager.default.copyItem(at: blobs.appendingPathComponent(file), to: target)
                }
            }
            let copy = "store.sync-conflict-20261205-120000-ABCDEFG.sqlite"
            try FileManager.default.copyItem(
                at: old.appendingPathComponent(PackageLayout.store), to: new.appendingPathComponent(copy))
            let store = try PackageStore.open(at: new)
            let merged = try DocumentMerge.mergeConflictCopies(into: store)
            try store.close()
            #expect(merged.map(\.copy.name) == [copy])
            #expect(!FileManager.default.fileExists(atPath: new.appendingPathComponent(copy).path))
            let cards = try MergeTests.cards(new)
            #expect(cards["merci"]?["answer"] == .string("thanks"))
            guard case .blob(let image)? = cards["gracias"]?["image"] else {
                Issue.record("gracias has no image in a blob file: \(String(describing: cards["gracias"]))")
                return
            }
            #expect(image.size == 500)
            #expect(try PackageVerifier.verify(at: new).findings.isEmpty)
        }
    }

    @Test func aCopyAtALaterVersionIsRefusedInPlaceAndChangesNothing() throws {
        try withTestDirectory { dir in
            let (old, new, _) = try Self.copies(in: dir)
            let before = try MergeTests.dump(old)
            let store = try PackageStore.open(at: old)
            defer { try? store.close() }
            do {
                try DocumentMerge.merge(from: new, into: store)
                Issue.record("a copy at a later schema version was merged into an earlier one")
            } catch let DeckError.notComparable(path, reason) {
                #expect(path == new.path)
                #expect(
                    reason.contains("1.1.0 is later than") && reason.contains("deck merge -o"), "\(reason)")
            }
            try store.close()
            #expect(try MergeTests.dump(old) == before)
        }
    }

    @Test func copiesWhoseSchemasDivergedUnderOneVersionAreRefused() throws {
        try withTestDirectory { dir in
            let (old, new, _) = try Self.copies(in: dir)
            var colour = flashCardsSchema()
            colour.version = "1.1.0"
            colour.entities[2].attributes.append(StoreSchema.Attribute("colour", .string, isOptional: true))
            _ = try PackageStore.migrate(at: old, to: colour)
            let before = try MergeTests.dump(new)
            let store = try PackageStore.open(at: new)
            defer { try? store.close() }
            do {
                try DocumentMerge.merge(from: old, into: store)
                Issue.record("copies whose schemas diverged were merged")
            } catch let DeckError.notComparable(_, reason) {
                #expect(reason.contains("diverged") && reason.contains("colour"), "\(reason)")
            }
            try store.close()
            #expect(try MergeTests.dump(new) == before)
        }
    }

    @Test func aMigrationThatRemovesDataNeedsThePlanThatAgreesToIt() throws {
        try withTestDirectory { dir in
            var schema = Self.laterSchema()
            schema.entities[1].attributes.remove(at: 2)  // Card.image
            let plan = MigrationPlan(removals: ["Card.image"])
            let (old, new, ids) = try Self.copies(in: dir, later: schema, plan: plan)
            try MergeTests.write(old) { t in
                try t.update("Card", id: ids["merci"]!, ["back": .string("thanks")])
            }
            let before = try MergeTests.dump(new)
            let store = try PackageStore.open(at: new)
            defer { try? store.close() }
            do {
                try DocumentMerge.merge(from: old, into: store)
                Issue.record("a copy was migrated with a removal no plan agreed to")
            } catch let DeckError.notComparable(path, reason) {
                #expect(path == old.path)
                #expect(reason.contains("Card.image") && reason.contains("--plan"), "\(reason)")
            }
            #expect(try MergeTests.dump(new) == before)
            let report = try DocumentMerge.merge(from: old, into: store, plan: plan)
            #expect(report.changedCells == 1)
            try store.close()
            #expect(try MergeTests.cards(new)["merci"]?["answer"] == .string("thanks"))
            #expect(try PackageVerifier.verify(at: new).findings.isEmpty)
        }
    }

    @Test func valuesTheMigrationMovesIntoTheStoreAreReadFromTheOtherCopysBlobFiles() throws {
        try withTestDirectory { dir in
            let (old, new, ids) = try Self.copies(in: dir, later: Self.laterSchema(imageExternal: false))
            let image = testBytes(3000, seed: 4)
            try MergeTests.write(old) { t in try t.update("Card", id: ids["merci"]!, ["image": .data(image)])
            }
            let report = try MergeTests.merge(old, into: new)
            #expect(report.changedCells == 1 && report.copiedBlobs == 0)
            #expect(try MergeTests.cards(new)["merci"]?["image"] == .data(image))
            // A blob file of the old copy that does not hold what its name says stops the merge.
            let (damaged, target, other) = (
                try MergeTests.copy(old, to: "damaged.deck"), try MergeTests.copy(new, to: "target.deck"), ids
            )
            try MergeTests.write(damaged) { t in
                try t.update("Card", id: other["hola"]!, ["image": .data(testBytes(2000, seed: 5))])
            }
            for file in blobFiles(damaged) {
                let path = damaged.appendingPathComponent(PackageLayout.blobsDirectory)
                    .appendingPathComponent(file)
                try FileManager.default.removeItem(at: path)
                try Data("not the image".utf8).write(to: path)
            }
            let before = try MergeTests.dump(target)
            let store = try PackageStore.open(at: target)
            defer { try? store.close() }
            do {
                try DocumentMerge.merge(from: damaged, into: store)
                Issue.record("a blob file that does not hash to its name was taken")
            } catch let DeckError.corrupt(path, reason) {
                #expect(path.hasPrefix(damaged.path) && reason.contains("hash"), "\(path): \(reason)")
            }
            try store.close()
            #expect(try MergeTests.dump(target) == before)
        }
    }

    // MARK: Random operations on replicas at two schema versions

    /// The merge of the copies at `first` and `second` into a new package named `name`, as
    /// `deck merge -o` makes it: a copy of `first`, migrated (as a merge migrates) when `second`
    /// is at a later schema version, into which `second` is merged.
    static func joined(_ first: URL, _ second: URL, as name: String, later: StoreSchema) throws -> URL {
        let result = try MergeTests.copy(first, to: name)
        let (own, other) = (try schemaVersion(first), try schemaVersion(second))
        if StoreSchema.compareVersions(other, own) == .orderedDescending {
            try MergeMigration.migrate(result, to: later, with: migrateWithHints, path: first.path)
        }
        let store = try PackageStore.open(at: result)
        defer { try? store.close() }
        _ = try DocumentMerge.merge(
            from: second, into: store, differentDocuments: false, blobs: nil, migrator: migrateWithHints)
        try store.close()
        #expect(try PackageVerifier.verify(at: result).findings.isEmpty)
        return result
    }

    @Test func mergesOfReplicasAtTwoSchemaVersionsAreCommutativeIdempotentAndAssociative() throws {
        var g = Self.seed.generator()
        try withTestDirectory { dir in
            let rules: [StoreSchema.DeleteRule] = [.cascade, .nullify, .deny]
            for round in 0..<rules.count {
                // The later schema keeps the round's delete rule: a repair made under one rule
                // stays when a later schema changes it, so copies merged before and after the
                // change may differ (see the spec, section 20.9).
                let later = Self.laterSchema(cardsDeleteRule: rules[round])
                let origin = dir.appendingPathComponent("o\(round).deck")
                _ = try makeSmallFlashcards(at: origin, cardsDeleteRule: rules[round])
                try MergeTests.randomEdits(origin, &g, count: 6)
                let a = try MergeTests.copy(origin, to: "a\(round).deck")
                let b = try MergeTests.copy(origin, to: "b\(round).deck")
                let c = try MergeTests.copy(origin, to: "c\(round).deck")
                for step in 0..<3 {
                    for replica in [a, b, c] { try MergeTests.randomEdits(replica, &g, count: 5) }
                    // The newer app reaches b, with its custom stage; b takes a's changes, c a's.
                    if step == 0 { try Self.migrateWithHints.migrate(b, later) }
                    if step == 1 {
                        let store = try PackageStore.open(at: b)
                        _ = try DocumentMerge.merge(
                            from: a, into: store, differentDocuments: false, blobs: nil,
                            migrator: Self.migrateWithHints)
                        try store.close()
                    }
                    if step == 2 { try MergeTests.merge(c, into: a) }
                }
                let comment = Comment(rawValue: "round \(round), \(Self.seed)")
                try MergeTests.keep([a, b, c], round: round)
                let ab = try Self.joined(a, b, as: "ab.deck", later: later)
                let ba = try Self.joined(b, a, as: "ba.deck", later: later)
                try MergeTests.expectSame(ab, ba, comment)
                let abc = try Self.joined(ab, c, as: "ab_c.deck", later: later)
                let bc = try Self.joined(b, c, as: "bc.deck", later: later)
                let abc2 = try Self.joined(a, bc, as: "a_bc.deck", later: later)
                let cab = try Self.joined(c, ab, as: "c_ab.deck", later: later)
                try MergeTests.expectSame(abc, abc2, comment)
                try MergeTests.expectSame(abc, cab, comment)
                #expect(try Self.schemaVersion(abc) == "1.1.0")
                // Idempotent: each replica, migrated again for the merge, brings nothing new.
                let expected = try MergeTests.dump(abc)
                for replica in [a, b, c] {
                    let store = try PackageStore.open(at: abc)
                    let again = try DocumentMerge.merge(
                        from: replica, into: store, differentDocuments: false, blobs: nil,
                        migrator: Self.migrateWithHints)
                    try store.close()
                    #expect(again.isEmpty, "\(replica.lastPathComponent): \(again) \(comment)")
                }
                #expect(try MergeTests.dump(abc) == expected, comment)
            }
        }
    }
}
