import DeckKit
import Foundation

/// The schema's nested types by their short names, for the fuzz targets. (`Attribute` and
/// `Relationship` stay inside this module: DeckKit's property wrappers have those names.)
public typealias Entity = StoreSchema.Entity
typealias Attribute = StoreSchema.Attribute
typealias Relationship = StoreSchema.Relationship
public typealias AttributeType = StoreSchema.AttributeType

extension Fuzz {
    /// The content type of the small template package (the manifest seeds name it).
    public static let noteContentType = "org.deck.fuzz"

    /// A small schema with inline and external data, a unique attribute, an inheritance and a
    /// relationship, so a template made from it reaches most of the store's checks.
    public static let noteSchema = StoreSchema(
        version: "1.0.0",
        entities: [
            Entity(
                "Note",
                attributes: [
                    Attribute("title", .string, options: [.unique]),
                    Attribute("body", .string, defaultValue: .string("")),
                    Attribute("created", .date),
                    Attribute(
                        "scan", .data, isOptional: true, options: [.externalStorage], externalThreshold: 16),
                ],
                relationships: [Relationship("folder", to: "Folder", inverse: "notes")]),
            Entity(
                "Checklist", superentity: "Note",
                attributes: [Attribute("done", .bool, defaultValue: .bool(false))]),
            Entity(
                "Folder",
                attributes: [Attribute("name", .string)],
                relationships: [
                    Relationship("notes", to: "Note", toMany: true, inverse: "folder", deleteRule: .cascade)
                ]),
        ])

    /// A small package of ``noteSchema`` with three records and one blob file, made once per process.
    public static let noteTemplate: String = {
        let path = root + "/template.deck"
        makePackage(at: path, contentType: noteContentType, schema: noteSchema) { package in
            let folder = try package.insert("Folder", ["name": .string("Inbox")])
            let created = Value.date(Date(timeIntervalSince1970: 1_795_000_000))
            _ = try package.insert(
                "Note",
                [
                    "title": .string("hello"), "created": created, "folder": .reference(folder),
                    "scan": .data(Data(repeating: 0xAB, count: 100)),
                ])
            _ = try package.insert(
                "Checklist", ["title": .string("todo"), "created": created, "done": .bool(true)])
        }
        return path
    }()
}
