// The benchmark runner: starts the strict APNs emulator, the hub (`hub serve`, release build, SQLite) and the load
// tools itself, runs every scenario in one go and prints one `name: value unit` line per figure, then a summary.
//
//   Benchmarks/run.sh                                    # builds, installs the load tools, runs everything
//   Benchmarks/run.sh --sizes 10000,100000 --skip-peer   # a quicker pass
//   Benchmarks/run.sh --postgres postgres://… --nodes 2 --sizes 100000 --skip-peer --skip-wrk --skip-resolution
//                                                        # fan-outs and per-user sends on PostgreSQL shared by two
//                                                        # hub processes, with each node's share of each
//   Benchmarks/run.sh --postgres postgres://… --peruser-only --sizes 10000 --skip-peer --skip-wrk --skip-resolution
//                                                        # per-user sends only: SQLite then PostgreSQL, one run
//
//   Benchmarks/run.sh --sizes 10000 --tracing-only       # tracing off and on, side by side (one node, SQLite)
//
// Scenarios: the emulator's ceiling (h2load), the hub's fan-out through the REST API (native and template) with the
// hub's peak RSS, tracing's overhead (the smallest size's fan-out and per-user sends with `observability.tracing` off
// and on, exporting to a local OTLP sink), the aioapns peer against the same emulator, audience resolution over the
// SQLite store, the API under wrk (PUT installations, POST messages), and many idle hubs on one node (the demo hub
// copied 1, 100 and 1,000 times: start-up, idle CPU, peak RSS, open files and bytes written; `--idle-hubs 1,100`,
// `--skip-idle`, `--idle-only`).

import APNs
import AsyncHTTPClient
import BenchmarkSupport
import Crypto
import Foundation
import HubServer
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NotificationHub
import PushEmulator
import Synchronization

// MARK: Options

struct Options {
    var sizes = [10_000, 100_000, 1_000_000]
    var peerSizes = [10_000, 100_000]
    var resolutionSize = 1_000_000
    var hub = ""
    var storeBenchmark = ""
    var peerScript = ""
    var wrkScripts = ""
    var wrkSeconds = 10
    var wrkConnections = 64
    var skipCeiling = false
    var skipPeer = false
    var skipWrk = false
    var skipResolution = false
    /// Skip the tracing-overhead scenario (tracing off and on, side by side).
    var skipTracing = false
    /// Run only the tracing-overhead scenario.
    var tracingOnly = false
    /// Runs the fan-out scenarios on PostgreSQL (a URL) instead of SQLite, with `nodes` hub processes.
    var postgres: String?
    var nodes = 1
    var keep = false
    /// Extra `delivery:` settings for the hub, as a YAML flow mapping (e.g. `{parallelNotifications: 256}`).
    var delivery: String?
    /// Extra settings of the APNs adapter, as YAML `key: value` pairs separated by commas (e.g. `connections: 8`).
    var apns: String?
    /// Connections in each node's PostgreSQL pool (the hub's default when absent).
    var pool: Int?
    /// Runs only the per-user scenarios (no fan-outs).
    var perUserOnly = false
    /// On PostgreSQL, skips the per-user reference run on SQLite that comes first.
    var skipSQLiteReference = false
    /// A folder for `perf record` profiles of the first hub node during each measured fan-out (`perf` on PATH).
    var profile: String?
    /// Hub counts of the idle scenario (the demo hub copied that many times; none with traffic).
    var idleHubs = [1, 100, 1000]
    /// Runs only the idle scenario.
    var idleOnly = false
    /// The configuration whose hub the idle scenario copies.
    var demoConfiguration = ""

    init(_ arguments: [String]) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let binaries = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        hub = binaries.appendingPathComponent("hub").path
        storeBenchmark = binaries.appendingPathComponent("StoreBenchmark").path
        peerScript = root.appendingPathComponent("peer/aioapns_peer.py").path
        wrkScripts = root.appendingPathComponent("wrk").path
        demoConfiguration = root.deletingLastPathComponent().appendingPathComponent("hub.yaml").path
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            func value() -> String { iterator.next() ?? "" }
            func sizes() -> [Int] { value().split(separator: ",").compactMap { Int($0) } }
            switch argument {
            case "--sizes": self.sizes = sizes()
            case "--peer-sizes": peerSizes = sizes()
            case "--resolution-size": resolutionSize = Int(value()) ?? resolutionSize
            case "--hub": hub = value()
            case "--store-benchmark": storeBenchmark = value()
            case "--wrk-seconds": wrkSeconds = Int(value()) ?? wrkSeconds
            case "--wrk-connections": wrkConnections = Int(value()) ?? wrkConnections
            case "--skip-ceiling": skipCeiling = true
            case "--skip-peer": skipPeer = true
            case "--skip-wrk": skipWrk = true
            case "--skip-resolution": skipResolution = true
            case "--skip-tracing": skipTracing = true
            case "--tracing-only": tracingOnly = true
            case "--postgres": postgres = value()
            case "--nodes": nodes = max(1, Int(value()) ?? 1)
            case "--pool": pool = Int(value())
            case "--keep": keep = true
            case "--delivery": delivery = value()
            case "--apns": apns = value()
            case "--profile": profile = value()
            case "--peruser-only": perUserOnly = true
            case "--skip-sqlite-reference": skipSQLiteReference = true
            case "--idle-hubs": idleHubs = sizes()
            case "--skip-idle": idleHubs = []
            case "--idle-only": idleOnly = true
            case "--demo-config": demoConfiguration = value()
            default:
                FileHandle.standardError.write(Data("unknown option \(argument)\n".utf8))
                exit(2)
            }
        }
    }
}

