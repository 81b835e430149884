import DeliveryBench
import Foundation
import NotificationHub
import PushEmulator
import WNS

// WNS fan-out: the real WNS adapter, Dispatcher and SQLite store against the in-process WNS emulator (TLS,
// HTTP/1.1, one request per channel); prints `wns.*` figures (see FanOutBenchmark).
//
//   swift run -c release WNSDelivery --devices 10000 [--concurrency N] [--connections N] [--type toast|raw]
//       [--rounds 3] [--latency-ms 50]
//
// `--concurrency` is the adapter's requests in flight, `--connections` its connections per channel host.

let benchmark = FanOutBenchmark(
    name: "wns", options: .parse(program: "WNSDelivery", devices: 10_000, rounds: 3, platformOptions: ["type": "toast"]))
let defaults = WNSSettings(packageSID: "ms-app://s-1-15-2-bench", clientSecret: "bench-secret")
let connections = benchmark.options.connections ?? defaults.maximumConnections
let inFlight = benchmark.options.concurrency ?? defaults.maximumConcurrentRequests
let type = benchmark.options.platformOptions["type"] ?? "toast"

let tls = try EmulatorTLS.generate()
let emulator = WNSEmulator(
    settings: .init(packageSID: "ms-app://s-1-15-2-bench", clientSecret: "bench-secret"), tls: tls,
    logger: benchmark.logger)
try await emulator.start()
let adapter = WNSAdapter(
    configuration: WNSSettings(
        packageSID: "ms-app://s-1-15-2-bench", clientSecret: "bench-secret", tokenEndpoint: emulator.tokenEndpoint,
        additionalTrustRoots: [try tls.caCertificate()], allowedChannelHosts: ["127.0.0.1:\(emulator.port)"],
        maximumConnections: connections, maximumConcurrentRequests: inFlight),
    logger: benchmark.logger)
let uris = emulator.createChannels(count: benchmark.options.devices, prefix: "bench")
let body =
    type == "raw"
    ? #"{"kind":"sync","id":42}"#
    : #"<toast><visual><binding template="ToastGeneric"><text>Benchmark</text></binding></visual></toast>"#
let notification = NotificationHub.Notification(
    format: .windows, body: body, headers: ["X-WNS-Type": type == "raw" ? "wns/raw" : "wns/toast"], audience: .all)

// The emulator's ceiling: wrk sending the same notification to one channel over and over (HTTP/1.1 keep-alive, 64
// connections).
let ceiling = benchmark.ceiling(
    LoadTool(
        .wrk, url: uris[0],
        headers: [
            ("Authorization", "Bearer \(emulator.issueAccessToken())"),
            ("X-WNS-Type", type == "raw" ? "wns/raw" : "wns/toast"),
            ("Content-Type", type == "raw" ? "application/octet-stream" : "text/xml"),
        ],
        body: body, connections: 64))
print("WNS delivery: \(benchmark.options.devices) channels, \(type), \(connections) connections, \(inFlight) requests in flight")
do {
    let medians = try await benchmark.run(
        adapter: adapter, platform: .wns, handle: { .handle(uris[$0]) }, notification: notification,
        setLatency: { emulator.recorder.faults = FaultInjection(latency: .milliseconds($0)) })
    benchmark.share(medians, of: ceiling)
} catch {
    try await adapter.shutdown()
    await emulator.stop()
    throw error
}
benchmark.figure(
    "tokenRequests", "\(await adapter.tokenRequestCount) requests (emulator issued \(emulator.tokenRequestCount))")
benchmark.figure(
    "emulator.accepted",
    "\(emulator.recorder.acceptedCount) messages, \(emulator.recorder.violations.count) violations, "
        + "\(emulator.connectionCount) TLS connections")
try await adapter.shutdown()
await emulator.stop()
