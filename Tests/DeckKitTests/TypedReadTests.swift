import DeckKit
import DeckSQLite
import DeckStore
import DeckTestTiming
import Foundation
import Testing

/// A typed fetch reads cells straight from the statement for the store's common types, and
/// through store values for everything else: both paths must give the same answer for every
/// cell, the odd ones included (a store from someone else may hold anything its columns accept).
@Suite("Typed reads of unusual cells", .timed)
struct TypedReadTests {
    final class Sample: ModelObject {
        @Attribute var flag = false
        @Attribute var small: Int8 = 0
        @Attribute var number = 0.0
        @Attribute var when = Date(timeIntervalSince1970: 0)
        @Attribute var name = ""
        @Attribute var count: Int? = nil
        @Attribute var seen: Date? = nil
        required init() {}
    }

    /// A document holding one saved `Sample`, its row then changed by `sql` (checks off), read
    /// back through the typed API.
    func fetchAfter(_ sql: String) throws -> Result<Sample, DeckError> {
        let directory = try ScratchDirectory()
        let url = directory.appending("samples.deck")
        do {
            let container = try ModelContainer(for: Sample.self, configurations: ModelConfiguration(url: url))
            let context = ModelContext(container)
            context.insert(Sample())
            try context.save()
        }
        let database = try Database(path: url.appendingPathComponent("store.sqlite").path, mode: .readWrite)
        try database.execute("PRAGMA ignore_check_constraints = ON")
        try database.execute(sql)
        database.close()
        let container = try ModelContainer(
            for: Sample.self, configurations: ModelConfiguration(url: url, allowsSave: false))
        do {
            let samplesContext = ModelContext(container)
            let samples = try samplesContext.fetch(FetchDescriptor<Sample>())
            return .success(try #require(samples.first))
        } catch let error as DeckError {
            return .failure(error)
        }
    }

    @Test("Values at the edges read as the generic path reads them")
    func edges() throws {
        let sample = try fetchAfter(
            """
            UPDATE Sample SET flag = 1, small = -128, number = -0.0, "when" = -0.0, name = '',
              count = 9223372036854775807, seen = 252423993599.0
            """
        ).get()
        #expect(sample.flag)
        #expect(sample.small == -128)
        // Negative zero is stored and read as zero, as the store's values are.
        #expect(sample.number == 0 && sample.number.sign == .plus)
        // (Dates count from 2001 in a new document, spec 7.1.)
        #expect(sample.when == Date(timeIntervalSinceReferenceDate: 0))
        #expect(sample.name == "")
        #expect(sample.count == .max)
        #expect(sample.seen == Date(timeIntervalSince1970: 253_402_300_799))
    }

    @Test("Nulls read as nil in optionals")
    func nulls() throws {
        let sample = try fetchAfter("UPDATE Sample SET count = NULL, seen = NULL").get()
        #expect(sample.count == nil)
        #expect(sample.seen == nil)
    }

    /// Dates out of range are legacy values an earlier Deck wrote (spec 7.7): a `Date` holds them.
    @Test("A date cell out of range reads into Date exactly")
    func legacyDates() throws {
        let sample = try fetchAfter("UPDATE Sample SET \"when\" = 1e300, seen = -9e999").get()
        #expect(sample.when == Date(timeIntervalSince1970: 1e300))
        #expect(sample.seen == Date(timeIntervalSince1970: -.infinity))
    }

    @Test(
        "A cell that does not hold the property's type is an error naming the property",
        arguments: [
            ("UPDATE Sample SET flag = 2", "flag")
        ])
    func mismatches(sql: String, property: String) throws {
        guard case .failure(let error) = try fetchAfter(sql) else {
            Issue.record("\(sql): the fetch should have failed")
            return
        }
        guard case .corrupt(_, let reason) = error else {
            Issue.record("\(sql): expected corrupt, got \(error)")
            return
        }
        #expect(reason.contains("\(property) holds"), "\(reason)")
    }

    /// A value the document's schema allows (an integer is 64-bit) that the property's narrower
    /// type cannot hold: the app and the document disagree; the document is not damaged (the
    /// verifier calls it valid), so the error is no "corrupt".
    @Test(
        "A valid value the property's type cannot hold is an app/data mismatch, not damage",
        arguments: ["128", "-129"])
    func narrowType(value: String) throws {
        guard case .failure(let error) = try fetchAfter("UPDATE Sample SET small = \(value)") else {
            Issue.record("small = \(value): the fetch should have failed")
            return
        }
        guard case .invalidValue("Sample", "small", let reason) = error else {
            Issue.record("small = \(value): expected invalidValue, got \(error)")
            return
        }
        #expect(reason.contains("holds \(value), which this app's Int8 cannot hold"), "\(reason)")
        #expect(reason.contains("the document is not damaged"), "\(reason)")
    }

    class Person: ModelObject {
        @Attribute var name = ""
        required init() {}
    }
    final class Teacher: Person {
        @Relationship(inverse: \Laptop.teacher) var laptops: [Laptop] = []
    }
    final class Student: Person {}
    final class Laptop: ModelObject {
        @Attribute var serial = ""
        @Relationship var teacher: Teacher? = nil
        required init() {}
    }

    @Test(
        "A to-one that names a record of a sibling entity (a damaged store) reads as none, whether or not the context holds that record",
        arguments: [false, true])
    func toOneToASibling(holdingTheSibling: Bool) throws {
        let directory = try ScratchDirectory()
        let url = directory.appending("school.deck")
        let types: [any PersistentModel.Type] = [Person.self, Teacher.self, Student.self, Laptop.self]
        do {
            let context = ModelContext(
                try ModelContainer(for: Schema(types), configurations: [ModelConfiguration(url: url)]))
            let teacher = Teacher()
            teacher.name = "Ada"
            let student = Student()
            student.name = "Bob"
            let laptop = Laptop()
            laptop.serial = "L1"
            laptop.teacher = teacher
            context.insert(teacher)
            context.insert(student)
            context.insert(laptop)
            try context.save()
        }
        let database = try Database(path: url.appendingPathComponent("store.sqlite").path, mode: .readWrite)
        try database.execute("PRAGMA foreign_keys = OFF")
        try database.execute("UPDATE Laptop SET teacher = (SELECT _pk FROM Person WHERE _entity = 'Student')")
        database.close()
        let container = try ModelContainer(
            for: Schema(types), configurations: [ModelConfiguration(url: url, allowsSave: false)])
        let context = ModelContext(container)
        let students = try context.fetch(FetchDescriptor<Student>())
        #expect(students.map { $0.name } == ["Bob"])
        if !holdingTheSibling { _ = consume students }
        let laptop = try #require(context.fetch(FetchDescriptor<Laptop>()).first)
        #expect(laptop.teacher == nil)
    }
}
