import Foundation

/// Rows into models: where each property of an entity is in its rows (``RowLayout``, kept per
/// entity for the next rows of it), and the setting of a new instance's properties from a row's
/// cells, the common types by ``CellKind`` straight into the property, the others through their
/// codec, relationships and blobs left to load later.
///
/// It holds no model and no registry: ``ModelContext/instance(at:temporary:)`` finds or makes
/// the instance and registers it. A class, held by a constant: a struct in the context's
/// variable would be copied (its references retained and released) for each row it reads.
final class RowMaterializer {
    let store: PackageStore
    let schema: Schema
    /// The row layouts of the entities fetched so far, and the last one used.
    @exclusivity(unchecked) private var layouts: [String: RowLayout] = [:]
    @exclusivity(unchecked) private var lastLayout: RowLayout?

    init(store: PackageStore, schema: Schema) {
        self.store = store
        self.schema = schema
    }

    /// The models' metadata for records of `entity`, an entity of the document: its own, or, for an
    /// entity the models do not know (one a later version of the app added below one they know),
    /// its nearest ancestor's. Such records are read, changed and deleted as that ancestor's, and
    /// what the models do not know of them is kept as it is.
    func metadata(forStored entity: String) -> ModelMetadata? {
        if let metadata = schema.metadata(named: entity) { return metadata }
        for ancestor in store.schema.inheritanceChain(of: entity).reversed() {
            if let metadata = schema.metadata(named: ancestor.name) { return metadata }
        }
        return nil
    }

    /// Where each of an entity's properties is in its rows.
    final class RowLayout {
        let metadata: ModelMetadata
        let names: [String]
        let attributes: [AttributeSlot]
        /// To-one relationships have a cell (their target's id); to-many ones none.
        let relationships: [(cell: Int?, accessor: PropertyAccessor, toMany: Bool)]

        init(metadata: ModelMetadata, names: [String]) {
            self.metadata = metadata
            self.names = names
            let position = Dictionary(
                names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
            attributes = metadata.attributes.compactMap { accessor, access in
                position[accessor.name].map {
                    AttributeSlot(
                        cell: $0, valueOffset: accessor.offset + accessor.valueFieldOffset,
                        kind: access.cellKind,
                        accessor: accessor, access: access)
                }
            }
            relationships = metadata.relationships.map { accessor, relationship in
                (relationship.isToMany ? nil : position[accessor.name], accessor, relationship.isToMany)
            }
        }
    }

    /// Where one attribute is in a row, and how it is read. The accessors belong to the model
    /// metadata, which lives as long as the program: the slot does not retain them, as copying it
    /// for every cell of every row would.
    struct AttributeSlot {
        let cell: Int
        /// Where the property's value is in an instance.
        let valueOffset: Int
        let kind: CellKind
        unowned(unsafe) let accessor: PropertyAccessor
        unowned(unsafe) let access: any AttributeValueAccess
    }

    /// The layout of the rows of `entity` whose cells are `names` (kept for the next rows of it).
    func layout(entity: String, names: [String]) throws(DeckError) -> RowLayout {
        if let last = lastLayout, last.metadata.entityName == entity, last.names == names {
            return last
        }
        if let known = layouts[entity], known.names == names {
            lastLayout = known
            return known
        }
        guard let metadata = metadata(forStored: entity) else {
            throw DeckError.unknownEntity(entity, known: schema.metadata.keys.sorted())
        }
        let layout = RowLayout(metadata: metadata, names: names)
        layouts[entity] = layout
        lastLayout = layout
        return layout
    }

