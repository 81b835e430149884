// WNS delivery benchmark: the real WNS adapter, Dispatcher and SQLite store against the in-process WNS emulator.
//
//   swift run -c release WNSDelivery --devices 10000 [--connections N] [--in-flight N] [--type toast|raw] [--rounds 3]
//                                    [--latency-ms 50]
//
// Without --connections and --in-flight the adapter's defaults are used. With --latency-ms the rounds run with the
// emulator answering at once and then with that latency added to every answer, and the ratio of the medians is
// printed (`wns.latency<L>.ofZero`).
//
// Prints deliveries/s per round (the first round includes the token request and opening connections) and the number
// of token requests the adapter made.

import Foundation
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import WNS

func option(_ name: String, _ fallback: Int) -> Int {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let value = Int(arguments[index + 1]) else {
        return fallback
    }
    return value
}

func stringOption(_ name: String, _ fallback: String) -> String {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return fallback }
    return arguments[index + 1]
}

let devices = option("--devices", 10_000)
let defaults = WNSSettings(packageSID: "ms-app://s-1-15-2-bench", clientSecret: "bench-secret")
let connections = option("--connections", defaults.maximumConnections)
let inFlight = option("--in-flight", defaults.maximumConcurrentRequests)
let latency = option("--latency-ms", 0)
let rounds = option("--rounds", 3)
let type = stringOption("--type", "toast")

var logger = Logger(label: "wns-bench")
logger.logLevel = .warning

let tls = try EmulatorTLS.generate()
let emulator = WNSEmulator(
    settings: .init(packageSID: "ms-app://s-1-15-2-bench", clientSecret: "bench-secret"), tls: tls, logger: logger)
try await emulator.start()

let adapter = WNSAdapter(
    configuration: WNSSettings(
        packageSID: "ms-app://s-1-15-2-bench", clientSecret: "bench-secret", tokenEndpoint: emulator.tokenEndpoint,
        additionalTrustRoots: [try tls.caCertificate()], allowedChannelHosts: ["127.0.0.1:\(emulator.port)"],
        maximumConnections: connections, maximumConcurrentRequests: inFlight),
    logger: logger)

let path = FileManager.default.temporaryDirectory.appendingPathComponent("wns-bench-\(UUID().uuidString).sqlite").path
let store = try await SQLInstallationStore.open(storage: .sqlite(path: path), logger: logger)
let uris = emulator.createChannels(count: devices, prefix: "bench")
var installations: [Installation] = []
for (index, uri) in uris.enumerated() {
    try adapter.validate(pushChannel: .handle(uri), platform: .wns)
    installations.append(Installation(installationID: "i\(index)", platform: .wns, pushChannel: .handle(uri), tags: ["all"]))
    if installations.count == 1000 {
        try await store.upsert(contentsOf: installations)
        installations.removeAll()
    }
}
if !installations.isEmpty { try await store.upsert(contentsOf: installations) }

let dispatcher = Dispatcher(
    store: store, adapters: try AdapterSet([adapter]), configuration: DeliveryConfiguration(), logger: logger)
let body: String
let headers: NotificationHeaders
if type == "raw" {
    body = #"{"kind":"sync","id":42}"#
    headers = ["X-WNS-Type": "wns/raw"]
} else {
    body = #"<toast><visual><binding template="ToastGeneric"><text>Benchmark</text></binding></visual></toast>"#
    headers = ["X-WNS-Type": "wns/toast"]
}

print("WNS delivery: \(devices) channels, \(type), \(connections) connections, \(inFlight) requests in flight")
var medians: [Int: Double] = [:]
for added in latency > 0 ? [0, latency] : [0] {
    emulator.recorder.faults = FaultInjection(latency: .milliseconds(added))
    var rates: [Double] = []
    for round in 1...rounds {
        let notification = Notification(format: .windows, body: body, headers: headers, audience: .tags(.tag("all")))
        try adapter.validate(notification: notification)
        let started = ContinuousClock.now
        let summary = try await dispatcher.dispatch(notification)
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let successes = summary.count(of: .success)
        rates.append(Double(successes) / seconds)
        print(
            "latency \(added) ms, round \(round): \(successes)/\(devices) Success in \(String(format: "%.3f", seconds)) s = "
                + "\(String(format: "%.0f", Double(successes) / seconds)) deliveries/s")
    }
    rates.sort()
    medians[added] = rates[rates.count / 2]
    print("wns.deliveries.\(devices).latency\(added).median: \(Int(rates[rates.count / 2])) deliveries/s")
}
if latency > 0, let zero = medians[0], let slow = medians[latency] {
    print("wns.latency\(latency).ofZero: \(String(format: "%.1f", 100 * slow / zero)) %")
}
print("token requests: adapter \(await adapter.tokenRequestCount), emulator \(emulator.tokenRequestCount)")
print("emulator accepted \(emulator.recorder.acceptedCount), violations \(emulator.recorder.violations.count), TLS connections \(emulator.connectionCount)")

try await adapter.shutdown()
await emulator.stop()
try await store.database.close()
try? FileManager.default.removeItem(atPath: path)
