import Foundation
import Observation
import Synchronization

/// Reads and writes one wrapper in any instance of a model class, at the offset discovery found
/// (``markerOffsets(in:markers:)``). Made by the wrapper's initializer in the discovery instance,
/// so it knows the wrapper's type; completed by ``ModelMetadata`` with the property's name,
/// offset and index.
class PropertyAccessor: @unchecked Sendable {
    /// The property's name (the wrapper's storage name without its leading underscore).
    var name = ""
    /// The wrapper's offset in an instance.
    var offset = -1
    /// The property's position in its entity's properties (inherited ones first).
    var index = -1
    /// The model type that declares the property.
    var declaringType: (any PersistentModel.Type)?

    /// Where the wrapper's fields are within the wrapper (nil for a wrapper without them).
    let ownerFieldOffset: Int
    let indexFieldOffset: Int
    let valueFieldOffset: Int

    /// Whether this is a ``RelationshipAccessor`` (of the wrapper's value type).
    let isRelationship: Bool

    init(
        ownerFieldOffset: Int = 0, indexFieldOffset: Int = -1, valueFieldOffset: Int = -1,
        isRelationship: Bool = false
    ) {
        self.isRelationship = isRelationship
        self.ownerFieldOffset = ownerFieldOffset
        self.indexFieldOffset = indexFieldOffset
        self.valueFieldOffset = valueFieldOffset
    }

    /// The address of a field of the wrapper in `object`.
    @inline(__always)
    final func field(_ fieldOffset: Int, in object: AnyObject) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque()) + offset + fieldOffset
    }

    /// The target of the to-one relationship of this accessor in `object`, if any (resolved
    /// through the model's context, ``RelationshipDescribing/targets(in:)``).
    func toOneTarget(in object: AnyObject) -> AnyObject? { nil }

    /// Persisted (an attribute or a relationship), not ``Transient``.
    var isPersistent: Bool { true }

    final func ownerPointer(in object: AnyObject) -> UnsafeMutablePointer<PropertyOwner?> {
        field(ownerFieldOffset, in: object).assumingMemoryBound(to: PropertyOwner?.self)
    }

    /// Runs a change Deck makes to the property of a model (not one the user makes) inside
    /// Observation's `withMutation`, so that observers hear of it. Set by the property's getter on
    /// first use, where the key path is known: an observer of the property has read it, so
    /// whenever there can be observers there is a notifier.
    var observationNotifier: ((AnyObject, ModelBacking, () -> Void) -> Void)? {
        // Without the lock until a getter has recorded one: a getter that ran on this thread
        // (where the model lives, and its observers read it) has set the flag.
        guard hasNotifier.load(ordering: .acquiring) else { return nil }
        return notifier.withLock { $0 }?.notify
    }
    /// The notifier, in a class: a function kept in the generic `Locked` itself was reabstracted
    /// on the way into `withLock`'s `inout` and again on the way back, so every read wrapped it in
    /// two more thunks (52,000 frames deep after a 10,000-card test: a stack overflow).
    private final class Notifier: @unchecked Sendable {
        let notify: (AnyObject, ModelBacking, () -> Void) -> Void
        init(_ notify: @escaping (AnyObject, ModelBacking, () -> Void) -> Void) { self.notify = notify }
    }
    private let notifier = Locked<Notifier?>(nil)
    private let hasNotifier = Atomic<Bool>(false)

    /// Records how to notify observers of the property, given its key path (once).
    @inline(__always)
    final func noteKeyPath<Model: PersistentModel, Member>(_ keyPath: KeyPath<Model, Member>) {
        guard !hasNotifier.load(ordering: .acquiring) else { return }
        notifier.withLock { notifier in
            notifier = Notifier { object, backing, change in
                guard let model = object as? Model else { return change() }
                backing.withMutation(of: model, keyPath: keyPath, change)
            }
        }
        hasNotifier.store(true, ordering: .releasing)
    }

    /// The property's Swift type, or (`optional`) that type made optional.
    func valueType(optional: Bool) -> Any.Type? { nil }

    /// The accessor as a relationship's, or nil: what `as? any RelationshipDescribing` gives,
    /// without the run time's search for a conformance (a load asks on every first read).
    var relationshipAccess: (any RelationshipDescribing)? { nil }

    /// A description of the property's Swift type, for messages.
    var typeDescription: String { "" }
}

/// The accessor of an ``Attribute``.
final class AttributeAccessor<V>: PropertyAccessor, @unchecked Sendable {
    let options: Set<AttributeOption>
    let originalName: String?
    /// Nil when Deck cannot store a `V` (reported by the schema's checks).
    let codec: Codec<V>?
    /// How a fetch reads the property's cells when `V` is one of the common store types.
    let cellKind: CellKind

