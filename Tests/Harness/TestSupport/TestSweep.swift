import Foundation

/// How much of a long sweep a test pass runs: all of it, or a fixed part of it when
/// `DECK_TEST_SWEEPS=sample` (which `Scripts/sanitize` sets for its passes).
///
/// The sanitizer passes look for memory errors and data races in the code the tests reach; the
/// long sweeps (thousands of random values, hundreds of random queries, every fault point of a
/// migration) exist to find the rare input, which the plain pass (`Scripts/test`) and
/// `Scripts/sanitize --all` still try in full. A sampled sweep reaches the same code with a
/// fraction of the inputs, chosen the same way (same seeds, every n-th point), so a run without the
/// variable and a sampled one differ only in how many inputs they try.
public enum TestSweep {
    /// The environment variable: `sample` samples the sweeps; anything else, or unset, runs them
    /// in full.
    public static let variable = "DECK_TEST_SWEEPS"

    /// Whether this process samples the sweeps.
    public static let isSampled = ProcessInfo.processInfo.environment[variable] == "sample"

    /// How many inputs a random sweep tries: `full`, or `sampled` when sampling.
    public static func count(_ full: Int, sampled: Int) -> Int {
        isSampled ? min(full, sampled) : full
    }

    /// The step between the points of an exhaustive sweep that this pass tries: 1 (every
    /// point), or `sampled` when sampling.
    public static func step(sampled: Int) -> Int {
        isSampled ? max(1, sampled) : 1
    }
}
