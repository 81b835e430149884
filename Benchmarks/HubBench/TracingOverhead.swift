import Foundation
import Hummingbird
import Logging
import NotificationHub
import ServiceLifecycle
import Synchronization

/// An OTLP/HTTP collector stand-in for the tracing-overhead scenario: accepts every export and counts requests and
/// bytes, so that the hub's exporter does real work (encoding, HTTP) and the figures can say how much it sent.
final class TraceSink: Sendable {
    private let counts = Mutex((requests: 0, bytes: 0))
    private let boundPort = Mutex<Int?>(nil)

    var requests: Int { counts.withLock { $0.requests } }
    var bytes: Int { counts.withLock { $0.bytes } }

    /// Serves until `body` returns, then stops gracefully; `body` gets the endpoint URL.
    func serving<T>(_ body: (String) async throws -> T) async throws -> T {
        let router = Router()
        router.post("/v1/traces") { request, _ -> HTTPResponse.Status in
            let buffer = try await request.body.collect(upTo: 64 << 20)
            self.counts.withLock {
                $0.requests += 1
                $0.bytes += buffer.readableBytes
            }
            return .ok
        }
        var sinkLogger = Logger(label: "trace-sink")
        sinkLogger.logLevel = .warning
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in self.boundPort.withLock { $0 = channel.localAddress?.port } }, logger: sinkLogger)
        let services = ServiceGroup(services: [app], logger: sinkLogger)
        async let running: Void = services.run()
        var port: Int?
        for _ in 0..<500 where port == nil {
            port = boundPort.withLock { $0 }
            if port == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        let result: Result<T, any Error>
        if let port {
            do { result = .success(try await body("http://127.0.0.1:\(port)/v1/traces")) } catch { result = .failure(error) }
        } else {
            result = .failure(BenchmarkFailure("the trace sink did not start"))
        }
        await services.triggerGracefulShutdown()
        try await running
        return try result.get()
    }
}

/// The same fan-out and per-user saturation on one node with tracing off, then on (the default sample ratios,
/// exporting to a local sink), then on with `sendSampleRatio: 0.1`, in one run: `tracing.off.*`, `tracing.on.*` and
/// `tracing.sends10.*` side by side, and their ratios to off.
func tracingOverhead(size: Int) async throws {
    let sink = TraceSink()
    try await sink.serving { endpoint in
        let store = try storage(size: size)
        _ = try await seed(storage: store.configuration, count: size)
        defer {
            if case .sqlite(let path) = store.configuration {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            }
        }
        var rates: [String: (fanOut: Double, perUser: Double)] = [:]
        // Off; on with the defaults; on with one send in ten of those without a caller's trace traced.
        let modes: [(name: String, tracing: String)] = [
            ("off", ""),
            ("on", "observability:\n  tracing: {endpoint: \"\(endpoint)\"}\n"),
            ("sends10", "observability:\n  tracing: {endpoint: \"\(endpoint)\", sendSampleRatio: 0.1}\n"),
        ]
        for (mode, tracing) in modes {
            let path = directory + "/tracing-\(mode).yaml"
            try (tracing + configuration(storage: store.yaml)).write(toFile: path, atomically: true, encoding: .utf8)
            let node = try HubServerProcess(executable: options.hub, configuration: path, logPath: directory + "/tracing-\(mode).log")
            do {
                try await node.waitUntilListening()
                _ = try await fanOut(port: node.port, format: "apple", body: #"{"aps":{"alert":"warm-up"}}"#, tags: "user:0", count: 1)
                // One untimed fan-out first: the first one after a start pays for cold pages and connections, and
                // would count against whichever mode runs first.
                _ = try await fanOut(
                    port: node.port, format: "apple", body: #"{"aps":{"alert":"warm-up"}}"#, tags: "bench", count: size)
                var fanOutSeconds: [Double] = []
                for _ in 0..<3 {
                    fanOutSeconds.append(
                        try await fanOut(
                            port: node.port, format: "apple", body: #"{"aps":{"alert":"Hello, traced or not"}}"#, tags: "bench",
                            count: size))
                }
                // The median of three: one slow round on a shared machine does not decide the comparison.
                let fanOutRate = Double(size) / fanOutSeconds.sorted()[1]
                figure("tracing.\(mode).fanout.native.\(size)", fanOutRate, "notifications/s")
                let perUser = try await perUserSaturation(port: node.port, users: min(size, 3000), prefix: "tracing.\(mode).")
                rates[mode] = (fanOutRate, perUser.delivered)
                await node.stop()
            } catch {
                await node.stop()
                throw error
            }
        }
        if let off = rates["off"] {
            for mode in ["on", "sends10"] {
                guard let on = rates[mode] else { continue }
                figure("tracing.\(mode).fanout.native.\(size).ofOff", 100 * on.fanOut / off.fanOut, "%", decimals: 1)
                figure("tracing.\(mode).peruser.delivered.ofOff", 100 * on.perUser / off.perUser, "%", decimals: 1)
            }
        }
        // Spans still buffered are flushed when the node stops, before its exit.
        figure("tracing.on.exports", Double(sink.requests), "requests")
        figure("tracing.on.exportedBytes", Double(sink.bytes) / 1024, "KiB", decimals: 1)
        guard sink.requests > 0 else { throw BenchmarkFailure("tracing was on but the hub exported nothing") }
    }
}
