import Foundation

/// Where and how a ``ModelContainer`` keeps its document: SwiftData's `ModelConfiguration`.
public struct ModelConfiguration: Sendable, Hashable {
    /// The configuration's name (the default document's file name).
    public var name: String
    /// The package directory of the document.
    public var url: URL
    /// Keeps the document in a temporary package that is removed when the container goes away:
    /// for previews and tests.
    public var isStoredInMemoryOnly: Bool
    /// False opens the document read-only: ``ModelContext/save()`` is refused.
    public var allowsSave: Bool
    /// The content type written in a new document's manifest.
    public var contentType: String

    /// A configuration for the document at `url` (by default `name`.deck in the user's data
    /// directory, `$XDG_DATA_HOME` or `~/.local/share`, in a folder named after the program).
    public init(
        _ name: String? = nil, url: URL? = nil, isStoredInMemoryOnly: Bool = false, allowsSave: Bool = true,
        contentType: String = PackageStore.defaultContentType
    ) {
        let name = name ?? "default"
        self.name = name
        self.url =
            url ?? Self.defaultDirectory.appendingPathComponent(name + "." + PackageStore.packageExtension)
        self.isStoredInMemoryOnly = isStoredInMemoryOnly
        self.allowsSave = allowsSave
        self.contentType = contentType
    }

    /// A configuration kept in memory only (`true`) or in the default document.
    public init(isStoredInMemoryOnly: Bool) {
        self.init(nil, isStoredInMemoryOnly: isStoredInMemoryOnly)
    }

    private static var defaultDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil }
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".local/share")
        return base.appendingPathComponent(ProcessInfo.processInfo.processName)
    }
}
