import Foundation

/// A value of a property list, as Apple's binary property lists (`bplist00`) hold it.
///
/// Containers hold their elements by value: an object the file shares between containers is
/// decoded once per place it appears (within ``BinaryPropertyList/Limits/maximumValues``).
public indirect enum PropertyListValue: Sendable, Hashable {
    /// The null object (`0x00`), which `NSKeyedArchiver` never writes but the format has.
    case null
    /// A boolean.
    case bool(Bool)
    /// An integer (1, 2, 4 and 8-byte integers; a 16-byte one when it fits in 64 bits).
    case integer(Int64)
    /// A 4 or 8-byte IEEE 754 number.
    case real(Double)
    /// A date (stored as seconds since 2001-01-01 00:00:00 UTC).
    case date(Date)
    /// Bytes.
    case data(Data)
    /// Text (stored as ASCII or UTF-16).
    case string(String)
    /// An `NSKeyedArchiver` object reference: an index into `$objects`.
    case uid(UInt64)
    /// An ordered list.
    case array([PropertyListValue])
    /// A set, in the file's order.
    case set([PropertyListValue])
    /// A dictionary with string keys.
    case dictionary([String: PropertyListValue])

    /// The text, or nil for any other kind.
    public var string: String? { if case .string(let v) = self { v } else { nil } }
    /// The integer, or nil for any other kind.
    public var integer: Int64? { if case .integer(let v) = self { v } else { nil } }
    /// The boolean, or nil for any other kind.
    public var bool: Bool? { if case .bool(let v) = self { v } else { nil } }
    /// The bytes, or nil for any other kind.
    public var data: Data? { if case .data(let v) = self { v } else { nil } }
    /// The UID, or nil for any other kind.
    public var uid: UInt64? { if case .uid(let v) = self { v } else { nil } }
    /// The dictionary, or nil for any other kind.
    public var dictionary: [String: PropertyListValue]? {
        if case .dictionary(let v) = self { v } else { nil }
    }
    /// The elements of an array or a set, or nil for any other kind.
    public var elements: [PropertyListValue]? {
        switch self {
        case .array(let v), .set(let v): v
        default: nil
        }
    }
}

/// A decoder of Apple's binary property lists (`bplist00`), for input from anyone.
///
/// Every offset, count and size is checked against the data and the trailer before it is used;
/// the object count, the nesting depth, the number of decoded values and the input size have
/// limits; a container that contains itself is an error, not a hang. Errors are
/// ``CoreDataError`` values that say what is wrong and at which byte offset.
public struct BinaryPropertyList: Sendable {
    /// Bounds on what one property list may make the decoder do.
    public struct Limits: Sendable, Equatable {
        /// The largest input, in bytes.
        public var maximumSize: Int
        /// The most objects the trailer may declare.
        public var maximumObjects: Int
        /// The deepest nesting of containers. Each level is a few stack frames of the decoder:
        /// keep it in the hundreds.
        public var maximumDepth: Int
        /// The most values decoded in all (shared objects count once per place they appear).
        public var maximumValues: Int

        /// Limits for Core Data's metadata and model caches: 64 MiB, a million objects,
        /// 256 levels, four million values.
        public static let standard = Limits(
            maximumSize: 64 << 20, maximumObjects: 1 << 20, maximumDepth: 256, maximumValues: 4 << 20)

        /// Limits of your own.
        public init(maximumSize: Int, maximumObjects: Int, maximumDepth: Int, maximumValues: Int) {
            self.maximumSize = maximumSize
            self.maximumObjects = maximumObjects
            self.maximumDepth = maximumDepth
            self.maximumValues = maximumValues
        }
    }

    /// Decodes the top object of `data`.
    ///
    /// - Throws: ``CoreDataError`` (`badMagic`, `truncated`, `badTrailer`, `offsetOutOfRange`,
    ///   `countOutOfRange`, `badObjectReference`, `unknownMarker`, `badString`,
    ///   `integerOutOfRange`, `badDictionaryKey`, `referenceCycle`, `nestingTooDeep`,
    ///   `tooManyObjects`, `tooLarge`).
    public static func decode(_ data: Data, limits: Limits = .standard) throws(CoreDataError)
        -> PropertyListValue
    {
        var reader = try Reader(bytes: [UInt8](data), limits: limits)
        return try reader.decodeTop()
    }

    /// Whether `data` starts with the binary property list magic, `bplist00`.
    public static func hasMagic(_ data: Data) -> Bool { data.starts(with: Array("bplist00".utf8)) }
}

