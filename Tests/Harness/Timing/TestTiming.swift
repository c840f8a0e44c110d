import Foundation
import Testing

/// Times each test case, for CI's table of the slowest suites.
///
/// Swift Testing's own reports cannot give a suite's cost: they stamp a test's start when the
/// runner schedules it (every test at once, at the start of the run), not when it runs. A trait's
/// scope, by contrast, is entered when the test case gets its turn (inside the limit that
/// `--experimental-maximum-parallelization-width` sets), so the time around `function` is the
/// case's own wall time (shared with the cases running beside it).
///
/// Every top-level suite carries the trait (`@Suite(.timed)`; `Scripts/suite-timing --check`,
/// run by `Scripts/lint`, finds one that does not). It records only when the environment variable
/// `DECK_TEST_TIMES` names a file: then each case appends one line,
/// `MODULE<TAB>SUITE<TAB>TEST<TAB>SECONDS<TAB>START`, where SUITE is the top-level suite's type
/// name and START the case's start in seconds since 1970 (to see how many cases ran at once).
/// `Scripts/suite-timing --report FILE` sums them per suite.
public struct TestTiming: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil, let log = TimingLog.shared else {
            return try await function()
        }
        let start = ContinuousClock.now
        defer { log.record(test, since: start) }
        try await function()
    }
}

extension Trait where Self == TestTiming {
    /// Records each test case's wall time when `DECK_TEST_TIMES` names a file (see ``TestTiming``).
    public static var timed: TestTiming { TestTiming() }
}

/// The file named by `DECK_TEST_TIMES`, appended to under a lock (the cases of a run record from
/// many threads).
private final class TimingLog: @unchecked Sendable {
    static let shared: TimingLog? = {
        guard let path = ProcessInfo.processInfo.environment["DECK_TEST_TIMES"], !path.isEmpty
        else { return nil }
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
        }
        guard let handle = FileHandle(forWritingAtPath: path) else { return nil }
        return TimingLog(handle: handle)
    }()

    private let handle: FileHandle
    private let lock = NSLock()

    private init(handle: FileHandle) { self.handle = handle }

    func record(_ test: Test, since start: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - start
        let seconds =
            Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let names = test.id.nameComponents
        let suite = names.count > 1 ? names[0] : "(no suite)"
        let started = Date().timeIntervalSince1970 - seconds
        let line = "\(test.id.moduleName)\t\(suite)\t\(test.name)\t\(seconds)\t\(started)\n"
        lock.lock()
        defer { lock.unlock() }
        handle.seekToEndOfFile()
        handle.write(Data(line.utf8))
    }
}
