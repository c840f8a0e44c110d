import DeckSupport
import Foundation

/// A zip file's central directory, checked byte for byte against its local headers.
///
/// libarchive's seekable zip reader (the one Deck uses) lists the entries of the central
/// directory; a streaming reader (`unzip -` , `bsdtar` on a pipe, many others) lists the local
/// headers instead. A zip in which the two disagree shows different files to different readers,
/// so it is refused (spec: "Zip structure"). The rules:
///
/// - the end-of-central-directory record ends the file (after its comment), there is one disk,
///   and a Zip64 end record and locator, when present, sit right before it;
/// - the central directory ends where the end record starts, holds exactly the number of records
///   the end record gives and nothing else;
/// - the entries' local headers follow each other with no gap and no overlap, the first at
///   offset 0 and the last one's data (and data descriptor) ending where the central directory
///   starts, in central-directory order;
/// - each local header has the central directory's name (byte for byte), method, encryption and
///   data-descriptor flags, and, unless sizes follow the data, its CRC-32 and sizes; a data
///   descriptor, when used, repeats the central directory's CRC-32 and sizes.
package struct ZipDirectory {
    package struct Entry {
        /// The name as stored (bytes, not converted).
        package let name: [UInt8]
        package let flags: UInt16
        package let method: UInt16
        package let crc: UInt32
        package let compressedSize: UInt64
        package let uncompressedSize: UInt64
        package let offset: UInt64

        package var isEncrypted: Bool { flags & 1 != 0 }
        package var hasDataDescriptor: Bool { flags & 8 != 0 }
        package var displayName: String { String(decoding: name, as: UTF8.self) }
    }

    package let entries: [Entry]

    private struct Bytes {
        package let bytes: [UInt8]
        package func u16(_ at: Int) -> UInt64 { UInt64(bytes[at]) | UInt64(bytes[at + 1]) << 8 }
        package func u32(_ at: Int) -> UInt64 { u16(at) | u16(at + 2) << 16 }
        package func u64(_ at: Int) -> UInt64 { u32(at) | u32(at + 4) << 32 }
    }

    private static let endSignature: [UInt8] = [0x50, 0x4B, 0x05, 0x06]
    private static let zip64EndSignature: UInt64 = 0x0606_4B50
    private static let zip64LocatorSignature: UInt64 = 0x0706_4B50
    private static let centralSignature: UInt64 = 0x0201_4B50
    private static let localSignature: UInt64 = 0x0403_4B50
    private static let descriptorSignature: UInt64 = 0x0807_4B50

    /// Reads and checks the structure of the zip open at `fd` (`size` bytes); refuses more than
    /// `maxEntries` entries before reading their records.
    package init(fd: Int32, size: Int64, maxEntries: Int, path: String, fileName: String) throws {
        func broken(_ detail: String) -> DeckError {
            .archive(.entryRefused(entry: fileName, reason: .zipStructure(detail)))
        }
        func read(_ offset: UInt64, _ count: Int) throws -> Bytes {
            guard offset <= UInt64(size), UInt64(count) <= UInt64(size) - offset else {
                throw broken("a record at offset \(offset) runs past the end of the file")
            }
            return Bytes(bytes: try ArchiveSystem.read(fd, at: Int64(offset), count: count, path: path))
        }
        guard size >= 22 else {
            throw broken("the file is too short to hold an end-of-central-directory record")
        }

        // The end record: the last one whose comment ends exactly at the end of the file.
        let tailLength = Int(min(size, 22 + 0xFFFF))
        let tail = try read(UInt64(size) - UInt64(tailLength), tailLength)
        var found: Int?
        var candidate = tailLength - 22
        while candidate >= 0 {
            if tail.bytes[candidate..<(candidate + 4)].elementsEqual(Self.endSignature),
                candidate + 22 + Int(tail.u16(candidate + 20)) == tailLength
            {
                found = candidate
                break
            }
            candidate -= 1
        }
        guard let position = found else {
            throw broken("no end-of-central-directory record ends the file")
        }
        let endOffset = UInt64(size) - UInt64(tailLength) + UInt64(position)
        var disk = tail.u16(position + 4)
        var directoryDisk = tail.u16(position + 6)
        var entriesOnDisk = tail.u16(position + 8)
        var count = tail.u16(position + 10)
        var directorySize = tail.u32(position + 12)
        var directoryOffset = tail.u32(position + 16)
        var directoryEnd = endOffset

        // Zip64: a locator right before the end record, pointing at the Zip64 end record right
        // before the locator.
        if endOffset >= 20, try read(endOffset - 20, 4).u32(0) == Self.zip64LocatorSignature {
            let locator = try read(endOffset - 20, 20)
            guard locator.u32(4) == 0, locator.u32(16) == 1 else { throw broken("it spans several disks") }
            let recordOffset = locator.u64(8)
            let record = try read(recordOffset, 56)
            guard record.u32(0) == Self.zip64EndSignature else {
                throw broken("the Zip64 locator does not point at a Zip64 end record")
            }
            guard record.u64(4) >= 44, recordOffset + 12 + record.u64(4) == endOffset - 20 else {
                throw broken("the Zip64 end record does not end where its locator starts")
            }
            disk = record.u32(16)
            directoryDisk = record.u32(20)
            entriesOnDisk = record.u64(24)
            count = record.u64(32)
            directorySize = record.u64(40)
            directoryOffset = record.u64(48)
            directoryEnd = recordOffset
        } else if count == 0xFFFF || entriesOnDisk == 0xFFFF || directorySize == 0xFFFF_FFFF
            || directoryOffset == 0xFFFF_FFFF
        {
            throw broken("the end record asks for Zip64 values but there is no Zip64 end record")
        }
        guard disk == 0, directoryDisk == 0, entriesOnDisk == count else {
            throw broken("it spans several disks")
        }
        guard directoryOffset <= directoryEnd, directoryEnd - directoryOffset == directorySize else {
            throw broken("the central directory does not end where the end record starts")
        }
        guard count <= UInt64(maxEntries) else {
            throw DeckError.archive(.limitExceeded(entry: fileName, limit: .entries(maxEntries)))
        }
        guard count <= directorySize / 46 else {
            throw broken("the central directory is too small for \(count) entries")
        }

        // Record by record: memory follows the entries, not what the end record claims.
        var entries: [Entry] = []
        entries.reserveCapacity(Int(count))
        var at = directoryOffset
        for index in 0..<Int(count) {
            guard directoryEnd - at >= 46 else {
                throw broken("central directory record \(index + 1) of \(count) runs past the directory")
            }
            let fixed = try read(at, 46)
            guard fixed.u32(0) == Self.centralSignature else {
                throw broken("central directory record \(index + 1) of \(count) is malformed")
            }
            let nameLength = Int(fixed.u16(28))
            let extraLength = Int(fixed.u16(30))
            let recordLength = UInt64(46 + nameLength + extraLength) + fixed.u16(32)
            guard recordLength <= directoryEnd - at else {
                throw broken("central directory record \(index + 1) of \(count) runs past the directory")
            }
            let variable = try read(at + 46, nameLength + extraLength)
            let name = Array(variable.bytes[0..<nameLength])
            var compressed = fixed.u32(20)
            var uncompressed = fixed.u32(24)
            var offset = fixed.u32(42)
            var startDisk = fixed.u16(34)
            if let zip64 = Self.zip64Extra(variable, from: nameLength, length: extraLength) {
                // Present in this order, each only when the 32-bit field is saturated.
                var field = 0
                func next() -> UInt64? {
                    guard field + 8 <= zip64.count else { return nil }
                    defer { field += 8 }
                    return Bytes(bytes: Array(zip64[field..<(field + 8)])).u64(0)
                }
                if uncompressed == 0xFFFF_FFFF { uncompressed = next() ?? uncompressed }
                if compressed == 0xFFFF_FFFF { compressed = next() ?? compressed }
                if offset == 0xFFFF_FFFF { offset = next() ?? offset }
                if startDisk == 0xFFFF, field + 4 <= zip64.count {
                    startDisk = Bytes(bytes: Array(zip64[field..<(field + 4)])).u32(0)
                }
            }
            guard startDisk == 0 else { throw broken("it spans several disks") }
            entries.append(
                Entry(
                    name: name, flags: UInt16(fixed.u16(8)), method: UInt16(fixed.u16(10)),
                    crc: UInt32(fixed.u32(16)), compressedSize: compressed, uncompressedSize: uncompressed,
                    offset: offset))
            at += recordLength
        }
        guard at == directoryEnd else {
            throw broken("the central directory holds \(directoryEnd - at) bytes after its \(count) records")
        }

        // The local headers, one after the other.
        var expected: UInt64 = 0
        for entry in entries {
            func disagree(_ detail: String) -> DeckError {
                .archive(.entryRefused(entry: entry.displayName, reason: .zipStructure(detail)))
            }
            guard entry.offset == expected else {
                throw disagree(
                    expected == 0
                        ? "the first entry starts at offset \(entry.offset), not 0"
                        : entry.offset < expected
                            ? "it overlaps the entry before it"
                            : "\(entry.offset - expected) unlisted bytes precede it")
            }
            let header = try read(entry.offset, 30)
            guard header.u32(0) == Self.localSignature else {
                throw disagree("no local header at its offset")
            }
            let nameLength = Int(header.u16(26))
            let extraLength = Int(header.u16(28))
            let variable = try read(entry.offset + 30, nameLength + extraLength)
            guard variable.bytes[0..<nameLength].elementsEqual(entry.name) else {
                throw disagree(
                    "its local header names it '\(String(decoding: variable.bytes[0..<nameLength], as: UTF8.self))'"
                )
            }
            let flags = UInt16(header.u16(6))
            guard flags & 0x9 == entry.flags & 0x9 else {
                throw disagree("its local header has other encryption or data-descriptor flags")
            }
            guard header.u16(8) == UInt64(entry.method) else {
                throw disagree("its local header gives another compression method")
            }
            if entry.isEncrypted {
                throw DeckError.archive(.entryRefused(entry: entry.displayName, reason: .encrypted))
            }
            var localCompressed = header.u32(18)
            var localUncompressed = header.u32(22)
            let localZip64 = Self.zip64Extra(variable, from: nameLength, length: extraLength)
            if let localZip64, localZip64.count >= 16,
                localUncompressed == 0xFFFF_FFFF || localCompressed == 0xFFFF_FFFF
            {
                let values = Bytes(bytes: Array(localZip64.prefix(16)))
                localUncompressed = values.u64(0)
                localCompressed = values.u64(8)
            }
            let dataStart = entry.offset + 30 + UInt64(nameLength) + UInt64(extraLength)
            guard dataStart <= directoryOffset, entry.compressedSize <= directoryOffset - dataStart else {
                throw disagree("its data runs into the central directory")
            }
            var end = dataStart + entry.compressedSize
            let sizesMatch =
                header.u32(14) == UInt64(entry.crc) && localCompressed == entry.compressedSize
                && localUncompressed == entry.uncompressedSize
            if entry.hasDataDescriptor {
                // The local values may be left 0 (libarchive knows the size, not the CRC-32 or
                // the compressed size, when it writes the header).
                let crcAgrees = header.u32(14) == 0 || header.u32(14) == UInt64(entry.crc)
                let compressedAgrees = localCompressed == 0 || localCompressed == entry.compressedSize
                let uncompressedAgrees = localUncompressed == 0 || localUncompressed == entry.uncompressedSize
                guard crcAgrees && compressedAgrees && uncompressedAgrees else {
                    throw disagree("its local header gives other sizes or CRC-32 than the central directory")
                }
                // CRC-32 and sizes follow the data, with or without a signature, sizes in 4 or
                // (Zip64) 8 bytes: whichever form repeats the central directory's values.
                let available = Int(min(24, directoryOffset - end))
                let descriptor = try read(end, available)
                var matched: UInt64?
                for signed in [true, false] {
                    let start = signed ? 4 : 0
                    if signed && (available < 4 || descriptor.u32(0) != Self.descriptorSignature) { continue }
                    if available >= start + 12, descriptor.u32(start) == UInt64(entry.crc),
                        descriptor.u32(start + 4) == entry.compressedSize,
                        descriptor.u32(start + 8) == entry.uncompressedSize
                    {
                        matched = UInt64(start + 12)
                        break
                    }
                    if available >= start + 20, descriptor.u32(start) == UInt64(entry.crc),
                        descriptor.u64(start + 4) == entry.compressedSize,
                        descriptor.u64(start + 12) == entry.uncompressedSize
                    {
                        matched = UInt64(start + 20)
                        break
                    }
                }
                guard let length = matched else {
                    throw disagree(
                        "its data descriptor does not repeat the central directory's sizes and CRC-32")
                }
                end += length
            } else if !sizesMatch {
                throw disagree("its local header gives other sizes or CRC-32 than the central directory")
            }
            expected = end
        }
        guard expected == directoryOffset else {
            throw broken(
                entries.isEmpty
                    ? "\(directoryOffset) bytes precede an empty central directory"
                    : "\(directoryOffset - expected) unlisted bytes follow the last entry")
        }
        self.entries = entries
    }

    /// The data of the Zip64 extended information extra field (id 1), if the extra fields hold one.
    private static func zip64Extra(_ data: Bytes, from start: Int, length: Int) -> ArraySlice<UInt8>? {
        var at = start
        let end = start + length
        while at + 4 <= end {
            let id = data.u16(at)
            let size = Int(data.u16(at + 2))
            guard at + 4 + size <= end else { return nil }
            if id == 1 { return data.bytes[(at + 4)..<(at + 4 + size)] }
            at += 4 + size
        }
        return nil
    }
}
