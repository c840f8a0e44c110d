import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The names the format fixes inside a package directory (spec: "Layout").
package enum PackageLayout {
    /// The manifest file.
    package static let manifest = "manifest.json"
    /// The SQLite store.
    package static let store = "store.sqlite"
    /// The directory of blob files.
    package static let blobsDirectory = "blobs"
    /// Temporaries of a writer in progress; anything here is garbage once no writer holds the lock.
    package static let tmpDirectory = "tmp"
    /// The writer lock file.
    package static let lockFile = "lock"
    /// The default package extension.
    package static let defaultExtension = "deck"

    /// SQLite's write-ahead log, its index, and its rollback journal, beside the store.
    static let storeCompanions = [store + "-wal", store + "-shm", store + "-journal"]

    /// Every name the format fixes in the package directory, and whether it is a directory.
    static let fixedNames: [(name: String, isDirectory: Bool)] =
        [(manifest, false), (store, false)] + storeCompanions.map { ($0, false) } + [
            (blobsDirectory, true), (tmpDirectory, true), (lockFile, false),
        ]

    /// Refuses a package in which any fixed name is a symbolic link: a package never contains
    /// links, and following one could read or delete files outside the package (spec: section
    /// 2.2, step 2).
    static func refuseLinks(packagePath: String) throws(DeckError) {
        for (name, _) in fixedNames {
            if let st = try FileSystem.status(packagePath + "/" + name), (st.st_mode & S_IFMT) == S_IFLNK {
                throw DeckError.notAPackage(
                    path: packagePath, reason: "'\(name)' is a symbolic link; a package never contains links")
            }
        }
    }

    /// Refuses a package in which a fixed name other than the manifest exists but is not of its
    /// kind: a FIFO or device where a file belongs would block whoever opens it (spec: section
    /// 2.2, step 4). The files are opened without blocking and checked again when opened.
    static func checkKinds(packagePath: String) throws(DeckError) {
        for (name, isDirectory) in fixedNames where name != manifest {
            let path = packagePath + "/" + name
            guard let st = try FileSystem.status(path) else { continue }
            let kind = st.st_mode & S_IFMT
            if isDirectory && kind != S_IFDIR {
                throw DeckError.corrupt(
                    path: path,
                    reason: "it is \(FileSystem.kindName(st.st_mode)), not a directory")
            }
            if !isDirectory && kind != S_IFREG {
                throw FileSystem.notRegular(path, st.st_mode)
            }
        }
    }

    /// True for a content type the format accepts: 1 to 255 printable ASCII characters, no spaces.
    package static func isValidContentType(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 255 && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    /// The format version this library writes (spec: section 12). It reads every version from
    /// ``oldestFormatVersion`` up to this one, and upgrades older packages when it opens them for
    /// writing (``FormatUpgrade``).
    package static let formatVersion = 6
    /// The oldest format version this library reads.
    package static let oldestFormatVersion = 1
    /// The `minimumReaderVersion` this library writes: a version 3 reader would read a version 4
    /// store's dates, counted from 2001, as seconds since 1970 (spec: section 12.7); a version 4
    /// reader reads a version 5 or 6 store, ignoring its version bookkeeping (sections 12.10 and
    /// 12.13).
    package static let minimumReaderVersion = 4
    /// The SQLite `application_id` of every Deck store: the ASCII bytes "DECK".
    package static let applicationID: Int32 = 0x4445_434B
    /// The manifest's `format` value.
    package static let formatIdentifier = "org.deck.package"
    /// The content type of packages made without one.
    package static let genericContentType = "org.deck.document"
}

/// The package's `manifest.json`: what a tool reads first to know what it holds.
public struct Manifest: Codable, Sendable, Equatable {
    /// Always `org.deck.package`.
    public var format: String
    /// The format version the package was written with.
    public var formatVersion: Int
    /// The oldest format version a reader must understand to read the package correctly.
    public var minimumReaderVersion: Int
    /// The document type, a reverse-DNS identifier chosen by the app (e.g. `org.deck.flashcards`).
    public var contentType: String
    /// What wrote the package, e.g. `deck 0.1.0` (informative only).
    public var generator: String?

    public init(contentType: String, generator: String? = "DeckKit \(DeckLibrary.version)") {
        self.format = PackageLayout.formatIdentifier
        self.formatVersion = PackageLayout.formatVersion
        self.minimumReaderVersion = PackageLayout.minimumReaderVersion
        self.contentType = contentType
        self.generator = generator
    }

    /// The manifest's size limit: 1 MiB.
    static let maximumSize = 1 << 20

    /// Reads and checks the manifest of the package at `packagePath`.
    package static func read(packagePath: String) throws(DeckError) -> Manifest {
        let path = packagePath + "/" + PackageLayout.manifest
        guard let st = try FileSystem.status(path) else {
            throw DeckError.notAPackage(path: packagePath, reason: "it has no \(PackageLayout.manifest)")
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw DeckError.notAPackage(
                path: packagePath,
                reason: "\(PackageLayout.manifest) is \(FileSystem.kindName(st.st_mode)), not a regular file")
        }
        guard st.st_size <= maximumSize else {
            throw DeckError.corrupt(
                path: packagePath, reason: "\(PackageLayout.manifest) is larger than 1 MiB")
        }
        // Opened without blocking and checked again: it may have been replaced since the lstat.
        let fd: Int32
        do {
            fd = try FileSystem.openRegular(path, O_RDONLY)
        } catch .corrupt(_, let reason) {
            throw DeckError.notAPackage(path: packagePath, reason: "\(PackageLayout.manifest): \(reason)")
        }
        defer { FileSystem.close(fd) }
        guard let data = try FileSystem.readAll(fd, path: path, limit: maximumSize) else {
            throw DeckError.corrupt(
                path: packagePath, reason: "\(PackageLayout.manifest) is larger than 1 MiB")
        }
        return try decode(data, packagePath: packagePath)
    }

    /// Decodes and checks manifest bytes (from a package directory or an archive entry), in the
    /// order of the spec's section 3.3: strict JSON and member types, `format`, the versions,
    /// what this reader supports, `contentType`.
    static func decode(_ data: Data, packagePath: String) throws(DeckError) -> Manifest {
        func invalid(_ reason: String) -> DeckError {
            .notAPackage(
                path: packagePath,
                reason: "\(PackageLayout.manifest) is not a valid Deck manifest (\(reason))")
        }
        let root: StrictJSON
        do {
            root = try StrictJSON.parse(data)
        } catch {
            throw invalid("\(error)")
        }
        guard case .object(let members) = root else {
            throw invalid("it is \(root.kindName), not a JSON object")
        }
        func member(_ name: String) -> StrictJSON? {
            members.first { $0.name.utf8.elementsEqual(name.utf8) }?.value
        }
        func string(_ name: String, optional: Bool = false) throws(DeckError) -> String? {
            switch member(name) {
            case .string(let text): return text
            case nil where optional, .null where optional: return nil
            case nil: throw invalid("missing member '\(name)'")
            case let other?: throw invalid("'\(name)' must be a string, not \(other.kindName)")
            }
        }
        func integer(_ name: String) throws(DeckError) -> Int {
            switch member(name) {
            case .number(let text):
                // Digits only (no fraction or exponent), within 64 bits.
                guard !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let value = Int(text)
                else {
                    throw invalid(
                        "'\(name)' must be an integer of at most 64 bits written without fraction or exponent, not \(text)"
                    )
                }
                return value
            case nil: throw invalid("missing member '\(name)'")
            case let other?: throw invalid("'\(name)' must be an integer, not \(other.kindName)")
            }
        }
        let format = try string("format") ?? ""
        let formatVersion = try integer("formatVersion")
        let minimumReaderVersion = try integer("minimumReaderVersion")
        let contentType = try string("contentType") ?? ""
        let generator = try string("generator", optional: true)
        var manifest = Manifest(contentType: contentType, generator: generator)
        manifest.format = format
        manifest.formatVersion = formatVersion
        manifest.minimumReaderVersion = minimumReaderVersion
        guard manifest.format == PackageLayout.formatIdentifier else {
            throw DeckError.notAPackage(
                path: packagePath,
                reason: "manifest format is '\(manifest.format)', not '\(PackageLayout.formatIdentifier)'")
        }
        guard manifest.formatVersion >= 1, manifest.minimumReaderVersion >= 1,
            manifest.minimumReaderVersion <= manifest.formatVersion
        else {
            throw DeckError.corrupt(
                path: packagePath,
                reason: "manifest versions are inconsistent (formatVersion \(manifest.formatVersion), "
                    + "minimumReaderVersion \(manifest.minimumReaderVersion))")
        }
        guard manifest.minimumReaderVersion <= PackageLayout.formatVersion else {
            throw DeckError.tooNew(
                path: packagePath, version: manifest.minimumReaderVersion,
                supported: PackageLayout.formatVersion)
        }
        guard PackageLayout.isValidContentType(manifest.contentType) else {
            throw DeckError.notAPackage(
                path: packagePath, reason: "the manifest's contentType is not a valid identifier")
        }
        return manifest
    }

    /// The canonical bytes: sorted keys, pretty-printed, trailing newline.
    func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Encoding a struct of strings and integers cannot fail.
        var data = (try? encoder.encode(self)) ?? Data()
        data.append(0x0A)
        return data
    }
}

