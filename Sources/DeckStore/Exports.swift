// What a user of the store sees of the targets below it: the one error type and the errors it
// carries (DeckSupport), and the archive formats and unpack limits (DeckArchive). The SQLite
// wrapper (DeckSQLite) has nothing public and is imported file by file where it is used.
@_exported import DeckArchive
@_exported import DeckSupport