    init(options: Set<AttributeOption>, originalName: String?) {
        self.options = options
        self.originalName = originalName
        self.codec = Codec<V>.make()
        self.cellKind = CellKind(V.self)
        super.init(
            ownerFieldOffset: MemoryLayout<Attribute<V>>.offset(of: \Attribute<V>.owner)!,
            indexFieldOffset: MemoryLayout<Attribute<V>>.offset(of: \Attribute<V>.index)!,
            valueFieldOffset: MemoryLayout<Attribute<V>>.offset(of: \Attribute<V>.value)!)
    }

    override var typeDescription: String { String(describing: V.self) }

    override func valueType(optional: Bool) -> Any.Type? { optional ? V?.self : V.self }

    /// The store value of the property in `object`.
    func storeValue(in object: AnyObject) throws(DeckError) -> Value {
        let field = UnsafeRawPointer(field(valueFieldOffset, in: object))
        // The common types directly (what their codecs give), the others through the codec.
        switch cellKind {
        case .string: return .string(field.assumingMemoryBound(to: String.self).pointee)
        case .optionalString:
            return field.assumingMemoryBound(to: String?.self).pointee.map(Value.string) ?? .null
        case .int: return .integer(Int64(field.assumingMemoryBound(to: Int.self).pointee))
        case .optionalInt:
            return field.assumingMemoryBound(to: Int?.self).pointee.map { .integer(Int64($0)) } ?? .null
        case .double: return .double(field.assumingMemoryBound(to: Double.self).pointee)
        case .optionalDouble:
            return field.assumingMemoryBound(to: Double?.self).pointee.map(Value.double) ?? .null
        case .date: return .date(field.assumingMemoryBound(to: Date.self).pointee)
        case .optionalDate: return field.assumingMemoryBound(to: Date?.self).pointee.map(Value.date) ?? .null
        case .bool: return .bool(field.assumingMemoryBound(to: Bool.self).pointee)
        case .optionalBool: return field.assumingMemoryBound(to: Bool?.self).pointee.map(Value.bool) ?? .null
        case .other:
            guard let codec else { throw DeckError.invalidSchema("\(name): Deck cannot store a \(V.self)") }
            return try codec.write(field)
        }
    }

    func givesBackItsValue(through read: () -> Any?, on instance: AnyObject) -> Bool {
        guard let codec else { return true }
        let slot = field(valueFieldOffset, in: instance).assumingMemoryBound(to: V.self)
        let original = slot.pointee
        defer { slot.pointee = original }
        for probe in Self.probeValues(codec.type) {
            guard codec.read(probe, slot), let stored = try? codec.write(slot) else { continue }
            guard let value = read().flatMap({ $0 as? V }), let readBack = try? codec.encode(value),
                readBack == stored
            else { return false }
        }
        return true
    }

    /// Values of a store type that a computed property made from an attribute of that type is
    /// unlikely to give back: signs, magnitudes, letter case, spaces, an empty value, and a value
    /// far longer or more precise than a property that cuts or rounds would keep (a string and
    /// data of 100,000 elements, a double a `Float` cannot hold, a decimal of 19 digits). A
    /// property that gives back each of them is taken for the attribute; so a transformation is
    /// caught whatever its cut-off, up to those sizes, not just the ones someone thought of.
    private static func probeValues(_ type: StoreSchema.AttributeType) -> [Value] {
        switch type {
        case .string:
            [
                .string(" Probe \u{B7} a\u{E9} Z "), .string(""),
                .string(" " + String(repeating: "Probe a\u{E9}\tZ\n", count: 10_000)),
            ]
        case .integer: [.integer(97), .integer(-13), .integer(1_234_567_891)]
        case .double: [.double(0.3125), .double(-12_345.5), .double(0.1), .double(1.5e300)]
        case .bool: [.bool(true), .bool(false)]
        case .date:
            [
                .date(Date(timeIntervalSince1970: 1_234_567_890.25)),
                .date(Date(timeIntervalSince1970: -86_400.5)),
            ]
        case .data:
            [
                .data(Data([0x44, 0x00, 0xFF])), .data(Data()),
                .data(Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) })),
            ]
        case .uuid:
            [
                .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16))),
                .uuid(UUID(uuid: (0xF0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0x0F))),
            ]
        case .url:
            [.url(URL(fileURLWithPath: "/Probe/a b")), .url(URL(string: "https://example.com/P?q=1")!)]
        case .decimal:
            [
                .decimal(Decimal(string: "12.5")!), .decimal(Decimal(-3)),
                .decimal(Decimal(string: "12345678901234.56789")!),
            ]
        case .json: []
        }
    }

    /// Sets the property in `object` from a cell; false when the cell does not hold a `V`.
    func load(_ cell: Value, into object: AnyObject) -> Bool {
        codec?.read(cell, field(valueFieldOffset, in: object)) ?? false
    }

    /// Sets the property in `object` from cell `cell` of a fetch's cursor.
    func load(_ cursor: RowCursor, _ cell: Int, into object: AnyObject) -> Bool {
        codec?.readCell(cursor, cell, field(valueFieldOffset, in: object)) ?? false
    }
}