/// A short description of a decoding error, naming the key path like `entities[0].attributes[2].type`.
func describe(_ error: any Error) -> String {
    func path(_ keys: [any CodingKey]) -> String {
        var text = ""
        for key in keys {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text.isEmpty ? "the top level" : "'\(text)'"
    }
    switch error {
    case DecodingError.keyNotFound(let key, let context):
        return "missing key \(path(context.codingPath + [key]))"
    case DecodingError.typeMismatch(let type, let context):
        return
            "wrong type at \(path(context.codingPath)): expected \(type == String.self ? "a string" : "\(type)")"
    case DecodingError.valueNotFound(_, let context):
        return "missing value at \(path(context.codingPath))"
    case DecodingError.dataCorrupted(let context):
        guard !context.codingPath.isEmpty else { return "not valid JSON" }
        let text = context.debugDescription
        if let range = text.range(of: "from invalid String value ") {
            let value = text[range.upperBound...]
            if context.codingPath.last?.stringValue == "type" {
                let names = AttributeType.allCases.map(\.rawValue).joined(separator: ", ")
                return "unknown type '\(value)' at \(path(context.codingPath)); expected one of: \(names)"
            }
            if context.codingPath.last?.stringValue == "deleteRule" {
                let names = DeleteRule.allCases.map(\.rawValue).joined(separator: ", ")
                return
                    "unknown delete rule '\(value)' at \(path(context.codingPath)); expected one of: \(names)"
            }
            return "invalid value '\(value)' at \(path(context.codingPath))"
        }
        return "\(text) at \(path(context.codingPath))"
    default:
        return String(describing: error)
    }
}

/// The library's version.
public enum DeckLibrary {
    /// The version of DeckKit (and of `deck`), written into new manifests as the generator.
    public static let version = "0.1.0"
}
