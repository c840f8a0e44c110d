import DeckKit
import DeckTestTiming
import Foundation
import Testing

// Plain classes stand for models: the compiler only sees their key paths, through a resolver.
// (Codable and Sendable so that a `#Predicate` can capture one, Hashable for `==` and `contains`.)

/// Equal when the same object, as models are.
protocol IdentityHashable: AnyObject, Hashable {}

extension IdentityHashable {
    static func == (a: Self, b: Self) -> Bool { a === b }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

final class PDeck: IdentityHashable, Codable, @unchecked Sendable {
    var id: Int64 = 0
    var title = ""
    init(_ id: Int64, _ title: String) {
        self.id = id
        self.title = title
    }
}

final class PTag: IdentityHashable, Codable, @unchecked Sendable {
    var id: Int64 = 0
    var name = ""
    init(_ id: Int64, _ name: String) {
        self.id = id
        self.name = name
    }
}

final class PCard: IdentityHashable, Codable, @unchecked Sendable {
    var id: Int64 = 0
    var front = ""
    var back: String? = nil
    var reps = 0
    var ease = 2.5
    var due: Double? = nil
    var done = false
    var created = Date(timeIntervalSince1970: 0)
    var deck: PDeck? = nil
    var tags: [PTag] = []
    /// Not persistent: the resolver does not know it.
    var scratch = 0
    var summary: String { front + "/" + (back ?? "") }

    init(
        _ id: Int64, _ front: String, back: String? = nil, reps: Int = 0, ease: Double = 2.5,
        due: Double? = nil,
        done: Bool = false, deck: PDeck? = nil, tags: [PTag] = []
    ) {
        self.id = id
        self.front = front
        self.back = back
        self.reps = reps
        self.ease = ease
        self.due = due
        self.done = done
        self.deck = deck
        self.tags = tags
    }
}

/// A resolver over the three test classes, as the model layer's will be over model metadata.
struct TestResolver: PredicateSchemaResolver {
    let properties: [AnyKeyPath: ResolvedProperty] = [
        \PCard.front: ResolvedProperty("front", .attribute(.string)),
        \PCard.back: ResolvedProperty("back", .attribute(.string)),
        \PCard.reps: ResolvedProperty("reps", .attribute(.integer)),
        \PCard.ease: ResolvedProperty("ease", .attribute(.double)),
        \PCard.due: ResolvedProperty("due", .attribute(.double)),
        \PCard.done: ResolvedProperty("done", .attribute(.bool)),
        \PCard.created: ResolvedProperty("created", .attribute(.date)),
        \PCard.deck: ResolvedProperty("deck", .toOne),
        \PCard.tags: ResolvedProperty("tags", .toMany),
        \PDeck.title: ResolvedProperty("title", .attribute(.string)),
        \PTag.name: ResolvedProperty("name", .attribute(.string)),
    ]

    func property(_ keyPath: AnyKeyPath) -> ResolvedProperty? { properties[keyPath] }

    func value(_ value: Any) throws(DeckError) -> Value {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return .null }
            return try self.value(wrapped)
        }
        switch value {
        case let text as String: return .string(text)
        case let number as Int: return .integer(Int64(number))
        case let number as Double: return .double(number)
        case let flag as Bool: return .bool(flag)
        case let date as Date: return .date(Timestamp(date))
        case let deck as PDeck: return .reference(deck.id)
        case let tag as PTag: return .reference(tag.id)
        case let card as PCard: return .reference(card.id)
        default:
            throw DeckError.invalidQuery("#Predicate: a captured \(type(of: value)) has no store value")
        }
    }
}

@Suite(.timed) struct PredicateCompilerTests {
    let resolver = TestResolver()

    func compiled(_ predicate: Predicate<PCard>) throws(DeckError) -> QueryExpression {
        try PredicateCompiler.compile(predicate, resolver: resolver)
    }

    /// The message of the error compiling `predicate` throws.
    func refusal(_ predicate: Predicate<PCard>) -> String {
        do {
            let expression = try compiled(predicate)
            return "compiled: \(expression)"
        } catch {
            if case .invalidQuery(let message) = error { return message }
            return "\(error)"
        }
    }

    // MARK: What each form compiles to