/// The accessor of a ``Relationship``.
final class RelationshipAccessor<V>: PropertyAccessor, @unchecked Sendable {
    let kind: RelationshipKind<V>
    let deleteRule: StoreSchema.DeleteRule
    let inverseKeyPath: AnyKeyPath?
    let minimumModelCount: Int?
    let maximumModelCount: Int?
    let originalName: String?

    init(
        kind: RelationshipKind<V>, deleteRule: StoreSchema.DeleteRule, inverse: AnyKeyPath?,
        minimumModelCount: Int?,
        maximumModelCount: Int?,
        originalName: String?
    ) {
        self.kind = kind
        self.deleteRule = deleteRule
        self.inverseKeyPath = inverse
        self.minimumModelCount = minimumModelCount
        self.maximumModelCount = maximumModelCount
        self.originalName = originalName
        super.init(
            ownerFieldOffset: MemoryLayout<Relationship<V>>.offset(of: \Relationship<V>.owner)!,
            indexFieldOffset: MemoryLayout<Relationship<V>>.offset(of: \Relationship<V>.index)!,
            valueFieldOffset: MemoryLayout<Relationship<V>>.offset(of: \Relationship<V>.value)!,
            isRelationship: true)
    }

    override var typeDescription: String { String(describing: V.self) }

    override func valueType(optional: Bool) -> Any.Type? { optional ? V?.self : V.self }

    override var relationshipAccess: (any RelationshipDescribing)? { self }

    /// The destination's metadata, found once (``ModelMetadata/of(_:)`` takes a lock). Metadata
    /// lives as long as the process, so the cache holds it unretained.
    var destinationMetadata: ModelMetadata {
        let cached = destination.load(ordering: .acquiring)
        if cached != 0, let pointer = UnsafeRawPointer(bitPattern: cached) {
            return Unmanaged<ModelMetadata>.fromOpaque(pointer).takeUnretainedValue()
        }
        let metadata = ModelMetadata.of(kind.destinationType)
        destination.store(
            Int(bitPattern: Unmanaged.passUnretained(metadata).toOpaque()), ordering: .releasing)
        return metadata
    }
    private let destination = Atomic<Int>(0)

    /// The value of the relationship in the model of `backing`, loaded first if it is not yet:
    /// its targets resolved through the model's context (the wrapper's getter).
    func value(of backing: ModelBacking) -> V {
        var state = backing.pendingValue(index)
        if let waiting = state, waiting.isWaiting {
            backing.load(index)
            state = backing.pendingValue(index)
        }
        switch state {
        case .one(let reference, let held)?:
            // A held target that still stands for the record: a few field accesses.
            if let held, case .record(let id)? = reference,
                unsafeDowncast(held, to: ModelObject.self).backing?.rowID == id
            {
                return kind.makeOne(held)
            }
            guard let reference else { return kind.makeOne(nil) }
            let found = backing.resolve([reference], of: self, destination: destinationMetadata).first
            if let found, case .record = reference {
                // Held again where the context may hold it.
                backing.setToOne(reference, of: self, held: found)
            }
            return kind.makeOne(found)
        case .many?:
            return kind.make(loadedTargets(of: backing))
        default:
            return kind.make([])
        }
    }

    func loadedTargets(of backing: ModelBacking) -> [AnyObject] {
        if let waiting = backing.pendingValue(index), waiting.isWaiting { backing.load(index) }
        switch backing.pendingValue(index) {
        case .many(let references)?:
            let destination = destinationMetadata
            // Every model at hand (the common case): straight from the registry.
            if let context = backing.context,
                let objects = context.registry.objects(of: references, destination: destination)
            {
                return objects
            }
            return backing.resolve(references, of: self, destination: destination)
        case .one?:
            return kind.models(value(of: backing))
        default:
            return []
        }
    }

