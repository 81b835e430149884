import Foundation
import HMS
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import ServiceLifecycle

// HMS fan-out: starts the HMS emulator in-process (TLS, HTTP/2), registers N hms installations in a SQLite store,
// sends one notification to all of them through the Dispatcher and the HMS adapter (up to 1,000 tokens per request),
// and prints `name: value unit`.
//
//   swift run -c release HMSDelivery --devices 20000 [--concurrency N] [--connections N] [--rounds 1] [--latency-ms 50]
//
// With --latency-ms the rounds run with the emulator answering at once and then with that latency added to every
// answer, and the ratio of the two rates is printed (`hms.latency<L>.ofZero`).

var devices = 20_000
var concurrency = 64
var connections = 4
var rounds = 1
var latencies: [Int] = [0]
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--devices": devices = arguments.next().flatMap { Int($0) } ?? devices
    case "--concurrency": concurrency = arguments.next().flatMap { Int($0) } ?? concurrency
    case "--rounds": rounds = arguments.next().flatMap { Int($0) } ?? rounds
    case "--connections": connections = arguments.next().flatMap { Int($0) } ?? connections
    case "--latency-ms": latencies = [0, arguments.next().flatMap { Int($0) } ?? 50]
    default:
        print("usage: HMSDelivery [--devices N] [--concurrency N] [--connections N] [--rounds N] [--latency-ms L]")
        exit(2)
    }
}

var logger = Logger(label: "hms-bench")
logger.logLevel = .warning
let path = FileManager.default.temporaryDirectory.appendingPathComponent("hms-bench-\(getpid()).sqlite").path
defer {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

let tls = try EmulatorTLS.generate()
let emulator = HMSEmulator(
    configuration: HMSEmulator.Configuration(appID: "10000001", clientSecret: "bench-secret"), tls: tls, logger: logger)
// The emulator keeps every accepted token by default; a benchmark needs only the counts.
let services = ServiceGroup(services: [emulator], logger: logger)
try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { try await services.run() }
    let ports = await emulator.ports()
    let adapter = try HMSAdapter(
        settings: HMSSettings(
            appID: "10000001", clientSecret: "bench-secret", tokenEndpoint: emulator.tokenEndpoint(port: ports.service),
            endpoint: emulator.endpoint(port: ports.service), caCertificatePEM: tls.caCertificatePEM,
            maximumConcurrentRequests: concurrency, connections: connections),
        logger: logger)
    let store = try await SQLInstallationStore.open(storage: .sqlite(path: path), logger: logger)
    var batch: [Installation] = []
    for index in 0..<devices {
        batch.append(
            Installation(
                installationID: "device-\(index)", platform: .hms,
                pushChannel: .handle("IQAAAACy0" + String(format: "%08d", index) + String(repeating: "Q", count: 120)),
                tags: ["all"]))
        if batch.count == 5000 {
            try await store.upsert(contentsOf: batch)
            batch.removeAll(keepingCapacity: true)
        }
    }
    if !batch.isEmpty { try await store.upsert(contentsOf: batch) }

    let dispatcher = Dispatcher(
        store: store, adapters: try AdapterSet([adapter]),
        configuration: DeliveryConfiguration(pageSize: 1000, batchSize: 1000, concurrency: 8), logger: logger)
    let body = #"{"message":{"data":"{\"title\":\"Score\",\"text\":\"2-1\"}","android":{"urgency":"HIGH"}}}"#
    print("HMS delivery: \(devices) devices, \(concurrency) requests in flight, \(connections) connections")
    var medians: [Int: Double] = [:]
    for latency in latencies {
        emulator.recorder.faults = FaultInjection(latency: .milliseconds(latency))
        var rates: [Double] = []
        for round in 1...rounds {
            let start = ContinuousClock.now
            let summary = try await dispatcher.dispatch(
                NotificationHub.Notification(format: .hms, body: body, audience: .tags(.tag("all"))))
            let elapsed = seconds(ContinuousClock.now - start)
            let successes = summary.count(of: .success)
            rates.append(Double(successes) / elapsed)
            print("hms.latency\(latency).round\(round).\(devices): \(Int(Double(successes) / elapsed)) deliveries/s (\(successes) succeeded, \(summary.total - successes) other, \(String(format: "%.2f", elapsed)) s)")
        }
        rates.sort()
        medians[latency] = rates[rates.count / 2]
        print("hms.deliveries.\(devices).latency\(latency).median: \(Int(rates[rates.count / 2])) deliveries/s")
    }
    if let zero = medians[0], let slow = latencies.last, slow > 0, let rate = medians[slow] {
        print("hms.latency\(slow).ofZero: \(String(format: "%.1f", 100 * rate / zero)) %")
    }
    print("hms.emulator.accepted: \(emulator.recorder.acceptedCount) tokens in \(emulator.sendRequestCount) requests")
    print("hms.oauth.tokenRequests: \(await adapter.tokens.requestCount) requests (emulator issued \(emulator.tokenRequestCount))")
    print("hms.emulator.violations: \(emulator.recorder.violations.count)")
    try await adapter.shutdown()
    try await store.database.close()
    await services.triggerGracefulShutdown()
}
