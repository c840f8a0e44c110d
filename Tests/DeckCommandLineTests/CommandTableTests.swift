import DeckArguments
import DeckTestTiming
import Testing

@testable import DeckCommandLine

/// The command tables of `deck` and of its shell: valid trees whose every command can run.
@Suite("Command tables", .timed)
struct CommandTableTests {
    /// Every path of the tree below `spec`, leaves only.
    static func leaves(_ spec: CommandSpec, path: [String]) -> [[String]] {
        spec.subcommands.isEmpty
            ? [path] : spec.subcommands.flatMap { leaves($0, path: path + [$0.name]) }
    }

    @Test func decksTableIsValidAndEveryCommandRuns() throws {
        #expect(Deck.spec.validationProblems() == [])
        let paths = Self.leaves(Deck.spec, path: ["deck"])
        #expect(paths.count == 22)
        for path in paths {
            let type = try #require(Deck.commandType(at: path), "no type for \(path)")
            #expect(type is any DeckCommand.Type, "\(path) cannot run")
        }
    }

    @Test func theShellsTableIsValidAndEveryCommandRuns() throws {
        #expect(Shell.spec.validationProblems() == [])
        let paths = Self.leaves(Shell.spec, path: [""])
        #expect(
            paths.map { $0.last ?? "" } == [
                "query", "insert", "update", "delete", "show", "entities", "schema", "save", "undo",
                "history", "quit",
            ])
        for path in paths {
            let type = try #require(ShellCommands.commandType(at: path), "no type for \(path)")
            #expect(type is any ShellCommand.Type, "\(path) cannot run")
        }
    }

    @Test func theShellsDataCommandsAreDecksWithoutThePath() throws {
        for name in ["query", "insert", "update", "delete"] {
            var command = try #require(Deck.spec.subcommand(named: name))
            command.arguments.removeAll { $0.name == "path" }
            #expect(Shell.spec.subcommand(named: name) == command)
        }
    }
}
