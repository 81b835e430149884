import Foundation
import ServiceLifecycle
import Logging
import NotificationHub

/// The command-line options every platform fan-out benchmark takes:
///
///     --devices N  --rounds N  --latency-ms L  --concurrency N  --connections N  [platform options]
///
/// `--latency-ms L` runs the rounds with the emulator answering at once and then `L` ms late, and prints the ratio of
/// the two medians. Without `--concurrency`/`--connections` the adapter's defaults are used.
public struct FanOutOptions: Sendable {
    /// Devices registered and sent to in each round.
    public var devices: Int
    /// Rounds per latency; the median is reported.
    public var rounds: Int
    /// The emulator's added latencies, in milliseconds: `[0]` or `[0, L]`.
    public var latencies: [Int]
    /// Requests in flight, when given.
    public var concurrency: Int?
    /// Connections, when given.
    public var connections: Int?
    /// The platform's own options (`--name value`), by name without the dashes.
    public var platformOptions: [String: String]

    /// Reads the process's arguments; prints the usage and exits with 2 on an unknown or malformed option.
    /// - Parameters:
    ///   - program: the executable's name, for the usage line.
    ///   - devices: the default device count.
    ///   - rounds: the default number of rounds.
    ///   - platformOptions: the platform's own option names (without dashes) and their defaults.
    public static func parse(
        program: String, devices: Int, rounds: Int = 1, platformOptions: [String: String] = [:],
        arguments: [String] = Array(CommandLine.arguments.dropFirst())
    ) -> FanOutOptions {
        var options = FanOutOptions(
            devices: devices, rounds: rounds, latencies: [0], concurrency: nil, connections: nil,
            platformOptions: platformOptions)
        func usage() -> Never {
            let extra = platformOptions.keys.sorted().map { " [--\($0) \(platformOptions[$0] ?? "")]" }.joined()
            print(
                "usage: \(program) [--devices N] [--rounds N] [--latency-ms L] [--concurrency N] [--connections N]\(extra)")
            exit(2)
        }
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard argument.hasPrefix("--"), let value = iterator.next() else { usage() }
            let name = String(argument.dropFirst(2))
            if platformOptions[name] != nil {
                options.platformOptions[name] = value
                continue
            }
            guard let number = Int(value), number >= 0 else { usage() }
            switch name {
            case "devices" where number > 0: options.devices = number
            case "rounds" where number > 0: options.rounds = number
            case "latency-ms": options.latencies = number > 0 ? [0, number] : [0]
            case "concurrency" where number > 0: options.concurrency = number
            case "connections" where number > 0: options.connections = number
            default: usage()
            }
        }
        return options
    }
}

/// One platform's fan-out benchmark: registers ``FanOutOptions/devices`` installations in a SQLite store, sends one
/// notification to all of them through the real `Dispatcher` and adapter against the platform's in-process emulator,
/// and prints `name: value unit` lines:
///
/// - `<name>.latency<L>.round<R>.<devices>`: each round's deliveries per second;
/// - `<name>.deliveries.<devices>.latency<L>.median`: the median per latency;
/// - `<name>.latency<L>.ofZero`: with `--latency-ms`, the slow median as a share of the immediate one;
/// - `<name>.ceiling.<tool>` and `<name>.deliveries.<devices>.ofCeiling`: when the benchmark measures its emulator's
///   ceiling with a load tool (``ceiling(_:)``, ``share(_:of:)``), that rate and the fan-out's share of it.
///
/// Each round must deliver to every device; a round that does not is reported and makes the run fail, so a figure
/// never counts refusals as speed.
public struct FanOutBenchmark: Sendable {
    /// The figures' prefix, e.g. `fcm`.
    public var name: String
    /// The parsed options.
    public var options: FanOutOptions
    /// The benchmark's logger (warnings only).
    public var logger: Logger

    /// Creates a benchmark named `name`.
    public init(name: String, options: FanOutOptions) {
        self.name = name
        self.options = options
        var logger = Logger(label: "\(name)-bench")
        logger.logLevel = .warning
        self.logger = logger
    }

