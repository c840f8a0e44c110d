import Foundation

extension PackageStore {
    /// Builds a complete new package at `url`, filled by `body` through a ``BulkLoader``, and
    /// renames it into place only once it is whole and verified: ``PackageBuilder``.
    package static func build(
        at url: URL, contentType: String, schema: StoreSchema, documentID: UUID? = nil,
        _ body: (BulkLoader) throws -> Void
    ) throws(DeckError) -> URL {
        try PackageBuilder.build(
            at: url, contentType: contentType, schema: schema, documentID: documentID, body)
    }
}

/// ``PackageStore/build(at:contentType:schema:documentID:_:)``: a complete new package built in
/// one go, filled by a ``BulkLoader``; what an importer (and later merge) makes a document with.
///
/// Nothing named `url` exists until the package is whole and checked. It is created under a
/// staging name beside `url` (`.NAME.creating-<16 hex>`, as
/// ``PackageStore/create(at:contentType:schema:configuration:)``
/// stages: locked while it is built, removed on a termination signal and, should the process
/// die, by the next run that stages for `NAME`), opened for writing, filled by `body` in one
/// transaction, committed, closed, verified with ``PackageVerifier`` (quickly; a finding of
/// corruption, or one that needs recovery, is an error), and only then renamed into place,
/// never replacing anything: an existing `url` is refused before anything is written. Any
/// error, or a throw from `body`, removes the staging directory; an error `body` throws that
/// is not a ``DeckError`` is wrapped as ``DeckError/unexpected(_:)``.
///
/// The document id is `documentID` when given (a program that converts a document it can
/// identify keeps it), else a new one (spec 6.10).
enum PackageBuilder {
    /// Builds the package at `url` and returns its path.
    static func build(
        at url: URL, contentType: String, schema: StoreSchema, documentID: UUID?,
        _ body: (BulkLoader) throws -> Void
    ) throws(DeckError) -> URL {
        let mapping = try SchemaMapping(schema)
        let (target, parent) = try PackageDirectory.checkNewPackage(at: url, contentType: contentType)
        let staging = try Staging.make(beside: target, kind: .creating, isDirectory: true)
        do {
            try PackageDirectory.writeEmptyPackage(
                in: staging.path, contentType: contentType, schema: schema, mapping: mapping,
                documentID: documentID)
            try load(packageAt: staging.url, body)
            try checkBuilt(packageAt: staging.url, target: target)
            try PackageDirectory.syncStore(packagePath: staging.path)
            try PackageDirectory.moveIntoPlace(staging, target: target, parent: parent)
        } catch {
            staging.discard()
            if case DeckError.alreadyExists = error { throw DeckError.alreadyExists(path: target) }
            throw DeckError.wrap(error)
        }
        return URL(fileURLWithPath: target)
    }

    /// Opens the staged package at `url`, runs `body` with a loader in one write transaction,
    /// commits it with the save protocol and closes the package.
    private static func load(packageAt url: URL, _ body: (BulkLoader) throws -> Void) throws {
        let store = try PackageStore.open(
            at: url, mode: .readWrite, configuration: PackageStore.Configuration(maximumReaders: 1))
        do {
            try store.withWriter { connection in
                // A 32 MiB cache holds a store of about 30 MB without spilling pages to the log
                // mid-transaction. Foreign keys are off for the load: the loader checks every
                // link itself, by key and entity, and the verification runs foreign_key_check.
                try connection.database.execute("PRAGMA cache_size=-32768; PRAGMA foreign_keys=OFF")
                try connection.begin()
                let loader = BulkLoader(connection)
                defer { loader.end() }
                do {
                    try body(loader)
                    try loader.finish()
                    try connection.commit()
                } catch {
                    connection.rollback()
                    throw error
                }
            }
        } catch {
            try? store.close(discardingChanges: true)
            throw error
        }
        try store.close()
    }

    /// Verifies the built package: any finding of corruption, or one that needs recovery, is an
    /// error naming the first. The verification is quick (spec 10.7): every blob file was hashed
    /// as the build wrote it, and the store is the build's own, so sizes stand for re-hashing
    /// and SQLite's `quick_check` for `integrity_check`; every other check runs in full.
    private static func checkBuilt(packageAt url: URL, target: String) throws(DeckError) {
        let report = try PackageVerifier.verify(at: url, options: PackageVerifier.Options(quick: true))
        let serious = report.findings.filter { $0.severity == .corruption || $0.severity == .needsRecovery }
        guard let first = serious.first else { return }
        throw DeckError.corrupt(
            path: target,
            reason: "the package built for it fails verification (\(serious.count) finding"
                + (serious.count == 1 ? "" : "s")
                + "; first: \(first.code) \(first.object): \(first.message)); "
                + "nothing was written")
    }
}
