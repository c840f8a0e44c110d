import DeckSQLite
import Foundation

/// The SQL that creates a store for a schema (spec: "Mapping a schema to tables").
enum StoreDDL {
    /// The metadata tables every store has.
    static let metadata = """
        CREATE TABLE deck_meta(
            key TEXT PRIMARY KEY NOT NULL,
            value ANY
        ) STRICT, WITHOUT ROWID;
        CREATE TABLE deck_blob(
            digest TEXT PRIMARY KEY NOT NULL CHECK (length(digest) = 64 AND digest NOT GLOB '*[^0-9a-f]*'),
            size INTEGER NOT NULL CHECK (size >= 0),
            refs INTEGER NOT NULL DEFAULT 0 CHECK (refs >= 0)
        ) STRICT, WITHOUT ROWID;
        """

    /// The message of the writer connection's guard on `deck_blob.refs`: a decrement that would
    /// take a count below zero (the store counted fewer references than its cells hold) raises it
    /// with `SQLITE_CONSTRAINT_TRIGGER`, and the record layer compares it whole.
    static let referenceCountBelowZero = "deck:refs-below-zero"

    /// A `TEMP` trigger every writer connection makes when it opens: it lives in the connection,
    /// not in the store (old documents and new alike get it, and nothing on disk changes), and it
    /// fires before `deck_blob`'s `CHECK (refs >= 0)`, so a count taken below zero is told by
    /// its code and this fixed message rather than by the text of SQLite's CHECK message.
    static let connectionGuards = """
        CREATE TEMP TRIGGER IF NOT EXISTS "deck:refs-guard" BEFORE UPDATE OF refs ON main.deck_blob
        WHEN NEW.refs < 0 BEGIN
            SELECT RAISE(ABORT, '\(referenceCountBelowZero)');
        END
        """

    /// The columns every entity table begins with, in a store of `formatVersion` (spec: sections
    /// 6.1 and 6.10): from version 2 on, keys are never reused and every row has a global id.
    static func keyColumns(formatVersion: Int) -> [String] {
        formatVersion >= 2
            ? [
                "_pk INTEGER PRIMARY KEY AUTOINCREMENT",
                "_gid BLOB NOT NULL CHECK (length(_gid) = 16)",
                "_entity TEXT NOT NULL",
            ]
            : ["_pk INTEGER PRIMARY KEY", "_entity TEXT NOT NULL"]
    }

    /// The index and trigger of a version 2 entity table's global ids (spec: section 6.10):
    /// unique, and never changed once a row has one.
    static func globalIDStatements(table: String) -> [String] {
        [
            "CREATE UNIQUE INDEX \(quote(table + "._gid.unique")) ON \(quote(table))(_gid)",
            """
            CREATE TRIGGER \(quote("deck_gid:" + table + ":update")) BEFORE UPDATE OF _gid ON \(quote(table))
            WHEN NEW._gid IS NOT OLD._gid BEGIN
                SELECT RAISE(ABORT, 'a record''s global id (_gid) never changes');
            END
            """,
        ]
    }

    /// Every statement that creates the entity tables, join tables, indexes and triggers of a
    /// store of `formatVersion` (the current one unless a reader reads an older store).
    static func statements(for mapping: SchemaMapping, formatVersion: Int = PackageLayout.formatVersion)
        -> [String]
    {
        var statements: [String] = []
        for root in mapping.roots {
            statements += tableStatements(root, mapping: mapping, formatVersion: formatVersion).all
        }
        statements += joinTableStatements(mapping)
        return statements
    }

    /// What one entity table of a hierarchy is made of: the table, then its indexes and triggers.
    struct TableStatements {
        var table: String
        var indexes: [String] = []
        var triggers: [String] = []
        var all: [String] { [table] + indexes + triggers }
    }

