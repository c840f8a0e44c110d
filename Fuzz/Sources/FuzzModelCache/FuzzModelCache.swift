// The bytes are a Core Data model cache: an NSKeyedArchiver binary property list (what
// Z_MODELCACHE holds once inflated), or, when they do not start with `bplist`, the raw DEFLATE
// stream itself. Decoding must give a model or a CoreDataError, never a crash or a hang; a model
// that decodes must hang together.
import DeckCoreData
import Foundation
import FuzzSupport

/// Small limits, so a hostile input fails fast (the standard ones are tested in the suite).
let limits = BinaryPropertyList.Limits(
    maximumSize: 1 << 20, maximumObjects: 1 << 16, maximumDepth: 64, maximumValues: 1 << 18)

/// Checks what a decoded model promises: unique entity names, parents and destinations that are
/// entities of the model, inverses that are relationships of the destination.
func checkModel(_ model: CoreDataModel) {
    let names = model.entities.map(\.name)
    Fuzz.check(Set(names).count == names.count, "entity names repeat: \(names)")
    for entity in model.entities {
        if let parent = entity.parentName {
            Fuzz.check(names.contains(parent), "\(entity.name)'s parent \(parent) is not an entity")
        }
        Fuzz.check(
            entity.attributes.map(\.name) == entity.attributes.map(\.name).sorted(),
            "\(entity.name)'s attributes are not sorted by name")
        for relationship in entity.relationships {
            Fuzz.check(
                relationship.minCount >= 0 && relationship.maxCount >= 0,
                "\(entity.name).\(relationship.name) has a negative count")
        }
    }
}

/// Equality where a real is compared by its bits: NaN is not equal to itself under `==`, yet two
/// decodings of one NaN are the same.
func same(_ a: PropertyListValue, _ b: PropertyListValue) -> Bool {
    switch (a, b) {
    case (.real(let x), .real(let y)): x.bitPattern == y.bitPattern
    case (.array(let x), .array(let y)), (.set(let x), .set(let y)):
        x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
    case (.dictionary(let x), .dictionary(let y)):
        x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? false }
    default: a == b
    }
}

func same(_ a: Result<PropertyListValue, CoreDataError>, _ b: Result<PropertyListValue, CoreDataError>)
    -> Bool
{
    switch (a, b) {
    case (.success(let x), .success(let y)): same(x, y)
    case (.failure(let x), .failure(let y)): x == y
    default: false
    }
}

func decode(_ data: Data) -> Result<PropertyListValue, CoreDataError> {
    Result { () throws(CoreDataError) in try BinaryPropertyList.decode(data, limits: limits) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let data = Fuzz.data(bytes, size)
    if BinaryPropertyList.hasMagic(data) {
        let first = decode(data)
        let second = decode(data)
        Fuzz.check(same(first, second), "decoding the same bytes twice gives different results")
        Fuzz.note("plist: \(first.map { _ in "decoded" })")
        guard case .success(let plist) = first else { return 0 }
        do {
            let model = try CoreDataModel(archive: KeyedArchive(plist))
            Fuzz.note("model: \(model.entities.map(\.name))")
            checkModel(model)
        } catch {
            Fuzz.note("model: \(error)")
        }
    } else {
        do {
            let model = try CoreDataModel(modelCache: data, maximumInflatedSize: 1 << 20, limits: limits)
            Fuzz.note("model cache: \(model.entities.map(\.name))")
            checkModel(model)
        } catch {
            Fuzz.note("model cache: \(error)")
        }
    }
    return 0
}

#if DECK_LIBFUZZER
    /// libFuzzer's `main` (see ``Fuzz/runLibFuzzer(_:_:_:)``).
    @_cdecl("FuzzModelCache_main")
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
