import DeckArguments
import DeckKit

/// The command tree of `deck`: what `--help`, the parser and the completion scripts read.
enum Commands {
    static let pathArgument = ArgumentSpec(
        "path", help: "The package directory (or, for reading commands, a package archive).",
        completion: .file)
    static let entityArgument = ArgumentSpec("entity", help: "The entity (record type), e.g. Card.")
    static let json = OptionSpec.flag(
        "json", help: "Print JSON (stable, documented in deck(1)) instead of text.")
    static let quiet = OptionSpec.flag("quiet", short: "q", help: "Print no progress bar.")
    static let whereOption = OptionSpec.value(
        "where", short: "w", valueName: "expr",
        help: "Only records matching EXPR, e.g. \"front contains 'ho'\".")

    static let root = CommandSpec(
        name: "deck",
        abstract: "Create, inspect, verify and change Deck document packages.",
        discussion: """
            A Deck package is a directory holding a manifest, a SQLite store and \
            content-addressed blob files. Every package describes its own schema, so deck \
            works on any package without the app that made it.
            """,
        subcommands: [
            new, open, inspect, verify, lint, gc, query, insert, update, delete, blob, export, importArchive,
            pack, unpack, diffSchema, migrate, compat,
            completions,
        ],
        examples: [
            CommandExample(
                "Make the sample flash-cards deck", command: "deck new Spanish.deck --sample flashcards"),
            CommandExample("List its cards", command: "deck query Spanish.deck Card --sort front"),
        ])

    static let new = CommandSpec(
        name: "new",
        abstract: "Create a new document package.",
        discussion: """
            Creates an empty document of a content type, one made from a schema file (JSON, \
            see deck(1)), or the bundled flash-cards sample. The package is built under a \
            temporary name and renamed into place; an existing path is never replaced.
            """,
        arguments: [ArgumentSpec("path", help: "Where to create the package.", completion: .directory)],
        options: [
            .value("type", valueName: "id", help: "The content type, e.g. org.example.notes."),
            .value(
                "schema", valueName: "file", completion: .file,
                help: "A schema file (JSON) to create the store from."),
            .value(
                "sample", valueName: "name", allowedValues: ["flashcards"],
                help: "Create a bundled sample document."),
            json,
        ])

    static let diffSchema = CommandSpec(
        name: "diff-schema",
        abstract: "Show the steps that migrate a document from one schema to another.",
        discussion: """
            Compares two schemas, each a package's or a schema file's (JSON, see deck(1)), and \
            lists the changes in order, each lightweight (the store carries it out) or needing \
            a custom stage, with the reason. Renames are found through originalName. Exit \
            status 0 when every step is lightweight (or there is none), 1 otherwise.
            """,
        arguments: [
            ArgumentSpec("old", help: "The schema now: a package or a schema file.", completion: .file),
            ArgumentSpec(
                "new", help: "The schema to migrate to: a package or a schema file.", completion: .file),
        ],
        options: [json])

    static let migrate = CommandSpec(
        name: "migrate",
        abstract: "Migrate a document to another schema, in one transaction.",
        discussion: """
            Carries out the steps 'deck diff-schema' lists, all lightweight ones, in one \
            transaction: a failure or a kill leaves the document as it was. A plan file (JSON, \
            see deck(1)) gives renames, agrees to removals (a removal deletes data, so it is \
            refused unless agreed to) and marks the migration breaking. Exit status 0 when \
            migrated, 65 when a step needs a custom stage, a removal is not agreed to or the \
            data breaks a new rule (nothing is changed then).
            """,
        arguments: [pathArgument],
        options: [
            .value(
                "to", valueName: "schema", completion: .file,
                help: "The schema to migrate to: a schema file (JSON) or a package."),
            .value(
                "plan", valueName: "file", completion: .file,
                help: "A plan file (JSON): renames, removals, breaking."),
            .flag("dry-run", short: "n", help: "Check the steps and the data, and change nothing."),
            json,
        ])

