import DeckStore
import Foundation

/// What a wrapper gives discovery: the marker it holds in a discovery instance.
protocol DiscoverableWrapper {
    var discoveryOwner: PropertyOwner? { get }
}

extension Attribute: DiscoverableWrapper {
    var discoveryOwner: PropertyOwner? { owner }
}

extension Relationship: DiscoverableWrapper {
    var discoveryOwner: PropertyOwner? { owner }
}

extension Transient: DiscoverableWrapper {
    var discoveryOwner: PropertyOwner? { marker }
}

/// A model type's properties, found once per type from a discovery instance (`init()`), and how
/// to reach each one's wrapper in any instance.
final class ModelMetadata: @unchecked Sendable {
    let type: any PersistentModel.Type
    let entityName: String
    /// The root of the entity's hierarchy (whose table holds its records, and where record ids
    /// are unique), by its type: records are identified by it and their id.
    let rootKey: ObjectIdentifier
    /// The attributes and the relationships, each with its accessor's type-erased view (found
    /// once here rather than cast for each record).
    private(set) var attributes: [(accessor: PropertyAccessor, access: any AttributeValueAccess)] = []
    private(set) var relationships: [(accessor: PropertyAccessor, access: any RelationshipDescribing)] = []
    /// The metadata of the superclass, when it is a model too (the superentity).
    let superMetadata: ModelMetadata?
    /// The persistent properties, inherited ones first, each at its ``PropertyAccessor/index``.
    let properties: [PropertyAccessor]
    /// What discovery found wrong (a property it cannot store, one not marked): the schema reports
    /// these, naming the properties.
    let problems: [String]
    /// The discovery instance, kept to resolve key paths on.
    let probe: AnyObject
    private let byName: [String: Int]
    /// Where each property's wrapper keeps its owner and its index, from the start of an instance:
    /// what a new backing writes into every wrapper (``ModelBacking/attach(to:metadata:globalID:context:rowID:)``).
    let ownerAndIndexOffsets: [(owner: Int, index: Int)]
    /// For each property, its slot among those that can wait to be loaded (relationships, and
    /// attributes of a type other than the common ones, which may be external data), or -1: a
    /// backing keeps one slot per such property, not one per property (``ModelBacking/pendingValue(_:)``).
    let pendingSlots: [Int]
    /// How many properties have a slot in ``pendingSlots``.
    let pendingSlotCount: Int
    private let resolved = Locked<[AnyKeyPath: [PropertyAccessor]]>([:])
    /// The names of the relationships' inverses, by property index (set when a schema of the
    /// type is built: ``inverseName(of:)`` builds one if none was).
    let inverseNames = Locked<[Int: String]?>(nil)

    /// The name of the inverse of relationship `index`, or nil when it has none.
    func inverseName(of index: Int) -> String? {
        if let names = inverseNames.withLock({ $0 }) { return names[index] }
        // Pairs the inverses of this type and the types it reaches (Schema records them here).
        _ = Schema([type])
        return inverseNames.withLock { names in
            // A schema with problems pairs nothing: do not try again.
            if names == nil { names = [:] }
            return names?[index]
        }
    }

    private static let cache = Locked<[ObjectIdentifier: ModelMetadata]>([:])

    /// The metadata of `type` if it was discovered already: no cast, and (for the type the
    /// thread asked for last) no lock.
    static func known(_ type: AnyObject.Type) -> ModelMetadata? {
        let key = ObjectIdentifier(type)
        return LastMetadata.slot.withCurrent { current in
            let last = current ?? LastMetadata.made()
            if last.type == key, let metadata = last.metadata { return metadata }
            if last.previousType == key, let metadata = last.previous {
                last.swap()
                return metadata
            }
            guard let found = cache.withLock({ $0[key] }) else { return nil }
            last.previousType = last.type
            last.previous = last.metadata
            last.type = key
            last.metadata = found
            return found
        }
    }

    /// The last two types a thread looked up, and their metadata: most lookups ask for the type
    /// asked for just before (a fetch, an insert loop) or the one before it (cards put in decks
    /// one by one), and a thread's own slot is cheaper than the cache's lock.
    private final class LastMetadata {
        var type: ObjectIdentifier?
        // Metadata lives as long as the process (the cache keeps every one): not counted.
        unowned(unsafe) var metadata: ModelMetadata?
        var previousType: ObjectIdentifier?
        unowned(unsafe) var previous: ModelMetadata?

        func swap() {
            (type, previousType) = (previousType, type)
            (metadata, previous) = (previous, metadata)
        }

