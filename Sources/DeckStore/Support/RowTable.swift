/// A table from record ids to unretained object pointers, for the model layer's registry of
/// instances: open addressing with linear probing, at most half full, deletion by backward shift
/// (no tombstones), and ids hashed by one multiplication rather than `Hasher`'s SipHash, since
/// a fetch inserts one entry per model and each model's end removes it.
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

    package init() {}

    /// The slot where the search for `id` starts in a table of `mask + 1` slots (Fibonacci
    /// hashing: a multiplication by 2^64 / φ spreads consecutive ids over the table).
    @inlinable @inline(__always)
    static func home(_ id: Int64, mask: Int) -> Int {
        Int(truncatingIfNeeded: (UInt64(bitPattern: id) &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
    }

    @inlinable @inline(__always)
    func home(_ id: Int64) -> Int { Self.home(id, mask: mask) }

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
        let added = slots.withUnsafeMutableBufferPointer { slots -> Bool in
            var index = start
            while slots[index].object != nil {
                if slots[index].id == id {
                    slots[index].object = object
                    return false
                }
                index = (index + 1) & mask
            }
            slots[index] = Slot(id: id, object: object)
            return true
        }
        if added { count += 1 }
    }

    /// Removes the entry of `id` when it points to `expected` (or, with nil, whatever it points
    /// to); returns the object it pointed to.
    @inlinable
    package mutating func remove(_ id: Int64, ifPointer expected: UnsafeRawPointer?) -> AnyObject? {
        guard count > 0 else { return nil }
        let mask = mask
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
                        let wanted = Self.home(slots[next].id, mask: mask)
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
        let old = slots
        let capacity = max(16, old.count * 2)
        slots = Array(repeating: Slot(id: 0, object: nil), count: capacity)
        mask = capacity - 1
        count = 0
        for slot in old {
            if let pointer = slot.object { set(slot.id, pointer) }
        }
    }
}
