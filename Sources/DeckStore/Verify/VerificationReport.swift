import Foundation

/// One problem ``PackageVerifier`` found.
public struct Finding: Sendable, Hashable, CustomStringConvertible {
    /// How bad a finding is.
    public enum Severity: String, Sendable, Hashable, Comparable {
        /// Data is damaged or unreadable: the package is invalid.
        case corruption
        /// Harmless leftovers (orphan files, temporaries): `deck gc` tidies them.
        case untidy
        /// The store cannot be examined until a writer recovers it (a rollback journal a writer
        /// left when it stopped mid-transaction): nothing is known to be lost, and opening the
        /// package for writing once recovers it. The package is not valid until then, nor corrupt.
        case needsRecovery
        /// A value an earlier Deck wrote that today's rules no longer let a writer write (spec
        /// 7.7): valid, read as the spec says; a note, not a fault.
        case legacy

        public static func < (a: Severity, b: Severity) -> Bool { a.rank < b.rank }

        private var rank: Int {
            switch self {
            case .corruption: 0
            case .needsRecovery: 1
            case .untidy: 2
            case .legacy: 3
            }
        }
    }

    public let severity: Severity
    /// A stable identifier of the kind of finding, e.g. `blob-missing` (listed in the spec).
    public let code: String
    /// What the finding is about: a path, `Entity #id`, a table, or a digest.
    public let object: String
    public let message: String

    public var description: String { "\(severity.rawValue): \(object): \(message)" }

    package init(severity: Severity, code: String, object: String, message: String) {
        self.severity = severity
        self.code = code
        self.object = object
        self.message = message
    }
}

/// The outcome of verifying a package.
public struct VerificationReport: Sendable {
    public let path: String
    public var findings: [Finding] = []
    /// Blob files whose bytes were hashed.
    public var blobsChecked = 0
    /// Bytes hashed.
    public var bytesChecked: Int64 = 0
    /// Records counted across all tables.
    public var records = 0
    /// The format version of the package's store (`user_version`), by whose rules it was
    /// checked; nil when the store could not be read that far.
    public var formatVersion: Int?
    /// The manifest's `formatVersion`, nil when it could not be read. It is higher than
    /// ``formatVersion`` after an interrupted upgrade, which the next writer finishes (spec:
    /// section 12.2); that is no finding.
    public var manifestFormatVersion: Int?

    /// True when nothing is corrupt and the store could be examined (untidy findings and legacy
    /// values are allowed).
    public var isValid: Bool { findings.allSatisfy { $0.severity == .untidy || $0.severity == .legacy } }

    /// True when the store could not be examined because it needs recovery by a writer
    /// (``Finding/Severity-swift.enum/needsRecovery``), and nothing else is corrupt.
    public var needsRecovery: Bool {
        findings.contains { $0.severity == .needsRecovery }
            && !findings.contains { $0.severity == .corruption }
    }

    package init(path: String) {
        self.path = path
    }
}

extension VerificationReport {
    /// Adds a finding: the sink the checks of a package (``TableCheck``, ``StorageClassCheck``,
    /// ``CellCheck``, ``BlobCheck``) all report to.
    mutating func add(_ severity: Finding.Severity, _ code: String, _ object: String, _ message: String) {
        findings.append(Finding(severity: severity, code: code, object: object, message: message))
    }

    /// Adds what `other`, a report of some of the same package's checks, found and counted.
    mutating func merge(_ other: VerificationReport) {
        findings += other.findings
        blobsChecked += other.blobsChecked
        bytesChecked += other.bytesChecked
        records += other.records
    }
}
