/// A table from record ids to unretained object pointers, for the model layer's registry of
/// instances: open addressing with linear probing, at most half full counting the slots of
/// removed entries (tombstones, which the next growth or rehash clears). A fetch inserts one
/// entry per model and each model's end removes it, so both are on the fetch's hot path: a
/// removal is one probe and a mark (deletion by backward shift would scan to the end of the
/// run, and the runs of dense ids are as long as the fetch).
///
/// An id's slot is the id itself, masked: a store's ids are mostly dense, and the rows of a fetch
/// come in runs of neighbouring ids (in id order, or in the order of a property that grew with
/// them), so neighbouring entries share cache lines, where a hash that spreads them makes each
/// entry a cache miss (measured: a third of the fetch's time in the table). Ids that crowd
/// together (a store whose ids are multiples of a large power of two, say) would make probes
/// long: past ``maximumProbe`` slots, the table moves to a multiplicative hash with a random
/// multiplier (Fibonacci-style: the product's top bits), which spreads any ids; one that happens
/// to crowd them is drawn again.
///
/// The table does not retain what it points to: its user removes an entry before the object
/// goes away.
@usableFromInline
package struct RowTable {
    @usableFromInline
    struct Slot {
        @usableFromInline var id: Int64
        /// Nil for an empty slot, ``RowTable/tombstone`` for a removed entry's.
        @usableFromInline var object: UnsafeRawPointer?

        @inlinable
        init(id: Int64, object: UnsafeRawPointer?) {
            self.id = id
            self.object = object
        }
    }

    /// The mark of a removed entry's slot (no object is at address 1).
    @inlinable static var tombstone: UnsafeRawPointer? { UnsafeRawPointer(bitPattern: 1) }

    @usableFromInline var slots: [Slot] = []
    /// `slots.count - 1`; slots.count is a power of two.
    @usableFromInline var mask = -1
    /// The number of entries.
    @usableFromInline package internal(set) var count = 0
    /// The number of tombstones.
    @usableFromInline var removedCount = 0
    /// Zero while ids take their own slots; the odd multiplier of the hash otherwise.
    @usableFromInline var multiplier: UInt64 = 0

    package init() {}

    /// A probe longer than this (in slots) moves the table to the multiplicative hash.
    @usableFromInline static let maximumProbe = 64

    /// Whether the table hashes its ids (rather than placing each at its own slot).
    package var isHashed: Bool { multiplier != 0 }

    /// The slot where the search for `id` starts in a table of `mask + 1` slots: the id's own,
    /// or its hash: the top bits of its product with `multiplier`, as many as index a slot.
    /// (Bits from the middle of the product would not do: ids that are multiples of a power of two
    /// have that many low zero bits in every product, so those of a middle range are all zero
    /// for multiples of 2^40, and every such id would share a slot.)
    @inlinable @inline(__always)
    static func home(_ id: Int64, mask: Int, multiplier: UInt64) -> Int {
        guard multiplier != 0 else { return Int(truncatingIfNeeded: id) & mask }
        let bits = (mask &+ 1).trailingZeroBitCount
        return Int(truncatingIfNeeded: (UInt64(bitPattern: id) &* multiplier) &>> (64 &- bits)) & mask
    }

    @inlinable @inline(__always)
    func home(_ id: Int64) -> Int { Self.home(id, mask: mask, multiplier: multiplier) }

    /// The slot of `id`'s entry, or nil.
    @inlinable @inline(__always)
    func slot(of id: Int64) -> Int? {
        guard count > 0 else { return nil }
        let mask = mask
        return slots.withUnsafeBufferPointer { slots in
            var index = home(id)
            while let pointer = slots[index].object {
                if slots[index].id == id && pointer != Self.tombstone { return index }
                index = (index + 1) & mask
            }
            return nil
        }
    }

    /// The object of `id`, if any.
    @inlinable @inline(__always)
    package func object(_ id: Int64) -> AnyObject? {
        guard let index = slot(of: id), let pointer = slots[index].object else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Makes `object` the object of `id`.
    @inlinable
    package mutating func set(_ id: Int64, _ object: UnsafeRawPointer) {
        if let index = slot(of: id) {
            slots[index].object = object
            return
        }
        // At most half full, tombstones included, so that probes stay short.
        if (count + removedCount + 1) * 2 > slots.count { grow() }
        let mask = mask
        let start = home(id)
        let (reused, probe) = slots.withUnsafeMutableBufferPointer { slots -> (Bool, Int) in
            var index = start
            var probe = 0
            // The first free slot, a tombstone's or an empty one.
            while let pointer = slots[index].object, pointer != Self.tombstone {
                index = (index + 1) & mask
                probe += 1
            }
            let reused = slots[index].object != nil
            slots[index] = Slot(id: id, object: object)
            return (reused, probe)
        }
        count += 1
        if reused { removedCount -= 1 }
        // Ids crowding their own slots, or (rarely) a multiplier that crowds these ids: a new one.
        if probe > Self.maximumProbe { rehash(multiplier: Self.randomMultiplier()) }
    }

    /// An odd multiplier drawn at random, so that no store can choose ids that crowd a table.
    @usableFromInline
    static func randomMultiplier() -> UInt64 { UInt64.random(in: 1...UInt64.max) | 1 }

    /// Removes the entry of `id` when it points to `expected` (or, with nil, whatever it points
    /// to); returns the object it pointed to.
    @inlinable
    package mutating func remove(_ id: Int64, ifPointer expected: UnsafeRawPointer?) -> AnyObject? {
        guard let index = slot(of: id), let pointer = slots[index].object else { return nil }
        if let expected, expected != pointer { return nil }
        slots[index].object = Self.tombstone
        count -= 1
        removedCount += 1
        return Unmanaged<AnyObject>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Calls `body` with each object.
    package func forEachObject(_ body: (AnyObject) -> Void) {
        for slot in slots {
            if let pointer = slot.object, pointer != Self.tombstone {
                body(Unmanaged<AnyObject>.fromOpaque(pointer).takeUnretainedValue())
            }
        }
    }

    /// Makes room: twice the slots when the entries fill more than a quarter of them, else the
    /// same number, cleared of tombstones.
    @usableFromInline
    mutating func grow() {
        let capacity = max(16, count * 4 > slots.count ? slots.count * 2 : slots.count)
        rehash(capacity: capacity, multiplier: multiplier)
    }

    /// Places every entry again, in a table of `capacity` slots hashed with `multiplier`.
    @usableFromInline
    mutating func rehash(capacity: Int? = nil, multiplier: UInt64, draws: Int = 4) {
        let old = slots
        let capacity = capacity ?? slots.count
        slots = Array(repeating: Slot(id: 0, object: nil), count: capacity)
        let mask = capacity - 1
        self.mask = mask
        removedCount = 0
        self.multiplier = multiplier
        // Straight into the first empty slot: the entries are distinct, there are no tombstones
        // yet, and the new table has room for them all (a fetch's registry grows this way a dozen
        // times).
        var longest = 0
        slots.withUnsafeMutableBufferPointer { slots in
            for slot in old {
                guard let pointer = slot.object, pointer != Self.tombstone else { continue }
                var index = Self.home(slot.id, mask: mask, multiplier: multiplier)
                var probe = 0
                while slots[index].object != nil {
                    index = (index + 1) & mask
                    probe += 1
                }
                slots[index] = Slot(id: slot.id, object: pointer)
                longest = max(longest, probe)
            }
        }
        // Past the bound: a new random multiplier, a few times at most (a random odd multiplier
        // crowds a half-full table this much only rarely, and no store can aim at one).
        if longest > Self.maximumProbe && draws > 0 {
            rehash(multiplier: Self.randomMultiplier(), draws: draws - 1)
        }
    }
}
