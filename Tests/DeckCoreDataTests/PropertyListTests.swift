import DeckCoreData
import DeckCoreDataTestSupport
import DeckTestTiming
import Foundation
import Testing

/// Expects `body` to throw a ``CoreDataError`` of `kind`, and returns it.
@discardableResult
func expectCoreDataError<T>(
    _ kind: CoreDataError.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T
) -> CoreDataError? {
    do {
        _ = try body()
        Issue.record("expected a \(kind) error, got success", sourceLocation: sourceLocation)
    } catch let error as CoreDataError {
        #expect(error.kind == kind, "\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected a CoreDataError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

@Suite("Binary property lists", .timed)
struct PropertyListTests {
    static let everyKind: PropertyListValue = .dictionary([
        "null": .null, "true": .bool(true), "false": .bool(false),
        "small": .integer(7), "byte": .integer(200), "short": .integer(40_000),
        "int": .integer(3_000_000_000),
        "negative": .integer(-5), "minimum": .integer(.min), "maximum": .integer(.max),
        "real": .real(3.25), "negativeReal": .real(-0.5e-300),
        "date": .date(Date(timeIntervalSinceReferenceDate: 123_456_789.5)),
        "data": .data(Data([0, 1, 2, 255])), "longData": .data(Data(repeating: 7, count: 300)),
        "ascii": .string("hexColor"), "longASCII": .string(String(repeating: "x", count: 70_000)),
        "utf16": .string("Grüße, 世界 🎴"), "empty": .string(""),
        "uid": .uid(5), "bigUID": .uid(70_000),
        "array": .array([.integer(1), .string("two"), .array([])]),
        "set": .set([.string("a"), .string("b")]),
        "nested": .dictionary(["inner": .dictionary(["deepest": .bool(true)])]),
    ])

    @Test func everyObjectKindRoundTrips() throws {
        let data = PropertyListWriter.encode(Self.everyKind)
        #expect(try BinaryPropertyList.decode(data) == Self.everyKind)
    }

    @Test func forcedWideSizesStillDecode() throws {
        var writer = PropertyListWriter()
        let top = writer.add(Self.everyKind)
        #expect(
            try BinaryPropertyList.decode(writer.data(top: top, referenceSize: 8, offsetSize: 8))
                == Self.everyKind)
    }

    @Test func floatsAndSixteenByteIntegers() throws {
        var writer = PropertyListWriter()
        let float = writer.append(
            .raw([0x22] + PropertyListWriter.bigEndian(UInt64(Float(1.5).bitPattern), size: 4)))
        let wide = writer.append(
            .raw([0x14] + [UInt8](repeating: 0, count: 8) + PropertyListWriter.bigEndian(9, size: 8)))
        let top = writer.append(.array([float, wide]))
        #expect(try BinaryPropertyList.decode(writer.data(top: top)) == .array([.real(1.5), .integer(9)]))
        var huge = PropertyListWriter()
        huge.append(
            .raw([0x14] + PropertyListWriter.bigEndian(1, size: 8) + PropertyListWriter.bigEndian(0, size: 8))
        )
        expectCoreDataError(.integerOutOfRange) { try BinaryPropertyList.decode(huge.data(top: 0)) }
    }

    @Test func sharedObjectsDecodeInEveryPlace() throws {
        var writer = PropertyListWriter()
        let shared = writer.add(.string("shared"))
        let top = writer.append(.array([shared, shared, shared]))
        #expect(
            try BinaryPropertyList.decode(writer.data(top: top))
                == .array(Array(repeating: .string("shared"), count: 3)))
    }

    // MARK: Hostile input

    static let small = PropertyListWriter.encode(.dictionary(["key": .array([.integer(1), .string("two")])]))

    @Test func everyTruncationIsAnError() {
        for length in 0..<Self.small.count {
            #expect(throws: CoreDataError.self, "\(length) bytes") {
                try BinaryPropertyList.decode(Self.small.prefix(length))
            }
        }
        expectCoreDataError(.truncated) {
            try BinaryPropertyList.decode(Data("bplist00".utf8) + Data(count: 20))
        }
    }

    @Test func badMagic() {
        for magic in ["bplist01", "xplist00", "<?xml ve", "bpl"] {
            var data = Self.small
            data.replaceSubrange(0..<8, with: Data(magic.utf8))
            expectCoreDataError(.badMagic) { try BinaryPropertyList.decode(data) }
        }
        expectCoreDataError(.badMagic) { try BinaryPropertyList.decode(Data()) }
    }

    /// `small` with trailer byte `index` (0 to 31) set to `value`.
    static func patchedTrailer(_ data: Data, at index: Int, _ bytes: [UInt8]) -> Data {
        var copy = [UInt8](data)
        let start = copy.count - 32 + index
        copy.replaceSubrange(start..<(start + bytes.count), with: bytes)
        return Data(copy)
    }

    @Test(arguments: [0, 9, 255])
    func offsetAndReferenceSizesOutsideOneToEight(size: Int) {
        let badOffset = Self.patchedTrailer(Self.small, at: 6, [UInt8(size)])
        expectCoreDataError(.badTrailer) { try BinaryPropertyList.decode(badOffset) }
        let badReference = Self.patchedTrailer(Self.small, at: 7, [UInt8(size)])
        expectCoreDataError(.badTrailer) { try BinaryPropertyList.decode(badReference) }
        var writer = PropertyListWriter()
        writer.add(.array([.integer(1)]))
        expectCoreDataError(.badTrailer) {
            try BinaryPropertyList.decode(writer.data(top: 1, offsetSize: size))
        }
    }

    @Test func trailerCountsAndOffsetsOutOfRange() {
        let hugeCount = Self.patchedTrailer(Self.small, at: 8, PropertyListWriter.bigEndian(1 << 60, size: 8))
        expectCoreDataError(.tooManyObjects) { try BinaryPropertyList.decode(hugeCount) }
        let zeroCount = Self.patchedTrailer(Self.small, at: 8, PropertyListWriter.bigEndian(0, size: 8))
        expectCoreDataError(.badTrailer) { try BinaryPropertyList.decode(zeroCount) }
        let badTop = Self.patchedTrailer(Self.small, at: 16, PropertyListWriter.bigEndian(1 << 40, size: 8))
        expectCoreDataError(.badObjectReference) { try BinaryPropertyList.decode(badTop) }
        for table: UInt64 in [0, 3, UInt64(Self.small.count), 1 << 62, .max] {
            let badTable = Self.patchedTrailer(
                Self.small, at: 24, PropertyListWriter.bigEndian(table, size: 8))
            expectCoreDataError(.badTrailer) { try BinaryPropertyList.decode(badTable) }
        }
        // More objects than the limit allows, though the file declares them honestly.
        var writer = PropertyListWriter()
        let elements = (0..<100).map { writer.add(.integer(Int64($0))) }
        let top = writer.append(.array(elements))
        let limits = BinaryPropertyList.Limits(
            maximumSize: 1 << 20, maximumObjects: 50, maximumDepth: 8, maximumValues: 1000)
        expectCoreDataError(.tooManyObjects) {
            try BinaryPropertyList.decode(writer.data(top: top), limits: limits)
        }
        let tooBig = BinaryPropertyList.Limits(
            maximumSize: 100, maximumObjects: 50, maximumDepth: 8, maximumValues: 1000)
        expectCoreDataError(.tooLarge) {
            try BinaryPropertyList.decode(writer.data(top: top), limits: tooBig)
        }
    }

    @Test func objectOffsetIntoTheTrailerOrTable() throws {
        var writer = PropertyListWriter()
        writer.add(.array([.integer(1)]))
        let data = [UInt8](writer.data(top: 1, offsetSize: 1))
        let table = data.count - 32 - 2  // two objects, one byte each
        for target in [0, 7, table, data.count - 1] {
            var bad = data
            bad[table] = UInt8(target)
            let error = expectCoreDataError(.offsetOutOfRange) { try BinaryPropertyList.decode(Data(bad)) }
            #expect(error?.offset == table)
        }
    }

    @Test func countsBeyondTheData() {
        // Data claiming 14 bytes with 2 present; an array claiming 2^60 elements; a string of
        // 2^60 UTF-16 characters; an element reference to an object that does not exist.
        let cases: [([UInt8], CoreDataError.Kind)] = [
            ([0x4E, 1, 2], .countOutOfRange),
            ([0xAF, 0x13] + PropertyListWriter.bigEndian(1 << 60, size: 8), .countOutOfRange),
            ([0x6F, 0x13] + PropertyListWriter.bigEndian(1 << 60, size: 8), .countOutOfRange),
            ([0xDF, 0x13] + PropertyListWriter.bigEndian(UInt64(Int64.max), size: 8), .countOutOfRange),
            ([0x5F, 0x23, 0, 0, 0, 0, 0, 0, 0, 0], .countOutOfRange),
            ([0xA1, 0x05], .badObjectReference),
            ([0x13, 1, 2], .countOutOfRange),
            ([0x70], .unknownMarker), ([0x0C], .unknownMarker), ([0x15], .unknownMarker),
            ([0x34], .unknownMarker),
            ([0x52, 0x41, 0xFF], .badString),
            ([0x61, 0xD8, 0x00], .badString),
        ]
        for (bytes, kind) in cases {
            var writer = PropertyListWriter()
            writer.append(.raw(bytes))
            expectCoreDataError(kind) { try BinaryPropertyList.decode(writer.data(top: 0)) }
        }
    }

    @Test func containersThatContainThemselves() {
        var direct = PropertyListWriter()
        direct.append(.array([0]))
        let error = expectCoreDataError(.referenceCycle) {
            try BinaryPropertyList.decode(direct.data(top: 0))
        }
        #expect(error?.offset == 8)
        var mutual = PropertyListWriter()
        mutual.append(.array([1]))
        mutual.append(.dictionary(keys: [2], values: [0]))
        mutual.append(.raw(PropertyListWriter.scalar(.string("back"))))
        expectCoreDataError(.referenceCycle) { try BinaryPropertyList.decode(mutual.data(top: 0)) }
        var inSet = PropertyListWriter()
        inSet.append(.set([1]))
        inSet.append(.array([1]))
        expectCoreDataError(.referenceCycle) { try BinaryPropertyList.decode(inSet.data(top: 0)) }
    }

    @Test func tenThousandLevelsDeep() {
        var writer = PropertyListWriter()
        for level in 0..<10_000 { writer.append(.array([level + 1])) }
        writer.add(.integer(1))
        expectCoreDataError(.nestingTooDeep) { try BinaryPropertyList.decode(writer.data(top: 0)) }
    }

    @Test func sharedObjectsCannotMultiplyWithoutLimit() {
        // 64 levels, each an array holding the next level twice: 2^64 values if expanded.
        var writer = PropertyListWriter()
        for level in 0..<64 { writer.append(.array([level + 1, level + 1])) }
        writer.add(.string("leaf"))
        let limits = BinaryPropertyList.Limits(
            maximumSize: 1 << 20, maximumObjects: 1000, maximumDepth: 100, maximumValues: 100_000)
        expectCoreDataError(.tooManyObjects) {
            try BinaryPropertyList.decode(writer.data(top: 0), limits: limits)
        }
    }

    @Test func dictionaryKeysMustBeDistinctStrings() {
        var numberKey = PropertyListWriter()
        numberKey.append(.dictionary(keys: [1], values: [1]))
        numberKey.add(.integer(3))
        expectCoreDataError(.badDictionaryKey) { try BinaryPropertyList.decode(numberKey.data(top: 0)) }
        var twice = PropertyListWriter()
        twice.append(.dictionary(keys: [1, 1], values: [2, 2]))
        twice.add(.string("key"))
        twice.add(.bool(true))
        expectCoreDataError(.badDictionaryKey) { try BinaryPropertyList.decode(twice.data(top: 0)) }
    }
}

