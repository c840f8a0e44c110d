import Foundation

/// A Swift type Deck stores as one of the store's own value types.
///
/// The `read` and `write` requirements move values between cells and a property's storage (a
/// `Self` or a `Self?`) through raw pointers: implemented, through the witness table, with
/// `Self` concrete, so that reading a fetched record costs no generic metadata lookups.
protocol BasicStoreValue {
    static var attributeType: StoreSchema.AttributeType { get }
    var storeValue: Value { get }
    /// The value a cell holds, or nil when it holds another type (or one out of range).
    init?(storeValue: Value)
    /// Sets the `Self` at `slot` from `cell`; false when the cell does not hold one.
    static func read(_ cell: Value, into slot: UnsafeMutableRawPointer) -> Bool
    /// Sets the `Self?` at `slot` from `cell` (null is nil).
    static func readOptional(_ cell: Value, into slot: UnsafeMutableRawPointer) -> Bool
    /// The cell for the `Self` at `slot`.
    static func write(from slot: UnsafeRawPointer) -> Value
    /// The cell for the `Self?` at `slot` (nil is null).
    static func writeOptional(from slot: UnsafeRawPointer) -> Value
    /// The value of cell `cell` of `cursor` when the cursor's typed reader for `Self`'s store
    /// type has it; nil sends the caller to the general path (``read(_:into:)``).
    static func fastValue(_ cursor: RowCursor, _ cell: Int) -> Self?
    /// Sets the `Self` at `slot` from cell `cell` of `cursor`; false when it does not hold one.
    static func read(_ cursor: RowCursor, _ cell: Int, into slot: UnsafeMutableRawPointer) -> Bool
    /// Sets the `Self?` at `slot` from cell `cell` of `cursor` (null is nil).
    static func readOptional(_ cursor: RowCursor, _ cell: Int, into slot: UnsafeMutableRawPointer) -> Bool
}

extension BasicStoreValue {
    @inline(__always)
    static func read(_ cell: Value, into slot: UnsafeMutableRawPointer) -> Bool {
        guard let value = Self(storeValue: cell) else { return false }
        slot.assumingMemoryBound(to: Self.self).pointee = value
        return true
    }

    @inline(__always)
    static func readOptional(_ cell: Value, into slot: UnsafeMutableRawPointer) -> Bool {
        if cell.isNull {
            slot.assumingMemoryBound(to: Self?.self).pointee = nil
            return true
        }
        guard let value = Self(storeValue: cell) else { return false }
        slot.assumingMemoryBound(to: Self?.self).pointee = value
        return true
    }

    @inline(__always)
    static func fastValue(_ cursor: RowCursor, _ cell: Int) -> Self? { nil }

    @inline(__always)
    static func read(_ cursor: RowCursor, _ cell: Int, into slot: UnsafeMutableRawPointer) -> Bool {
        if let value = fastValue(cursor, cell) {
            slot.assumingMemoryBound(to: Self.self).pointee = value
            return true
        }
        return read(cursor.value(cell), into: slot)
    }

    @inline(__always)
    static func readOptional(_ cursor: RowCursor, _ cell: Int, into slot: UnsafeMutableRawPointer) -> Bool {
        if let value = fastValue(cursor, cell) {
            slot.assumingMemoryBound(to: Self?.self).pointee = value
            return true
        }
        return readOptional(cursor.value(cell), into: slot)
    }

    @inline(__always)
    static func write(from slot: UnsafeRawPointer) -> Value {
        slot.assumingMemoryBound(to: Self.self).pointee.storeValue
    }

    @inline(__always)
    static func writeOptional(from slot: UnsafeRawPointer) -> Value {
        slot.assumingMemoryBound(to: Self?.self).pointee?.storeValue ?? .null
    }
}

extension String: BasicStoreValue {
    static var attributeType: StoreSchema.AttributeType { .string }
    var storeValue: Value { .string(self) }
    static func fastValue(_ cursor: RowCursor, _ cell: Int) -> String? { cursor.string(cell) }
    init?(storeValue: Value) {
        guard case .string(let text) = storeValue else { return nil }
        self = text
    }
}

extension Bool: BasicStoreValue {
    static var attributeType: StoreSchema.AttributeType { .bool }
    var storeValue: Value { .bool(self) }
    static func fastValue(_ cursor: RowCursor, _ cell: Int) -> Bool? { cursor.bool(cell) }
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
    static func fastValue(_ cursor: RowCursor, _ cell: Int) -> Self? {
        cursor.integer(cell).flatMap(Self.init(exactly:))
    }
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
    static func fastValue(_ cursor: RowCursor, _ cell: Int) -> Double? { cursor.double(cell) }
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
    static func fastValue(_ cursor: RowCursor, _ cell: Int) -> Date? { cursor.date(cell)?.date }
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
    var wrappedValue: Any? { get }
}

extension Optional: OptionalType {
    static var wrappedType: Any.Type { Wrapped.self }
    var isNone: Bool { self == nil }
    var wrappedValue: Any? { self.map { $0 } }
}

/// How values of one Swift type `V` become store values and back: found once per property (the
/// type checks happen then, not per value). Values move through pointers to a `V` (a property's
/// storage), so that the store's own types need no generic code per value.
struct Codec<V> {
    /// The attribute type the values are stored as.
    let type: StoreSchema.AttributeType
    /// Whether `V` is an optional (the attribute may be null).
    let isOptional: Bool
    /// The cell for the `V` at a pointer.
    let write: (UnsafeRawPointer) throws(DeckError) -> Value
    /// Sets the `V` at a pointer from a cell; false when the cell does not hold a `V`.
    let read: (Value, UnsafeMutableRawPointer) -> Bool
    /// Sets the `V` at a pointer from a cell of a fetch's cursor, as ``read`` does from the cell's
    /// value (faster for the store's own types).
    let readCell: (RowCursor, Int, UnsafeMutableRawPointer) -> Bool