/// The decoding state: the bytes, the trailer's fields, and the path of containers being decoded.
private struct Reader {
    let bytes: [UInt8]
    let limits: BinaryPropertyList.Limits
    let offsetSize: Int
    let referenceSize: Int
    let objectCount: Int
    let topObject: Int
    let tableOffset: Int
    var onPath: Set<Int> = []
    var valuesDecoded = 0

    static let headerSize = 8
    static let trailerSize = 32

    init(bytes: [UInt8], limits: BinaryPropertyList.Limits) throws(CoreDataError) {
        self.bytes = bytes
        self.limits = limits
        guard bytes.count <= limits.maximumSize else {
            throw CoreDataError(
                .tooLarge, "property list of \(bytes.count) bytes is over the limit of \(limits.maximumSize)")
        }
        guard bytes.count >= Self.headerSize, bytes[0..<6].elementsEqual("bplist".utf8) else {
            throw CoreDataError(
                .badMagic, "not a binary property list: it does not start with 'bplist00'", offset: 0)
        }
        guard bytes[6..<8].elementsEqual("00".utf8) else {
            throw CoreDataError(
                .badMagic,
                "binary property list version '\(String(decoding: bytes[6..<8], as: UTF8.self))' "
                    + "is not 00, the only one this reader knows", offset: 6)
        }
        guard bytes.count >= Self.headerSize + Self.trailerSize else {
            throw CoreDataError(
                .truncated,
                "binary property list of \(bytes.count) bytes is shorter than its header and trailer (40)",
                offset: bytes.count)
        }
        let trailer = bytes.count - Self.trailerSize
        offsetSize = Int(bytes[trailer + 6])
        referenceSize = Int(bytes[trailer + 7])
        guard (1...8).contains(offsetSize) else {
            throw CoreDataError(
                .badTrailer, "trailer's offset size \(offsetSize) is not 1 to 8", offset: trailer + 6)
        }
        guard (1...8).contains(referenceSize) else {
            throw CoreDataError(
                .badTrailer, "trailer's object reference size \(referenceSize) is not 1 to 8",
                offset: trailer + 7)
        }
        let count = Self.bigEndian(bytes, at: trailer + 8, size: 8)
        let top = Self.bigEndian(bytes, at: trailer + 16, size: 8)
        let table = Self.bigEndian(bytes, at: trailer + 24, size: 8)
        guard count >= 1, count <= UInt64(limits.maximumObjects) else {
            throw CoreDataError(
                count == 0 ? .badTrailer : .tooManyObjects,
                "trailer declares \(count) objects; a property list has 1 to \(limits.maximumObjects)",
                offset: trailer + 8)
        }
        objectCount = Int(count)
        guard top < count else {
            throw CoreDataError(
                .badObjectReference, "top object \(top) is not one of the \(count) objects",
                offset: trailer + 16)
        }
        topObject = Int(top)
        // The offset table lies between the header and the trailer and holds one entry per object.
        let tableSize = objectCount * offsetSize
        guard table >= UInt64(Self.headerSize), table <= UInt64(trailer), Int(table) + tableSize <= trailer
        else {
            throw CoreDataError(
                .badTrailer,
                "offset table at \(table) with \(objectCount) entries of \(offsetSize) bytes does not fit "
                    + "between the header and the trailer (bytes 8 to \(trailer))", offset: trailer + 24)
        }
        tableOffset = Int(table)
    }

    static func bigEndian(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in offset..<(offset + size) { value = value << 8 | UInt64(bytes[index]) }
        return value
    }

    /// The offset of object `index` (already checked to be below `objectCount`).
    func objectOffset(_ index: Int) throws(CoreDataError) -> Int {
        let entry = tableOffset + index * offsetSize
        let offset = Self.bigEndian(bytes, at: entry, size: offsetSize)
        guard offset >= UInt64(Self.headerSize), offset < UInt64(tableOffset) else {
            throw CoreDataError(
                .offsetOutOfRange,
                "object \(index)'s offset \(offset) is outside the object area (bytes 8 to \(tableOffset))",
                offset: entry)
        }
        return Int(offset)
    }

    /// Reads an object reference at `offset` and checks it names an object.
    func reference(at offset: Int) throws(CoreDataError) -> Int {
        let value = Self.bigEndian(bytes, at: offset, size: referenceSize)
        guard value < UInt64(objectCount) else {
            throw CoreDataError(
                .badObjectReference, "object reference \(value) is not one of the \(objectCount) objects",
                offset: offset)
        }
        return Int(value)
    }

