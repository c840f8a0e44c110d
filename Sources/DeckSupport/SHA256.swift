import CCrypto
import Dispatch
import Foundation

/// An incremental SHA-256 hasher over OpenSSL's EVP interface.
///
/// ```swift
/// var hasher = try SHA256Hasher()
/// hasher.update(bytes)
/// let hex = hasher.finalize().hexDigest
/// ```
///
/// Not thread-safe: one hasher belongs to one task at a time.
public final class SHA256Hasher {
    private let context: OpaquePointer
    private var finished = false

    public init() {
        // EVP_MD_CTX_new only fails when malloc does; there is no sensible recovery from that.
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new: out of memory") }
        self.context = context
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds bytes to the digest.
    public func update(_ buffer: UnsafeRawBufferPointer) {
        precondition(!finished, "SHA256Hasher used after finalize()")
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        EVP_DigestUpdate(context, base, buffer.count)
    }

    /// Adds bytes to the digest.
    public func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    /// Finishes the digest; the hasher cannot be used afterwards.
    public func finalize() -> Digest {
        precondition(!finished, "SHA256Hasher finalized twice")
        finished = true
        var bytes = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &bytes, &length)
        return Digest(bytes: bytes)
    }

    /// Starts a new digest with the same hasher (after ``finalize()``, or to drop what was
    /// added): what hashes many short inputs in a row without a new OpenSSL context for each.
    package func reset() {
        EVP_DigestInit_ex(context, nil, nil)
        finished = false
    }

    /// The SHA-256 digest of `data`.
    public static func hash(_ data: Data) -> Digest {
        let hasher = SHA256Hasher()
        hasher.update(data)
        return hasher.finalize()
    }
}

@available(*, unavailable)
extension SHA256Hasher: Sendable {}

/// A SHA-256 digest, the name of a blob.
public struct Digest: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 32 raw bytes.
    public let bytes: [UInt8]

    package init(bytes: [UInt8]) { self.bytes = bytes }

    /// The version 8 UUID (RFC 9562) of the first 16 bytes, with the version nibble set to 8 and
    /// the variant to binary 10: a global id named by what was hashed (spec 6.10).
    package var nameBasedUUID: UUID {
        var b = Array(bytes.prefix(16))
        b[6] = (b[6] & 0x0F) | 0x80
        b[8] = (b[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]
            ))
    }

    /// Parses 64 lowercase hexadecimal digits; returns nil for anything else.
    public init?(hex: some StringProtocol) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(32)
        var index = 0
        while index < 64 {
            guard let high = Self.nibble(utf8[index]), let low = Self.nibble(utf8[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.bytes = bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    /// The 64 lowercase hexadecimal digits.
    public var hexDigest: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public var description: String { hexDigest }

    public static func < (lhs: Digest, rhs: Digest) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }
}

/// A SHA-256 hasher that hashes on a background thread, so that a copy loop (read, write)
/// and the hashing of the same bytes overlap on two cores.
///
/// ``update(_:)`` copies the chunk and returns at once; at most eight chunks wait at a time, so
/// memory stays bounded. ``finalize()`` waits for the queue. Use it from one thread.
package final class BackgroundSHA256Hasher {
    /// Moves a chunk and the hasher across to the queue; only that queue touches them.
    private struct Job: @unchecked Sendable {
        package let hasher: SHA256Hasher
        package let bytes: UnsafeMutableRawBufferPointer
    }

    private let hasher = SHA256Hasher()
    private let queue: DispatchQueue
    private let slots: DispatchSemaphore

    /// - Parameter slots: bounds the chunks waiting; share one among several hashers to bound
    ///   them together. Hashers run on the global pool, so several hash at once.
    package init(slots: DispatchSemaphore = DispatchSemaphore(value: 8)) {
        self.slots = slots
        queue = DispatchQueue(label: "org.deck.sha256", target: .global())
    }

    deinit {
        // Let queued jobs finish before the hasher goes away.
        queue.sync {}
    }

    /// Queues a copy of `chunk` for hashing.
    package func update(_ chunk: UnsafeRawBufferPointer) {
        guard let base = chunk.baseAddress, chunk.count > 0 else { return }
        slots.wait()
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk.count, alignment: 16)
        copy.copyMemory(from: UnsafeRawBufferPointer(start: base, count: chunk.count))
        let job = Job(hasher: hasher, bytes: copy)
        let slots = self.slots
        queue.async {
            job.hasher.update(UnsafeRawBufferPointer(job.bytes))
            job.bytes.deallocate()
            slots.signal()
        }
    }

    /// Waits for every queued chunk and returns the digest.
    package func finalize() -> Digest {
        let job = Job(hasher: hasher, bytes: UnsafeMutableRawBufferPointer(start: nil, count: 0))
        return queue.sync { job.hasher.finalize() }
    }
}

@available(*, unavailable)
extension BackgroundSHA256Hasher: Sendable {}
