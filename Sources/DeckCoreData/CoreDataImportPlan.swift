import DeckSQLite
import DeckStore
import DeckSupport
import Foundation

/// What importing a Core Data or SwiftData store into a Deck package means: Deck's schema for
/// the store's model, what had no exact Deck form (``notes``), and where each entity's rows,
/// columns and links live in the store's tables.
///
/// Made by ``CoreDataStore/importPlan()``; the store's readers
/// (``CoreDataStore/forEachRow(of:attributes:plan:_:)``,
/// ``CoreDataStore/forEachToOne(plan:_:)``, ``CoreDataStore/forEachToMany(plan:_:)``) follow it.
///
/// **Names.** Deck names (spec 5.7) allow ASCII letters, digits and `_`, begin with a letter,
/// and compare case-insensitively; Core Data's compare exactly. A name that breaks a Deck rule
/// is changed (characters outside the set become `_`, a leading non-letter gets an `x` before
/// it, a reserved `deck_`/`sqlite_` prefix gets `cd_` before it, a name over 64 bytes is cut,
/// a case-insensitive clash gets `_2`, `_3`…), and a note says so.
///
/// **Ordered relationships.** Deck's to-many relationships are sets. The order of an ordered
/// to-many whose inverse is a to-one (Core Data keeps it in the `Z_FOK_<INVERSE>` column of the
/// destination's table) is carried by a generated optional `integer` attribute on the
/// destination entity, named `<inverse>Order` (`folderOrder` for `Folder.items` ↔
/// `Item.folder`), holding Core Data's position key exactly as stored: sorting a folder's items
/// by it ascending gives Core Data's order. The order of an ordered many-to-many (kept in the
/// join table's `Z_FOK_` column) has no place in Deck's link tables: a generated optional `json`
/// attribute on the entity declaring the relationship, `<relationship>Order`, holds the related
/// records' ids in that order (``JoinOrder``); a join table without the column keeps no order,
/// and a note says so.
package struct CoreDataImportPlan: Sendable, Equatable {
    /// Something of the store that the import approximates or leaves out, and why.
    package struct Note: Sendable, Equatable, CustomStringConvertible {
        /// The entity concerned (its Core Data name), when there is one.
        package var entity: String?
        /// The property concerned (its Core Data name), when there is one.
        package var property: String?
        /// What happens, for people.
        package var reason: String

        package init(entity: String? = nil, property: String? = nil, _ reason: String) {
            self.entity = entity
            self.property = property
            self.reason = reason
        }

        package var description: String {
            switch (entity, property) {
            case (let entity?, let property?): "\(entity).\(property): \(reason)"
            case (let entity?, nil): "\(entity): \(reason)"
            default: reason
            }
        }
    }

    /// How one stored attribute is read: its column and Core Data type.
    package struct AttributeColumn: Sendable, Equatable {
        /// The attribute's Deck name.
        package var name: String
        /// Its Core Data name (for a generated order attribute, the to-one it orders by).
        package var coreDataName: String
        /// The column of the hierarchy's table (`ZNAME`, `ZNAME1`, `Z_FOK_NAME`).
        package var column: String
        /// The Core Data type (`integer64` for a generated order attribute).
        package var coreDataType: CoreDataAttributeType
        /// The Deck type it is imported as.
        package var type: StoreSchema.AttributeType
        /// Whether the column uses Core Data's external-storage encoding (a marker byte first).
        package var usesExternalStorageEncoding: Bool
        /// For the generated attribute that keeps an ordered many-to-many's order: where the
        /// order is read from (then ``column`` is not read).
        package var joinOrder: JoinOrder? = nil
    }

    /// The order of an ordered many-to-many relationship, in its join table: for each record of
    /// the side that declares it (``ownerColumn``), the related records (``elementColumn``) by
    /// their position (``orderColumn``, Core Data's `Z_FOK_` column).
    package struct JoinOrder: Sendable, Equatable {
        package var table: String
        package var ownerColumn: String
        package var elementColumn: String
        package var orderColumn: String
    }

    /// How one to-one relationship is read: the column holding the target's `Z_PK`.
    package struct ToOneColumn: Sendable, Equatable {
        /// The relationship's Deck name.
        package var name: String
        /// Its Core Data name.
        package var coreDataName: String
        /// The foreign-key column of the hierarchy's table.
        package var column: String
        /// The destination's Deck entity name.
        package var destination: String
    }

    /// How one entity is read.
    package struct EntityPlan: Sendable, Equatable {
        /// The entity's Deck name.
        package var name: String
        /// Its Core Data name (as `Z_PRIMARYKEY` and the model spell it).
        package var coreDataName: String
        /// The Deck name of its hierarchy's root.
        package var root: String
        /// The hierarchy's table (`Z<ROOT>`).
        package var table: String
        /// The entity's `Z_ENT`, resolved by name from `Z_PRIMARYKEY`.
        package var number: Int64
        /// The `Z_ENT` of the entity and of every entity below it.
        package var numbers: [Int64]
        /// Whether the model marks it abstract (Deck keeps the entity; it has no rows of its own).
        package var isAbstract: Bool
        /// Every stored attribute a record of it has, inherited ones first, in schema order
        /// (generated order attributes last of their declaring entity).
        package var attributes: [AttributeColumn]
        /// The to-one relationships it declares whose foreign key lives in its table.
        package var toOnes: [ToOneColumn]
    }

    /// How one many-to-many relationship (or a to-many without an inverse) is read: its join
    /// table. Listed once per pair, for the side whose name the join table carries.
    package struct JoinTable: Sendable, Equatable {
        /// The Deck name of the entity declaring the relationship.
        package var entity: String
        /// The relationship's Deck name.
        package var relationship: String
        /// The join table (`Z_<n><NAME>`).
        package var table: String
        /// The column holding the source's `Z_PK`.
        package var sourceColumn: String
        /// The column holding the destination's `Z_PK`.
        package var destinationColumn: String
        /// The `Z_FOK_` column holding the positions, when either side is ordered.
        package var orderColumn: String?
        /// The columns the pairs are read in order of: for an ordered relationship, the
        /// column of the side it belongs to, then ``orderColumn``.
        package var orderBy: [String]
    }

    /// One hierarchy (one table) and the highest primary key it has handed out.
    package struct Hierarchy: Sendable, Equatable {
        /// The root's Deck name.
        package var root: String
        /// The root's Core Data name, which the global ids use.
        package var coreDataRoot: String
        /// The table.
        package var table: String
        /// The highest of `Z_PRIMARYKEY.Z_MAX` over the hierarchy's entities and of the table's
        /// `Z_PK`: the loader raises the package's key sequence to it.
        package var maximumPrimaryKey: Int64
    }

    /// Deck's schema for the store; it passes `StoreSchema.validate()`.
    package var schema: StoreSchema
    /// What was approximated or left out, in the order found.
    package var notes: [Note]
    /// How each imported entity is read, in schema order.
    package var entities: [EntityPlan]
    /// The join tables, one per many-to-many pair.
    package var joinTables: [JoinTable]
    /// One per hierarchy, in schema order of the roots.
    package var hierarchies: [Hierarchy]
    /// The store's `Z_UUID` (empty when it has none), which the global ids are derived from.
    package var storeUUID: String

    /// The plan of the entity with Deck name `name`.
    package func entity(named name: String) -> EntityPlan? { entities.first { $0.name == name } }

    /// The to-one relationships read from the rows of entity `name` (a Deck name): its
    /// ancestors' from the root down, then its own, each with the Deck name of the entity that
    /// declares it.
    package func toOneColumns(of name: String) -> [(entity: String, column: ToOneColumn)] {
        var chain: [String] = []
        var next: String? = name
        while let current = next, !chain.contains(current), let plan = entity(named: current) {
            chain.append(plan.name)
            next = schema.entities.first { $0.name == current }?.superentity
        }
        return chain.reversed().flatMap { declarer in
            (entity(named: declarer)?.toOnes ?? []).map { (declarer, $0) }
        }
    }

    /// A deterministic global id for row `primaryKey` of the hierarchy whose root is `root` (its
    /// Deck or Core Data name) in this store, so that importing the same store twice gives the
    /// same ids: the first 16 bytes of the SHA-256 of `deck-coredata-gid`, the store's `Z_UUID`,
    /// the root's Core Data name and the key in decimal, each followed by a NUL byte, with the
    /// version set to 8 and the variant to RFC 9562's (a name-based UUID of a hash other than
    /// SHA-1).
    package func globalID(root: String, primaryKey: Int64) -> UUID {
        globalIDs(root: root).id(primaryKey)
    }

    /// The maker of ``globalID(root:primaryKey:)`` for the rows of one hierarchy: what a loop
    /// over its rows uses (the fixed part of the name is laid out once, and one hasher serves
    /// every row).
    package func globalIDs(root: String) -> GlobalIDs {
        let name = hierarchies.first { $0.root == root || $0.coreDataRoot == root }?.coreDataRoot ?? root
        return GlobalIDs(storeUUID: storeUUID, root: name)
    }

    /// ``globalID(root:primaryKey:)`` from the store's `Z_UUID` and the root's Core Data name.
    package static func globalID(storeUUID: String, root: String, primaryKey: Int64) -> UUID {
        GlobalIDs(storeUUID: storeUUID, root: root).id(primaryKey)
    }

    /// Global ids of the rows of one hierarchy of one store (``globalID(root:primaryKey:)``).
    /// Not `Sendable`: one loop owns it.
    package final class GlobalIDs {
        private let hasher = SHA256Hasher()
        /// `deck-coredata-gid`, the store's UUID and the root's name, each with its NUL byte,
        /// then the key being named.
        private var name: [UInt8]
        private let fixed: Int

        init(storeUUID: String, root: String) {
            name =
                Array("deck-coredata-gid".utf8) + [0] + Array(storeUUID.utf8) + [0] + Array(root.utf8) + [0]
            fixed = name.count
        }

        /// The global id of the row with key `primaryKey`.
        package func id(_ primaryKey: Int64) -> UUID {
            name.removeSubrange(fixed...)
            name.append(contentsOf: String(primaryKey).utf8)
            name.append(0)
            hasher.reset()
            name.withUnsafeBytes { hasher.update($0) }
            return hasher.finalize().nameBasedUUID
        }
    }

    /// The document id of a package imported from this store, derived the same way from
    /// `deck-coredata-document` and the store's `Z_UUID`, so that two imports of one store are
    /// copies of one document; nil when the store has no `Z_UUID` (the package then gets a new
    /// random id).
    package var documentID: UUID? {
        storeUUID.isEmpty ? nil : Self.nameBasedID("deck-coredata-document", [storeUUID])
    }

    /// The first 16 bytes of the SHA-256 of `kind` and each of `parts`, each followed by a NUL
    /// byte, with the version set to 8 and the variant to RFC 9562's.
    private static func nameBasedID(_ kind: String, _ parts: [String]) -> UUID {
        var input = Data(kind.utf8)
        for part in parts {
            input.append(0)
            input.append(contentsOf: Data(part.utf8))
        }
        input.append(0)
        return SHA256Hasher.hash(input).nameBasedUUID
    }
}

