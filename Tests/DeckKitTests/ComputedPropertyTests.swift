import DeckKit
import DeckTestTiming
import Foundation
import Testing

/// A key path is found out by applying it to an instance and seeing which properties it reads. A
/// computed property that reads one attribute and changes its value (`-age`, `name.uppercased()`)
/// reads that attribute too, but has no column: a predicate, a sort or a unique constraint on it
/// must be refused, not answered as if it were the attribute (found by an outside tester: such a
/// predicate returned the records of the opposite sign, with no error).
@Suite("Computed properties are not taken for the attributes they read", .timed)
struct ComputedPropertyTests {
    final class Person: ModelObject {
        @Attribute var age = 0
        @Attribute var first = ""
        @Attribute var ratio = 0.0
        @Attribute var active = false
        @Attribute var born = Date(timeIntervalSince1970: 0)
        @Relationship(inverse: \Team.members) var team: Team? = nil
        /// Changes the value it reads: no column.
        var negatedAge: Int { -age }
        var shout: String { first.uppercased() }
        var trimmed: String { first.trimmingCharacters(in: .whitespaces) }
        var cappedAge: Int { min(age, 150) }
        var magnitude: Int { abs(age) }
        var halfRatio: Double { ratio / 2 }
        var inactive: Bool { !active }
        var bornLater: Date { born.addingTimeInterval(1) }
        /// Gives back what it reads unchanged: the attribute itself, under another name.
        var years: Int { age }
        required init() {}
    }

    final class Team: ModelObject {
        @Attribute var name = ""
        @Relationship var members: [Person] = []
        var loudName: String { name.uppercased() }
        required init() {}
    }

    final class Badge: ModelObject {
        override class var uniqueConstraints: [[AnyKeyPath]] { [[\Badge.upperCode]] }
        @Attribute var code = ""
        var upperCode: String { code.uppercased() }
        required init() {}
    }

    /// Computed properties that give back short values unchanged and cut or round the others.
    final class Clip: ModelObject {
        @Attribute var title = ""
        @Attribute var bytes = Data()
        @Attribute var score = 0.0
        @Attribute var amount = Decimal(0)
        var shortTitle: String { String(title.prefix(20)) }
        var longerTitle: String { String(title.prefix(5_000)) }
        var head: Data { bytes.prefix(64) }
        var singleScore: Double { Double(Float(score)) }
        var cents: Decimal {
            var value = amount
            var rounded = Decimal()
            NSDecimalRound(&rounded, &value, 2, .plain)
            return rounded
        }
        required init() {}
    }