    static let compat = CommandSpec(
        name: "compat",
        abstract: "Show how an app of a given schema may open a document.",
        discussion: """
            Compares the schema an app was built for (a schema file, JSON, see deck(1), or a \
            package) with the document's, as section 19 of the format specification says: an \
            app older than the document opens it read-write when its version is at or above the \
            document's compatibility floor and the document holds everything it knows, read-only \
            when it can still read it, and not at all otherwise. Changes nothing. Exit status 0 \
            for read-write, 1 otherwise.
            """,
        arguments: [pathArgument],
        options: [
            .value(
                "app", valueName: "schema", completion: .file,
                help: "The app's schema: a schema file (JSON) or a package."),
            json,
        ])

    static let open = CommandSpec(
        name: "open",
        abstract: "Check a document and show what it is.",
        discussion:
            "Shows the type, format and schema versions, entities with counts, blobs, size and lock holder.",
        arguments: [pathArgument],
        options: [
            json,
            .flag(
                "shell", short: "i",
                help: "Start an interactive session: query, show, insert, update, delete, save, undo."),
        ])

    static let inspect = CommandSpec(
        name: "inspect",
        abstract: "Show everything about a document: schema, counts, blobs, store figures.",
        arguments: [pathArgument],
        options: [json])

    static let verify = CommandSpec(
        name: "verify",
        abstract: "Check a document for corruption.",
        discussion: """
            Checks the manifest, the store (integrity and foreign keys), the tables against the \
            stored schema, and every blob: that it exists and its bytes hash to its name. Exit \
            status 0 means valid (untidy leftovers are reported but allowed), 65 corrupt.
            """,
        arguments: [pathArgument],
        options: [json, .flag("quick", help: "Skip hashing blob files; use SQLite's quick_check."), quiet])

    static let lint = CommandSpec(
        name: "lint",
        abstract: "Check a schema for CloudKit compatibility.",
        discussion: """
            Checks the schema of a package (or a package archive), or a schema file, against \
            the rules CloudKit sets for a store that syncs: no unique attributes or unique \
            constraints, a default for every non-optional attribute, an inverse for every \
            relationship, no deny delete rule. Each finding names the entity and property. \
            Never writes to the package. Exit status 0 means no findings, 1 findings.
            """,
        arguments: [
            ArgumentSpec(
                "path", help: "The package directory or package archive whose schema to check.",
                isOptional: true, completion: .file)
        ],
        options: [
            .value(
                "schema", valueName: "file", completion: .file,
                help: "Check a schema file (JSON, as 'deck new --schema' takes) instead of a package."),
            json,
        ],
        examples: [
            CommandExample("Check a document", command: "deck lint Spanish.deck"),
            CommandExample("Check a schema file", command: "deck lint --schema notes.schema.json"),
        ])

    static let gc = CommandSpec(
        name: "gc",
        abstract: "Remove unreferenced blobs and temporaries, and compact the store.",
        discussion: """
            Never removes a blob file or deck_blob row that a record names, even when deck_blob \
            does not count it: the references are counted from the records first. With --repair, \
            first makes deck_blob agree with the records: registers intact files that records \
            name but deck_blob lacks, and sets every reference count; exit status 65 if a \
            referenced file is missing or corrupt.
            """,
        arguments: [pathArgument],
        options: [
            .flag("dry-run", short: "n", help: "Report what would be removed; change nothing."),
            .flag("repair", help: "First recount references and re-register intact referenced blob files."),
            json, quiet,
        ])

    static let query = CommandSpec(
        name: "query",
        abstract: "Print the records of an entity.",
        arguments: [pathArgument, entityArgument],
        options: [
            whereOption,
            .repeatable(
                "sort", short: "s", valueName: "key[:desc]", help: "Sort by KEY, ascending unless ':desc'."),
            .value("limit", valueName: "n", help: "At most N records."),
            .value("offset", valueName: "n", help: "Skip the first N records."),
            json,
            .flag("csv", help: "Print CSV (RFC 4180) with a header row."),
            .flag("count", help: "Print only the number of matching records."),
        ],
        examples: [
            CommandExample(
                "Cards created since November",
                command: "deck query Spanish.deck Card --where 'creationDate >= 2026-11-01'"),
            CommandExample(
                "Tagged cards with 'adios' in any case and accent, most-tagged first (see EXPRESSIONS in deck(1))",
                command:
                    "deck query Spanish.deck Card --where 'tags.count > 0 and front contains[cd] adios' "
                    + "--sort tags.count:desc"),
        ])

