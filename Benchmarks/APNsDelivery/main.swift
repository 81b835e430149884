// APNs delivery benchmark: the strict APNs emulator in process, N installations in a SQLite store, one notification
// fanned out through the Dispatcher and the APNs adapter; deliveries per second.
//
//   swift run -c release APNsDelivery --devices 10000
//   swift run -c release APNsDelivery --devices 100000 --rounds 3
//   swift run -c release APNsDelivery --adapter-only --devices 100000     # the adapter alone, no store/dispatcher
//   swift run -c release APNsDelivery --serve-only --port 4443 --seconds 120  # emulator for h2load; prints the command
//   swift run -c release APNsDelivery --print-token                        # a valid provider token for --serve-only
//   swift run -c release APNsDelivery --broadcast --devices 100000 --rounds 1  # one Live Activity update: a broadcast vs per token

import APNs
import Crypto
import Foundation
import Logging
import NIOCore
import NotificationHub
import PushEmulator

struct Options {
    var devices = 10_000
    var rounds = 3
    var connections = 8
    var streams = 100
    var batchSize = 500
    var concurrency = 8
    var adapterOnly = false
    var serveOnly = false
    var printToken = false
    var broadcast = false
    var indexed = false
    var port = 0
    var seconds = 120.0
    var keyDirectory = NSTemporaryDirectory() + "apns-benchmark"

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            func value() -> String { iterator.next() ?? "" }
            switch argument {
            case "--devices": devices = Int(value()) ?? devices
            case "--rounds": rounds = Int(value()) ?? rounds
            case "--connections": connections = Int(value()) ?? connections
            case "--streams": streams = Int(value()) ?? streams
            case "--batch-size": batchSize = Int(value()) ?? batchSize
            case "--concurrency": concurrency = Int(value()) ?? concurrency
            case "--adapter-only": adapterOnly = true
            case "--serve-only": serveOnly = true
            case "--print-token": printToken = true
            case "--broadcast": broadcast = true
            case "--indexed": indexed = true
            case "--port": port = Int(value()) ?? port
            case "--seconds": seconds = Double(value()) ?? seconds
            case "--key-directory": keyDirectory = value()
            default:
                print("unknown option \(argument)")
                exit(2)
            }
        }
    }
}

let options = Options(CommandLine.arguments)
let teamID = "TEAM123456"
let keyID = "KEY1234567"
let topic = "com.example.app"
var logger = Logger(label: "apns-benchmark")
logger.logLevel = .warning

let key = try APNsEmulatorFactory.loadOrCreateKey(directory: options.keyDirectory)
let tls = try EmulatorTLS.loadOrGenerate(directory: options.keyDirectory)

/// Prints a line unbuffered (so `--serve-only` output shows at once when redirected).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func deviceToken(_ index: Int) -> String {
    String(format: "%016x", index) + String(repeating: "ab", count: 24)
}

if options.printToken {
    say(try APNsProviderToken(privateKeyPEM: key.pemRepresentation, teamID: teamID, keyID: keyID).token())
    exit(0)
}

if options.broadcast {
    try await runBroadcastComparison(
        devices: options.devices, rounds: options.rounds, connections: options.connections, streams: options.streams,
        batchSize: options.batchSize, concurrency: options.concurrency, signingKey: key, tls: tls, logger: logger)
    exit(0)
}

let emulator = APNsEmulator(
    configuration: APNsEmulatorConfiguration(
        port: options.port, teamID: teamID, keyID: keyID, publicKey: key.publicKey, topics: [topic], recordCapacity: 0),
    tls: tls, logger: logger)
let port = try await emulator.start()

