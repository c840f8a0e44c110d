import Foundation

#if canImport(Glibc)
    import Glibc
#endif

// Two real Syncthing instances for EndToEndSyncthingTests, on the loopback interface only: their
// homes and configurations, their REST API (through a small HTTP/1.0 client that can reach
// nothing but 127.0.0.1), waiting for them, and stopping them on every path.

/// The `syncthing` executable on the `PATH`, or nil when it is not installed.
let syncthingExecutable: String? = {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for directory in path.split(separator: ":") where !directory.isEmpty {
        let candidate = String(directory) + "/syncthing"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}()

/// What went wrong in the harness, with what it was waiting for and the instances' logs.
struct SyncthingHarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A reply of Syncthing's REST API.
struct LoopbackReply {
    let status: Int
    let body: Data
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// TCP on 127.0.0.1, and nowhere else.
enum Loopback {
    /// The one address the harness configures, listens on and connects to.
    static let host = "127.0.0.1"

    /// `count` distinct TCP ports of 127.0.0.1 that were free a moment ago (each bound to port 0,
    /// all released together).
    static func freePorts(_ count: Int) throws -> [Int] {
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        var ports: [Int] = []
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw SyncthingHarnessError("socket: errno \(errno)") }
            sockets.append(fd)
            var address = socketAddress(port: 0)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw SyncthingHarnessError("bind 127.0.0.1:0: errno \(errno)") }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0 else { throw SyncthingHarnessError("getsockname: errno \(errno)") }
            ports.append(Int(UInt16(bigEndian: address.sin_port)))
        }
        return ports
    }

    /// Sends one HTTP/1.0 request to 127.0.0.1:`port` and reads the whole reply (an HTTP/1.0
    /// server closes the connection after it, and sends no chunked body); each read and write
    /// waits at most `timeout` seconds.
    static func request(
        port: Int, method: String, target: String, headers: [(String, String)], timeout: Int = 20
    ) throws -> LoopbackReply {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SyncthingHarnessError("socket: errno \(errno)") }
        defer { close(fd) }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
            _ = setsockopt(fd, SOL_SOCKET, option, &limit, socklen_t(MemoryLayout<timeval>.size))
        }
        var address = socketAddress(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw SyncthingHarnessError("connect \(host):\(port): errno \(errno)") }
        var request = "\(method) \(target) HTTP/1.0\r\nHost: \(host):\(port)\r\nContent-Length: 0\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        var bytes = Array((request + "\r\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + sent, $0.count - sent) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw SyncthingHarnessError("write to \(host):\(port): errno \(errno)") }
            sent += n
        }
        var reply = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw SyncthingHarnessError("read from \(host):\(port): errno \(errno)") }
            if n == 0 { break }
            reply.append(contentsOf: buffer[0..<n])
        }
        guard let end = reply.range(of: Data("\r\n\r\n".utf8)),
            let statusLine = String(decoding: reply[..<end.lowerBound], as: UTF8.self)
                .split(separator: "\r\n").first,
            let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { throw SyncthingHarnessError("\(method) \(target): not an HTTP reply: \(reply.count) bytes") }
        return LoopbackReply(status: status, body: reply[end.upperBound...])
    }

    private static func socketAddress(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr = in_addr(s_addr: in_addr_t(0x7F00_0001).bigEndian)  // 127.0.0.1
        return address
    }
}

/// One Syncthing instance: its home (keys, configuration, database), the folder it shares, its
/// two ports on 127.0.0.1 (the sync protocol's and the REST API's), its log and its process.
final class SyncthingInstance {
    let name: String
    let home: String
    let folder: String
    let log: String
    let listenPort: Int
    let guiPort: Int
    let apiKey: String
    let deviceID: String
    private var process: Process?
    /// Every process the instance has been seen to run (Syncthing's monitor and its child).
    private(set) var processes: Set<pid_t> = []

    /// The device id's first 7 characters: Syncthing's short id, in its logs, its version
    /// vectors and its conflict copies' names.
    var shortID: String { String(deviceID.prefix(7)) }
    var listenAddress: String { "tcp://\(Loopback.host):\(listenPort)" }
    var guiAddress: String { "\(Loopback.host):\(guiPort)" }

