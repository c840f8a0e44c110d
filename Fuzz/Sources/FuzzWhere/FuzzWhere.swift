// The bytes are a `--where` expression (UTF-8, invalid sequences repaired) and a `--sort` key.
// What parses runs as a query on every entity of the flash-cards sample: fetch, count and
// fetchIDs must agree, and errors (unknown keys, type mismatches) are fine.
@_spi(Fuzzing) import DeckKit
@_spi(Fuzzing) import DeckQueryLanguage
import DeckSamples
import Foundation
import FuzzSupport

/// The sample package, made and opened read-only once per process.
let sample: PackageStore = {
    do {
        return try PackageStore.open(at: URL(fileURLWithPath: Fuzz.flashcardsTemplate), mode: .readOnly)
    } catch {
        Fuzz.setupFailed("opening the flash-cards sample: \(error)")
    }
}()

let entities = FlashcardsSample.schema.entities.map(\.name)

/// Runs `query` through fetch, count and fetchIDs; when all succeed they must agree.
func run(_ query: RecordQuery) {
    Fuzz.note("\(query.entity): \(Result { () throws in try sample.read { try $0.count(query) } })")
    let records = try? sample.read { try $0.fetch(query) }
    let count = try? sample.read { try $0.count(query) }
    let ids = try? sample.read { try $0.fetchIDs(query) }
    if let records, let count {
        Fuzz.check(records.count == count, "\(query): fetch gives \(records.count) records, count \(count)")
    }
    if let records, let ids {
        // Compared as sets: without a total order, two plans may return ties differently.
        Fuzz.check(
            records.map(\.id).sorted() == ids.sorted(),
            "\(query): fetch and fetchIDs disagree: \(records.map(\.id)) vs \(ids)")
    }
    if (records == nil) != (count == nil) || (count == nil) != (ids == nil) {
        Fuzz.fail(
            "\(query): fetch \(records == nil ? "fails" : "works"), count \(count == nil ? "fails" : "works"), "
                + "fetchIDs \(ids == nil ? "fails" : "works")")
    }
}

/// Every text value in `expression` (bare words such as dates arrive as strings).
func strings(in expression: QueryExpression) -> [String] {
    switch expression {
    case .value(.string(let s)): return [s]
    case .value, .path: return []
    case .compare(let a, _, let b), .text(let a, _, let b, _), .arithmetic(let a, _, let b),
        .coalesce(let a, let b):
        return strings(in: a) + strings(in: b)
    case .oneOf(let a, let list): return strings(in: a) + list.flatMap(strings(in:))
    case .isNull(let a), .not(let a), .negate(let a), .count(let a): return strings(in: a)
    case .and(let list), .or(let list): return list.flatMap(strings(in:))
    case .any(let a, _, let b), .all(let a, _, let b): return strings(in: a) + strings(in: b)
    @unknown default: return []
    }
}

/// A date given as text, printed the way Deck prints dates (`Timestamp.description`, what `deck
/// query` and `--json` show) and parsed again (`Timestamp(parsing:)`, what `deck insert`,
/// `--where` and schema files use), must be the identical stored number (spec 7.4). With
/// `DECK_FUZZ_ALLOW=date-text-roundtrip` this check is skipped.
func checkDateRoundTrip(_ text: String) {
    guard !Fuzz.allows("date-text-roundtrip"), let date = Timestamp(parsing: text) else { return }
    let printed = date.description
    guard let reparsed = Timestamp(parsing: printed) else {
        Fuzz.fail("'\(text)' parses as a date, but its printed form '\(printed)' does not parse")
    }
    Fuzz.check(
        reparsed.timeIntervalSince1970.bitPattern == date.timeIntervalSince1970.bitPattern,
        "'\(text)' parses as \(date.timeIntervalSince1970) s and prints as '\(printed)', which parses as "
            + "\(reparsed.timeIntervalSince1970) s")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: size), as: UTF8.self)
    Fuzz.note("parse: \(Result { try QueryLanguageFuzzingHooks.parseWhere(text) })")
    if let filter = try? QueryLanguageFuzzingHooks.parseWhere(text) {
        for value in strings(in: filter) { checkDateRoundTrip(value) }
        for entity in entities {
            run(RecordQuery(entity, where: filter))
            run(RecordQuery(entity, where: filter, limit: 3, offset: 1))
        }
    }
    if let key = try? QueryLanguageFuzzingHooks.parseSort(text) {
        for entity in entities {
            run(RecordQuery(entity, sort: [key]))
        }
    }
    // A line break splits the input into an expression and a sort key, so both can be combined.
    if let newline = text.firstIndex(of: "\n"),
        let filter = try? QueryLanguageFuzzingHooks.parseWhere(String(text[..<newline])),
        let key = try? QueryLanguageFuzzingHooks.parseSort(String(text[text.index(after: newline)...]))
    {
        for entity in entities {
            run(RecordQuery(entity, where: filter, sort: [key], limit: 5))
        }
    }
    return 0
}

#if DECK_LIBFUZZER
    /// libFuzzer's `main` (see ``Fuzz/runLibFuzzer(_:_:_:)``).
    @_cdecl("FuzzWhere_main")
    public func libFuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>)
        -> CInt
    {
        Fuzz.runLibFuzzer(argc, argv, fuzz)
    }
#else
    /// Built without libFuzzer: replays the input files named on the command line.
    @main struct Replay {
        static func main() { Fuzz.replay(fuzz) }
    }
#endif
