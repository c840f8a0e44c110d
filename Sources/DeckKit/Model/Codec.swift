import Foundation

/// A Swift type Deck stores as one of the store's own value types.
protocol BasicStoreValue {
    static var attributeType: StoreSchema.AttributeType { get }
    var storeValue: Value { get }
    /// The value a cell holds, or nil when it holds another type (or one out of range).
    init?(storeValue: Value)
}

extension String: BasicStoreValue {
    static var attributeType: StoreSchema.AttributeType { .string }
    var storeValue: Value { .string(self) }
    init?(storeValue: Value) {
        guard case .string(let text) = storeValue else { return nil }
        self = text
    }
}

extension Bool: BasicStoreValue {
    static var attributeType: StoreSchema.AttributeType { .bool }
    var storeValue: Value { .bool(self) }
    init?(storeValue: Value) {
        switch storeValue {
        case .bool(let flag): self = flag
        case .integer(let number) where number == 0 || number == 1: self = number == 1
        default: return nil
        }
    }
}

/// The fixed-width integers: stored as 64-bit integers; a cell out of the type's range is refused.
protocol IntegerStoreValue: BasicStoreValue, FixedWidthInteger {}

extension IntegerStoreValue {
    static var attributeType: StoreSchema.AttributeType { .integer }
    var storeValue: Value { .integer(Int64(truncatingIfNeeded: self)) }
    init?(storeValue: Value) {
        guard case .integer(let number) = storeValue, let value = Self(exactly: number) else { return nil }
        self = value
    }
}

extension Int: IntegerStoreValue {}
extension Int8: IntegerStoreValue {}
extension Int16: IntegerStoreValue {}
extension Int32: IntegerStoreValue {}
extension Int64: IntegerStoreValue {}
extension UInt8: IntegerStoreValue {}
extension UInt16: IntegerStoreValue {}
extension UInt32: IntegerStoreValue {}

extension Double: BasicStoreValue {
    static var attributeType: StoreSchema.AttributeType { .double }
    var storeValue: Value { .double(self) }
    init?(storeValue: Value) {
        switch storeValue {
        case .double(let number): self = number
        case .integer(let number): self = Double(number)
        default: return nil
        }
    }
}

extension Float: BasicStoreValue {
    static var attributeType: StoreSchema.AttributeType { .double }
    var storeValue: Value { .double(Double(self)) }
    init?(storeValue: Value) {
        guard let number = Double(storeValue: storeValue) else { return nil }
        self = Float(number)
    }
}

extension Date: BasicStoreValue {
    static var attributeType: StoreSchema.AttributeType { .date }
    var storeValue: Value { .date(self) }
    init?(storeValue: Value) {
        guard case .date(let timestamp) = storeValue else { return nil }
        self = timestamp.date
    }
}

extension Data: BasicStoreValue {
    static var attributeType: StoreSchema.AttributeType { .data }
    var storeValue: Value { .data(self) }
    init?(storeValue: Value) {
        guard case .data(let bytes) = storeValue else { return nil }
        self = bytes
    }
}

extension UUID: BasicStoreValue {
    static var attributeType: StoreSchema.AttributeType { .uuid }
    var storeValue: Value { .uuid(self) }
    init?(storeValue: Value) {
        guard case .uuid(let uuid) = storeValue else { return nil }
        self = uuid
    }
}

extension URL: BasicStoreValue {
    static var attributeType: StoreSchema.AttributeType { .url }
    var storeValue: Value { .url(self) }
    init?(storeValue: Value) {
        guard case .url(let url) = storeValue else { return nil }
        self = url
    }
}

extension Decimal: BasicStoreValue {
    static var attributeType: StoreSchema.AttributeType { .decimal }
    var storeValue: Value { .decimal(self) }
    init?(storeValue: Value) {
        guard case .decimal(let number) = storeValue else { return nil }
        self = number
    }
}

/// Lets code that holds a type find out whether it is an optional, and of what.
protocol OptionalType {
    static var wrappedType: Any.Type { get }
    var isNone: Bool { get }
}

extension Optional: OptionalType {
    static var wrappedType: Any.Type { Wrapped.self }
    var isNone: Bool { self == nil }
}