    /// Checks that `length` bytes from `offset` lie in the object area.
    func require(_ length: Int, at offset: Int, for what: String) throws(CoreDataError) {
        guard length >= 0, offset <= tableOffset, length <= tableOffset - offset else {
            throw CoreDataError(
                .countOutOfRange,
                "\(what) of \(length) bytes at \(offset) runs past the object area (which ends at \(tableOffset))",
                offset: offset)
        }
    }

    mutating func decodeTop() throws(CoreDataError) -> PropertyListValue {
        try decodeObject(topObject, depth: 0)
    }

    /// The count of the object at `offset` with marker low nibble `nibble`, and where its body starts.
    func count(nibble: UInt8, at offset: Int) throws(CoreDataError) -> (count: Int, body: Int) {
        if nibble != 0x0F { return (Int(nibble), offset + 1) }
        let intOffset = offset + 1
        try require(1, at: intOffset, for: "count")
        let marker = bytes[intOffset]
        guard marker >> 4 == 0x1, marker & 0x0F <= 3 else {
            throw CoreDataError(
                .countOutOfRange,
                String(format: "a count's marker 0x%02X is not a 1 to 8-byte integer", marker),
                offset: intOffset)
        }
        let size = 1 << Int(marker & 0x0F)
        try require(size, at: intOffset + 1, for: "count")
        let value = Self.bigEndian(bytes, at: intOffset + 1, size: size)
        // Every element or character takes at least one byte, so a count beyond the data is a lie.
        guard value <= UInt64(tableOffset) else {
            throw CoreDataError(
                .countOutOfRange,
                "count \(value) is larger than the whole object area (\(tableOffset) bytes)",
                offset: intOffset)
        }
        return (Int(value), intOffset + 1 + size)
    }