    static let assignment = ArgumentSpec(
        "assignment",
        help: "key=value; key=@FILE reads a data attribute from FILE; a relationship takes #id or #1,#2.",
        isOptional: true, isVariadic: true)
    static let nullOption = OptionSpec.repeatable("null", valueName: "key", help: "Set KEY to null.")

    static let insert = CommandSpec(
        name: "insert",
        abstract: "Insert a record.",
        arguments: [pathArgument, entityArgument, assignment],
        options: [
            nullOption, .flag("upsert", help: "Update the record with the same unique values instead."), json,
            quiet,
        ])

    static let update = CommandSpec(
        name: "update",
        abstract: "Change the records that match a condition.",
        arguments: [pathArgument, entityArgument, assignment],
        options: [
            whereOption, .flag("all", help: "Change every record (instead of --where)."), nullOption, json,
            quiet,
        ])

    static let delete = CommandSpec(
        name: "delete",
        abstract: "Delete the records that match a condition (delete rules apply).",
        arguments: [pathArgument, entityArgument],
        options: [whereOption, .flag("all", help: "Delete every record (instead of --where)."), json])

    static let blob = CommandSpec(
        name: "blob",
        abstract: "Work with blob files.",
        subcommands: [
            CommandSpec(
                name: "get",
                abstract: "Write a blob's bytes to standard output or a file, checking its digest.",
                arguments: [
                    pathArgument, ArgumentSpec("digest", help: "The blob's SHA-256 digest (64 hex digits)."),
                ],
                options: [
                    .value("output", short: "o", valueName: "file", completion: .file, help: "Write to FILE.")
                ])
        ])

    static let formatOption = OptionSpec.value(
        "format", short: "f", valueName: "format", allowedValues: ["zip", "tar", "tar.gz", "tar.zst"],
        help: "The archive format (default: from the file name, else zip).")
    static let archiveOutput = OptionSpec.value(
        "output", short: "o", valueName: "file", completion: .file, help: "The archive to write.")
    static let force = OptionSpec.flag(
        "force", help: "Replace an existing archive (only ever a regular file).")
    static let archiveArgument = ArgumentSpec(
        "archive", help: "A package archive (zip, tar, tar.gz, tar.zst).", completion: .file)

    static let export = CommandSpec(
        name: "export",
        abstract: "Write a document to a single archive file for sharing.",
        discussion: """
            Archives a consistent snapshot of the document, even while another process writes \
            to it. The same document always gives byte-identical archives. Blob files are \
            stored, the store compressed; the first entry is 'mimetype'.
            """,
        arguments: [pathArgument],
        options: [archiveOutput, formatOption, force, json, quiet])

    static let importArchive = CommandSpec(
        name: "import",
        abstract: "Make a document from an archive (checked, verified, then moved into place).",
        arguments: [archiveArgument],
        options: [
            .value(
                "output", short: "o", valueName: "dir", completion: .directory,
                help: "The package to create (default: named after the archive, never the archive itself)."),
            json, quiet,
        ])

    static let pack = CommandSpec(
        name: "pack",
        abstract: "Archive a package directory as it is on disk (refused while a writer has it open).",
        arguments: [pathArgument],
        options: [archiveOutput, formatOption, force, json, quiet])

    static let unpack = CommandSpec(
        name: "unpack",
        abstract: "Unpack an archive into a new directory safely, checking every blob's digest.",
        arguments: [archiveArgument],
        options: [
            .value(
                "output", short: "o", valueName: "dir", completion: .directory,
                help: "The directory to create."),
            json, quiet,
        ])

    static let completions = CommandSpec(
        name: "completions",
        abstract: "Print a shell completion script.",
        discussion: "Example: deck completions bash > /etc/bash_completion.d/deck",
        arguments: [
            ArgumentSpec("shell", help: "bash, zsh or fish.", completion: .values(["bash", "zsh", "fish"]))
        ])
}
