import Foundation
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import ServiceLifecycle
import WebPush

// Web Push fan-out: starts the Web Push emulator in-process (TLS, HTTP/2), makes N subscriptions, registers them as
// browser installations in a SQLite store, sends one notification to all of them through the Dispatcher and the
// Web Push adapter (every message encrypted for its browser, decrypted and checked by the emulator), and prints
// `name: value unit`.
//
//   swift run -c release WebPushDelivery --devices 5000 [--concurrency 256] [--connections 16] [--rounds 1]
//       [--latency-ms 50]

var devices = 5_000
var concurrency = 256
var connections = 16
var rounds = 1
var latency = 0
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--devices": devices = arguments.next().flatMap { Int($0) } ?? devices
    case "--concurrency": concurrency = arguments.next().flatMap { Int($0) } ?? concurrency
    case "--connections": connections = arguments.next().flatMap { Int($0) } ?? connections
    case "--rounds": rounds = arguments.next().flatMap { Int($0) } ?? rounds
    case "--latency-ms": latency = arguments.next().flatMap { Int($0) } ?? latency
    default:
        print("usage: WebPushDelivery [--devices N] [--concurrency N] [--connections N] [--rounds N] [--latency-ms N]")
        exit(2)
    }
}

var logger = Logger(label: "webpush-bench")
logger.logLevel = .warning
let path = FileManager.default.temporaryDirectory.appendingPathComponent("webpush-bench-\(getpid()).sqlite").path
defer {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

let tls = try EmulatorTLS.generate()
let emulator = WebPushEmulator(configuration: WebPushEmulator.Configuration(), tls: tls, logger: logger)
emulator.setFaults(FaultInjection(latency: .milliseconds(Int64(latency))))

let services = ServiceGroup(services: [emulator], logger: logger)
try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { try await services.run() }
    let ports = await emulator.ports()
    let keys = VAPIDKeys.generate()
    let adapter = try WebPushAdapter(
        configuration: WebPushSettings(
            subject: "mailto:bench@example.com", vapidKeys: keys,
            endpointPolicy: try WebPushEndpointPolicy(allowedHosts: ["localhost:\(ports.service)"]),
            caCertificatePEM: tls.caCertificatePEM, maximumConcurrentRequests: concurrency,
            maximumConnectionsPerHost: connections),
        logger: logger)
    let store = try await SQLInstallationStore.open(storage: .sqlite(path: path), logger: logger)
    let setupStart = ContinuousClock.now
    var batch: [Installation] = []
    for index in 0..<devices {
        let subscription = emulator.createSubscription(applicationServerKey: keys.publicKey)
        batch.append(
            Installation(
                installationID: "browser-\(index)", platform: .browser, pushChannel: subscription.pushChannel, tags: ["all"]))
        if batch.count == 5000 {
            try await store.upsert(contentsOf: batch)
            batch.removeAll(keepingCapacity: true)
        }
    }
    if !batch.isEmpty { try await store.upsert(contentsOf: batch) }
    print("webpush.setup.\(devices): \(String(format: "%.2f", seconds(ContinuousClock.now - setupStart))) s (subscriptions and installations)")

    let dispatcher = Dispatcher(
        store: store, adapters: try AdapterSet([adapter]),
        configuration: DeliveryConfiguration(pageSize: 1000, batchSize: 500, concurrency: 8), logger: logger)
    let body = #"{"title":"Score","body":"2-1","url":"/matches/42"}"#
    var rates: [Double] = []
    for round in 1...rounds {
        let start = ContinuousClock.now
        let summary = try await dispatcher.dispatch(
            NotificationHub.Notification(format: .browser, body: body, headers: ["Urgency": "high"], audience: .tags(.tag("all"))))
        let elapsed = seconds(ContinuousClock.now - start)
        let successes = summary.count(of: .success)
        rates.append(Double(successes) / elapsed)
        print("webpush.round\(round).\(devices): \(Int(Double(successes) / elapsed)) deliveries/s (\(successes) succeeded, \(summary.total - successes) other, \(String(format: "%.2f", elapsed)) s, emulator latency \(latency) ms)")
    }
    rates.sort()
    print("webpush.deliveries.\(devices).median: \(Int(rates[rates.count / 2])) deliveries/s (latency \(latency) ms)")
    print("webpush.emulator.accepted: \(emulator.recorder.acceptedCount) messages (decrypted and checked)")
    print("webpush.vapid.tokens: \(await adapter.vapidTokenCount) signed")
    print("webpush.emulator.violations: \(emulator.recorder.violations.count)")
    try await adapter.shutdown()
    try await store.database.close()
    await services.triggerGracefulShutdown()
}
