import Foundation

extension Schema {
    /// A schema version, SwiftData's `Schema.Version`: stored in documents as `major.minor.patch`.
    public struct Version: Sendable, Hashable, Comparable, CustomStringConvertible {
        public let major: Int
        public let minor: Int
        public let patch: Int

        /// The version `major.minor.patch`; each part is at least 0.
        public init(_ major: Int, _ minor: Int, _ patch: Int) {
            precondition(major >= 0 && minor >= 0 && patch >= 0, "a version's parts are at least 0")
            self.major = major
            self.minor = minor
            self.patch = patch
        }

        /// `major.minor.patch`, as the document stores it.
        public var description: String { "\(major).\(minor).\(patch)" }

        public static func < (lhs: Version, rhs: Version) -> Bool {
            (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
        }
    }
}

/// One version of an app's models, SwiftData's `VersionedSchema`: its version and its model
/// types, often nested in the conforming type so that each version keeps its own classes.
///
/// ```swift
/// enum CardsV1: VersionedSchema {
///     static var versionIdentifier: Schema.Version { Schema.Version(1, 0, 0) }
///     static var models: [any PersistentModel.Type] { [Card.self] }
///     final class Card: ModelObject {
///         @Attribute var front = ""
///         required init() {}
///     }
/// }
/// ```
///
/// A document's schema is recognised by its version, and its entities, attributes and
/// relationships must be this version's models, never by Swift type identity: two versions may
/// declare classes of the same name, and a version whose models changed without a new version is
/// reported as such rather than confused with another.
public protocol VersionedSchema {
    /// The version documents of these models store.
    static var versionIdentifier: Schema.Version { get }
    /// The model types of this version (the types they reach are included).
    static var models: [any PersistentModel.Type] { get }
    /// Whether apps of earlier versions must no longer change documents of this version (false
    /// unless a version says so). A migration to a breaking version raises the document's
    /// compatibility floor to it: earlier apps then open such documents read-only, or not at all
    /// when they cannot read them (see <doc:EvolvingASchema>).
    static var isBreaking: Bool { get }
}

extension VersionedSchema {
    public static var isBreaking: Bool { false }
}

extension VersionedSchema {
    /// The schema of ``models`` at ``versionIdentifier``.
    public static var schema: Schema { Schema(models, version: versionIdentifier.description) }
}

/// How documents move from one version of the models to the next, SwiftData's
/// `SchemaMigrationPlan`: every version, oldest first, and a stage between each two in a row.
///
/// ```swift
/// enum CardsMigrationPlan: SchemaMigrationPlan {
///     static var schemas: [any VersionedSchema.Type] { [CardsV1.self, CardsV2.self] }
///     static var stages: [MigrationStage] { [.lightweight(fromVersion: CardsV1.self, toVersion: CardsV2.self)] }
/// }
/// let container = try ModelContainer(
///     for: CardsV2.schema, migrationPlan: CardsMigrationPlan.self,
///     configurations: [ModelConfiguration(url: url)])
/// ```
public protocol SchemaMigrationPlan: SendableMetatype {
    /// The versions, oldest first.
    static var schemas: [any VersionedSchema.Type] { get }
    /// A stage from each version to the next.
    static var stages: [MigrationStage] { get }
}

/// One step of a ``SchemaMigrationPlan``, SwiftData's `MigrationStage`.
///
/// A lightweight stage lets the store infer everything from the two versions' models (see
/// ``SchemaDiff``): added, removed and renamed (`originalName`) entities and properties, and the
/// other changes section 17 of the format lists as lightweight. Declaring the stage is what
/// agrees to the removals it contains. A custom stage adds code that runs in the migration's
/// transaction: `willMigrate` on the store in the old version's shape, `didMigrate` in the new
/// version's, with the old values still readable (``MigrationContext/oldValues(entity:attribute:)``).
/// Unlike SwiftData's, the closures are given the store, not a `ModelContext` of either
/// version's models.
public enum MigrationStage {
    /// A stage the store infers from the two versions.
    case lightweight(fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type)
    /// A stage with code of the app's before and after the store's own steps.
    case custom(
        fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type,
        willMigrate: ((StoreTransaction) throws -> Void)?, didMigrate: ((MigrationContext) throws -> Void)?)

