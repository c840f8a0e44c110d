import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// Two containers that create the same new document at once: one creates it, the other opens
/// the document that now exists (or finds it locked by its creator). Neither is told that it
/// "already exists" and to remove it, which would delete the other's document.
@Suite("Creating one new document from two places at once", .timed)
struct DocumentCreationRaceTests {
    typealias Note = SaveGraphTests.Note
    typealias Tag = SaveGraphTests.Tag
    typealias Pin = SaveGraphTests.Pin

    /// What the racing containers came to.
    final class Outcomes: @unchecked Sendable {
        private let lock = NSLock()
        private var containers: [ModelContainer] = []
        private var errors: [any Error] = []

        func opened(_ container: ModelContainer) { lock.withLock { containers.append(container) } }
        func failed(_ error: any Error) { lock.withLock { errors.append(error) } }
        var result: (opened: Int, errors: [any Error]) { lock.withLock { (containers.count, errors) } }
    }

    @Test("Two threads create one new document, 40 rounds: each opens it or finds it locked")
    func racingThreads() throws {
        let directory = try ScratchDirectory()
        for round in 0..<40 {
            let url = directory.appending("race-\(round).deck")
            let outcomes = Outcomes()
            let ready = DispatchSemaphore(value: 0)
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for _ in 0..<2 {
                done.enter()
                Thread.detachNewThread {
                    ready.signal()
                    start.wait()
                    do {
                        outcomes.opened(
                            try ModelContainer(
                                for: Schema([Note.self, Tag.self, Pin.self]),
                                configurations: [ModelConfiguration(url: url)]))
                    } catch {
                        outcomes.failed(error)
                    }
                    done.leave()
                }
            }
            ready.wait()
            ready.wait()
            start.signal()
            start.signal()
            done.wait()
            let (opened, errors) = outcomes.result
            #expect(opened >= 1, "round \(round)")
            for error in errors {
                guard case .locked? = error as? DeckError else {
                    Issue.record("round \(round): \(error)")
                    continue
                }
            }
        }
    }
}