/// How values of one Swift type `V` become store values and back: found once per property (the
/// type checks happen then, not per value).
struct Codec<V> {
    /// The attribute type the values are stored as.
    let type: StoreSchema.AttributeType
    /// Whether `V` is an optional (the attribute may be null).
    let isOptional: Bool
    let encode: (V) throws(DeckError) -> Value
    /// Decodes a cell; nil when the cell does not hold a `V`.
    let decode: (Value) -> V?

    /// The codec for `V`, or nil when Deck cannot store it: the store's own types (and the other
    /// integer widths and `Float`), `RawRepresentable` types by their raw value, and other
    /// `Codable` types as JSON; each of them optional or not.
    static func make() -> Codec<V>? {
        // Optionals first: an optional of a Codable type is Codable itself.
        if let optional = V.self as? any OptionalType.Type { return wrapping(optional.wrappedType) }
        return nonOptional(V.self)
    }

    /// A codec for a `V` that is not an optional.
    private static func nonOptional(_ type: Any.Type) -> Codec<V>? {
        if let basic = type as? any BasicStoreValue.Type { return basicCodec(basic) }
        if let raw = type as? any RawRepresentable.Type, let codec = rawCodec(raw) { return codec }
        if let codable = type as? any Codable.Type { return jsonCodec(codable) }
        return nil
    }

    private static func basicCodec<B: BasicStoreValue>(_: B.Type) -> Codec<V>? {
        guard V.self == B.self else { return nil }
        return Codec(
            type: B.attributeType, isOptional: false,
            encode: { unsafeBitCast($0, to: B.self).storeValue },
            decode: { B(storeValue: $0).map { unsafeBitCast($0, to: V.self) } })
    }

    private static func rawCodec<R: RawRepresentable>(_: R.Type) -> Codec<V>? {
        guard V.self == R.self, let raw = R.RawValue.self as? any BasicStoreValue.Type else { return nil }
        return Codec(
            type: raw.attributeType, isOptional: false,
            encode: { value throws(DeckError) in
                guard let raw = unsafeBitCast(value, to: R.self).rawValue as? any BasicStoreValue else {
                    throw DeckError.unexpected("\(R.self)'s raw value is not a store value")
                }
                return raw.storeValue
            },
            decode: { cell in
                guard let raw = raw.init(storeValue: cell) as? R.RawValue, let value = R(rawValue: raw) else {
                    return nil
                }
                return unsafeBitCast(value, to: V.self)
            })
    }

    private static func jsonCodec<C: Codable>(_: C.Type) -> Codec<V>? {
        guard V.self == C.self else { return nil }
        return Codec(
            type: .json, isOptional: false,
            encode: { value throws(DeckError) in
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                do {
                    let data = try encoder.encode(unsafeBitCast(value, to: C.self))
                    return .json(String(decoding: data, as: UTF8.self))
                } catch {
                    throw DeckError.invalidValue(
                        entity: "\(C.self)", property: "", reason: "cannot be encoded as JSON: \(error)")
                }
            },
            decode: { cell in
                guard case .json(let text) = cell,
                    let value = try? JSONDecoder().decode(C.self, from: Data(text.utf8))
                else { return nil }
                return unsafeBitCast(value, to: V.self)
            })
    }

    /// The codec for `V == Optional<wrapped>`.
    private static func wrapping(_ wrapped: Any.Type) -> Codec<V>? {
        func open<W>(_: W.Type) -> Codec<V>? {
            guard V.self == W?.self, let inner = Codec<W>.nonOptional(W.self) else { return nil }
            return Codec(
                type: inner.type, isOptional: true,
                encode: { value throws(DeckError) in
                    guard let value = unsafeBitCast(value, to: W?.self) else { return .null }
                    return try inner.encode(value)
                },
                decode: { cell in
                    if cell.isNull { return unsafeBitCast(W?.none, to: V.self) }
                    guard let value = inner.decode(cell) else { return nil }
                    return unsafeBitCast(W?.some(value), to: V.self)
                })
        }
        return _openExistential(wrapped, do: open)
    }
}

/// The store value for a Swift value of any type Deck stores (a value captured in a predicate).
func storeValue(of value: Any) -> Value? {
    func open<T>(_ value: T) -> Value? {
        guard let codec = Codec<T>.make() else { return nil }
        return try? codec.encode(value)
    }
    return _openExistential(value, do: open)
}
