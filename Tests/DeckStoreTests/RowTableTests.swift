import DeckTestSupport
import DeckTestTiming
import Foundation
import Testing

@testable import DeckStore

/// `RowTable`, the model layer's registry table: after any sequence of sets and removes it holds
/// exactly what a dictionary holds, including when ids collide on the same home slot, when
/// removals leave tombstones in a probe run, and when ids crowd one slot.
@Suite("Row table", .timed)
struct RowTableTests {
    final class Box {
        let id: Int64
        init(_ id: Int64) { self.id = id }
    }

    /// Checks that `table` holds exactly `expected`.
    func check(_ table: RowTable, _ expected: [Int64: Box], _ context: String) {
        #expect(table.count == expected.count, "\(context)")
        for (id, box) in expected {
            #expect(table.object(id) === box, "\(context): id \(id)")
        }
        var seen = 0
        table.forEachObject { object in
            seen += 1
            #expect(expected[(object as? Box)?.id ?? -1] === object, "\(context): a stray object")
        }
        #expect(seen == expected.count, "\(context)")
    }

    func pointer(_ box: Box) -> UnsafeRawPointer {
        UnsafeRawPointer(Unmanaged.passUnretained(box).toOpaque())
    }

    @Test("Random sets and removes agree with a dictionary")
    func randomOperations() {
        let seed = TestSeed("RowTableTests.random", filter: "RowTableTests")
        var random = seed.generator()
        for round in 0..<20 {
            var table = RowTable()
            var expected: [Int64: Box] = [:]
            var boxes: [Box] = []
            // Small ranges make collisions, repeats and removals of present ids frequent; the
            // negative and extreme ids are record ids a hostile store may hold.
            let range: ClosedRange<Int64> = [0...40, -20...20, 0...5_000, Int64.max - 50...Int64.max][
                round % 4]
            for step in 0..<2_000 {
                let id = Int64.random(in: range, using: &random)
                if Bool.random(using: &random) || expected.isEmpty {
                    let box = Box(id)
                    boxes.append(box)
                    table.set(id, pointer(box))
                    expected[id] = box
                } else {
                    let removed = table.remove(id, ifPointer: nil)
                    #expect(removed === expected[id], "round \(round) step \(step), \(seed)")
                    expected[id] = nil
                }
                if step % 250 == 0 { check(table, expected, "round \(round) step \(step), \(seed)") }
            }
            check(table, expected, "round \(round), \(seed)")
            // Emptied in random order.
            for id in expected.keys.shuffled(using: &random) {
                #expect(table.remove(id, ifPointer: nil) === expected[id])
                expected[id] = nil
            }
            check(table, expected, "round \(round) emptied, \(seed)")
        }
    }

    @Test("Ids that share a home slot, removed from the front, middle and back of their run")
    func collisions() {
        // Twelve entries make a table of 32 slots: ids whose search starts at slot 30, so that
        // their run wraps around the end of the table, mixed with ids of the slots after it.
        let shared = (0..<Int64(100_000)).lazy.filter { RowTable.home($0, mask: 31, multiplier: 0) == 30 }
            .prefix(8)
        let next = (0..<Int64(100_000)).lazy.filter { RowTable.home($0, mask: 31, multiplier: 0) == 0 }
            .prefix(4)
        let ids = Array(shared) + Array(next)
        for removedAt in ids.indices {
            var table = RowTable()
            let boxes = ids.map(Box.init)
            for box in boxes { table.set(box.id, pointer(box)) }
            var expected = Dictionary(uniqueKeysWithValues: boxes.map { ($0.id, $0) })
            #expect(table.remove(ids[removedAt], ifPointer: nil) === boxes[removedAt])
            expected[ids[removedAt]] = nil
            check(table, expected, "removed \(removedAt)")
        }
    }

