import Foundation

/// The work behind ``ModelContext/setExternalStorage(_:of:contentsOf:)`` and
/// ``ModelContext/copyExternalStorage(_:of:to:)``: the external-storage attribute a key path
/// names, and the copy of its value to a file (from its blob file, the file it will be saved
/// from, or memory).
enum ExternalStorage {
    /// Writes the value of `keyPath` of `model` to `url`; false when it is nil.
    static func copy<T: PersistentModel, V>(
        _ keyPath: ReferenceWritableKeyPath<T, V>, of model: T, in context: ModelContext, to url: URL
    ) throws(DeckError) -> Bool {
        let (backing, accessor) = try attribute(keyPath, of: model, in: context)
        switch backing.pendingValue(accessor.index) {
        case .blob(let reference):
            do {
                try context.store.read { try $0.copyBlob(reference.digest, toPath: url.path) }
            } catch {
                throw DeckError.wrap(error)
            }
            return true
        case .file(let source):
            // Not saved yet: the file it will be saved from, mapped rather than read.
            let data: Data
            do {
                data = try Data(contentsOf: source, options: .alwaysMapped)
            } catch {
                throw DeckError.io(path: source.path, operation: "read", errno: errno(of: error))
            }
            try write(data, to: url)
            return true
        default:
            let data: Data?
            switch model[keyPath: keyPath] {
            case let value as Data: data = value
            case let value as Data?: data = value
            default: data = nil
            }
            guard let data else { return false }
            try write(data, to: url)
            return true
        }
    }

    private static func write(_ data: Data, to url: URL) throws(DeckError) {
        do {
            try data.write(to: url, options: .atomic)
        } catch {
            throw DeckError.io(path: url.path, operation: "write", errno: errno(of: error))
        }
    }

    private static func errno(of error: any Error) -> Int32 {
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        if let underlying, underlying.domain == NSPOSIXErrorDomain { return Int32(underlying.code) }
        return EIO
    }

    /// The backing of `model`, in this context, and the accessor of `keyPath`, an external
    /// data attribute.
    static func attribute<T: PersistentModel, V>(
        _ keyPath: KeyPath<T, V>, of model: T, in context: ModelContext
    )
        throws(DeckError) -> (ModelBacking, PropertyAccessor)
    {
        let backing = ModelBacking.of(model)
        guard backing.context === context, backing.status != .deleted, backing.status != .detached else {
            throw DeckError.misuse(
                "\(T.self) is not in this context (insert it first, or use the context it was fetched in)")
        }
        let path = backing.metadata.resolve(keyPath)
        guard path.count == 1, let accessor = path.first,
            let attribute = accessor as? any AttributeDescribing,
            attribute.attributeOptions.contains(.externalStorage), attribute.attributeType == .data
        else {
            throw DeckError.invalidQuery(
                "\(keyPath) is not an @Attribute(.externalStorage) data property of \(T.self)")
        }
        return (backing, accessor)
    }
}