    mutating func decodeObject(_ index: Int, depth: Int) throws(CoreDataError) -> PropertyListValue {
        valuesDecoded += 1
        guard valuesDecoded <= limits.maximumValues else {
            throw CoreDataError(
                .tooManyObjects,
                "property list decodes to more than \(limits.maximumValues) values (objects shared too often)"
            )
        }
        let offset = try objectOffset(index)
        let marker = bytes[offset]
        let nibble = marker & 0x0F
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x00: return .null
            case 0x08: return .bool(false)
            case 0x09: return .bool(true)
            default: throw unknown(marker, at: offset)
            }
        case 0x1:
            return .integer(try integer(nibble: nibble, at: offset))
        case 0x2:
            guard nibble == 2 || nibble == 3 else { throw unknown(marker, at: offset) }
            let size = 1 << Int(nibble)
            try require(size, at: offset + 1, for: "real")
            let raw = Self.bigEndian(bytes, at: offset + 1, size: size)
            return .real(size == 4 ? Double(Float(bitPattern: UInt32(raw))) : Double(bitPattern: raw))
        case 0x3:
            guard marker == 0x33 else { throw unknown(marker, at: offset) }
            try require(8, at: offset + 1, for: "date")
            let seconds = Double(bitPattern: Self.bigEndian(bytes, at: offset + 1, size: 8))
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case 0x4:
            let (length, body) = try count(nibble: nibble, at: offset)
            try require(length, at: body, for: "data")
            return .data(Data(bytes[body..<(body + length)]))
        case 0x5:
            let (length, body) = try count(nibble: nibble, at: offset)
            try require(length, at: body, for: "ASCII string")
            let text = bytes[body..<(body + length)]
            if let bad = text.firstIndex(where: { $0 >= 0x80 }) {
                throw CoreDataError(.badString, "ASCII string has a byte over 0x7F", offset: bad)
            }
            return .string(String(decoding: text, as: UTF8.self))
        case 0x6:
            let (characters, body) = try count(nibble: nibble, at: offset)
            let (length, overflow) = characters.multipliedReportingOverflow(by: 2)
            guard !overflow else {
                throw CoreDataError(.countOutOfRange, "UTF-16 string is too long", offset: offset)
            }
            try require(length, at: body, for: "UTF-16 string")
            var units: [UInt16] = []
            units.reserveCapacity(characters)
            for unit in 0..<characters {
                units.append(UInt16(bytes[body + 2 * unit]) << 8 | UInt16(bytes[body + 2 * unit + 1]))
            }
            guard let text = String(validating: units, as: UTF16.self) else {
                throw CoreDataError(
                    .badString, "UTF-16 string is not valid UTF-16 (an unpaired surrogate)", offset: body)
            }
            return .string(text)
        case 0x8:
            let size = Int(nibble) + 1
            guard size <= 8 else {
                throw CoreDataError(.integerOutOfRange, "UID of \(size) bytes", offset: offset)
            }
            try require(size, at: offset + 1, for: "UID")
            return .uid(Self.bigEndian(bytes, at: offset + 1, size: size))
        case 0xA, 0xC:
            let (count, body) = try count(nibble: nibble, at: offset)
            let references = try containerReferences(
                count: count, at: body, for: marker >> 4 == 0xA ? "array" : "set")
            let elements = try decodeContainer(index, references, depth: depth, at: offset)
            return marker >> 4 == 0xA ? .array(elements) : .set(elements)
        case 0xD:
            let (count, body) = try count(nibble: nibble, at: offset)
            let (doubled, overflow) = count.multipliedReportingOverflow(by: 2)
            guard !overflow else {
                throw CoreDataError(.countOutOfRange, "dictionary is too large", offset: offset)
            }
            let references = try containerReferences(count: doubled, at: body, for: "dictionary")
            let all = try decodeContainer(index, references, depth: depth, at: offset)
            var dictionary: [String: PropertyListValue] = [:]
            dictionary.reserveCapacity(count)
            for entry in 0..<count {
                guard case .string(let key) = all[entry] else {
                    throw CoreDataError(
                        .badDictionaryKey, "dictionary key \(entry) is not a string",
                        offset: body + entry * referenceSize)
                }
                guard dictionary.updateValue(all[count + entry], forKey: key) == nil else {
                    throw CoreDataError(
                        .badDictionaryKey, "dictionary has the key '\(key)' twice", offset: offset)
                }
            }
            return .dictionary(dictionary)
        default:
            throw unknown(marker, at: offset)
        }
    }

    func unknown(_ marker: UInt8, at offset: Int) -> CoreDataError {
        CoreDataError(.unknownMarker, String(format: "unknown object marker 0x%02X", marker), offset: offset)
    }

    func integer(nibble: UInt8, at offset: Int) throws(CoreDataError) -> Int64 {
        guard nibble <= 4 else { throw unknown(0x10 | nibble, at: offset) }
        let size = 1 << Int(nibble)
        try require(size, at: offset + 1, for: "integer")
        if size == 16 {
            // Apple writes 16 bytes for values beyond Int64's range; accept those that fit.
            let high = Self.bigEndian(bytes, at: offset + 1, size: 8)
            let low = Int64(bitPattern: Self.bigEndian(bytes, at: offset + 9, size: 8))
            guard (high == 0 && low >= 0) || (high == UInt64.max && low < 0) else {
                throw CoreDataError(
                    .integerOutOfRange, "16-byte integer outside the 64-bit range", offset: offset)
            }
            return low
        }
        let raw = Self.bigEndian(bytes, at: offset + 1, size: size)
        // 1, 2 and 4-byte integers are unsigned; 8-byte ones are signed.
        return size == 8 ? Int64(bitPattern: raw) : Int64(raw)
    }

    func containerReferences(count: Int, at body: Int, for what: String) throws(CoreDataError) -> [Int] {
        let (length, overflow) = count.multipliedReportingOverflow(by: referenceSize)
        guard !overflow else {
            throw CoreDataError(.countOutOfRange, "\(what) of \(count) elements", offset: body)
        }
        try require(length, at: body, for: "\(what) of \(count) elements")
        var references: [Int] = []
        references.reserveCapacity(count)
        for element in 0..<count { references.append(try reference(at: body + element * referenceSize)) }
        return references
    }

    mutating func decodeContainer(
        _ index: Int, _ references: [Int], depth: Int, at offset: Int
    ) throws(CoreDataError) -> [PropertyListValue] {
        guard depth < limits.maximumDepth else {
            throw CoreDataError(
                .nestingTooDeep, "containers nest deeper than \(limits.maximumDepth) levels", offset: offset)
        }
        guard onPath.insert(index).inserted else {
            throw CoreDataError(.referenceCycle, "object \(index) contains itself", offset: offset)
        }
        defer { onPath.remove(index) }
        var elements: [PropertyListValue] = []
        elements.reserveCapacity(references.count)
        for reference in references {
            if onPath.contains(reference) {
                throw CoreDataError(
                    .referenceCycle, "object \(index) contains object \(reference), which contains it",
                    offset: offset)
            }
            elements.append(try decodeObject(reference, depth: depth + 1))
        }
        return elements
    }
}
