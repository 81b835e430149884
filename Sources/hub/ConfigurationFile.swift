import ArgumentParser
import Foundation
import Logging
import NotificationHub
import PushEmulator

/// Reading `hub.yaml` with the adapters and emulators this executable carries. Reading writes nothing and opens no
/// connection: files the emulators will write are made in memory while they are not on disk yet.
enum ConfigurationFile {
    /// Reads and validates a file.
    static func read(_ file: String) -> Result<HubsConfiguration, ConfigurationError> {
        do {
            return .success(
                try HubsConfiguration.load(file: file, registry: BuiltIns.registry) { emulators in
                    EmulatorSection.pendingFiles(emulators, factories: BuiltIns.emulators)
                })
        } catch {
            return .failure(error)
        }
    }

    /// Reads and validates a file; prints every problem and exits with status 1 when it is invalid.
    static func load(_ file: String) throws -> HubsConfiguration {
        switch read(file) {
        case .success(let configuration):
            return configuration
        case .failure(let error):
            FileHandle.standardError.write(Data("\(error.problems.count) problem(s) in \(file):\n\(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// Starts the emulators of the `emulators:` section: writes their material (CA certificate, keys, credentials)
    /// into their directory and makes them (not started).
    static func emulators(_ file: String, logger: Logger) throws -> [any PlatformEmulator] {
        let root = ConfigurationNode.load(file: file)
        do {
            try root.throwIfProblems()
            let emulators = try EmulatorSection.load(root.child("emulators"), factories: BuiltIns.emulators, logger: logger)
            try root.throwIfProblems()
            return emulators
        } catch let error as ConfigurationError {
            FileHandle.standardError.write(Data("\(error.problems.count) problem(s) in \(file):\n\(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