    init(
        type: StoreSchema.AttributeType, isOptional: Bool,
        write: @escaping (UnsafeRawPointer) throws(DeckError) -> Value,
        read: @escaping (Value, UnsafeMutableRawPointer) -> Bool,
        readCell: ((RowCursor, Int, UnsafeMutableRawPointer) -> Bool)? = nil
    ) {
        self.type = type
        self.isOptional = isOptional
        self.write = write
        self.read = read
        self.readCell = readCell ?? { cursor, cell, pointer in read(cursor.value(cell), pointer) }
    }

    /// The cell for `value`.
    func encode(_ value: V) throws(DeckError) -> Value {
        var copy = value
        return try withUnsafePointer(to: &copy) { pointer throws(DeckError) in
            try write(UnsafeRawPointer(pointer))
        }
    }

    /// The codec for `V`, or nil when Deck cannot store it: the store's own types (and the other
    /// integer widths and `Float`), `RawRepresentable` types by their raw value, and other
    /// `Codable` types as JSON; each of them optional or not.
    static func make() -> Codec<V>? {
        // 64-bit unsigned integers do not fit the store's integers whole: refused rather than
        // stored as JSON text that sorts and compares as text.
        if V.self == UInt.self || V.self == UInt64.self || V.self == UInt?.self || V.self == UInt64?.self {
            return nil
        }
        // A nested optional (`Int??`): a cell holds one null, so `.some(nil)` would read back as
        // `nil`. Refused rather than changed on the way through the store.
        if isNestedOptional { return nil }
        if let basic = V.self as? any BasicStoreValue.Type {
            return Codec(
                type: basic.attributeType, isOptional: false, write: basic.write, read: basic.read,
                readCell: basic.read)
        }
        // Optionals next: an optional of a Codable type is Codable itself.
        if let optional = V.self as? any OptionalType.Type {
            if let basic = optional.wrappedType as? any BasicStoreValue.Type {
                return Codec(
                    type: basic.attributeType, isOptional: true, write: basic.writeOptional,
                    read: basic.readOptional, readCell: basic.readOptional)
            }
            return wrapping(optional.wrappedType)
        }
        return typed(V.self)
    }

    /// Whether `V` is an optional of an optional (`Int??`), which Deck refuses.
    static var isNestedOptional: Bool {
        guard let optional = V.self as? any OptionalType.Type else { return false }
        return optional.wrappedType is any OptionalType.Type
    }

    /// A codec for a `V` (not an optional) that converts whole values: raw values and JSON.
    private static func typed(_ type: Any.Type) -> Codec<V>? {
        guard let (storeType, encode, decode) = conversions(type) else { return nil }
        return Codec(
            type: storeType, isOptional: false,
            write: { pointer throws(DeckError) in try encode(pointer.assumingMemoryBound(to: V.self).pointee)
            },
            read: { cell, pointer in
                guard let value = decode(cell) else { return false }
                pointer.assumingMemoryBound(to: V.self).pointee = value
                return true
            })
    }

    /// The codec for `V == Optional<wrapped>`, `wrapped` a raw-value or JSON type.
    private static func wrapping(_ wrapped: Any.Type) -> Codec<V>? {
        func open<W>(_: W.Type) -> Codec<V>? {
            guard V.self == W?.self, let (storeType, encode, decode) = Codec<W>.conversions(W.self) else {
                return nil
            }
            return Codec(
                type: storeType, isOptional: true,
                write: { pointer throws(DeckError) in
                    guard let value = pointer.assumingMemoryBound(to: W?.self).pointee else { return .null }
                    return try encode(value)
                },
                read: { cell, pointer in
                    if cell.isNull {
                        pointer.assumingMemoryBound(to: W?.self).pointee = nil
                        return true
                    }
                    guard let value = decode(cell) else { return false }
                    pointer.assumingMemoryBound(to: W?.self).pointee = value
                    return true
                })
        }
        return _openExistential(wrapped, do: open)
    }

    typealias Conversions = (
        StoreSchema.AttributeType, (V) throws(DeckError) -> Value, (Value) -> V?
    )

    /// Whole-value conversions for a `V` that is `RawRepresentable` with a store raw value, or
    /// `Codable` (as JSON).
    private static func conversions(_ type: Any.Type) -> Conversions? {
        if let raw = type as? any RawRepresentable.Type, let found = rawConversions(raw) { return found }
        if let codable = type as? any Codable.Type { return jsonConversions(codable) }
        return nil
    }

    private static func rawConversions<R: RawRepresentable>(_: R.Type) -> Conversions? {
        guard V.self == R.self, let raw = R.RawValue.self as? any BasicStoreValue.Type else { return nil }
        return (
            raw.attributeType,
            { value throws(DeckError) in
                guard let raw = unsafeBitCast(value, to: R.self).rawValue as? any BasicStoreValue else {
                    throw DeckError.unexpected("\(R.self)'s raw value is not a store value")
                }
                return raw.storeValue
            },
            { cell in
                guard let raw = raw.init(storeValue: cell) as? R.RawValue, let value = R(rawValue: raw) else {
                    return nil
                }
                return unsafeBitCast(value, to: V.self)
            }
        )
    }

    private static func jsonConversions<C: Codable>(_: C.Type) -> Conversions? {
        guard V.self == C.self else { return nil }
        return (
            .json,
            { value throws(DeckError) in
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
            { cell in
                guard case .json(let text) = cell,
                    let value = try? JSONDecoder().decode(C.self, from: Data(text.utf8))
                else { return nil }
                return unsafeBitCast(value, to: V.self)
            }
        )
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