    /// The target of this to-one relationship in `object`, without an array (a save asks it of
    /// every inserted model); nil for a to-many relationship.
    override func toOneTarget(in object: AnyObject) -> AnyObject? {
        let backing = ModelBacking.ofModel(object)
        guard !backing.needsLoading(index), case .one(let reference?, let held)? = backing.pendingValue(index)
        else { return nil }
        switch reference {
        case .model(let model): return model
        case .record(let id):
            if let held, ModelBacking.ofModel(held).rowID == id { return held }
            return backing.resolve([.record(id)], of: self, destination: destinationMetadata).first
        }
    }

    func targets(in object: AnyObject) -> [AnyObject] {
        let backing = ModelBacking.of(object)
        guard !backing.needsLoading(index) else { return [] }
        switch backing.pendingValue(index) {
        case .one?:
            return toOneTarget(in: object).map { [$0] } ?? []
        case .many(let references)?:
            return backing.resolve(references, of: self, destination: destinationMetadata)
        default:
            return []
        }
    }

    func setTargets(_ targets: [AnyObject], in object: AnyObject) {
        let backing = ModelBacking.of(object)
        backing.setReferences(
            targets.map(backing.reference(to:)), of: self, toMany: kind.isToMany, held: targets.first)
    }

    func references(in object: AnyObject) -> [ModelReference] {
        ModelBacking.of(object).references(index)
    }

    func holdsTarget(_ target: AnyObject, in object: AnyObject) -> Bool {
        let backing = ModelBacking.ofModel(object)
        guard case let state? = backing.pendingValue(index) else { return false }
        let other = ModelBacking.ofModel(target)
        // A model without a record here is only ever held as a model: identities alone.
        let byRecord = other.rowID != nil && other.status != .inserted
        switch state {
        case .one(let reference?, _):
            return byRecord
                ? backing.refers(reference, to: target, root: destinationMetadata.rootKey)
                : { if case .model(let model) = reference { model === target } else { false } }()
        case .many(let references):
            if let membership = backing.membership(index, of: references) {
                if membership.models.contains(ObjectIdentifier(target)) { return true }
                guard byRecord, let id = other.rowID, membership.records.contains(id) else { return false }
                return backing.refers(.record(id), to: target, root: destinationMetadata.rootKey)
            }
            guard byRecord else {
                return references.contains {
                    if case .model(let model) = $0 { model === target } else { false }
                }
            }
            let root = destinationMetadata.rootKey
            return references.contains { backing.refers($0, to: target, root: root) }
        default:
            return false
        }
    }

    func appendTarget(_ target: AnyObject, in object: AnyObject) {
        let backing = ModelBacking.ofModel(object)
        guard kind.isToMany else { return setTargets([target], in: object) }
        backing.appendReference(backing.reference(to: target), at: index)
    }

    func removeTarget(_ target: AnyObject, in object: AnyObject) {
        let backing = ModelBacking.of(object)
        let root = destinationMetadata.rootKey
        let kept = backing.references(index).filter { !backing.refers($0, to: target, root: root) }
        backing.setReferences(kept, of: self, toMany: kind.isToMany)
    }
}

/// The accessor of a ``Transient`` property: discovery notes it so that the schema's checks know
/// the property is meant not to be stored.
final class TransientAccessor: PropertyAccessor, @unchecked Sendable {
    override var isPersistent: Bool { false }
}

/// A ``Relationship`` whose type is neither a model, an optional model nor an array of models:
/// the schema's checks report it.
final class InvalidRelationshipAccessor: PropertyAccessor, @unchecked Sendable {
    let type: Any.Type
    init<V>(type: V.Type) {
        self.type = type
        super.init(
            ownerFieldOffset: MemoryLayout<Relationship<V>>.offset(of: \Relationship<V>.owner)!,
            indexFieldOffset: MemoryLayout<Relationship<V>>.offset(of: \Relationship<V>.index)!,
            valueFieldOffset: MemoryLayout<Relationship<V>>.offset(of: \Relationship<V>.value)!)
    }
    override var typeDescription: String { String(describing: type) }
}

/// What a relationship property of type `V` holds, found once per property: an optional model
/// (to-one), or an array of models, optional or not (to-many). Its functions convert between a
/// value of the property's type and its models without a cast per read: each is made where the
/// type is known, as a function of that type, and cast once to a function of `V` (the same type).
struct RelationshipKind<V> {
    let destinationType: any PersistentModel.Type
    let isToMany: Bool
    /// The models of a value (none, one, or the array's).
    let models: (V) -> [AnyObject]
    /// The value of models, instances of the destination or of its subclasses (which the caller
    /// checks, with ``ModelMetadata/admits(_:)``): a to-one takes the first, if any.
    let make: ([AnyObject]) -> V
    /// The value of one model or none, without an array (a to-one's read).
    let makeOne: (AnyObject?) -> V

