import DeckStore

extension ModelPlanBuilder {
    /// Ordered many-to-many relationships (and ordered to-many ones without an inverse): Deck's
    /// links are a set, so a generated `json` attribute on the entity declaring the relationship,
    /// `<relationship>Order`, keeps the ids of the related records in Core Data's order, read from
    /// the join table's `Z_FOK_` column.
    mutating func generateJoinOrderAttributes() throws(CoreDataError) {
        for name in order {
            guard let entity = byName[name] else { continue }
            for relationship in entity.relationships
            where relationship.isOrdered && relationship.isToMany && !relationship.isTransient {
                guard let destination = byName[relationship.destinationEntityName] else { continue }
                let inverse = try self.inverse(of: relationship, of: entity, destination: destination).inverse
                guard inverse == nil || inverse?.isToMany == true,
                    !(inverse?.name == relationship.name && destination.name == name),
                    let order = try joinOrder(
                        of: relationship, of: entity, inverse: inverse, destination: destination)
                else { continue }
                var taken = takenProperties[name] ?? []
                let attributeName = Plan.unique(
                    Plan.deckName(
                        (names.properties[name]?[relationship.name] ?? relationship.name) + "Order"),
                    in: &taken)
                takenProperties[name] = taken
                generated[name, default: []].append(
                    (
                        StoreSchema.Attribute(attributeName, .json, isOptional: true),
                        Plan.AttributeColumn(
                            name: attributeName, coreDataName: relationship.name, column: order.orderColumn,
                            coreDataType: .string, type: .json, usesExternalStorageEncoding: false,
                            joinOrder: order)
                    ))
                keptJoinOrders.insert(name + "." + relationship.name)
                note(
                    name, relationship.name,
                    "ordered many-to-many: Deck keeps the links as a set, so the order is kept in the generated "
                        + "json attribute \(names.entities[name] ?? name).\(attributeName): the ids of the related "
                        + "\(names.entities[destination.name] ?? destination.name) records in Core Data's order "
                        + "(\(order.table).\(order.orderColumn))")
            }
        }
    }

    /// Where the order of `relationship` is kept: its join table, named for it or for its
    /// inverse, with a position column; nil when the store has none.
    private func joinOrder(
        of relationship: CoreDataRelationship, of entity: CoreDataEntity, inverse: CoreDataRelationship?,
        destination: CoreDataEntity
    ) throws(CoreDataError) -> Plan.JoinOrder? {
        if let join = try context.joinTable(
            entity: entity, relationship: relationship, inverse: inverse, destination: destination,
            names: names, numbers: numbers, children: children)
        {
            return join.orderColumn.map {
                Plan.JoinOrder(
                    table: join.table, ownerColumn: join.sourceColumn, elementColumn: join.destinationColumn,
                    orderColumn: $0)
            }
        }
        guard let inverse,
            let join = try context.joinTable(
                entity: destination, relationship: inverse, inverse: relationship, destination: entity,
                names: names, numbers: numbers, children: children)
        else { return nil }
        return join.orderColumn.map {
            Plan.JoinOrder(
                table: join.table, ownerColumn: join.destinationColumn, elementColumn: join.sourceColumn,
                orderColumn: $0)
        }
    }
}