    /// Generates the instance's keys (`syncthing generate`) in `directory`/`name`-home and reads
    /// its device id.
    init(name: String, in directory: String, listenPort: Int, guiPort: Int) throws {
        guard let executable = syncthingExecutable else {
            throw SyncthingHarnessError("syncthing is not installed: run Scripts/bootstrap")
        }
        self.name = name
        home = "\(directory)/\(name)-home"
        folder = "\(directory)/\(name)-folder"
        log = "\(directory)/\(name).log"
        self.listenPort = listenPort
        self.guiPort = guiPort
        apiKey = "deck-e2e-\(name)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let generated = try runExecutable(
            URL(fileURLWithPath: executable),
            ["generate", "--home=\(home)", "--no-default-folder", "--skip-port-probing"],
            environment: Self.environment)
        let output = generated.stdout + generated.stderr
        guard generated.status == 0,
            let match = output.range(
                of: #"Device ID: [A-Z2-7]{7}(-[A-Z2-7]{7}){7}"#, options: .regularExpression)
        else {
            throw SyncthingHarnessError("\(name): syncthing generate: status \(generated.status): \(output)")
        }
        deviceID = String(output[match].dropFirst("Device ID: ".count))
    }

    /// The environment Syncthing runs in: this process's, without the proxy variables (Syncthing
    /// would dial its peer through the proxy they name) and without any `ST…` variable a
    /// developer may have set (`STGUIADDRESS` would move the REST API, `STTRACE` flood the log),
    /// and with upgrades, the default folder and restarts turned off.
    static var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for key in environment.keys where key.lowercased().hasSuffix("_proxy") || key.hasPrefix("ST") {
            environment.removeValue(forKey: key)
        }
        environment["STNOUPGRADE"] = "1"
        environment["STNODEFAULTFOLDER"] = "1"
        environment["STNORESTART"] = "1"
        return environment
    }

    /// Writes the instance's `config.xml` (replacing the one `syncthing generate` wrote): one
    /// send-receive folder, `folderID`, shared with `peer`; everything on 127.0.0.1; every
    /// outside contact off (global and local discovery, relays, NAT traversal, STUN, usage and
    /// crash reports, upgrades); the watcher and the rescans quick, redials every 5 s (the least
    /// Syncthing takes), and Syncthing at the test's priority (by default it lowers its own,
    /// which on a busy machine slows every step the test waits for).
    func writeConfiguration(folderID: String, peer: SyncthingInstance) throws {
        let configuration = """
            <configuration version="36">
                <folder id="\(folderID)" label="\(folderID)" path="\(Self.escaped(folder))" \
            type="sendreceive" rescanIntervalS="5" fsWatcherEnabled="true" fsWatcherDelayS="1" \
            ignorePerms="false" autoNormalize="true">
                    <device id="\(deviceID)"></device>
                    <device id="\(peer.deviceID)"></device>
                    <maxConflicts>10</maxConflicts>
                </folder>
                <device id="\(deviceID)" name="\(name)" compression="metadata">
                    <address>\(listenAddress)</address>
                </device>
                <device id="\(peer.deviceID)" name="\(peer.name)" compression="metadata">
                    <address>\(peer.listenAddress)</address>
                </device>
                <gui enabled="true" tls="false">
                    <address>\(guiAddress)</address>
                    <apikey>\(apiKey)</apikey>
                </gui>
                <options>
                    <listenAddress>\(listenAddress)</listenAddress>
                    <globalAnnounceEnabled>false</globalAnnounceEnabled>
                    <globalAnnounceServer></globalAnnounceServer>
                    <localAnnounceEnabled>false</localAnnounceEnabled>
                    <localAnnounceMCAddr></localAnnounceMCAddr>
                    <announceLANAddresses>false</announceLANAddresses>
                    <relaysEnabled>false</relaysEnabled>
                    <natEnabled>false</natEnabled>
                    <stunServer></stunServer>
                    <stunKeepaliveStartS>0</stunKeepaliveStartS>
                    <urAccepted>-1</urAccepted>
                    <urURL></urURL>
                    <crashReportingEnabled>false</crashReportingEnabled>
                    <crashReportingURL></crashReportingURL>
                    <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
                    <releasesURL></releasesURL>
                    <startBrowser>false</startBrowser>
                    <reconnectionIntervalS>5</reconnectionIntervalS>
                    <setLowPriority>false</setLowPriority>
                </options>
            </configuration>

            """
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: configurationPath))
    }

    var configurationPath: String { home + "/config.xml" }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// Starts `syncthing serve`, its output (both streams) to the instance's log.
    func start() throws {
        guard let executable = syncthingExecutable else {
            throw SyncthingHarnessError("syncthing is not installed: run Scripts/bootstrap")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "serve", "--home=\(home)", "--no-browser", "--no-restart", "--no-upgrade", "--no-default-folder",
            "--logflags=3",
        ]
        process.environment = Self.environment
        guard FileManager.default.createFile(atPath: log, contents: nil),
            let output = FileHandle(forWritingAtPath: log)
        else { throw SyncthingHarnessError("\(name): cannot create \(log)") }
        defer { try? output.close() }
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        processes.insert(process.processIdentifier)
    }

    /// Calls the REST API; anything but HTTP 200 is an error.
    @discardableResult
    func rest(_ method: String, _ target: String) throws -> LoopbackReply {
        let reply = try Loopback.request(
            port: guiPort, method: method, target: target, headers: [("X-API-Key", apiKey)])
        guard reply.status == 200 else {
            throw SyncthingHarnessError("\(name): \(method) \(target): HTTP \(reply.status): \(reply.text)")
        }
        return reply
    }

    /// A REST reply that is a JSON object.
    func object(_ target: String) throws -> [String: Any] {
        let reply = try rest("GET", target)
        guard let object = try JSONSerialization.jsonObject(with: reply.body) as? [String: Any] else {
            throw SyncthingHarnessError("\(name): GET \(target): not a JSON object: \(reply.text)")
        }
        return object
    }

    /// Whether the REST API answers (with the instance's key).
    func answers() -> Bool { (try? rest("GET", "/rest/system/ping")) != nil }

    /// Whether the instance has a connection to `peer` (`/rest/system/connections`).
    func isConnected(to peer: SyncthingInstance) throws -> Bool {
        let connections = try object("/rest/system/connections")["connections"] as? [String: Any]
        return (connections?[peer.deviceID] as? [String: Any])?["connected"] as? Bool == true
    }

    /// Pauses `peer`: the connection is closed, and `peer`'s are refused, until it is resumed.
    func pause(_ peer: SyncthingInstance) throws {
        try rest("POST", "/rest/system/pause?device=\(peer.deviceID)")
    }

    /// Resumes `peer`, dialing it at once.
    func resume(_ peer: SyncthingInstance) throws {
        try rest("POST", "/rest/system/resume?device=\(peer.deviceID)")
    }

    /// Scans the folder now (the REST call returns when the scan has ended).
    func scan(_ folderID: String) throws { try rest("POST", "/rest/db/scan?folder=\(folderID)") }

    /// Whether the folder is idle with nothing left to pull (`/rest/db/status`), and `peer` has
    /// everything, as far as this instance knows (`/rest/db/completion`).
    func isSettled(_ folderID: String, peer: SyncthingInstance) throws -> Bool {
        let status = try object("/rest/db/status?folder=\(folderID)")
        let completion = try object("/rest/db/completion?folder=\(folderID)&device=\(peer.deviceID)")
        return status["state"] as? String == "idle" && status["needTotalItems"] as? Int == 0
            && completion["needItems"] as? Int == 0 && completion["needDeletes"] as? Int == 0
    }

    /// What the instance's database says of `file` in the folder (`/rest/db/file`): its global
    /// version's `modifiedBy`, the short id of the device that last changed it.
    func modifiedBy(_ file: String, in folderID: String) throws -> String? {
        let info = try object("/rest/db/file?folder=\(folderID)&file=\(file)")
        return (info["global"] as? [String: Any])?["modifiedBy"] as? String
    }

    /// The last `count` lines of the log.
    func logTail(_ count: Int = 40) -> String {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? "(no log)"
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(count)
            .joined(separator: "\n")
    }

    /// Notes the processes below the instance's (Syncthing's monitor runs the real instance as
    /// its child), so that they can be ended even after the monitor is gone.
    func noteProcesses() {
        guard let process else { return }
        processes.formUnion(SyncthingProcesses.descendants(of: process.processIdentifier))
    }

    /// Asks the instance to shut down through its REST API (no error if it cannot).
    func requestShutdown() {
        noteProcesses()
        _ = try? Loopback.request(
            port: guiPort, method: "POST", target: "/rest/system/shutdown", headers: [("X-API-Key", apiKey)],
            timeout: 2)
    }

    /// Sends `signal` to the instance's processes, those below the monitor first (which the
    /// monitor, given up to 2 s, then reaps: killed after it, they would be left to init as
    /// zombies), each also continued (a stopped process would only hold the signal).
    func signal(_ signal: Int32) {
        noteProcesses()
        guard let root = process?.processIdentifier else { return }
        let below = processes.subtracting([root]).filter(SyncthingProcesses.isAlive)
        for pid in [root] + below where SyncthingProcesses.isAlive(pid) { kill(pid, SIGCONT) }
        for pid in below { kill(pid, signal) }
        let deadline = ContinuousClock.now + .seconds(2)
        while below.contains(where: { kill($0, 0) == 0 }) && ContinuousClock.now < deadline { usleep(20_000) }
        if SyncthingProcesses.isAlive(root) { kill(root, signal) }
    }

    /// Reaps the process once it is gone.
    func reap() {
        if let process, !process.isRunning { process.waitUntilExit() }
    }
}

