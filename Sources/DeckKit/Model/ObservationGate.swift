import DeckStore
import Foundation
import Observation
import Synchronization

/// Tells whether Observation is tracking the reads of the current thread, so that a model makes
/// its `ObservationRegistrar` only when one is needed.
///
/// A registrar costs two allocations to make and a lock to end, more than the rest of a fetched
/// model together; yet it only matters once something observes the model, and observing starts
/// with a read inside `withObservationTracking` (or SwiftUI's equivalent), which records the
/// registrar's context. Observation offers no public way to ask whether such a scope is active,
/// so the gate asks it indirectly: it reads a probe's property through the probe's own registrar,
/// with a key path whose subscript argument counts each time it is hashed. Outside a tracking
/// scope `access` returns at once; inside one it adds the key path to the scope's access list,
/// which hashes it. A read that saw the count move was tracked (another thread's probe can move
/// it too: that only makes a registrar that was not needed, never misses one).
///
/// That rests on how Observation records accesses, so the gate checks itself once per process
/// (``isReliable``): when a tracked read does not register, or an untracked one does, every model
/// makes its registrar on first read, as if every read were tracked.
///
/// Each tracking scope that reads a model while no registrar exists also observes the probe,
/// until its `onChange` fires. So that the scopes whose models never change are not kept for
/// good, each thread's probe is replaced after a number of detections; the old probe's registrar
/// lets go of its observers when it goes away.
@usableFromInline
enum ObservationGate {
    /// True when the current thread's reads are tracked (or when the gate cannot tell).
    @usableFromInline
    static func isTracking() -> Bool {
        guard isReliable else { return true }
        return probeDetects()
    }

    /// Whether detection works with this Observation library: a tracked read detected, an
    /// untracked one not (decided once).
    static let isReliable: Bool = {
        let outside = probeDetects()
        let inside = withObservationTracking({ probeDetects() }, onChange: {})
        return inside && !outside
    }()

    /// How many times a detector key path was hashed, in every thread.
    private static let hashes = Atomic<Int>(0)

    /// Reads the current thread's probe and reports whether the read was recorded.
    private static func probeDetects() -> Bool {
        // The thread's probe, not retained: the thread holds it until a detection replaces it.
        let detected = Probe.slot.withCurrent { current in
            let probe = current ?? Probe.made()
            let before = hashes.load(ordering: .relaxed)
            probe.registrar.access(probe, keyPath: Probe.detectorKeyPath)
            return hashes.load(ordering: .relaxed) != before
        }
        if detected { Probe.slot.current?.noteDetection() }
        return detected
    }

    /// A subscript argument that counts each hash: the access list hashes every key path it
    /// records.
    struct Detector: Hashable {
        static func == (_: Detector, _: Detector) -> Bool { true }
        func hash(into hasher: inout Hasher) {
            ObservationGate.hashes.add(1, ordering: .relaxed)
        }
    }

    /// One thread's observable probe.
    final class Probe: Observable {
        let registrar = ObservationRegistrar()
        private var detections = 0

        subscript(_: Detector) -> Int { 0 }

        nonisolated(unsafe) static let detectorKeyPath: KeyPath<Probe, Int> = \Probe[Detector()]

        /// After this many detections a thread's probe is replaced (see ``ObservationGate``).
        static let detectionsPerProbe = 256

        /// Each thread's probe, made on first use (released when the thread ends or a detection
        /// replaces it).
        static let slot = ThreadSlot<Probe>()

        /// Makes the calling thread's probe (it has none).
        static func made() -> Probe {
            let probe = Probe()
            slot.set(probe)
            return probe
        }

        func noteDetection() {
            detections += 1
            guard detections >= Self.detectionsPerProbe else { return }
            Self.slot.set(Probe())
        }
    }
}