extension CoreDataImportPlan {
    /// Deck's name for `name` (spec 5.7), with the uniqueness handled by the caller.
    package static func deckName(_ name: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in name.unicodeScalars {
            let allowed =
                scalar.isASCII
                && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                    || ("0"..."9").contains(scalar)
                    || scalar == "_")
            scalars.append(allowed ? scalar : "_")
        }
        var result = String(scalars)
        if let first = result.unicodeScalars.first,
            !(("a"..."z").contains(first) || ("A"..."Z").contains(first))
        {
            result = "x" + result
        }
        if result.isEmpty { result = "x" }
        let lowered = result.lowercased()
        if lowered.hasPrefix("deck_") || lowered.hasPrefix("sqlite_") { result = "cd_" + result }
        if result.utf8.count > StoreSchema.Limits.nameLength {
            result = String(result.prefix(StoreSchema.Limits.nameLength))
        }
        return result
    }

    /// `name` made unique (case-insensitively) against `taken`, which it is added to.
    static func unique(_ name: String, in taken: inout Set<String>) -> String {
        var candidate = name
        var counter = 2
        while taken.contains(candidate.lowercased()) {
            let suffix = "_\(counter)"
            candidate = String(name.prefix(StoreSchema.Limits.nameLength - suffix.utf8.count)) + suffix
            counter += 1
        }
        taken.insert(candidate.lowercased())
        return candidate
    }
}
