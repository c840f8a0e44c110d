import DeckCommandLine
import DeckStore
import DeckTestTiming
import Foundation
import Testing

/// A manually advanced clock for progress-bar tests.
final class TestClock: Sendable {
    private let seconds = Locked(100.0)

    /// The current time in seconds.
    @Sendable func now() -> Double {
        seconds.withLock { $0 }
    }

    /// Moves time forward.
    func advance(_ delta: Double) {
        seconds.withLock { $0 += delta }
    }
}

/// Collects everything a progress bar writes.
final class OutputRecorder: Sendable {
    private let chunks = Locked<[String]>([])

    /// Records one write.
    @Sendable func write(_ text: String) {
        chunks.withLock { $0.append(text) }
    }

    /// All writes so far.
    var writes: [String] {
        chunks.withLock { $0 }
    }

    /// All writes concatenated.
    var text: String {
        writes.joined()
    }
}

@Suite("Terminal style", .timed)
struct TerminalStyleTests {
    @Test(
        arguments: [
            (true, [:], true),
            (false, [:], false),
            (true, ["NO_COLOR": "1"], false),
            (true, ["NO_COLOR": "0"], false),
            (true, ["NO_COLOR": ""], true),
            (false, ["NO_COLOR": ""], false),
            (true, ["TERM": "dumb"], false),
            (true, ["TERM": "xterm-256color"], true),
            (true, ["TERM": "xterm-256color", "NO_COLOR": "yes"], false),
            (true, ["TERM": ""], true),
        ] as [(Bool, [String: String], Bool)])
    func colourDecision(isTerminal: Bool, environment: [String: String], expected: Bool) {
        #expect(
            TerminalStyle.isColorEnabled(
                fileDescriptor: 2, environment: environment, isTerminal: { _ in isTerminal })
                == expected)
        #expect(
            TerminalStyle(fileDescriptor: 2, environment: environment, isTerminal: { _ in isTerminal })
                .isEnabled
                == expected)
    }

    @Test func asksAboutTheGivenDescriptor() {
        let style = TerminalStyle(fileDescriptor: 1, environment: [:], isTerminal: { $0 == 1 })
        #expect(style.isEnabled)
        #expect(!TerminalStyle(fileDescriptor: 2, environment: [:], isTerminal: { $0 == 1 }).isEnabled)
    }

    @Test func enabledWrappersEmitEscapeSequences() {
        let style = TerminalStyle(isEnabled: true)
        #expect(style.bold("b") == "\u{1B}[1mb\u{1B}[22m")
        #expect(style.dim("d") == "\u{1B}[2md\u{1B}[22m")
        #expect(style.red("r") == "\u{1B}[31mr\u{1B}[39m")
        #expect(style.green("g") == "\u{1B}[32mg\u{1B}[39m")
        #expect(style.yellow("y") == "\u{1B}[33my\u{1B}[39m")
        #expect(style.bold(style.red("x")) == "\u{1B}[1m\u{1B}[31mx\u{1B}[39m\u{1B}[22m")
    }

    @Test func disabledWrappersReturnPlainText() {
        for style in [TerminalStyle(isEnabled: false), TerminalStyle.plain] {
            #expect(style.bold("b") == "b")
            #expect(style.dim("d") == "d")
            #expect(style.red("r") == "r")
            #expect(style.green("g") == "g")
            #expect(style.yellow("y") == "y")
        }
    }

    @Test func standardStylesAreOffWhenNotATerminal() {
        // Under `swift test` the standard streams are usually pipes; only check consistency.
        #expect(TerminalStyle.standardError.isEnabled == false || StandardStreams.isTerminal(2))
        #expect(TerminalStyle.standardOutput.isEnabled == false || StandardStreams.isTerminal(1))
    }
}

@Suite("Progress bar", .timed)
struct ProgressBarTests {
    private func makeBar(
        total: Int64? = 100, unit: ProgressBar.Unit = .items, quiet: Bool = false, isTerminal: Bool = true,
        label: String = "Working", columns: Int = 120
    ) -> (ProgressBar, TestClock, OutputRecorder) {
        let clock = TestClock()
        let recorder = OutputRecorder()
        let bar = ProgressBar(
            label: label, total: total, unit: unit, quiet: quiet, isTerminal: isTerminal, columns: columns,
            clock: clock.now, output: recorder.write)
        return (bar, clock, recorder)
    }

    @Test func shortWorkPrintsNothing() {
        let (bar, clock, recorder) = makeBar()
        for step in 1...9 {
            clock.advance(0.1)
            bar.update(completed: Int64(step * 10))
        }
        bar.finish()
        #expect(recorder.writes.isEmpty)
    }

    @Test func longWorkShowsPercentageAndFinishClearsTheLine() throws {
        let (bar, clock, recorder) = makeBar()
        clock.advance(0.5)
        bar.update(completed: 10)
        #expect(recorder.writes.isEmpty)
        clock.advance(1.5)
        bar.update(completed: 42)
        let line = try #require(recorder.writes.last)
        #expect(line.hasPrefix("\r"))
        #expect(line.hasSuffix("\u{1B}[K"))
        #expect(line.contains(" 42%"))
        #expect(line == "\rWorking [########............]  42%  42/100  21/s  ETA 0:03\u{1B}[K")
        bar.finish()
        #expect(recorder.writes.last == "\r\u{1B}[K")
        let count = recorder.writes.count
        bar.finish()
        clock.advance(1)
        bar.update(completed: 99)
        #expect(recorder.writes.count == count)
    }

    @Test func disabledWhenNotATerminal() {
        let (bar, clock, recorder) = makeBar(isTerminal: false)
        #expect(!bar.isEnabled)
        clock.advance(5)
        bar.update(completed: 50)
        bar.finish()
        #expect(recorder.writes.isEmpty)
        #expect(bar.completed == 50)
    }

