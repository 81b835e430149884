import AdapterKit
import Foundation
import Logging
import ServiceLifecycle

/// A local server that speaks one push platform's wire protocol strictly. `run()` serves until graceful shutdown.
public protocol PlatformEmulator: Service {
    /// The emulator's key in `hub.yaml`'s `emulators:` section, e.g. `apns`.
    var name: String { get }
}

/// What an emulator factory is given besides its settings.
public struct EmulatorContext: Sendable {
    /// Where emulators write files the hub and clients read (CA certificate, keys, service-account JSON).
    public var directory: String
    /// The TLS identity every emulator serves with; clients trust ``EmulatorTLS/Files/caCertificate``.
    public var tls: EmulatorTLS
    /// A logger.
    public var logger: Logger

    /// Creates a context.
    public init(directory: String, tls: EmulatorTLS, logger: Logger) {
        self.directory = directory
        self.tls = tls
        self.logger = logger
    }
}

/// Creates one kind of emulator from its `emulators:` settings.
public protocol PlatformEmulatorFactory: Sendable {
    /// The key under `emulators:`, e.g. `apns`.
    static var name: String { get }

    /// Reads settings (recording problems on `configuration`) and prepares the files clients need, so that the
    /// hub's adapters can be configured right after. Returns `nil` when the settings are invalid.
    static func makeEmulator(configuration: ConfigurationNode, context: EmulatorContext) throws -> (any PlatformEmulator)?

    /// The files ``makeEmulator(configuration:context:)`` would write into `directory` that are not there yet, by
    /// path, as they would be: so that a configuration whose adapters read them validates before anything is
    /// written. Writes nothing. The default is none.
    static func pendingFiles(configuration: ConfigurationNode, directory: String) -> [String: Data]
}

extension PlatformEmulatorFactory {
    public static func pendingFiles(configuration: ConfigurationNode, directory: String) -> [String: Data] { [:] }
}

/// The `emulators:` section of `hub.yaml`:
///
/// ```yaml
/// emulators:
///   directory: .emulator   # CA certificate, keys and credentials are written here
///   apns: {port: 4443}
/// ```
public enum EmulatorSection {
    /// Reads the section and creates (without starting) every emulator it names.
    public static func load(
        _ node: ConfigurationNode, factories: [any PlatformEmulatorFactory.Type], logger: Logger
    ) throws -> [any PlatformEmulator] {
        guard node.isPresent else { return [] }
        let directory = node.resolvePath(node.string("directory", default: ".emulator"))
        let tls = try EmulatorTLS.loadOrGenerate(directory: directory)
        let context = EmulatorContext(directory: directory, tls: tls, logger: logger)
        var emulators: [any PlatformEmulator] = []
        for factory in factories {
            let child = node.child(factory.name)
            guard child.isPresent else { continue }
            if let emulator = try factory.makeEmulator(configuration: child, context: context) {
                emulators.append(emulator)
            }
            child.rejectUnknownKeys()
        }
        node.rejectUnknownKeys()
        return emulators
    }

    /// The files the section's emulators would write when they start (CA certificate, keys, credentials) that are
    /// not on disk yet, by path, made in memory. Reading a configuration with them (`pendingFiles:`) validates
    /// adapters that reference the emulators' material without writing anything.
    public static func pendingFiles(_ node: ConfigurationNode, factories: [any PlatformEmulatorFactory.Type]) -> [String: Data] {
        guard node.isPresent else { return [:] }
        let directory = node.resolvePath(node.string("directory", default: ".emulator"))
        var files: [String: Data] = [:]
        let ca = EmulatorTLS.Files(directory: directory).caCertificate
        if !FileManager.default.fileExists(atPath: ca), let tls = try? EmulatorTLS.generate() {
            files[ca] = Data(tls.caCertificatePEM.utf8)
        }
        for factory in factories {
            let child = node.child(factory.name)
            guard child.isPresent else { continue }
            files.merge(factory.pendingFiles(configuration: child, directory: directory)) { first, _ in first }
        }
        node.rejectUnknownKeys()
        return files
    }
}
