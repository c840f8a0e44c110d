import DeckTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A unique temporary directory, removed (permissions restored first) when the test's scope
/// ends: DeckTestSupport's ``ScratchDirectory``, with paths as strings, as `deck`'s arguments
/// take them.
final class TemporaryDirectory {
    private let scratch: ScratchDirectory
    var url: URL { scratch.url }
    var path: String { scratch.path }

    init() throws { scratch = try ScratchDirectory() }

    func appending(_ name: String) -> String { scratch.appending(name).path }
}

/// The directory holding the built products (`deck`, `deck-crashtest`): next to the test bundle.
let productsDirectory: URL = {
    if let override = ProcessInfo.processInfo.environment["DECK_PRODUCTS"] {
        return URL(fileURLWithPath: override)
    }
    var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent()
    // The runner may sit inside an .xctest bundle directory.
    while url.path.contains(".xctest") { url.deleteLastPathComponent() }
    return url
}()

/// The outcome of running a built executable.
struct RunResult {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// Runs a built product with `arguments`, optional standard input, and extra environment.
@discardableResult
func runProduct(
    _ name: String, _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:],
    currentDirectory: String? = nil
) throws -> RunResult {
    try runExecutable(
        productsDirectory.appendingPathComponent(name), arguments, stdin: stdin, environment: environment,
        currentDirectory: currentDirectory)
}

/// Runs a program found on the `PATH` (`sqlite3`, `bash`), like ``runProduct(_:_:stdin:environment:currentDirectory:)``.
@discardableResult
func runTool(
    _ name: String, _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:],
    currentDirectory: String? = nil
) throws -> RunResult {
    try runExecutable(
        URL(fileURLWithPath: "/usr/bin/env"), [name] + arguments, stdin: stdin, environment: environment,
        currentDirectory: currentDirectory)
}

/// Runs the executable at `url`, feeding `stdin` and collecting both outputs.
func runExecutable(
    _ url: URL, _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:],
    currentDirectory: String? = nil
) throws -> RunResult {
    let process = Process()
    process.executableURL = url
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    env.removeValue(forKey: "NO_COLOR")
    for (key, value) in environment { env[key] = value }
    process.environment = env
    if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
    let out = Pipe()
    let err = Pipe()
    let input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    // Read both pipes before waiting, so a chatty child cannot block on a full pipe.
    let group = DispatchGroup()
    nonisolated(unsafe) var outData = Data()
    nonisolated(unsafe) var errData = Data()
    group.enter()
    DispatchQueue.global().async {
        outData = out.fileHandleForReading.readDataToEndOfFile()
        group.leave()
    }
    errData = err.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    return RunResult(
        status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self))
}

/// Runs the built `deck`.
@discardableResult
func deck(_ arguments: String..., stdin: String? = nil, environment: [String: String] = [:]) throws
    -> RunResult
{
    try runProduct("deck", arguments, stdin: stdin, environment: environment)
}