    @Test func comparisonsAndLogic() throws {
        #expect(
            try compiled(#Predicate { $0.reps > 2 && $0.done })
                == .and([.property("reps") > 2, .compare(.property("done"), .equal, true)]))
        #expect(
            try compiled(#Predicate { $0.reps <= 2 || !($0.ease >= 1.5) })
                == .or([.property("reps") <= 2, .not(.property("ease") >= 1.5)]))
        #expect(try compiled(#Predicate { $0.back == nil }) == .property("back").equals(.null))
        #expect(try compiled(#Predicate<PCard> { _ in true }) == true)
        #expect(try compiled(Predicate<PCard>.false) == false)
        #expect(try compiled(#Predicate { $0.back != "x" }) == .not(.property("back").equals("x")))
        #expect(
            try compiled(#Predicate { $0.done == ($0.reps > 1) })
                == .or([
                    .and([.compare(.property("done"), .equal, true), .property("reps") > 1]),
                    .and([.compare(.property("done"), .equal, false), .not(.property("reps") > 1)]),
                ]))
    }

    @Test func arithmetic() throws {
        #expect(
            try compiled(#Predicate { $0.reps * 2 - 1 >= 3 })
                == (.property("reps") * 2 - 1 >= 3))
        #expect(try compiled(#Predicate { $0.reps / 2 == 1 }) == (.property("reps") / 2).equals(1))
        #expect(try compiled(#Predicate { $0.ease / 2.0 > 1.0 }) == (.property("ease") / 2.0 > 1.0))
        #expect(try compiled(#Predicate { -$0.reps < -2 }) == (.negate(.property("reps")) < .negate(2)))
    }

    @Test func optionals() throws {
        #expect(
            try compiled(#Predicate { $0.deck?.title == "Spanish" })
                == .property("deck.title").equals("Spanish"))
        #expect(
            try compiled(#Predicate { $0.deck!.title == "Spanish" })
                == .property("deck.title").equals("Spanish"))
        #expect(try compiled(#Predicate { ($0.due ?? 0) > 1.5 }) == (.coalesce(.property("due"), 0.0) > 1.5))
        let spanish = PDeck(7, "Spanish")
        #expect(
            try compiled(#Predicate { $0.deck == spanish }) == .property("deck").equals(.value(.reference(7)))
        )
        #expect(try compiled(#Predicate { $0.deck == nil }) == .property("deck").equals(.null))
        // A Bool? from `?.` is nil where the optional is: `== false` is not true for a nil.
        #expect(
            try compiled(#Predicate { $0.back?.contains("x") == false })
                == .and([.not(.isNull(.property("back"))), .not(.property("back").contains("x"))]))
    }

    @Test func text() throws {
        let same = ComparisonResult.orderedSame
        #expect(try compiled(#Predicate { $0.front.contains("ol") }) == .property("front").contains("ol"))
        #expect(try compiled(#Predicate { $0.front.starts(with: "h") }) == .property("front").beginsWith("h"))
        #expect(try compiled(#Predicate { $0.front.isEmpty }) == .property("front").equals(""))
        #expect(
            try compiled(#Predicate { $0.front.localizedStandardContains("É") })
                == .property("front").contains("É", .caseAndDiacriticInsensitive))
        #expect(
            try compiled(#Predicate { $0.front.caseInsensitiveCompare("Straße") == same })
                == .property("front").equals("Straße", .caseInsensitive))
        #expect(
            try compiled(#Predicate { $0.front.caseInsensitiveCompare("x") != same })
                == .not(.property("front").equals("x", .caseInsensitive)))
    }

    @Test func toManyRelationships() throws {
        let verb = PTag(3, "verb")
        #expect(
            try compiled(#Predicate { $0.tags.contains { $0.name == "verb" } })
                == .any(
                    .property("tags"), element: .init("e1"),
                    where: .variable(.init("e1")).property("name").equals("verb")))
        #expect(
            try compiled(#Predicate { $0.tags.allSatisfy { $0.name.starts(with: "v") } })
                == .all(
                    .property("tags"), element: .init("e1"),
                    where: .variable(.init("e1")).property("name").beginsWith("v")))
        #expect(try compiled(#Predicate { $0.tags.count >= 2 }) == (.count(.property("tags")) >= 2))
        #expect(try compiled(#Predicate { $0.tags.isEmpty }) == .isNull(.property("tags")))
        #expect(
            try compiled(#Predicate { $0.tags.contains(verb) })
                == .property("tags").equals(.value(.reference(3))))
        // The element and the record being queried, side by side.
        #expect(
            try compiled(#Predicate<PCard> { card in card.tags.contains { tag in tag.name == card.front } })
                == .any(
                    .property("tags"), element: .init("e1"),
                    where: .variable(.init("e1")).property("name").equals(.property("front"))))
    }

