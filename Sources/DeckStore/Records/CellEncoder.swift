import DeckSQLite
import Foundation

/// How a written value becomes the cell of its attribute's column (spec 7.1 and 7.2), for every
/// writer of records: ``RecordWriter``'s inserts and updates and ``BulkLoader``'s rows. Data goes
/// inline, or to a blob file when the attribute has external storage and the bytes reach its
/// threshold (`.data` and `.file` alike; a `.file` is read to its end, and the bytes read decide);
/// every other type is `Value.sqlValue`'s.
///
/// Where a blob file that a cell is to name is registered is the writer's choice: the record API
/// registers it in `deck_blob` at once (the reference-count triggers then count the cell), a bulk
/// load collects the files and registers them, counted, once at the end.
struct CellEncoder {
    let database: Database
    let blobs: BlobStore
    let dateEpoch: DateEpoch
    /// Whether `deck_blob` has the blob (or will have it, for a writer that registers later).
    let isRegistered: (Digest) throws -> Bool
    /// Registers a blob file that a cell names.
    let register: (BlobReference) throws -> Void

    /// The encoder of the record API on `connection`: blobs are registered in `deck_blob` at once.
    static func registeringNow(_ connection: StoreConnection) -> CellEncoder {
        let database = connection.database
        return CellEncoder(
            database: database, blobs: connection.blobs, dateEpoch: connection.dateEpoch,
            isRegistered: { digest in
                try database.scalar("SELECT size FROM deck_blob WHERE digest = ?", [.text(digest.hexDigest)])
                    != nil
            },
            register: { reference in
                try database.run(
                    "INSERT INTO deck_blob(digest, size, refs) VALUES (?, ?, 0) ON CONFLICT(digest) DO NOTHING",
                    [.text(reference.digest.hexDigest), .integer(reference.size)])
            })
    }

    /// The cell an insert binds for attribute `index` of `mapping`: `given`, or the attribute's
    /// initial value when nil; a null for an attribute that is not optional is refused. Data goes
    /// through `data` (an encoder's ``cell(_:for:of:)``), made only for the data attributes.
    static func insertCell(
        _ given: Value?, attribute index: Int, of mapping: EntityMapping, epoch: DateEpoch,
        data: (Value, Attribute) throws -> SQLValue
    ) throws -> SQLValue {
        let (type, isOptional) = mapping.attributeTypes[index]
        let value = given ?? mapping.attributes[index].initialValue()
        if value.isNull && !isOptional {
            throw DeckError.invalidValue(
                entity: mapping.name, property: mapping.attributes[index].name,
                reason: "a value is required (the attribute is not optional)")
        }
        if type == .data { return try data(value, mapping.attributes[index]) }
        do throws(ValueError) {
            return try value.sqlValue(for: type, isOptional: isOptional, epoch: epoch)
        } catch {
            throw DeckError.invalidValue(
                entity: mapping.name, property: mapping.attributes[index].name, reason: error.description)
        }
    }

    /// Encodes `value` for the column of `attribute` (of entity `entity`, for messages), writing a
    /// blob file for large external data.
    func cell(_ value: Value, for attribute: Attribute, of entity: String) throws -> SQLValue {
        guard attribute.type == .data else {
            do {
                return try value.sqlValue(
                    for: attribute.type, isOptional: attribute.isOptional, epoch: dateEpoch)
            } catch {
                throw DeckError.invalidValue(
                    entity: entity, property: attribute.name, reason: error.description)
            }
        }
        func invalid(_ reason: String) -> DeckError {
            DeckError.invalidValue(entity: entity, property: attribute.name, reason: reason)
        }
        let external = attribute.options.contains(.externalStorage)
        let threshold = attribute.effectiveExternalThreshold
        switch value {
        case .null:
            return .null
        case .data(let data):
            guard external && data.count >= threshold else { return .blob(data) }
            return try registered(try blobs.write(data))
        case .file(let url):
            // Read to the end whatever size the file reports; the bytes read decide inline or not.
            let input = try InputFile(value: url.path, invalid: invalid)
            let head = try input.read(upTo: external ? threshold : .max)
            guard external && head.count >= threshold else { return .blob(head) }
            return try registered(try blobs.write(head, followedBy: input))
        case .blob(let reference):
            guard external else { return .blob(try blobs.read(reference.digest)) }
            if try !isRegistered(reference.digest) {
                // An existing file that nothing references yet: check it before adopting it.
                let (digest, size) = try BlobStore.hashFile(at: blobs.path(for: reference.digest))
                guard digest == reference.digest else {
                    throw DeckError.blobUnavailable(
                        digest: reference.digest.hexDigest, reason: "file is corrupt")
                }
                return try registered(BlobReference(digest: digest, size: size))
            }
            return .text(reference.digest.hexDigest)
        default:
            throw invalid("expected data, not \(value.kindName)")
        }
    }

    /// The cell naming a blob, registered.
    private func registered(_ reference: BlobReference) throws -> SQLValue {
        try register(reference)
        return .text(reference.digest.hexDigest)
    }
}
