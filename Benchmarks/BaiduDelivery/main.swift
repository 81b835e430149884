import Baidu
import DeliveryBench
import Foundation
import NotificationHub
import PushEmulator

// Baidu fan-out: the real Baidu adapter, Dispatcher and SQLite store against the in-process Baidu Cloud Push emulator
// (TLS; every request signed and its signature checked); prints `baidu.*` figures (see FanOutBenchmark).
//
//   swift run -c release BaiduDelivery --devices 20000 [--concurrency N] [--connections N] [--batch 1|10000]
//       [--rounds 3] [--latency-ms 50]
//
// `--batch 1` (the adapter's default) sends one push/single_device request per device, so unbound channels can be
// pruned; a larger batch sends push/batch_device requests of up to that many channels.

let benchmark = FanOutBenchmark(
    name: "baidu", options: .parse(program: "BaiduDelivery", devices: 20_000, platformOptions: ["batch": "1"]))
let apiKey = "BenchBaiduApiKey0123456789"
let secret = "bench-baidu-secret"
let defaults = BaiduSettings(apiKey: apiKey, secretKey: secret)
let concurrency = benchmark.options.concurrency ?? defaults.maximumConcurrentRequests
let connections = benchmark.options.connections ?? defaults.connections
let batch = Int(benchmark.options.platformOptions["batch"] ?? "1") ?? 1
let tls = try EmulatorTLS.generate()
let emulator = BaiduEmulator(
    configuration: BaiduEmulator.Configuration(apiKey: apiKey, secretKey: secret), tls: tls, logger: benchmark.logger)

try await benchmark.withServices([emulator]) {
    let ports = await emulator.ports()
    let adapter = try BaiduAdapter(
        settings: BaiduSettings(
            apiKey: apiKey, secretKey: secret, endpoint: emulator.endpoint(port: ports.service),
            caCertificatePEM: tls.caCertificatePEM, batchSize: batch, maximumConcurrentRequests: concurrency,
            connections: connections),
        logger: benchmark.logger)
    print("Baidu delivery: \(benchmark.options.devices) devices, batch \(batch), \(concurrency) requests in flight, \(connections) connections")
    try await benchmark.run(
        adapter: adapter, platform: .baidu,
        handle: { .handle("1061541468263391\($0)-\(3_748_092_266_370_017_000 + $0)") },
        notification: NotificationHub.Notification(
            format: .baidu, body: #"{"title":"Score","description":"2-1"}"#, headers: ["X-Baidu-Message-Type": "1"],
            audience: .all),
        batchSize: max(batch, 500),
        setLatency: { emulator.setFaults(FaultInjection(latency: .milliseconds($0))) })
    benchmark.figure(
        "emulator.accepted", "\(emulator.recorder.acceptedCount) channels in \(emulator.sendRequestCount) requests")
    benchmark.figure("emulator.violations", "\(emulator.recorder.violations.count)")
    try await adapter.shutdown()
}
