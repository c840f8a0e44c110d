import DeckArguments
import DeckKit
import DeckQueryLanguage
import Foundation

/// Helpers the commands share.
enum Support {
    static func url(_ path: String) -> URL { URL(fileURLWithPath: path) }

    /// Checks a `--type` / `--content-type` value (nil: none given) and gives it back.
    static func contentType(_ text: String?) throws -> String? {
        if let text, !PackageStore.isValidContentType(text) {
            throw UsageError(
                "invalid content type '\(text)': use 1 to 255 printable ASCII characters without spaces, "
                    + "such as org.example.notes")
        }
        return text
    }

    /// Whether `path` names a schema file (JSON, as `deck new --schema` takes) rather than a
    /// package or a package archive: a regular file whose name ends in `.json`, or whose first
    /// byte after white space (and a UTF-8 byte order mark) is `{`, which no archive format
    /// begins with.
    static func isSchemaFile(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue
        else { return false }
        if path.lowercased().hasSuffix(".json") { return true }
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 512)) ?? Data())
        let text = head.starts(with: [0xEF, 0xBB, 0xBF]) ? head.dropFirst(3) : head[...]
        return text.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) } == UInt8(ascii: "{")
    }

    /// Opens the package at `path`.
    static func openPackage(_ path: String, mode: PackageStore.Mode) throws -> PackageStore {
        try PackageStore.open(at: url(path), mode: mode)
    }

    /// The entity named `name` (an `<entity>` argument), checked against the schema.
    static func entity(named name: String, in schema: StoreSchema) throws -> StoreSchema.Entity {
        guard let entity = schema.entity(named: name) else {
            throw DeckError.unknownEntity(name, known: schema.entities.map(\.name))
        }
        return entity
    }

    /// The condition of `--where` (`text`), or nil (every record) when `--all` is given; one of
    /// them is required when `required` (updates and deletes must say what they touch).
    static func condition(_ text: String?, all: Bool, required: Bool) throws -> QueryExpression? {
        if let text {
            if required && all {
                throw UsageError("--where and --all cannot be combined")
            }
            do {
                return try QueryParser.parse(text)
            } catch {
                throw OptionSyntaxError(option: "--where", error: error)
            }
        }
        if required && !all {
            throw UsageError("say which records: --where EXPR, or --all for every record")
        }
        return nil
    }

    /// Parses `key=value` arguments (and the keys of `--null`) into record values by the schema.
    static func assignments(
        _ items: [String], nulls: [String], entity: StoreSchema.Entity, schema: StoreSchema
    ) throws -> [String: Value] {
        let (attributes, relationships) = schema.properties(of: entity.name)
        let names = attributes.map(\.name) + relationships.map(\.name)
        var values: [String: Value] = [:]
        func unknown(_ key: String) -> DeckError {
            .unknownProperty(entity: entity.name, name: key, known: names)
        }
        for item in items {
            guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                throw UsageError("'\(item)' is not key=value")
            }
            let key = String(item[..<equals])
            let text = String(item[item.index(after: equals)...])
            if let attribute = attributes.first(where: { $0.name == key }) {
                values[key] = try parse(text, for: attribute, entity: entity.name)
            } else if let relationship = relationships.first(where: { $0.name == key }) {
                values[key] = try parse(text, for: relationship, entity: entity.name)
            } else {
                throw unknown(key)
            }
        }
        for key in nulls {
            guard names.contains(key) else { throw unknown(key) }
            values[key] = .null
        }
        return values
    }

    static func parse(_ text: String, for attribute: StoreSchema.Attribute, entity: String) throws -> Value {
        if attribute.type == .data && text.hasPrefix("@") {
            let path = String(text.dropFirst())
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw DeckError.invalidValue(
                    entity: entity, property: attribute.name, reason: "cannot read file '\(path)'")
            }
            return .file(URL(fileURLWithPath: path))
        }
        if text == "null" && attribute.type != .string { return .null }
        do {
            let value = try Value(parsing: text, as: attribute.type)
            // A date is checked here and converted by the store, once, into the binary64 of its
            // own epoch (spec 7.4): the text goes on as it is.
            return attribute.type == .date ? .string(text) : value
        } catch {
            throw DeckError.invalidValue(entity: entity, property: attribute.name, reason: error.description)
        }
    }

    static func parse(_ text: String, for relationship: StoreSchema.Relationship, entity: String) throws
        -> Value
    {
        if text == "null" || text.isEmpty { return relationship.isToMany ? .references([]) : .null }
        var ids: [Int64] = []
        for part in text.split(separator: ",") {
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            guard let id = Int64(trimmed.hasPrefix("#") ? String(trimmed.dropFirst()) : trimmed) else {
                throw DeckError.invalidValue(
                    entity: entity, property: relationship.name,
                    reason: "'\(trimmed)' is not a record id such as #3")
            }
            ids.append(id)
        }
        if relationship.isToMany { return .references(ids) }
        guard ids.count == 1 else {
            throw DeckError.invalidValue(
                entity: entity, property: relationship.name, reason: "a to-one relationship takes one id")
        }
        return .reference(ids[0])
    }

    /// A value as `--json` prints it (see deck(1), "JSON output").
    static func json(_ value: Value) -> JSON {
        switch value {
        case .null: .null
        case .string(let s): .string(s)
        case .integer(let i): .int(i)
        case .double(let d): .double(d)
        case .bool(let b): .bool(b)
        case .date(let d): .string(d.description)
        case .data(let d): .string(d.base64EncodedString())
        case .uuid(let u): .string(u.uuidString.lowercased())
        case .url(let u): .string(u.absoluteString)
        case .decimal: .string(value.description)
        case .json(let text): .raw(text)
        case .blob(let r): .object([("blob", .string(r.digest.hexDigest)), ("size", .int(r.size))])
        case .file(let u): .string(u.path)
        case .reference(let id): .int(id)
        case .references(let ids): .array(ids.map { .int($0) })
        }
    }

    /// A value as CSV prints it: like text, but data in full (base64 inline, the digest of a blob).
    static func csv(_ value: Value) -> String {
        switch value {
        case .data(let d): d.base64EncodedString()
        case .blob(let r): r.digest.hexDigest
        case .reference(let id): String(id)
        default: text(value)
        }
    }

    /// A value as text output prints it.
    static func text(_ value: Value) -> String {
        switch value {
        case .null: ""
        case .data(let d): "<\(d.count) bytes>"
        case .blob(let r): "<\(r.size) bytes, blob \(r.digest.hexDigest.prefix(12))>"
        default: value.description
        }
    }

    static func bytes(_ count: Int64) -> String {
        let units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) bytes" : String(format: "%.1f %@", value, units[unit])
    }
}