    /// A figure line.
    public func figure(_ key: String, _ value: String) {
        print("\(name).\(key): \(value)")
    }

    /// Registers the devices, runs the rounds at each latency and prints the figures.
    /// - Parameters:
    ///   - adapter: the adapter under test, connected to the emulator.
    ///   - platform: the installations' platform.
    ///   - handle: device `index`'s push channel.
    ///   - notification: the notification sent to the tag `all` each round (its audience is replaced).
    ///   - batchSize: the Dispatcher's batch size (the platform's multi-device request size, or its usual batch).
    ///   - setLatency: sets the emulator's added latency in milliseconds before the rounds at that latency.
    /// - Returns: the median deliveries per second per latency.
    @discardableResult
    public func run(
        adapter: any PlatformAdapter, platform: Platform, handle: (Int) -> PushChannel, notification: NotificationHub.Notification,
        batchSize: Int = 500, isolation: isolated (any Actor)? = #isolation, setLatency: (Int) -> Void
    ) async throws -> [Int: Double] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-bench-\(getpid()).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let store = try await SQLInstallationStore.open(storage: .sqlite(path: path), logger: logger)
        var batch: [Installation] = []
        for index in 0..<options.devices {
            let channel = handle(index)
            try adapter.validate(pushChannel: channel, platform: platform)
            batch.append(Installation(installationID: "device-\(index)", platform: platform, pushChannel: channel, tags: ["all"]))
            if batch.count == 5000 {
                try await store.upsert(contentsOf: batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty { try await store.upsert(contentsOf: batch) }

        let dispatcher = Dispatcher(
            store: store, adapters: try AdapterSet([adapter]),
            configuration: DeliveryConfiguration(pageSize: 1000, batchSize: batchSize, concurrency: 8), logger: logger)
        var notification = notification
        notification.audience = .tags(.tag("all"))
        try adapter.validate(notification: notification)
        var medians: [Int: Double] = [:]
        var incomplete = 0
        for latency in options.latencies {
            setLatency(latency)
            var rates: [Double] = []
            for round in 1...options.rounds {
                let start = ContinuousClock.now
                let summary = try await dispatcher.dispatch(notification)
                let elapsed = Self.seconds(ContinuousClock.now - start)
                let successes = summary.count(of: .success)
                if successes != options.devices { incomplete += 1 }
                rates.append(Double(successes) / elapsed)
                figure(
                    "latency\(latency).round\(round).\(options.devices)",
                    "\(Int(Double(successes) / elapsed)) deliveries/s (\(successes) succeeded, \(summary.total - successes) "
                        + "other, \(String(format: "%.2f", elapsed)) s)")
            }
            rates.sort()
            medians[latency] = rates[rates.count / 2]
            figure("deliveries.\(options.devices).latency\(latency).median", "\(Int(rates[rates.count / 2])) deliveries/s")
        }
        if let zero = medians[0], let slow = options.latencies.last, slow > 0, let rate = medians[slow] {
            figure("latency\(slow).ofZero", "\(String(format: "%.1f", 100 * rate / zero)) %")
        }
        try await store.database.close()
        if incomplete > 0 {
            figure("incompleteRounds", "\(incomplete) rounds did not deliver to every device")
            throw FanOutBenchmarkError(rounds: incomplete)
        }
        return medians
    }

    /// A duration in seconds.
    public static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// Rounds of a fan-out benchmark did not deliver to every device, so their rates are not delivery rates.
public struct FanOutBenchmarkError: Error, CustomStringConvertible {
    /// How many rounds fell short.
    public var rounds: Int

    public var description: String { "\(rounds) rounds did not deliver to every device" }
}

extension FanOutBenchmark {
    /// Runs `services` (an in-process emulator) for the duration of `body`, then shuts them down gracefully.
    public func withServices<T: Sendable>(
        _ services: [any Service], isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async throws -> T {
        let group = ServiceGroup(services: services, logger: logger)
        return try await withThrowingTaskGroup(of: T?.self, isolation: isolation) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            let result: Result<T, any Error>
            do {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return try result.get()
        }
    }
}