    /// The statements of the table of hierarchy `root`: its `CREATE TABLE`, then (in the order
    /// they are created) its indexes and triggers.
    static func tableStatements(_ root: EntityMapping, mapping: SchemaMapping, formatVersion: Int)
        -> TableStatements
    {
        var statements: [String] = []
        var triggerStatements: [String] = []
        do {
            let tables = mapping.members
            let members = tables[root.table] ?? [root]
            var columns = keyColumns(formatVersion: formatVersion)
            var seen: Set<String> = []
            var externalColumns: [String] = []
            // NOT NULL only for what the root declares: other rows of the table lack the rest.
            let declaredByRoot = Set(root.entity.attributes.map(\.name))
            for member in members {
                for attribute in member.attributes where seen.insert(attribute.name).inserted {
                    let nullable = !declaredByRoot.contains(attribute.name) || attribute.isOptional
                    columns.append(columnDefinition(attribute, nullable: nullable))
                    if attribute.options.contains(.externalStorage) { externalColumns.append(attribute.name) }
                }
                for (relationship, storage) in member.relationships {
                    guard case .ownColumn(let column) = storage, seen.insert(column).inserted else {
                        continue
                    }
                    guard let destination = mapping.entities[relationship.destination] else { continue }
                    var definition = "\(quote(column)) INTEGER"
                    if mapping.foreignKeyColumns.contains(root.table + "." + column) {
                        definition +=
                            " REFERENCES \(quote(destination.table))(_pk) DEFERRABLE INITIALLY DEFERRED"
                    }
                    columns.append(definition)
                }
            }
            statements.append(
                "CREATE TABLE \(quote(root.table))(\n    " + columns.joined(separator: ",\n    ")
                    + "\n) STRICT")
            if formatVersion >= 2 {
                let gid = globalIDStatements(table: root.table)
                statements.append(gid[0])
                triggerStatements.append(gid[1])
            }
            if members.count > 1 {
                // Only a hierarchy needs to find rows by their entity.
                statements.append(
                    "CREATE INDEX \(quote(root.table + "._entity")) ON \(quote(root.table))(_entity)")
            }
            for column in externalColumns { triggerStatements += triggers(table: root.table, column: column) }
            // Each index once: every entity that inherits a relationship would repeat its index.
            var indexed: Set<String> = []
            func add(_ index: (name: String, sql: String)) {
                if indexed.insert(index.name).inserted { statements.append(index.sql) }
            }
            for member in members {
                for attribute in member.entity.attributes {
                    if attribute.options.contains(.unique) {
                        add(uniqueIndex(member, columns: [attribute.name]))
                    } else if attribute.options.contains(.indexed) {
                        add(index(table: root.table, columns: [attribute.name], unique: false))
                    }
                }
                for group in member.entity.uniqueConstraints {
                    add(uniqueIndex(member, columns: group))
                }
                for group in member.entity.indexes {
                    add(index(table: root.table, columns: group, unique: false))
                }
                for (relationship, storage) in member.relationships {
                    if case .ownColumn(let column) = storage, !relationship.isToMany {
                        add(index(table: root.table, columns: [column], unique: false))
                    }
                }
            }
        }
        let table = statements.removeFirst()
        return TableStatements(table: table, indexes: statements, triggers: triggerStatements)
    }

    /// The join tables of stored to-many links, once per pair, with their indexes.
    static func joinTableStatements(_ mapping: SchemaMapping) -> [String] {
        mapping.joinTables.flatMap { joinTableStatements($0.table, source: $0.source, target: $0.target) }
    }

    /// The statements of join table `table` between entity tables `source` and `target`.
    static func joinTableStatements(_ table: String, source: String, target: String) -> [String] {
        [
            """
            CREATE TABLE \(quote(table))(
                source INTEGER NOT NULL REFERENCES \(quote(source))(_pk) ON DELETE CASCADE,
                target INTEGER NOT NULL REFERENCES \(quote(target))(_pk) ON DELETE CASCADE,
                PRIMARY KEY (source, target)
            ) STRICT, WITHOUT ROWID
            """,
            "CREATE INDEX \(quote(table + ".target")) ON \(quote(table))(target, source)",
        ]
    }

