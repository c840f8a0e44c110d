import CZlib
import Foundation

/// Raw DEFLATE (RFC 1951, no zlib or gzip header), the compression of Core Data's model cache.
public enum RawDeflate {
    /// The largest output ``inflate(_:maximumOutput:)`` gives by default: 64 MiB.
    public static let standardMaximumOutput = 64 << 20

    /// Decompresses `data`, refusing output beyond `maximumOutput` bytes (a deflate bomb is an
    /// error, not an allocation), a stream that ends early and bytes after the stream's end.
    ///
    /// - Throws: ``CoreDataError`` of kind `tooLarge` or `badDeflateStream`.
    public static func inflate(_ data: Data, maximumOutput: Int = standardMaximumOutput) throws(CoreDataError)
        -> Data
    {
        var stream = z_stream()
        guard deck_inflate_init_raw(&stream) == Z_OK else {
            throw CoreDataError(.badDeflateStream, "zlib could not start inflating (out of memory?)")
        }
        defer { inflateEnd(&stream) }
        var input = [UInt8](data)
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var status: Int32 = Z_OK
        let inputCount = input.count
        try input.withUnsafeMutableBufferPointer { (inputBuffer) throws(CoreDataError) in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = UInt32(inputCount)
            while status != Z_STREAM_END {
                let produced = chunk.withUnsafeMutableBufferPointer { chunkBuffer -> Int in
                    stream.next_out = chunkBuffer.baseAddress
                    stream.avail_out = UInt32(chunkBuffer.count)
                    status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return chunkBuffer.count - Int(stream.avail_out)
                }
                guard status == Z_OK || status == Z_STREAM_END else {
                    let consumed = inputCount - Int(stream.avail_in)
                    if status == Z_BUF_ERROR {
                        throw CoreDataError(
                            .badDeflateStream, "deflate stream ends early, after \(consumed) of its bytes",
                            offset: consumed)
                    }
                    let reason = stream.msg.map { String(cString: $0) } ?? "zlib status \(status)"
                    throw CoreDataError(
                        .badDeflateStream, "deflate stream is corrupt: \(reason)", offset: consumed)
                }
                guard produced <= maximumOutput - output.count else {
                    throw CoreDataError(
                        .tooLarge,
                        "deflate stream inflates to more than \(maximumOutput) bytes (from \(inputCount)): "
                            + "refused as a decompression bomb")
                }
                output.append(contentsOf: chunk[0..<produced])
                if status == Z_OK && produced == 0 && stream.avail_in == 0 {
                    throw CoreDataError(
                        .badDeflateStream, "deflate stream ends early, after all \(inputCount) of its bytes",
                        offset: inputCount)
                }
            }
            guard stream.avail_in == 0 else {
                let end = inputCount - Int(stream.avail_in)
                throw CoreDataError(
                    .badDeflateStream, "\(stream.avail_in) bytes follow the end of the deflate stream",
                    offset: end)
            }
        }
        return output
    }
}