    var versions: (from: Schema.Version, to: Schema.Version) {
        switch self {
        case .lightweight(let from, let to), .custom(let from, let to, _, _):
            (from.versionIdentifier, to.versionIdentifier)
        }
    }
}

/// Carries a document along a plan's stages, one migration (one transaction) per stage.
enum PlanMigration {
    /// The version of `plan` whose models `types` are: the version whose models (and the types
    /// they reach) include every one of `types`, by type identity, as SwiftData finds it; among
    /// several, the one whose models are exactly those `types` reach, then the latest. When no
    /// version lists the types themselves (models declared outside the versions), the latest
    /// version whose schema has the same shape. Nil when none matches: the container then
    /// reports that the plan lacks the models' version.
    static func version(of types: [any PersistentModel.Type], in plan: any SchemaMigrationPlan.Type)
        -> String?
    {
        let schema = Schema(types)
        let wanted = Set(types.map { ObjectIdentifier($0) })
        let reached = Set(schema.modelTypes.map { ObjectIdentifier($0) })
        var containing: [(version: String, exact: Bool)] = []
        for version in plan.schemas {
            let identifiers = Set(self.schema(of: version).modelTypes.map { ObjectIdentifier($0) })
            if wanted.isSubset(of: identifiers) {
                containing.append((version.versionIdentifier.description, identifiers == reached))
            }
        }
        if let found = containing.last(where: \.exact) ?? containing.last { return found.version }
        guard let models = schema.storeSchema else { return nil }
        return plan.schemas.last { version in
            guard let candidate = self.schema(of: version).storeSchema else { return false }
            return SchemaComparison.differences(stored: candidate, models: models).isEmpty
        }?.versionIdentifier.description
    }

    /// `plan`'s versions, their names and their store schemas, in order; throws when they are not
    /// in increasing order or a version's models do not make a schema.
    private static func storeSchemas(of plan: any SchemaMigrationPlan.Type) throws(DeckError)
        -> (versions: [any VersionedSchema.Type], names: [String], schemas: [StoreSchema])
    {
        let versions = plan.schemas
        let names = versions.map { "\($0.versionIdentifier)" }
        for index in versions.indices.dropFirst()
        where !(versions[index - 1].versionIdentifier < versions[index].versionIdentifier) {
            throw DeckError.misuse(
                "the migration plan \(plan) lists version \(names[index]) after \(names[index - 1]): "
                    + "its schemas must be in increasing order, each version once")
        }
        var schemas: [StoreSchema] = []
        for version in versions {
            let built = schema(of: version)
            guard let storeSchema = built.storeSchema else {
                throw DeckError.invalidSchema(
                    "version \(version.versionIdentifier): " + built.problems.joined(separator: "; "))
            }
            schemas.append(storeSchema)
        }
        return (versions, names, schemas)
    }

