import DeckArguments
import DeckKit

// The store schema's parts by their short names within this module (they are nested under
// StoreSchema so that they never collide with the model layer's names).
typealias Entity = StoreSchema.Entity
typealias Attribute = StoreSchema.Attribute
typealias Relationship = StoreSchema.Relationship
typealias AttributeType = StoreSchema.AttributeType
typealias DeleteRule = StoreSchema.DeleteRule
