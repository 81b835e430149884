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

    @Flag(
        help: """
            Serve https with a self-signed certificate for localhost and 127.0.0.1, made on first use in .emulator/ \
            beside the configuration file (hub-tls.pem: trust it in the client), instead of server.tls.
            """)
    var selfSignedTLS = false

    @Option(help: "The port to listen on, instead of server.port (e.g. 8443 with --self-signed-tls).")
    var port: Int?

    func validate() throws {
        if let port, !(0...65535).contains(port) { throw ValidationError("--port must be 0-65535") }
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

        // The file is validated before anything is written or started.
        let checked = try ConfigurationFile.load(options.config)
        let emulators = try ConfigurationFile.emulators(options.config, logger: logger)
        // With emulators, read again now that their material is on disk.
        var loaded = emulators.isEmpty ? checked : try ConfigurationFile.load(options.config)
        if let port { loaded.server.port = port }
        if selfSignedTLS {
            let folder = URL(fileURLWithPath: options.config).deletingLastPathComponent().appendingPathComponent(".emulator").path
            _ = try SelfSignedTLS.loadOrGenerate(folder: folder)
            let files = SelfSignedTLS.Files(folder: folder)
            loaded.server.tls = .pemFiles(certificateChain: files.certificate, privateKey: files.privateKey)
            logger.notice(
                "serving https with a self-signed certificate; trust this file in the client (see README, .NET SDK)",
                metadata: ["tls.certificate": "\(files.certificate)"])
        }
        let configuration = loaded
        for warning in configuration.warnings {
            logger.warning("configuration warning", metadata: ["config.warning": "\(warning)"])
        }
        let environmentName = ProcessInfo.processInfo.environment["HUB_NODE_NAME"].flatMap { HubNode.isValidName($0) ? $0 : nil }
        let node = nodeName ?? configuration.server.nodeName ?? environmentName ?? HubNode.defaultName
        let runtime = try await HubRuntime(
            configuration: configuration, options: HubRuntime.Options(
                nodeName: node, logger: logger, metrics: registry, registrationFormats: BuiltIns.registry.registrationFormats))
        let onRunning: @Sendable (any Channel) async -> Void = { channel in
            logger.notice(
                "hub is listening",
                metadata: [
                    "server.address": "\(channel.localAddress?.description ?? "?")",
                    "hub.names": "\(runtime.hubs.map(\.name).joined(separator: ","))",
                    "hub.node": "\(node)",
                    "config.sha256": "\(configuration.sha256)",
                ])
        }
        let application = try runtime.makeApplication(onServerRunning: onRunning)
        let file = options.config
        let reloader = ConfigurationReloader(runtime: runtime, file: file, logger: logger) { ConfigurationFile.read(file) }
        // Started in order and stopped in reverse: emulators outlive adapters, adapters outlive hubs, hubs outlive
        // the API that feeds them; the reloader stops first.
        let services: [any Service] = emulators + runtime.services + [application, reloader]
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                // A service that fails stops the others gracefully: the server finishes the connections it has
                // accepted instead of being cancelled under them.
                services: services.map {
                    ServiceGroupConfiguration.ServiceConfiguration(service: $0, failureTerminationBehavior: .gracefullyShutdownGroup)
                },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
    }
}
