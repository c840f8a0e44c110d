import DeckKit
import Foundation

/// `deck merge`'s target (issue 25): merging two copies of a 1M-row document that differ in 100
/// records costs within 3× of merging two 1k-row copies with the same difference (the cost
/// follows the changes, not the size). Each copy pair is a file copy of one document with 100
/// records changed in the second: 40 updated (text, number, deck), 30 inserted, 30 deleted; the
/// first is merged into afresh for every run.
func runMergeBenchmarks() throws {
    try runAncestorMergeBenchmark()
    guard selected("merge") else { return }
    let large = rowCount * 10
    let small = max(rowCount / 100, 200)
    let (largeFirst, largeSecond) = try editedCopies(rows: large, named: "merge-large", movedTo: 2)
    let (smallFirst, smallSecond) = try editedCopies(rows: small, named: "merge-small", movedTo: 2)
    let largeTarget = URL(fileURLWithPath: fresh("merge-large-target.deck"))
    let smallTarget = URL(fileURLWithPath: fresh("merge-small-target.deck"))
    var changed = (0, 0)
    try compare(
        "merge \(large)-row copies (100 changed)", target: "≥ 0.33× (\(small) rows)",
        setup: {
            for (source, target) in [(largeFirst, largeTarget), (smallFirst, smallTarget)] {
                try? FileManager.default.removeItem(at: target)
                try FileManager.default.copyItem(at: source, to: target)
            }
        },
        deck: {
            let store = try PackageStore.open(at: largeTarget)
            let report = try DocumentMerge.merge(from: largeSecond, into: store)
            try store.close()
            changed.0 = report.insertedRecords + report.deletedRecords + report.changedCells
        },
        baseline: {
            let store = try PackageStore.open(at: smallTarget)
            let report = try DocumentMerge.merge(from: smallSecond, into: store)
            try store.close()
            changed.1 = report.insertedRecords + report.deletedRecords + report.changedCells
        })
    // 30 inserted, 30 deleted, 40 cards with two or three changed values each: 150 both.
    print("  the merges changed \(changed.0) and \(changed.1) records and values (150 expected)")
}

/// A merge with a common ancestor compares every record of both copies with it (spec 20.9, "A
/// common ancestor"): its cost follows the size. Measured on 100k-row copies (the first is the
/// ancestor of the second) against `cp` of the three stores it snapshots and reads.
private func runAncestorMergeBenchmark() throws {
    guard selected("merge with an ancestor") else { return }
    let (first, second) = try editedCopies(rows: rowCount, named: "merge-ancestor", movedTo: 2)
    let target = URL(fileURLWithPath: fresh("merge-ancestor-target.deck"))
    let copies = fresh("merge-ancestor-cp")
    var changed = 0
    try compare(
        "merge with an ancestor, \(rowCount) rows", target: "none (cp of the three stores)",
        setup: {
            try? FileManager.default.removeItem(at: target)
            try FileManager.default.copyItem(at: first, to: target)
            try? FileManager.default.removeItem(atPath: copies)
            try FileManager.default.createDirectory(atPath: copies, withIntermediateDirectories: false)
        },
        deck: {
            let store = try PackageStore.open(at: target)
            let report = try DocumentMerge.merge(from: second, into: store, ancestor: first)
            try store.close()
            changed = report.insertedRecords + report.deletedRecords + report.changedCells
        },
        baseline: {
            let stores = [first, second, first].map { $0.appendingPathComponent("store.sqlite").path }
            for (index, store) in stores.enumerated() {
                _ = shell("cp '\(store)' '\(copies)/\(index).sqlite'")
            }
        })
    print("  the merge with an ancestor changed \(changed) records and values (150 expected)")
}