        static let slot = ThreadSlot<LastMetadata>()

        /// Makes the calling thread's (it has none).
        static func made() -> LastMetadata {
            let made = LastMetadata()
            slot.set(made)
            return made
        }
    }

    /// Whether `object` is an instance of this metadata's model class or of a subclass: a model
    /// of this entity or of a descendant.
    func admits(_ object: AnyObject) -> Bool {
        let expected = ObjectIdentifier(type)
        var current: AnyClass? = Swift.type(of: object)
        while let level = current {
            if ObjectIdentifier(level) == expected { return true }
            current = _getSuperclass(level)
        }
        return false
    }

    static func of(_ type: any PersistentModel.Type) -> ModelMetadata {
        let key = ObjectIdentifier(type)
        if let found = cache.withLock({ $0[key] }) { return found }
        Discovery.lock.lock()
        defer { Discovery.lock.unlock() }
        if let found = cache.withLock({ $0[key] }) { return found }
        let metadata = ModelMetadata(discovering: type)
        cache.withLock { $0[key] = metadata }
        return metadata
    }

    private init(discovering type: any PersistentModel.Type) {
        self.type = type
        entityName = type.entityName
        let (probe, registered) = Discovery.discover { type.init() }
        self.probe = probe
        var problems: [String] = []
        if !(type is ModelObject.Type) {
            problems.append(
                "\(type) is not a subclass of ModelObject: declare a model as `final class \(type): ModelObject`"
            )
        }

        let levels = Self.levels(of: probe)
        let superType = levels.count > 1 ? levels[levels.count - 2].type as? any PersistentModel.Type : nil
        superMetadata = superType.map { ModelMetadata.of($0) }
        rootKey = superMetadata?.rootKey ?? ObjectIdentifier(type)

        var properties: [PropertyAccessor] = []
        var markers: [DiscoveryMarker] = []
        var seen = Set<ObjectIdentifier>()
        var holdingModels: [String] = []
        for level in levels {
            let declaring = level.type as? any PersistentModel.Type
            for child in level.mirror.children {
                let label = child.label ?? "?"
                let owner = (child.value as? any DiscoverableWrapper)?.discoveryOwner
                guard let marker = owner as? DiscoveryMarker else {
                    if declaring != nil {
                        problems.append(
                            "\(level.type).\(label) is a stored property without @Attribute, @Relationship or "
                                + "@Transient: mark it (Deck stores only marked properties)")
                    }
                    continue
                }
                let accessor = marker.accessor
                seen.insert(ObjectIdentifier(accessor))
                accessor.name = label.hasPrefix("_") ? String(label.dropFirst()) : label
                if accessor is any RelationshipDescribing,
                    let value = Mirror(reflecting: child.value).descendant("value"),
                    !Mirror(reflecting: value).children.isEmpty
                {
                    // A model (or models) already there: a default that makes one.
                    holdingModels.append("\(level.type).\(accessor.name)")
                }
                accessor.declaringType = declaring
                guard accessor.isPersistent else { continue }
                accessor.index = properties.count
                properties.append(accessor)
                markers.append(marker)
            }
        }
        if registered.contains(where: { !seen.contains(ObjectIdentifier($0)) }) {
            let which =
                holdingModels.isEmpty ? "\(type): a property's" : holdingModels.joined(separator: ", ") + ":"
            problems.append(
                "\(which) default value makes another model; give it a default of nil or [] instead")
        }
        if properties.isEmpty {
            problems.append("\(type) has no @Attribute or @Relationship property: a model needs at least one")
        } else if let offsets = markerOffsets(in: probe, markers: markers) {
            for (accessor, marker) in zip(properties, markers) {
                accessor.offset = offsets[ObjectIdentifier(marker)]! - accessor.ownerFieldOffset
            }
        } else {
            problems.append("\(type): Deck could not find its properties in an instance")
        }
        problems += Self.problems(of: properties, in: type)
        self.properties = properties
        self.problems = problems
        for accessor in properties {
            if let attribute = accessor as? any AttributeValueAccess {
                attributes.append((accessor, attribute))
            } else if let relationship = accessor as? any RelationshipDescribing {
                relationships.append((accessor, relationship))
            }
        }
        byName = Dictionary(properties.map { ($0.name, $0.index) }, uniquingKeysWith: { first, _ in first })
        (pendingSlots, pendingSlotCount) = Self.pendingSlots(of: properties)
        ownerAndIndexOffsets = properties.map {
            ($0.offset + $0.ownerFieldOffset, $0.offset + $0.indexFieldOffset)
        }
    }