    @Test("Computed properties that cut or round what they read are refused, whatever the cut-off")
    func truncations() throws {
        let container = try ModelContainer(
            for: Clip.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let clip = Clip()
        clip.title = String(repeating: "long title ", count: 5)
        context.insert(clip)
        try context.save()
        let refusals = [
            refusal {
                _ = try context.fetch(
                    FetchDescriptor<Clip>(predicate: #Predicate { $0.shortTitle == "long title long titl" }))
            },
            refusal { _ = try context.fetch(FetchDescriptor<Clip>(sortBy: [SortDescriptor(\.shortTitle)])) },
            refusal { _ = try context.fetch(FetchDescriptor<Clip>(sortBy: [SortDescriptor(\.longerTitle)])) },
            refusal {
                let empty = Data()
                _ = try context.fetch(FetchDescriptor<Clip>(predicate: #Predicate { $0.head == empty }))
            },
            refusal { _ = try context.fetch(FetchDescriptor<Clip>(sortBy: [SortDescriptor(\.singleScore)])) },
            refusal { _ = try context.fetch(FetchDescriptor<Clip>(sortBy: [SortDescriptor(\.cents)])) },
        ]
        for (message, reads) in zip(refusals, ["title", "title", "title", "bytes", "score", "amount"]) {
            #expect(
                message.contains(
                    "a key path of Clip that reads \(reads) but does not give back its value as stored"),
                "\(message)")
        }
        // The attributes themselves still work.
        #expect(try context.fetch(FetchDescriptor<Clip>(sortBy: [SortDescriptor(\.title)])).count == 1)
    }

    /// A context on an in-memory container holding people of ages 1, 3 and 2.
    func people() throws -> ModelContext {
        let container = try ModelContainer(
            for: Person.self, Team.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let team = Team()
        team.name = "reds"
        for (age, first) in [(1, "ann"), (3, " bob "), (2, "cy")] {
            let person = Person()
            person.age = age
            person.first = first
            person.team = team
            context.insert(person)
        }
        try context.save()
        return context
    }

    func refusal(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "no error"
        } catch let error as DeckError {
            guard case .invalidQuery(let message) = error else { return "\(error)" }
            return message
        } catch {
            return "\(error)"
        }
    }

    @Test(
        "A predicate on a computed property that changes the value it reads is refused, naming what it reads")
    func predicates() throws {
        let context = try people()
        let refusals = [
            refusal {
                _ = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.negatedAge == -3 }))
            },
            refusal {
                _ = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.shout == "ANN" }))
            },
            refusal {
                _ = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.trimmed == "bob" }))
            },
            refusal {
                _ = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.cappedAge > 100 }))
            },
            refusal {
                _ = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.magnitude == 3 }))
            },
            refusal {
                _ = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.halfRatio > 1 }))
            },
            refusal { _ = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.inactive })) },
            refusal {
                let day = Date(timeIntervalSince1970: 1)
                _ = try context.fetch(FetchDescriptor<Person>(predicate: #Predicate { $0.bornLater == day }))
            },
            refusal {
                _ = try context.fetch(
                    FetchDescriptor<Person>(predicate: #Predicate { $0.team?.loudName == "REDS" }))
            },
        ]
        // A predicate applies key paths one member at a time: `$0.team?.loudName` is `\Team.loudName`.
        let reads = [
            ("Person", "age"), ("Person", "first"), ("Person", "first"), ("Person", "age"), ("Person", "age"),
            ("Person", "ratio"), ("Person", "active"), ("Person", "born"), ("Team", "name"),
        ]
        for (message, (root, reads)) in zip(refusals, reads) {
            #expect(message.hasPrefix("#Predicate: a key path of \(root) "), "\(message)")
            #expect(
                message.contains("reads \(reads) but does not give back its value as stored"), "\(message)")
            #expect(message.contains("is not a persistent property"), "\(message)")
        }
    }

    @Test("A computed property that gives back the attribute unchanged works as the attribute")
    func alias() throws {
        let context = try people()
        let found = try context.fetch(
            FetchDescriptor<Person>(
                predicate: #Predicate { $0.years >= 2 }, sortBy: [SortDescriptor(\.years)]))
        #expect(found.map(\.age) == [2, 3])
        // And the stored attributes themselves, of course.
        let byAge = try context.fetch(
            FetchDescriptor<Person>(sortBy: [SortDescriptor(\.age, order: .reverse)]))
        #expect(byAge.map(\.age) == [3, 2, 1])
        let teamed = try context.fetch(
            FetchDescriptor<Person>(predicate: #Predicate { $0.team?.name == "reds" }))
        #expect(teamed.count == 3)
    }

    @Test("A sort by such a property is refused, directly and through a to-one relationship")
    func sorts() throws {
        let context = try people()
        let direct = refusal {
            _ = try context.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.negatedAge)]))
        }
        #expect(
            direct.hasPrefix("SortDescriptor: a key path of Person that reads age but does not give back"))
        let through = refusal {
            _ = try context.fetch(FetchDescriptor<Person>(sortBy: [SortDescriptor(\.team?.loudName)]))
        }
        #expect(through.hasPrefix("SortDescriptor: a key path of Person that reads team.name but does not"))
    }

    @Test("A unique constraint on such a property is refused when the container is made")
    func uniqueConstraint() throws {
        #expect {
            _ = try ModelContainer(
                for: Badge.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        } throws: { error in
            "\(error)".contains(
                "Badge: the unique constraint key path (a key path of Badge that reads code but does not give back "
                    + "its value as stored (a computed property)) is not an attribute of Badge")
        }
    }
}
