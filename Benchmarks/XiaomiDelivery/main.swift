import DeliveryBench
import Foundation
import NotificationHub
import PushEmulator
import Xiaomi

// Xiaomi fan-out: the real Xiaomi adapter, Dispatcher and SQLite store against the in-process Mi Push emulator
// (TLS, up to 1,000 registration ids per /v3/message/regid request); prints `xiaomi.*` figures (see FanOutBenchmark).
//
//   swift run -c release XiaomiDelivery --devices 20000 [--concurrency N] [--connections N] [--rounds 3] [--latency-ms 50]

let benchmark = FanOutBenchmark(name: "xiaomi", options: .parse(program: "XiaomiDelivery", devices: 20_000))
let secret = "bench-app-secret-0123456789=="
let packageName = "com.example.bench"
let defaults = XiaomiSettings(appSecret: secret, packageNames: [packageName])
let concurrency = benchmark.options.concurrency ?? defaults.maximumConcurrentRequests
let connections = benchmark.options.connections ?? defaults.connections
let tls = try EmulatorTLS.generate()
let emulator = XiaomiEmulator(
    configuration: XiaomiEmulator.Configuration(appSecret: secret, packageNames: [packageName]), tls: tls,
    logger: benchmark.logger)

try await benchmark.withServices([emulator]) {
    let ports = await emulator.ports()
    let adapter = try XiaomiAdapter(
        settings: XiaomiSettings(
            appSecret: secret, packageNames: [packageName], endpoint: emulator.endpoint(port: ports.service),
            caCertificatePEM: tls.caCertificatePEM, maximumConcurrentRequests: concurrency, connections: connections),
        logger: benchmark.logger)
    print("Xiaomi delivery: \(benchmark.options.devices) devices, \(concurrency) requests in flight, \(connections) connections")
    try await benchmark.run(
        adapter: adapter, platform: .xiaomi,
        handle: { .handle("d//igwEhgBGCI2TG6lWqlK3+Vr1VdNj=" + String(format: "%08d", $0)) },
        notification: NotificationHub.Notification(
            format: .xiaomi, body: #"{"title":"Score","description":"2-1","payload":"{\"id\":42}","notify_type":-1}"#,
            audience: .all),
        batchSize: XiaomiSettings.maximumBatchSize,
        setLatency: { emulator.setFaults(FaultInjection(latency: .milliseconds($0))) })
    benchmark.figure(
        "emulator.accepted", "\(emulator.recorder.acceptedCount) ids in \(emulator.sendRequestCount) requests")
    benchmark.figure("emulator.violations", "\(emulator.recorder.violations.count)")
    try await adapter.shutdown()
}
