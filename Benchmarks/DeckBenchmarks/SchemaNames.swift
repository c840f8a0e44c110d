import DeckKit

// The store schema's parts by their short names within this module.
typealias Entity = StoreSchema.Entity
typealias Attribute = StoreSchema.Attribute
typealias Relationship = StoreSchema.Relationship
typealias AttributeType = StoreSchema.AttributeType
typealias DeleteRule = StoreSchema.DeleteRule
