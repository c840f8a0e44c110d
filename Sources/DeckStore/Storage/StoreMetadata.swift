import DeckSQLite
import Foundation

/// The rows of a store's `deck_meta` and the rules each must follow (spec: section 4.2). Readers
/// refuse a store whose `format_version`, `content_type`, `schema` or `schema_version` is
/// missing, of another SQL type or wrong; `created` and `modified` are informative, so readers
/// accept any value there and only the verifier reports one that is not a time stamp.
struct StoreMetadata {
    /// Every row, by key (keys that are not text are ignored, as unknown keys are).
    let values: [String: SQLValue]

    /// Reads every row. A store whose `deck_meta` cannot be read is corrupt; a read that fails
    /// (an I/O error, a full disk, no memory) is that failure, not damage.
    static func read(_ db: Database, packagePath: String) throws(DeckError) -> StoreMetadata {
        do {
            var values: [String: SQLValue] = [:]
            for row in try db.rows("SELECT key, value FROM deck_meta") {
                if let key = row[0].string { values[key] = row[1] }
            }
            return StoreMetadata(values: values)
        } catch let error where error.isBusy {
            throw DeckError.locked(path: packagePath, pid: WriterLock.holder(packagePath: packagePath))
        } catch let error where [.ioError, .full, .noMemory].contains(error.code.primary) {
            throw DeckError.sqlite(error)
        } catch {
            throw DeckError.corrupt(
                path: packagePath, reason: "the store's deck_meta table cannot be read (\(error.message))")
        }
    }

    /// How a value reads in a message: its SQL type and, for short ones, the value.
    static func describeValue(_ value: SQLValue) -> String {
        switch value {
        case .null: "NULL"
        case .integer(let v): "the integer \(v)"
        case .real(let v): "the real \(v)"
        case .text(let v): "the text '\(v.count > 40 ? v.prefix(40) + "…" : v)'"
        case .blob(let v): "a blob of \(v.count) bytes"
        }
    }

    /// A required text value, or why it is not one.
    private func text(_ key: String) -> Result<String, Problem> {
        switch values[key] {
        case .text(let v): .success(v)
        case nil: .failure(Problem("deck_meta holds no '\(key)'"))
        case let other?: .failure(Problem("deck_meta's '\(key)' is \(Self.describeValue(other)), not text"))
        }
    }

    struct Problem: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    /// `format_version`: an INTEGER equal to `user_version`.
    func formatVersionProblem(userVersion: Int) -> String? {
        switch values["format_version"] {
        case .integer(let v) where v == Int64(userVersion): nil
        case .integer(let v):
            "deck_meta's 'format_version' is \(v), but the store's user_version is \(userVersion)"
        case nil: "deck_meta holds no 'format_version'"
        case let other?: "deck_meta's 'format_version' is \(Self.describeValue(other)), not an integer"
        }
    }

    /// `content_type`: TEXT equal to the manifest's `contentType`.
    func contentTypeProblem(manifest: Manifest) -> String? {
        switch text("content_type") {
        case .success(let v) where v.utf8.elementsEqual(manifest.contentType.utf8): nil
        case .success(let v):
            "the store's content type '\(v)' differs from the manifest's '\(manifest.contentType)'"
        case .failure(let problem): problem.message
        }
    }

    /// `schema`: TEXT holding a schema document that decodes.
    func schema(packagePath: String) throws(DeckError) -> StoreSchema {
        let text: String
        switch self.text("schema") {
        case .success(let v): text = v
        case .failure(let problem): throw DeckError.corrupt(path: packagePath, reason: problem.message)
        }
        do {
            return try JSONDecoder().decode(StoreSchema.self, from: Data(text.utf8))
        } catch {
            throw DeckError.corrupt(
                path: packagePath, reason: "the stored schema is unreadable (\(describe(error)))")
        }
    }

