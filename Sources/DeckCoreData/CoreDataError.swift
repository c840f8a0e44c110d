import DeckSupport

/// An error reading a Core Data or SwiftData store: what is wrong and, for a property list,
/// at which byte offset.
///
/// The ``kind`` says which check failed (tests and callers switch on it); ``description`` is the
/// message for people: what is wrong, where, and what to do about it where that is known.
public struct CoreDataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which check failed.
    public enum Kind: String, Sendable, Equatable {
        /// The file is not a SQLite database with Core Data's `Z_PRIMARYKEY` and `Z_METADATA`.
        case notACoreDataStore
        /// The store (or its `-wal`/`-shm`) could not be copied or read.
        case unreadableStore
        /// This user may not read the store, its `-wal` or `-shm` (``CoreDataError/path`` names
        /// which).
        case permissionDenied
        /// The store's SQLite file fails SQLite's integrity check, or its `-wal` belongs to
        /// another store.
        case damagedStore
        /// A Core Data table holds something other than Core Data writes there.
        case badStoreTable
        /// The data ends before a structure it declares.
        case truncated
        /// The data does not start with `bplist00`.
        case badMagic
        /// The property list's trailer is inconsistent (sizes, counts, table offset).
        case badTrailer
        /// An offset points outside the data or into the trailer.
        case offsetOutOfRange
        /// A count (of bytes, characters or elements) does not fit in the data.
        case countOutOfRange
        /// An object reference names no object.
        case badObjectReference
        /// An object marker byte no property list writer uses.
        case unknownMarker
        /// Text that is not valid ASCII or UTF-16.
        case badString
        /// An integer outside the 64-bit range.
        case integerOutOfRange
        /// A dictionary key that is not a string, or a key given twice.
        case badDictionaryKey
        /// A container that contains itself, directly or through others.
        case referenceCycle
        /// Containers nested deeper than the limit.
        case nestingTooDeep
        /// More objects (or, with shared objects, more decoded values) than the limit.
        case tooManyObjects
        /// More bytes than the limit (input, or inflated output: a deflate bomb).
        case tooLarge
        /// A DEFLATE stream that zlib refuses or that ends early.
        case badDeflateStream
        /// Not an `NSKeyedArchiver` archive (`$archiver`, `$top`, `$objects` missing or wrong).
        case notAKeyedArchive
        /// A UID that names no object of `$objects`.
        case danglingUID
        /// An archived object whose `$class` is not a class description.
        case badClass
        /// An archived object that has a different shape than its class (a key missing or of
        /// the wrong type).
        case unexpectedArchivedValue
        /// The model cache decodes, but does not describe a managed object model (or not one
        /// these tables hold, or not one with a valid Deck schema).
        case badModel
        /// A row holds something Core Data does not write there: a value of the wrong storage
        /// class, or a `Z_ENT` that names no entity of the row's table.
        case badRow
        /// An external binary data value that cannot be read: an unknown first byte, a file name
        /// that could leave the external data directory, or a file that is missing or refused.
        case badExternalData
    }

    /// Which check failed.
    public let kind: Kind
    /// What is wrong, for people.
    public let message: String
    /// The byte offset where the problem is, when there is one: in the property list (for a
    /// model cache, the inflated one) or, for a DEFLATE error, in the compressed stream.
    public let offset: Int?
    /// The file the error is about, when it is not the store itself (for `permissionDenied`, the
    /// file that may not be read).
    public let path: String?

    /// An error of `kind` with `message`, at `offset` when given, about the file at `path` when
    /// given.
    public init(_ kind: Kind, _ message: String, offset: Int? = nil, path: String? = nil) {
        self.kind = kind
        self.message = message
        self.offset = offset
        self.path = path
    }

    /// The message, with the offset when there is one.
    public var description: String {
        if let offset { "\(message) (at offset \(offset))" } else { message }
    }

    /// The error as the rest of Deck reports it: ``DeckError/invalidSource(path:reason:)`` naming
    /// the store, with this error's message (and offset) as the reason, less the store's path
    /// where the message begins with it; ``DeckError/permissionDenied(path:operation:)`` naming
    /// the file for `permissionDenied`.
    package func deckError(path: String) -> DeckError {
        if kind == .permissionDenied { return .permissionDenied(path: self.path ?? path, operation: "read") }
        let prefix = path + ": "
        let reason = description.hasPrefix(prefix) ? String(description.dropFirst(prefix.count)) : description
        return .invalidSource(path: path, reason: reason)
    }

    /// The same error with `context` put before its message (e.g. which table or column).
    func within(_ context: String) -> CoreDataError {
        CoreDataError(kind, "\(context): \(message)", offset: offset, path: path)
    }
}
