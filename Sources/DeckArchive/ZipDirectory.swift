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

    fileprivate struct Bytes {
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
        let file = File(fd: fd, size: size, path: path, fileName: fileName)
        guard size >= 22 else {
            throw file.broken("the file is too short to hold an end-of-central-directory record")
        }
        let directory = try Self.centralDirectory(file)
        guard directory.count <= UInt64(maxEntries) else {
            throw DeckError.archive(.limitExceeded(entry: fileName, limit: .entries(maxEntries)))
        }
        guard directory.count <= directory.size / 46 else {
            throw file.broken("the central directory is too small for \(directory.count) entries")
        }
        let entries = try Self.entries(of: directory, in: file)
        // The local headers, one after the other.
        var expected: UInt64 = 0
        for entry in entries {
            expected = try Self.checkLocalHeader(of: entry, at: expected, before: directory.offset, in: file)
        }
        guard expected == directory.offset else {
            throw file.broken(
                entries.isEmpty
                    ? "\(directory.offset) bytes precede an empty central directory"
                    : "\(directory.offset - expected) unlisted bytes follow the last entry")
        }
        self.entries = entries
    }

    /// The zip file being read, and how to refuse it.
    fileprivate struct File {
        let fd: Int32
        let size: Int64
        let path: String
        let fileName: String

        func broken(_ detail: String) -> DeckError {
            .archive(.entryRefused(entry: fileName, reason: .zipStructure(detail)))
        }

        func read(_ offset: UInt64, _ count: Int) throws -> Bytes {
            guard offset <= UInt64(size), UInt64(count) <= UInt64(size) - offset else {
                throw broken("a record at offset \(offset) runs past the end of the file")
            }
            return Bytes(bytes: try ArchiveSystem.read(fd, at: Int64(offset), count: count, path: path))
        }
    }

    /// Where the central directory is and what it holds, as the end records give it.
    private struct CentralDirectory {
        /// Where it starts.
        var offset: UInt64
        /// Where it ends: at the end record, or the Zip64 end record.
        var end: UInt64
        var size: UInt64
        /// The number of entries.
        var count: UInt64
    }

    /// The central directory that the end record (and the Zip64 end record, when there is one)
    /// gives, checked: one disk, and ending where the end records start.
    private static func centralDirectory(_ file: File) throws -> CentralDirectory {
        // The end record: the last one whose comment ends exactly at the end of the file.
        let tailLength = Int(min(file.size, 22 + 0xFFFF))
        let tail = try file.read(UInt64(file.size) - UInt64(tailLength), tailLength)
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
            throw file.broken("no end-of-central-directory record ends the file")
        }
        let endOffset = UInt64(file.size) - UInt64(tailLength) + UInt64(position)
        var disk = tail.u16(position + 4)
        var directoryDisk = tail.u16(position + 6)
        var entriesOnDisk = tail.u16(position + 8)
        var directory = CentralDirectory(
            offset: tail.u32(position + 16), end: endOffset, size: tail.u32(position + 12),
            count: tail.u16(position + 10))

        // Zip64: a locator right before the end record, pointing at the Zip64 end record right
        // before the locator.
        if endOffset >= 20, try file.read(endOffset - 20, 4).u32(0) == Self.zip64LocatorSignature {
            let locator = try file.read(endOffset - 20, 20)
            guard locator.u32(4) == 0, locator.u32(16) == 1 else {
                throw file.broken("it spans several disks")
            }
            let recordOffset = locator.u64(8)
            let record = try file.read(recordOffset, 56)
            guard record.u32(0) == Self.zip64EndSignature else {
                throw file.broken("the Zip64 locator does not point at a Zip64 end record")
            }
            guard record.u64(4) >= 44, recordOffset + 12 + record.u64(4) == endOffset - 20 else {
                throw file.broken("the Zip64 end record does not end where its locator starts")
            }
            disk = record.u32(16)
            directoryDisk = record.u32(20)
            entriesOnDisk = record.u64(24)
            directory = CentralDirectory(
                offset: record.u64(48), end: recordOffset, size: record.u64(40), count: record.u64(32))
        } else if directory.count == 0xFFFF || entriesOnDisk == 0xFFFF || directory.size == 0xFFFF_FFFF
            || directory.offset == 0xFFFF_FFFF
        {
            throw file.broken("the end record asks for Zip64 values but there is no Zip64 end record")
        }
        guard disk == 0, directoryDisk == 0, entriesOnDisk == directory.count else {
            throw file.broken("it spans several disks")
        }
        guard directory.offset <= directory.end, directory.end - directory.offset == directory.size else {
            throw file.broken("the central directory does not end where the end record starts")
        }
        return directory
    }

    /// The entries of the central directory, record by record (memory follows the records, not
    /// what the end record claims), which must fill it exactly.
    private static func entries(of directory: CentralDirectory, in file: File) throws -> [Entry] {
        var entries: [Entry] = []
        entries.reserveCapacity(Int(directory.count))
        var at = directory.offset
        for index in 0..<Int(directory.count) {
            let ordinal = "central directory record \(index + 1) of \(directory.count)"
            guard directory.end - at >= 46 else { throw file.broken("\(ordinal) runs past the directory") }
            let fixed = try file.read(at, 46)
            guard fixed.u32(0) == Self.centralSignature else { throw file.broken("\(ordinal) is malformed") }
            let nameLength = Int(fixed.u16(28))
            let extraLength = Int(fixed.u16(30))
            let recordLength = UInt64(46 + nameLength + extraLength) + fixed.u16(32)
            guard recordLength <= directory.end - at else {
                throw file.broken("\(ordinal) runs past the directory")
            }
            let variable = try file.read(at + 46, nameLength + extraLength)
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
            guard startDisk == 0 else { throw file.broken("it spans several disks") }
            entries.append(
                Entry(
                    name: Array(variable.bytes[0..<nameLength]), flags: UInt16(fixed.u16(8)),
                    method: UInt16(fixed.u16(10)), crc: UInt32(fixed.u32(16)), compressedSize: compressed,
                    uncompressedSize: uncompressed, offset: offset))
            at += recordLength
        }
        guard at == directory.end else {
            throw file.broken(
                "the central directory holds \(directory.end - at) bytes after its \(directory.count) records"
            )
        }
        return entries
    }

    /// Checks the local header of `entry`, which must start at `expected` (where the entry before
    /// it ended), against its central directory record; returns where its data (and data
    /// descriptor) end, which must be before the central directory (at `directoryOffset`).
    private static func checkLocalHeader(
        of entry: Entry, at expected: UInt64, before directoryOffset: UInt64, in file: File
    ) throws -> UInt64 {
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
        let header = try file.read(entry.offset, 30)
        guard header.u32(0) == Self.localSignature else {
            throw disagree("no local header at its offset")
        }
        let nameLength = Int(header.u16(26))
        let extraLength = Int(header.u16(28))
        let variable = try file.read(entry.offset + 30, nameLength + extraLength)
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
        let end = dataStart + entry.compressedSize
        guard entry.hasDataDescriptor else {
            let sizesMatch =
                header.u32(14) == UInt64(entry.crc) && localCompressed == entry.compressedSize
                && localUncompressed == entry.uncompressedSize
            guard sizesMatch else {
                throw disagree("its local header gives other sizes or CRC-32 than the central directory")
            }
            return end
        }
        // The local values may be left 0 (libarchive knows the size, not the CRC-32 or the
        // compressed size, when it writes the header).
        let crcAgrees = header.u32(14) == 0 || header.u32(14) == UInt64(entry.crc)
        let compressedAgrees = localCompressed == 0 || localCompressed == entry.compressedSize
        let uncompressedAgrees = localUncompressed == 0 || localUncompressed == entry.uncompressedSize
        guard crcAgrees && compressedAgrees && uncompressedAgrees else {
            throw disagree("its local header gives other sizes or CRC-32 than the central directory")
        }
        guard let length = try dataDescriptorLength(of: entry, at: end, before: directoryOffset, in: file)
        else {
            throw disagree("its data descriptor does not repeat the central directory's sizes and CRC-32")
        }
        return end + length
    }

    /// The length of the data descriptor of `entry` at `end` (the end of its data), or nil when
    /// none there repeats the central directory's values: CRC-32 and sizes follow the data, with
    /// or without a signature, sizes in 4 or (Zip64) 8 bytes.
    private static func dataDescriptorLength(
        of entry: Entry, at end: UInt64, before directoryOffset: UInt64, in file: File
    ) throws -> UInt64? {
        let available = Int(min(24, directoryOffset - end))
        let descriptor = try file.read(end, available)
        for signed in [true, false] {
            let start = signed ? 4 : 0
            if signed && (available < 4 || descriptor.u32(0) != Self.descriptorSignature) { continue }
            if available >= start + 12, descriptor.u32(start) == UInt64(entry.crc),
                descriptor.u32(start + 4) == entry.compressedSize,
                descriptor.u32(start + 8) == entry.uncompressedSize
            {
                return UInt64(start + 12)
            }
            if available >= start + 20, descriptor.u32(start) == UInt64(entry.crc),
                descriptor.u64(start + 4) == entry.compressedSize,
                descriptor.u64(start + 12) == entry.uncompressedSize
            {
                return UInt64(start + 20)
            }
        }
        return nil
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
