import Foundation

/// How a document's stored schema differs from the models' (what would be misread or lost), one
/// line per difference.
package enum SchemaComparison {
    /// The differences, each naming the stored schema as `place` ("the document", or "the plan's
    /// version 2.0.0" when the stored schema is a plan's).
    package static func differences(
        stored: StoreSchema, models: StoreSchema, place: String = "the document"
    ) -> [String] {
        matching(stored.entities, models.entities, name: \.name, prefix: "", place: place) { old, entity in
            var differences: [String] = []
            if old.superentity != entity.superentity {
                differences.append(
                    "\(entity.name): inherits from \(old.superentity ?? "nothing") in \(place), "
                        + "\(entity.superentity ?? "nothing") in the models")
            }
            differences += matching(
                old.attributes, entity.attributes, name: \.name, prefix: entity.name + ".", place: place
            ) {
                was, attribute in
                compare(was, attribute, in: entity.name, place: place)
            }
            differences += matching(
                old.relationships, entity.relationships, name: \.name, prefix: entity.name + ".", place: place
            ) { was, relationship in
                compare(was, relationship, in: entity.name, place: place)
            }
            if Set(old.uniqueConstraints) != Set(entity.uniqueConstraints) {
                differences.append("\(entity.name): unique constraints differ")
            }
            if Set(old.indexes) != Set(entity.indexes) {
                differences.append("\(entity.name): indexes differ")
            }
            return differences
        }
    }

    /// Pairs `stored` and `models` by name: one line for each only in one of them, and what
    /// `compare` says of each pair.
    private static func matching<T>(
        _ stored: [T], _ models: [T], name: KeyPath<T, String>, prefix: String, place: String,
        compare: (T, T) -> [String]
    ) -> [String] {
        let byName = Dictionary(
            stored.map { ($0[keyPath: name], $0) }, uniquingKeysWith: { first, _ in first })
        var differences: [String] = []
        for item in models {
            if let old = byName[item[keyPath: name]] {
                differences += compare(old, item)
            } else {
                differences.append(prefix + item[keyPath: name] + ": missing from \(place)")
            }
        }
        let modelNames = Set(models.map { $0[keyPath: name] })
        for item in stored where !modelNames.contains(item[keyPath: name]) {
            differences.append(prefix + item[keyPath: name] + ": in \(place), not in the models")
        }
        return differences
    }

    private static func compare(
        _ was: StoreSchema.Attribute, _ attribute: StoreSchema.Attribute, in entity: String, place: String
    )
        -> [String]
    {
        let name = entity + "." + attribute.name
        var differences: [String] = []
        if was.type != attribute.type {
            differences.append(
                "\(name): \(was.type.rawValue) in \(place), \(attribute.type.rawValue) in the models")
        }
        if was.isOptional != attribute.isOptional {
            differences.append(
                "\(name): \(was.isOptional ? "optional" : "required") in \(place), "
                    + "\(attribute.isOptional ? "optional" : "required") in the models")
        }
        let relevant: StoreSchema.Attribute.Options = [.unique, .externalStorage]
        if was.options.intersection(relevant) != attribute.options.intersection(relevant) {
            differences.append("\(name): options differ")
        }
        return differences
    }

    private static func compare(
        _ was: StoreSchema.Relationship, _ relationship: StoreSchema.Relationship, in entity: String,
        place: String
    ) -> [String] {
        let name = entity + "." + relationship.name
        var differences: [String] = []
        if was.destination != relationship.destination || was.isToMany != relationship.isToMany {
            differences.append(
                "\(name): \(describe(was)) in \(place), \(describe(relationship)) in the models")
        }
        if was.deleteRule != relationship.deleteRule {
            differences.append(
                "\(name): delete rule \(was.deleteRule.rawValue) in \(place), "
                    + "\(relationship.deleteRule.rawValue) in the models")
        }
        return differences
    }

    private static func describe(_ relationship: StoreSchema.Relationship) -> String {
        (relationship.isToMany ? "to-many " : "to-one ") + relationship.destination
    }
}
