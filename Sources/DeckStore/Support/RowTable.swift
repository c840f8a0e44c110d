/// A table from record ids to unretained object pointers, for the model layer's registry of
/// instances: open addressing with linear probing, at most half full, deletion by backward shift
/// (no tombstones). A fetch inserts one entry per model and each model's end removes it, so
/// both are on the fetch's hot path.
///
/// An id's slot is the id itself, masked: a store's ids are mostly dense, and the rows of a fetch
/// come in runs of neighbouring ids (in id order, or in the order of a property that grew with
/// them), so neighbouring entries share cache lines, where a hash that spreads them makes each
/// entry a cache miss (measured: a third of the fetch's time in the table). Ids that crowd
/// together (a store whose ids are multiples of a large power of two, say) would make probes
/// long: past ``maximumProbe`` slots, the table moves to a multiplicative hash with a random
/// multiplier, which spreads any ids.
///
/// The table does not retain what it points to: its user removes an entry before the object
/// goes away.
package struct RowTable {
    @usableFromInline
    struct Slot {
        @usableFromInline var id: Int64
        /// Nil for an empty slot.
        @usableFromInline var object: UnsafeRawPointer?

        @inlinable
        init(id: Int64, object: UnsafeRawPointer?) {
            self.id = id
            self.object = object
        }
    }

    @usableFromInline var slots: [Slot] = []
    /// `slots.count - 1`; slots.count is a power of two.
    @usableFromInline var mask = -1
    /// The number of entries.
    @usableFromInline package internal(set) var count = 0
    /// Zero while ids take their own slots; the odd multiplier of the hash otherwise.
    @usableFromInline var multiplier: UInt64 = 0

    package init() {}

    /// A probe longer than this (in slots) moves the table to the multiplicative hash.
    @usableFromInline static let maximumProbe = 64

    /// Whether the table hashes its ids (rather than placing each at its own slot).
    package var isHashed: Bool { multiplier != 0 }

    /// The slot where the search for `id` starts in a table of `mask + 1` slots: the id's own,
    /// or its hash (the top half of its product with `multiplier`).
    @inlinable @inline(__always)
    static func home(_ id: Int64, mask: Int, multiplier: UInt64) -> Int {
        guard multiplier != 0 else { return Int(truncatingIfNeeded: id) & mask }
        return Int(truncatingIfNeeded: (UInt64(bitPattern: id) &* multiplier) >> 32) & mask
    }

    @inlinable @inline(__always)
    func home(_ id: Int64) -> Int { Self.home(id, mask: mask, multiplier: multiplier) }

    /// The object of `id`, if any.
    @inlinable @inline(__always)
    package func object(_ id: Int64) -> AnyObject? {
        guard count > 0 else { return nil }
        return slots.withUnsafeBufferPointer { slots in
            var index = home(id)
            while let pointer = slots[index].object {
                if slots[index].id == id {
                    return Unmanaged<AnyObject>.fromOpaque(pointer).takeUnretainedValue()
                }
                index = (index + 1) & mask
            }
            return nil
        }
    }

    /// Makes `object` the object of `id`.
    @inlinable
    package mutating func set(_ id: Int64, _ object: UnsafeRawPointer) {
        // At most half full, so that probes stay short.
        if (count + 1) * 2 > slots.count { grow() }
        let mask = mask
        let start = home(id)
        let (added, probe) = slots.withUnsafeMutableBufferPointer { slots -> (Bool, Int) in
            var index = start
            var probe = 0
            while slots[index].object != nil {
                if slots[index].id == id {
                    slots[index].object = object
                    return (false, probe)
                }
                index = (index + 1) & mask
                probe += 1
            }
            slots[index] = Slot(id: id, object: object)
            return (true, probe)
        }
        if added { count += 1 }
        if probe > Self.maximumProbe && multiplier == 0 { rehash(multiplier: Self.randomMultiplier()) }
    }

    /// An odd multiplier drawn at random, so that no store can choose ids that crowd a table.
    @usableFromInline
    static func randomMultiplier() -> UInt64 { UInt64.random(in: 1...UInt64.max) | 1 }

    /// Removes the entry of `id` when it points to `expected` (or, with nil, whatever it points
    /// to); returns the object it pointed to.
    @inlinable
    package mutating func remove(_ id: Int64, ifPointer expected: UnsafeRawPointer?) -> AnyObject? {
        guard count > 0 else { return nil }
        let mask = mask
        let multiplier = multiplier
        let start = home(id)
        let removed = slots.withUnsafeMutableBufferPointer { slots -> UnsafeRawPointer? in
            var index = start
            while let pointer = slots[index].object {
                if slots[index].id == id {
                    if let expected, expected != pointer { return nil }
                    // Backward-shift deletion: later entries of the same probe run move up into
                    // the hole, so that every search still finds them without tombstones.
                    var hole = index
                    var next = (hole + 1) & mask
                    while slots[next].object != nil {
                        let wanted = Self.home(slots[next].id, mask: mask, multiplier: multiplier)
                        // The entry may fill the hole unless its home lies within (hole, next].
                        let fits =
                            hole <= next
                            ? (wanted <= hole || wanted > next) : (wanted <= hole && wanted > next)
                        if fits {
                            slots[hole] = slots[next]
                            hole = next
                        }
                        next = (next + 1) & mask
                    }
                    slots[hole].object = nil
                    return pointer
                }
                index = (index + 1) & mask
            }
            return nil
        }
        guard let removed else { return nil }
        count -= 1
        return Unmanaged<AnyObject>.fromOpaque(removed).takeUnretainedValue()
    }

    /// Calls `body` with each object.
    package func forEachObject(_ body: (AnyObject) -> Void) {
        for slot in slots {
            if let pointer = slot.object {
                body(Unmanaged<AnyObject>.fromOpaque(pointer).takeUnretainedValue())
            }
        }
    }

    @usableFromInline
    mutating func grow() {
        rehash(capacity: max(16, slots.count * 2), multiplier: multiplier)
    }

    /// Places every entry again, in a table of `capacity` slots hashed with `multiplier`.
    @usableFromInline
    mutating func rehash(capacity: Int? = nil, multiplier: UInt64) {
        let old = slots
        let capacity = capacity ?? slots.count
        slots = Array(repeating: Slot(id: 0, object: nil), count: capacity)
        mask = capacity - 1
        count = 0
        self.multiplier = multiplier
        for slot in old {
            if let pointer = slot.object { set(slot.id, pointer) }
        }
    }
}