/// Processes, from /proc.
enum SyncthingProcesses {
    /// Whether `pid` runs (a zombie, exited but not yet reaped, does not).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0, let fields = statFields(pid) else { return false }
        return fields.first != "Z"
    }

    /// Every process below `root`, from the parents in /proc/PID/stat.
    static func descendants(of root: pid_t) -> [pid_t] {
        var children: [pid_t: [pid_t]] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(name), let fields = statFields(pid), fields.count > 1,
                let parent = pid_t(fields[1])
            else { continue }
            children[parent, default: []].append(pid)
        }
        var result: [pid_t] = []
        var frontier = [root]
        while let next = frontier.popLast() {
            for child in children[next] ?? [] where !result.contains(child) {
                result.append(child)
                frontier.append(child)
            }
        }
        return result
    }

    /// The fields of /proc/PID/stat after the command's name (state, parent, …).
    private static func statFields(_ pid: pid_t) -> [Substring]? {
        guard let handle = FileHandle(forReadingAtPath: "/proc/\(pid)/stat") else { return nil }
        defer { try? handle.close() }
        let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }
}

/// Two instances, A and B, that share one folder; the scratch directory holding their homes,
/// folders and logs lives as long as they do.
final class SyncthingPair {
    static let folderID = "deck-e2e"
    let directory: TemporaryDirectory
    let a: SyncthingInstance
    let b: SyncthingInstance
    var both: [SyncthingInstance] { [a, b] }
    /// What the harness waited for, and how long.
    private(set) var waits: [(what: String, time: Duration)] = []

