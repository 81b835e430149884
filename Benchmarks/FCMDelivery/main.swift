import FCM
import Foundation
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import ServiceLifecycle
import _CryptoExtras

// FCM fan-out: starts the FCM emulator in-process (TLS, HTTP/2), registers N fcmv1 installations in a SQLite store,
// sends one notification to all of them through the Dispatcher and the FCM adapter, and prints `name: value unit`.
//
//   swift run -c release FCMDelivery --devices 10000 [--concurrency N] [--connections N] [--rounds 1] [--latency-ms 50]
//
// Without --concurrency and --connections the adapter's defaults are used. With --latency-ms the rounds run with the
// emulator answering at once and then with that latency added to every answer, and the ratio of the two rates is
// printed (`fcm.latency<L>.ofZero`).

let defaults = FCMAdapter.Configuration()
var devices = 10_000
var concurrency = defaults.maximumConcurrentRequests
var rounds = 1
var connections = defaults.connections
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
        print("usage: FCMDelivery [--devices N] [--concurrency N] [--connections N] [--rounds N] [--latency-ms L]")
        exit(2)
    }
}

var logger = Logger(label: "fcm-bench")
logger.logLevel = .warning
let path = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-bench-\(getpid()).sqlite").path
defer {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
let tls = try EmulatorTLS.generate()
let emulator = FCMEmulator(
    configuration: FCMEmulator.Configuration(
        projectID: "bench-project", clientEmail: "bench@bench-project.iam.gserviceaccount.com", privateKeyID: "bench",
        publicKey: key.publicKey),
    tls: tls, logger: logger)
emulator.recorder.faults = .none

let services = ServiceGroup(services: [emulator], logger: logger)
try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { try await services.run() }
    let ports = await emulator.ports()
    let account = try FCMServiceAccount(
        json: FCMEmulatorFactory.serviceAccountJSON(
            projectID: "bench-project", privateKeyID: "bench", privateKey: key,
            clientEmail: "bench@bench-project.iam.gserviceaccount.com", tokenURI: emulator.tokenURI(port: ports.service)))
    let adapter = try FCMAdapter(
        serviceAccount: account,
        configuration: FCMAdapter.Configuration(
            endpoint: "https://127.0.0.1:\(ports.service)", caCertificatePEM: tls.caCertificatePEM,
            maximumConcurrentRequests: concurrency, connections: connections),
        logger: logger)
    let store = try await SQLInstallationStore.open(storage: .sqlite(path: path), logger: logger)
    var batch: [Installation] = []
    for index in 0..<devices {
        batch.append(
            Installation(
                installationID: "device-\(index)", platform: .fcmv1,
                pushChannel: .handle("fcm-bench-token:\(String(format: "%08d", index))-" + String(repeating: "q", count: 120)),
                tags: ["all"]))
        if batch.count == 5000 {
            try await store.upsert(contentsOf: batch)
            batch.removeAll(keepingCapacity: true)
        }
    }
    if !batch.isEmpty { try await store.upsert(contentsOf: batch) }

    let dispatcher = Dispatcher(
        store: store, adapters: try AdapterSet([adapter]),
        configuration: DeliveryConfiguration(pageSize: 1000, batchSize: 500, concurrency: 8), logger: logger)
    let body = #"{"message":{"data":{"title":"Score","text":"2-1","id":"42"},"android":{"priority":"HIGH"}}}"#
    print("FCM delivery: \(devices) devices, \(concurrency) requests in flight, \(connections) connections")
    var medians: [Int: Double] = [:]
    for latency in latencies {
        emulator.recorder.faults = FaultInjection(latency: .milliseconds(latency))
        var rates: [Double] = []
        for round in 1...rounds {
            let start = ContinuousClock.now
            let summary = try await dispatcher.dispatch(NotificationHub.Notification(format: .fcmv1, body: body, audience: .tags(.tag("all"))))
            let elapsed = seconds(ContinuousClock.now - start)
            let successes = summary.count(of: .success)
            rates.append(Double(successes) / elapsed)
            print("fcm.latency\(latency).round\(round).\(devices): \(Int(Double(successes) / elapsed)) deliveries/s (\(successes) succeeded, \(summary.total - successes) other, \(String(format: "%.2f", elapsed)) s)")
        }
        rates.sort()
        medians[latency] = rates[rates.count / 2]
        print("fcm.deliveries.\(devices).latency\(latency).median: \(Int(rates[rates.count / 2])) deliveries/s")
    }
    if let zero = medians[0], let slow = latencies.last, slow > 0, let rate = medians[slow] {
        print("fcm.latency\(slow).ofZero: \(String(format: "%.1f", 100 * rate / zero)) %")
    }
    print("fcm.emulator.accepted: \(emulator.recorder.acceptedCount) messages")
    print("fcm.oauth.tokenRequests: \(await adapter.tokens.requestCount) requests (emulator issued \(emulator.tokenRequestCount))")
    print("fcm.emulator.violations: \(emulator.recorder.violations.count)")
    try await adapter.shutdown()
    try await store.database.close()
    await services.triggerGracefulShutdown()
}
