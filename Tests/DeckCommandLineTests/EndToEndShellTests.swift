import DeckTestTiming
import Foundation
import Testing

/// `deck open PATH --shell` driven through a pipe (not a terminal: no banner, no prompts).
@Suite("End to end: the interactive shell", .timed)
struct EndToEndShellTests {
    func shell(_ path: String, _ lines: [String]) throws -> RunResult {
        try deck("open", path, "--shell", stdin: lines.joined(separator: "\n") + "\n")
    }

    @Test func aSessionSavesSomeChangesAndDropsOthers() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try shell(
            path,
            [
                "entities",
                "query Card --count",
                "insert Tag name=new",
                "save",
                "show Card 1",
                "insert Tag name=unsaved",
                "undo",
                "history",
                "help",
                "frobnicate",
                "insert Tag name=dropped",
                "quit",
                "quit!",
            ])
        #expect(result.status == 1)
        let out = result.stdout
        #expect(out.hasPrefix("Deck  2\nCard  10\nTag  5\n10\nInserted Tag #6\nsaved\nCard #1\n"), "\(out)")
        #expect(out.contains("  front         hola\n"))
        #expect(out.contains("  image         <90015 bytes, blob "))
        #expect(out.contains("  deck          #1\n"))
        #expect(out.contains("  tags          #1\n"))
        #expect(out.contains("Inserted Tag #7\nunsaved changes discarded\n"))
        #expect(
            out.contains(
                "1  entities\n2  query Card --count\n3  insert Tag name=new\n4  save\n5  show Card 1\n"
                    + "6  insert Tag name=unsaved\n7  undo\n8  history\n"))
        #expect(out.contains("SUBCOMMANDS:"))
        for command in ["query", "insert", "show", "entities", "save", "undo", "history", "quit"] {
            #expect(out.contains("\n  \(command) "), "shell help lacks \(command)")
        }
        // No banner or prompt when stdin is not a terminal.
        #expect(!out.contains("deck> "))
        #expect(!out.contains("Enter 'help'"))

        let errors = result.stderr.split(separator: "\n").map(String.init)
        #expect(
            errors.contains { $0.hasPrefix("error: ") && $0.contains("'frobnicate'") }, "\(result.stderr)")
        #expect(errors.contains { $0.hasPrefix("error: there are unsaved changes") }, "\(result.stderr)")

        // Saved: "new". Undone: "unsaved". Dropped by quit!: "dropped".
        let tags = try deck("query", path, "Tag", "--json")
        e2eExpectSuccess(tags)
        #expect(
            try e2eColumn(tags.stdout, "name") == ["greeting", "courtesy", "animal", "noun", "food", "new"])
        e2eExpectSuccess(try deck("verify", path))
    }

    @Test func aCleanSessionExitsZero() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try shell(
            path,
            ["query Tag --sort name --csv", "update Card --where \"front = 'hola'\" back=hi", "save", "quit"])
        e2eExpectSuccess(result)
        #expect(
            result.stdout
                == "_id,_entity,name\r\n3,Tag,animal\r\n2,Tag,courtesy\r\n5,Tag,food\r\n1,Tag,greeting\r\n4,Tag,noun\r\n"
                + "Updated 1 record\nsaved\n")
        #expect(
            try e2eColumn(try deck("query", path, "Card", "--where", "front = hola", "--json").stdout, "back")
                == ["hi"])
    }

    @Test func endOfInputDiscardsUnsavedChanges() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try shell(path, ["delete Card --all"])
        #expect(result.status == 1)
        #expect(result.stdout == "Deleted 10 records (Card and related records its delete rules reach)\n")
        #expect(result.stderr.contains("unsaved changes; they were discarded"))
        #expect(try deck("query", path, "Card", "--count").stdout == "10\n")
    }

    @Test func commandErrorsKeepTheSessionGoing() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try shell(
            path,
            [
                "query Crad",
                "query Card --where \"front = \"",
                "insert Tag name=greeting",
                "show Card 99",
                "show Card x",
                "query Card --jsno",
                "insert Tag name='two words'",
                "save",
                "quit",
            ])
        #expect(result.status == 1)
        #expect(result.stdout == "Inserted Tag #6\nsaved\n")
        let errors = result.stderr
        #expect(errors.contains("error: unknown entity 'Crad'; did you mean 'Card'?"))
        #expect(errors.contains("error: --where: syntax error at column 9"))
        #expect(errors.contains("another record already has the same name"))
        #expect(errors.contains("Card #99 does not exist"))
        #expect(errors.contains("'x' is not a record id"))
        #expect(errors.contains("Unknown option '--jsno'"))
        #expect(
            try e2eColumn(
                try deck("query", path, "Tag", "--where", "name = 'two words'", "--json").stdout, "name") == [
                    "two words"
                ])
    }

    @Test func quitRefusesUnsavedChangesInEverySpelling() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try shell(
            path,
            [
                "insert Tag name=unsaved", "quit", "exit", ".quit", "history again", "undo", ".exit",
                "query Tag --count",
            ])
        #expect(result.status == 1)
        #expect(
            result.stdout
                == "Inserted Tag #6\n1  insert Tag name=unsaved\n2  quit\n3  exit\n4  .quit\n5  history again\n"
                + "unsaved changes discarded\n")
        let refusal = "error: there are unsaved changes; 'save' them, 'undo' them, or 'quit!' to drop them"
        #expect(result.stderr.components(separatedBy: refusal).count == 4)
        #expect(try deck("query", path, "Tag", "--where", "name = 'unsaved'", "--count").stdout == "0\n")
    }

    @Test func quotingAndComments() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try shell(
            path,
            [
                "-- a comment line is ignored",
                "",
                "insert Tag \"name=with \\\"quotes\\\"\"",
                "insert Tag name=back\\ slash",
                "insert Tag 'name=un",
                "save",
                "quit",
            ])
        #expect(result.status == 1)
        #expect(result.stdout == "Inserted Tag #6\nInserted Tag #7\nsaved\n")
        #expect(result.stderr.contains("error: unterminated quote"))
        let names = try e2eColumn(try deck("query", path, "Tag", "--json").stdout, "name")
        #expect(names.suffix(2) == ["with \"quotes\"", "back slash"])
    }

    @Test func schemaAndHelpForACommand() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try shell(path, ["schema Tag", "help query", "quit"])
        e2eExpectSuccess(result)
        #expect(
            result.stdout.hasPrefix(
                "  Tag\n    name: string  (unique)\n    cards -> [Card]  (delete nullify, inverse tags)\n"))
        #expect(result.stdout.contains("OVERVIEW: Print the records of an entity."))
        #expect(!result.stdout.contains("<path>"), "the shell's query takes no <path>")
    }

    /// The shell's help speaks of its own commands, not of an unnamed root command.
    @Test func shellHelpNamesNoEmptyCommand() throws {
        let directory = try TemporaryDirectory()
        let path = try e2eSample(in: directory)
        let result = try shell(path, ["help", "quit"])
        e2eExpectSuccess(result)
        #expect(
            !result.stdout.contains("See ' help"), "help points to ' help <subcommand>': \(result.stdout)")
        #expect(
            !result.stdout.contains("USAGE:  "), "usage line with an empty command name: \(result.stdout)")
    }

    @Test func shellOnAMissingPackage() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("nowhere.deck")
        let result = try deck("open", path, "--shell", stdin: "quit\n")
        e2eExpectFailure(result, status: 66, "no such file or directory")
    }
}
