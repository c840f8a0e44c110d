import Foundation

/// The real Core Data stores of `../shared/fixtures/coredata/` (beside the package root; the
/// environment variable `DECK_COREDATA_FIXTURES` may name the folder instead, for a worktree
/// elsewhere). They are never copied into the repository: tests read them in place (or copy
/// them into a scratch directory) and say clearly when the folder is absent.
public enum CoreDataFixtures {
    /// The folder, or nil when it is absent.
    public static let directory: URL? = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        var candidates = [root.appendingPathComponent("../shared/fixtures/coredata").standardizedFileURL]
        if let named = ProcessInfo.processInfo.environment["DECK_COREDATA_FIXTURES"] {
            candidates.append(URL(fileURLWithPath: named))
        }
        return candidates.first {
            FileManager.default.fileExists(atPath: $0.appendingPathComponent("README.md").path)
        }
    }()

    /// Why a suite that needs the folder is skipped.
    public static let absent =
        "../shared/fixtures/coredata/ (the real Core Data stores) is absent beside the package root"

    /// The folder is absent, or a fixture has no `.sqlite` file.
    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    /// The `.sqlite` file of fixture `folder`.
    public static func store(_ folder: String) throws -> URL {
        guard let directory else { throw Missing(description: absent) }
        let url = directory.appendingPathComponent(folder)
        guard
            let name = try FileManager.default.contentsOfDirectory(atPath: url.path).first(where: {
                $0.hasSuffix(".sqlite")
            })
        else { throw Missing(description: "\(url.path) holds no .sqlite file") }
        return url.appendingPathComponent(name)
    }
}