@Suite("Raw DEFLATE", .timed)
struct RawDeflateTests {
    @Test func roundTrip() throws {
        let text = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 / 7) })
        #expect(try RawDeflate.inflate(TestDeflate.deflate(text)) == text)
        #expect(try RawDeflate.inflate(TestDeflate.deflate(Data())) == Data())
    }

    @Test func aBombIsRefusedAtTheCap() {
        let bomb = TestDeflate.deflate(Data(count: 16 << 20))
        #expect(bomb.count < 64 << 10)
        let error = expectCoreDataError(.tooLarge) { try RawDeflate.inflate(bomb, maximumOutput: 1 << 20) }
        #expect(error?.message.contains("bomb") == true)
        expectCoreDataError(.tooLarge) { try RawDeflate.inflate(bomb, maximumOutput: (16 << 20) - 1) }
        #expect((try? RawDeflate.inflate(bomb, maximumOutput: 16 << 20))?.count == 16 << 20)
    }

    @Test func corruptTruncatedAndTrailingBytes() {
        let stream = TestDeflate.deflate(Data(repeating: 0x41, count: 10_000) + Data("end".utf8))
        expectCoreDataError(.badDeflateStream) { try RawDeflate.inflate(stream.prefix(stream.count - 2)) }
        expectCoreDataError(.badDeflateStream) { try RawDeflate.inflate(Data()) }
        expectCoreDataError(.badDeflateStream) { try RawDeflate.inflate(stream + Data([1, 2, 3])) }
        expectCoreDataError(.badDeflateStream) { try RawDeflate.inflate(Data([0xFF, 0xFF, 0xFF, 0xFF])) }
        // A zlib-wrapped stream is not raw DEFLATE.
        expectCoreDataError(.badDeflateStream) {
            try RawDeflate.inflate(Data([0x78, 0x9C, 0x03, 0x00, 0, 0, 0, 1]))
        }
    }
}