    /// Each property's slot among those that can wait to be loaded (see ``pendingSlots``), and
    /// how many there are.
    private static func pendingSlots(of properties: [PropertyAccessor]) -> ([Int], Int) {
        var count = 0
        let slots = properties.map { accessor in
            let common = (accessor as? any AttributeValueAccess).map { $0.cellKind != .other } ?? false
            guard !common else { return -1 }
            count += 1
            return count - 1
        }
        return (slots, count)
    }

    /// The class of `probe` and its model superclasses, root first, with their mirrors.
    private static func levels(of probe: AnyObject) -> [(type: Any.Type, mirror: Mirror)] {
        var levels: [(type: Any.Type, mirror: Mirror)] = []
        var mirror: Mirror? = Mirror(reflecting: probe)
        while let level = mirror, level.subjectType != ModelObject.self {
            levels.insert((level.subjectType, level), at: 0)
            mirror = level.superclassMirror
        }
        return levels
    }

    /// What is wrong with `type`'s `properties` themselves: a relationship of no model, an
    /// attribute Deck cannot store.
    private static func problems(of properties: [PropertyAccessor], in type: any PersistentModel.Type)
        -> [String]
    {
        var problems: [String] = []
        for accessor in properties {
            if let invalid = accessor as? InvalidRelationshipAccessor {
                problems.append(
                    "\(type).\(accessor.name): @Relationship needs a model, an optional model or an array of "
                        + "models, not \(invalid.typeDescription)")
            } else if let attribute = accessor as? any AttributeDescribing, attribute.isNestedOptional {
                problems.append(
                    "\(type).\(accessor.name): Deck cannot store a nested optional (\(accessor.typeDescription)): a "
                        + "stored value has one null, so .some(nil) would read back as nil; use one optional, or an "
                        + "enum whose cases say what the two kinds of nothing mean")
            } else if let attribute = accessor as? any AttributeDescribing, !attribute.isStorable {
                problems.append(
                    "\(type).\(accessor.name): Deck cannot store a \(accessor.typeDescription) (use a store type, "
                        + "a RawRepresentable or a Codable type)")
            }
        }
        return problems
    }

    /// What a new record of the entity gets for each attribute the model declares no optional
    /// for, by property index: the value `init()` gives it, when every instance gets the same one
    /// (a fixed default), or `.now` for a date that is the time the instance was made (a default
    /// of `Date.now`): one that lies between the clock's readings just before and just after
    /// `init()` made a second instance, which a fixed date cannot (the probe, made earlier, has
    /// it too) and a time rounded to the second or the day does not. Attributes with a default
    /// that is neither (`UUID()`, say) have none, nor have unique ones, nor dates within two days
    /// of now that two instances share (the time rounded). A value that is random but came out
    /// equal in the two instances would be taken for a fixed default.
    var storeDefaults: [Int: (Value?, StoreSchema.Attribute.DynamicDefault?)] {
        // Found once, under a lock: schemas of one type are built on any thread.
        foundStoreDefaults.withLock { found in
            if let found { return found }
            let defaults = findStoreDefaults()
            found = defaults
            return defaults
        }
    }
    private let foundStoreDefaults = Locked<[Int: (Value?, StoreSchema.Attribute.DynamicDefault?)]?>(nil)

    private func findStoreDefaults() -> [Int: (Value?, StoreSchema.Attribute.DynamicDefault?)] {
        // Not for unique attributes: one default would make the second record that takes it fail.
        let candidates = attributes.filter {
            guard let attribute = $0.accessor as? any AttributeDescribing else { return false }
            return !attribute.isOptional && !attribute.attributeOptions.contains(.unique)
        }
        guard !candidates.isEmpty else { return [:] }
        let first = candidates.map { try? $0.access.storeValue(in: probe, entity: entityName) }
        // The clock read around the second instance's init(): a `Date.now` default lies between
        // the two readings (no waiting: a fixed date cannot, whatever the clock's resolution).
        let before = Date()
        let second = makeInstance()
        let after = Date()
        var defaults: [Int: (Value?, StoreSchema.Attribute.DynamicDefault?)] = [:]
        for ((accessor, access), value) in zip(candidates, first) {
            guard let value, let again = try? access.storeValue(in: second, entity: entityName) else {
                continue
            }
            if case .date(let made) = again, before.timeIntervalSince1970 <= made.timeIntervalSince1970,
                made.timeIntervalSince1970 <= after.timeIntervalSince1970
            {
                defaults[accessor.index] = (nil, .now)
            } else if value == again {
                // A date near now that two instances share is likely time rounded (to the second,
                // the day): no fixed default can stand for it.
                if case .date(let made) = value,
                    abs(made.timeIntervalSince1970 - Date().timeIntervalSince1970) < 2 * 86_400
                {
                    continue
                }
                defaults[accessor.index] = (value, nil)
            }
        }
        return defaults
    }