    private static func columnDefinition(_ attribute: Attribute, nullable: Bool) -> String {
        let name = quote(attribute.name)
        if attribute.options.contains(.externalStorage) {
            // BLOB: the bytes inline. TEXT: the SHA-256 digest of a blob file.
            var definition =
                "\(name) ANY CHECK (typeof(\(name)) IN ('blob', 'null') OR "
                + "(typeof(\(name)) = 'text' AND length(\(name)) = 64))"
            if !nullable { definition += " NOT NULL" }
            return definition
        }
        var definition = "\(name) \(attribute.type.columnType)"
        if !nullable { definition += " NOT NULL" }
        if attribute.type == .bool { definition += " CHECK (\(name) IN (0, 1))" }
        return definition
    }

    /// A unique constraint: on the whole table for a root entity; for a subentity, a partial
    /// index over its own family's rows, so siblings sharing the column are not constrained.
    private static func uniqueIndex(_ member: EntityMapping, columns: [String]) -> (name: String, sql: String)
    {
        let name = member.name + "." + columns.joined(separator: "+") + ".unique"
        var sql =
            "CREATE UNIQUE INDEX IF NOT EXISTS \(quote(name)) ON \(quote(member.table))("
            + columns.map(quote).joined(separator: ", ") + ")"
        if member.entity.superentity != nil {
            // Entity names are validated identifiers, safe as literals.
            sql += " WHERE _entity IN (" + member.family.map { "'\($0)'" }.joined(separator: ", ") + ")"
        }
        return (name, sql)
    }

    private static func index(table: String, columns: [String], unique: Bool) -> (name: String, sql: String) {
        let name = table + "." + columns.joined(separator: "+") + (unique ? ".unique" : ".index")
        let sql =
            "CREATE \(unique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(quote(name)) ON \(quote(table))("
            + columns.map(quote).joined(separator: ", ") + ")"
        return (name, sql)
    }

    /// Triggers that keep `deck_blob.refs` equal to the number of cells naming each blob.
    private static func triggers(table: String, column: String) -> [String] {
        let t = quote(table)
        let c = quote(column)
        let prefix = "deck_refs:" + table + "." + column
        return [
            """
            CREATE TRIGGER \(quote(prefix + ":insert")) AFTER INSERT ON \(t)
            WHEN typeof(NEW.\(c)) = 'text' BEGIN
                UPDATE deck_blob SET refs = refs + 1 WHERE digest = NEW.\(c);
            END
            """,
            """
            CREATE TRIGGER \(quote(prefix + ":delete")) AFTER DELETE ON \(t)
            WHEN typeof(OLD.\(c)) = 'text' BEGIN
                UPDATE deck_blob SET refs = refs - 1 WHERE digest = OLD.\(c);
            END
            """,
            """
            CREATE TRIGGER \(quote(prefix + ":update")) AFTER UPDATE OF \(c) ON \(t) BEGIN
                UPDATE deck_blob SET refs = refs - 1 WHERE typeof(OLD.\(c)) = 'text' AND digest = OLD.\(c);
                UPDATE deck_blob SET refs = refs + 1 WHERE typeof(NEW.\(c)) = 'text' AND digest = NEW.\(c);
            END
            """,
        ]
    }
}

extension Value {
    /// Encodes an attribute value for its column (spec 7.1): the canonical stored form, or an
    /// error for a value the type cannot hold (NaN, infinities, dates outside 0000–9999, decimals
    /// beyond their limits, invalid JSON, relative URLs). External data is handled by the caller;
    /// here `.data` is always inline.
    func sqlValue(for attribute: Attribute, epoch: DateEpoch) throws(ValueError) -> SQLValue {
        try sqlValue(for: attribute.type, isOptional: attribute.isOptional, epoch: epoch)
    }