    @Test func conditionalsListsAndRanges() throws {
        #expect(
            try compiled(#Predicate { ($0.done ? $0.reps : $0.reps + 10) > 11 })
                == .or([
                    .and([.compare(.property("done"), .equal, true), .property("reps") > 11]),
                    .and([.not(.compare(.property("done"), .equal, true)), .property("reps") + 10 > 11]),
                ]))
        #expect(try compiled(#Predicate { [1, 3].contains($0.reps) }) == .property("reps").isIn([1, 3]))
        let backs: [String?] = ["one", nil]
        #expect(
            try compiled(#Predicate { backs.contains($0.back) })
                == .or([.property("back").isIn(["one"]), .isNull(.property("back"))]))
        #expect(
            try compiled(#Predicate { (1...3).contains($0.reps) })
                == .and([1 <= .property("reps"), .property("reps") <= 3]))
        let window = 1..<3
        #expect(
            try compiled(#Predicate { window.contains($0.reps) })
                == .and([1 <= .property("reps"), .property("reps") < 3]))
    }

    // MARK: What is refused

    @Test func unsupportedKindsAreNamed() {
        let ascending = ComparisonResult.orderedAscending
        let first = #Predicate<PCard> { $0.tags.first?.name == "x" }
        #expect(
            refusal(#Predicate { $0.reps % 2 == 0 }).hasPrefix(
                "#Predicate: IntRemainder (%) is not supported: "))
        #expect(refusal(#Predicate { $0.summary == "x" }).contains("is not a persistent property"))
        #expect(refusal(#Predicate { $0.scratch > 1 }).contains("is not a persistent property"))
        #expect(
            refusal(#Predicate { $0.front.count > 3 }).hasPrefix("#Predicate: String.count is not supported"))
        #expect(
            refusal(#Predicate { $0.tags.filter { $0.name == "x" }.isEmpty })
                .hasPrefix("#Predicate: Filter (filter) is not supported"))
        #expect(
            refusal(#Predicate { $0.front.caseInsensitiveCompare("a") == ascending })
                .contains("only == .orderedSame and != .orderedSame translate"))
        #expect(refusal(first).contains("of a to-many relationship"))
        let captured = PCard(1, "x")
        #expect(refusal(#Predicate { $0.front == captured.front }).contains("of a captured value"))
        #expect(refusal(#Predicate { $0.reps == $0.tags.count % 2 }).contains("IntRemainder"))
        // Conditionals multiply: 2 × 2 × 2 × … alternatives for one comparison are capped.
        let (a, b): (Int, Int) = (1, 2)
        let many = #Predicate<PCard> {
            (($0.done ? a : b) * ($0.done ? a : b)) * (($0.done ? a : b) * ($0.done ? a : b))
                * (($0.done ? a : b) * ($0.done ? a : b) * ($0.done ? a : b)) > a
        }
        #expect(refusal(many).contains("combine into more than 64 alternatives"))
        let prefix = [PTag(1, "x")]
        let startsWith = #Predicate<PCard> { $0.tags.starts(with: prefix) }
        #expect(
            refusal(startsWith)
                .hasPrefix("#Predicate: starts(with:) of a collection that is not a text is not supported"))
        let ranks = ["hola": 1]
        #expect(
            refusal(#Predicate { ranks[$0.front] == 1 })
                .hasPrefix(
                    "#Predicate: DictionaryKeySubscript is not supported: the store has no translation"))
        let url = URL(fileURLWithPath: "/")
        #expect(refusal(#Predicate { _ in url == url }) == "#Predicate: a captured URL has no store value")
    }

    // MARK: Sort descriptors

    @Test func sortDescriptors() throws {
        let keys = try PredicateCompiler.sortKeys(
            [
                SortDescriptor(\PCard.front), SortDescriptor(\PCard.due, order: .reverse),
                SortDescriptor(\PCard.front, comparator: .lexical),
                SortDescriptor(\PCard.back, comparator: String.StandardComparator(.lexical, order: .reverse)),
            ], resolver: resolver)
        #expect(
            keys == [
                SortKey("front", folding: .caseAndDiacriticInsensitive), SortKey("due", ascending: false),
                SortKey("front"), SortKey("back", ascending: false),
            ])
        #expect {
            try PredicateCompiler.sortKeys([SortDescriptor(\PCard.deck?.title)], resolver: resolver)
        } throws: { error in
            guard case .invalidQuery(let message) = error as? DeckError else { return false }
            return message.contains("is not a persistent property of PCard")
        }
    }
}

