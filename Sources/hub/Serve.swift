import ArgumentParser
import AsyncHTTPClient
import Foundation
import HubServer
import Hummingbird
import HummingbirdTLS
import Logging
import Metrics
import NIOCore
import NIOSSL
import NotificationHub
import Prometheus
import PushEmulator
import ServiceLifecycle
import UnixSignals

/// `hub serve`: runs the API, the delivery workers, the adapters and any configured emulators.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the hub on a configuration file.")

    @OptionGroup var options: ConfigOptions

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = ProcessInfo.processInfo.environment["LOG_LEVEL"] ?? "info"

    @Option(
        help: """
            This process's name among the nodes sharing the hubs' work (default: server.nodeName, then the \
            HUB_NODE_NAME environment variable, then <host>-<pid>).
            """)
    var nodeName: String?

    func validate() throws {
        if let nodeName, !HubNode.isValidName(nodeName) {
            throw ValidationError("--node-name must be 1–100 letters, digits, '.', '_', '-' or ':'")
        }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = Logger(label: "hub")

        let loaded = try LoadedConfiguration.load(file: options.config, logger: logger)
        for warning in loaded.configuration.warnings {
            logger.warning("configuration warning", metadata: ["config.warning": "\(warning)"])
        }
        let environmentName = ProcessInfo.processInfo.environment["HUB_NODE_NAME"].flatMap { HubNode.isValidName($0) ? $0 : nil }
        let node = nodeName ?? loaded.configuration.server.nodeName ?? environmentName ?? HubNode.defaultName
        var hubs: [Hub] = []
        for hubConfiguration in loaded.configuration.hubs {
            hubs.append(try await Hub.open(configuration: hubConfiguration, nodeName: node, logger: logger))
        }
        let hubNames = hubs.map(\.name).joined(separator: ",")
        let server = loaded.configuration.server
        let api = try HubAPI(
            hubs: hubs, maximumRequestBytes: server.maximumRequestBytes,
            maximumBatchRequestBytes: server.maximumBatchRequestBytes, metrics: registry, console: server.console)
        let onRunning: @Sendable (any Channel) async -> Void = { channel in
            logger.notice(
                "hub is listening",
                metadata: [
                    "server.address": "\(channel.localAddress?.description ?? "?")",
                    "hub.names": "\(hubNames)",
                    "hub.node": "\(node)",
                ])
        }
        let application = try HubApplication.make(api: api, server: server, logger: logger, onServerRunning: onRunning)
        // Started in order and stopped in reverse: emulators outlive adapters, adapters outlive hubs, hubs outlive
        // the API that feeds them.
        let webhooks: [any Service] = hubs.compactMap { hub in
            hub.configuration.feedbackWebhook.map {
                FeedbackWebhook(hub: hub, settings: $0, client: HTTPClient.shared, logger: logger)
            }
        }
        let services: [any Service] =
            loaded.emulators + loaded.configuration.hubs.flatMap { $0.adapters.adapters } + hubs + webhooks + [application]
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
    }
}

/// A validated configuration together with the emulators its `emulators:` section declares.
struct LoadedConfiguration {
    var configuration: HubsConfiguration
    var emulators: [any PlatformEmulator]

    /// Reads the file; prints every problem and exits with status 1 when it is invalid.
    static func load(file: String, logger: Logger) throws -> LoadedConfiguration {
        let root = ConfigurationNode.load(file: file)
        do {
            try root.throwIfProblems()
            let emulators = try EmulatorSection.load(root.child("emulators"), factories: BuiltIns.emulators, logger: logger)
            let configuration = try HubsConfiguration(root: root, registry: BuiltIns.registry)
            return LoadedConfiguration(configuration: configuration, emulators: emulators)
        } catch let error as ConfigurationError {
            FileHandle.standardError.write(Data("\(error.problems.count) problem(s) in \(file):\n\(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