    /// The kind of `V`, or nil when `V` is not a relationship type (a model on its own is not:
    /// a to-one relationship is optional).
    static func of(_: V.Type) -> RelationshipKind<V>? {
        guard !(V.self is AnyClass), let value = V.self as? any RelationshipValue.Type else { return nil }
        func open<R: RelationshipValue>(_: R.Type) -> RelationshipKind<V>? {
            let models: (R) -> [AnyObject] = { $0.relatedModels }
            let make: ([AnyObject]) -> R = { R.make(relatedModels: $0) }
            let makeOne: (AnyObject?) -> R = { R.make(relatedModel: $0) }
            guard let typedModels = models as? (V) -> [AnyObject],
                let typedMake = make as? ([AnyObject]) -> V,
                let typedMakeOne = makeOne as? (AnyObject?) -> V
            else { return nil }
            return RelationshipKind(
                destinationType: R.destinationType, isToMany: R.isToMany, models: typedModels,
                make: typedMake,
                makeOne: typedMakeOne)
        }
        return open(value)
    }
}

/// What a relationship's value can be made of: a model (in an optional, a to-one), an array of
/// models, or an optional array.
protocol RelationshipValue {
    static var destinationType: any PersistentModel.Type { get }
    static var isToMany: Bool { get }
    var relatedModels: [AnyObject] { get }
    /// The value of `models`, instances of the destination type or of its subclasses (for a
    /// single model, the first; there is one).
    static func make(relatedModels models: [AnyObject]) -> Self
    /// The value of `model` or none (for a single model, there is one).
    static func make(relatedModel model: AnyObject?) -> Self
}

extension ModelObject: RelationshipValue {
    static var destinationType: any PersistentModel.Type { self }
    static var isToMany: Bool { false }
    var relatedModels: [AnyObject] { [self] }
    static func make(relatedModels models: [AnyObject]) -> Self { unsafeDowncast(models[0], to: self) }
    static func make(relatedModel model: AnyObject?) -> Self {
        // Only an Optional's wrapped type is asked, and only with a model.
        guard let model else {
            preconditionFailure("DeckKit: a to-one relationship's value made of no model")
        }
        return unsafeDowncast(model, to: self)
    }
}

extension Array: RelationshipValue where Element: PersistentModel {
    static var destinationType: any PersistentModel.Type { Element.self }
    static var isToMany: Bool { true }
    var relatedModels: [AnyObject] { map { $0 } }
    static func make(relatedModels models: [AnyObject]) -> Self {
        models.map { unsafeDowncast($0, to: Element.self) }
    }
    static func make(relatedModel model: AnyObject?) -> Self {
        model.map { [unsafeDowncast($0, to: Element.self)] } ?? []
    }
}

extension Optional: RelationshipValue where Wrapped: RelationshipValue {
    static var destinationType: any PersistentModel.Type { Wrapped.destinationType }
    static var isToMany: Bool { Wrapped.isToMany }
    var relatedModels: [AnyObject] { self?.relatedModels ?? [] }
    static func make(relatedModels models: [AnyObject]) -> Self {
        !Wrapped.isToMany && models.isEmpty ? nil : Wrapped.make(relatedModels: models)
    }
    static func make(relatedModel model: AnyObject?) -> Self {
        !Wrapped.isToMany && model == nil ? nil : Wrapped.make(relatedModel: model)
    }
}

/// The Swift types a fetch reads straight from a cell into a property, with the cursor's typed
/// readers; every other type (and every cell a typed reader does not take: another storage
/// class, a value out of range) goes through the property's ``Codec``.
enum CellKind {
    case string, optionalString
    case int, optionalInt
    case double, optionalDouble
    case date, optionalDate
    case bool, optionalBool
    case other

    init(_ type: Any.Type) {
        switch ObjectIdentifier(type) {
        case ObjectIdentifier(String.self): self = .string
        case ObjectIdentifier(String?.self): self = .optionalString
        case ObjectIdentifier(Int.self): self = .int
        case ObjectIdentifier(Int?.self): self = .optionalInt
        case ObjectIdentifier(Double.self): self = .double
        case ObjectIdentifier(Double?.self): self = .optionalDouble
        case ObjectIdentifier(Date.self): self = .date
        case ObjectIdentifier(Date?.self): self = .optionalDate
        case ObjectIdentifier(Bool.self): self = .bool
        case ObjectIdentifier(Bool?.self): self = .optionalBool
        default: self = .other
        }
    }
}
