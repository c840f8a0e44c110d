import DeckArguments
import DeckKit

/// Exit statuses (sysexits.h), documented in deck(1).
enum ExitStatus {
    static let ok: Int32 = 0
    static let failure: Int32 = 1
    /// `deck lint` found something: the check ran, and the schema breaks one of its rules.
    static let findings: Int32 = 1
    static let usage: Int32 = 64
    static let dataError: Int32 = 65
    static let noInput: Int32 = 66
    static let software: Int32 = 70
    static let cantCreate: Int32 = 73
    static let ioError: Int32 = 74
    static let tempFailure: Int32 = 75
}

extension DeckError {
    /// The `deck` exit status for this error (see deck(1), EXIT STATUS).
    var exitStatus: Int32 {
        switch kind {
        case .cannotOpen: ExitStatus.noInput
        case .alreadyExists: ExitStatus.cantCreate
        case .invalidData: ExitStatus.dataError
        case .io: ExitStatus.ioError
        case .busy: ExitStatus.tempFailure
        case .cancelled: ExitStatus.failure
        case .misuse: ExitStatus.software
        }
    }

    /// The message `deck` prints: the error's description, with the closest known name
    /// suggested where a name was not found.
    var message: String {
        switch self {
        case .unknownEntity(let name, let known):
            description + (closestMatch(to: name, in: known).map { "; did you mean '\($0)'?" } ?? "")
        case .unknownProperty(_, let name, let known):
            description + (closestMatch(to: name, in: known).map { "; did you mean '\($0)'?" } ?? "")
        default:
            description
        }
    }
}
