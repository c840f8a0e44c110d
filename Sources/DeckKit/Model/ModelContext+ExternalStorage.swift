import Foundation
import Observation

extension ModelContext {
    /// Sets an `@Attribute(.externalStorage)` data property of `model` to the contents of the file
    /// at `url`, without reading the file into memory: the next ``save()`` streams it into the
    /// document's blob files (or stores it inline when it is under the attribute's threshold).
    ///
    /// ```swift
    /// try context.setExternalStorage(\.image, of: card, contentsOf: photoURL)
    /// try context.save()  // the photo is copied into the document here
    /// ```
    ///
    /// The file must stay as it is until that save; reading the property before then reads the
    /// file whole. Assigning the property replaces this. Throws ``DeckError/misuse(_:)`` when
    /// `model` is not in this context or is deleted, ``DeckError/invalidQuery(_:)`` when the key
    /// path is not an external-storage data attribute of the model, and ``DeckError/notFound(path:)``
    /// or ``DeckError/notARegularFile(path:kind:)`` when `url` does not name a readable regular file.
    public func setExternalStorage<T: PersistentModel, V>(
        _ keyPath: ReferenceWritableKeyPath<T, V>, of model: T, contentsOf url: URL
    ) throws(DeckError) {
        let (backing, accessor) = try ExternalStorage.attribute(keyPath, of: model, in: self)
        try InputFile.checkReadable(url)
        backing.withMutation(of: model, keyPath: keyPath) {
            backing.setPending(accessor.index, .file(url.standardizedFileURL))
        }
        backing.markChanged(accessor.index)
    }

    /// Writes an `@Attribute(.externalStorage)` data property of `model` to the file at `url`,
    /// streaming it from the document's blob file when it is not loaded (it is never read into
    /// memory then). Returns false, writing nothing, when the property is nil.
    ///
    /// ```swift
    /// if try context.copyExternalStorage(\.image, of: card, to: exportURL) { share(exportURL) }
    /// ```
    ///
    /// A value in a blob file is checked against its digest before any byte reaches `url`; a
    /// regular file there is replaced atomically, a FIFO or device is written, a directory is
    /// refused. A value stored inline, or not saved yet, is written from memory (or from the file
    /// it will be saved from) with an atomic replace, which makes `url` a regular file. Throws as
    /// ``setExternalStorage(_:of:contentsOf:)`` does for the model and key path, and
    /// ``DeckError/blobUnavailable(digest:reason:)`` or ``DeckError/io(path:operation:errno:)``
    /// when the copy fails.
    @discardableResult
    public func copyExternalStorage<T: PersistentModel, V>(
        _ keyPath: ReferenceWritableKeyPath<T, V>, of model: T, to url: URL
    ) throws(DeckError) -> Bool {
        try ExternalStorage.copy(keyPath, of: model, in: self, to: url)
    }
}
