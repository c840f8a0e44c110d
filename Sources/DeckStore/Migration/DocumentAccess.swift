import Foundation

/// How an application whose models have a given schema may open a document (spec: section 19).
///
/// A document at the application's version (or an earlier one) opens read-write when it holds
/// the application's schema and needs a migration otherwise. A document at a **later** version —
/// one a newer build of the application touched — opens:
/// - read-write when the application's version is at or above the document's compatibility floor
///   and the document holds everything the application knows, each as the application knows it
///   (what the application does not know is kept as it is: its saves never name it);
/// - read-only when the application can still read everything it knows;
/// - not at all otherwise: the document needs a later version of the application.
///
/// ```swift
/// let access = try store.access(forApplication: appSchema)
/// if case .needsNewerApplication(let version, _) = access { print("update to \(version)") }
/// ```
public enum DocumentAccess: Sendable, Equatable {
    /// The application may read and write the document.
    case readWrite
    /// The application may read the document but not change it; `reasons` say why, one line each.
    case readOnly(reasons: [String])
    /// The document is at a later version than the application's, and the application cannot read
    /// it: it needs version `version` of the application. `reasons` name what it cannot read.
    case needsNewerApplication(version: String, reasons: [String])
    /// The document holds another schema at the application's version or an earlier one: it needs a
    /// migration (or is another kind of document). `differences` name each difference.
    case needsMigration(differences: [String])

    /// How an application whose schema is `application` may open a document that holds `document`
    /// with compatibility floor `floor` (`deck_meta.schema_floor`; nil, or a value above the
    /// document's version, counts as the document's version).
    public init(document: StoreSchema, floor: String?, application: StoreSchema) {
        guard StoreSchema.compareVersions(document.version, application.version) == .orderedDescending else {
            let differences = SchemaComparison.differences(stored: document, models: application)
            self = differences.isEmpty ? .readWrite : .needsMigration(differences: differences)
            return
        }
        var effectiveFloor = document.version
        if let floor, StoreSchema.compareVersions(floor, document.version) != .orderedDescending {
            effectiveFloor = floor
        }
        let belowFloor =
            StoreSchema.compareVersions(application.version, effectiveFloor) == .orderedAscending
        let findings = OlderApplicationCheck(document: document, application: application)
        if !findings.unreadable.isEmpty {
            self = .needsNewerApplication(
                version: belowFloor ? effectiveFloor : document.version, reasons: findings.unreadable)
        } else if belowFloor {
            self = .readOnly(
                reasons: [
                    "the document's compatibility floor is \(effectiveFloor), above the app's version "
                        + "\(application.version): apps before \(effectiveFloor) may read it but not change it"
                ] + findings.unwritable)
        } else if !findings.unwritable.isEmpty {
            self = .readOnly(reasons: findings.unwritable)
        } else {
            self = .readWrite
        }
    }
}

extension PackageStore {
    /// How an application whose models have schema `application` may open this document: see
    /// ``DocumentAccess``. Reads the compatibility floor; changes nothing.
    public func access(forApplication application: StoreSchema) throws(DeckError) -> DocumentAccess {
        let floor: String?
        do {
            floor = try read { reader in try reader.compatibilityFloor() }
        } catch {
            throw DeckError.wrap(error)
        }
        return DocumentAccess(document: schema, floor: floor, application: application)
    }
}

extension StoreReader {
    /// The compatibility floor as section 19 takes it (``SchemaBookkeeping/effectiveFloor``); nil
    /// before format version 3.
    package func compatibilityFloor() throws(DeckError) -> String? {
        let connection = try live()
        guard connection.formatVersion >= 3 else { return nil }
        let stored = try StoreMetadata.read(connection.database, packagePath: store.url.path)
        let history: [MigrationRecord]
        do {
            history = try SchemaBookkeeping.history(connection.database)
        } catch {
            throw connection.translate(error)
        }
        return SchemaBookkeeping.effectiveFloor(
            stored: stored.values["schema_floor"], version: schema.version, history: history)
    }
}

/// What an application whose schema is older than a document's cannot read (`unreadable`), and
/// what it can read but could not write without breaking the document's rules (`unwritable`),
/// entity by entity of the application's schema (spec: section 19.1).
struct OlderApplicationCheck {
    private(set) var unreadable: [String] = []
    private(set) var unwritable: [String] = []