    /// The persistent property called `name`.
    func property(named name: String) -> PropertyAccessor? { byName[name].map { properties[$0] } }

    /// Makes an instance with every property at its default.
    func makeInstance() -> AnyObject { type.init() }

    /// Whether this entity is `other` or inherits from it.
    func inherits(from other: ModelMetadata) -> Bool {
        var current: ModelMetadata? = self
        while let metadata = current {
            if metadata === other { return true }
            current = metadata.superMetadata
        }
        return false
    }

    /// The persistent properties a key path reads, in order: one for `\Card.front`, two for
    /// `\Card.deck?.title`. Empty when the key path stands for no stored property: a computed
    /// property that reads no stored one, one that changes the value it reads (`-age`,
    /// `name.uppercased()`: it has no column, though it reads one), or a key path of another type.
    func resolve(_ keyPath: AnyKeyPath) -> [PropertyAccessor] {
        if let found = resolved.withLock({ $0[keyPath] }) { return found }
        Discovery.lock.lock()
        defer { Discovery.lock.unlock() }
        let reads = propertiesRead(by: keyPath)
        let found = givesBackLastRead(keyPath, reads) ? reads : []
        resolved.withLock { $0[keyPath] = found }
        return found
    }

    /// The persistent properties that applying `keyPath` to the discovery instance reads, whatever
    /// it makes of them (for ``resolve(_:)``, and for messages about a key path it refuses).
    func propertiesRead(by keyPath: AnyKeyPath) -> [PropertyAccessor] {
        Discovery.lock.lock()
        defer { Discovery.lock.unlock() }
        prepareProbesForPaths()
        func read<Root>(_ root: Root) { _ = root[keyPath: keyPath] }
        return Discovery.recordReads { _openExistential(probe, do: read) }
    }

    /// Whether `keyPath`, which reads `reads`, gives back the value of the last one unchanged:
    /// tried with a few values of the attribute's type that a computed property made from it is
    /// unlikely to give back (see ``AttributeDescribing/givesBackItsValue(through:on:)``).
    private func givesBackLastRead(_ keyPath: AnyKeyPath, _ reads: [PropertyAccessor]) -> Bool {
        guard let attribute = reads.last as? any AttributeDescribing else { return true }
        let instance: AnyObject
        if reads.count == 1 {
            instance = probe
        } else if let relationship = reads[reads.count - 2].relationshipAccess {
            instance = relationship.destinationMetadata.probe
        } else {
            return true
        }
        func read<Root>(_ root: Root) -> Any? { root[keyPath: keyPath] }
        return attribute.givesBackItsValue(through: { _openExistential(self.probe, do: read) }, on: instance)
    }

    /// A key path that ``resolve(_:)`` refuses, described for messages by what it reads: Swift
    /// prints a wrapped or computed property's key path as `<computed 0x…>`, which names nothing.
    static func describeRefused(_ keyPath: AnyKeyPath) -> String {
        let root = Swift.type(of: keyPath).rootType
        guard let model = root as? any PersistentModel.Type else { return "\(keyPath)" }
        let reads = ModelMetadata.of(model).propertiesRead(by: keyPath).map(\.name)
        guard !reads.isEmpty else {
            return
                "a key path of \(root) that reads no @Attribute or @Relationship (a computed or @Transient property)"
        }
        return "a key path of \(root) that reads \(reads.joined(separator: "."))"
            + " but does not give back its value as stored (a computed property)"
    }

    /// Gives each to-one relationship of the discovery instance the destination's discovery
    /// instance, so that key paths can follow it.
    private func prepareProbesForPaths() {
        for accessor in properties {
            guard let relationship = accessor as? any RelationshipDescribing, !relationship.isToMany,
                let marker = accessor.ownerPointer(in: probe).pointee as? DiscoveryMarker,
                marker.destinationProbe == nil
            else { continue }
            marker.destinationProbe = ModelMetadata.of(relationship.destinationType).probe
        }
    }
}