    /// Sets every property of `object` from the cursor's row (relationships and blobs to load
    /// later).
    func load(_ cursor: RowCursor, layout: RowLayout, into object: AnyObject, backing: ModelBacking)
        throws(DeckError)
    {
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
        for slot in layout.attributes {
            if Self.readCell(cursor, slot, into: base + slot.valueOffset) { continue }
            let (cell, accessor, access) = (slot.cell, slot.accessor, slot.access)
            // Only a data attribute's cell can refer to a blob file.
            if backing.canWait(accessor.index), cursor.type(cell) == .data,
                case .blob(let reference) = cursor.value(cell)
            {
                backing.setPending(accessor.index, .blob(reference))
                continue
            }
            // A reload replaces a value still to be written from a file.
            if backing.needsLoading(accessor.index) { backing.setPending(accessor.index, nil) }
            if !access.load(cursor, cell, into: object) {
                // A value an earlier Deck wrote is no corruption (spec 7.7): say what it is.
                if let legacy = cursor.legacyValue(cell) {
                    throw DeckError.invalidValue(
                        entity: "\(cursor.entity) #\(cursor.id)", property: accessor.name,
                        reason:
                            "holds \(legacy), a legacy value an earlier Deck wrote (spec 7.7), "
                            + "which a \(accessor.typeDescription) cannot hold; make the property optional "
                            + "or set a new value with deck update")
                }
                if let mismatch = (accessor as? any AttributeDescribing)?.mismatch(cursor.value(cell)) {
                    throw DeckError.invalidValue(
                        entity: cursor.entity, property: accessor.name,
                        reason: "record #\(cursor.id) \(mismatch)")
                }
                throw DeckError.corrupt(
                    path: store.url.path,
                    reason:
                        "\(cursor.entity) #\(cursor.id): \(accessor.name) holds \(cursor.value(cell).kindName), "
                        + "which is not a \(accessor.typeDescription)")
            }
        }
        for (cell, accessor, toMany) in layout.relationships {
            if toMany {
                backing.setPending(accessor.index, .toMany)
            } else if let cell, case .reference(let id) = cursor.value(cell) {
                backing.setPending(accessor.index, .toOne(id))
            } else {
                backing.setPending(accessor.index, .toOne(nil))
            }
        }
    }

    /// Sets the property at `field` from the slot's cell when the property is of one of the
    /// ``CellKind``s and the cursor's typed reader takes the cell (what the property's codec would
    /// read, faster); false otherwise, leaving the property as it was.
    @inline(__always)
    private static func readCell(
        _ cursor: RowCursor, _ slot: AttributeSlot, into field: UnsafeMutableRawPointer
    )
        -> Bool
    {
        let cell = slot.cell
        func set<T>(_ value: T?, as _: T.Type) -> Bool {
            guard let value else { return false }
            field.assumingMemoryBound(to: T.self).pointee = value
            return true
        }
        func setOptional<T>(_ read: (Int) -> T?, as _: T.Type) -> Bool {
            if cursor.isNull(cell) {
                field.assumingMemoryBound(to: T?.self).pointee = nil
                return true
            }
            guard let value = read(cell) else { return false }
            field.assumingMemoryBound(to: T?.self).pointee = value
            return true
        }
        switch slot.kind {
        case .string: return set(cursor.string(cell), as: String.self)
        case .optionalString: return setOptional(cursor.string, as: String.self)
        case .int: return set(cursor.integer(cell).map { Int($0) }, as: Int.self)
        case .optionalInt: return setOptional({ cursor.integer($0).map { Int($0) } }, as: Int.self)
        case .double: return set(cursor.double(cell), as: Double.self)
        case .optionalDouble: return setOptional(cursor.double, as: Double.self)
        case .date: return set(cursor.date(cell)?.date, as: Date.self)
        case .optionalDate: return setOptional({ cursor.date($0)?.date }, as: Date.self)
        case .bool: return set(cursor.bool(cell), as: Bool.self)
        case .optionalBool: return setOptional(cursor.bool, as: Bool.self)
        case .other: return false
        }
    }
}

extension PackageStore {
    /// Calls `body` with a cursor on each row `query` matches, read by `reader`, or in a read of
    /// the committed store when it is nil.
    func forEachRow(
        _ query: RecordQuery, in reader: StoreReader? = nil, _ body: (RowCursor) throws(DeckError) -> Void
    ) throws(DeckError) {
        do {
            if let reader {
                try reader.forEachCursor(query) { try body($0) }
            } else {
                try read { reader in try reader.forEachCursor(query) { try body($0) } }
            }
        } catch {
            throw DeckError.wrap(error)
        }
    }
}