if options.serveOnly {
    let jwt = try APNsProviderToken(privateKeyPEM: key.pemRepresentation, teamID: teamID, keyID: keyID).token()
    let payload = options.keyDirectory + "/payload.json"
    try Data(#"{"aps":{"alert":{"title":"Benchmark","body":"Hello from the APNs delivery benchmark"},"badge":1}}"#.utf8)
        .write(to: URL(fileURLWithPath: payload))
    say("APNs emulator on https://127.0.0.1:\(port) for \(Int(options.seconds)) s; try:")
    say(
        "h2load -n 200000 -c 8 -m 100 -t 2 -d \(payload) -H 'authorization: bearer \(jwt)' -H 'apns-topic: \(topic)' "
            + "-H 'apns-push-type: alert' -H 'apns-priority: 10' https://127.0.0.1:\(port)/3/device/\(deviceToken(1))")
    try await Task.sleep(for: .seconds(options.seconds))
    print("accepted \(emulator.acceptedCount), violations \(emulator.violations.count)")
    await emulator.stop()
    exit(0)
}

let adapter = try APNsAdapter(
    configuration: APNsSettings(
        host: "127.0.0.1", port: port, caCertificatePEM: tls.caCertificatePEM, teamID: teamID, keyID: keyID,
        privateKeyPEM: key.pemRepresentation, topic: topic, connections: options.connections, maximumStreams: options.streams,
        neverIndexSensitiveHeaders: !options.indexed),
    logger: logger)
let payload = ByteBuffer(string: #"{"aps":{"alert":{"title":"Benchmark","body":"Hello from the APNs delivery benchmark"},"badge":1}}"#)

// Warm up: open the connections and get the stream limit raised.
_ = await adapter.deliver(
    (0..<(options.connections * 4)).map {
        Delivery(
            notificationID: "warm-up", installationID: nil, platform: .apns, pushChannel: .handle(deviceToken($0)),
            format: .apple, payload: payload, headers: [:])
    })

func report(_ label: String, count: Int, seconds: Double) {
    say(String(format: "%@: %d deliveries in %.3f s = %.0f deliveries/s", label, count, seconds, Double(count) / seconds))
}

var rates: [Double] = []
if options.adapterOnly {
    let deliveries = (0..<options.devices).map {
        Delivery(
            notificationID: "n", installationID: "i\($0)", platform: .apns, pushChannel: .handle(deviceToken($0)),
            format: .apple, payload: payload, headers: [:])
    }
    let batches = stride(from: 0, to: deliveries.count, by: options.batchSize).map {
        Array(deliveries[$0..<min($0 + options.batchSize, deliveries.count)])
    }
    for round in 1...options.rounds {
        let started = ContinuousClock.now
        let successes = await withTaskGroup(of: Int.self) { group in
            var next = 0
            var total = 0
            for _ in 0..<min(options.concurrency, batches.count) {
                let batch = batches[next]
                next += 1
                group.addTask { await adapter.deliver(batch).filter { $0.outcome == .success }.count }
            }
            while let done = await group.next() {
                total += done
                if next < batches.count {
                    let batch = batches[next]
                    next += 1
                    group.addTask { await adapter.deliver(batch).filter { $0.outcome == .success }.count }
                }
            }
            return total
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        report("adapter alone, round \(round) (\(successes) successes)", count: options.devices, seconds: seconds)
        rates.append(Double(options.devices) / seconds)
    }
} else {
    let store = try await SQLInstallationStore.open(storage: .memory, logger: logger)
    let registering = ContinuousClock.now
    for chunk in stride(from: 0, to: options.devices, by: 5000) {
        try await store.upsert(
            contentsOf: (chunk..<min(chunk + 5000, options.devices)).map {
                Installation(installationID: "i\($0)", platform: .apns, pushChannel: .handle(deviceToken($0)), tags: ["bench"])
            })
    }
    print("registered \(options.devices) installations in \(ContinuousClock.now - registering)")
    let dispatcher = Dispatcher(
        store: store, adapters: try AdapterSet([adapter]),
        configuration: DeliveryConfiguration(
            pageSize: 1000, batchSize: options.batchSize, concurrency: options.concurrency, maximumAttempts: 3),
        logger: logger)
    for round in 1...options.rounds {
        let started = ContinuousClock.now
        let summary = try await dispatcher.dispatch(
            Notification(format: .apple, body: String(buffer: payload), audience: .tags(try TagExpression(parsing: "bench"))))
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        report("dispatcher round \(round) (\(summary.count(of: .success)) successes)", count: summary.total, seconds: seconds)
        rates.append(Double(summary.total) / seconds)
    }
    try await store.database.close()
}
let sorted = rates.sorted()
print(
    String(
        format: "devices %d, connections %d, streams %d, batch %d, concurrency %d, %@ headers: median %.0f deliveries/s, best %.0f",
        options.devices, options.connections, options.streams, options.batchSize, options.concurrency,
        options.indexed ? "indexed" : "never-indexed", sorted[sorted.count / 2], sorted.last ?? 0))
print("emulator accepted \(emulator.acceptedCount), violations \(emulator.violations.count), peak streams \(emulator.peakConcurrentStreams)")
await adapter.shutdown()
await emulator.stop()
