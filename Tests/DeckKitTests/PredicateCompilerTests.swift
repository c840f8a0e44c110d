import DeckKit
import Foundation
import Testing

// Plain classes stand for models: the compiler only sees their key paths, through a resolver.
// (Codable and Sendable so that a `#Predicate` can capture one.)

final class PDeck: Codable, Hashable, @unchecked Sendable {
    static func == (a: PDeck, b: PDeck) -> Bool { a === b }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    var id: Int64 = 0
    var title = ""
    init(_ id: Int64, _ title: String) {
        self.id = id
        self.title = title
    }
}

final class PTag: Codable, Hashable, @unchecked Sendable {
    static func == (a: PTag, b: PTag) -> Bool { a === b }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    var id: Int64 = 0
    var name = ""
    init(_ id: Int64, _ name: String) {
        self.id = id
        self.name = name
    }
}

final class PCard: Codable, Hashable, @unchecked Sendable {
    static func == (a: PCard, b: PCard) -> Bool { a === b }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    var id: Int64 = 0
    var front = ""
    var back: String? = nil
    var reps = 0
    var ease = 2.5
    var due: Double? = nil
    var done = false
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
        case let deck as PDeck: return .reference(deck.id)
        case let tag as PTag: return .reference(tag.id)
        case let card as PCard: return .reference(card.id)
        default:
            throw DeckError.invalidQuery("#Predicate: a captured \(type(of: value)) has no store value")
        }
    }
}

@Suite struct PredicateCompilerTests {
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
        let date = Date(timeIntervalSince1970: 0)
        #expect(refusal(#Predicate { _ in date == date }) == "#Predicate: a captured Date has no store value")
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