/// Predicates run for real: each one fetched from a store and evaluated in memory on the same
/// cards must select the same ones, nulls included.
@Suite(.timed) struct PredicateAgreementTests {
    static let schema = StoreSchema(entities: [
        StoreSchema.Entity(
            "Deck", attributes: [StoreSchema.Attribute("title", .string)],
            relationships: [StoreSchema.Relationship("cards", to: "Card", toMany: true, inverse: "deck")]),
        StoreSchema.Entity(
            "Tag", attributes: [StoreSchema.Attribute("name", .string)],
            relationships: [StoreSchema.Relationship("cards", to: "Card", toMany: true, inverse: "tags")]),
        StoreSchema.Entity(
            "Card",
            attributes: [
                StoreSchema.Attribute("front", .string),
                StoreSchema.Attribute("back", .string, isOptional: true),
                StoreSchema.Attribute("reps", .integer), StoreSchema.Attribute("ease", .double),
                StoreSchema.Attribute("due", .double, isOptional: true), StoreSchema.Attribute("done", .bool),
                StoreSchema.Attribute("created", .date),
            ],
            relationships: [
                StoreSchema.Relationship("deck", to: "Deck", inverse: "cards"),
                StoreSchema.Relationship("tags", to: "Tag", toMany: true, inverse: "cards"),
            ]),
    ])

    /// The objects, with ids the store gave them.
    struct World {
        var spanish: PDeck
        var french: PDeck
        var verb: PTag
        var noun: PTag
        var cards: [PCard]
    }

    /// The same cards as objects and as records of a fresh store.
    func withWorld(_ body: (World, PackageStore) throws -> Void) throws {
        let scratch = try ScratchDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let directory = scratch.url
        let store = try PackageStore.create(
            at: directory.appendingPathComponent("P.deck"), contentType: "org.example.p", schema: Self.schema)
        defer { try? store.close(discardingChanges: true) }
        let world = try store.write { tx in
            let spanish = PDeck(try tx.insert("Deck", ["title": .string("Spanish")]), "Spanish")
            let french = PDeck(try tx.insert("Deck", ["title": .string("Français")]), "Français")
            let verb = PTag(try tx.insert("Tag", ["name": .string("verb")]), "verb")
            let noun = PTag(try tx.insert("Tag", ["name": .string("noun")]), "noun")
            let cards = [
                PCard(
                    0, "hola", back: "hello", reps: 3, ease: 2.5, due: 1, done: true, deck: spanish,
                    tags: [noun]),
                PCard(0, "comer", back: nil, reps: 0, ease: 1.3, due: nil, deck: spanish, tags: [verb]),
                PCard(
                    0, "Éclair", back: "éclair", reps: 5, ease: 3.1, due: 2.5, deck: french,
                    tags: [noun, verb]),
                PCard(0, "école", back: "", reps: 1, ease: 2.0, due: 0.5, done: true, deck: french),
                PCard(0, "Straße", back: "street", reps: 2, ease: 2.6, due: nil, deck: nil, tags: [noun]),
                PCard(0, "STRASSE", back: nil, reps: 4, ease: 1.0, due: 3, done: true, tags: [verb]),
                PCard(0, "", back: "x", reps: 0, ease: 4.0, due: nil),
                PCard(0, "verb", back: "vx", reps: 2, ease: 2.5, due: 2, deck: spanish, tags: [verb]),
            ]
            for (index, card) in cards.enumerated() {
                card.created = Date(timeIntervalSince1970: Double(1_000 * (index % 3)))
                card.id = try tx.insert(
                    "Card",
                    [
                        "front": .string(card.front), "back": card.back.map(Value.string) ?? .null,
                        "reps": .integer(Int64(card.reps)), "ease": .double(card.ease),
                        "due": card.due.map(Value.double) ?? .null, "done": .bool(card.done),
                        "created": .date(Timestamp(card.created)),
                        "deck": card.deck.map { .reference($0.id) } ?? .null,
                        "tags": .references(card.tags.map(\.id)),
                    ])
            }
            return World(spanish: spanish, french: french, verb: verb, noun: noun, cards: cards)
        }.value
        try body(world, store)
    }

