import CDeckSystem
import DeckStore
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What a property wrapper holds besides its value: the model's backing once the model is
/// registered (or has been touched), or, in the instance Deck makes to discover a type, a
/// ``DiscoveryMarker`` naming the wrapper's accessor.
@usableFromInline
class PropertyOwner {
    /// True for ``DiscoveryMarker``: lets the getters tell the two apart without a dynamic cast.
    @usableFromInline final let isMarker: Bool

    init(isMarker: Bool) { self.isMarker = isMarker }
}

/// Stands in a discovery instance's wrapper for the model backing. The marker's address, found in
/// the instance's memory, gives the wrapper's place in every instance of the type; its accessor
/// reads and writes the wrapper there.
final class DiscoveryMarker: PropertyOwner {
    let accessor: PropertyAccessor
    /// For a to-one relationship of a discovery instance: the destination's discovery instance,
    /// so that a key path through the relationship (`\Card.deck?.title`) can be followed.
    var destinationProbe: AnyObject?

    init(accessor: PropertyAccessor) {
        self.accessor = accessor
        super.init(isMarker: true)
    }
}

/// The state of discovery (a model type's properties, found once) and of key-path resolution
/// (which properties a key path reads, found by applying it to a discovery instance).
///
/// Both run under ``lock``, one at a time; their state is the running thread's *frame*, kept in
/// a thread slot, so that the wrappers of other threads' instances, made meanwhile, take no part.
@usableFromInline
enum Discovery {
    /// What the current thread is doing: discovering a type (its wrappers register), or
    /// recording the properties a key path reads.
    final class Frame {
        let discovering: Bool
        var registered: [PropertyAccessor] = []
        var recording: [PropertyAccessor] = []

        init(discovering: Bool) { self.discovering = discovering }
    }

    private static let frame = ThreadSlot<Frame>()

    /// Whether a discovery or a resolution runs on this thread (then a wrapper's initializer asks
    /// ``register(_:)``): one thread-local load.
    @usableFromInline static var isActive: Bool { frame.isSet }

    /// Serialises discoveries and key-path resolutions (they share the discovery instances).
    static let lock = NSRecursiveLock()

    /// Called by a wrapper's initializer: in a discovery instance, registers the wrapper's
    /// accessor (made by `makeAccessor`) and returns the marker the wrapper holds.
    @inline(__always)
    static func register(_ makeAccessor: () -> PropertyAccessor) -> DiscoveryMarker? {
        guard let frame = frame.current, frame.discovering else { return nil }
        let accessor = makeAccessor()
        frame.registered.append(accessor)
        return DiscoveryMarker(accessor: accessor)
    }

    /// Runs `make` (which makes a discovery instance) with registration on, and returns the
    /// instance and the accessors its wrappers registered, in the order they were made.
    static func discover<T>(_ make: () -> T) -> (T, [PropertyAccessor]) {
        lock.lock()
        defer { lock.unlock() }
        let saved = frame.current
        let current = Frame(discovering: true)
        frame.set(current)
        defer { frame.set(saved) }
        let instance = make()
        return (instance, current.registered)
    }

    /// Called by a getter that finds a marker: records the property read.
    static func recordRead(_ accessor: PropertyAccessor) {
        guard let frame = frame.current, !frame.discovering else { return }
        frame.recording.append(accessor)
    }

    /// Runs `body` (which reads through discovery instances) and returns the properties it read.
    static func recordReads(_ body: () -> Void) -> [PropertyAccessor] {
        lock.lock()
        defer { lock.unlock() }
        let saved = frame.current
        let current = Frame(discovering: false)
        frame.set(current)
        defer { frame.set(saved) }
        body()
        return current.recording
    }
}

/// Finds where in an instance each wrapper lives: the byte offset, from the instance's address,
/// of each marker's reference. Every instance of a class has the same layout, so the offsets found
/// in the discovery instance hold for all of them.
///
/// The scan reads the instance's memory one pointer-sized word at a time, from just after the
/// object header, and stops once every marker is found: each marker is referenced by its own
/// wrapper's field and by nothing else in the instance. The instance's allocation bounds it.
func markerOffsets(in instance: AnyObject, markers: [DiscoveryMarker]) -> [ObjectIdentifier: Int]? {
    var wanted: [UInt: ObjectIdentifier] = [:]
    for marker in markers {
        wanted[UInt(bitPattern: Unmanaged.passUnretained(marker).toOpaque())] = ObjectIdentifier(marker)
    }
    var found: [ObjectIdentifier: Int] = [:]
    let base = UnsafeRawPointer(Unmanaged.passUnretained(instance).toOpaque())
    let word = MemoryLayout<UInt>.size
    // The header: the isa pointer and the reference counts.
    var offset = 2 * word
    // The instance's allocation bounds the scan, should a marker ever go unfound.
    let limit = deck_malloc_usable_size(UnsafeMutableRawPointer(mutating: base)) - word + 1
    while found.count < wanted.count, offset < limit {
        let value = base.load(fromByteOffset: offset, as: UInt.self)
        if let marker = wanted[value], found[marker] == nil { found[marker] = offset }
        offset += word
    }
    withExtendedLifetime(instance) {}
    return found.count == wanted.count ? found : nil
}
