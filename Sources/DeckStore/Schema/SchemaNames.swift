// Inside the store the schema's parts go by their short names; users see them nested under
// StoreSchema (`StoreSchema.Entity`…), so DeckKit's SwiftData-shaped `StoreSchema`, `@Attribute` and
// `@Relationship` never collide with them.
typealias Entity = StoreSchema.Entity
typealias Attribute = StoreSchema.Attribute
typealias Relationship = StoreSchema.Relationship
typealias AttributeType = StoreSchema.AttributeType
typealias DeleteRule = StoreSchema.DeleteRule
