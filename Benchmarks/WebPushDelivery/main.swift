import DeliveryBench
import Foundation
import NotificationHub
import PushEmulator
import WebPush

// Web Push fan-out: the real Web Push adapter, Dispatcher and SQLite store against the in-process Web Push emulator
// (TLS, HTTP/2); every message is encrypted for its browser and decrypted and checked by the emulator. Prints
// `webpush.*` figures (see FanOutBenchmark).
//
//   swift run -c release WebPushDelivery --devices 5000 [--concurrency 256] [--connections 16] [--rounds 1]
//       [--latency-ms 50]

let benchmark = FanOutBenchmark(name: "webpush", options: .parse(program: "WebPushDelivery", devices: 5_000))
let concurrency = benchmark.options.concurrency ?? 256
let connections = benchmark.options.connections ?? 16
let tls = try EmulatorTLS.generate()
let emulator = WebPushEmulator(configuration: WebPushEmulator.Configuration(), tls: tls, logger: benchmark.logger)

try await benchmark.withServices([emulator]) {
    let ports = await emulator.ports()
    let keys = VAPIDKeys.generate()
    let adapter = try WebPushAdapter(
        configuration: WebPushSettings(
            subject: "mailto:bench@example.com", vapidKeys: keys,
            endpointPolicy: try WebPushEndpointPolicy(allowedHosts: ["localhost:\(ports.service)"]),
            caCertificatePEM: tls.caCertificatePEM, maximumConcurrentRequests: concurrency,
            maximumConnectionsPerHost: connections),
        logger: benchmark.logger)
    let subscriptions = (0..<benchmark.options.devices).map { _ in
        emulator.createSubscription(applicationServerKey: keys.publicKey).pushChannel
    }
    print("Web Push delivery: \(benchmark.options.devices) browsers, \(concurrency) requests in flight, \(connections) connections")
    try await benchmark.run(
        adapter: adapter, platform: .browser, handle: { subscriptions[$0] },
        notification: NotificationHub.Notification(
            format: .browser, body: #"{"title":"Score","body":"2-1","url":"/matches/42"}"#, headers: ["Urgency": "high"],
            audience: .all),
        setLatency: { emulator.setFaults(FaultInjection(latency: .milliseconds(Int64($0)))) })
    benchmark.figure("emulator.accepted", "\(emulator.recorder.acceptedCount) messages (decrypted and checked)")
    benchmark.figure("vapid.tokens", "\(await adapter.vapidTokenCount) signed")
    benchmark.figure("emulator.violations", "\(emulator.recorder.violations.count)")
    try await adapter.shutdown()
}