    /// Migrates the document at `url` to `target` (the schema of one of `plan`'s versions) when it
    /// holds an earlier version of the plan; does nothing when it holds `target` already.
    static func migrate(
        at url: URL, to target: Schema, storeSchema: StoreSchema, plan: any SchemaMigrationPlan.Type
    ) throws(DeckError) {
        // The plan first, whole: nothing is migrated along a plan that cannot be followed.
        let (versions, names, schemas) = try storeSchemas(of: plan)
        guard let targetIndex = names.firstIndex(of: target.version) else {
            throw DeckError.misuse(
                "the migration plan \(plan) has no version \(target.version), the container's schema's: "
                    + "add it to the plan's schemas")
        }
        let mismatch = SchemaComparison.differences(
            stored: schemas[targetIndex], models: storeSchema, place: "the plan's version \(target.version)")
        guard mismatch.isEmpty else {
            throw DeckError.misuse(
                "the container's models are not those of the plan's version \(target.version): "
                    + mismatch.joined(separator: "; "))
        }
        let stored = try PackageStore.open(at: url, mode: .readOnly)
        let storedSchema = stored.schema
        try? stored.close()
        // At the app's version already: the container compares the shapes as for any document.
        if storedSchema.version == target.version { return }
        // A later document than the app's is never migrated backwards: how the app may open it is
        // the container's decision (``DocumentAccess``).
        if StoreSchema.compareVersions(storedSchema.version, target.version) == .orderedDescending { return }
        guard let start = names.firstIndex(of: storedSchema.version) else {
            throw DeckError.schemaMismatch(
                path: url.path,
                differences: [
                    "the document's schema version \(storedSchema.version) is not one of the migration plan's ("
                        + names.joined(separator: ", ") + ")"
                ])
        }
        // The version says which models the document claims; its shape must be theirs.
        let claimed = SchemaComparison.differences(stored: storedSchema, models: schemas[start])
        guard claimed.isEmpty else {
            throw DeckError.schemaMismatch(
                path: url.path,
                differences: [
                    "the document says version \(storedSchema.version), but its schema is not the plan's version "
                        + "\(storedSchema.version) (the models below are that version's)"
                ] + claimed)
        }
        // A newer document than the app's is not migrated backwards.
        guard start < targetIndex else {
            throw DeckError.schemaMismatch(
                path: url.path,
                differences: [
                    "the document is at version \(storedSchema.version), after the app's \(target.version): "
                        + "it needs a newer version of the app"
                ])
        }
        var stages: [MigrationStage] = []
        for index in start..<targetIndex {
            let (from, to) = (versions[index].versionIdentifier, versions[index + 1].versionIdentifier)
            let found = plan.stages.filter { $0.versions.from == from && $0.versions.to == to }
            guard found.count == 1, let stage = found.first else {
                throw DeckError.misuse(
                    "the migration plan \(plan) has \(found.isEmpty ? "no" : "more than one") stage from version "
                        + "\(from) to \(to): give it exactly one .lightweight(fromVersion:toVersion:) or .custom(…)"
                )
            }
            stages.append(stage)
        }
        // Each stage leaves the document holding exactly the schema it migrated to.
        var before = storedSchema
        for (offset, stage) in stages.enumerated() {
            let next = schemas[start + offset + 1]
            try run(
                stage, at: url, from: before, to: next, breaking: isBreaking(versions[start + offset + 1]))
            before = next
        }
    }

    /// The schema of version `version` (``VersionedSchema/schema``, reached from the metatype).
    private static func schema(of version: any VersionedSchema.Type) -> Schema {
        Schema(version.models, version: version.versionIdentifier.description)
    }

    /// Whether `version` is breaking (``VersionedSchema/isBreaking``, reached from the metatype).
    private static func isBreaking(_ version: any VersionedSchema.Type) -> Bool { version.isBreaking }

    /// Runs one stage: the removals its versions contain are agreed to by declaring it; it raises
    /// the compatibility floor when its target version is `breaking`.
    private static func run(
        _ stage: MigrationStage, at url: URL, from old: StoreSchema, to new: StoreSchema, breaking: Bool
    ) throws(DeckError) {
        var plan = MigrationPlan(isBreaking: breaking)
        for step in SchemaDiff(from: old, to: new).steps {
            switch step.kind {
            case .removeEntity: plan.removals.insert(step.entity)
            case .removeAttribute, .removeRelationship:
                plan.removals.insert(step.entity + "." + (step.property ?? ""))
            default: break
            }
        }
        let name = "\(old.version) → \(new.version)"
        var storeStage: StoreMigrationStage?
        if case .custom(_, _, let willMigrate, let didMigrate) = stage {
            storeStage = StoreMigrationStage(name: name, willMigrate: willMigrate, didMigrate: didMigrate)
        }
        _ = try PackageStore.migrate(at: url, to: new, plan: plan, stage: storeStage)
    }
}