    init(document: StoreSchema, application: StoreSchema) {
        let documentMapping = try? SchemaMapping(document)
        let applicationMapping = try? SchemaMapping(application)
        for entity in application.entities {
            guard let stored = document.entity(named: entity.name) else {
                unreadable.append("\(entity.name): not in the document")
                continue
            }
            if stored.superentity != entity.superentity {
                unreadable.append(
                    "\(entity.name): inherits from \(stored.superentity ?? "nothing") in the document, "
                        + "from \(entity.superentity ?? "nothing") in the app")
                continue
            }
            check(attributes: entity, stored)
            check(relationships: entity, stored, documentMapping, applicationMapping)
            for constraint in entity.uniqueConstraints where !stored.uniqueConstraints.contains(constraint) {
                unwritable.append(
                    "\(entity.name): the app's unique constraint on \(constraint.joined(separator: ", ")) "
                        + "is not the document's")
            }
            // Inserts under a rule the app does not know would be merged into other records or fail.
            for constraint in stored.uniqueConstraints where !entity.uniqueConstraints.contains(constraint) {
                unwritable.append(
                    "\(entity.name): the document's unique constraint on \(constraint.joined(separator: ", ")) "
                        + "is not the app's")
            }
        }
    }

    private mutating func check(attributes entity: StoreSchema.Entity, _ stored: StoreSchema.Entity) {
        let known = Set(entity.attributes.map(\.name))
        for attribute in entity.attributes {
            let name = entity.name + "." + attribute.name
            guard let other = stored.attributes.first(where: { $0.name == attribute.name }) else {
                unreadable.append("\(name): not in the document")
                continue
            }
            if other.type != attribute.type {
                unreadable.append(
                    "\(name): \(other.type.rawValue) in the document, \(attribute.type.rawValue) in the app")
            } else if other.isOptional && !attribute.isOptional {
                unreadable.append(
                    "\(name): optional in the document, so a record may have no value the app can read")
            } else if !other.isOptional && attribute.isOptional {
                unwritable.append("\(name): required in the document, optional in the app")
            }
            if other.options.contains(.unique) != attribute.options.contains(.unique) {
                unwritable.append(
                    "\(name): \(other.options.contains(.unique) ? "unique" : "not unique") in the document, "
                        + "\(attribute.options.contains(.unique) ? "unique" : "not unique") in the app")
            }
        }
        for other in stored.attributes where !known.contains(other.name) {
            let hasDefault = other.defaultValue != nil || other.dynamicDefault != nil
            if !other.isOptional && !hasDefault {
                unwritable.append(
                    "\(entity.name).\(other.name): in the document only, required and without a default, "
                        + "so the app cannot insert a record")
            } else if other.options.contains(.unique) && hasDefault {
                unwritable.append(
                    "\(entity.name).\(other.name): in the document only, unique and with a default, so "
                        + "a second record the app inserts would repeat the value")
            }
        }
    }

    private mutating func check(
        relationships entity: StoreSchema.Entity, _ stored: StoreSchema.Entity,
        _ documentMapping: SchemaMapping?,
        _ applicationMapping: SchemaMapping?
    ) {
        for relationship in entity.relationships {
            let name = entity.name + "." + relationship.name
            guard let other = stored.relationships.first(where: { $0.name == relationship.name }) else {
                unreadable.append("\(name): not in the document")
                continue
            }
            guard other.destination == relationship.destination, other.isToMany == relationship.isToMany
            else {
                unreadable.append(
                    "\(name): \(Self.describe(other)) in the document, \(Self.describe(relationship)) in the app"
                )
                continue
            }
            if other.deleteRule != relationship.deleteRule {
                unwritable.append(
                    "\(name): delete rule \(other.deleteRule.rawValue) in the document, "
                        + "\(relationship.deleteRule.rawValue) in the app")
            }
            let storage = documentMapping?.entities[entity.name]?.relationship(relationship.name)?.storage
            if storage == nil
                || storage
                    != applicationMapping?.entities[entity.name]?.relationship(relationship.name)?.storage
            {
                unwritable.append("\(name): the document keeps its links another way (another inverse)")
            }
        }
    }

    private static func describe(_ relationship: StoreSchema.Relationship) -> String {
        (relationship.isToMany ? "to-many " : "to-one ") + relationship.destination
    }
}
