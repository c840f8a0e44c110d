import DeckSQLite
import Foundation

/// One migration a document went through (spec: section 4.4): a row of `deck_migration`.
public struct MigrationRecord: Sendable, Equatable {
    /// The row's place in the history, from 1.
    public var sequence: Int64
    /// The schema version and fingerprint before the migration.
    public var fromVersion: String
    public var fromFingerprint: String
    /// The schema version and fingerprint after it.
    public var toVersion: String
    public var toFingerprint: String
    /// When it committed, `YYYY-MM-DDTHH:MM:SS.sssZ`.
    public var applied: String
    /// The custom stage it ran, nil for a lightweight migration.
    public var stage: String?
    /// Whether it raised the compatibility floor to ``toVersion``.
    public var isBreaking: Bool

    public init(
        sequence: Int64, fromVersion: String, fromFingerprint: String, toVersion: String,
        toFingerprint: String,
        applied: String, stage: String?, isBreaking: Bool
    ) {
        self.sequence = sequence
        self.fromVersion = fromVersion
        self.fromFingerprint = fromFingerprint
        self.toVersion = toVersion
        self.toFingerprint = toFingerprint
        self.applied = applied
        self.stage = stage
        self.isBreaking = isBreaking
    }
}

/// The schema-evolution bookkeeping of a version 3 store (spec: sections 4.2 and 4.4): the
/// `schema_fingerprint` and `schema_floor` keys of `deck_meta` and the `deck_migration` table.
enum SchemaBookkeeping {
    /// The compatibility floor of a version 3 store as readers take it (spec 4.2, 19): the
    /// stored `schema_floor` when it is text not above the schema's version, else the schema's
    /// version; raised to the target of every breaking migration of the history (a floor lowered
    /// by hand does not count).
    static func effectiveFloor(stored: SQLValue?, version: String, history: [MigrationRecord]) -> String {
        var floor = version
        if case .text(let text) = stored, StoreSchema.compareVersions(text, version) != .orderedDescending {
            floor = text
        }
        for migration in history
        where migration.isBreaking
            && StoreSchema.compareVersions(migration.toVersion, floor) == .orderedDescending
        {
            floor = migration.toVersion
        }
        return floor
    }

    /// The history table (spec: section 4.4).
    static let historyTable = """
        CREATE TABLE deck_migration(
            sequence INTEGER PRIMARY KEY NOT NULL CHECK (sequence >= 1),
            from_version TEXT NOT NULL,
            from_fingerprint TEXT NOT NULL,
            to_version TEXT NOT NULL,
            to_fingerprint TEXT NOT NULL,
            applied TEXT NOT NULL,
            stage TEXT,
            breaking INTEGER NOT NULL CHECK (breaking IN (0, 1))
        ) STRICT
        """

    /// The `deck_meta` rows a version 3 store adds for `schema` (its floor starts at its version).
    static func metadataRows(for schema: StoreSchema) -> [(String, SQLValue)] {
        [("schema_fingerprint", .text(schema.fingerprint)), ("schema_floor", .text(schema.version))]
    }

    /// Every row of the history, in order; rows that do not read as the spec says are skipped
    /// (the verifier reports them).
    static func history(_ db: Database) throws -> [MigrationRecord] {
        try db.rows(
            "SELECT sequence, from_version, from_fingerprint, to_version, to_fingerprint, applied, stage, breaking "
                + "FROM deck_migration ORDER BY sequence"
        ).compactMap { row in
            guard case .integer(let sequence) = row[0], let fromVersion = row[1].string,
                let fromFingerprint = row[2].string, let toVersion = row[3].string,
                let toFingerprint = row[4].string, let applied = row[5].string,
                case .integer(let breaking) = row[7]
            else { return nil }
            return MigrationRecord(
                sequence: sequence, fromVersion: fromVersion, fromFingerprint: fromFingerprint,
                toVersion: toVersion,
                toFingerprint: toFingerprint, applied: applied, stage: row[6].string,
                isBreaking: breaking == 1)
        }
    }

    /// Appends `record` (its sequence is the next one) inside the caller's transaction.
    static func append(_ record: MigrationRecord, _ db: Database) throws {
        try db.run(
            "INSERT INTO deck_migration(sequence, from_version, from_fingerprint, to_version, to_fingerprint, "
                + "applied, stage, breaking) VALUES ((SELECT coalesce(max(sequence), 0) + 1 FROM deck_migration), "
                + "?, ?, ?, ?, ?, ?, ?)",
            [
                .text(record.fromVersion), .text(record.fromFingerprint), .text(record.toVersion),
                .text(record.toFingerprint), .text(record.applied), record.stage.map { .text($0) } ?? .null,
                .integer(record.isBreaking ? 1 : 0),
            ])
    }

