import Foundation

/// Quotes an SQL identifier.
func quote(_ identifier: String) -> String {
    "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

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

    /// Every statement that creates the entity tables, join tables, indexes and triggers.
    static func statements(for mapping: SchemaMapping) -> [String] {
        var statements: [String] = []
        let tables = mapping.members
        for root in mapping.roots {
            let members = tables[root.table] ?? [root]
            var columns = ["_pk INTEGER PRIMARY KEY", "_entity TEXT NOT NULL"]
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
            if members.count > 1 {
                // Only a hierarchy needs to find rows by their entity.
                statements.append(
                    "CREATE INDEX \(quote(root.table + "._entity")) ON \(quote(root.table))(_entity)")
            }
            for column in externalColumns { statements += triggers(table: root.table, column: column) }
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
        // Join tables, once per pair.
        var joins: Set<String> = []
        for name in mapping.entityNames {
            guard let entity = mapping.entities[name] else { continue }
            for (relationship, storage) in entity.relationships {
                guard case .joinTable(let table, let near, _) = storage, joins.insert(table).inserted,
                    let destination = mapping.entities[relationship.destination]
                else { continue }
                let sourceTable = near == "source" ? entity.table : destination.table
                let targetTable = near == "source" ? destination.table : entity.table
                statements.append(
                    """
                    CREATE TABLE \(quote(table))(
                        source INTEGER NOT NULL REFERENCES \(quote(sourceTable))(_pk) ON DELETE CASCADE,
                        target INTEGER NOT NULL REFERENCES \(quote(targetTable))(_pk) ON DELETE CASCADE,
                        PRIMARY KEY (source, target)
                    ) STRICT, WITHOUT ROWID
                    """)
                statements.append(
                    "CREATE INDEX \(quote(table + ".target")) ON \(quote(table))(target, source)")
            }
        }
        return statements
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
    /// Encodes an attribute value for its column (spec: "Values"). External data is handled by
    /// the caller; here `.data` is always inline.
    func sqlValue(for attribute: Attribute) throws(ValueError) -> SQLValue {
        func mismatch() -> ValueError {
            let article = "aeiou".contains(attribute.type.rawValue.prefix(1)) ? "an" : "a"
            return ValueError(
                text: description, type: attribute.type,
                expected: "\(article) \(attribute.type.rawValue) value, not \(kindName)")
        }
        switch (self, attribute.type) {
        case (.null, _): return .null
        case (.string(let v), .string): return .text(v)
        case (.integer(let v), .integer): return .integer(v)
        case (.integer(let v), .double): return .real(Double(v))
        case (.double(let v), .double):
            guard v.isFinite else {
                // NaN would read back as null, and JSON has no infinities.
                throw ValueError(text: String(v), type: attribute.type, expected: "a finite number")
            }
            return .real(v)
        case (.bool(let v), .bool): return .integer(v ? 1 : 0)
        case (.date(let v), .date): return .real(v.timeIntervalSince1970)
        case (.data(let v), .data): return .blob(v)
        case (.uuid(let v), .uuid): return .text(v.uuidString.lowercased())
        case (.url(let v), .url):
            guard v.scheme != nil else {
                throw ValueError(text: v.relativeString, type: .url, expected: "an absolute URL")
            }
            return .text(v.absoluteString)
        case (.decimal(let v), .decimal): return .text(v.description)
        case (.integer(let v), .decimal): return .text(String(v))
        case (.double(let v), .decimal) where v.isFinite:
            // Plain notation: 1e20 as 100000000000000000000, 5.0 as 5.
            return .text(
                Decimal(string: String(v), locale: Locale(identifier: "en_US_POSIX"))?.description
                    ?? String(v))
        case (.integer(let v), .date): return .real(Double(v))
        case (.double(let v), .date) where v.isFinite: return .real(v)
        case (.double(let v), .integer) where v == v.rounded() && abs(v) < 9.2e18: return .integer(Int64(v))
        case (.json(let v), .json):
            // A document that is not JSON is refused, not stored.
            _ = try Value(parsing: v, as: .json)
            return .text(v)
        case (.string(let v), _) where attribute.type != .data:
            return try Value(parsing: v, as: attribute.type).sqlValue(for: attribute)
        default: throw mismatch()
        }
    }

    /// Decodes a column value of `attribute` (inline values; external ones are `.blob`).
    init(sql: SQLValue, attribute: Attribute, blobSize: (Digest) -> Int64) {
        switch (sql, attribute.type) {
        case (.null, _): self = .null
        case (.text(let v), .string): self = .string(v)
        case (.integer(let v), .integer): self = .integer(v)
        case (.real(let v), .double): self = .double(v)
        case (.integer(let v), .double): self = .double(Double(v))
        case (.integer(let v), .bool): self = .bool(v != 0)
        case (.real(let v), .date): self = .date(Date(timeIntervalSince1970: v))
        case (.integer(let v), .date): self = .date(Date(timeIntervalSince1970: Double(v)))
        case (.blob(let v), .data): self = .data(v)
        case (.text(let v), .data):
            if let digest = Digest(hex: v) {
                self = .blob(BlobReference(digest: digest, size: blobSize(digest)))
            } else {
                self = .string(v)
            }
        case (.text(let v), .uuid): self = UUID(uuidString: v).map(Value.uuid) ?? .string(v)
        case (.text(let v), .url): self = URL(string: v).map(Value.url) ?? .string(v)
        case (.text(let v), .decimal):
            self =
                Decimal(string: v, locale: Locale(identifier: "en_US_POSIX")).map(Value.decimal) ?? .string(v)
        case (.text(let v), .json): self = .json(v)
        case (.integer(let v), _): self = .integer(v)
        case (.real(let v), _): self = .double(v)
        case (.text(let v), _): self = .string(v)
        case (.blob(let v), _): self = .data(v)
        }
    }
}