// MARK: Reporting

/// The figures printed so far, for the summary.
nonisolated(unsafe) var figures: [(name: String, value: String, unit: String)] = []

/// Prints `name: value unit` unbuffered and keeps it for the summary.
func figure(_ name: String, _ value: Double, _ unit: String, decimals: Int = 0) {
    let text = String(format: "%.\(decimals)f", value)
    figures.append((name, text, unit))
    say("\(name): \(text) \(unit)")
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: Processes

/// Runs a command to completion off the cooperative pool; returns its exit status and combined output.
func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            do {
                try process.run()
            } catch {
                continuation.resume(throwing: BenchmarkFailure("could not start \(executable): \(error)"))
                return
            }
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            continuation.resume(returning: (process.terminationStatus, String(decoding: data, as: UTF8.self)))
        }
    }
}

/// Finds an executable on PATH.
func which(_ name: String) -> String? {
    for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
        let path = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

/// CPU time (user and system, in seconds) of the process whose `/proc/<pid>/stat` is at `statPath`.
func processCPUSeconds(statPath: String) -> Double {
    let stat = (try? String(contentsOfFile: statPath, encoding: .utf8)) ?? ""
    // The fields after the command's closing parenthesis; utime and stime are the 14th and 15th of the line.
    guard let close = stat.lastIndex(of: ")") else { return 0 }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// A fan-out's duration with the CPU time the hub nodes and this process (the APNs emulator and the client) spent
/// on it.
struct FanOutCost {
    var seconds: Double
    var hubCPU: Double
    var benchmarkCPU: Double

    /// Prints the hub nodes' and this process's CPU per delivery, and both together in cores (a PostgreSQL
    /// server's CPU is not counted), under `name`.
    func report(_ name: String, deliveries: Int) {
        figure("\(name).hubCPUPerDelivery", 1e6 * hubCPU / Double(deliveries), "µs", decimals: 1)
        figure("\(name).benchmarkCPUPerDelivery", 1e6 * benchmarkCPU / Double(deliveries), "µs", decimals: 1)
        figure("\(name).cores", (hubCPU + benchmarkCPU) / seconds, "cores", decimals: 2)
    }
}

/// Runs a fan-out and measures the CPU every hub node and this process spent while it ran.
/// With `--profile`, the first node is recorded by `perf record` meanwhile, into `<folder>/<name>.perf.data`.
func costed(
    _ name: String, _ nodes: [HubServerProcess], _ fanOut: () async throws -> Double
) async throws -> FanOutCost {
    func hubs() -> Double { nodes.reduce(0) { $0 + $1.cpuSeconds } }
    var recorder: PerfRecorder?
    if let folder = options.profile {
        recorder = try await PerfRecorder(pid: nodes[0].process.processIdentifier, output: "\(folder)/\(name).perf.data")
    }
    let hubBefore = hubs()
    let ownBefore = processCPUSeconds(statPath: "/proc/self/stat")
    let seconds = try await fanOut()
    await recorder?.stop()
    return FanOutCost(
        seconds: seconds, hubCPU: hubs() - hubBefore,
        benchmarkCPU: processCPUSeconds(statPath: "/proc/self/stat") - ownBefore)
}

/// `perf record -g` attached to a process until stopped.
final class PerfRecorder {
    let process = Process()

    init(pid: pid_t, output: String) async throws {
        guard let perf = which("perf") else { throw BenchmarkFailure("--profile needs perf on PATH (apt-get install linux-perf)") }
        try FileManager.default.createDirectory(
            atPath: (output as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        process.executableURL = URL(fileURLWithPath: perf)
        process.arguments = ["record", "-F", "999", "-g", "-p", "\(pid)", "-o", output]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // perf needs a moment to attach to every thread.
        try await Task.sleep(for: .milliseconds(500))
    }

    func stop() async {
        process.interrupt()
        for _ in 0..<200 where process.isRunning { try? await Task.sleep(for: .milliseconds(50)) }
    }
}

/// The hub processes running now, killed when the runner is interrupted so that they do not outlive it.
nonisolated(unsafe) var runningHubs: Set<pid_t> = []
nonisolated(unsafe) var interruptSources: [any DispatchSourceSignal] = []
for interrupt in [SIGINT, SIGTERM] {
    signal(interrupt, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: interrupt, queue: .global())
    source.setEventHandler {
        for pid in runningHubs { kill(pid, SIGKILL) }
        exit(130)
    }
    source.resume()
    interruptSources.append(source)
}

/// A running `hub serve` with its log in a file.
final class HubServerProcess {
    let process = Process()
    let logPath: String
    private(set) var port = 0

    init(executable: String, configuration: String, logPath: String, nodeName: String? = nil) throws {
        self.logPath = logPath
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve", "-c", configuration, "--log-level", "notice"] + (nodeName.map { ["--node-name", $0] } ?? [])
        process.standardOutput = log
        process.standardError = log
        try process.run()
        runningHubs.insert(process.processIdentifier)
    }

    /// Waits for the "hub is listening" line and reads the port from it.
    func waitUntilListening(attempts: Int = 600) async throws {
        for _ in 0..<attempts {
            let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.contains("hub is listening") }),
                let range = line.range(of: "server.address="),
                let port = line[range.upperBound...].split(separator: " ").first?.split(separator: ":").last.flatMap({ Int($0) })
            {
                self.port = port
                return
            }
            guard process.isRunning else { throw BenchmarkFailure("the hub exited:\n\(text)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw BenchmarkFailure("the hub did not start listening; see \(logPath)")
    }

    /// The peak resident set size so far (VmHWM), in MiB.
    var peakRSSMiB: Double {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return 0 }
        return kilobytes / 1024
    }

    /// CPU time the process has used so far (user and system), in seconds.
    var cpuSeconds: Double {
        processCPUSeconds(statPath: "/proc/\(process.processIdentifier)/stat")
    }

    func stop() async {
        runningHubs.remove(process.processIdentifier)
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<600 where process.isRunning { try? await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

// MARK: Setup

let options = Options(CommandLine.arguments)
var logger = Logger(label: "hub-bench")
logger.logLevel = .warning
let teamID = "TEAM123456"
let keyID = "KEY1234567"
let topic = "com.example.bench"
let hubName = "bench"
let hubKey = "bench-key-0123456789abcdefghij"
let directory = NSTemporaryDirectory() + "hub-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
let key = try APNsEmulatorFactory.loadOrCreateKey(directory: directory)
let keyPath = directory + "/" + APNsEmulatorFactory.keyFileName
let tls = try EmulatorTLS.loadOrGenerate(directory: directory)
let caPath = directory + "/emulator-ca.pem"
let emulator = APNsEmulator(
    configuration: APNsEmulatorConfiguration(
        port: 0, teamID: teamID, keyID: keyID, publicKey: key.publicKey, topics: [topic], recordCapacity: 0),
    tls: tls, logger: logger)
let emulatorPort = try await emulator.start()
// Enough connections for the per-user scenarios' 64 senders and paced bursts. The client has an event loop of its
// own: on the emulator's loops (NIO's singleton group), a request to the hub would wait behind the emulator's
// HTTP/2 work, and the API figures would measure this process's loops instead of the hub.
let clientLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let http = HTTPClient(
    eventLoopGroup: clientLoop,
    configuration: HTTPClient.Configuration(
        connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 128)))

func deviceToken(_ index: Int) -> String {
    String(format: "%016x", index) + String(repeating: "ab", count: 24)
}

func cleanUp() async {
    try? await http.shutdown()
    try? await clientLoop.shutdownGracefully()
    await emulator.stop()
    if !options.keep { try? FileManager.default.removeItem(atPath: directory) }
}

say("# NotificationHub benchmarks: \(ProcessInfo.processInfo.activeProcessorCount) cores, APNs emulator on port \(emulatorPort)")

// MARK: 1. Emulator ceiling

var ceiling: Double?
if !options.skipCeiling && !options.tracingOnly && !options.idleOnly {
    if let h2load = which("h2load") {
        let jwt = try APNsProviderToken(privateKeyPEM: key.pemRepresentation, teamID: teamID, keyID: keyID).token()
        let payload = directory + "/payload.json"
        try Data(#"{"aps":{"alert":{"title":"Benchmark","body":"Hello from the benchmark"},"badge":1}}"#.utf8)
            .write(to: URL(fileURLWithPath: payload))
        let result = try await run(
            h2load,
            [
                "-n", "300000", "-c", "8", "-m", "100", "-t", "2", "-d", payload, "-H", "authorization: bearer \(jwt)",
                "-H", "apns-topic: \(topic)", "-H", "apns-push-type: alert", "-H", "apns-priority: 10",
                "https://127.0.0.1:\(emulatorPort)/3/device/\(deviceToken(1))",
            ])
        let succeeded = result.output.split(separator: "\n").first { $0.contains("requests:") && $0.contains("succeeded") }
        if let line = result.output.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
            let range = line.range(of: #"[0-9.]+ req/s"#, options: .regularExpression),
            let rate = Double(line[range].split(separator: " ")[0])
        {
            ceiling = rate
            figure("ceiling.h2load", rate, "requests/s")
            say("  h2load \(succeeded.map(String.init) ?? "")")
        } else {
            say("h2load failed (status \(result.status)):\n\(result.output)")
        }
    } else {
        say("ceiling: skipped, h2load is not installed (apt-get install nghttp2-client)")
    }
}

// MARK: 2–4, 7. Hub fan-out, template fan-out, peak RSS

/// Writes N installations into a fresh SQLite database, each tagged `bench` and `user:<i>`, with a template.
func seed(storage: StorageConfiguration, count: Int) async throws -> Double {
    let store = try await SQLInstallationStore.open(storage: storage, logger: logger)
    let template = InstallationTemplate(body: #"{"aps":{"alert":"$(message)","badge":1}}"#)
    let started = ContinuousClock.now
    var batch: [Installation] = []
    batch.reserveCapacity(5000)
    for index in 0..<count {
        batch.append(
            Installation(
                installationID: "i\(index)", userID: "user\(index)", platform: .apns, pushChannel: .handle(deviceToken(index)),
                tags: ["bench", "user:\(index)"], templates: ["alert": template]))
        if batch.count == 5000 {
            try await store.upsert(contentsOf: batch)
            batch.removeAll(keepingCapacity: true)
        }
    }
    if !batch.isEmpty { try await store.upsert(contentsOf: batch) }
    let elapsed = seconds(ContinuousClock.now - started)
    try await store.database.close()
    return Double(count) / elapsed
}

/// The store of one size's scenario: a SQLite file, or a schema of its own on PostgreSQL.
func storage(size: Int) throws -> (configuration: StorageConfiguration, yaml: String) {
    if let url = options.postgres {
        let schema = "bench_\(size)_\(getpid())"
        let pool = options.pool.map { ", pool: \($0)" } ?? ""
        return (.postgres(try .init(url: url, schema: schema)), #"{postgres: {url: "\#(url)", schema: \#(schema)\#(pool)}}"#)
    }
    let path = directory + "/hub-\(size).sqlite"
    return (.sqlite(path: path), "{sqlite: {path: \(path)}}")
}

func configuration(storage: String) -> String {
    """
    server: {host: 127.0.0.1, port: 0}
    hubs:
      \(hubName):
        keys: [{name: bench, rights: [Listen, Send, Manage], primaryKey: \(hubKey)}]
        storage: \(storage)\(options.delivery.map { "\n    delivery: \($0)" } ?? "")
        adapters:
          - type: apns
            endpoint: https://127.0.0.1:\(emulatorPort)
            caCertificate: \(caPath)
            teamId: \(teamID)
            keyId: \(keyID)
            privateKey: {file: \(keyPath)}
            topic: \(topic)\((options.apns ?? "").split(separator: ",").map { "\n        " + $0.trimmingCharacters(in: .whitespaces) }.joined())
    """
}

func token(port: Int) -> String {
    SharedAccessSignature.make(
        resource: "http://127.0.0.1:\(port)/\(hubName)", keyName: "bench", key: hubKey, expiry: Date() + 7200)
}

/// Sends one notification through the REST API and waits until the emulator has accepted `count` more; returns the
/// seconds from the request to the last acceptance.
func fanOut(port: Int, format: String, body: String, tags: String, count: Int) async throws -> Double {
    let before = emulator.acceptedCount
    var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/\(hubName)/messages?api-version=2015-01")
    request.method = .POST
    request.headers.add(name: "Authorization", value: token(port: port))
    request.headers.add(name: "ServiceBusNotification-Format", value: format)
    request.headers.add(name: "ServiceBusNotification-Tags", value: tags)
    request.headers.add(name: "Content-Type", value: "application/json")
    request.body = .bytes(ByteBuffer(string: body))
    let started = ContinuousClock.now
    let response = try await http.execute(request, timeout: .seconds(30))
    guard response.status == .created else {
        let text = String(buffer: try await response.body.collect(upTo: 1 << 16))
        throw BenchmarkFailure("the send was refused: \(response.status) \(text)")
    }
    var lastProgress = (count: before, at: ContinuousClock.now)
    while emulator.acceptedCount < before + count {
        try await Task.sleep(for: .milliseconds(2))
        let accepted = emulator.acceptedCount
        if accepted != lastProgress.count {
            lastProgress = (accepted, ContinuousClock.now)
        } else if ContinuousClock.now - lastProgress.at > .seconds(60) {
            throw BenchmarkFailure("the fan-out stalled at \(accepted - before) of \(count)")
        }
    }
    return seconds(ContinuousClock.now - started)
}

/// Runs wrk with a Lua script against the hub; prints requests/s, p50 and p99.
func runWrk(name: String, script: String, port: Int) async throws {
    guard let wrk = which("wrk") else {
        say("api.\(name): skipped, wrk is not installed (apt-get install wrk)")
        return
    }
    let result = try await run(
        wrk,
        [
            "-t2", "-c\(options.wrkConnections)", "-d\(options.wrkSeconds)s", "--latency", "-s", "\(options.wrkScripts)/\(script)",
            "http://127.0.0.1:\(port)",
        ],
        environment: ["HUB_TOKEN": token(port: port), "HUB_NAME": hubName])
    let lines = result.output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
    func milliseconds(_ text: Substring) -> Double? {
        for (suffix, factor) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * factor }
        }
        return nil
    }
    func percentile(_ label: String) -> Double? {
        lines.first { $0.hasPrefix(label) }.flatMap { milliseconds($0.split(separator: " ").last ?? "") }
    }
    guard let rateLine = lines.first(where: { $0.hasPrefix("Requests/sec:") }),
        let rate = Double(rateLine.split(separator: " ").last ?? ""), let p50 = percentile("50%"), let p99 = percentile("99%")
    else {
        throw BenchmarkFailure("could not read wrk's output:\n\(result.output)")
    }
    if let errors = lines.first(where: { $0.hasPrefix("Non-2xx or 3xx responses:") }) {
        throw BenchmarkFailure("api.\(name): \(errors)\n\(result.output)")
    }
    figure("api.\(name)", rate, "requests/s")
    figure("api.\(name).p50", p50, "ms", decimals: 2)
    figure("api.\(name).p99", p99, "ms", decimals: 2)
}

// MARK: Several nodes

/// Deliveries each node counted (`hub_notifications_delivered_total` on its `/metrics`, summed over platforms and
/// outcomes).
func delivered(by nodes: [HubServerProcess]) async throws -> [Int] {
    var counts: [Int] = []
    for node in nodes {
        let response = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(node.port)/metrics"), timeout: .seconds(10))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 22))
        counts.append(
            text.split(separator: "\n").filter { $0.hasPrefix("hub_notifications_delivered_total{") }
                .reduce(0) { $0 + Int(Double($1.split(separator: " ").last ?? "") ?? 0) })
    }
    return counts
}

/// Prints each node's share of what was delivered between two readings of ``delivered(by:)``, and fails when a
/// node of several delivered nothing: such a figure would be one node's.
func reportShares(_ name: String, before: [Int], after: [Int]) throws {
    let shares = zip(after, before).map { $0 - $1 }
    let total = max(1, shares.reduce(0, +))
    for (index, share) in shares.enumerated() {
        figure("\(name).share.node\(index)", 100 * Double(share) / Double(total), "%", decimals: 1)
    }
    say("  \(name) per node: \(shares.map(String.init).joined(separator: " / "))")
    if shares.count > 1, shares.contains(0) {
        throw BenchmarkFailure("\(name): a node delivered nothing (\(shares)); this is not a \(shares.count)-node figure")
    }
}

// MARK: 8. Per-user sends, 9. latency tolerance, 10. writes during a fan-out

/// Posts one send to one user's tag; returns the notification id when it was accepted.
func sendToUser(port: Int, user: Int) async throws -> String? {
    var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/\(hubName)/messages")
    request.method = .POST
    request.headers.add(name: "Authorization", value: token(port: port))
    request.headers.add(name: "ServiceBusNotification-Format", value: "apple")
    request.headers.add(name: "ServiceBusNotification-Tags", value: "user:\(user)")
    request.body = .bytes(ByteBuffer(string: #"{"aps":{"alert":"Your order shipped"}}"#))
    let response = try await http.execute(request, timeout: .seconds(30))
    guard response.status == .created else { return nil }
    return response.headers.first(name: "Location")?.split(separator: "/").last.map(String.init)
}

/// Waits until the emulator has accepted `target` requests (no progress for 60 s is a failure); returns when.
func waitForEmulator(_ target: Int) async throws -> ContinuousClock.Instant {
    var last = (count: emulator.acceptedCount, at: ContinuousClock.now)
    while emulator.acceptedCount < target {
        try await Task.sleep(for: .milliseconds(2))
        let accepted = emulator.acceptedCount
        if accepted != last.count {
            last = (accepted, ContinuousClock.now)
        } else if ContinuousClock.now - last.at > .seconds(60) {
            throw BenchmarkFailure("delivery stalled at \(accepted) of \(target)")
        }
    }
    return ContinuousClock.now
}

/// Per-user sends at saturation: `clients` senders for `duration`, each send to one of `users` users (one device
/// each). Reports the accepted rate, the end-to-end delivered rate, and how long after the last accept the last
/// delivery came. Returns the sends accepted and the delivered rate.
@discardableResult
func perUserSaturation(
    port: Int, users: Int, clients: Int = 64, duration: Duration = .seconds(10), prefix: String
) async throws -> (accepted: Int, delivered: Double) {
    let before = emulator.acceptedCount
    let started = ContinuousClock.now
    let deadline = started + duration
    let accepted = try await withThrowingTaskGroup(of: Int.self) { group in
        for client in 0..<clients {
            group.addTask {
                var count = 0
                var user = client
                while ContinuousClock.now < deadline {
                    if try await sendToUser(port: port, user: user % users) != nil { count += 1 }
                    user += clients
                }
                return count
            }
        }
        return try await group.reduce(0, +)
    }
    let lastAccept = ContinuousClock.now
    let done = try await waitForEmulator(before + accepted)
    figure("\(prefix)peruser.accepted", Double(accepted) / seconds(lastAccept - started), "requests/s")
    figure("\(prefix)peruser.delivered", Double(accepted) / seconds(done - started), "notifications/s")
    figure("\(prefix)peruser.deliveredOfAccepted", 100 * seconds(lastAccept - started) / seconds(done - started), "%", decimals: 1)
    figure("\(prefix)peruser.drainAfterLastAccept", seconds(done - lastAccept), "s", decimals: 2)
    return (accepted, Double(accepted) / seconds(done - started))
}

/// Reads a notification's telemetry: accept → end in milliseconds.
func acceptToDelivered(port: Int, id: String) async throws -> Double? {
    var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/\(hubName)/messages/\(id)")
    request.headers.add(name: "Authorization", value: token(port: port))
    request.headers.add(name: "Accept", value: "application/json")
    let response = try await http.execute(request, timeout: .seconds(30))
    let body = try await response.body.collect(upTo: 1 << 20)
    guard let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
        let enqueue = (object["enqueueTime"] as? String).flatMap(HubDateFormat.date(from:)),
        let end = (object["endTime"] as? String).flatMap(HubDateFormat.date(from:))
    else { return nil }
    return end.timeIntervalSince(enqueue) * 1000
}

/// Per-user sends paced at `rate` per second for `duration`: accept → delivered p50 and p99 from telemetry
/// (`enqueueTime` → `endTime`) over a sample.
func perUserLatency(
    nodes: [HubServerProcess], users: Int, rate: Int, duration: Duration = .seconds(5), prefix: String
) async throws {
    let port = nodes[0].port
    let before = emulator.acceptedCount
    let interval = Duration.seconds(1.0 / Double(rate))
    let count = Int(seconds(duration) * Double(rate))
    var ids: [String] = []
    let cost = try await costed("\(prefix)peruser.paced\(rate)", nodes) {
        let started = ContinuousClock.now
        ids = try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<count {
                try await Task.sleep(until: started + interval * index, clock: .continuous)
                group.addTask { try await sendToUser(port: port, user: (index * 7919) % users) }
            }
            return try await group.reduce(into: [String]()) { if let id = $1 { $0.append(id) } }
        }
        _ = try await waitForEmulator(before + ids.count)
        return seconds(ContinuousClock.now - started)
    }
    // What the paced sends cost: the hub nodes' cores, and this process's (the senders and the APNs emulator).
    figure("\(prefix)peruser.paced\(rate).hubCores", cost.hubCPU / cost.seconds, "cores", decimals: 2)
    figure("\(prefix)peruser.paced\(rate).benchmarkCores", cost.benchmarkCPU / cost.seconds, "cores", decimals: 2)
    try await Task.sleep(for: .milliseconds(200))
    var latencies: [Double] = []
    for id in ids.enumerated().filter({ $0.offset % max(1, ids.count / 300) == 0 }).map(\.element) {
        if let value = try await acceptToDelivered(port: port, id: id) { latencies.append(value) }
    }
    guard !latencies.isEmpty else { throw BenchmarkFailure("no telemetry for the paced sends") }
    figure("\(prefix)peruser.paced\(rate).p50", percentile(0.5, of: latencies), "ms", decimals: 1)
    figure("\(prefix)peruser.paced\(rate).p99", percentile(0.99, of: latencies), "ms", decimals: 1)
}

/// The value below which the fraction `p` of `values` lies (nearest rank); 0 when there are none.
func percentile(_ p: Double, of values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

/// The latencies of `PUT` and `DELETE installations` sent one after another while `body` runs: the 99th percentile of
/// both together and of each method, and how many were sent.
func writesDuring(
    port: Int, _ body: () async throws -> Void
) async throws -> (p99: Double, put: Double, delete: Double, count: Int) {
    let stop = ManagedAtomicFlag()
    async let writes: [(HTTPMethod, Double)] = {
        var latencies: [(HTTPMethod, Double)] = []
        var index = 0
        while !stop.isSet {
            for method in [HTTPMethod.PUT, .DELETE] {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/\(hubName)/installations/scratch-\(index)")
                request.method = method
                request.headers.add(name: "Authorization", value: token(port: port))
                if method == .PUT {
                    request.body = .bytes(ByteBuffer(string: #"{"installationId":"scratch-\#(index)","platform":"apns","pushChannel":"\#(deviceToken(9_999_999))","tags":["scratch"]}"#))
                }
                let started = ContinuousClock.now
                let response = try await http.execute(request, timeout: .seconds(60))
                _ = try await response.body.collect(upTo: 1 << 16)
                guard response.status.code < 300 else { throw BenchmarkFailure("write refused: \(response.status)") }
                latencies.append((method, seconds(ContinuousClock.now - started) * 1000))
            }
            index += 1
        }
        return latencies
    }()
    try await body()
    stop.set()
    let latencies = try await writes
    func p99(_ method: HTTPMethod?) -> Double {
        percentile(0.99, of: latencies.filter { method == nil || $0.0 == method }.map(\.1))
    }
    return (p99(nil), p99(.PUT), p99(.DELETE), latencies.count)
}

/// A flag set once, read from any task.
final class ManagedAtomicFlag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// Per-user sends at saturation on one node with a SQLite store of `size` installations: the reference a
/// PostgreSQL run compares itself with in the same run. Returns the delivered rate.
func sqlitePerUserReference(size: Int) async throws -> Double {
    let path = directory + "/reference-\(size).sqlite"
    _ = try await seed(storage: .sqlite(path: path), count: size)
    let configurationPath = directory + "/reference-\(size).yaml"
    try configuration(storage: "{sqlite: {path: \(path)}}").write(toFile: configurationPath, atomically: true, encoding: .utf8)
    let node = try HubServerProcess(executable: options.hub, configuration: configurationPath, logPath: directory + "/reference-\(size).log")
    defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
    do {
        try await node.waitUntilListening()
        _ = try await fanOut(port: node.port, format: "apple", body: #"{"aps":{"alert":"warm-up"}}"#, tags: "user:0", count: 1)
        let result = try await perUserSaturation(port: node.port, users: min(size, 3000), prefix: "sqlite.1nodes.")
        await node.stop()
        return result.delivered
    } catch {
        await node.stop()
        throw error
    }
}

var hubRates: [Int: Double] = [:]
do {
    // On PostgreSQL, figures are prefixed with the store and the number of nodes sharing the work.
    let scenario = options.postgres == nil ? "" : "postgres.\(options.nodes)nodes."
    var sqliteReference: Double?
    if options.postgres != nil, !options.skipSQLiteReference, let size = options.sizes.min() {
        sqliteReference = try await sqlitePerUserReference(size: size)
    }
    for size in options.sizes where !options.tracingOnly && !options.idleOnly {
        let store = try storage(size: size)
        let seedRate = try await seed(storage: store.configuration, count: size)
        figure("\(scenario)seed.\(size)", seedRate, "installations/s")
        let configurationPath = directory + "/hub-\(size).yaml"
        try configuration(storage: store.yaml).write(toFile: configurationPath, atomically: true, encoding: .utf8)
        var nodes: [HubServerProcess] = []
        do {
            for node in 0..<options.nodes {
                let process = try HubServerProcess(
                    executable: options.hub, configuration: configurationPath, logPath: directory + "/hub-\(size)-\(node).log",
                    nodeName: options.postgres == nil ? nil : "node\(node)")
                nodes.append(process)
                try await process.waitUntilListening()
            }
            let hub = nodes[0]
            // One warm-up send to a single device opens the connections and raises the stream limit.
            _ = try await fanOut(port: hub.port, format: "apple", body: #"{"aps":{"alert":"warm-up"}}"#, tags: "user:0", count: 1)
            if options.nodes > 1 {
                // Every node has joined (heartbeats) before the send, as in a running deployment.
                try await Task.sleep(for: .seconds(3))
            }
            var counts = options.postgres == nil ? [] : try await delivered(by: nodes)
            if !options.perUserOnly {
                let nativeCost = try await costed("\(scenario)fanout.native.\(size)", nodes) {
                    try await fanOut(
                        port: hub.port, format: "apple", body: #"{"aps":{"alert":"Hello from the benchmark","badge":1}}"#,
                        tags: "bench", count: size)
                }
                let native = nativeCost.seconds
                if options.postgres != nil {
                    // Each node's counts are committed with its partitions' finishes, a moment after the last delivery.
                    try await Task.sleep(for: .milliseconds(500))
                    let after = try await delivered(by: nodes)
                    try reportShares("\(scenario)fanout.native.\(size)", before: counts, after: after)
                    counts = after
                }
                let rate = Double(size) / native
                hubRates[size] = rate
                figure("\(scenario)fanout.native.\(size)", rate, "notifications/s")
                figure("\(scenario)fanout.native.\(size).time", native, "s", decimals: 2)
                nativeCost.report("\(scenario)fanout.native.\(size)", deliveries: size)
                figure("\(scenario)hub.peakRSS.native.\(size)", hub.peakRSSMiB, "MiB", decimals: 1)
                if let ceiling { figure("\(scenario)fanout.native.\(size).ofCeiling", 100 * rate / ceiling, "%", decimals: 1) }
                let template = try await fanOut(
                    port: hub.port, format: "template", body: #"{"message":"Hello from the template benchmark"}"#, tags: "bench",
                    count: size)
                figure("\(scenario)fanout.template.\(size)", Double(size) / template, "notifications/s")
                figure("\(scenario)fanout.template.\(size).time", template, "s", decimals: 2)
                if options.postgres != nil {
                    try await Task.sleep(for: .milliseconds(500))
                    let after = try await delivered(by: nodes)
                    try reportShares("\(scenario)fanout.template.\(size)", before: counts, after: after)
                    counts = after
                }
                figure("\(scenario)hub.peakRSS.afterTemplate.\(size)", hub.peakRSSMiB, "MiB", decimals: 1)
                // The same native fan-out again, with installation writes one after another while it runs. (Measured
                // apart from the fan-out above: the writes take their share of the cores.)
                var underWrites = 0.0
                let writes = try await writesDuring(port: hub.port) {
                    underWrites = try await fanOut(
                        port: hub.port, format: "apple", body: #"{"aps":{"alert":"Hello again from the benchmark"}}"#,
                        tags: "bench", count: size)
                }
                figure("\(scenario)writesDuringFanout.\(size).p99", writes.p99, "ms", decimals: 1)
                figure("\(scenario)writesDuringFanout.\(size).put.p99", writes.put, "ms", decimals: 1)
                figure("\(scenario)writesDuringFanout.\(size).delete.p99", writes.delete, "ms", decimals: 1)
                figure("\(scenario)writesDuringFanout.\(size).count", Double(writes.count), "writes")
                figure("\(scenario)fanout.native.\(size).duringWrites", Double(size) / underWrites, "notifications/s")
                if options.postgres != nil {
                    try await Task.sleep(for: .milliseconds(500))
                    counts = try await delivered(by: nodes)
                }
                // A real platform is tens of milliseconds away: the same fan-out with 50 ms added to every answer, at
                // every size (a fan-out with a round trip added takes at least that round trip longer, which weighs
                // most in the smallest).
                emulator.faults = FaultInjection(latency: .milliseconds(50))
                let slowCost = try await costed("\(scenario)fanout.native.\(size).latency50", nodes) {
                    try await fanOut(
                        port: hub.port, format: "apple", body: #"{"aps":{"alert":"Hello at 50 ms"}}"#, tags: "bench", count: size)
                }
                emulator.faults = .none
                figure("\(scenario)fanout.native.\(size).latency50", Double(size) / slowCost.seconds, "notifications/s")
                figure("\(scenario)fanout.native.\(size).latency50.ofZero", 100 * native / slowCost.seconds, "%", decimals: 1)
                slowCost.report("\(scenario)fanout.native.\(size).latency50", deliveries: size)
            }
            if size == options.sizes.min() {
                let users = min(size, 3000)
                counts = options.postgres == nil ? [] : try await delivered(by: nodes)
                // On PostgreSQL, what the server spent per send: its processes' CPU, statements and commits.
                let server = options.postgres == nil ? nil : try await PostgresServerCost.open(storage: store.configuration, logger: logger)
                let serverBefore = try await server?.sample()
                let perUser = try await perUserSaturation(port: hub.port, users: users, prefix: scenario)
                if let server, let serverBefore {
                    server.report("\(scenario)peruser", from: serverBefore, to: try await server.sample(), sends: perUser.accepted)
                    await server.close()
                }
                if let sqliteReference {
                    figure("\(scenario)peruser.delivered.ofSQLite", 100 * perUser.delivered / sqliteReference, "%", decimals: 1)
                }
                if options.postgres != nil {
                    // Sent through the first node, delivered by every node.
                    try await Task.sleep(for: .milliseconds(500))
                    try reportShares("\(scenario)peruser", before: counts, after: try await delivered(by: nodes))
                }
                for paced in [300, 1000] { try await perUserLatency(nodes: nodes, users: users, rate: paced, prefix: scenario) }
            }
            if size == options.sizes.min() && !options.skipWrk {
                try await runWrk(name: "\(scenario)putInstallations", script: "put-installations.lua", port: hub.port)
                try await runWrk(name: "\(scenario)postMessages", script: "post-messages.lua", port: hub.port)
            }
        } catch {
            for node in nodes { await node.stop() }
            throw error
        }
        for node in nodes { await node.stop() }
        switch store.configuration {
        case .sqlite(let path):
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        case .postgres(let settings) where !options.keep:
            // The next scenario and later runs start from a server without this one's tables (autovacuum on
            // them would take the shared cores).
            let database = try await HubDatabases.open(storage: store.configuration, logger: logger)
            _ = try await database.write(#"DROP SCHEMA "\#(settings.schema)" CASCADE"#, [])
            try await database.close()
        case .postgres, .memory:
            break
        }
    }

    // MARK: Tracing overhead

    if !options.skipTracing, !options.idleOnly, options.postgres == nil, let size = options.sizes.min() {
        try await tracingOverhead(size: size)
    }

    // MARK: 3. Peer

    if !options.skipPeer && !options.tracingOnly && !options.idleOnly {
        for size in options.peerSizes {
            let result = try await run(
                "/usr/bin/env",
                [
                    "python3", options.peerScript, "--port", "\(emulatorPort)", "--ca", caPath, "--key", keyPath, "--key-id", keyID,
                    "--team-id", teamID, "--topic", topic, "--count", "\(size)",
                ])
            guard result.status == 0,
                let line = result.output.split(separator: "\n").first(where: { $0.hasPrefix("peer.aioapns.") }),
                let rate = Double(line.split(separator: " ")[1])
            else {
                say("peer: aioapns failed (status \(result.status)); install it with pip install aioapns:\n\(result.output)")
                break
            }
            figure("peer.aioapns.\(size)", rate, "notifications/s")
            if let hubRate = hubRates[size] { figure("fanout.native.\(size).ofPeer", hubRate / rate, "x", decimals: 1) }
        }
    }

    // MARK: 5. Audience resolution

    if !options.skipResolution && !options.tracingOnly && !options.idleOnly {
        let result = try await run(options.storeBenchmark, ["\(options.resolutionSize)"])
        for line in result.output.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[0].hasSuffix(":"), let value = Double(parts[1]) else { continue }
            figure(String(parts[0].dropLast()), value, String(parts[2]), decimals: parts[2] == "ms" ? 1 : 0)
        }
        if result.status != 0 { say("StoreBenchmark failed (status \(result.status)):\n\(result.output)") }
    }

    // MARK: 6. Many idle hubs on one node

    if !options.idleHubs.isEmpty, !options.tracingOnly, options.postgres == nil {
        try await idleHubs(counts: options.idleHubs, demoConfiguration: options.demoConfiguration)
    }
} catch {
    say("benchmark failed: \(error)")
    await cleanUp()
    exit(1)
}

// MARK: Summary

say("")
say("| figure | value | unit |")
say("|---|---:|---|")
for entry in figures { say("| \(entry.name) | \(entry.value) | \(entry.unit) |") }
await cleanUp()
