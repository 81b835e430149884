import DeliveryBench
import Foundation
import HMS
import NotificationHub
import PushEmulator

// HMS fan-out: the real HMS adapter, Dispatcher and SQLite store against the in-process HMS emulator (TLS, HTTP/2,
// up to 1,000 tokens per request); prints `hms.*` figures (see FanOutBenchmark).
//
//   swift run -c release HMSDelivery --devices 20000 [--concurrency N] [--connections N] [--rounds 3] [--latency-ms 50]

let benchmark = FanOutBenchmark(name: "hms", options: .parse(program: "HMSDelivery", devices: 20_000))
let defaults = HMSSettings(appID: "10000001", clientSecret: "bench-secret")
let concurrency = benchmark.options.concurrency ?? defaults.maximumConcurrentRequests
let connections = benchmark.options.connections ?? defaults.connections
let tls = try EmulatorTLS.generate()
let emulator = HMSEmulator(
    configuration: HMSEmulator.Configuration(appID: "10000001", clientSecret: "bench-secret"), tls: tls,
    logger: benchmark.logger)

try await benchmark.withServices([emulator]) {
    let ports = await emulator.ports()
    let adapter = try HMSAdapter(
        settings: HMSSettings(
            appID: "10000001", clientSecret: "bench-secret", tokenEndpoint: emulator.tokenEndpoint(port: ports.service),
            endpoint: emulator.endpoint(port: ports.service), caCertificatePEM: tls.caCertificatePEM,
            maximumConcurrentRequests: concurrency, connections: connections),
        logger: benchmark.logger)
    print("HMS delivery: \(benchmark.options.devices) devices, \(concurrency) requests in flight, \(connections) connections")
    try await benchmark.run(
        adapter: adapter, platform: .hms,
        handle: { .handle("IQAAAACy0" + String(format: "%08d", $0) + String(repeating: "Q", count: 120)) },
        notification: NotificationHub.Notification(
            format: .hms, body: #"{"message":{"data":"{\"title\":\"Score\",\"text\":\"2-1\"}","android":{"urgency":"HIGH"}}}"#,
            audience: .all),
        batchSize: HMSSettings.maximumBatchSize,
        setLatency: { emulator.recorder.faults = FaultInjection(latency: .milliseconds($0)) })
    benchmark.figure(
        "emulator.accepted", "\(emulator.recorder.acceptedCount) tokens in \(emulator.sendRequestCount) requests")
    benchmark.figure(
        "oauth.tokenRequests", "\(await adapter.tokens.requestCount) requests (emulator issued \(emulator.tokenRequestCount))")
    benchmark.figure("emulator.violations", "\(emulator.recorder.violations.count)")
    try await adapter.shutdown()
}
