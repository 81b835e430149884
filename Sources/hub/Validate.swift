import ArgumentParser
import Foundation
import Logging
import NotificationHub

/// `hub validate [path]`: checks a configuration and prints every problem with file, line, column and key path, and
/// every warning (deprecated keys, risky settings) the same way.
struct Validate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check a configuration file and report every problem.")

    @Argument(help: "The configuration file.")
    var path: String = "hub.yaml"

    func run() async throws {
        var logger = Logger(label: "hub")
        logger.logLevel = .warning
        let loaded = try LoadedConfiguration.load(file: path, logger: logger)
        for hub in loaded.configuration.hubs {
            print(
                "hub '\(hub.name)': \(hub.keys.count) key(s), platforms \(hub.adapters.platforms.map(\.name).joined(separator: ", ")), formats \(hub.adapters.formats.map(\.name).joined(separator: ", "))"
            )
        }
        for warning in loaded.configuration.warnings {
            print("warning: \(warning)")
        }
        print("\(path) is valid")
    }
}