    @Test("Ids that crowd one slot move the table to a random hash, which keeps every entry")
    func crowdedIds() {
        var table = RowTable()
        // Multiples of 2^24 share slot 0 of every table smaller than 2^24 slots.
        let boxes = (0..<2_000).map { Box(Int64($0) << 24) }
        for box in boxes { table.set(box.id, pointer(box)) }
        #expect(table.isHashed)
        var expected = Dictionary(uniqueKeysWithValues: boxes.map { ($0.id, $0) })
        check(table, expected, "crowded")
        for box in boxes.prefix(1_000) {
            #expect(table.remove(box.id, ifPointer: nil) === box)
            expected[box.id] = nil
        }
        check(table, expected, "crowded, half removed")
        // Dense ids keep their own slots.
        var dense = RowTable()
        let many = (1...5_000).map { Box(Int64($0)) }
        for box in many { dense.set(box.id, pointer(box)) }
        #expect(!dense.isHashed)
    }

    @Test("Batches of neighbouring ids that come and go, as an enumeration's, keep the table small and fast")
    func batchesComeAndGo() {
        var table = RowTable()
        var boxes: [Box] = []
        for batch in 0..<200 {
            let ids = (Int64(batch) * 5_000)..<(Int64(batch + 1) * 5_000)
            boxes = ids.map(Box.init)
            for box in boxes { table.set(box.id, pointer(box)) }
            #expect(table.count == 5_000)
            // Removed from the first to the last, as the models of a batch go away.
            for box in boxes { #expect(table.remove(box.id, ifPointer: nil) === box) }
        }
        #expect(table.count == 0)
        #expect(table.slots.count <= 32_768, "\(table.slots.count) slots for batches of 5,000")
        #expect(!table.isHashed)
    }

    @Test("A removal for another object leaves the entry")
    func removeIfPointer() {
        var table = RowTable()
        let first = Box(7)
        let second = Box(7)
        table.set(7, pointer(first))
        #expect(table.remove(7, ifPointer: pointer(second)) == nil)
        #expect(table.object(7) === first)
        table.set(7, pointer(second))
        #expect(table.count == 1)
        #expect(table.remove(7, ifPointer: pointer(second)) === second)
        #expect(table.object(7) == nil)
        #expect(table.count == 0)
    }

    /// The longest distance an entry of `table` lies from the slot where its search starts: how
    /// many slots a lookup of it reads.
    func longestProbe(_ table: RowTable) -> Int {
        var longest = 0
        for (index, slot) in table.slots.enumerated() {
            guard slot.object != nil, slot.object != RowTable.tombstone else { continue }
            longest = max(longest, (index - table.home(slot.id)) & table.mask)
        }
        return longest
    }

    @Test("Ids that are multiples of a large power of two are spread by the hash (they shared one slot)")
    func crowdedIdsBeyond32Bits() {
        // A hostile store may hold any ids: these share slot 0 of any table of fewer than 2^40
        // slots, and the product with any multiplier keeps their low zero bits.
        for shift in [20, 32, 40, 48, 56] {
            var table = RowTable()
            let count = min(2_000, 1 << (63 - shift))
            let boxes = (1...count).map { Box(Int64($0) << shift) }
            for box in boxes { table.set(box.id, pointer(box)) }
            #expect(table.isHashed, "ids << \(shift)")
            #expect(longestProbe(table) <= 64, "ids << \(shift): a lookup reads \(longestProbe(table)) slots")
            for box in boxes { #expect(table.object(box.id) === box) }
        }
    }
}

/// The global ids the model layer makes for new models (spec section 6.10).
@Suite("Global ids", .timed)
struct GlobalIDTests {
    @Test("A new global id is a version 4 UUID, and ids do not repeat")
    func randomIDs() {
        var seen = Set<UUID>()
        for _ in 0..<10_000 {
            let id = GlobalID.random()
            let bytes = id.uuid
            #expect(bytes.6 >> 4 == 4, "\(id): version nibble")
            #expect(bytes.8 >> 6 == 0b10, "\(id): variant bits")
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
    }
}