    /// `schema_version`: TEXT equal to the schema's `version`.
    func schemaVersionProblem(_ schema: StoreSchema) -> String? {
        switch text("schema_version") {
        case .success(let v) where v.utf8.elementsEqual(schema.version.utf8): nil
        case .success(let v):
            "deck_meta's 'schema_version' is '\(v)', but the stored schema's version is '\(schema.version)'"
        case .failure(let problem): problem.message
        }
    }

    /// `created` and `modified`: TEXT of the form `YYYY-MM-DDTHH:MM:SS.sssZ`, a real UTC time.
    func timestampProblem(_ key: String) -> String? {
        switch text(key) {
        case .success(let v):
            Self.isTimestamp(v)
                ? nil : "deck_meta's '\(key)' is '\(v)', not a time of the form YYYY-MM-DDTHH:MM:SS.sssZ"
        case .failure(let problem): problem.message
        }
    }

    /// `date_epoch` (spec: section 4.2): in a store of version 4 or later, the INTEGER 978307200
    /// (dates count from 2001-01-01) or 0 (from 1970-01-01); a store of an older version counts
    /// from 1970. Nil when it is right.
    func dateEpochProblem(formatVersion: Int) -> String? {
        guard formatVersion >= 4 else { return nil }
        switch values["date_epoch"] {
        case .integer(let v) where DateEpoch(rawValue: v) != nil: return nil
        case nil: return "deck_meta holds no 'date_epoch'"
        case let other?:
            return "deck_meta's 'date_epoch' is \(Self.describeValue(other)), not the integer "
                + "\(DateEpoch.reference.rawValue) (dates counted from 2001) or 0 (from 1970)"
        }
    }

    /// The instant the store's dates count from. Readers refuse a version 4 store whose
    /// `date_epoch` is missing or wrong as corrupt: they could not read a date right.
    func dateEpoch(formatVersion: Int, packagePath: String) throws(DeckError) -> DateEpoch {
        guard formatVersion >= 4 else { return .unix }
        if let problem = dateEpochProblem(formatVersion: formatVersion) {
            throw DeckError.corrupt(path: packagePath, reason: problem)
        }
        guard case .integer(let v) = values["date_epoch"], let epoch = DateEpoch(rawValue: v) else {
            return .unix
        }
        return epoch
    }

    /// A new document id (spec: section 6.10): a random (version 4) UUID in the canonical text
    /// form of section 7.1.
    static func newDocumentID() -> String { UUID().uuidString.lowercased() }

    /// `document_id` when it is TEXT in the canonical UUID form, else nil.
    var documentID: UUID? {
        guard case .text(let v) = values["document_id"], ValueSyntax.isCanonicalUUID(v) else { return nil }
        return UUID(uuidString: v)
    }

    /// `document_id`: in a store of version 2 or later, TEXT holding a UUID in canonical form
    /// (36 characters, lowercase). A version 1 store has none.
    func documentIDProblem(formatVersion: Int) -> String? {
        guard formatVersion >= 2 else { return nil }
        switch text("document_id") {
        case .success(let v):
            return ValueSyntax.isCanonicalUUID(v)
                ? nil : "deck_meta's 'document_id' is '\(v)', not a UUID in canonical (lowercase) form"
        case .failure(let problem): return problem.message
        }
    }

    /// True for `YYYY-MM-DDTHH:MM:SS.sssZ` naming a real time: month 01–12, a day that month has
    /// (in the proleptic Gregorian calendar), hour 00–23, minute and second 00–59.
    static func isTimestamp(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 24 else { return false }
        let pattern = Array("dddd-dd-ddTdd:dd:dd.dddZ".utf8)
        for (byte, shape) in zip(bytes, pattern) {
            if shape == UInt8(ascii: "d") {
                guard (0x30...0x39).contains(byte) else { return false }
            } else if byte != shape {
                return false
            }
        }
        func number(_ range: Range<Int>) -> Int {
            bytes[range].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        }
        let year = number(0..<4)
        let month = number(5..<7)
        let day = number(8..<10)
        guard (1...12).contains(month), number(11..<13) < 24, number(14..<16) < 60, number(17..<19) < 60
        else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return (1...days).contains(day)
    }
}
