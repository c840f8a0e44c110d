import DeckArchive
import DeckSQLite
import DeckSupport
import Foundation

/// A Core Data or SwiftData SQLite store, opened from a private copy: what it says about itself
/// (its entity numbers, its metadata, its model cache) and, for an importer, the copy's
/// connection.
///
/// ``open(at:limits:)`` copies the store file and its `-wal` and `-shm` (when present) into a new
/// private temporary directory and opens only the copy: the user's files are never opened by
/// SQLite, locked, checkpointed or changed, and data that lives only in the WAL is read. The
/// external data files are only read, in place.
/// ``close()`` (or the last reference going away) removes the copy.
public final class CoreDataStore {
    /// The store file that was opened (the user's, not the copy).
    public let sourceURL: URL
    /// The entities `Z_PRIMARYKEY` lists, by entity number. Entity numbers change between model
    /// versions: always resolve them here, never assume them.
    public let entities: [CoreDataStoreEntity]
    /// What `Z_METADATA` says: version, UUID, store type and version hashes.
    public let metadata: CoreDataMetadata
    /// The data model from `Z_MODELCACHE`, or nil when the store has none (old stores): then the
    /// schema has to be inferred from the tables.
    public let model: CoreDataModel?
    /// The private copy's connection (read-write, so the copied WAL can be read).
    package let database: Database
    /// The directory holding the private copy.
    package var copyDirectory: URL { scratch.url }
    /// That directory as a registered staging item: removed by ``close()``, on a termination
    /// signal, or (after a crash) by the next import.
    private let scratch: StagingItem
    /// The store's external data files (`.<StoreName>_SUPPORT/_EXTERNAL_DATA` beside it), read in
    /// place (see ``scanExternalData(of:limits:)``).
    package let externalDataDirectory: URL
    /// The external data files a row may not refer to, with the reason (not a regular file, too
    /// large): a row that refers to one is refused with that reason.
    package var refusedExternalFiles: [String: String] { externalFiles.refused }
    /// The store's external data files, as its directory was when the store was opened.
    let externalFiles: ExternalFiles
    private var isClosed = false
    /// What the row readers met and carried approximately, for the import's report.
    package internal(set) var rowNotes = RowNotes()

    /// The names a store's companion files add to its path, copied with it.
    static let companionSuffixes = ["-wal", "-shm"]

    /// Limits on what a store may make the reader do.
    public struct Limits: Sendable, Equatable {
        /// The most bytes the model cache may inflate to.
        public var maximumModelCacheSize: Int
        /// Limits on the metadata's and the model cache's property lists.
        public var propertyList: BinaryPropertyList.Limits
        /// The most bytes one external data file (`_EXTERNAL_DATA`) may have; a row that refers to
        /// a larger one is refused.
        public var maximumExternalFileSize: Int64

        /// 64 MiB of model cache, the standard property list limits and 4 GiB per external file.
        public static let standard = Limits(
            maximumModelCacheSize: RawDeflate.standardMaximumOutput, propertyList: .standard)

        /// Limits of your own.
        public init(
            maximumModelCacheSize: Int, propertyList: BinaryPropertyList.Limits,
            maximumExternalFileSize: Int64 = 4 << 30
        ) {
            self.maximumModelCacheSize = maximumModelCacheSize
            self.propertyList = propertyList
            self.maximumExternalFileSize = maximumExternalFileSize
        }
    }

