import Foundation

/// SplitMix64: a small, fast, deterministic generator, so that every random choice a test makes
/// follows from one seed and a failure replays.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The seed of one randomised test.
///
/// One seed per run decides every random choice of every test: `DECK_TEST_SEED` (decimal, or
/// hexadecimal after `0x`) when it is set, otherwise a seed drawn once per process. Each test
/// derives its own stream from the run's seed and its label, so its choices do not depend on
/// which other tests ran, in what order or in parallel. A failure message includes
/// ``description`` (the run's seed and the command that replays it).
public struct TestSeed: Sendable, CustomStringConvertible {
    /// The environment variable that sets the run's seed.
    public static let variable = "DECK_TEST_SEED"

    /// The run's seed.
    public static let run: UInt64 = {
        guard let text = ProcessInfo.processInfo.environment[variable] else {
            return UInt64.random(in: 0...UInt64.max)
        }
        guard let value = parse(text) else {
            preconditionFailure(
                "\(variable) must be an unsigned 64-bit integer (decimal or 0x…), not '\(text)'")
        }
        return value
    }()

    /// `text` as a seed: decimal, or hexadecimal after `0x`; nil if it is neither.
    public static func parse(_ text: String) -> UInt64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.lowercased().hasPrefix("0x") { return UInt64(trimmed.dropFirst(2), radix: 16) }
        return UInt64(trimmed)
    }

    /// What the test is called in `swift test --filter` (its suite, usually).
    public let filter: String
    /// Other environment settings the replay needs ("DECK_CRASH_ROUNDS=40").
    public let environment: [String]
    /// The seed of this test's stream: the run's seed mixed with `label`.
    public let value: UInt64

    /// The seed for the test `label` (unique among the tests; e.g. "Suite.test"), replayed with
    /// `swift test --filter <filter>` and the `environment` settings.
    public init(_ label: String, filter: String? = nil, environment: [String] = []) {
        self.filter = filter ?? label
        self.environment = environment
        // FNV-1a of the label, mixed into the run's seed by one SplitMix step.
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in label.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        var mixer = SeededGenerator(seed: Self.run ^ hash)
        value = mixer.next()
    }

    /// A generator of this test's stream, from its start.
    public func generator() -> SeededGenerator { SeededGenerator(seed: value) }

    /// "seed N (replay: DECK_TEST_SEED=N swift test --filter F)".
    public var description: String {
        let settings = (["\(Self.variable)=\(Self.run)"] + environment).joined(separator: " ")
        return "seed \(Self.run) (replay: \(settings) swift test --filter \(filter))"
    }
}