    /// The SQL value that stores this value in a column of attribute type `type` (which may
    /// hold null when `isOptional`): the attribute's two properties that decide it, taken apart so
    /// that a caller on an insert's path copies no attribute. A date is stored as seconds since
    /// `epoch`, the document's (spec 4.2, 7.1): the number itself when it counts from that epoch,
    /// else the binary64 nearest to the instant; a number given for a date is seconds since 1970.
    func sqlValue(for type: AttributeType, isOptional: Bool, epoch: DateEpoch) throws(ValueError) -> SQLValue
    {
        func mismatch() -> ValueError {
            ValueError(
                text: description, type: type,
                expected: "\(type.article) \(type.rawValue) value, not \(kindName)")
        }
        func refuse(_ text: String, _ expected: String) -> ValueError {
            ValueError(text: text, type: type, expected: expected)
        }
        func finite(_ v: Double) throws(ValueError) -> SQLValue {
            // NaN would read back as null, and JSON has no infinities. -0.0 is stored as 0.0:
            // SQLite may keep an integral REAL as an integer, which has no sign.
            guard v.isFinite else { throw refuse(String(v), "a finite number") }
            return .real(v == 0 ? 0 : v)
        }
        func date(_ given: Timestamp) throws(ValueError) -> SQLValue {
            let timestamp = Timestamp(seconds: given.seconds(in: epoch), epoch: epoch)
            if let problem = timestamp.rangeProblem {
                throw refuse(
                    given.description,
                    "a date from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z (this one is \(problem))")
            }
            return .real(timestamp.seconds)
        }
        switch (self, type) {
        case (.null, _): return .null
        case (.string(let v), .string): return .text(v)
        case (.integer(let v), .integer): return .integer(v)
        case (.integer(let v), .double): return .real(Double(v))
        case (.double(let v), .double): return try finite(v)
        case (.bool(let v), .bool): return .integer(v ? 1 : 0)
        case (.date(let v), .date): return try date(v)
        case (.data(let v), .data): return .blob(v)
        case (.uuid(let v), .uuid): return .text(v.uuidString.lowercased())
        case (.url(let v), .url):
            let text = v.absoluteString
            guard v.scheme != nil, ValueSyntax.isURI(text) else {
                throw refuse(text, "an absolute URL (RFC 3986) with a scheme")
            }
            return .text(text)
        case (.decimal(let v), .decimal):
            guard let number = DecimalNumber(v) else {
                throw refuse(v.description, "a decimal number, not NaN")
            }
            if let problem = number.decimalLimitViolation {
                throw refuse(v.description, "a decimal with \(problem)")
            }
            return .text(number.plainText)
        case (.integer(let v), .decimal): return .text(String(v))
        case (.double(let v), .decimal):
            // The shortest decimal that converts back to the double: 0.1 as 0.1, 1e20 in full.
            guard let number = DecimalNumber(shortest: v) else { throw refuse(String(v), "a finite number") }
            if let problem = number.decimalLimitViolation {
                throw refuse(String(v), "a decimal with \(problem)")
            }
            return .text(number.plainText)
        case (.integer(let v), .date): return try date(Timestamp(timeIntervalSince1970: Double(v)))
        case (.double(let v), .date): return try date(Timestamp(timeIntervalSince1970: v))
        case (.double(let v), .integer) where v == v.rounded() && abs(v) < 9.2e18: return .integer(Int64(v))
        case (.json(let v), .json):
            // A document that is not JSON is refused, not stored; JSON null is no value.
            do {
                try JSONText.validate(v)
            } catch {
                throw refuse(v, "one JSON value (\(error))")
            }
            if JSONText.isNull(v) {
                guard isOptional else {
                    throw refuse(
                        v,
                        "a JSON value other than null (JSON null is stored as no value, and the attribute is not optional)"
                    )
                }
                return .null
            }
            return .text(v)
        case (.string(let v), _) where type != .data:
            return try Value(parsing: v, as: type, epoch: epoch).sqlValue(
                for: type, isOptional: isOptional, epoch: epoch)
        default: throw mismatch()
        }
    }

    /// Decodes a column value of `attribute` (inline values; external ones are `.blob`). A cell
    /// that breaks its type's encoding (spec 7.1) reads as the case of its storage class, holding
    /// the cell as it is.
    /// A date cell is seconds since `epoch`, the document's (spec 4.2, 7.1).
    init(sql: SQLValue, attribute: Attribute, epoch: DateEpoch, blobSize: (Digest) -> Int64) {
        self.init(sql: sql, type: attribute.type, epoch: epoch, blobSize: blobSize)
    }