    /// Copies the store at `url` (with its `-wal` and `-shm`) to a private temporary directory,
    /// checks the entries of its `.<StoreName>_SUPPORT/_EXTERNAL_DATA` folder (regular files up
    /// to ``Limits/maximumExternalFileSize`` each; they are read in place later), and reads
    /// `Z_PRIMARYKEY`, `Z_METADATA` and, when there is one, `Z_MODELCACHE`.
    ///
    /// - Throws: ``CoreDataError``: `permissionDenied` when this user may not read the store, its
    ///   `-wal` or `-shm`; `unreadableStore` when a file cannot be copied otherwise,
    ///   `notACoreDataStore` for a file that is not SQLite or lacks Core Data's tables,
    ///   `badStoreTable` for a Core Data table of the wrong shape, or the metadata's or model
    ///   cache's decoding error (with the table's name before its message).
    public static func open(at url: URL, limits: Limits = .standard) throws(CoreDataError) -> CoreDataStore {
        let scratch: StagingItem
        do {
            scratch = try Staging.makeScratchDirectory(purpose: "coredata", mode: 0o700)
        } catch {
            throw CoreDataError(
                .unreadableStore, "could not make a private directory for the store's copy: \(error)")
        }
        let directory = scratch.url
        do throws(CoreDataError) {
            let copy = directory.appendingPathComponent(
                url.lastPathComponent.isEmpty ? "store" : url.lastPathComponent)
            try copyFile(from: url.path, to: copy.path, required: true)
            try refuseHotJournal(of: url)
            // What the main file alone says the store is, before the log is beside it.
            let hasLog = FileManager.default.fileExists(atPath: url.path + "-wal")
            let mainFileUUID = hasLog ? storeUUID(ofMainFile: copy.path) : nil
            for suffix in companionSuffixes {
                try copyFile(from: url.path + suffix, to: copy.path + suffix, required: false)
            }
            let refused = try scanExternalData(of: url, limits: limits)
            let database: Database
            do throws(SQLiteError) {
                database = try Database(path: copy.path, mode: .readWrite)
            } catch {
                throw CoreDataError(
                    .notACoreDataStore, "\(url.path) could not be opened as SQLite: \(error.message)")
            }
            let store = try CoreDataStore(
                source: url, database: database, scratch: scratch, externalFiles: refused,
                limits: limits)
            if let mainFileUUID, let uuid = store.metadata.uuid, uuid != mainFileUUID {
                throw CoreDataError(
                    .damagedStore,
                    "\(url.path)-wal belongs to another store: with it the store says it is \(uuid), "
                        + "without it \(mainFileUUID); move the -wal and -shm files that belong to this store "
                        + "beside it (or remove these two if the store was closed cleanly)")
            }
            try checkIntegrity(of: database, source: url)
            return store
        } catch {
            scratch.discard()
            throw error
        }
    }

    private init(
        source: URL, database: Database, scratch: StagingItem, externalFiles: ExternalFiles, limits: Limits
    ) throws(CoreDataError) {
        sourceURL = source
        externalDataDirectory = Self.externalDataSource(of: source)
        self.database = database
        self.scratch = scratch
        self.externalFiles = externalFiles
        let reader = StoreTableReader(database: database, path: source.path, limits: limits)
        let tables = try reader.tableNames()
        if tables.isEmpty,
            (try? FileManager.default.attributesOfItem(atPath: source.path)[.size] as? Int) == 0
        {
            throw CoreDataError(.notACoreDataStore, "\(source.path): an empty file, not a Core Data store")
        }
        for required in ["Z_PRIMARYKEY", "Z_METADATA"] where !tables.contains(required) {
            throw CoreDataError(
                .notACoreDataStore,
                "\(source.path) is a SQLite database but not a Core Data store: it has no \(required) table")
        }
        entities = try reader.primaryKeys()
        metadata = try reader.metadata()
        model = tables.contains("Z_MODELCACHE") ? try reader.modelCache() : nil
    }

    deinit { close() }

    /// The `Z_UUID` the store's main file says, read from the private copy before its `-wal` and
    /// `-shm` are copied beside it; nil when the main file alone has none (a store whose every
    /// change is still in its log) or cannot be read that way.
    private static func storeUUID(ofMainFile path: String) -> String? {
        guard let database = try? Database(path: path, mode: .readWrite) else { return nil }
        defer {
            database.close()
            // Opening a WAL-mode file makes an empty log and index: not the store's.
            for suffix in companionSuffixes { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        return (try? database.scalar("SELECT Z_UUID FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1"))??.string
    }

    /// SQLite's structural check of the copy (with its log applied): a damaged file, or pages of
    /// a log that belongs to another database, is refused before anything is read from it.
    private static func checkIntegrity(of database: Database, source: URL) throws(CoreDataError) {
        let result: SQLValue?
        do throws(SQLiteError) {
            result = try database.scalar("PRAGMA quick_check(1)")
        } catch {
            throw CoreDataError(.damagedStore, "\(source.path) is damaged: \(error.message)")
        }
        guard result?.string == "ok" else {
            throw CoreDataError(
                .damagedStore,
                "\(source.path) is damaged (SQLite's integrity check: \(result?.string ?? "no answer")); "
                    + "if a -wal file is beside it, it may belong to another store")
        }
    }

    /// Closes the copy's connection and removes the copy. Safe to call twice.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        database.close()
        scratch.discard()
    }

    /// The entity numbered `number` in this store.
    public func entity(number: Int64) -> CoreDataStoreEntity? { entities.first { $0.number == number } }

    /// The entity named `name` in this store.
    public func entity(named name: String) -> CoreDataStoreEntity? { entities.first { $0.name == name } }

    /// The store's external data directory: `.<StoreName>_SUPPORT/_EXTERNAL_DATA` beside it
    /// (`<StoreName>` is the store file's name without its extension).
    package static func externalDataSource(of url: URL) -> URL {
        url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.deletingPathExtension().lastPathComponent)_SUPPORT")
            .appendingPathComponent("_EXTERNAL_DATA")
    }

