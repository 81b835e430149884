import ADM
import DeliveryBench
import Foundation
import NotificationHub
import PushEmulator

// ADM fan-out: the real ADM adapter, Dispatcher and SQLite store against the in-process ADM emulator (TLS, one
// request per registration id); prints `adm.*` figures (see FanOutBenchmark).
//
//   swift run -c release ADMDelivery --devices 20000 [--concurrency N] [--connections N] [--rounds 3] [--latency-ms 50]

let benchmark = FanOutBenchmark(name: "adm", options: .parse(program: "ADMDelivery", devices: 20_000))
let clientID = "amzn1.application-oa2-client.0123456789abcdef0123456789abcdef"
let defaults = ADMSettings(clientID: clientID, clientSecret: "bench-secret")
let concurrency = benchmark.options.concurrency ?? defaults.maximumConcurrentRequests
let connections = benchmark.options.connections ?? defaults.connections
let tls = try EmulatorTLS.generate()
let emulator = ADMEmulator(
    configuration: ADMEmulator.Configuration(clientID: clientID, clientSecret: "bench-secret"), tls: tls,
    logger: benchmark.logger)

try await benchmark.withServices([emulator]) {
    let ports = await emulator.ports()
    let adapter = try ADMAdapter(
        settings: ADMSettings(
            clientID: clientID, clientSecret: "bench-secret", tokenEndpoint: emulator.tokenEndpoint(port: ports.service),
            endpoint: emulator.endpoint(port: ports.service), caCertificatePEM: tls.caCertificatePEM,
            maximumConcurrentRequests: concurrency, connections: connections),
        logger: benchmark.logger)
    print("ADM delivery: \(benchmark.options.devices) devices, \(concurrency) requests in flight, \(connections) connections")
    try await benchmark.run(
        adapter: adapter, platform: .adm,
        handle: { .handle("amzn1.adm-registration.v3.Y29t/bS5h+bWF6b24=" + String(format: "%08d", $0)) },
        notification: NotificationHub.Notification(
            format: .adm, body: #"{"data":{"title":"Score","text":"2-1"},"consolidationKey":"match-42"}"#, audience: .all),
        setLatency: { emulator.setFaults(FaultInjection(latency: .milliseconds($0))) })
    benchmark.figure(
        "emulator.accepted", "\(emulator.recorder.acceptedCount) messages in \(emulator.sendRequestCount) requests")
    benchmark.figure(
        "oauth.tokenRequests", "\(await adapter.tokens.requestCount) requests (emulator issued \(emulator.tokenRequestCount))")
    benchmark.figure("emulator.violations", "\(emulator.recorder.violations.count)")
    try await adapter.shutdown()
}
