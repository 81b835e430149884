import DeliveryBench
import FCM
import Foundation
import NotificationHub
import PushEmulator
import _CryptoExtras

// FCM fan-out: the real FCM adapter, Dispatcher and SQLite store against the in-process FCM emulator (TLS, HTTP/2,
// one request per device); prints `fcm.*` figures (see FanOutBenchmark).
//
//   swift run -c release FCMDelivery --devices 20000 [--concurrency N] [--connections N] [--rounds 3] [--latency-ms 50]

let benchmark = FanOutBenchmark(name: "fcm", options: .parse(program: "FCMDelivery", devices: 10_000))
let defaults = FCMAdapter.Configuration()
let concurrency = benchmark.options.concurrency ?? defaults.maximumConcurrentRequests
let connections = benchmark.options.connections ?? defaults.connections
let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
let tls = try EmulatorTLS.generate()
let clientEmail = "bench@bench-project.iam.gserviceaccount.com"
let emulator = FCMEmulator(
    configuration: FCMEmulator.Configuration(
        projectID: "bench-project", clientEmail: clientEmail, privateKeyID: "bench", publicKey: key.publicKey),
    tls: tls, logger: benchmark.logger)

try await benchmark.withServices([emulator]) {
    let ports = await emulator.ports()
    let account = try FCMServiceAccount(
        json: FCMEmulatorFactory.serviceAccountJSON(
            projectID: "bench-project", privateKeyID: "bench", privateKey: key, clientEmail: clientEmail,
            tokenURI: emulator.tokenURI(port: ports.service)))
    let adapter = try FCMAdapter(
        serviceAccount: account,
        configuration: FCMAdapter.Configuration(
            endpoint: "https://127.0.0.1:\(ports.service)", caCertificatePEM: tls.caCertificatePEM,
            maximumConcurrentRequests: concurrency, connections: connections),
        logger: benchmark.logger)
    func handle(_ index: Int) -> String { "fcm-bench-token:\(String(format: "%08d", index))-" + String(repeating: "q", count: 120) }
    // The emulator's ceiling: h2load sending one valid message over and over with the adapter's access token.
    let ceiling = benchmark.ceiling(
        LoadTool(
            .h2load, url: "https://127.0.0.1:\(ports.service)/v1/projects/bench-project/messages:send",
            headers: [
                ("authorization", "Bearer \(try await adapter.tokens.token().value)"),
                ("content-type", "application/json; charset=utf-8"),
            ],
            body: #"{"message":{"token":"\#(handle(0))","data":{"title":"Score","text":"2-1","id":"42"},"android":{"priority":"HIGH"}}}"#))
    print("FCM delivery: \(benchmark.options.devices) devices, \(concurrency) requests in flight, \(connections) connections")
    let medians = try await benchmark.run(
        adapter: adapter, platform: .fcmv1, handle: { .handle(handle($0)) },
        notification: NotificationHub.Notification(
            format: .fcmv1, body: #"{"message":{"data":{"title":"Score","text":"2-1","id":"42"},"android":{"priority":"HIGH"}}}"#,
            audience: .all),
        setLatency: { emulator.recorder.faults = FaultInjection(latency: .milliseconds($0)) })
    benchmark.share(medians, of: ceiling)
    benchmark.figure("emulator.accepted", "\(emulator.recorder.acceptedCount) messages")
    benchmark.figure(
        "oauth.tokenRequests", "\(await adapter.tokens.requestCount) requests (emulator issued \(emulator.tokenRequestCount))")
    benchmark.figure("emulator.violations", "\(emulator.recorder.violations.count)")
    try await adapter.shutdown()
}
