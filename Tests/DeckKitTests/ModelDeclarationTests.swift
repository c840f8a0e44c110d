import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// A model's unique constraints, indexes and entity names override ``ModelObject``'s class
/// properties (issue 22 item 6). A declaration that does not match cannot be silently ignored,
/// as a protocol requirement's shadow was (`static var uniqueConstraints:
/// [[PartialKeyPath<Order>]]` compiled and made no constraint): it does not compile, which a test
/// cannot show in process, so it is said here, in ``ModelObject``'s documentation and in
/// *Coming from SwiftData*, and checked with the compiler:
///
/// ```swift
/// final class Order: ModelObject {
///     @Attribute var number = 0
///     static var uniqueConstraints: [[PartialKeyPath<Order>]] { [[\Order.number]] }
///     // error: property 'uniqueConstraints' with type '[[PartialKeyPath<Order>]]' cannot
///     // override a property with type '[[AnyKeyPath]]'
///     static var indexes: [[AnyKeyPath]] { [[\Order.number]] }
///     // error: overriding declaration requires an 'override' keyword
/// }
/// ```
@Suite("Model declarations: class properties a model overrides", .timed)
struct ModelDeclarationTests {
    class Item: ModelObject {
        override class var uniqueConstraints: [[AnyKeyPath]] { [[\Item.code]] }
        override class var indexes: [[AnyKeyPath]] { [[\Item.title, \Item.code]] }
        @Attribute var code = ""
        @Attribute var title = ""
    }

    /// A subclass keeps its superclass's constraint (on the superentity) and adds an index.
    final class Gadget: Item {
        override class var indexes: [[AnyKeyPath]] { [[\Gadget.serial]] }
        @Attribute var serial = 0
    }

    final class Renamed: ModelObject {
        override class var entityName: String { "Widget" }
        override class var originalEntityName: String? { "Gizmo" }
        @Attribute var name = ""
    }

    /// A key path of another type: not an attribute of the model.
    final class Stray: ModelObject {
        override class var uniqueConstraints: [[AnyKeyPath]] { [[\Item.code]] }
        @Attribute var code = ""
    }

    /// Conforms to the protocol without the base class: it cannot hold its models' state.
    final class Plain: PersistentModel {
        static var entityName: String { "Plain" }
        static var uniqueConstraints: [[AnyKeyPath]] { [] }
        static var indexes: [[AnyKeyPath]] { [] }
        static var originalEntityName: String? { nil }
        init() {}
    }

    @Test("Unique constraints, indexes and names declared as overrides reach the store schema")
    func overridesReachTheSchema() throws {
        let schema = Schema([Item.self, Gadget.self, Renamed.self])
        #expect(schema.problems == [])
        let store = try #require(schema.storeSchema)
        let item = try #require(store.entity(named: "Item"))
        #expect(item.uniqueConstraints == [["code"]])
        #expect(item.indexes == [["title", "code"]])
        let gadget = try #require(store.entity(named: "Gadget"))
        #expect(gadget.uniqueConstraints == [])
        #expect(gadget.indexes == [["serial"]])
        let renamed = try #require(store.entity(named: "Widget"))
        #expect(renamed.originalName == "Gizmo")
    }

    @Test("A model does not need to write init(): ModelObject's is inherited")
    func inheritedInit() throws {
        let container = try ModelContainer(
            for: Item.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let item = Item()
        item.code = "A-1"
        context.insert(item)
        try context.save()
        let fetchedContext = ModelContext(container)
        let fetched = try fetchedContext.fetch(FetchDescriptor<Item>())
        #expect(fetched.map(\.code) == ["A-1"])
    }

    @Test("A constraint's key path of another type is a schema problem naming it")
    func strayKeyPath() {
        let problems = Schema([Stray.self]).problems
        #expect(problems.count == 1)
        #expect(problems.first?.contains("is not an attribute of") == true)
    }

    @Test("A PersistentModel that is not a ModelObject is a schema problem saying what to write")
    func notAModelObject() {
        let problems = Schema([Plain.self]).problems
        #expect(problems.contains { $0.contains("is not a subclass of ModelObject") })
    }
}
