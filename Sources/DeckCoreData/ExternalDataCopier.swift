import DeckStore
import DeckSupport
import Foundation

/// Copies a store's external data files into blob files of the package on a thread of its own,
/// in the order the rows will name them, while the rows load: the hashing and copying of large
/// files overlaps the inserts on a second core instead of waiting between them.
///
/// The row loop asks for each file's reference (``reference(for:)``), waiting only when the
/// copy has not got that far; a file the copier does not have (not in its list, or it stopped)
/// is left to the loop, which writes it itself. ``finish()`` ends the thread and makes the files
/// durable; it runs on every path out of the load (`defer`), before the staging directory can
/// go away.
final class ExternalDataCopier: @unchecked Sendable {
    /// At most this many files are copied ahead (the rest are written by the row loop): their
    /// names and references are held in memory.
    static let window = 65_536

    private let paths: [String]
    private let intake: BlobIntake
    /// Guards `results`, `isDone` and `isCancelled` (hence `@unchecked Sendable`).
    private let condition = NSCondition()
    private var results: [String: Result<BlobReference, DeckError>] = [:]
    private var isDone = false
    private var isCancelled = false
    /// What making the files durable on the thread threw, once it has.
    private var durability: Result<Void, DeckError>?
    private let ended = DispatchSemaphore(value: 0)
    private var started = false
    private let wanted: Set<String>

    /// A copier of `files` (the order in which rows name them; repeats are copied once) through
    /// `intake`.
    init(files: [URL], intake: BlobIntake) {
        var seen = Set<String>()
        paths = files.map(\.path).filter { seen.insert($0).inserted }
        wanted = seen
        self.intake = intake
    }

    /// Starts the copying thread.
    func start() {
        started = true
        Thread.detachNewThread { [self] in
            defer { ended.signal() }
            for path in paths {
                condition.lock()
                let stop = isCancelled
                condition.unlock()
                if stop { break }
                let result: Result<BlobReference, DeckError>
                do throws(DeckError) {
                    result = .success(try intake.write(contentsOf: path))
                } catch {
                    result = .failure(error)
                }
                condition.lock()
                results[path] = result
                condition.broadcast()
                condition.unlock()
            }
            condition.lock()
            isDone = true
            let copiedAll = !isCancelled
            condition.broadcast()
            condition.unlock()
            // Every file is copied: make them durable here, while the rows still load, rather
            // than in `finish()`, after them.
            guard copiedAll else { return }
            let outcome = Result { () throws(DeckError) in try intake.finish() }
            condition.lock()
            durability = outcome
            condition.unlock()
        }
    }

    /// The blob file of external data file `url`, once copied; nil when the copier does not
    /// copy it (the caller writes it). An error the copy met is thrown here, for the row that
    /// names the file.
    func reference(for url: URL) throws(DeckError) -> BlobReference? {
        let path = url.path
        guard wanted.contains(path) else { return nil }
        condition.lock()
        defer { condition.unlock() }
        while results[path] == nil && !isDone { condition.wait() }
        return try results[path]?.get()
    }

    /// Stops the thread (what it has not copied yet is not copied), waits for it, and makes what
    /// it copied durable (the thread has, when it copied every file).
    func finish() throws(DeckError) {
        guard started else { return }
        started = false
        condition.lock()
        isCancelled = true
        condition.unlock()
        ended.wait()
        condition.lock()
        let outcome = durability
        condition.unlock()
        try outcome?.get()
        try intake.finish()
    }
}