    @Test func disabledWhenQuiet() {
        let (bar, clock, recorder) = makeBar(quiet: true)
        #expect(!bar.isEnabled)
        clock.advance(5)
        bar.update(completed: 50)
        bar.finish()
        #expect(recorder.writes.isEmpty)
    }

    @Test func redrawsAtMostTenTimesASecond() {
        let (bar, clock, recorder) = makeBar()
        clock.advance(1.0)
        for _ in 0..<100 {
            bar.advance()
            clock.advance(0.01)
        }
        // 100 updates over one second: about ten redraws.
        #expect((9...11).contains(recorder.writes.count), "\(recorder.writes.count) redraws")
    }

    @Test func bytesLine() throws {
        let (bar, clock, recorder) = makeBar(total: 10_000_000, unit: .bytes, label: "Packing")
        clock.advance(2)
        bar.update(completed: 4_200_000)
        #expect(recorder.writes.last == "\rPacking [########............]  42%  2.1 MB/s  ETA 0:03\u{1B}[K")
    }

    @Test func completeAndOverfullLines() {
        let (bar, clock, recorder) = makeBar(total: 10)
        clock.advance(2)
        bar.update(completed: 10)
        #expect(
            recorder.writes.last == "\rWorking [####################] 100%  10/10  5.0/s  ETA 0:00\u{1B}[K")
        clock.advance(1)
        bar.update(completed: 12)
        #expect(recorder.text.hasSuffix("] 100%  12/10  4.0/s  ETA 0:00\u{1B}[K"))
    }

    @Test func unknownTotal() {
        let (bar, clock, recorder) = makeBar(total: nil, unit: .bytes, label: "Reading")
        clock.advance(4)
        bar.advance(by: 2_000_000)
        #expect(recorder.writes.last == "\rReading 2.0 MB  500.0 kB/s\u{1B}[K")
        bar.setTotal(4_000_000)
        clock.advance(1)
        bar.advance(by: 0)
        #expect(recorder.writes.last == "\rReading [##########..........]  50%  400.0 kB/s  ETA 0:05\u{1B}[K")
    }

    @Test func unknownTotalItems() {
        let (bar, clock, recorder) = makeBar(total: nil, label: "Scanning")
        clock.advance(2)
        bar.advance(by: 3)
        #expect(recorder.writes.last == "\rScanning 3  1.5/s\u{1B}[K")
    }

    @Test func zeroProgressHasNoETA() {
        let (bar, clock, recorder) = makeBar()
        clock.advance(2)
        bar.update(completed: 0)
        #expect(
            recorder.writes.last == "\rWorking [....................]   0%  0/100  0.0/s  ETA --:--\u{1B}[K")
    }

    @Test func longETAUsesHours() {
        let (bar, clock, recorder) = makeBar(total: 100_000)
        clock.advance(10)
        bar.update(completed: 10)
        #expect(recorder.writes.last?.contains("ETA 27:46:30") == true)
    }

    @Test func longLabelsAreShortenedToTheTerminalWidth() throws {
        let label = String(repeating: "very long label ", count: 10)
        let (bar, clock, recorder) = makeBar(label: label, columns: 60)
        clock.advance(2)
        bar.update(completed: 50)
        let line = try #require(recorder.writes.last)
        let visible = line.dropFirst().dropLast(3)
        #expect(visible.count == 59)
        #expect(visible.hasPrefix("very... [##########"))
        #expect(visible.hasSuffix("ETA 0:02"))
    }

    @Test func narrowTerminalDropsTheLabel() throws {
        let (bar, clock, recorder) = makeBar(label: "Label", columns: 20)
        clock.advance(2)
        bar.update(completed: 50)
        let line = try #require(recorder.writes.last)
        #expect(line == "\r[##########........\u{1B}[K")
    }

    @Test func concurrentUpdatesAreSafe() {
        let (bar, clock, recorder) = makeBar(total: 10_000)
        clock.advance(2)
        DispatchQueue.concurrentPerform(iterations: 10_000) { _ in
            bar.advance()
        }
        #expect(bar.completed == 10_000)
        bar.finish()
        #expect(recorder.writes.last == "\r\u{1B}[K")
    }

    @Test func defaultClockIsMonotonic() {
        let first = ProgressBar.monotonicSeconds()
        let second = ProgressBar.monotonicSeconds()
        #expect(second >= first)
        #expect(first > 0)
    }
}

@Suite("Standard streams", .timed)
struct StandardStreamsTests {
    @Test func writesToADescriptorUnbuffered() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        defer { close(descriptors[0]) }
        let text = "héllo\n" + String(repeating: "x", count: 10_000)
        StandardStreams.write(text, to: descriptors[1])
        close(descriptors[1])
        let data = FileHandle(fileDescriptor: descriptors[0]).readDataToEndOfFile()
        #expect(String(decoding: data, as: UTF8.self) == text)
        #expect(!StandardStreams.isTerminal(descriptors[0]))
        #expect(StandardStreams.terminalWidth(descriptors[0]) == nil)
    }

    @Test func printHelpersAppendNewlines() async {
        let result = await #expect(
            processExitsWith: .success, observing: [\.standardOutputContent, \.standardErrorContent]
        ) {
            print("printed first")
            StandardStreams.printOutput("to stdout")
            StandardStreams.writeOutput("no newline")
            StandardStreams.printError("to stderr")
            StandardStreams.writeError("raw")
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        let error = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.hasSuffix("printed first\nto stdout\nno newline"))
        #expect(error.hasSuffix("to stderr\nraw"))
    }
}