    init(sql: SQLValue, type: AttributeType, epoch: DateEpoch, blobSize: (Digest) -> Int64) {
        switch (sql, type) {
        case (.null, _): self = .null
        case (.text(let v), .string): self = .string(v)
        case (.integer(let v), .integer): self = .integer(v)
        case (.real(let v), .double): self = .double(v == 0 ? 0 : v)
        case (.integer(let v), .double): self = .double(Double(v))
        case (.integer(let v), .bool) where v == 0 || v == 1: self = .bool(v == 1)
        // A number outside the range, infinities included, is a legacy date (spec 7.7), read
        // exactly. (SQLite stores no NaN.)
        case (.real(let v), .date) where !v.isNaN:
            self = .date(Timestamp(seconds: v, epoch: epoch))
        case (.integer(let v), .date): self = .date(Timestamp(seconds: Double(v), epoch: epoch))
        case (.blob(let v), .data): self = .data(v)
        case (.text(let v), .data):
            if let digest = Digest(hex: v) {
                self = .blob(BlobReference(digest: digest, size: blobSize(digest)))
            } else {
                self = .string(v)
            }
        case (.text(let v), .uuid):
            self =
                ValueSyntax.isCanonicalUUID(v)
                ? UUID(uuidString: v).map(Value.uuid) ?? .string(v) : .string(v)
        case (.text(let v), .url): self = Value.storedURL(v).map(Value.url) ?? .string(v)
        case (.text(let v), .decimal):
            self = (Value.storedDecimal(v) ?? Value.legacyDecimal(v)).map(Value.decimal) ?? .string(v)
        case (.text(let v), .json):
            // The text null is no value (Deck before spec 7.5 stored it so); a legacy text (spec
            // 7.7) is JSON as it is.
            if JSONText.isValid(v) {
                self = JSONText.isNull(v) ? .null : .json(v)
            } else {
                self = JSONText.isLegacy(v) ? .json(v) : .string(v)
            }
        case (.integer(let v), _): self = .integer(v)
        case (.real(let v), _): self = .double(v)
        case (.text(let v), _): self = .string(v)
        case (.blob(let v), _): self = .data(v)
        }
    }

    /// A stored URL: RFC 3986 text that Foundation represents exactly.
    static func storedURL(_ text: String) -> URL? {
        guard ValueSyntax.isURI(text), let url = URL(string: text, encodingInvalidCharacters: false),
            url.absoluteString == text
        else { return nil }
        return url
    }

    /// A legacy decimal (spec 7.7): canonical plain notation, 39 digits that Foundation's
    /// `Decimal` holds.
    static func legacyDecimal(_ text: String) -> Decimal? {
        guard let number = DecimalNumber(text), number.plainText == text else { return nil }
        return number.legacyDecimal
    }

    /// The legacy value (spec 7.7) a cell of an attribute holds, described for messages ("the
    /// date +infinity", "a decimal of 39 significant digits", ...); nil when the cell is none.
    /// Dates count from `epoch`, the store's (spec 4.2).
    static func legacyValue(_ cell: SQLValue, type: AttributeType, isOptional: Bool, epoch: DateEpoch)
        -> String?
    {
        switch (type, cell) {
        case (.date, .real(let v)) where !v.isNaN:
            let timestamp = Timestamp(seconds: v, epoch: epoch)
            return timestamp.isStorable
                ? nil
                : v.isFinite
                    ? "the date \(v.description) seconds, outside the years 0000 to 9999"
                    : "the date \(v > 0 ? "+" : "-")infinity"
        case (.date, .integer(let v)):
            return Timestamp(seconds: Double(v), epoch: epoch).isStorable
                ? nil : "the date \(v) seconds, outside the years 0000 to 9999"
        case (.decimal, .text(let v)):
            return legacyDecimal(v) == nil ? nil : "a decimal of 39 significant digits"
        case (.json, .text(let v)):
            if JSONText.isLegacy(v) {
                return "JSON with a member name twice or a lone surrogate escape"
            }
            return !isOptional && JSONText.isNull(v) ? "the JSON text null in a required attribute" : nil
        default: return nil
        }
    }

    /// A stored decimal: canonical plain notation within the limits.
    static func storedDecimal(_ text: String) -> Decimal? {
        guard let number = DecimalNumber(text), number.plainText == text else { return nil }
        return number.decimal
    }
}