    /// Checks the entries of the store's external data directory (when it has one) without
    /// opening them, and returns those a row may not refer to, with the reason: not a regular
    /// file (a symbolic link, a directory, a device), or larger than the limit. The others are
    /// read in place, only read, when their rows are imported: Core Data never changes an
    /// external data file once written (a new value gets a new file), so, unlike the store,
    /// they need no private copy.
    static func scanExternalData(of url: URL, limits: Limits) throws(CoreDataError) -> ExternalFiles {
        let source = externalDataSource(of: url).path
        // Followed if it is a link, as before: the files in it are checked one by one.
        var status = stat()
        guard stat(source, &status) == 0 else {
            // A folder on the way this user may not enter: permission, not missing files.
            guard errno == EACCES else { return ExternalFiles() }
            let support = (source as NSString).deletingLastPathComponent
            let folder = access(support, X_OK) != 0 ? support : source
            throw CoreDataError(.permissionDenied, "\(folder): this user may not read it", path: folder)
        }
        guard status.st_mode & S_IFMT == S_IFDIR else { return ExternalFiles() }
        var files = ExternalFiles()
        do {
            // lstat, not FileManager's attributes: those look up the owner's and group's names,
            // reading /etc/passwd and /etc/group once per file.
            for name in try FileSystem.list(source).sorted() {
                let path = source + "/" + name
                guard let entry = try FileSystem.status(path), entry.st_mode & S_IFMT == S_IFREG else {
                    files.refused[name] = "\(path) is not a regular file"
                    continue
                }
                let size = Int64(entry.st_size)
                guard size <= limits.maximumExternalFileSize else {
                    files.refused[name] =
                        "\(path) has \(size) bytes, more than the limit of \(limits.maximumExternalFileSize)"
                    continue
                }
                files.readable.insert(name)
            }
        } catch .permissionDenied(let path, _) {
            throw CoreDataError(.permissionDenied, "\(path): this user may not read it", path: path)
        } catch {
            throw CoreDataError(.unreadableStore, "\(source) cannot be read: \(error)")
        }
        return files
    }

    /// What ``scanExternalData(of:limits:)`` found in a store's external data directory.
    struct ExternalFiles {
        /// The names of the regular files within the size limit.
        var readable: Set<String> = []
        /// The names a row may not refer to, with the reason.
        var refused: [String: String] = [:]
    }

    /// Refuses a store beside a hot rollback journal (`-journal` starting with SQLite's journal
    /// magic): a transaction was cut short, and only rolling it back, which changes the store,
    /// gives what SQLite would read. An empty journal, or one whose header is zeroed (a
    /// committed transaction in `TRUNCATE` or `PERSIST` mode), is not hot and is ignored.
    static func refuseHotJournal(of url: URL) throws(CoreDataError) {
        let journal = url.path + "-journal"
        guard let handle = FileHandle(forReadingAtPath: journal) else { return }
        defer { try? handle.close() }
        let magic: [UInt8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]
        guard let head = try? handle.read(upToCount: 8), Array(head) == magic else { return }
        throw CoreDataError(
            .damagedStore,
            "\(journal) holds a transaction that was cut short (a hot rollback journal), so the store "
                + "without it is not what SQLite would read, and Deck never changes the store: open the store "
                + "once with its app or with sqlite3, which rolls the transaction back, then import it")
    }

