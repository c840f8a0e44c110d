import DeckArguments

/// The small sample command tree used throughout the argument tests.
enum SampleSpec {
    static let query = CommandSpec(
        name: "query",
        abstract: "RecordQuery entities in a Deck package.",
        discussion: """
            Prints the matching entities as a table, or as JSON or CSV. Filters use the Deck \
            expression language; several sort keys may be given.
            """,
        arguments: [
            ArgumentSpec("PATH", help: "Path to the .deck package.", completion: .directory),
            ArgumentSpec("ENTITY", help: "Name of the entity to query."),
        ],
        options: [
            .value("where", valueName: "EXPR", help: "Only include rows matching this expression."),
            .repeatable("sort", short: "s", valueName: "KEY", help: "Sort by this attribute."),
            .value("limit", short: "l", valueName: "N", help: "Print at most this many rows."),
            .value("offset", valueName: "N", help: "Skip this many rows (negative counts from the end)."),
            .flag("json", help: "Print the rows as JSON."),
            .flag("csv", help: "Print the rows as CSV."),
            .flag("quiet", short: "q", help: "Suppress progress output."),
            .flag("verbose", short: "v", help: "Print more detail."),
        ],
        examples: [
            CommandExample(
                "List open tasks as JSON:",
                command: "deck query notes.deck Task --where 'done == false' --json")
        ])

    static let get = CommandSpec(
        name: "get",
        abstract: "Write a blob to standard output or a file.",
        arguments: [
            ArgumentSpec("PATH", help: "Path to the .deck package.", completion: .directory),
            ArgumentSpec("DIGEST", help: "Digest of the blob."),
        ],
        options: [
            .value(
                "output", short: "o", valueName: "FILE", completion: .file,
                help: "Write to FILE ('-' for stdout).")
        ])

    static let export = CommandSpec(
        name: "export",
        abstract: "Export a package as an archive.",
        arguments: [
            ArgumentSpec("PATH", help: "Path to the .deck package.", completion: .directory),
            ArgumentSpec("DESTINATION", help: "Archive file to write.", isOptional: true, completion: .file),
        ],
        options: [
            .value(
                "format", short: "f", valueName: "FORMAT", allowedValues: ["zip", "tar"],
                help: "Archive format.")
        ])

    static let set = CommandSpec(
        name: "set",
        abstract: "Set attributes of an entity.",
        arguments: [
            ArgumentSpec("PATH", help: "Path to the .deck package.", completion: .directory),
            ArgumentSpec("ASSIGNMENT", help: "Assignments of the form key=value.", isVariadic: true),
        ])

    static let blob = CommandSpec(
        name: "blob",
        abstract: "Work with blobs stored in a package.",
        subcommands: [get])

    static let root = CommandSpec(
        name: "deck",
        abstract: "Create, query and manage Deck document packages.",
        options: [.flag("no-color", help: "Disable coloured output.")],
        subcommands: [query, blob, export, set])
}

/// Parses a space-separated command line (without the program name) against ``SampleSpec/root``.
func parseSample(_ line: String) throws(ArgumentError) -> ParseResult {
    try ArgumentParser.parse(sampleArguments(line), root: SampleSpec.root)
}

/// Splits on single spaces; an empty line gives no arguments.
func sampleArguments(_ line: String) -> [String] {
    line.isEmpty ? [] : line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
}

/// The parsed command, or `nil` if parsing gave help/version or failed.
func parsedCommand(_ arguments: [String]) -> ParsedCommand? {
    guard case .command(let command)? = try? ArgumentParser.parse(arguments, root: SampleSpec.root) else {
        return nil
    }
    return command
}

/// The parsed command for a space-separated line.
func parsedCommand(_ line: String) -> ParsedCommand? {
    parsedCommand(sampleArguments(line))
}

/// The error thrown for `arguments`, or `nil` if parsing succeeded.
func parseError(_ arguments: [String]) -> ArgumentError? {
    do {
        _ = try ArgumentParser.parse(arguments, root: SampleSpec.root)
        return nil
    } catch {
        return error
    }
}

/// The error thrown for a space-separated line, or `nil` if parsing succeeded.
func parseError(_ line: String) -> ArgumentError? {
    parseError(sampleArguments(line))
}
