import ArgumentParser
import Logging
import NotificationHub
import PushEmulator
import ServiceLifecycle
import UnixSignals

/// `hub emulate`: runs only the emulators of the `emulators:` section.
struct Emulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the local APNs/FCM/WNS/Web Push emulators declared in the configuration's emulators section.")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        let logger = Logger(label: "hub.emulate")
        let root = ConfigurationNode.load(file: options.config)
        let emulators = try EmulatorSection.load(root.child("emulators"), factories: BuiltIns.emulators, logger: logger)
        try root.throwIfProblems()
        guard !emulators.isEmpty else {
            throw ValidationError("\(options.config) declares no emulators (add an emulators: section)")
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: emulators.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}