    /// Checks that the store and `evaluate` select the same cards; returns how many they select.
    @discardableResult
    func agree(
        _ predicate: Predicate<PCard>, _ world: World, _ store: PackageStore,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Int {
        let condition = try PredicateCompiler.compile(predicate, resolver: TestResolver())
        let fetched = try store.read { try $0.fetchIDs(RecordQuery("Card", where: condition)) }
        let evaluated = try world.cards.filter { try predicate.evaluate($0) }.map(\.id)
        #expect(fetched == evaluated, "\(condition)", sourceLocation: sourceLocation)
        return evaluated.count
    }

    @Test func comparisonsLogicAndNulls() throws {
        try withWorld { world, store throws in
            #expect(try agree(#Predicate { $0.reps > 2 && $0.done }, world, store) == 2)
            #expect(try agree(#Predicate { $0.back == nil }, world, store) == 2)
            #expect(try agree(#Predicate { $0.back != "hello" }, world, store) == 7)
            #expect(try agree(#Predicate { $0.back == $0.deck?.title }, world, store) == 1)
            #expect(try agree(#Predicate { !($0.ease < 2.5) || $0.reps == 0 }, world, store) == 6)
            #expect(try agree(#Predicate { $0.done == ($0.reps > 2) }, world, store) == 6)
        }
    }

    @Test func arithmeticAndOptionals() throws {
        try withWorld { world, store throws in
            let (cutoff, second) = (Date(timeIntervalSince1970: 500), Date(timeIntervalSince1970: 1_000))
            #expect(try agree(#Predicate { $0.created > cutoff }, world, store) == 5)
            #expect(try agree(#Predicate { $0.created == second && $0.reps >= 2 }, world, store) == 2)
            #expect(try agree(#Predicate { $0.reps * 2 - 1 >= 3 }, world, store) == 5)
            #expect(try agree(#Predicate { $0.reps / 2 == 1 }, world, store) == 3)
            #expect(try agree(#Predicate { $0.ease / 2.0 > 1.25 }, world, store) == 3)
            #expect(try agree(#Predicate { -$0.reps < -2 }, world, store) == 3)
            #expect(try agree(#Predicate { ($0.due ?? 0) > 1.5 }, world, store) == 3)
            #expect(try agree(#Predicate { ($0.due ?? 10) + 1 > 3.5 }, world, store) == 4)
            #expect(try agree(#Predicate { $0.deck?.title == "Spanish" }, world, store) == 3)
            #expect(try agree(#Predicate { $0.deck?.title != "Spanish" }, world, store) == 5)
            #expect(try agree(#Predicate { $0.deck == nil }, world, store) == 3)
            let spanish = world.spanish
            #expect(try agree(#Predicate { $0.deck == spanish }, world, store) == 3)
            #expect(try agree(#Predicate { $0.deck != spanish }, world, store) == 5)
            #expect(try agree(#Predicate { $0.back?.contains("x") == false }, world, store) == 4)
            #expect(try agree(#Predicate { $0.back?.contains("x") != true }, world, store) == 6)
            #expect(try agree(#Predicate { !($0.back?.isEmpty ?? true) }, world, store) == 5)
            #expect(
                try agree(
                    #Predicate { $0.deck?.title.localizedStandardContains("FRAN") == true }, world, store)
                    == 2)
        }
    }

    @Test func text() throws {
        try withWorld { world, store throws in
            let same = ComparisonResult.orderedSame
            #expect(try agree(#Predicate { $0.front.contains("ol") }, world, store) == 2)
            #expect(try agree(#Predicate { $0.front.starts(with: "é") }, world, store) == 1)
            #expect(try agree(#Predicate { $0.front.isEmpty }, world, store) == 1)
            #expect(try agree(#Predicate { $0.front.contains("") }, world, store) == 8)
            #expect(try agree(#Predicate { "¡hola, verb!".contains($0.front) }, world, store) == 3)
            #expect(try agree(#Predicate { $0.back?.starts(with: "h") ?? true }, world, store) == 3)
            #expect(try agree(#Predicate { $0.front.localizedStandardContains("ECL") }, world, store) == 1)
            #expect(try agree(#Predicate { $0.front.localizedStandardContains("eco") }, world, store) == 1)
            #expect(try agree(#Predicate { $0.front.localizedStandardContains("") }, world, store) == 8)
            #expect(
                try agree(#Predicate { $0.front.caseInsensitiveCompare("strasse") == same }, world, store)
                    == 2)
            #expect(
                try agree(#Predicate { $0.front.caseInsensitiveCompare("ÉCLAIR") == same }, world, store) == 1
            )
            #expect(
                try agree(#Predicate { $0.front.caseInsensitiveCompare("eclair") == same }, world, store) == 0
            )
            #expect(
                try agree(#Predicate { $0.front.caseInsensitiveCompare($0.back ?? "") != same }, world, store)
                    == 7)
        }
    }

    @Test func toManyRelationships() throws {
        try withWorld { world, store throws in
            let verb = world.verb
            #expect(try agree(#Predicate { $0.tags.contains { $0.name == "verb" } }, world, store) == 4)
            #expect(
                try agree(#Predicate { $0.tags.allSatisfy { $0.name.starts(with: "v") } }, world, store) == 5)
            #expect(try agree(#Predicate { $0.tags.count >= 2 }, world, store) == 1)
            #expect(try agree(#Predicate { $0.tags.isEmpty }, world, store) == 2)
            #expect(try agree(#Predicate { $0.tags.contains(verb) }, world, store) == 4)
            #expect(try agree(#Predicate { !$0.tags.contains(verb) }, world, store) == 4)
            #expect(try agree(#Predicate { $0.tags.contains { $0 == verb } }, world, store) == 4)
            #expect(
                try agree(#Predicate { $0.tags.contains { $0 != verb } && $0.reps > 1 }, world, store) == 3)
            #expect(
                try agree(
                    #Predicate<PCard> { card in card.tags.contains { tag in tag.name == card.front } }, world,
                    store)
                    == 1)
        }
    }

    @Test func conditionalsListsAndRanges() throws {
        try withWorld { world, store throws in
            #expect(try agree(#Predicate { ($0.done ? $0.reps : $0.reps + 10) > 11 }, world, store) == 3)
            #expect(
                try agree(#Predicate { ($0.done ? $0.back : $0.deck?.title) == "hello" }, world, store) == 1)
            #expect(try agree(#Predicate { $0.done ? $0.reps > 3 : $0.ease > 3 }, world, store) == 3)
            #expect(try agree(#Predicate { [1, 3].contains($0.reps) }, world, store) == 2)
            let backs: [String?] = ["hello", nil]
            #expect(try agree(#Predicate { backs.contains($0.back) }, world, store) == 3)
            #expect(try agree(#Predicate { (1...3).contains($0.reps) }, world, store) == 4)
            let window = 1..<3
            #expect(try agree(#Predicate { window.contains($0.reps) }, world, store) == 3)
            let empty: [Int] = []
            #expect(try agree(#Predicate { empty.contains($0.reps) }, world, store) == 0)
        }
    }

    @Test func sortsAsDescribed() throws {
        try withWorld { world, store throws in
            func fronts(_ descriptors: [SortDescriptor<PCard>]) throws -> [String] {
                let keys = try PredicateCompiler.sortKeys(descriptors, resolver: TestResolver())
                return try store.read { try $0.fetch(RecordQuery("Card", sort: keys)) }.compactMap {
                    if case .string(let front)? = $0["front"] { front } else { nil }
                }
            }
            #expect(
                try fronts([SortDescriptor(\.front)])
                    == ["", "comer", "Éclair", "école", "hola", "STRASSE", "Straße", "verb"])
            #expect(
                try fronts([SortDescriptor(\.front, order: .reverse)])
                    == ["verb", "Straße", "STRASSE", "hola", "école", "Éclair", "comer", ""])
            #expect(
                try fronts([SortDescriptor(\.front, comparator: .lexical)])
                    == ["", "STRASSE", "Straße", "comer", "hola", "verb", "Éclair", "école"])
            #expect(
                try fronts([SortDescriptor(\.created, order: .reverse), SortDescriptor(\.front)])
                    == ["Éclair", "STRASSE", "comer", "Straße", "verb", "", "école", "hola"])
            // Nulls first going forward, last in reverse; then the record id.
            #expect(
                try fronts([SortDescriptor(\.due), SortDescriptor(\.reps, order: .reverse)])
                    == ["Straße", "comer", "", "école", "hola", "verb", "Éclair", "STRASSE"])
            #expect(
                try fronts([SortDescriptor(\.due, order: .reverse)])
                    == ["STRASSE", "Éclair", "verb", "hola", "école", "comer", "Straße", ""])
            _ = world
        }
    }
}