    init() throws {
        directory = try TemporaryDirectory()
        let ports = try Loopback.freePorts(4)
        a = try SyncthingInstance(name: "A", in: directory.path, listenPort: ports[0], guiPort: ports[1])
        b = try SyncthingInstance(name: "B", in: directory.path, listenPort: ports[2], guiPort: ports[3])
        try a.writeConfiguration(folderID: Self.folderID, peer: b)
        try b.writeConfiguration(folderID: Self.folderID, peer: a)
    }

    /// Starts A, then B once A's REST API answers. Started together, the two dial each other at
    /// the same moment, each from its listening port (Syncthing binds its outgoing connections
    /// to it), which makes one TCP connection (a simultaneous open) on which both are TLS
    /// clients: Syncthing 1.19 drops it only after 20 s.
    func start() throws {
        for instance in both {
            try instance.start()
            try waitUntil("\(instance.name)'s REST API answers on \(instance.guiAddress)", seconds: 30) {
                instance.answers()
            }
            instance.noteProcesses()
        }
    }

    /// Polls `condition` every 100 ms until it holds; after `seconds`, throws what it waited
    /// for, the condition's last error and the tails of both logs. An error of the condition
    /// (the REST API not answering yet) counts as not yet.
    func waitUntil(_ what: String, seconds: Double, _ condition: () throws -> Bool) throws {
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int(seconds * 1000))
        var lastError: (any Error)?
        while true {
            do {
                if try condition() {
                    waits.append((what, ContinuousClock.now - start))
                    return
                }
                lastError = nil
            } catch {
                lastError = error
            }
            guard ContinuousClock.now < deadline else { break }
            usleep(100_000)
        }
        throw SyncthingHarnessError(
            "timed out after \(seconds) s waiting until \(what)"
                + (lastError.map { " (last error: \($0))" } ?? "") + "\n" + logs())
    }

    /// Both logs' tails, for a failure's message.
    func logs() -> String {
        both.map { "--- \($0.name)'s log (\($0.log)), last lines:\n\($0.logTail())" }.joined(separator: "\n")
    }

    /// Stops both instances, whatever state they are in: asks each through the REST API, then,
    /// if anything still runs after 10 s, sends SIGTERM, and 5 s later SIGKILL, to the processes
    /// either runs (Syncthing's monitor and its child). Returns the processes still running
    /// after all that (none, unless something is badly wrong).
    @discardableResult
    func stop() -> [pid_t] {
        for instance in both { instance.requestShutdown() }
        var running = runningProcesses(afterWaiting: 10)
        for signal in [SIGTERM, SIGKILL] where !running.isEmpty {
            for instance in both { instance.signal(signal) }
            running = runningProcesses(afterWaiting: 5)
        }
        for instance in both { instance.reap() }
        return running
    }

    /// The instances' processes that still run after waiting up to `seconds` for all to end.
    private func runningProcesses(afterWaiting seconds: Double) -> [pid_t] {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            let running = both.flatMap(\.processes).filter(SyncthingProcesses.isAlive).sorted()
            if running.isEmpty || ContinuousClock.now >= deadline { return running }
            usleep(50_000)
        }
    }

    /// What the configurations the harness wrote (config.xml) say that is not on 127.0.0.1:
    /// every address-like element (`address`, `listenAddress`, the discovery and STUN servers,
    /// the multicast address, the report and release URLs), parsed back from the files. Empty
    /// when every value is empty or on 127.0.0.1 and the four addresses written are there.
    func writtenConfigurationProblems() throws -> [String] {
        var problems: [String] = []
        let element = try NSRegularExpression(pattern: #"<(\w*(?:[Aa]ddress|Server|URL|Addr))>([^<]*)</\1>"#)
        for instance in both {
            let written = try String(contentsOfFile: instance.configurationPath, encoding: .utf8)
            let found = element.matches(in: written, range: NSRange(written.startIndex..., in: written)).map {
                (
                    String(written[Range($0.range(at: 1), in: written)!]),
                    String(written[Range($0.range(at: 2), in: written)!])
                )
            }
            let addresses = found.filter { $0.0 == "address" || $0.0 == "listenAddress" }.map(\.1)
            let expected = [instance.listenAddress, a.listenAddress, b.listenAddress, instance.guiAddress]
            if addresses.sorted() != expected.sorted() {
                problems.append(
                    "\(instance.name): config.xml has the addresses \(addresses), not \(expected)")
            }
            for (name, value) in found where !Self.isLoopbackOrEmpty(value) {
                problems.append("\(instance.name): config.xml: <\(name)> is \(value)")
            }
        }
        return problems
    }

    /// What the configurations Syncthing runs with (`/rest/config`) say that is not on 127.0.0.1
    /// or not turned off: the listen, GUI and device addresses (exactly the ones written, never
    /// `dynamic` or `default`), the discovery and STUN servers, the multicast address, the
    /// report and release URLs, every URL anywhere, and the switch of every outside contact.
    func runningConfigurationProblems() throws -> [String] {
        var problems: [String] = []
        for instance in both {
            let running = try instance.object("/rest/config")
            let options = running["options"] as? [String: Any] ?? [:]
            let gui = running["gui"] as? [String: Any] ?? [:]
            if options["listenAddresses"] as? [String] != [instance.listenAddress] {
                problems.append("\(instance.name): listen addresses \(options["listenAddresses"] ?? "none")")
            }
            if gui["address"] as? String != instance.guiAddress {
                problems.append("\(instance.name): GUI address \(gui["address"] ?? "none")")
            }
            let devices = running["devices"] as? [[String: Any]] ?? []
            if devices.count != 2 { problems.append("\(instance.name): \(devices.count) devices") }
            for device in devices {
                let id = device["deviceID"] as? String ?? "?"
                let expected = both.first { $0.deviceID == id }.map { [$0.listenAddress] }
                if device["addresses"] as? [String] != expected {
                    problems.append("\(instance.name): device \(id) at \(device["addresses"] ?? "none")")
                }
            }
            for key in ["globalAnnounceServers", "stunServers"] {
                for value in options[key] as? [String] ?? [] where !value.isEmpty {
                    problems.append("\(instance.name): \(key) has \(value)")
                }
            }
            for key in ["localAnnounceMCAddr", "urURL", "releasesURL", "crURL"] {
                if let value = options[key] as? String, !value.isEmpty {
                    problems.append("\(instance.name): \(key) is \(value)")
                }
            }
            for value in Self.strings(in: running)
            where value.contains("://") && !Self.isLoopbackOrEmpty(value) {
                problems.append("\(instance.name): a URL in the configuration: \(value)")
            }
            let off = [
                "globalAnnounceEnabled", "localAnnounceEnabled", "relaysEnabled", "natEnabled",
                "crashReportingEnabled", "startBrowser", "announceLANAddresses",
            ]
            for key in off where options[key] as? Bool != false {
                problems.append("\(instance.name): \(key) is \(options[key] ?? "missing"), not false")
            }
            for (key, expected) in [
                ("urAccepted", -1), ("autoUpgradeIntervalH", 0), ("stunKeepaliveStartS", 0),
            ]
            where options[key] as? Int != expected {
                problems.append("\(instance.name): \(key) is \(options[key] ?? "missing"), not \(expected)")
            }
        }
        return problems
    }

    /// Whether `value` is empty or an address or URL whose host is 127.0.0.1 (`tcp://127.0.0.1:22000`,
    /// `127.0.0.1:8384`).
    static func isLoopbackOrEmpty(_ value: String) -> Bool {
        if value.isEmpty { return true }
        if value.contains("://") { return URLComponents(string: value)?.host == Loopback.host }
        guard let colon = value.lastIndex(of: ":") else { return false }
        return value[..<colon] == Loopback.host && Int(value[value.index(after: colon)...]) != nil
    }

    /// Every string in a JSON value.
    static func strings(in value: Any) -> [String] {
        switch value {
        case let string as String: [string]
        case let array as [Any]: array.flatMap(strings(in:))
        case let object as [String: Any]: object.values.flatMap(strings(in:))
        default: []
        }
    }

    /// Every file and directory under `root` by path relative to it, with a file's SHA-256 (a
    /// directory's is "dir"; a file that vanished while it was read, "?").
    static func tree(_ root: String) -> [String: String] {
        var result: [String: String] = [:]
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return result }
        for case let path as String in enumerator {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory) else {
                result[path] = "?"
                continue
            }
            if isDirectory.boolValue {
                result[path] = "dir"
            } else {
                result[path] =
                    (try? Data(contentsOf: URL(fileURLWithPath: root + "/" + path))).map(e2eSHA256) ?? "?"
            }
        }
        return result
    }

    /// Syncthing's version line (`syncthing --version`).
    static var version: String {
        guard let executable = syncthingExecutable,
            let result = try? runExecutable(URL(fileURLWithPath: executable), ["--version"])
        else { return "unknown" }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