    /// True for 64 lowercase hex digits.
    static func isFingerprint(_ text: String) -> Bool {
        text.utf8.count == 64
            && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// What the verifier reports of the bookkeeping of a version 3 store (spec: section 13),
    /// as (object, message) pairs: `meta-invalid` for the keys, `migration-history` for the rows.
    static func problems(_ db: Database, meta: StoreMetadata, schema: StoreSchema) throws
        -> (meta: [String], history: [(object: String, message: String)])
    {
        var metaProblems = metaKeyProblems(meta, schema: schema)
        let fingerprint = schema.fingerprint
        var history: [(String, String)] = []
        // A table altered so that the columns are not there is reported as such (table-altered).
        let rows =
            (try? db.rows(
                "SELECT sequence, from_version, from_fingerprint, to_version, to_fingerprint, applied, stage, "
                    + "breaking FROM deck_migration ORDER BY sequence")) ?? []
        var previous: (version: String, fingerprint: String)?
        var chained = true
        for (index, row) in rows.enumerated() {
            let object = "deck_migration #\(row[0].int64 ?? 0)"
            guard row[0].int64 == Int64(index + 1) else {
                history.append((object, "the history's sequence numbers are not 1, 2, 3, … without gaps"))
                chained = false
                break
            }
            guard let fromVersion = row[1].string, let fromFingerprint = row[2].string,
                let toVersion = row[3].string, let toFingerprint = row[4].string, let applied = row[5].string,
                isFingerprint(fromFingerprint), isFingerprint(toFingerprint),
                StoreMetadata.isTimestamp(applied)
            else {
                history.append(
                    (object, "a row whose fingerprints or time are not of the form section 4.4 gives"))
                chained = false
                break
            }
            if let previous,
                previous.fingerprint != fromFingerprint
                    || !previous.version.utf8.elementsEqual(fromVersion.utf8)
            {
                history.append(
                    (
                        object,
                        "it starts from '\(fromVersion)' (\(fromFingerprint.prefix(12))…), "
                            + "but the migration before it ended at '\(previous.version)' (\(previous.fingerprint.prefix(12))…)"
                    ))
                chained = false
                break
            }
            previous = (toVersion, toFingerprint)
            if row[7].int64 == 1, case .text(let floor) = meta.values["schema_floor"],
                StoreSchema.compareVersions(floor, toVersion) == .orderedAscending
            {
                metaProblems.append(
                    "deck_meta's 'schema_floor' is '\(floor)', below '\(toVersion)', which breaking migration "
                        + "#\(index + 1) raised it to")
            }
        }
        if chained, let last = previous,
            last.fingerprint != fingerprint || !last.version.utf8.elementsEqual(schema.version.utf8)
        {
            history.append(
                (
                    "deck_migration",
                    "the last migration ended at '\(last.version)' (\(last.fingerprint.prefix(12))…), "
                        + "but the stored schema is '\(schema.version)' (\(fingerprint.prefix(12))…)"
                ))
        }
        return (metaProblems, history)
    }

    /// The problems of a version 3 store's `schema_fingerprint` and `schema_floor` keys by
    /// themselves (the history's rows may add one of the floor's).
    static func metaKeyProblems(_ meta: StoreMetadata, schema: StoreSchema) -> [String] {
        var metaProblems: [String] = []
        let fingerprint = schema.fingerprint
        switch meta.values["schema_fingerprint"] {
        case .text(let v) where v == fingerprint: break
        case .text(let v):
            metaProblems.append(
                "deck_meta's 'schema_fingerprint' is '\(v.prefix(64))', but the stored schema's fingerprint is \(fingerprint)"
            )
        case nil: metaProblems.append("deck_meta holds no 'schema_fingerprint'")
        case let other?:
            metaProblems.append(
                "deck_meta's 'schema_fingerprint' is \(StoreMetadata.describeValue(other)), not text")
        }
        switch meta.values["schema_floor"] {
        case .text(let v) where StoreSchema.compareVersions(v, schema.version) == .orderedDescending:
            metaProblems.append(
                "deck_meta's 'schema_floor' is '\(v)', above the schema's version '\(schema.version)'")
        case .text: break
        case nil: metaProblems.append("deck_meta holds no 'schema_floor'")
        case let other?:
            metaProblems.append(
                "deck_meta's 'schema_floor' is \(StoreMetadata.describeValue(other)), not text")
        }
        return metaProblems
    }
}
