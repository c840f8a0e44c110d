import DeckStore

/// The `--where` and `--sort` parsers for the fuzz targets (the `Fuzz/` package, built with
/// libFuzzer flags and so outside this package). Not for apps: reached only with
/// `@_spi(Fuzzing) import DeckQueryLanguage`.
@_spi(Fuzzing)
public enum QueryLanguageFuzzingHooks {
    /// Parses a `--where` expression as the CLI does; the error describes what is wrong where.
    public static func parseWhere(_ text: String) throws -> QueryExpression { try QueryParser.parse(text) }

    /// Parses a `--sort` key as the CLI does.
    public static func parseSort(_ text: String) throws -> SortKey { try QueryParser.parseSort(text) }
}
