import CZlib
import DeckCoreData
import Foundation

/// Writes binary property lists (`bplist00`) for tests: whole values, or object by object
/// (containers refer to objects by index, so a test can build shared objects, cycles and
/// malformed lists), with the trailer's sizes chosen or forced.
///
/// Later steps use it to write whole synthetic Core Data stores (metadata, model caches).
package struct PropertyListWriter {
    /// One object of the list.
    package enum Object {
        /// Bytes written as they are (marker included): a scalar, or anything malformed.
        case raw([UInt8])
        /// An array of object indexes.
        case array([Int])
        /// A set of object indexes.
        case set([Int])
        /// A dictionary: key and value object indexes.
        case dictionary(keys: [Int], values: [Int])
    }

    package private(set) var objects: [Object] = []

    /// An empty builder.
    package init() {}

    /// Adds `object` and returns its index.
    @discardableResult
    package mutating func append(_ object: Object) -> Int {
        objects.append(object)
        return objects.count - 1
    }

    /// Replaces object `index` (to make cycles: append a placeholder, then point at it).
    package mutating func replace(_ index: Int, with object: Object) { objects[index] = object }

    /// Adds `value` (containers' elements first, each as an object of its own; dictionary keys
    /// sorted) and returns its index.
    @discardableResult
    package mutating func add(_ value: PropertyListValue) -> Int {
        switch value {
        case .array(let elements): return append(.array(elements.map { add($0) }))
        case .set(let elements): return append(.set(elements.map { add($0) }))
        case .dictionary(let dictionary):
            let keys = dictionary.keys.sorted()
            let keyIndexes = keys.map { add(.string($0)) }
            let valueIndexes = keys.map { add(dictionary[$0] ?? .null) }
            return append(.dictionary(keys: keyIndexes, values: valueIndexes))
        default: return append(.raw(Self.scalar(value)))
        }
    }

    /// The whole list with `value` as its top object.
    package static func encode(_ value: PropertyListValue) -> Data {
        var writer = PropertyListWriter()
        let top = writer.add(value)
        return writer.data(top: top)
    }

    /// The list's bytes. Sizes default to the smallest that fit; forcing them writes a list
    /// whose trailer says so (for bad-trailer tests a size of 0 or 9 is written as given, and
    /// references and offsets are then written with 8 bytes).
    package func data(top: Int, referenceSize: Int? = nil, offsetSize: Int? = nil) -> Data {
        let refSize = referenceSize ?? Self.bytesNeeded(UInt64(objects.count))
        let writtenRefSize = (1...8).contains(refSize) ? refSize : 8
        var out = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(out.count)
            switch object {
            case .raw(let bytes): out += bytes
            case .array(let refs):
                out += Self.header(0xA0, count: refs.count)
                for ref in refs { out += Self.bigEndian(UInt64(ref), size: writtenRefSize) }
            case .set(let refs):
                out += Self.header(0xC0, count: refs.count)
                for ref in refs { out += Self.bigEndian(UInt64(ref), size: writtenRefSize) }
            case .dictionary(let keys, let values):
                out += Self.header(0xD0, count: keys.count)
                for ref in keys + values { out += Self.bigEndian(UInt64(ref), size: writtenRefSize) }
            }
        }
        let tableOffset = out.count
        let offSize = offsetSize ?? Self.bytesNeeded(UInt64(tableOffset))
        let writtenOffSize = (1...8).contains(offSize) ? offSize : 8
        for offset in offsets { out += Self.bigEndian(UInt64(offset), size: writtenOffSize) }
        out += [0, 0, 0, 0, 0, 0, UInt8(offSize), UInt8(refSize)]
        out += Self.bigEndian(UInt64(objects.count), size: 8)
        out += Self.bigEndian(UInt64(top), size: 8)
        out += Self.bigEndian(UInt64(tableOffset), size: 8)
        return Data(out)
    }

    /// The bytes of a scalar value (not a container).
    package static func scalar(_ value: PropertyListValue) -> [UInt8] {
        switch value {
        case .null: return [0x00]
        case .bool(let flag): return [flag ? 0x09 : 0x08]
        case .integer(let number): return integer(number)
        case .real(let number): return [0x23] + bigEndian(number.bitPattern, size: 8)
        case .date(let date):
            return [0x33] + bigEndian(date.timeIntervalSinceReferenceDate.bitPattern, size: 8)
        case .data(let bytes): return header(0x40, count: bytes.count) + [UInt8](bytes)
        case .string(let text):
            if text.utf8.allSatisfy({ $0 < 0x80 }) {
                return header(0x50, count: text.utf8.count) + Array(text.utf8)
            }
            let units = Array(text.utf16)
            return header(0x60, count: units.count) + units.flatMap { bigEndian(UInt64($0), size: 2) }
        case .uid(let uid):
            let size = bytesNeeded(uid)
            return [0x80 | UInt8(size - 1)] + bigEndian(uid, size: size)
        case .array, .set, .dictionary: return []
        }
    }

    /// An integer object: 1, 2 or 4 unsigned bytes when it fits, else 8 signed ones.
    package static func integer(_ number: Int64) -> [UInt8] {
        switch number {
        case 0..<0x100: [0x10] + bigEndian(UInt64(number), size: 1)
        case 0..<0x1_0000: [0x11] + bigEndian(UInt64(number), size: 2)
        case 0..<0x1_0000_0000: [0x12] + bigEndian(UInt64(number), size: 4)
        default: [0x13] + bigEndian(UInt64(bitPattern: number), size: 8)
        }
    }

    /// A marker with its count: in the low nibble below 15, else 0xF and an integer object.
    package static func header(_ marker: UInt8, count: Int) -> [UInt8] {
        count < 15 ? [marker | UInt8(count)] : [marker | 0x0F] + integer(Int64(count))
    }

    package static func bytesNeeded(_ value: UInt64) -> Int {
        switch value {
        case 0..<0x100: 1
        case 0..<0x1_0000: 2
        case 0..<0x1_0000_0000: 4
        default: 8
        }
    }

    package static func bigEndian(_ value: UInt64, size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(size - 1 - $0))) }
    }
}

/// Raw DEFLATE through zlib, for writing model caches and bombs in tests.
package enum TestDeflate {
    package static func deflate(_ data: Data) -> Data {
        var stream = z_stream()
        guard deck_deflate_init_raw(&stream) == Z_OK else { return Data() }
        defer { deflateEnd(&stream) }
        var input = [UInt8](data)
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(input.count))) + 64)
        let count = input.count
        let produced = input.withUnsafeMutableBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { outputBuffer -> Int in
                stream.next_in = inputBuffer.baseAddress
                stream.avail_in = UInt32(count)
                stream.next_out = outputBuffer.baseAddress
                stream.avail_out = UInt32(outputBuffer.count)
                guard CZlib.deflate(&stream, Z_FINISH) == Z_STREAM_END else { return 0 }
                return outputBuffer.count - Int(stream.avail_out)
            }
        }
        return Data(output[0..<produced])
    }
}