/// What the metadata asks of an attribute accessor without knowing its value type.
protocol AttributeDescribing {
    /// Whether `read` (a key path applied to a discovery instance) gives back the property of
    /// `instance` unchanged, tried with a few values of its type (the property is restored after):
    /// false for a computed property that transforms it. Values a type has no probe for (JSON,
    /// enums whose raw values the probes miss) are not tried.
    func givesBackItsValue(through read: () -> Any?, on instance: AnyObject) -> Bool
    var isStorable: Bool { get }
    /// Whether the property's type is an optional of an optional (`Int??`), which Deck refuses.
    var isNestedOptional: Bool { get }
    /// Why a cell of the attribute's own store type that the property's Swift type does not
    /// take (an enum case a later version of the app added, JSON its type cannot decode) cannot
    /// be read, as a mismatch between this app and the document; nil for a cell of another type
    /// (damage, which the verifier reports).
    func mismatch(_ cell: Value) -> String?
    var attributeType: StoreSchema.AttributeType? { get }
    var isOptional: Bool { get }
    var attributeOptions: Set<AttributeOption> { get }
    var attributeOriginalName: String? { get }
}

extension AttributeAccessor: AttributeDescribing {
    var isStorable: Bool { codec != nil }
    var isNestedOptional: Bool { Codec<V>.isNestedOptional }

    func mismatch(_ cell: Value) -> String? {
        guard let type = codec?.type, cell.kindName == type.rawValue else { return nil }
        let valueType = (V.self as? any OptionalType.Type)?.wrappedType ?? V.self
        let shown: String
        if case .string(let text) = cell {
            shown = "'" + (text.count > 80 ? String(text.prefix(80)) + "…" : text) + "'"
        } else {
            shown = type == .json ? "a JSON value" : cell.description
        }
        let what =
            valueType is any RawRepresentable.Type
            ? "which is not a case of this app's \(valueType) (\(valueType)(rawValue:) gives nil)"
            : type == .json
                ? "which this app's \(valueType) cannot decode" : "which this app's \(valueType) cannot hold"
        return "holds \(shown), \(what): the document and this version of the app disagree (another version "
            + "of the app, perhaps a later one, wrote it); the document is not damaged. Give \(valueType) the value "
            + "to read the record"
    }
    var attributeType: StoreSchema.AttributeType? { codec?.type }
    var isOptional: Bool { codec?.isOptional ?? false }
    var attributeOptions: Set<AttributeOption> { options }
    var attributeOriginalName: String? { originalName }
}

/// What the metadata asks of a relationship accessor without knowing its value type.
protocol RelationshipDescribing {
    var destinationType: any PersistentModel.Type { get }
    /// ``ModelMetadata/of(_:)`` of ``destinationType``.
    var destinationMetadata: ModelMetadata { get }
    var isToMany: Bool { get }
    var relationshipDeleteRule: StoreSchema.DeleteRule { get }
    var relationshipInverse: AnyKeyPath? { get }
    var relationshipOriginalName: String? { get }
    var modelCountBounds: (minimum: Int?, maximum: Int?) { get }
    /// The models the loaded relationship relates `object` to, resolved through its context
    /// (none while it is not loaded).
    func targets(in object: AnyObject) -> [AnyObject]
    /// The models the relationship relates the model of `backing` to, loaded first if it is not
    /// yet (a read), resolved through its context.
    func loadedTargets(of backing: ModelBacking) -> [AnyObject]
    /// Loads the relationship of `object` as relating it to `targets` (by identity: see
    /// ModelReference.swift).
    func setTargets(_ targets: [AnyObject], in object: AnyObject)
    /// The loaded relationship's references in `object`, unresolved.
    func references(in object: AnyObject) -> [ModelReference]
    /// Whether the relationship holds `target` in `object`, without resolving it.
    func holdsTarget(_ target: AnyObject, in object: AnyObject) -> Bool
    /// Adds `target` to the relationship in `object` (a to-one's value becomes it).
    func appendTarget(_ target: AnyObject, in object: AnyObject)
    /// Takes `target` out of the relationship in `object`.
    func removeTarget(_ target: AnyObject, in object: AnyObject)
}

extension RelationshipAccessor: RelationshipDescribing {
    var destinationType: any PersistentModel.Type { kind.destinationType }
    var isToMany: Bool { kind.isToMany }
    var relationshipDeleteRule: StoreSchema.DeleteRule { deleteRule }
    var relationshipInverse: AnyKeyPath? { inverseKeyPath }
    var relationshipOriginalName: String? { originalName }
    var modelCountBounds: (minimum: Int?, maximum: Int?) { (minimumModelCount, maximumModelCount) }
}