    /// Copies `source` to a new file `destination` (mode 0600) by reading it, and only ever opens
    /// the source for reading. `source` must be a regular file: a symbolic link to one is
    /// followed for the store itself (`required`), refused for its `-wal` and `-shm`.
    static func copyFile(from source: String, to destination: String, required: Bool) throws(CoreDataError) {
        var status = stat()
        if lstat(source, &status) == 0 {
            let kind = status.st_mode & S_IFMT
            if kind == S_IFLNK && !required {
                throw CoreDataError(
                    .unreadableStore,
                    "\(source) is a symbolic link: refused (Core Data never makes one beside a store)")
            }
            if stat(source, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
                throw CoreDataError(
                    .unreadableStore,
                    "\(source) is \(status.st_mode & S_IFMT == S_IFDIR ? "a directory" : "not a regular file"), "
                        + "not a store file")
            }
        }
        if access(source, F_OK) == 0 && access(source, R_OK) != 0 && errno == EACCES {
            throw CoreDataError(.permissionDenied, "\(source): this user may not read it", path: source)
        }
        guard let input = FileHandle(forReadingAtPath: source) else {
            var isDirectory: ObjCBool = false
            if !required && !FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory) {
                return
            }
            throw CoreDataError(.unreadableStore, "\(source) cannot be read (missing, or no permission)")
        }
        defer { try? input.close() }
        guard
            FileManager.default.createFile(
                atPath: destination, contents: nil, attributes: [.posixPermissions: 0o600]),
            let output = FileHandle(forWritingAtPath: destination)
        else {
            throw CoreDataError(.unreadableStore, "could not create the private copy \(destination)")
        }
        defer { try? output.close() }
        do {
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                try output.write(contentsOf: chunk)
            }
        } catch {
            throw CoreDataError(.unreadableStore, "copying \(source) to a private copy failed: \(error)")
        }
    }
}

/// An entity as `Z_PRIMARYKEY` lists it.
public struct CoreDataStoreEntity: Sendable, Equatable {
    /// The entity number (`Z_ENT`), which rows carry in their `Z_ENT` column.
    public var number: Int64
    /// The entity's name (`Z_NAME`).
    public var name: String
    /// The parent entity's number (`Z_SUPER`), or 0 for a root entity.
    public var parentNumber: Int64
    /// The highest primary key handed out (`Z_MAX`).
    public var maximumPrimaryKey: Int64

    /// An entity of your own.
    public init(number: Int64, name: String, parentNumber: Int64, maximumPrimaryKey: Int64) {
        self.number = number
        self.name = name
        self.parentNumber = parentNumber
        self.maximumPrimaryKey = maximumPrimaryKey
    }

    /// Whether this is one of SwiftData's persistent-history entities (`ACHANGE`,
    /// `ATRANSACTION`, `ATRANSACTIONSTRING`, numbered from 16000), which an importer skips.
    public var isPersistentHistory: Bool {
        number >= 16000 || ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"].contains(name.uppercased())
    }
}

/// What a store's `Z_METADATA` row says about it.
public struct CoreDataMetadata: Sendable, Equatable {
    /// `Z_VERSION`.
    public var version: Int64
    /// `Z_UUID`: the store's identifier.
    public var uuid: String?
    /// The whole metadata property list (`Z_PLIST`), for what the fields below leave out.
    public var values: [String: PropertyListValue]

    /// A metadata of your own.
    public init(version: Int64, uuid: String?, values: [String: PropertyListValue]) {
        self.version = version
        self.uuid = uuid
        self.values = values
    }

    /// `NSStoreType` (`SQLite` for every store this reader opens).
    public var storeType: String? { values["NSStoreType"]?.string }
    /// `NSStoreModelVersionHashes`: each entity's version hash, by entity name.
    public var versionHashes: [String: Data] {
        (values["NSStoreModelVersionHashes"]?.dictionary ?? [:]).compactMapValues(\.data)
    }
    /// `NSStoreModelVersionIdentifiers`.
    public var modelVersionIdentifiers: [String] {
        values["NSStoreModelVersionIdentifiers"]?.elements?.compactMap(\.string) ?? []
    }
    /// `NSPersistenceFrameworkVersion`: the Core Data build that wrote the metadata.
    public var frameworkVersion: Int64? { values["NSPersistenceFrameworkVersion"]?.integer }
}
